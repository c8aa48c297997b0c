//! The error type of `ald`: the envelope's failures ([`envelope_core::Error`], joined by `From`)
//! and the ones only a dataset can have (a schema other than the expected one, a column an output
//! format cannot hold, a file of another format that its reader refuses).
//!
//! Every variant keeps its cause: an Arrow, parquet or MessagePack error behind a failure is its
//! [`std::error::Error::source`] ([`Cause`]), not only its text. [`Error::signal`] names the same
//! Andon signal as the envelope's errors, and every message starts with that signal's name
//! (`SchemaMismatch: expected ..., found ...`), so CLIs print and classify both alike.

use std::borrow::Cow;

use arrow_schema::ArrowError;
use envelope_core::{FormatError, Signal};

/// Result alias of this crate.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Every failure of `ald`. See [`Error::signal`] for the Andon signal of each.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A failure of the envelope (structure, checksum, signature, decryption, license, limits,
    /// I/O).
    #[error(transparent)]
    Envelope(#[from] envelope_core::Error),
    /// A dataset's schema is not the expected one.
    #[error("SchemaMismatch: expected {expected}, found {found}")]
    SchemaMismatch {
        /// The schema the caller expects, rendered for people.
        expected: String,
        /// The schema the file has, rendered for people.
        found: String,
    },
    /// A column cannot be written in the chosen output format (CSV holds flat values only).
    #[error("Usage: column {column:?} ({data_type}) cannot be written as {format}: {reason}")]
    ColumnNotWritable {
        /// The output format (`"CSV"`).
        format: &'static str,
        /// The column's name.
        column: String,
        /// Its Arrow type, as Arrow prints it.
        data_type: String,
        /// Why, and what to write instead.
        reason: &'static str,
    },
    /// A file of another format (CSV, JSONL, Parquet, Arrow IPC) that its reader refuses:
    /// malformed bytes, a value that does not fit its column, or bytes that made the reader panic
    /// (caught natively and reported here).
    #[error("InvalidFormat: {format}: {reason}")]
    Foreign {
        /// The file's format (`"Parquet"`, `"Arrow IPC"`, ...).
        format: &'static str,
        /// Which rule the bytes break, or the reader's message (then also kept as `cause`).
        reason: Cow<'static, str>,
        /// The reader's own error, where it returned one.
        #[source]
        cause: Option<Cause>,
    },
    /// A section of an `.ald` file whose decoder (Arrow IPC, MessagePack) refuses it: `rule` says
    /// which rule of docs/ald.md the bytes break, `cause` what the decoder said.
    #[error("InvalidFormat: {rule}")]
    Undecodable {
        /// The rule broken, as the envelope words it.
        rule: FormatError,
        /// The decoder's error.
        #[source]
        cause: Cause,
    },
    /// A table or card this crate cannot encode as asked (Arrow refused to concatenate or encode
    /// the batches, MessagePack the metadata).
    #[error("Usage: {what}")]
    Unencodable {
        /// What could not be done.
        what: &'static str,
        /// The encoder's error.
        #[source]
        cause: Cause,
    },
    /// A file name whose extension names no format this crate reads or writes.
    #[error("Usage: unknown file extension: use .csv, .jsonl, .parquet, .arrow, .arrows or .ald")]
    UnknownExtension {
        /// The extension found (lower case; empty when there is none).
        extension: String,
    },
    /// A dataset type name that is not one of docs/ald.md §2.
    #[error("Usage: unknown dataset type name")]
    UnknownDatasetType {
        /// The name given.
        name: String,
    },
    /// An entry of a schema written as text that does not parse.
    #[error("Usage: {reason}")]
    SchemaText {
        /// The entry.
        entry: String,
        /// Why it does not parse.
        reason: &'static str,
        /// Arrow's error for a type it does not parse.
        #[source]
        cause: Option<ArrowError>,
    },
    /// Rows asked for that the dataset does not have.
    #[error("Usage: the rows requested go past the last row")]
    RowsOutOfRange {
        /// The first row asked for.
        start: u64,
        /// How many.
        count: u64,
        /// The rows the dataset has.
        num_rows: u64,
    },
    /// An operation that needs a TRUENO_NATIVE file was asked of another.
    #[error("Usage: the file is not TRUENO_NATIVE")]
    NotTruenoNative,
    /// The caller passed arguments that cannot work together.
    #[error("Usage: {0}")]
    InvalidArgument(&'static str),
    /// A watermark was not embedded (000 §9.3): a strength or redundancy out of range, or
    /// `NotTraceable`, a mark that does not read back with the seller key (nothing was changed,
    /// and nothing may claim the data is watermarked).
    #[error("Usage: {0}")]
    Watermark(#[from] watermark::Error),
    /// A column selected for a watermark that cannot carry one: its type (strings, decimals,
    /// nested), or its values (too few, all equal, an integer column whose step would be under 32
    /// units).
    #[error("Usage: column {index} ({column:?}, {data_type}) cannot carry a watermark: {reason}")]
    ColumnNotWatermarkable {
        /// The column's index in the schema.
        index: usize,
        /// Its name.
        column: String,
        /// Its Arrow type, as Arrow prints it.
        data_type: String,
        /// Why, and what would work.
        reason: Cow<'static, str>,
    },
    /// Listing a `.ald` set's directory failed (lineage's walk: I/O, a symlink, a path that is
    /// not UTF-8).
    #[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
    #[error("{}: {}", lineage_signal(.0), .0)]
    Lineage(#[source] lineage::Error),
    /// A column index (of a watermark's selection or a projection) past the last column.
    #[error("Usage: there is no column {index}: the schema has {columns} columns")]
    NoSuchColumn {
        /// The index asked for.
        index: usize,
        /// The columns the schema has.
        columns: usize,
    },
    /// A column index given twice in a projection (each column is read at most once; repeat it
    /// from the batch if wanted twice).
    #[error("Usage: column {index} is asked for twice in the projection")]
    DuplicateColumn {
        /// The index given twice.
        index: usize,
    },
}

/// The Andon signal of a failure of lineage's directory walk: reading is `Io`, the rest (a
/// symlink, a name that is not UTF-8) `Usage`.
#[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
const fn lineage_signal_of(error: &lineage::Error) -> Signal {
    match error.failure_code() {
        lineage::FailureCode::Io => Signal::Io,
        _ => Signal::Usage,
    }
}

#[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
fn lineage_signal(error: &lineage::Error) -> &'static str {
    lineage_signal_of(error).name()
}

/// The error of a library this crate reads or writes through, kept as the source of an
/// [`Error`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Cause {
    /// Arrow's.
    #[error(transparent)]
    Arrow(#[from] ArrowError),
    /// parquet's.
    #[cfg(all(feature = "interchange", not(target_arch = "wasm32")))]
    #[error(transparent)]
    Parquet(#[from] parquet::errors::ParquetError),
    /// MessagePack's, decoding.
    #[error(transparent)]
    MessagePackDecode(#[from] rmp_serde::decode::Error),
    /// MessagePack's, encoding.
    #[error(transparent)]
    MessagePackEncode(#[from] rmp_serde::encode::Error),
}

impl Error {
    /// The Andon signal this failure raises.
    #[must_use]
    pub const fn signal(&self) -> Signal {
        match self {
            Self::Envelope(error) => error.signal(),
            Self::SchemaMismatch { .. } => Signal::SchemaMismatch,
            Self::Foreign { .. } | Self::Undecodable { .. } => Signal::InvalidFormat,
            Self::ColumnNotWritable { .. }
            | Self::Unencodable { .. }
            | Self::UnknownExtension { .. }
            | Self::UnknownDatasetType { .. }
            | Self::SchemaText { .. }
            | Self::NotTruenoNative
            | Self::RowsOutOfRange { .. }
            | Self::InvalidArgument(_)
            | Self::Watermark(_)
            | Self::ColumnNotWatermarkable { .. }
            | Self::NoSuchColumn { .. }
            | Self::DuplicateColumn { .. } => Signal::Usage,
            #[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
            Self::Lineage(error) => lineage_signal_of(error),
        }
    }

    /// Whether the failure is about the dataset, not the request, although its signal is `Usage`:
    /// a column the output format cannot hold (`ColumnNotWritable`), a file over the reader's
    /// limits (`LimitExceeded`), or data that cannot carry a watermark (`NotTraceable`,
    /// `ColumnNotWatermarkable`) is a failure of the operation (a CLI exits 1), not of the command
    /// line.
    #[must_use]
    pub const fn is_operation_failure(&self) -> bool {
        matches!(
            self,
            Self::ColumnNotWritable { .. }
                | Self::ColumnNotWatermarkable { .. }
                | Self::Watermark(watermark::Error::NotTraceable { .. })
                | Self::Envelope(envelope_core::Error::LimitExceeded(_))
        )
    }

    /// The envelope failure behind this error, if it is one.
    #[must_use]
    pub const fn envelope(&self) -> Option<&envelope_core::Error> {
        match self {
            Self::Envelope(error) => Some(error),
            _ => None,
        }
    }

    /// `InvalidFormat`: a foreign file of `format` whose bytes break `reason`.
    #[cfg(all(feature = "interchange", not(target_arch = "wasm32")))]
    pub(crate) fn foreign(format: &'static str, reason: impl Into<Cow<'static, str>>) -> Self {
        Self::Foreign {
            format,
            reason: reason.into(),
            cause: None,
        }
    }

    /// `InvalidFormat`: a foreign file of `format` that its reader refused with `cause`.
    #[cfg(all(feature = "interchange", not(target_arch = "wasm32")))]
    pub(crate) fn foreign_reader(format: &'static str, cause: impl Into<Cause>) -> Self {
        let cause = cause.into();
        Self::Foreign {
            format,
            reason: cause.to_string().into(),
            cause: Some(cause),
        }
    }

    /// `Usage`: `what` failed on a table or card that Arrow or MessagePack would not encode.
    pub(crate) fn unencodable(what: &'static str) -> impl FnOnce(ArrowError) -> Self {
        move |error| Self::Unencodable {
            what,
            cause: error.into(),
        }
    }
}

impl From<FormatError> for Error {
    fn from(error: FormatError) -> Self {
        Self::Envelope(error.into())
    }
}

impl From<std::io::Error> for Error {
    fn from(error: std::io::Error) -> Self {
        Self::Envelope(error.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_message_starts_with_its_signal_name() {
        let arrow = || ArrowError::ComputeError("x".into());
        let errors = [
            Error::SchemaMismatch {
                expected: "{a: Int64}".into(),
                found: "{}".into(),
            },
            Error::ColumnNotWritable {
                format: "CSV",
                column: "c".into(),
                data_type: "List(Int64)".into(),
                reason: "nested",
            },
            Error::Foreign {
                format: "Parquet",
                reason: "a footer too large".into(),
                cause: None,
            },
            Error::Foreign {
                format: "CSV",
                reason: arrow().to_string().into(),
                cause: Some(arrow().into()),
            },
            Error::Undecodable {
                rule: FormatError::Inconsistent { reason: "r" },
                cause: arrow().into(),
            },
            Error::unencodable("the batches cannot be concatenated")(arrow()),
            Error::UnknownExtension {
                extension: "txt".into(),
            },
            Error::UnknownDatasetType { name: "x".into() },
            Error::NotTruenoNative,
            Error::RowsOutOfRange {
                start: 1,
                count: 2,
                num_rows: 2,
            },
            Error::InvalidArgument("x"),
            Error::from(watermark::Error::NotTraceable {
                values: 3,
                marked: 3,
            }),
            Error::ColumnNotWatermarkable {
                index: 0,
                column: "id".into(),
                data_type: "Utf8".into(),
                reason: "text".into(),
            },
            Error::NoSuchColumn {
                index: 9,
                columns: 2,
            },
            Error::DuplicateColumn { index: 1 },
            Error::from(envelope_core::Error::ChecksumMismatch {
                stored: 1,
                computed: 2,
            }),
        ];
        for error in errors {
            let message = error.to_string();
            assert!(message.starts_with(error.signal().name()), "{message}");
        }
    }

    #[test]
    #[cfg(all(feature = "interchange", not(target_arch = "wasm32")))]
    fn a_foreign_readers_error_is_quoted_and_kept_as_the_source() {
        let error = Error::foreign_reader("CSV", ArrowError::ParseError("bad value".into()));
        assert_eq!(
            error.to_string(),
            "InvalidFormat: CSV: Parser error: bad value"
        );
        let source = std::error::Error::source(&error).expect("the reader's error is kept");
        assert!(matches!(
            source.downcast_ref::<Cause>(),
            Some(Cause::Arrow(ArrowError::ParseError(_)))
        ));
    }
}
