//! Named tensors: the first-class payload of `.apr` models that quantization and export work on.
//!
//! A [`Tensor`] is a name, a [`DType`], a shape (outermost dimension first, as in NumPy and
//! SafeTensors) and its bytes: little-endian values for the plain types, GGUF blocks for the block
//! types, `S`, `Z` and one i8 per value for Q8_TENSOR (`docs/apr.md` §4). Every constructor and
//! every loader checks that the byte length is exactly what the dtype and shape require, so a
//! tensor never holds a size its data cannot back.

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use half::{bf16, f16};

use crate::error::{Error, Result};
use crate::quant::QuantType;
use crate::quant::kernels::{self, BLOCK_LEN};
use crate::quant::q8_tensor::{self, Q8_TENSOR_HEADER_BYTES};

/// The most dimensions a tensor may have (GGUF's `GGML_MAX_DIMS` is 4; SafeTensors has no limit;
/// eight leaves room without inviting absurd shapes).
pub const MAX_DIMS: usize = 8;

/// The element type of a tensor. The numeric codes are what the metadata stores (`docs/apr.md`
/// §3.2); the quantized types keep 001 §6.2.2's `QuantType` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE binary32, little-endian.
    F32,
    /// IEEE binary16, little-endian.
    F16,
    /// bfloat16, little-endian.
    BF16,
    /// Signed bytes.
    I8,
    /// Unsigned bytes.
    U8,
    /// A quantized type (001 §6.2.1).
    Quantized(QuantType),
}

impl DType {
    /// Every plain (unquantized) type.
    pub const PLAIN: [Self; 5] = [Self::F32, Self::F16, Self::BF16, Self::I8, Self::U8];

    /// The code stored in the metadata.
    #[must_use]
    pub const fn code(self) -> u8 {
        match self {
            Self::F32 => 0x20,
            Self::F16 => 0x21,
            Self::BF16 => 0x22,
            Self::I8 => 0x23,
            Self::U8 => 0x24,
            Self::Quantized(quant) => quant.id(),
        }
    }

    /// The type with this code.
    ///
    /// # Errors
    /// `UnsupportedQuantization` for an unknown code (001 §6.2.9: "invalid type byte").
    pub fn from_code(code: u8) -> Result<Self> {
        Ok(match code {
            0x20 => Self::F32,
            0x21 => Self::F16,
            0x22 => Self::BF16,
            0x23 => Self::I8,
            0x24 => Self::U8,
            other => Self::Quantized(QuantType::from_id(other)?),
        })
    }

    /// Lower-case name (`"f32"`, `"q4_0"`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::BF16 => "bf16",
            Self::I8 => "i8",
            Self::U8 => "u8",
            Self::Quantized(quant) => quant.name(),
        }
    }

    /// Whether this is a quantized type.
    #[must_use]
    pub const fn is_quantized(self) -> bool {
        matches!(self, Self::Quantized(_))
    }

    /// Bytes of a tensor of this type with `elements` values, or `None` when the count does not
    /// fit the type (a block type needs a multiple of 32) or the size overflows. `Custom` data has
    /// no size rule and returns `None`.
    #[must_use]
    pub fn byte_len(self, elements: u64) -> Option<u64> {
        let blocks = || {
            elements
                .is_multiple_of(BLOCK_LEN as u64)
                .then_some(elements / BLOCK_LEN as u64)
        };
        match self {
            Self::F32 => elements.checked_mul(4),
            Self::F16 | Self::BF16 => elements.checked_mul(2),
            Self::I8 | Self::U8 => Some(elements),
            Self::Quantized(QuantType::Q8_0) => blocks()?.checked_mul(34),
            Self::Quantized(QuantType::Q4_0) => blocks()?.checked_mul(18),
            Self::Quantized(QuantType::Q4_1) => blocks()?.checked_mul(20),
            Self::Quantized(QuantType::Q8Tensor) => {
                elements.checked_add(Q8_TENSOR_HEADER_BYTES as u64)
            }
            Self::Quantized(QuantType::Custom) => None,
        }
    }
}

/// One named tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    /// The tensor's name, unique within a model (UTF-8, at most [`MAX_NAME_BYTES`] bytes).
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Dimensions, outermost first.
    pub shape: Vec<u64>,
    /// Name of the quantizer plugin that made `Custom` data (empty otherwise).
    pub quantizer: String,
    data: Vec<u8>,
}

/// Longest tensor name accepted (bytes). GGUF export is stricter (63).
pub const MAX_NAME_BYTES: usize = 1024;

/// Number of elements of `shape`, or `None` on overflow.
#[must_use]
pub(crate) fn element_count(shape: &[u64]) -> Option<u64> {
    shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d))
}

impl Tensor {
    /// A tensor from its parts, checked: the name is non-empty and short enough, at most
    /// [`MAX_DIMS`] dimensions, and `data` has exactly the length dtype and shape require.
    ///
    /// # Errors
    /// `QuantizationCorrupt` when a quantized tensor's data does not match its shape (001 §6.2.9
    /// "block size mismatch"); `NameLength`, `TooManyDims` or `DataLength` for the other rules.
    pub fn new(
        name: impl Into<String>,
        dtype: DType,
        shape: Vec<u64>,
        data: Vec<u8>,
    ) -> Result<Self> {
        let name = name.into();
        if name.is_empty() || name.len() > MAX_NAME_BYTES {
            return Err(Error::NameLength { bytes: name.len() });
        }
        if shape.len() > MAX_DIMS {
            return Err(Error::TooManyDims {
                tensor: name,
                dims: shape.len(),
            });
        }
        let expected = element_count(&shape).and_then(|n| dtype.byte_len(n));
        match (dtype, expected) {
            (DType::Quantized(QuantType::Custom), _) => {}
            (_, Some(len)) if len == data.len() as u64 => {}
            (DType::Quantized(_), _) => {
                return Err(Error::corrupt(
                    name,
                    "the block data does not match the tensor's shape",
                ));
            }
            _ => {
                return Err(Error::DataLength {
                    tensor: name,
                    expected,
                    found: data.len() as u64,
                });
            }
        }
        Ok(Self {
            name,
            dtype,
            shape,
            quantizer: String::new(),
            data,
        })
    }

