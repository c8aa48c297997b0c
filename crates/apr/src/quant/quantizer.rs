//! The [`Quantizer`] trait (001 §6.2.3), the built-in quantizers and the registry plugins join.

use std::collections::BTreeMap;

use super::QuantType;
use super::kernels::{self, KernelError};
use super::q8_tensor;
use crate::error::{Error, Result};

/// Quantized data of one tensor (001 §6.2.2 `QuantizedBlock`; Q8_TENSOR data is stored in the
/// same struct with `block_size` equal to the element count).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuantizedBlock {
    /// The type.
    pub quant_type: QuantType,
    /// The tensor's shape, outermost first.
    pub shape: Vec<usize>,
    /// The stored bytes (`docs/apr.md` §4).
    pub blocks: Vec<u8>,
    /// Values per block.
    pub block_size: usize,
}

/// A quantization scheme (001 §6.2.3). Built-ins implement it; plugins implement it and join a
/// [`QuantizerRegistry`].
pub trait Quantizer: Send + Sync {
    /// Unique name (the registry key; the built-ins are `q8_0`, `q4_0`, `q4_1`, `q8_tensor`).
    fn name(&self) -> &str;

    /// Quantizes `data`, a tensor of `shape`.
    ///
    /// # Errors
    /// `QuantizationCorrupt` for non-finite values; `ShapeLength` when `data` does not have the
    /// shape's length, `NotWholeBlocks` when the shape does not fit a block scheme.
    fn quantize(&self, data: &[f32], shape: &[usize]) -> Result<QuantizedBlock>;

    /// Dequantizes `block` back to f32.
    ///
    /// # Errors
    /// `QuantizationCorrupt` if the block's bytes do not match its shape.
    fn dequantize(&self, block: &QuantizedBlock) -> Result<Vec<f32>>;

    /// Storage cost in bits per weight.
    fn bits_per_weight(&self) -> f32;

    /// The built-in block type this quantizer is exactly the kernel of (Q8_0, Q4_0, Q4_1), so
    /// that a streaming quantizer may run [`super::kernels`] in its place. `None` (the default)
    /// for every other quantizer: plugins keep it.
    fn built_in_block_type(&self) -> Option<QuantType> {
        None
    }
}

