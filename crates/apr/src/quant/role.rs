//! What a tensor is for, read from its name and shape ([`TensorRole::of`]), and which roles
//! quantization keeps as they are: the policy `UniformQuantization`, `MixedPrecisionHooks` and
//! `apr quantize` share, and the one a GGUF exporter needs to write what llama.cpp runs.
//!
//! The rules follow llama.cpp (`docs/apr.md` §5.5): its converter (`convert_hf_to_gguf.py`) writes
//! every tensor with fewer than two dimensions and every `*_norm.weight` as F32, and keeps the
//! expert router, position and token-type embeddings and SSM convolutions in F32 whatever the
//! file type; `llama-quantize` quantizes only tensors of two or more dimensions whose name ends in
//! `weight` and is not a norm. The reason is the runtime, not accuracy: ggml's element-wise
//! operations that apply norms and biases take F32 operands (a quantized RMSNorm weight aborts
//! with `binary_op: unsupported types`), and these tensors are a negligible share of the weights.
//!
//! Names are matched in both spellings a model arrives with: Hugging Face's
//! (`model.layers.0.input_layernorm.weight`, `lm_head.weight`) and GGUF's
//! (`blk.0.attn_norm.weight`, `output.weight`).

/// The role of a tensor, as far as quantization cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TensorRole {
    /// An ordinary weight matrix (two or more dimensions): quantized with the type asked for.
    Weight,
    /// The token embedding table (a name containing `embed` or `embd`): quantized; mixed
    /// precision gives it its own type.
    Embedding,
    /// The output layer (a name starting with `output.` or `lm_head`): quantized; mixed precision
    /// gives it its own type.
    Output,
    /// A normalization's weight or bias (`*_norm.weight`, `*layernorm.weight`, `model.norm.weight`,
    /// GPT-2's `ln_*`), whatever its shape: kept.
    Norm,
    /// A bias (the name's last part is `bias` or ends in `_bias`), whatever its shape: kept.
    Bias,
    /// Any other tensor with fewer than two dimensions (scalars, per-channel scales): kept.
    Vector,
    /// A mixture-of-experts router (`ffn_gate_inp`, Hugging Face's `*.gate.weight`): kept.
    ExpertRouter,
    /// Learned position embeddings (`position_embd`, `position_embeddings`, GPT-2's `wpe`): kept.
    PositionEmbedding,
    /// Token-type embeddings (`token_types`, `token_type_embeddings`): kept.
    TokenTypeEmbedding,
    /// A state-space model's 1-D convolution (`ssm_conv1d`, `conv1d`): kept.
    Convolution1d,
}

impl TensorRole {
    /// The role of the tensor `name` of `shape`.
    ///
    /// Name rules come first, so that a norm or a bias is named as such whatever its shape; then
    /// every tensor of fewer than two dimensions is a [`TensorRole::Vector`]; then embeddings,
    /// the output layer, and everything else is a [`TensorRole::Weight`]. Matching ignores ASCII
    /// case (BERT's `LayerNorm.weight`).
    #[must_use]
    pub fn of(name: &str, shape: &[usize]) -> Self {
        let lower = name.to_ascii_lowercase();
        let (stem, last) = split_parameter(&lower);
        let part = stem.rsplit('.').next().unwrap_or(stem);
        if part.ends_with("norm") || part == "ln" || part.starts_with("ln_") {
            Self::Norm
        } else if last == Some("bias") || part == "bias" || part.ends_with("_bias") {
            Self::Bias
        } else if part == "ffn_gate_inp" || part == "gate" {
            // `mlp.gate` (Qwen-MoE, DeepSeek) and `block_sparse_moe.gate` (Mixtral) are the
            // router; `gate_proj` and `ffn_gate` are ordinary projections.
            Self::ExpertRouter
        } else if matches!(
            part,
            "position_embd" | "pos_embd" | "position_embeddings" | "wpe"
        ) {
            Self::PositionEmbedding
        } else if matches!(part, "token_types" | "token_type_embeddings") {
            Self::TokenTypeEmbedding
        } else if part.ends_with("conv1d") {
            Self::Convolution1d
        } else if shape.len() < 2 {
            Self::Vector
        } else if is_embedding(&lower) {
            Self::Embedding
        } else if is_output(&lower) {
            Self::Output
        } else {
            Self::Weight
        }
    }

    /// Whether quantization applies to this role ([`TensorRole::Weight`], `Embedding` and
    /// `Output`).
    #[must_use]
    pub const fn is_quantized(self) -> bool {
        matches!(self, Self::Weight | Self::Embedding | Self::Output)
    }

    /// Why a tensor of this role is kept as it is (`None` for the roles that are quantized): the
    /// sentence recorded in `TensorQuantization::kept_because`.
    #[must_use]
    pub const fn kept_because(self) -> Option<&'static str> {
        Some(match self {
            Self::Weight | Self::Embedding | Self::Output => return None,
            Self::Norm => "a norm, which llama.cpp keeps in F32",
            Self::Bias => "a bias, which llama.cpp keeps in F32",
            Self::Vector => "fewer than 2 dimensions, which llama.cpp keeps in F32",
            Self::ExpertRouter => "an expert router, which llama.cpp keeps in F32",
            Self::PositionEmbedding => "position embeddings, which llama.cpp keeps in F32",
            Self::TokenTypeEmbedding => "token-type embeddings, which llama.cpp keeps in F32",
            Self::Convolution1d => "a 1-D convolution, which llama.cpp keeps in F32",
        })
    }
}

