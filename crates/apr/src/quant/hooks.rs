//! Per-layer control of quantization (001 §6.2.4).

use super::{QuantType, QuantizedBlock};

/// Decides, tensor by tensor, whether and how to quantize, and may veto a result.
pub trait QuantizationHooks {
    /// Called before quantizing each tensor; `None` keeps it as it is.
    fn select_quantizer(&self, layer_name: &str, shape: &[usize]) -> Option<QuantType>;

    /// Called after quantizing a tensor; `false` keeps the original instead. The default accepts
    /// every result (the §6.2.9 accuracy warning is recorded either way).
    fn validate(&self, layer_name: &str, original: &[f32], quantized: &QuantizedBlock) -> bool {
        let _ = (layer_name, original, quantized);
        true
    }
}

/// Every tensor with the same type (the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniformQuantization {
    /// The type for every tensor.
    pub quant_type: QuantType,
}

impl QuantizationHooks for UniformQuantization {
    fn select_quantizer(&self, _layer_name: &str, _shape: &[usize]) -> Option<QuantType> {
        Some(self.quant_type)
    }
}

/// Mixed precision: embeddings and the output layer get their own types (001 §6.2.4).
///
/// A tensor is an embedding when its name contains `embed` or `embd` (`token_embd.weight`,
/// `model.embed_tokens.weight`), and the output layer when its name starts with `output.` or
/// `lm_head` (llama.cpp's and Hugging Face's names); everything else gets `default_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MixedPrecisionHooks {
    /// Type of ordinary tensors.
    pub default_type: QuantType,
    /// Type of embedding tensors (often Q8_0).
    pub embedding_type: QuantType,
    /// Type of the output layer.
    pub output_type: QuantType,
}

impl MixedPrecisionHooks {
    /// Whether `name` is an embedding tensor.
    #[must_use]
    pub fn is_embedding(name: &str) -> bool {
        name.contains("embed") || name.contains("embd")
    }

    /// Whether `name` is the output layer.
    #[must_use]
    pub fn is_output(name: &str) -> bool {
        name.starts_with("output.") || name.starts_with("lm_head")
    }
}

impl QuantizationHooks for MixedPrecisionHooks {
    fn select_quantizer(&self, layer_name: &str, _shape: &[usize]) -> Option<QuantType> {
        Some(if Self::is_embedding(layer_name) {
            self.embedding_type
        } else if Self::is_output(layer_name) {
            self.output_type
        } else {
            self.default_type
        })
    }
}
