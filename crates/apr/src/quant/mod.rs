//! Quantization (001 §6.2): the GGUF block types Q8_0, Q4_0 and Q4_1 bit-exact with ggml, the
//! per-tensor Q8_TENSOR, the [`Quantizer`] trait that built-ins and plugins implement, the
//! [`QuantizerRegistry`], per-layer [`QuantizationHooks`] and the Jidoka gates of §6.2.9.
//!
//! Quantization is never automatic: only [`crate::TensorModel::quantize`] and its siblings (or
//! `apr quantize`) do it.

pub mod calibration;
pub mod kernels;
pub mod q8_tensor;

mod hooks;
mod quantizer;

pub use hooks::{MixedPrecisionHooks, QuantizationHooks, UniformQuantization};
pub use quantizer::{
    Q4_0Quantizer, Q4_1Quantizer, Q8_0Quantizer, Q8TensorQuantizer, QuantizedBlock, Quantizer,
    QuantizerRegistry,
};

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Relative RMS error above which quantizing a tensor records a warning (001 §6.2.9: "accuracy
/// degradation >5%: warning in metadata").
pub const ACCURACY_WARNING_THRESHOLD: f32 = 0.05;

/// Quantization type identifier (001 §6.2.2), the byte stored in the metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(non_camel_case_types, reason = "the spec's and GGUF's names")]
pub enum QuantType {
    /// 8-bit, blocks of 32, f16 scale (GGML_TYPE_Q8_0).
    Q8_0,
    /// 4-bit, blocks of 32, f16 scale (GGML_TYPE_Q4_0).
    Q4_0,
    /// 4-bit with minimum, blocks of 32, f16 scale and minimum (GGML_TYPE_Q4_1).
    Q4_1,
    /// 8-bit, one f32 scale and i32 zero point per tensor.
    Q8Tensor,
    /// Defined by a plugin quantizer (its name is stored with each tensor).
    Custom,
}

impl QuantType {
    /// Every type.
    pub const ALL: [Self; 5] = [
        Self::Q8_0,
        Self::Q4_0,
        Self::Q4_1,
        Self::Q8Tensor,
        Self::Custom,
    ];

    /// The type byte (001 §6.2.2).
    #[must_use]
    pub const fn id(self) -> u8 {
        match self {
            Self::Q8_0 => 0x01,
            Self::Q4_0 => 0x02,
            Self::Q4_1 => 0x03,
            Self::Q8Tensor => 0x10,
            Self::Custom => 0xFF,
        }
    }

    /// The type with this byte.
    ///
    /// # Errors
    /// `UnsupportedQuantization` for an unknown byte.
    pub const fn from_id(id: u8) -> Result<Self> {
        Ok(match id {
            0x01 => Self::Q8_0,
            0x02 => Self::Q4_0,
            0x03 => Self::Q4_1,
            0x10 => Self::Q8Tensor,
            0xFF => Self::Custom,
            type_id => return Err(Error::UnsupportedQuantization { type_id }),
        })
    }

    /// Lower-case name as the CLI spells it (`q8_0`, `q8_tensor`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Q8_0 => "q8_0",
            Self::Q4_0 => "q4_0",
            Self::Q4_1 => "q4_1",
            Self::Q8Tensor => "q8_tensor",
            Self::Custom => "custom",
        }
    }

    /// The type named `name` (case-insensitive), as the CLI accepts it.
    ///
    /// # Errors
    /// `UnsupportedQuantization` (type byte 0x00) for an unknown name.
    pub fn from_name(name: &str) -> Result<Self> {
        Self::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
            .ok_or(Error::UnsupportedQuantization { type_id: 0 })
    }

    /// Values per block (32 for the GGUF types; 0 for per-tensor and plugin types).
    #[must_use]
    pub const fn block_size(self) -> usize {
        match self {
            Self::Q8_0 | Self::Q4_0 | Self::Q4_1 => kernels::BLOCK_LEN,
            Self::Q8Tensor | Self::Custom => 0,
        }
    }
}

/// What was quantized how, stored in the metadata (001 §6.2.2 `QuantizationInfo`, plus the
/// per-tensor record and the §6.2.9 warnings).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuantizationInfo {
    /// The main type byte (the uniform type, or the default type of mixed precision).
    pub quant_type: u8,
    /// How ranges were chosen: `"minmax"` for every built-in quantizer.
    pub calibration_method: String,
    /// Calibration samples used (0: weights-only min/max).
    pub calibration_samples: u32,
    /// The dtype the weights had before quantization (`"f32"`, `"f16"`, `"bf16"`).
    pub original_dtype: String,
    /// Name of the quantizer of the main type.
    pub quantizer: String,
    /// Block size of the main type (0 for per-tensor types).
    pub block_size: u32,
    /// Storage cost of the main type, bits per weight.
    pub bits_per_weight: f32,
    /// One record per tensor of the model, in order.
    pub tensors: Vec<TensorQuantization>,
    /// Accuracy warnings (relative error over 5%), one sentence each.
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// How one tensor was treated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorQuantization {
    /// The tensor's name.
    pub name: String,
    /// Its type byte after quantization, or `None` if it was kept as it was.
    pub quant_type: Option<u8>,
    /// Relative RMS error `||x - deq(q(x))|| / ||x||` (0 when `x` is all zero).
    pub relative_error: Option<f32>,
    /// Why the tensor was kept unquantized, if it was.
    pub kept_because: Option<String>,
    /// Relative error of the layer's output `||W x - W' x|| / ||W x||` over the calibration
    /// samples, when calibration data was given and fits the tensor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_error: Option<f32>,
}

impl QuantizationInfo {
    /// The main quantization type.
    ///
    /// # Errors
    /// `UnsupportedQuantization` if the stored byte is unknown.
    pub fn main_type(&self) -> Result<QuantType> {
        QuantType::from_id(self.quant_type)
    }
}

/// Relative RMS error of `approx` against `original`.
#[must_use]
pub fn relative_error(original: &[f32], approx: &[f32]) -> f32 {
    let (mut err, mut norm) = (0.0f64, 0.0f64);
    for (&a, &b) in original.iter().zip(approx) {
        let diff = f64::from(a) - f64::from(b);
        err += diff * diff;
        norm += f64::from(a) * f64::from(a);
    }
    if norm == 0.0 {
        return if err == 0.0 { 0.0 } else { f32::INFINITY };
    }
    #[allow(clippy::cast_possible_truncation, reason = "a ratio, reported in f32")]
    let ratio = (err / norm).sqrt() as f32;
    ratio
}
