//! Quantization (001 §6.2): the GGUF block types Q8_0, Q4_0 and Q4_1 bit-exact with ggml, the
//! per-tensor Q8_TENSOR, the [`Quantizer`] trait that built-ins and plugins implement, the
//! [`QuantizerRegistry`], per-layer [`QuantizationHooks`] with the [`TensorRole`] policy that
//! keeps norms, biases and other 1-D tensors as they are, and the Jidoka gates of §6.2.9.
//!
//! Quantization is never automatic: only [`crate::TensorModel::quantize`] and its siblings (or
//! `apr quantize`) do it.

#[cfg(feature = "std")]
pub mod calibration;
pub mod kernels;
pub mod q8_tensor;

#[cfg(feature = "std")]
mod hooks;
#[cfg(feature = "std")]
mod quantizer;
#[cfg(feature = "std")]
mod role;

#[cfg(feature = "std")]
pub use hooks::{MixedPrecisionHooks, QuantizationHooks, UniformQuantization};
#[cfg(feature = "std")]
pub use quantizer::{
    Q4_0Quantizer, Q4_1Quantizer, Q8_0Quantizer, Q8TensorQuantizer, QuantizedBlock, Quantizer,
    QuantizerRegistry,
};
#[cfg(feature = "std")]
pub use role::TensorRole;

use alloc::string::String;
use alloc::vec::Vec;

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// The spec's accuracy limit (001 §6.2.9: "accuracy degradation >5%: warning in metadata"): the
/// threshold of the 8-bit and plugin types, the floor of every type's
/// [`QuantType::warning_threshold`], and the limit of the calibration output error.
pub const ACCURACY_WARNING_THRESHOLD: f32 = 0.05;

/// How many times a type's error on Gaussian weights ([`QuantType::gaussian_error`]) a tensor's
/// relative error must exceed to be a warning, when that is above [`ACCURACY_WARNING_THRESHOLD`].
///
/// Twice: weights with heavier tails than Gaussian (Laplace-distributed, as trained matrices often
/// are) measure about 1.25 times the Gaussian error under Q4_0 and 1.2 times under Q4_1, while a
/// block whose other values one outlier flattens to zero (`[100, 5, 5, ...]`) measures 3 times it
/// under Q4_0 (26.8%).
pub const WARNING_FACTOR: f32 = 2.0;

/// Why values with a NaN or an infinity are refused (`QuantizationCorrupt`): the one wording of
/// the session and of the streaming path.
#[cfg(feature = "std")]
pub(crate) const NON_FINITE_REFUSED: &str = "NaN or infinite values cannot be quantized";

