//! Complexity checks (issue 14 §2): `apr import` and `apr quantize` of a model with 4x the tensors
//! must cost about 4x, not 16x (100 000 tensors took 52 s with a scan per tensor).
//!
//! They measure time, so they are `#[ignore]`d in a plain `cargo test` and run by `.ci/run`
//! (`--include-ignored`). They assert a ratio, never a duration (`tests/complexity/scaling.rs`).
//! With `n` = 10 000 tensors the quadratic writer measured 21x, the fix 4.4x.

use std::path::Path;

use apr::{ModelType, QuantType, QuantizationSession, SaveOptions, Tensor, TensorModel};

#[path = "../../../../tests/complexity/scaling.rs"]
mod scaling;

/// A SafeTensors file of `n` tensors of 32 values each, in `dir`.
fn write_safetensors(dir: &Path, n: usize) {
    let values = [0.5_f32; 32];
    let tensors = (0..n)
        .map(|i| Tensor::from_f32(format!("layer.{i:08}.weight"), vec![1, 32], &values).unwrap())
        .collect();
    let model = TensorModel::new(tensors).unwrap();
    let exported = apr::safetensors::export(&model).unwrap();
    std::fs::write(dir.join("weights.safetensors"), exported.weights).unwrap();
}

/// What `apr import` and then `apr quantize --type q8_0` do, through the library.
fn import_then_quantize(dir: &Path) {
    let model = apr::fs::import_safetensors(dir.join("weights.safetensors")).unwrap();
    let imported = dir.join("imported.apr");
    let options = SaveOptions::default();
    apr::fs::save_tensors(&imported, &model, ModelType::NeuralCustom, &options).unwrap();
    let input = apr::fs::open(&imported).unwrap();
    let hooks = apr::quant::UniformQuantization {
        quant_type: QuantType::Q8_0,
    };
    let registry = apr::quant::QuantizerRegistry::default();
    let mut session = QuantizationSession::new(&hooks, &registry);
    let mut writer =
        apr::fs::TensorFileWriter::new(dir.join("quantized.apr"), options.compression).unwrap();
    for position in 0..input.metadata().tensors.len() {
        let quantized = session.quantize(&input.tensor_at(position).unwrap());
        writer.push(&quantized.unwrap()).unwrap();
    }
    let info = session.finish().unwrap();
    writer
        .finish(ModelType::NeuralCustom, &options.card, Some(info))
        .unwrap();
}

#[test]
#[ignore = "complexity: run by .ci/run"]
fn import_and_quantize_take_linear_time_in_the_number_of_tensors() {
    scaling::assert_scales_linearly(
        "tensors",
        10_000,
        |n| {
            let dir = tempfile::tempdir().unwrap();
            write_safetensors(dir.path(), n);
            dir
        },
        |dir| import_then_quantize(dir.path()),
    );
}
