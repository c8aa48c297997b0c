//! The body of the `apr_reader` fuzz target, shared with the stable corpus replay in `tests.rs`
//! (the target includes this file by path, so an input that once found a bug keeps being checked
//! by `cargo test`).

use apr::{AprFile, ModelType};

/// Any bytes: the `.apr` reader (full and lazy) and the SafeTensors importer either refuse them
/// with a typed error or load them; whatever loads can be read tensor by tensor, converted and
/// exported without a panic. The same runs with the CRC32 trailer recomputed, so the fuzzer
/// reaches the metadata and tensor checks behind the checksum.
pub(crate) fn apr_reader(data: &[u8]) {
    check(data);
    if data.len() >= envelope_core::CHECKSUM_LEN {
        let mut fixed = data.to_vec();
        envelope_core::codec::rewrite_trailer(&mut fixed);
        check(&fixed);
    }
    if let Ok(model) = apr::safetensors::import(data, None, None) {
        for tensor in &model.tensors {
            let _ = tensor.to_f32();
        }
    }
}

fn check(data: &[u8]) {
    if let Ok(file) = AprFile::parse(data) {
        let _ = file.model::<serde_json::Value>();
        if let Ok(model) = file.tensors() {
            for tensor in &model.tensors {
                let _ = tensor.to_f32();
            }
            let _ = apr::gguf::to_bytes(
                &model,
                file.model_type().unwrap_or(ModelType::NeuralCustom),
                &file.metadata().model_card,
                &apr::gguf::GgufOptions::default(),
            );
        }
    }
    if let Ok(file) = AprFile::parse_lazy(data) {
        for position in 0..file.metadata().tensors.len() {
            let _ = file.tensor_at(position);
        }
    }
}