/// Why a tensor whose scale overflows its f16 is refused (`QuantizationCorrupt`).
#[cfg(feature = "std")]
pub(crate) const SCALE_OVERFLOW: &str =
    "a scale overflows its storage type (values too large to quantize)";

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

    /// The relative RMS error `‖x − deq(q(x))‖ / ‖x‖` this type gives on weights drawn from a
    /// normal distribution, `None` for plugin types. Measured on 256 × 4096 N(0, 1) values (the
    /// test `gaussian_errors_match_the_documented_values` re-measures them; Q8_TENSOR's grows
    /// slowly with the tensor's size, as its one range covers the largest value, and stays under
    /// 2% up to 10⁹ values).
    #[must_use]
    pub const fn gaussian_error(self) -> Option<f32> {
        match self {
            Self::Q8_0 => Some(GAUSSIAN_ERROR_Q8_0),
            Self::Q4_0 => Some(GAUSSIAN_ERROR_Q4_0),
            Self::Q4_1 => Some(GAUSSIAN_ERROR_Q4_1),
            Self::Q8Tensor => Some(GAUSSIAN_ERROR_Q8_TENSOR),
            Self::Custom => None,
        }
    }

    /// The relative error above which quantizing a tensor with this type records a warning:
    /// [`WARNING_FACTOR`] times its [`QuantType::gaussian_error`], but never below the spec's
    /// [`ACCURACY_WARNING_THRESHOLD`] (5%). So the 8-bit types warn above 5% as 001 §6.2.9 says,
    /// and the 4-bit types, whose ordinary error is already 8–10%, warn only for a tensor that
    /// quantizes much worse than ordinary weights (outliers that flatten their blocks).
    #[must_use]
    pub fn warning_threshold(self) -> f32 {
        self.gaussian_error()
            .map_or(ACCURACY_WARNING_THRESHOLD, |error| {
                (error * WARNING_FACTOR).max(ACCURACY_WARNING_THRESHOLD)
            })
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

/// [`QuantType::gaussian_error`] of Q8_0.
const GAUSSIAN_ERROR_Q8_0: f32 = 0.005_35;
/// [`QuantType::gaussian_error`] of Q4_0.
const GAUSSIAN_ERROR_Q4_0: f32 = 0.085_9;
/// [`QuantType::gaussian_error`] of Q4_1.
const GAUSSIAN_ERROR_Q4_1: f32 = 0.078_2;
/// [`QuantType::gaussian_error`] of Q8_TENSOR.
const GAUSSIAN_ERROR_Q8_TENSOR: f32 = 0.011_0;

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
    /// Accuracy warnings (a relative error over the type's [`QuantType::warning_threshold`], a
    /// calibration output error over 5%), one sentence each.
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
#[cfg(feature = "std")]
#[must_use]
pub fn relative_error(original: &[f32], approx: &[f32]) -> f32 {
    let mut sums = kernels::ErrorSums::default();
    sums.add(original, approx);
    sums.relative_error()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Deterministic normal and Laplace samples (xorshift and the inverse CDF / Box–Muller; no
    /// RNG crate needed).
    pub(crate) struct Noise(pub(crate) u64);

    impl Noise {
        fn uniform(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            // In (0, 1): never 0, so the logarithms below are finite.
            ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }

        /// A value from N(0, 1).
        #[allow(clippy::cast_possible_truncation, reason = "test data in f32")]
        pub(crate) fn normal(&mut self) -> f32 {
            let (u, v) = (self.uniform(), self.uniform());
            ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
        }

        /// A value from Laplace(0, 1).
        #[allow(clippy::cast_possible_truncation, reason = "test data in f32")]
        pub(crate) fn laplace(&mut self) -> f32 {
            let u = self.uniform() - 0.5;
            (-u.signum() * (1.0 - 2.0 * u.abs()).ln()) as f32
        }
    }

    fn measured(quant: QuantType, values: &[f32], shape: &[usize]) -> f32 {
        let registry = QuantizerRegistry::default();
        let quantizer = registry.for_type(quant).unwrap();
        let block = quantizer.quantize(values, shape).unwrap();
        relative_error(values, &quantizer.dequantize(&block).unwrap())
    }

    const BUILT_IN: [QuantType; 4] = [
        QuantType::Q8_0,
        QuantType::Q4_0,
        QuantType::Q4_1,
        QuantType::Q8Tensor,
    ];

    #[test]
    fn gaussian_errors_match_the_documented_values() {
        let mut noise = Noise(0x9e37_79b9_7f4a_7c15);
        let values: Vec<f32> = (0..256 * 4096).map(|_| noise.normal()).collect();
        for quant in BUILT_IN {
            let error = measured(quant, &values, &[256, 4096]);
            let documented = quant.gaussian_error().unwrap();
            assert!(
                (error / documented - 1.0).abs() < 0.02,
                "{}: measured {error}, documented {documented}",
                quant.name()
            );
        }
    }

    #[test]
    fn ordinary_weights_stay_under_every_threshold() {
        let mut noise = Noise(7);
        let gaussian: Vec<f32> = (0..64 * 256).map(|_| noise.normal() * 0.02).collect();
        let laplace: Vec<f32> = (0..64 * 256).map(|_| noise.laplace() * 0.02).collect();
        for quant in BUILT_IN {
            let threshold = quant.warning_threshold();
            for (what, values) in [("gaussian", &gaussian), ("laplace", &laplace)] {
                let error = measured(quant, values, &[64, 256]);
                assert!(
                    error < threshold,
                    "{} {what}: {error} >= {threshold}",
                    quant.name()
                );
            }
        }
    }

    #[test]
    fn blocks_an_outlier_flattens_exceed_the_q4_0_threshold() {
        // Every value but the outlier rounds to zero: 26.8% of the norm is lost.
        let spiky: Vec<f32> = (0..64 * 32)
            .map(|i| if i % 32 == 0 { 100.0 } else { 5.0 })
            .collect();
        let error = measured(QuantType::Q4_0, &spiky, &[64, 32]);
        assert!(error > QuantType::Q4_0.warning_threshold(), "{error}");
    }

    #[test]
    fn thresholds_never_fall_below_the_spec() {
        for quant in QuantType::ALL {
            assert!(quant.warning_threshold() >= ACCURACY_WARNING_THRESHOLD);
        }
        assert_eq!(
            QuantType::Q8_0.warning_threshold(),
            ACCURACY_WARNING_THRESHOLD
        );
        assert_eq!(
            QuantType::Custom.warning_threshold(),
            ACCURACY_WARNING_THRESHOLD
        );
        assert!(QuantType::Q4_0.warning_threshold() > 0.15);
    }
}
