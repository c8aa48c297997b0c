//! Leak tracing for models (003 §8.3, 001 §9.2, issue 16): a buyer-specific mark in a
//! [`TensorModel`]'s weights, keyed by the seller's secret, by the `watermark` engine
//! (`docs/watermark.md`).
//!
//! Key decisions:
//! - **What carries the mark.** F32 tensors: the engine's keyed QIM (§1-§5), each tensor a slice
//!   with its own step. Q8_0, Q4_0 and Q4_1 tensors: the parity mark on their quants (§12), since a
//!   quant is far coarser than any QIM step. With [`Watermark::column_indices`] empty every
//!   tensor of those types is offered; F16, BF16, I8, U8, Q8_TENSOR and plugin data are left as
//!   they are (f16 holds too few cells for the payload, §10; integers are ids and masks), and
//!   naming one of them explicitly is [`Error::WatermarkUnsupported`].
//! - **One check for the whole model.** Every marked tensor is read back together
//!   ([`watermark::Marking::finish`]); a model that does not read back is an error and no marked
//!   copy is returned, so nothing can be flagged WATERMARKED without a mark the seller can find.
//! - **Reading reads everything that may hold a mark:** F32, F16 and BF16 tensors as f32 (a mark
//!   made in f32 survives a re-store as f16 when its step is large enough) and, re-quantized to
//!   Q8_0, Q4_0 and Q4_1 with the reference kernels, as blocks (a block mark survives
//!   dequantization, f16 and weight noise this way: ggml's quantizers give back the same quants);
//!   block tensors both by their quants (§12) and by their dequantized values (a mark made in
//!   f32 before quantization).

use ::watermark::detect::{SliceStatistics, analyze};
use half::f16;

pub use ::watermark::blocks::BlockFormat;
pub use ::watermark::{
    Error as EngineError, Extracted, MarkReport, Marking, NamedEvidence, NamedReport, Reading,
    SellerKey, Traceability, Verification, Watermark, Watermarkable,
};

use crate::error::{Error, Result};
use crate::model::TensorModel;
use crate::quant::QuantType;
use crate::quant::kernels::{self, BLOCK_LEN};
use crate::tensor::{DType, Tensor};

