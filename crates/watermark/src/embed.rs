//! Embedding: moving each value of a slice onto a keyed target that carries one payload bit.

use crate::Watermark;
use crate::error::Error;
use crate::keys::{PAYLOAD_LEN, SellerKey};
use crate::qim::{Grid, scale};
use crate::sample::Sample;

/// Why a slice carries no mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Skip {
    /// Fewer than [`crate::MIN_SLICE_VALUES`] finite values.
    TooFewValues,
    /// Interquartile range and range are both zero (a constant slice).
    NoSpread,
    /// The step `strength * scale` is not a normal f64 of a usable exponent.
    StepOutOfRange,
    /// The step is finer than the slice's type can hold a mark in: an integer slice needs a step
    /// of at least 32 units (`strength * scale >= 32`, docs/watermark.md §3).
    StepTooFine {
        /// The cell exponent the strength gave.
        exponent: i32,
        /// The smallest exponent the type accepts ([`crate::Sample::MIN_EXPONENT`]).
        min_exponent: i32,
    },
}

/// What embedding did to one slice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SliceReport {
    /// Values in the slice.
    pub values: usize,
    /// Values moved onto a target (they now carry a payload bit).
    pub marked: usize,
    /// Cell exponent `E` (step `2^E`), if the slice was marked.
    pub exponent: Option<i32>,
    /// Why nothing was marked, if so.
    pub skipped: Option<Skip>,
}

/// Embeds one buyer's payload into any number of slices, one at a time (a column, a tensor).
///
/// Slices are independent: each has its own step from its own scale, and all carry the same
/// payload, so an extractor may read any subset of them in any order.
#[derive(Debug)]
pub struct Embedder {
    key: SellerKey,
    payload: [u8; PAYLOAD_LEN],
    strength: f64,
    /// Cells whose selection hash `>> 32` is below this carry the mark (`None`: every cell).
    select: Option<u64>,
}

impl Embedder {
    /// An embedder of `watermark` (strength and redundancy) under `seller_key`.
    ///
    /// # Errors
    /// [`Error::StrengthOutOfRange`], [`Error::RedundancyOutOfRange`].
    pub fn new(seller_key: &SellerKey, watermark: &Watermark) -> Result<Self, Error> {
        watermark.validate()?;
        let select = (watermark.redundancy < 1.0).then(|| {
            // floor(redundancy * 2^32), exactly (an f32 times a power of two).
            #[allow(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "redundancy is in (0, 1), so the product is in (0, 2^32)"
            )]
            let threshold = (f64::from(watermark.redundancy) * 4_294_967_296.0).floor() as u64;
            threshold
        });
        Ok(Self {
            key: seller_key.clone(),
            payload: seller_key.payload(&watermark.buyer_hash),
            strength: f64::from(watermark.strength),
            select,
        })
    }

    /// Marks one slice in place and says how many values carry the mark.
    pub fn embed<T: Sample>(&self, values: &mut [T]) -> SliceReport {
        let mut report = SliceReport {
            values: values.len(),
            marked: 0,
            exponent: None,
            skipped: None,
        };
        let Some(scale) = scale(values) else {
            let finite = values.iter().filter(|v| v.to_f64().is_finite()).count();
            report.skipped = Some(if finite < crate::MIN_SLICE_VALUES {
                Skip::TooFewValues
            } else {
                Skip::NoSpread
            });
            return report;
        };
        let exponent = Grid::exponent_for(self.strength, scale);
        if let Some(exponent) = exponent.filter(|&e| e < T::MIN_EXPONENT) {
            report.skipped = Some(Skip::StepTooFine {
                exponent,
                min_exponent: T::MIN_EXPONENT,
            });
            return report;
        }
        let Some(grid) = exponent.and_then(|e| Grid::new::<T>(&self.key, e)) else {
            report.skipped = Some(Skip::StepOutOfRange);
            return report;
        };
        report.exponent = Some(grid.exponent());
        for value in values.iter_mut() {
            let Some((cell, moved)) = grid.embed(value.to_f64(), &self.payload, self.select) else {
                continue;
            };
            // Rounding to the slice's format must leave the value in the cell it was moved to.
            let rounded = T::from_f64(moved);
            if grid
                .locate(rounded.to_f64())
                .is_some_and(|(j, _)| j == cell)
            {
                *value = rounded;
                report.marked += 1;
            }
        }
        report
    }
}
