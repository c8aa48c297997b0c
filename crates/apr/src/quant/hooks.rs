//! Per-layer control of quantization (001 §6.2.4). The built-in hooks share one policy, the
//! [`TensorRole`] of each tensor: norms, biases and other tensors llama.cpp keeps in F32 are kept
//! as they are, with the role's reason recorded.

use super::{QuantType, QuantizedBlock, TensorRole};

/// Decides, tensor by tensor, whether and how to quantize, and may veto a result.
pub trait QuantizationHooks {
    /// Called before quantizing each tensor; `None` keeps it as it is.
    fn select_quantizer(&self, layer_name: &str, shape: &[usize]) -> Option<QuantType>;

    /// Why [`QuantizationHooks::select_quantizer`] kept the tensor (called only when it returned
    /// `None`): the sentence recorded in `TensorQuantization::kept_because`. The default says the
    /// hooks skipped it; the built-ins give the tensor role's reason.
    fn kept_because(&self, layer_name: &str, shape: &[usize]) -> String {
        let _ = (layer_name, shape);
        "the hooks skipped it".to_owned()
    }

    /// Called after quantizing a tensor; `false` keeps the original instead. The default accepts
    /// every result (the §6.2.9 accuracy warning is recorded either way).
    fn validate(&self, layer_name: &str, original: &[f32], quantized: &QuantizedBlock) -> bool {
        let _ = (layer_name, original, quantized);
        true
    }

    /// Whether [`QuantizationHooks::validate`] looks at results (true unless overridden, so a
    /// custom `validate` is always called). Hooks that accept every result say `false`, which
    /// lets a streaming quantizer run the kernels on the stored bytes without building the
    /// `original` values and the block `validate` would be given.
    fn inspects_results(&self) -> bool {
        true
    }
}

/// The reason the role policy keeps `layer_name`, for the built-ins' `kept_because`.
fn role_reason(layer_name: &str, shape: &[usize]) -> String {
    TensorRole::of(layer_name, shape)
        .kept_because()
        .unwrap_or("the hooks skipped it")
        .to_owned()
}

/// One type for every tensor the role policy quantizes (the default): every
/// [`TensorRole::Weight`], `Embedding` and `Output`; the other roles are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UniformQuantization {
    /// The type for every quantized tensor.
    pub quant_type: QuantType,
}

impl QuantizationHooks for UniformQuantization {
    fn select_quantizer(&self, layer_name: &str, shape: &[usize]) -> Option<QuantType> {
        TensorRole::of(layer_name, shape)
            .is_quantized()
            .then_some(self.quant_type)
    }

    fn kept_because(&self, layer_name: &str, shape: &[usize]) -> String {
        role_reason(layer_name, shape)
    }

    fn inspects_results(&self) -> bool {
        false
    }
}

/// Mixed precision: embeddings and the output layer get their own types (001 §6.2.4); the roles
/// the policy keeps are kept, as under [`UniformQuantization`].
///
/// A tensor is an embedding when its name contains `embed` or `embd` (`token_embd.weight`,
/// `model.embed_tokens.weight`), and the output layer when its name starts with `output.` or
/// `lm_head` (llama.cpp's and Hugging Face's names); see [`TensorRole::of`]. Every other
/// quantized tensor gets `default_type`.
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
    /// Whether `name` is an embedding tensor (by name alone; [`TensorRole::of`] also looks at the
    /// shape).
    #[must_use]
    pub fn is_embedding(name: &str) -> bool {
        super::role::is_embedding(&name.to_ascii_lowercase())
    }

    /// Whether `name` is the output layer (by name alone).
    #[must_use]
    pub fn is_output(name: &str) -> bool {
        super::role::is_output(&name.to_ascii_lowercase())
    }
}

impl QuantizationHooks for MixedPrecisionHooks {
    fn select_quantizer(&self, layer_name: &str, shape: &[usize]) -> Option<QuantType> {
        match TensorRole::of(layer_name, shape) {
            TensorRole::Embedding => Some(self.embedding_type),
            TensorRole::Output => Some(self.output_type),
            role if role.is_quantized() => Some(self.default_type),
            _ => None,
        }
    }

    fn kept_because(&self, layer_name: &str, shape: &[usize]) -> String {
        role_reason(layer_name, shape)
    }

    fn inspects_results(&self) -> bool {
        false
    }
}
