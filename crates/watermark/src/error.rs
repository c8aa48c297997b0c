//! The crate's one error type.

/// Why a watermark could not be embedded. Extraction and verification do not fail: finding no
/// buyer is an answer ([`crate::extract`] returns `None`), not an error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The strength is not a finite number within [`crate::STRENGTH_RANGE`].
    #[error("INVALID_WATERMARK: strength {strength} is outside [{min}, {max}]")]
    StrengthOutOfRange {
        /// The strength asked for.
        strength: f32,
        /// Smallest accepted strength.
        min: f32,
        /// Largest accepted strength.
        max: f32,
    },
    /// The redundancy is not a finite number in (0, 1].
    #[error("INVALID_WATERMARK: redundancy {redundancy} is outside (0, 1]")]
    RedundancyOutOfRange {
        /// The redundancy asked for.
        redundancy: f32,
    },
    /// The values were changed, but reading them back with the same key neither recovers the
    /// buyer nor verifies it (too few values, too little spread, or a precision too low for the
    /// strength). The caller must not claim the data is watermarked (the license's WATERMARKED
    /// flag) and should discard the changed values.
    #[error(
        "WATERMARK_NOT_EMBEDDED: {marked} of {values} values carry the mark, which does not read \
         back; use more values, more slices or a larger strength"
    )]
    NotTraceable {
        /// Values offered.
        values: u64,
        /// Values that now carry a mark bit.
        marked: u64,
    },
    /// Quantized block data (`crate::blocks`) that is not a whole number of blocks.
    #[error("INVALID_WATERMARK: {bytes} bytes are not whole blocks of {block_bytes} bytes")]
    NotWholeBlocks {
        /// Bytes given.
        bytes: u64,
        /// Bytes of one block of the format.
        block_bytes: u64,
    },
    /// Evidence of another shape than docs/watermark.md §14 (a missing member, a float where
    /// numbers are strings, a key or signature that does not decode).
    #[error("InvalidFormat: watermark evidence: {reason}")]
    EvidenceMalformed {
        /// What is wrong.
        reason: String,
    },
    /// The evidence's signature does not verify under its seller key: it was altered, or not
    /// signed by that key.
    #[error("SignatureInvalid: the evidence was altered or not signed by its seller key")]
    EvidenceSignatureInvalid,
    /// The file given is not the one the evidence is about.
    #[error("ChecksumMismatch: the file's BLAKE3 {blake3} is not the evidence's dataset_hash")]
    EvidenceFileMismatch {
        /// The file's BLAKE3, hex.
        blake3: String,
    },
}