/// How a tensor can carry a mark.
enum Carrier {
    /// Little-endian f32 values: the QIM mark.
    Floats,
    /// GGUF blocks: the parity mark.
    Blocks(BlockFormat),
    /// Nothing: why.
    No(&'static str),
}

fn carrier(dtype: DType) -> Carrier {
    match dtype {
        DType::F32 => Carrier::Floats,
        DType::Quantized(QuantType::Q8_0) => Carrier::Blocks(BlockFormat::Q8_0),
        DType::Quantized(QuantType::Q4_0) => Carrier::Blocks(BlockFormat::Q4_0),
        DType::Quantized(QuantType::Q4_1) => Carrier::Blocks(BlockFormat::Q4_1),
        DType::F16 | DType::BF16 => Carrier::No(
            "16-bit floats hold too few distinct cells for the 320-bit payload \
             (docs/watermark.md §10): mark the f32 weights before converting them",
        ),
        DType::I8 | DType::U8 => Carrier::No("integer tensors (ids, masks, codes) are not marked"),
        DType::Quantized(QuantType::Q8Tensor) => Carrier::No(
            "Q8_TENSOR has no block layout the mark knows: mark the f32 weights, or use Q8_0",
        ),
        DType::Quantized(QuantType::Custom) => {
            Carrier::No("a plugin's quantized data has no layout the mark knows")
        }
    }
}

fn f32_bytes(values: &[f32], out: &mut [u8]) {
    for (bytes, value) in out.chunks_exact_mut(4).zip(values) {
        bytes.copy_from_slice(&value.to_le_bytes());
    }
}

/// Redundancies [`TensorModel::watermarked_sparsest`] tries, sparsest first, before the dense
/// mark (1).
pub const SPARSE_REDUNDANCIES: [f32; 6] = [
    1.0 / 65_536.0,
    1.0 / 4_096.0,
    1.0 / 256.0,
    1.0 / 64.0,
    1.0 / 16.0,
    0.25,
];

impl TensorModel {
    /// A copy of the model carrying `watermark`'s buyer mark under `seller_key`, and what was
    /// marked. `watermark.column_indices` index [`TensorModel::tensors`]; empty means every
    /// tensor that can carry a mark (F32, Q8_0, Q4_0, Q4_1). `strength` sets the QIM step of F32
    /// tensors; `redundancy` the fraction of values (F32) or quants (blocks, rounded down to a
    /// power of two, `docs/watermark.md` §12) that carry it.
    ///
    /// # Errors
    /// `NoTensorAt` for an index past the last tensor; `WatermarkUnsupported` for a selected tensor
    /// of another type; `Watermark` for an invalid strength or redundancy, or when the marked
    /// tensors together do not read back as the buyer (`NotTraceable`: too few values).
    pub fn watermarked(
        &self,
        watermark: &Watermark,
        seller_key: &SellerKey,
    ) -> Result<(Self, MarkReport)> {
        if let Some(&position) = watermark
            .column_indices
            .iter()
            .find(|&&i| i >= self.tensors.len())
        {
            return Err(Error::NoTensorAt {
                position,
                count: self.tensors.len(),
            });
        }
        let explicit = !watermark.column_indices.is_empty();
        let mut marking = Marking::new(seller_key, watermark)?;
        let mut marked = self.clone();
        for (index, tensor) in marked.tensors.iter_mut().enumerate() {
            if !watermark.selects(index) {
                continue;
            }
            match carrier(tensor.dtype) {
                Carrier::Floats => {
                    let mut values = tensor.to_f32()?;
                    marking.embed(&tensor.name, &mut values);
                    f32_bytes(&values, tensor.data_mut());
                }
                Carrier::Blocks(format) => {
                    let name = tensor.name.clone();
                    marking.embed_blocks(&name, format, tensor.data_mut())?;
                }
                Carrier::No(reason) if explicit => {
                    return Err(Error::WatermarkUnsupported {
                        tensor: tensor.name.clone(),
                        dtype: tensor.dtype.name(),
                        reason,
                    });
                }
                Carrier::No(_) => {}
            }
        }
        let report = marking.finish()?;
        Ok((marked, report))
    }

    /// Whether `watermark` selects a block-quantized tensor (Q8_0, Q4_0, Q4_1), whose mark moves
    /// every quant it uses by a whole quantization step: density is distortion there.
    #[must_use]
    pub fn marks_blocks(&self, watermark: &Watermark) -> bool {
        self.tensors.iter().enumerate().any(|(index, tensor)| {
            watermark.selects(index) && matches!(carrier(tensor.dtype), Carrier::Blocks(_))
        })
    }

    /// [`TensorModel::watermarked`] at the sparsest of [`SPARSE_REDUNDANCIES`] (then 1) whose
    /// mark extracts, else the sparsest that `verify` still proves; returns the redundancy used
    /// (the one in `watermark` is ignored). For a model with block tensors, where the default dense
    /// mark moves about half the quants by a step (docs/watermark.md §13).
    ///
    /// # Errors
    /// As [`TensorModel::watermarked`], the densest attempt's error when none reads back.
    pub fn watermarked_sparsest(
        &self,
        watermark: &Watermark,
        seller_key: &SellerKey,
    ) -> Result<(Self, MarkReport, f32)> {
        let mut mark = watermark.clone();
        let mut verify_only = None;
        for redundancy in SPARSE_REDUNDANCIES {
            mark.redundancy = redundancy;
            match self.watermarked(&mark, seller_key) {
                Ok((marked, report)) if report.traceability == Traceability::Extractable => {
                    return Ok((marked, report, redundancy));
                }
                Ok((marked, report)) => {
                    verify_only.get_or_insert((marked, report, redundancy));
                }
                // Too sparse to read back: denser ones follow.
                Err(_) => {}
            }
        }
        mark.redundancy = 1.0;
        match (self.watermarked(&mark, seller_key), verify_only) {
            (Ok((marked, report)), _) if report.traceability == Traceability::Extractable => {
                Ok((marked, report, 1.0))
            }
            (_, Some(sparser)) => Ok(sparser),
            (densest, None) => densest.map(|(marked, report)| (marked, report, 1.0)),
        }
    }

