//! The crate's one error type and the contract's failure codes (004 §0.K, §II.F, §II.G).
//!
//! Every [`Error`] maps to exactly one [`FailureCode`]; the code's string form is what the CLI
//! prints and what an [`ErrorRecord`](crate::trace::ErrorRecord) carries.

use std::fmt;

use crate::hash::Digest;

/// Deterministic failure codes. The contract names the failure classes but not their spelling;
/// these names are this implementation's (listed in `docs/lineage.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureCode {
    /// The dataset has zero files (a Merkle tree needs at least one leaf).
    EmptyDataset,
    /// A relative path cannot be normalized (§II.F path rules) or is not UTF-8.
    InvalidPath,
    /// Two sources carry the same relative path.
    DuplicatePath,
    /// A symlink or a special file met while walking, with the default policy.
    UnsupportedFileType,
    /// A split definition is malformed (empty name, fraction outside [0, 1], no splits).
    InvalidSplitDef,
    /// Two split entries share a `split_name`.
    DuplicateSplitName,
    /// A NaN or infinite number where the contract needs a finite one.
    NonFinite,
    /// `abs(sum(split_fraction) - 1.0) > EPS_EQ`.
    SplitFractionSum,
    /// Split entries carry different `split_seed`s (or only some carry one).
    SplitSeedConflict,
    /// A transform is not a map, or lacks `seq: uint`.
    InvalidTransform,
    /// Two transforms share a `seq`.
    TransformSeqTie,
    /// A JSON document could not be parsed into the contract's inputs.
    InvalidJson,
    /// A tenant, version, object type, or hex hash argument is malformed.
    InvalidArgument,
    /// A lineage object is in, or refers into, another tenant's namespace.
    CrossTenantReference,
    /// A lineage object refers to an object that is not present.
    MissingLineageRef,
    /// Two lineage objects share `(object_type, object_id)`, or no objects were given.
    InvalidLineageSet,
    /// A recomputed snapshot ID differs from the expected one.
    SnapshotHashMismatch,
    /// A CBOR item (checkpoint) is malformed or not canonical.
    MalformedCbor,
    /// A checkpoint does not belong to this build (different tree or inputs).
    CheckpointMismatch,
    /// An execution certificate is malformed, its signer is not trusted, its signature does not
    /// hold, or it binds other hashes than expected.
    CertificateInvalid,
    /// A record-oriented source file (CSV, JSON Lines, Parquet, `.ald`) whose records cannot be
    /// counted: its format's reader refuses it.
    InvalidRecordSource,
    /// Reading the dataset or writing a checkpoint failed.
    Io,
}

impl FailureCode {
    /// The code's stable string form, e.g. `"SPLIT_FRACTION_SUM"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::EmptyDataset => "EMPTY_DATASET",
            Self::InvalidPath => "INVALID_PATH",
            Self::DuplicatePath => "DUPLICATE_PATH",
            Self::UnsupportedFileType => "UNSUPPORTED_FILE_TYPE",
            Self::InvalidSplitDef => "INVALID_SPLIT_DEF",
            Self::DuplicateSplitName => "DUPLICATE_SPLIT_NAME",
            Self::NonFinite => "NON_FINITE",
            Self::SplitFractionSum => "SPLIT_FRACTION_SUM",
            Self::SplitSeedConflict => "SPLIT_SEED_CONFLICT",
            Self::InvalidTransform => "INVALID_TRANSFORM",
            Self::TransformSeqTie => "TRANSFORM_SEQ_TIE",
            Self::InvalidJson => "INVALID_JSON",
            Self::InvalidArgument => "INVALID_ARGUMENT",
            Self::CrossTenantReference => "CROSS_TENANT_REFERENCE",
            Self::MissingLineageRef => "MISSING_LINEAGE_REF",
            Self::InvalidLineageSet => "INVALID_LINEAGE_SET",
            Self::SnapshotHashMismatch => "SNAPSHOT_HASH_MISMATCH",
            Self::MalformedCbor => "MALFORMED_CBOR",
            Self::CheckpointMismatch => "CHECKPOINT_MISMATCH",
            Self::CertificateInvalid => "CERTIFICATE_INVALID",
            Self::InvalidRecordSource => "INVALID_RECORD_SOURCE",
            Self::Io => "IO",
        }
    }
}

impl fmt::Display for FailureCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What is wrong with a relative path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathProblem {
    /// The path is empty.
    Empty,
    /// The path starts with `/`.
    LeadingSlash,
    /// An empty segment (`a//b` or a trailing `/`).
    EmptySegment,
    /// A `.` or `..` segment.
    DotSegment,
    /// A NUL byte.
    Nul,
    /// The file name is not valid UTF-8.
    NotUtf8,
}

impl fmt::Display for PathProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Empty => "empty path",
            Self::LeadingSlash => "leading slash",
            Self::EmptySegment => "empty segment",
            Self::DotSegment => "`.` or `..` segment",
            Self::Nul => "NUL byte",
            Self::NotUtf8 => "not UTF-8",
        })
    }
}

