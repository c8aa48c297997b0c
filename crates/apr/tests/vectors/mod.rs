//! The known-answer inputs shared by the tests and by the generator that rewrites the checked-in
//! vectors (`cargo xtask regenerate apr`, examples/regenerate_*_vectors.rs): the values quantized
//! against `gguf.quants`, and the golden model file.

use std::path::{Path, PathBuf};

use apr::{ModelCard, ModelType, QuantType, SaveOptions, Tensor, TensorModel};
use envelope_core::Compression;

/// `tests/data` of this crate.
pub(crate) fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Deterministic xorshift; no RNG crate needed for test data.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub(crate) fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    }
}

/// Blocks of 32: random at many scales, and the adversarial cases of the issue.
pub(crate) fn test_values(seed: u64, random_blocks: usize) -> Vec<f32> {
    let mut rng = Rng(seed);
    let mut v = Vec::new();
    let scales = [1e-3f32, 0.1, 1.0, 7.0, 1e3, 6.0e4, 1e20, 1e30];
    for i in 0..random_blocks {
        let scale = scales[i % scales.len()];
        v.extend((0..32).map(|_| rng.unit() * scale));
    }
    v.extend([0.0f32; 32]);
    v.extend([-0.0f32; 32]);
    v.extend((0..32).map(|i| if i % 3 == 0 { -0.0 } else { 0.0 })); // mixed signed zeros
    v.extend((0..32).map(|i| f32::from_bits(1 + i * 7919))); // positive denormals
    v.extend((0..32).map(|i| -f32::from_bits(3 + i * 104_729))); // negative denormals
    v.extend((0..32).map(|i| (i as f32 - 16.0) * 1e-38)); // tiny normals: 1/d overflows
    v.extend((0..32).map(|i| if i % 2 == 0 { f32::MAX } else { -f32::MAX })); // huge
    v.extend((0..32).map(|i| f32::MAX / (i as f32 + 1.0)));
    v.extend((0..32).map(|i| i as f32 + 0.5)); // rounding ties
    v.extend((0..32).map(|i| -(i as f32) - 0.5));
    v.extend((0..32).map(|i| {
        if i == 5 {
            -8.0
        } else if i == 9 {
            8.0
        } else {
            1.0
        }
    })); // sign ties
    v.extend((0..32).map(|i| if i == 17 { 1e4 } else { 1e-3 })); // spike
    v.extend([3.0f32; 32]); // constant
    v.extend((0..32).map(|i| 65504.0 * (i as f32 / 31.0))); // f16 max
    v
}

pub(crate) fn to_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A small quantized model with a card, uncompressed (so the bytes do not depend on the zstd
/// version): the checked-in golden file.
pub(crate) fn golden_bytes() -> Vec<u8> {
    let model = sample_model().quantize(QuantType::Q4_0).unwrap();
    let options = SaveOptions {
        card: card(),
        compression: Compression::None,
    };
    apr::save_tensors_to_bytes(&model, ModelType::NeuralSequential, &options).unwrap()
}

/// The serde model of `golden_stump.apr`: a decision stump, the kind of model a microcontroller
/// runs. `examples/embedded-apr` defines the same struct and decodes the file without `std`.
#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Stump {
    pub(crate) feature: u32,
    pub(crate) threshold: f32,
    pub(crate) below: f32,
    pub(crate) above: f32,
}

/// The stump of `golden_stump.apr`.
pub(crate) fn stump() -> Stump {
    Stump {
        feature: 2,
        threshold: 0.75,
        below: -1.0,
        above: 1.0,
    }
}

/// The checked-in serde golden file: [`stump`] with the golden card, uncompressed.
pub(crate) fn golden_stump_bytes() -> Vec<u8> {
    let options = SaveOptions {
        card: card(),
        compression: Compression::None,
    };
    apr::save_to_bytes(&stump(), ModelType::DecisionTree, &options).unwrap()
}

/// The model of the golden file.
pub(crate) fn sample_model() -> TensorModel {
    let mut rng = Rng(42);
    let mut values = |n: usize| (0..n).map(|_| rng.unit()).collect::<Vec<f32>>();
    TensorModel::new(vec![
        Tensor::from_f32("token_embd.weight", vec![16, 64], &values(1024)).unwrap(),
        Tensor::from_f32("blk.0.attn_q.weight", vec![64, 64], &values(4096)).unwrap(),
        Tensor::from_f32("blk.0.attn_norm.weight", vec![64], &values(64)).unwrap(),
        Tensor::from_f32("blk.0.odd", vec![3, 5], &values(15)).unwrap(),
        Tensor::from_f32("output.weight", vec![8, 64], &values(512)).unwrap(),
    ])
    .unwrap()
}

/// The card of the golden file.
pub(crate) fn card() -> ModelCard {
    ModelCard {
        name: "tiny".into(),
        version: "0.1.0".into(),
        author: Some("apr tests".into()),
        license: Some("MIT".into()),
        created_at: "2026-11-22T00:00:00Z".into(),
        ..ModelCard::default()
    }
}