    /// Every tensor that may hold a mark, read under `seller_key` into one reading (then
    /// `extract`, `verify` or `identify`). Evidence is named by tensor; a block tensor gives two
    /// records, its quants (`name`) and its dequantized values (`name (dequantized)`); a float
    /// tensor whose last dimension is a multiple of 32 gives four, its values (`name`) and its
    /// quants re-quantized to each block type (`name (as q8_0)`, `(as q4_0)`, `(as q4_1)`).
    #[must_use]
    pub fn watermark_reading(&self, seller_key: &SellerKey) -> Reading {
        let mut reading = Reading::new(seller_key);
        for tensor in &self.tensors {
            read_tensor(&mut reading, tensor);
        }
        reading
    }

    /// Keyless statistics (000 §9.3.3) of every float tensor (F32, F16, BF16 widened to f32),
    /// named, in order. Quantized tensors have no float bits to test and are left out.
    #[must_use]
    pub fn watermark_statistics(&self) -> Vec<(String, SliceStatistics)> {
        self.tensors
            .iter()
            .filter_map(|tensor| {
                let statistics = match tensor.dtype {
                    DType::F16 => {
                        let values: Vec<f16> = tensor
                            .data()
                            .chunks_exact(2)
                            .map(|b| f16::from_le_bytes([b[0], b[1]]))
                            .collect();
                        analyze(&values)
                    }
                    DType::F32 | DType::BF16 => analyze(&tensor.to_f32().ok()?),
                    _ => return None,
                };
                Some((tensor.name.clone(), statistics))
            })
            .collect()
    }
}

/// The block formats a float tensor is re-quantized to when read, with their names and kernels.
type Kernel = fn(&[f32], &mut [u8]) -> core::result::Result<(), kernels::KernelError>;
const REQUANTIZE: [(BlockFormat, &str, Kernel); 3] = [
    (BlockFormat::Q8_0, "q8_0", kernels::quantize_q8_0),
    (BlockFormat::Q4_0, "q4_0", kernels::quantize_q4_0),
    (BlockFormat::Q4_1, "q4_1", kernels::quantize_q4_1),
];

/// Adds one tensor's votes to `reading` (see [`TensorModel::watermark_reading`]).
fn read_tensor(reading: &mut Reading, tensor: &Tensor) {
    match tensor.dtype {
        DType::F32 | DType::F16 | DType::BF16 => {
            let Ok(values) = tensor.to_f32() else { return };
            reading.add(&tensor.name, &values);
            // Blocks run along the last dimension, as `TensorModel::quantize` cuts them.
            let whole_rows = tensor
                .shape
                .last()
                .is_some_and(|&last| last > 0 && last.is_multiple_of(BLOCK_LEN as u64));
            if !whole_rows {
                return;
            }
            for (format, name, quantize) in REQUANTIZE {
                let mut blocks = vec![0; values.len() / BLOCK_LEN * format.block_bytes()];
                // Non-finite values are refused by the kernels: no block reading then.
                if quantize(&values, &mut blocks).is_ok() {
                    add_blocks(
                        reading,
                        &format!("{} (as {name})", tensor.name),
                        format,
                        &blocks,
                    );
                }
            }
        }
        DType::Quantized(_) => {
            if let Carrier::Blocks(format) = carrier(tensor.dtype) {
                add_blocks(reading, &tensor.name, format, tensor.data());
            }
            if let Ok(values) = tensor.to_f32() {
                reading.add(&format!("{} (dequantized)", tensor.name), &values);
            }
        }
        DType::I8 | DType::U8 => {}
    }
}

/// [`Reading::add_blocks`] of data that is whole blocks by construction (a block tensor's data,
/// which `Tensor::new` checks, or a kernel's output), so it cannot fail.
fn add_blocks(reading: &mut Reading, name: &str, format: BlockFormat, data: &[u8]) {
    let read = reading.add_blocks(name, format, data).is_ok();
    debug_assert!(read, "{name}: partial blocks");
}

impl Watermarkable for TensorModel {
    type Error = Error;

