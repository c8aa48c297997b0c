//! Models and attacks shared by the watermark figures (`examples/watermark_figures.rs`) and the
//! apr watermark tests (`tests/watermark.rs`): a linear model and a small MLP stored as `.apr`
//! tensors, their forward pass (over the dequantized values of quantized tensors), seeded
//! weights and inputs, weight noise, re-quantization, and the relative output change.

#![allow(
    dead_code,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    reason = "shared by an example and a test that each use part of it; seeded test data"
)]

use apr::watermark::{SellerKey, Watermark};
use apr::{DType, QuantType, Tensor, TensorModel};

/// SplitMix64: seeded, the same on every machine.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) const fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(crate) const fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    pub(crate) fn normal(&mut self) -> f64 {
        let u = self.unit().max(f64::MIN_POSITIVE);
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (core::f64::consts::TAU * v).cos()
    }

    pub(crate) fn bytes32(&mut self) -> [u8; 32] {
        let mut out = [0; 32];
        for chunk in out.chunks_mut(8) {
            chunk.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        out
    }
}

/// Dense layers `sizes[0] -> sizes[1] -> ...`: tensors `fc{i}.weight` (shape `[out, in]`,
/// N(0, 1/in), as a trained layer's scale) and `fc{i}.bias` (N(0, 0.05)); ReLU between layers.
/// `&[256, 64]` is a linear model.
pub(crate) fn dense(rng: &mut Rng, sizes: &[usize]) -> TensorModel {
    let mut tensors = Vec::new();
    for (i, pair) in sizes.windows(2).enumerate() {
        let (inputs, outputs) = (pair[0], pair[1]);
        let sd = 1.0 / (inputs as f64).sqrt();
        let weight: Vec<f32> = (0..inputs * outputs)
            .map(|_| (rng.normal() * sd) as f32)
            .collect();
        let bias: Vec<f32> = (0..outputs).map(|_| (rng.normal() * 0.05) as f32).collect();
        tensors.push(
            Tensor::from_f32(
                format!("fc{i}.weight"),
                vec![outputs as u64, inputs as u64],
                &weight,
            )
            .expect("shape"),
        );
        tensors.push(
            Tensor::from_f32(format!("fc{i}.bias"), vec![outputs as u64], &bias).expect("shape"),
        );
    }
    TensorModel::new(tensors).expect("unique names")
}

/// The linear model of the figures: 256 inputs, 64 outputs.
pub(crate) fn linear(rng: &mut Rng) -> TensorModel {
    dense(rng, &[256, 64])
}

/// The small MLP of the figures: 256 -> 512 -> 256 -> 32, ReLU.
pub(crate) fn mlp(rng: &mut Rng) -> TensorModel {
    dense(rng, &[256, 512, 256, 32])
}

/// `count` inputs of `width` N(0, 1) features.
pub(crate) fn inputs(rng: &mut Rng, count: usize, width: usize) -> Vec<Vec<f64>> {
    (0..count)
        .map(|_| (0..width).map(|_| rng.normal()).collect())
        .collect()
}

/// The model's outputs for `batch` (f64 arithmetic over the stored weights, dequantized).
pub(crate) fn forward(model: &TensorModel, batch: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let layers: Vec<(Vec<f32>, Vec<f32>, usize)> = model
        .tensors
        .chunks(2)
        .map(|pair| {
            let inputs = usize::try_from(pair[0].shape[1]).expect("small");
            (
                pair[0].to_f32().expect("readable"),
                pair[1].to_f32().expect("readable"),
                inputs,
            )
        })
        .collect();
    batch
        .iter()
        .map(|x| {
            let mut x = x.clone();
            for (l, (weight, bias, inputs)) in layers.iter().enumerate() {
                let mut y: Vec<f64> = bias.iter().map(|&b| f64::from(b)).collect();
                for (o, out) in y.iter_mut().enumerate() {
                    let row = &weight[o * inputs..(o + 1) * inputs];
                    *out += row
                        .iter()
                        .zip(&x)
                        .map(|(&w, &v)| f64::from(w) * v)
                        .sum::<f64>();
                }
                if l + 1 < layers.len() {
                    y.iter_mut().for_each(|v| *v = v.max(0.0));
                }
                x = y;
            }
            x
        })
        .collect()
}

/// `||b - a|| / ||a||` over the whole batch (Frobenius norms).
pub(crate) fn relative_change(a: &[Vec<f64>], b: &[Vec<f64>]) -> f64 {
    let (mut diff, mut norm) = (0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        for (u, v) in x.iter().zip(y) {
            diff += (v - u) * (v - u);
            norm += u * u;
        }
    }
    (diff / norm).sqrt()
}

/// Every tensor as F32 (quantized ones dequantized): what a user of a quantized model computes
/// with, and where weight noise is added.
pub(crate) fn dequantized(model: &TensorModel) -> TensorModel {
    TensorModel::new(
        model
            .tensors
            .iter()
            .map(|t| Tensor::from_f32(t.name.clone(), t.shape.clone(), &t.to_f32().expect("f32")))
            .collect::<Result<_, _>>()
            .expect("shape"),
    )
    .expect("unique names")
}

/// The standard deviation of `values` (population).
pub(crate) fn sd(values: &[f32]) -> f64 {
    let n = values.len() as f64;
    let mean = values.iter().map(|&v| f64::from(v)).sum::<f64>() / n;
    (values
        .iter()
        .map(|&v| (f64::from(v) - mean).powi(2))
        .sum::<f64>()
        / n)
        .sqrt()
}

/// A fresh seller key and a mark of a random buyer with `strength` and `redundancy`.
pub(crate) fn key_and_mark(
    rng: &mut Rng,
    strength: f32,
    redundancy: f32,
) -> (SellerKey, Watermark) {
    let key = SellerKey::new(rng.bytes32());
    let mut mark = Watermark::for_buyer(&key, &rng.bytes32());
    mark.strength = strength;
    mark.redundancy = redundancy;
    (key, mark)
}

/// Adds N(0, (level × sd of the tensor)²) to every weight of every F32 tensor: a stand-in for
/// fine-tuning.
pub(crate) fn with_noise(model: &TensorModel, level: f64, rng: &mut Rng) -> TensorModel {
    let mut out = model.clone();
    for tensor in &mut out.tensors {
        if tensor.dtype != DType::F32 {
            continue;
        }
        let values = tensor.to_f32().expect("f32");
        let sd = sd(&values);
        let noisy: Vec<f32> = values
            .iter()
            .map(|&v| (f64::from(v) + level * sd * rng.normal()) as f32)
            .collect();
        *tensor =
            Tensor::from_f32(tensor.name.clone(), tensor.shape.clone(), &noisy).expect("shape");
    }
    out
}

/// Dequantized, then quantized again with `quant` (an attacker's re-quantization).
pub(crate) fn requantized(model: &TensorModel, quant: QuantType) -> TensorModel {
    dequantized(model).quantize(quant).expect("finite weights")
}

/// Every tensor re-stored as F16, then read back as F32 (a checkpoint saved in half precision).
pub(crate) fn through_f16(model: &TensorModel) -> TensorModel {
    let mut out = model.clone();
    for tensor in &mut out.tensors {
        let values: Vec<f32> = tensor
            .to_f32()
            .expect("f32")
            .into_iter()
            .map(|v| half::f16::from_f32(v).to_f32())
            .collect();
        *tensor =
            Tensor::from_f32(tensor.name.clone(), tensor.shape.clone(), &values).expect("shape");
    }
    out
}