fn element_count(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// `ShapeLength` unless `data` has the element count of `shape`.
fn check_length(data: &[f32], shape: &[usize]) -> Result<()> {
    let elements = element_count(shape);
    if elements == Some(data.len()) {
        Ok(())
    } else {
        Err(Error::ShapeLength {
            elements,
            values: data.len(),
        })
    }
}

fn kernel_error(error: KernelError) -> Error {
    match error {
        KernelError::NonFinite => Error::corrupt(String::new(), super::NON_FINITE_REFUSED),
        KernelError::Length => Error::corrupt(
            String::new(),
            "the block data does not match the tensor's shape",
        ),
    }
}

type QuantizeKernel = fn(&[f32], &mut [u8]) -> Result<(), KernelError>;
type DequantizeKernel = fn(&[u8], &mut [f32]) -> Result<(), KernelError>;

fn block_quantize(
    quant_type: QuantType,
    block_bytes: usize,
    kernel: QuantizeKernel,
    data: &[f32],
    shape: &[usize],
) -> Result<QuantizedBlock> {
    check_length(data, shape)?;
    if shape
        .last()
        .is_none_or(|&last| !last.is_multiple_of(kernels::BLOCK_LEN))
    {
        return Err(Error::NotWholeBlocks {
            last: shape.last().copied(),
        });
    }
    let mut blocks = vec![0; data.len() / kernels::BLOCK_LEN * block_bytes];
    kernel(data, &mut blocks).map_err(kernel_error)?;
    Ok(QuantizedBlock {
        quant_type,
        shape: shape.to_vec(),
        blocks,
        block_size: kernels::BLOCK_LEN,
    })
}

fn block_dequantize(
    expected: QuantType,
    kernel: DequantizeKernel,
    block: &QuantizedBlock,
) -> Result<Vec<f32>> {
    if block.quant_type != expected {
        return Err(Error::UnsupportedQuantization {
            type_id: block.quant_type.id(),
        });
    }
    let elements = element_count(&block.shape).ok_or_else(|| kernel_error(KernelError::Length))?;
    let mut out = vec![0.0; elements];
    kernel(&block.blocks, &mut out).map_err(kernel_error)?;
    Ok(out)
}

macro_rules! block_quantizer {
    ($name:ident, $doc:literal, $quant:expr, $bytes:expr, $q:path, $dq:path, $bits:expr) => {
        #[doc = $doc]
        #[derive(Debug, Clone, Copy, Default)]
        pub struct $name;

        impl Quantizer for $name {
            fn name(&self) -> &str {
                $quant.name()
            }
            fn quantize(&self, data: &[f32], shape: &[usize]) -> Result<QuantizedBlock> {
                block_quantize($quant, $bytes, $q, data, shape)
            }
            fn dequantize(&self, block: &QuantizedBlock) -> Result<Vec<f32>> {
                block_dequantize($quant, $dq, block)
            }
            fn bits_per_weight(&self) -> f32 {
                $bits
            }
            fn built_in_block_type(&self) -> Option<QuantType> {
                Some($quant)
            }
        }
    };
}

block_quantizer!(
    Q8_0Quantizer,
    "Q8_0: 32 i8 and an f16 scale per block, 8.5 bits per weight (GGML_TYPE_Q8_0).",
    QuantType::Q8_0,
    kernels::Q8_0_BLOCK_BYTES,
    kernels::quantize_q8_0,
    kernels::dequantize_q8_0,
    8.5
);
block_quantizer!(
    Q4_0Quantizer,
    "Q4_0: 32 nibbles and an f16 scale per block, 4.5 bits per weight (GGML_TYPE_Q4_0).",
    QuantType::Q4_0,
    kernels::Q4_0_BLOCK_BYTES,
    kernels::quantize_q4_0,
    kernels::dequantize_q4_0,
    4.5
);
block_quantizer!(
    Q4_1Quantizer,
    "Q4_1: 32 nibbles, an f16 scale and an f16 minimum per block, 5 bits per weight \
     (GGML_TYPE_Q4_1).",
    QuantType::Q4_1,
    kernels::Q4_1_BLOCK_BYTES,
    kernels::quantize_q4_1,
    kernels::dequantize_q4_1,
    5.0
);

/// Q8_TENSOR: one f32 scale and i32 zero point per tensor, 8 bits per weight.
#[derive(Debug, Clone, Copy, Default)]
pub struct Q8TensorQuantizer;

impl Quantizer for Q8TensorQuantizer {
    fn name(&self) -> &str {
        QuantType::Q8Tensor.name()
    }

    fn quantize(&self, data: &[f32], shape: &[usize]) -> Result<QuantizedBlock> {
        check_length(data, shape)?;
        let params = q8_tensor::calibrate(data).ok_or_else(|| {
            Error::corrupt(
                String::new(),
                "NaN, infinite values or an infinite range cannot be quantized",
            )
        })?;
        let mut blocks = Vec::new();
        q8_tensor::quantize(data, params, &mut blocks);
        Ok(QuantizedBlock {
            quant_type: QuantType::Q8Tensor,
            shape: shape.to_vec(),
            blocks,
            block_size: data.len(),
        })
    }

    fn dequantize(&self, block: &QuantizedBlock) -> Result<Vec<f32>> {
        let corrupt = |reason| Error::corrupt(String::new(), reason);
        let (params, values) = q8_tensor::split(&block.blocks)
            .ok_or_else(|| corrupt("the Q8_TENSOR header is missing"))?;
        if element_count(&block.shape) != Some(values.len()) {
            return Err(corrupt("the block data does not match the tensor's shape"));
        }
        let mut out = Vec::with_capacity(values.len());
        q8_tensor::dequantize(params, values, &mut out);
        Ok(out)
    }

    fn bits_per_weight(&self) -> f32 {
        8.0
    }
}

/// The quantizers available by name (001 §6.2.3). [`QuantizerRegistry::default`] holds the four
/// built-ins; [`QuantizerRegistry::register`] adds a plugin or replaces one of the same name.
pub struct QuantizerRegistry {
    quantizers: BTreeMap<String, Box<dyn Quantizer>>,
}

impl Default for QuantizerRegistry {
    fn default() -> Self {
        let mut registry = Self::empty();
        registry.register(Box::new(Q8_0Quantizer));
        registry.register(Box::new(Q4_0Quantizer));
        registry.register(Box::new(Q4_1Quantizer));
        registry.register(Box::new(Q8TensorQuantizer));
        registry
    }
}

impl core::fmt::Debug for QuantizerRegistry {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.quantizers.keys()).finish()
    }
}