    fn embed_watermark(
        &mut self,
        watermark: &Watermark,
        seller_key: &SellerKey,
    ) -> Result<Traceability> {
        let (marked, report) = self.watermarked(watermark, seller_key)?;
        *self = marked;
        Ok(report.traceability)
    }

    fn extract_watermark(&self, seller_key: &SellerKey) -> Option<Extracted> {
        self.watermark_reading(seller_key).extract()
    }

    fn verify_watermark(&self, buyer_hash: &[u8; 32], seller_key: &SellerKey) -> bool {
        self.watermark_reading(seller_key)
            .verify(buyer_hash)
            .matched
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weights(seed: u64, n: usize) -> Vec<f32> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                #[allow(clippy::cast_precision_loss, reason = "test data")]
                let unit = (state >> 40) as f32 / (1u64 << 24) as f32;
                (unit - 0.5) * 0.2
            })
            .collect()
    }

    fn model() -> TensorModel {
        TensorModel::new(vec![
            Tensor::from_f32("w1", vec![64, 128], &weights(1, 8192)).unwrap(),
            Tensor::from_f32("b1", vec![8], &weights(2, 8)).unwrap(),
            Tensor::new("mask", DType::U8, vec![4], vec![1, 0, 1, 1]).unwrap(),
            Tensor::from_f32("w2", vec![32, 64], &weights(3, 2048)).unwrap(),
        ])
        .unwrap()
    }

    #[test]
    fn marks_f32_tensors_and_reads_the_buyer_back() {
        let seller = SellerKey::new([1; 32]);
        let mark = Watermark::for_buyer(&seller, b"buyer");
        let clean = model();
        let (marked, report) = clean.watermarked(&mark, &seller).unwrap();
        assert_eq!(report.traceability, Traceability::Extractable);
        let names: Vec<&str> = report.slices.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["w1", "b1", "w2"]);
        assert_eq!(marked.tensors[2], clean.tensors[2]);
        assert_ne!(marked.tensors[0], clean.tensors[0]);
        assert_eq!(
            marked.tensors[1], clean.tensors[1],
            "too few values to mark"
        );
        let found = marked.extract_watermark(&seller).unwrap();
        assert_eq!(found.buyer_hash, mark.buyer_hash);
        assert!(marked.verify_watermark(&mark.buyer_hash, &seller));
        assert!(clean.extract_watermark(&seller).is_none());
        assert!(marked.extract_watermark(&SellerKey::new([2; 32])).is_none());
        assert_eq!(clean.watermark_statistics().len(), 3);
    }

    #[test]
    fn explicit_choices_are_checked() {
        let seller = SellerKey::new([1; 32]);
        let mut mark = Watermark::for_buyer(&seller, b"buyer");
        mark.column_indices = vec![2];
        let error = model().watermarked(&mark, &seller).unwrap_err();
        assert!(
            matches!(&error, Error::WatermarkUnsupported { tensor, dtype: "u8", .. } if tensor == "mask"),
            "{error}"
        );
        mark.column_indices = vec![9];
        assert!(matches!(
            model().watermarked(&mark, &seller),
            Err(Error::NoTensorAt {
                position: 9,
                count: 4
            })
        ));
        mark.column_indices = vec![1];
        let error = model().watermarked(&mark, &seller).unwrap_err();
        assert!(
            matches!(
                error,
                Error::Watermark(EngineError::NotTraceable { values: 8, .. })
            ),
            "{error}"
        );
        assert!(error.is_operation_failure());
    }

    #[test]
    fn quantized_blocks_carry_the_mark() {
        let seller = SellerKey::new([1; 32]);
        let mark = Watermark::for_buyer(&seller, b"buyer");
        for quant in [QuantType::Q8_0, QuantType::Q4_0, QuantType::Q4_1] {
            let quantized = model().quantize(quant).unwrap();
            let mut marked = quantized.clone();
            assert_eq!(
                marked.embed_watermark(&mark, &seller).unwrap(),
                Traceability::Extractable,
                "{quant:?}"
            );
            assert_eq!(
                marked.extract_watermark(&seller).unwrap().buyer_hash,
                mark.buyer_hash
            );
            assert!(quantized.extract_watermark(&seller).is_none());
        }
    }
}
