//! Leak tracing for datasets and models (000 §9.3-9.6, 001 §9.2, 003 §8.3): a buyer-specific
//! fingerprint keyed by a 32-byte seller secret, embedded in float values (dataset columns, model
//! tensors), recovered with the key, and keyless statistics that look for naive LSB marks.
//!
//! **Key design decision: keyed quantization-index modulation on value cells, not LSB flipping.**
//! The spec's "perturb the least significant bits" dies on the first rounding or noise; here each
//! value is moved by a fraction of a step `Δ = 2^E` (about `strength` times the slice's
//! interquartile range) onto one of two keyed targets in its cell of the grid, and the target
//! chosen is one bit of a 320-bit payload (the 32-byte buyer hash and a 64-bit tag keyed by the
//! seller). Which bit, and where the targets sit, is a keyed hash of the value's cell index
//! alone: the value's coarse, high-order part. So a surviving value votes the same way whatever
//! happened to the rows and columns around it (row shuffling, row sampling, column subsets), and
//! rounding or noise below about `Δ/8` leaves its vote intact. Thousands of values vote on each
//! bit; the decoder takes the sign of each bit's summed soft votes, corrects up to sixteen doubtful
//! bits by trying them against the tag, and reports a buyer only when the tag verifies, which
//! bounds a false accusation by 2^-48 per extraction whatever the data. `docs/watermark.md`
//! specifies the scheme byte for byte and publishes the measured robustness, distortion and
//! false-positive figures.
//!
//! The engine works on plain slices of [`Sample`] values (f64, f32, and f16 with the default
//! feature `f16`; integers, which stay integers, on steps of at least 32 units), one slice per
//! column or tensor, so `ald` and `apr` implement [`Watermarkable`]
//! by handing it their columns and tensors. It needs no filesystem, threads or randomness and
//! builds for `wasm32-unknown-unknown`.
//!
//! Quantized tensors (GGUF Q8_0, Q4_0, Q4_1 blocks) carry the same payload in the keyed parity of
//! sparse quants instead ([`blocks`], docs/watermark.md §12), through [`Marking::embed_blocks`] and
//! [`Reading::add_blocks`].
//!
//! ```
//! use watermark::{SellerKey, Watermark, Watermarkable};
//!
//! let seller = SellerKey::new([7; 32]);
//! let mut column: Vec<f64> = (0..20_000).map(|i| (f64::from(i) * 0.37).sin() * 10.0 + 50.0).collect();
//! let mark = Watermark::for_buyer(&seller, b"buyer@example.com");
//! column.embed_watermark(&mark, &seller)?;
//!
//! // A leaked copy: every other row, shuffled, printed as text and parsed back.
//! let mut leaked: Vec<f64> = column.iter().step_by(2).map(|v| v.to_string().parse().unwrap()).collect();
//! leaked.reverse();
//! let found = leaked.extract_watermark(&seller).expect("the buyer is recovered");
//! assert_eq!(found.buyer_hash, mark.buyer_hash);
//! assert!(leaked.verify_watermark(&mark.buyer_hash, &seller));
//! assert!(leaked.extract_watermark(&SellerKey::new([8; 32])).is_none());
//! # Ok::<(), watermark::Error>(())
//! ```

#![forbid(unsafe_code)]

pub mod blocks;
pub mod detect;
mod embed;
mod error;
#[cfg(feature = "evidence")]
pub mod evidence;
mod extract;
mod keys;
mod qim;
mod sample;
pub mod synthetic;
mod whole;

pub use embed::{Embedder, Skip, SliceReport};
pub use error::Error;
pub use extract::{
    CHASE_BITS, Extracted, Extractor, MIN_ENERGY, SliceEvidence, VERIFY_THRESHOLD, Verification,
    binomial_tail,
};
pub use keys::{
    CellKey, LABEL_BUYER, LABEL_CELL, LABEL_TAG, PAYLOAD_BITS, PAYLOAD_LEN, SellerKey, TAG_LEN,
    payload_bit,
};
pub use qim::{
    COMPENSATION, EDGE_MARGIN, MIN_SLICE_VALUES, PRECISION_MARGIN_BITS, SEARCH_EXPONENTS,
    SEARCH_SAMPLE,
};
pub use sample::Sample;
pub use whole::{MarkReport, Marking, NamedEvidence, NamedReport, Reading};

/// Embedding strength used by [`Watermark::for_buyer`]: the step is the largest power of two not
/// above `strength * IQR` (000 §9.3.1: "0.0001 - 0.001 typical").
pub const DEFAULT_STRENGTH: f32 = 1e-3;

/// Accepted strengths, inclusive. The extractor searches every cell exponent this range can give.
pub const STRENGTH_RANGE: (f32, f32) = (1e-6, 0.1);

/// A buyer's watermark (000 §9.3.1): who, how strong, where, how dense.
#[derive(Debug, Clone, PartialEq)]
pub struct Watermark {
    /// The buyer hash, [`SellerKey::buyer_hash`] of the buyer id.
    pub buyer_hash: [u8; 32],
    /// Step relative to each slice's interquartile range, in [`STRENGTH_RANGE`].
    pub strength: f32,
    /// Columns (or tensors) to mark, by index; empty means all. The engine marks whatever slices
    /// it is given; the format crates use [`Watermark::selects`].
    pub column_indices: Vec<usize>,
    /// Fraction of value cells that carry the mark, in (0, 1]; 1.0 marks every value. Lower
    /// values leave more values untouched and give fewer votes per bit (docs/watermark.md §4).
    pub redundancy: f32,
}