    /// An f32 tensor.
    ///
    /// # Errors
    /// As [`Tensor::new`].
    pub fn from_f32(name: impl Into<String>, shape: Vec<u64>, values: &[f32]) -> Result<Self> {
        let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Self::new(name, DType::F32, shape, data)
    }

    /// The stored bytes.
    #[must_use]
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// The stored bytes, to change in place (their length, hence dtype and shape, stays).
    #[cfg(feature = "std")]
    pub(crate) fn data_mut(&mut self) -> &mut [u8] {
        &mut self.data
    }

    /// Takes the stored bytes.
    #[must_use]
    pub fn into_data(self) -> Vec<u8> {
        self.data
    }

    /// Number of elements.
    #[must_use]
    pub fn element_count(&self) -> u64 {
        element_count(&self.shape).unwrap_or(0)
    }

    /// The values as f32: converted for the float types, dequantized for the built-in quantized
    /// types.
    ///
    /// # Errors
    /// `UnsupportedQuantization` for `Custom` data (dequantize it with its plugin through
    /// [`crate::QuantizerRegistry`]); `QuantizationCorrupt` if quantized data is inconsistent.
    pub fn to_f32(&self) -> Result<Vec<f32>> {
        let corrupt = |reason| Error::corrupt(&self.name, reason);
        let pairs = || self.data.chunks_exact(2).map(|b| [b[0], b[1]]);
        Ok(match self.dtype {
            DType::F32 => self
                .data
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            DType::F16 => pairs().map(|b| f16::from_le_bytes(b).to_f32()).collect(),
            DType::BF16 => pairs().map(|b| bf16::from_le_bytes(b).to_f32()).collect(),
            #[allow(clippy::cast_possible_wrap, reason = "the byte is an i8")]
            DType::I8 => self.data.iter().map(|&b| f32::from(b as i8)).collect(),
            DType::U8 => self.data.iter().map(|&b| f32::from(b)).collect(),
            DType::Quantized(quant @ (QuantType::Q8_0 | QuantType::Q4_0 | QuantType::Q4_1)) => {
                let elements = usize::try_from(self.element_count())
                    .map_err(|_| corrupt("too many elements for this platform"))?;
                let mut out = vec![0.0; elements];
                let done = match quant {
                    QuantType::Q8_0 => kernels::dequantize_q8_0(&self.data, &mut out),
                    QuantType::Q4_0 => kernels::dequantize_q4_0(&self.data, &mut out),
                    _ => kernels::dequantize_q4_1(&self.data, &mut out),
                };
                done.map_err(|_| corrupt("the block data does not match the tensor's shape"))?;
                out
            }
            DType::Quantized(QuantType::Q8Tensor) => {
                let (params, values) = q8_tensor::split(&self.data)
                    .ok_or_else(|| corrupt("the Q8_TENSOR header is missing"))?;
                if !params.scale.is_finite() || params.scale <= 0.0 {
                    return Err(corrupt(
                        "the Q8_TENSOR scale is not a positive finite number",
                    ));
                }
                let mut out = Vec::with_capacity(values.len());
                q8_tensor::dequantize(params, values, &mut out);
                out
            }
            DType::Quantized(QuantType::Custom) => {
                return Err(Error::UnsupportedQuantization {
                    type_id: QuantType::Custom.id(),
                });
            }
        })
    }

    #[cfg(feature = "std")]
    pub(crate) fn set_quantizer(&mut self, name: &str) {
        self.quantizer = name.to_owned();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_must_match_shape() {
        assert!(Tensor::from_f32("w", vec![2, 2], &[1.0; 4]).is_ok());
        let error = Tensor::from_f32("w", vec![2, 3], &[1.0; 4]).unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::Usage);
        // One block's bytes for a shape of two blocks (001 §6.2.9 "block size mismatch").
        for (quant, block_bytes) in [
            (QuantType::Q8_0, kernels::Q8_0_BLOCK_BYTES),
            (QuantType::Q4_0, kernels::Q4_0_BLOCK_BYTES),
            (QuantType::Q4_1, kernels::Q4_1_BLOCK_BYTES),
        ] {
            let dtype = DType::Quantized(quant);
            assert!(Tensor::new("q", dtype, vec![64], vec![0; 2 * block_bytes]).is_ok());
            let error = Tensor::new("q", dtype, vec![64], vec![0; block_bytes]).unwrap_err();
            assert_eq!(
                error.signal(),
                envelope_core::Signal::QuantizationCorrupt,
                "{quant:?}"
            );
        }
    }

    #[test]
    fn overflowing_shapes_are_refused() {
        let error = Tensor::new("w", DType::U8, vec![u64::MAX, 2], vec![]).unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::Usage);
    }

    #[test]
    fn dtype_codes_round_trip() {
        for dtype in DType::PLAIN
            .into_iter()
            .chain(QuantType::ALL.into_iter().map(DType::Quantized))
        {
            assert_eq!(DType::from_code(dtype.code()).unwrap(), dtype);
        }
        let error = DType::from_code(0x7e).unwrap_err();
        assert_eq!(
            error.signal(),
            envelope_core::Signal::UnsupportedQuantization
        );
    }
}