/// What is wrong with a CBOR item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CborProblem {
    /// The input ends inside an item, or a length exceeds what remains.
    Truncated,
    /// Bytes after the single top-level item.
    TrailingBytes,
    /// Decodes, but re-encoding gives different bytes.
    NotCanonical,
    /// A tag, an indefinite length, or a simple value outside the subset.
    Unsupported,
    /// A text string that is not UTF-8.
    InvalidUtf8,
    /// A map key that is not text.
    NonTextKey,
    /// A repeated map key.
    DuplicateKey,
    /// Nesting beyond [`MAX_DECODE_DEPTH`](crate::cbor::MAX_DECODE_DEPTH).
    TooDeep,
    /// Well-formed CBOR, but not the expected structure.
    Shape,
}

impl fmt::Display for CborProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Truncated => "truncated",
            Self::TrailingBytes => "trailing bytes",
            Self::NotCanonical => "not canonical",
            Self::Unsupported => "unsupported item",
            Self::InvalidUtf8 => "invalid UTF-8",
            Self::NonTextKey => "non-text map key",
            Self::DuplicateKey => "duplicate map key",
            Self::TooDeep => "nested too deeply",
            Self::Shape => "unexpected structure",
        })
    }
}

impl From<strict_json::Error> for Error {
    fn from(source: strict_json::Error) -> Self {
        Self::InvalidJson {
            offset: source.offset,
            reason: source.kind.reason(),
            source: Some(source),
        }
    }
}