/// `name` without a trailing `weight`/`bias` part (`.weight`, `_weight`), and that part.
fn split_parameter(name: &str) -> (&str, Option<&str>) {
    for suffix in ["weight", "bias"] {
        for separator in ['.', '_'] {
            if let Some(stem) = name
                .strip_suffix(suffix)
                .and_then(|s| s.strip_suffix(separator))
            {
                return (stem, Some(suffix));
            }
        }
    }
    (name, None)
}

/// Whether the (lower-case) `name` is a token embedding table.
pub(super) fn is_embedding(name: &str) -> bool {
    name.contains("embed") || name.contains("embd")
}

/// Whether the (lower-case) `name` is the output layer.
pub(super) fn is_output(name: &str) -> bool {
    name.starts_with("output.") || name.starts_with("lm_head")
}

#[cfg(test)]
mod tests {
    use super::TensorRole::{self, *};

    #[track_caller]
    fn check(name: &str, shape: &[usize], role: TensorRole) {
        assert_eq!(TensorRole::of(name, shape), role, "{name} {shape:?}");
    }

    #[test]
    fn norms_are_recognised_in_every_spelling_and_shape() {
        for name in [
            "blk.0.attn_norm.weight",
            "blk.3.ffn_norm.weight",
            "blk.0.attn_q_norm.weight",
            "output_norm.weight",
            "model.norm.weight",
            "model.layers.0.input_layernorm.weight",
            "model.layers.0.post_attention_layernorm.weight",
            "bert.encoder.layer.0.output.LayerNorm.weight",
            "bert.encoder.layer.0.output.LayerNorm.bias",
            "transformer.h.0.ln_1.weight",
            "transformer.ln_f.weight",
        ] {
            check(name, &[64], Norm);
            check(name, &[1, 64], Norm);
        }
    }

    #[test]
    fn biases_are_kept_whatever_their_shape() {
        check("blk.0.attn_q.bias", &[64], Bias);
        check("model.layers.0.self_attn.q_proj.bias", &[4, 64], Bias);
        check("fc1_bias", &[32], Bias);
        check("bias", &[32], Bias);
    }

    #[test]
    fn one_dimensional_tensors_and_scalars_are_vectors() {
        check("layer.scale", &[64], Vector);
        check("temperature", &[], Vector);
        // A 1-D tensor is kept even under a name that would otherwise be quantized.
        check("token_embd.weight", &[64], Vector);
        check("blk.0.ffn_up.weight", &[32], Vector);
    }

    #[test]
    fn llama_cpp_f32_tensors_are_kept_by_name() {
        check("blk.0.ffn_gate_inp.weight", &[8, 64], ExpertRouter);
        check("model.layers.0.mlp.gate.weight", &[8, 64], ExpertRouter);
        check(
            "model.layers.0.block_sparse_moe.gate.weight",
            &[8, 64],
            ExpertRouter,
        );
        check("position_embd.weight", &[512, 64], PositionEmbedding);
        check(
            "bert.embeddings.position_embeddings.weight",
            &[512, 64],
            PositionEmbedding,
        );
        check("transformer.wpe.weight", &[1024, 64], PositionEmbedding);
        check("token_types.weight", &[2, 64], TokenTypeEmbedding);
        check(
            "bert.embeddings.token_type_embeddings.weight",
            &[2, 64],
            TokenTypeEmbedding,
        );
        check("blk.0.ssm_conv1d.weight", &[64, 4], Convolution1d);
        check(
            "backbone.layers.0.mixer.conv1d.weight",
            &[64, 1, 4],
            Convolution1d,
        );
    }

    #[test]
    fn matrices_are_weights_embeddings_or_the_output_layer() {
        check("blk.0.attn_q.weight", &[64, 64], Weight);
        check("model.layers.0.mlp.gate_proj.weight", &[128, 64], Weight);
        check("blk.0.ffn_gate.weight", &[128, 64], Weight);
        check("blk.0.ffn_gate_exps.weight", &[8, 128, 64], Weight);
        check("w", &[4, 32], Weight);
        check("token_embd.weight", &[100, 64], Embedding);
        check("model.embed_tokens.weight", &[100, 64], Embedding);
        check("output.weight", &[100, 64], Output);
        check("lm_head.weight", &[100, 64], Output);
    }

    #[test]
    fn only_matrices_are_quantized_and_every_kept_role_says_why() {
        for role in [Weight, Embedding, Output] {
            assert!(role.is_quantized() && role.kept_because().is_none());
        }
        for role in [
            Norm,
            Bias,
            Vector,
            ExpertRouter,
            PositionEmbedding,
            TokenTypeEmbedding,
            Convolution1d,
        ] {
            assert!(!role.is_quantized());
            assert!(role.kept_because().is_some_and(|why| why.contains("F32")));
        }
    }
}