impl QuantizerRegistry {
    /// A registry with no quantizers.
    #[must_use]
    pub fn empty() -> Self {
        Self {
            quantizers: BTreeMap::new(),
        }
    }

    /// Adds `quantizer` under its name, replacing one of the same name.
    pub fn register(&mut self, quantizer: Box<dyn Quantizer>) {
        self.quantizers
            .insert(quantizer.name().to_owned(), quantizer);
    }

    /// The quantizer named `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&dyn Quantizer> {
        self.quantizers.get(name).map(AsRef::as_ref)
    }

    /// The names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.quantizers.keys().map(String::as_str)
    }

    /// The quantizer for a built-in type.
    pub(crate) fn for_type(&self, quant: QuantType) -> Result<&dyn Quantizer> {
        self.get(quant.name())
            .ok_or(Error::UnsupportedQuantization {
                type_id: quant.id(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_has_the_built_ins_and_takes_plugins() {
        struct Halves;
        impl Quantizer for Halves {
            fn name(&self) -> &str {
                "halves"
            }
            fn quantize(&self, data: &[f32], shape: &[usize]) -> Result<QuantizedBlock> {
                Ok(QuantizedBlock {
                    quant_type: QuantType::Custom,
                    shape: shape.to_vec(),
                    blocks: data
                        .iter()
                        .flat_map(|v| half::f16::from_f32(*v).to_le_bytes())
                        .collect(),
                    block_size: 1,
                })
            }
            fn dequantize(&self, block: &QuantizedBlock) -> Result<Vec<f32>> {
                Ok(block
                    .blocks
                    .chunks_exact(2)
                    .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
                    .collect())
            }
            fn bits_per_weight(&self) -> f32 {
                16.0
            }
        }
        let mut registry = QuantizerRegistry::default();
        assert_eq!(registry.names().count(), 4);
        registry.register(Box::new(Halves));
        let plugin = registry.get("halves").unwrap();
        let block = plugin.quantize(&[1.5, 2.0], &[2]).unwrap();
        assert_eq!(plugin.dequantize(&block).unwrap(), vec![1.5, 2.0]);
    }

    #[test]
    fn block_quantizers_refuse_rows_that_are_not_whole_blocks() {
        let error = Q8_0Quantizer.quantize(&[0.0; 40], &[40]).unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::Usage);
        let error = Q4_0Quantizer.quantize(&[0.0; 64], &[2, 32, 1]).unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::Usage);
    }

    #[test]
    fn dequantize_checks_block_count_against_shape() {
        let mut block = Q8_0Quantizer.quantize(&[1.0; 64], &[64]).unwrap();
        block.shape = vec![96];
        let error = Q8_0Quantizer.dequantize(&block).unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::QuantizationCorrupt);
    }
}