/// Every failure of the crate. [`Error::failure_code`] gives the contract's code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Zero files: no Merkle root exists.
    #[error("EMPTY_DATASET: the dataset has no files")]
    EmptyDataset,
    /// A path that cannot be normalized.
    #[error("INVALID_PATH: {path:?}: {problem}")]
    InvalidPath {
        /// The path as given (lossy for non-UTF-8 names).
        path: String,
        /// What is wrong with it.
        problem: PathProblem,
    },
    /// Two sources with the same path.
    #[error("DUPLICATE_PATH: {path:?} appears twice")]
    DuplicatePath {
        /// The repeated path.
        path: String,
    },
    /// A symlink or special file where only regular files are allowed.
    #[error("UNSUPPORTED_FILE_TYPE: {path:?} is a {kind} (symlinks are not followed)")]
    UnsupportedFileType {
        /// Its relative path.
        path: String,
        /// `"symlink"` or `"special file"`.
        kind: &'static str,
    },
    /// No split entries, an empty name, or a fraction outside [0, 1].
    #[error("INVALID_SPLIT_DEF: split {name:?}: {reason}")]
    InvalidSplitDef {
        /// The split's name (empty when the list is empty).
        name: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A repeated `split_name`.
    #[error("DUPLICATE_SPLIT_NAME: {name:?}")]
    DuplicateSplitName {
        /// The repeated name.
        name: String,
    },
    /// NaN or infinity.
    #[error("NON_FINITE: {field} is {value}")]
    NonFinite {
        /// Where it was found.
        field: String,
        /// The value.
        value: f64,
    },
    /// Fractions do not sum to 1 within `EPS_EQ`.
    #[error("SPLIT_FRACTION_SUM: split fractions sum to {sum}, not 1 within EPS_EQ = 1e-10")]
    SplitFractionSum {
        /// The binary64 sum in sorted split order.
        sum: f64,
    },
    /// Split entries disagree on `split_seed`.
    #[error("SPLIT_SEED_CONFLICT: split {name:?} has seed {found:?}, another has {expected:?}")]
    SplitSeedConflict {
        /// The split that disagrees.
        name: String,
        /// The seed of the first split in sorted order.
        expected: Option<u64>,
        /// This split's seed.
        found: Option<u64>,
    },
    /// A transform that is not a map with `seq: uint`.
    #[error("INVALID_TRANSFORM: transform #{index}: {reason}")]
    InvalidTransform {
        /// Its position in the input list.
        index: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// Two transforms with the same `seq`.
    #[error("TRANSFORM_SEQ_TIE: two transforms have seq {seq}")]
    TransformSeqTie {
        /// The shared `seq`.
        seq: u64,
    },
    /// Malformed JSON input.
    #[error("INVALID_JSON: at byte {offset}: {reason}")]
    InvalidJson {
        /// Byte offset in the document.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
        /// The strict JSON reader's refusal, when it was the reader's (not the integer range).
        #[source]
        source: Option<strict_json::Error>,
    },
    /// A malformed argument (tenant, version, object type, hex).
    #[error("INVALID_ARGUMENT: {what}: {reason}")]
    InvalidArgument {
        /// Which argument.
        what: &'static str,
        /// What is wrong.
        reason: &'static str,
        /// The parser's error, where one says more (which hex digit).
        #[source]
        source: Option<hex::FromHexError>,
    },
    /// A cross-tenant reference.
    #[error(
        "CROSS_TENANT_REFERENCE: object {object_id} of tenant {found:?} seen under tenant {expected:?}"
    )]
    CrossTenantReference {
        /// The tenant the lineage set belongs to.
        expected: String,
        /// The tenant the object or reference names.
        found: String,
        /// The object (or referenced object) ID.
        object_id: Digest,
    },
    /// A reference to an absent object.
    #[error("MISSING_LINEAGE_REF: {object_type} {object_id} is referenced but not present")]
    MissingLineageRef {
        /// The referenced type.
        object_type: &'static str,
        /// The referenced ID.
        object_id: Digest,
    },
    /// Duplicate lineage objects, or none.
    #[error("INVALID_LINEAGE_SET: {reason}")]
    InvalidLineageSet {
        /// What is wrong.
        reason: &'static str,
    },
    /// A snapshot recomputed to a different ID.
    #[error("SNAPSHOT_HASH_MISMATCH: expected {expected}, computed {found}")]
    SnapshotHashMismatch {
        /// The expected ID.
        expected: Digest,
        /// The recomputed ID.
        found: Digest,
    },
    /// Malformed or non-canonical CBOR.
    #[error("MALFORMED_CBOR: at byte {offset}: {problem}")]
    Cbor {
        /// Byte offset of the problem.
        offset: usize,
        /// What is wrong.
        problem: CborProblem,
        /// The UTF-8 check's error, for a text string that is not UTF-8 (where in it).
        #[source]
        source: Option<std::str::Utf8Error>,
    },
    /// A checkpoint from another build.
    #[error("CHECKPOINT_MISMATCH: {reason}")]
    CheckpointMismatch {
        /// What differs.
        reason: &'static str,
    },
    /// A record-oriented source whose records cannot be counted
    /// ([`records`](crate::records)).
    #[error("INVALID_RECORD_SOURCE: {path:?} ({format}): {reason}")]
    RecordSource {
        /// The file's relative path.
        path: String,
        /// Its format (`"parquet"`, `"ald"`, ...).
        format: &'static str,
        /// What its reader said.
        reason: String,
    },
    /// An execution certificate does not hold ([`Certificate`](crate::certificate::Certificate)).
    #[error("CERTIFICATE_INVALID: {reason}")]
    CertificateInvalid {
        /// What is wrong.
        reason: &'static str,
    },
    /// A file changed while the snapshot was taken (it must be taken over files at rest).
    #[error("IO: {path:?}: {reason}")]
    FileChanged {
        /// Relative path.
        path: String,
        /// What changed (a fixed sentence).
        reason: &'static str,
    },
    /// An I/O failure while reading the dataset or writing a checkpoint.
    #[error("IO: {path}: {source}")]
    Io {
        /// The file involved.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// The operator (004 §0.G) that reports this failure, for the error record.
    #[must_use]
    pub const fn operator(&self) -> &'static str {
        use crate::snapshot::{OP_BUILD, OP_COMPUTE_LINEAGE, OP_VALIDATE};
        match self {
            Self::Io { .. }
            | Self::FileChanged { .. }
            | Self::Cbor { .. }
            | Self::CheckpointMismatch { .. }
            | Self::CertificateInvalid { .. }
            | Self::RecordSource { .. } => OP_BUILD,
            Self::CrossTenantReference { .. }
            | Self::MissingLineageRef { .. }
            | Self::InvalidLineageSet { .. } => OP_COMPUTE_LINEAGE,
            _ => OP_VALIDATE,
        }
    }

    /// The contract failure code of this error.
    #[must_use]
    pub const fn failure_code(&self) -> FailureCode {
        match self {
            Self::EmptyDataset => FailureCode::EmptyDataset,
            Self::InvalidPath { .. } => FailureCode::InvalidPath,
            Self::DuplicatePath { .. } => FailureCode::DuplicatePath,
            Self::UnsupportedFileType { .. } => FailureCode::UnsupportedFileType,
            Self::InvalidSplitDef { .. } => FailureCode::InvalidSplitDef,
            Self::DuplicateSplitName { .. } => FailureCode::DuplicateSplitName,
            Self::NonFinite { .. } => FailureCode::NonFinite,
            Self::SplitFractionSum { .. } => FailureCode::SplitFractionSum,
            Self::SplitSeedConflict { .. } => FailureCode::SplitSeedConflict,
            Self::InvalidTransform { .. } => FailureCode::InvalidTransform,
            Self::TransformSeqTie { .. } => FailureCode::TransformSeqTie,
            Self::InvalidJson { .. } => FailureCode::InvalidJson,
            Self::InvalidArgument { .. } => FailureCode::InvalidArgument,
            Self::CrossTenantReference { .. } => FailureCode::CrossTenantReference,
            Self::MissingLineageRef { .. } => FailureCode::MissingLineageRef,
            Self::InvalidLineageSet { .. } => FailureCode::InvalidLineageSet,
            Self::SnapshotHashMismatch { .. } => FailureCode::SnapshotHashMismatch,
            Self::Cbor { .. } => FailureCode::MalformedCbor,
            Self::CheckpointMismatch { .. } => FailureCode::CheckpointMismatch,
            Self::CertificateInvalid { .. } => FailureCode::CertificateInvalid,
            Self::RecordSource { .. } => FailureCode::InvalidRecordSource,
            Self::Io { .. } | Self::FileChanged { .. } => FailureCode::Io,
        }
    }
}