impl Watermark {
    /// The default mark of a buyer hash: every column, every value, [`DEFAULT_STRENGTH`].
    #[must_use]
    pub const fn new(buyer_hash: [u8; 32]) -> Self {
        Self {
            buyer_hash,
            strength: DEFAULT_STRENGTH,
            column_indices: Vec::new(),
            redundancy: 1.0,
        }
    }

    /// The default mark of buyer `buyer_id` under `seller_key`: every column, every value,
    /// [`DEFAULT_STRENGTH`].
    #[must_use]
    pub fn for_buyer(seller_key: &SellerKey, buyer_id: &[u8]) -> Self {
        Self::new(seller_key.buyer_hash(buyer_id))
    }

    /// Whether slice `index` is to be marked.
    #[must_use]
    pub fn selects(&self, index: usize) -> bool {
        self.column_indices.is_empty() || self.column_indices.contains(&index)
    }

    /// Checks strength and redundancy.
    ///
    /// # Errors
    /// [`Error::StrengthOutOfRange`], [`Error::RedundancyOutOfRange`].
    pub fn validate(&self) -> Result<(), Error> {
        let (min, max) = STRENGTH_RANGE;
        if !(self.strength >= min && self.strength <= max) {
            return Err(Error::StrengthOutOfRange {
                strength: self.strength,
                min,
                max,
            });
        }
        if !(self.redundancy > 0.0 && self.redundancy <= 1.0) {
            return Err(Error::RedundancyOutOfRange {
                redundancy: self.redundancy,
            });
        }
        Ok(())
    }
}

/// What can carry a watermark (000 §9.3.1, 003 §8.3): a dataset's numeric columns, a model's
/// float tensors. `ald` and `apr` implement it by handing each selected column or tensor to an
/// [`Embedder`] and every readable one to an [`Extractor`]; it is implemented here for a single
/// slice of [`Sample`]s.
pub trait Watermarkable {
    /// The implementer's error, which can carry this crate's.
    type Error: From<Error>;

    /// Embeds `watermark` and checks that the key reads it back (by extraction or, at least, by
    /// verification); on error the caller must not claim the data is watermarked.
    ///
    /// # Errors
    /// Invalid parameters, or [`Error::NotTraceable`] when the values cannot carry the mark.
    fn embed_watermark(
        &mut self,
        watermark: &Watermark,
        seller_key: &SellerKey,
    ) -> Result<Traceability, Self::Error>;

    /// The buyer whose mark `seller_key` finds, if any.
    fn extract_watermark(&self, seller_key: &SellerKey) -> Option<Extracted>;

    /// Whether the values carry `buyer_hash`'s mark ([`Verification::matched`]).
    fn verify_watermark(&self, buyer_hash: &[u8; 32], seller_key: &SellerKey) -> bool;
}

impl<T: Sample> Watermarkable for [T] {
    type Error = Error;

    fn embed_watermark(
        &mut self,
        watermark: &Watermark,
        seller_key: &SellerKey,
    ) -> Result<Traceability, Error> {
        embed(self, watermark, seller_key).map(|(_, traceability)| traceability)
    }

    fn extract_watermark(&self, seller_key: &SellerKey) -> Option<Extracted> {
        extract(self, seller_key)
    }

    fn verify_watermark(&self, buyer_hash: &[u8; 32], seller_key: &SellerKey) -> bool {
        verify(self, buyer_hash, seller_key).matched
    }
}

/// How a seller can trace an embedded mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Traceability {
    /// [`extract`] recovers the buyer from the data and the key alone.
    Extractable,
    /// The data holds too few distinct cells to carry all 320 payload bits (f16 tensors, few
    /// distinct values, large strengths), but [`verify`] with the buyer's hash, or
    /// [`Extractor::identify`] over the seller's list of buyers, proves the match.
    VerifyOnly,
}

/// Marks one slice and checks that `seller_key` reads the buyer back from it.
///
/// # Errors
/// Invalid parameters, or [`Error::NotTraceable`] (the values were changed; discard them).
pub fn embed<T: Sample>(
    values: &mut [T],
    watermark: &Watermark,
    seller_key: &SellerKey,
) -> Result<(SliceReport, Traceability), Error> {
    let report = Embedder::new(seller_key, watermark)?.embed(values);
    let mut extractor = Extractor::new(seller_key);
    extractor.add(values);
    if extractor
        .extract()
        .is_some_and(|found| found.buyer_hash == watermark.buyer_hash)
    {
        Ok((report, Traceability::Extractable))
    } else if extractor.verify(&watermark.buyer_hash).matched {
        Ok((report, Traceability::VerifyOnly))
    } else {
        Err(Error::NotTraceable {
            values: u64::try_from(report.values).unwrap_or(u64::MAX),
            marked: u64::try_from(report.marked).unwrap_or(u64::MAX),
        })
    }
}

/// The buyer whose mark `seller_key` finds in one slice, if any.
#[must_use]
pub fn extract<T: Sample>(values: &[T], seller_key: &SellerKey) -> Option<Extracted> {
    let mut extractor = Extractor::new(seller_key);
    extractor.add(values);
    extractor.extract()
}

/// Whether one slice carries `buyer_hash`'s mark under `seller_key`, with the evidence.
#[must_use]
pub fn verify<T: Sample>(
    values: &[T],
    buyer_hash: &[u8; 32],
    seller_key: &SellerKey,
) -> Verification {
    let mut extractor = Extractor::new(seller_key);
    extractor.add(values);
    extractor.verify(buyer_hash)
}
