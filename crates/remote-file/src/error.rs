//! The crate's one error type.

use envelope_core::Signal;

/// Every failure of remote reading. See [`Error::signal`] for the Andon signal of each; every
/// message starts with that signal's name, as the format crates' errors do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The location is not one this crate reads (`s3://`, `gs://`, `az://`, `http(s)://`,
    /// `file://` or a local path), or its store cannot be configured from the environment.
    #[error("Usage: {location}: {reason}")]
    Location {
        /// The location as given.
        location: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The store refused a request for a reason retrying does not change (not found, access
    /// denied, ...).
    #[error("Io: {location}: {source}")]
    Store {
        /// The location read.
        location: String,
        /// The store's error.
        #[source]
        source: object_store::Error,
    },
    /// The object changed between two requests (another ETag or version, a failed `If-Match`,
    /// another size): its ranges would mix two files, so reading stops.
    #[error(
        "ChecksumMismatch: {location} changed while being read (ETag {expected:?}, then {found:?}); open it again"
    )]
    ObjectChanged {
        /// The location read.
        location: String,
        /// The ETag (or size) seen when the file was opened.
        expected: Option<String>,
        /// The one seen later (`None` when the store only said the precondition failed).
        found: Option<String>,
    },
    /// A range kept failing (transient store errors, bodies cut short or changed in transit) for
    /// every attempt of the retry budget.
    #[error("{}: {location}: bytes {start}..{end} failed {attempts} times; last: {last}", last.signal())]
    RetriesExhausted {
        /// The location read.
        location: String,
        /// First byte of the range.
        start: u64,
        /// One past its last byte.
        end: u64,
        /// Attempts made.
        attempts: u32,
        /// The last failure.
        #[source]
        last: Box<Error>,
    },
    /// A response body that ended before the range did (a cut connection) or ran past it.
    #[error("Io: {location}: bytes {start}..{end} came back as {received} bytes")]
    ShortBody {
        /// The location read.
        location: String,
        /// First byte of the range.
        start: u64,
        /// One past its last byte.
        end: u64,
        /// Bytes received.
        received: u64,
    },
    /// Opening needed more than [`crate::ReadOptions::max_head`] bytes before the payload, or
    /// did not settle in the rounds allowed.
    #[error(
        "InvalidFormat: {location}: the sections before the payload need {needed} bytes, more than the {max} allowed"
    )]
    HeadTooLarge {
        /// The location read.
        location: String,
        /// Bytes the open asked for.
        needed: u64,
        /// The bound.
        max: u64,
    },
    /// A prefix read as a training set holds no `.ald` object.
    #[error("Usage: {location}: no .ald object under this prefix")]
    EmptySet {
        /// The prefix as given.
        location: String,
    },
    /// A key under a prefix read as a tree that is not a normalized relative path (lineage's
    /// `RelPath`: no empty, `.` or `..` segment), so the tree has no lineage snapshot either.
    #[error("Usage: {location}: {source}")]
    InvalidKey {
        /// The prefix as given.
        location: String,
        /// Lineage's refusal, naming the key.
        #[source]
        source: lineage::Error,
    },
    /// The runtime of the synchronous facade could not be started.
    #[error("Io: cannot start the I/O runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// A task reading objects in parallel panicked or was cancelled.
    #[error("Io: a reading task failed: {0}")]
    Task(String),
    /// The file itself was refused (integrity, signature, license, schema, decryption).
    #[error(transparent)]
    Dataset(#[from] ald::Error),
    /// The `.fold` file itself was refused (a rule of docs/fold.md §3, named by the error).
    #[error("{}: {_0}", fold_signal(_0))]
    Fold(#[from] fold::Error),
    /// The model file itself was refused (integrity, signature, license, model type, metadata,
    /// decryption, a tensor's data).
    #[error(transparent)]
    Model(#[from] apr::Error),
}

impl From<envelope_core::Error> for Error {
    fn from(error: envelope_core::Error) -> Self {
        Self::Dataset(error.into())
    }
}

impl Error {
    /// The Andon signal of this failure.
    #[must_use]
    pub fn signal(&self) -> Signal {
        match self {
            Self::Location { .. } | Self::EmptySet { .. } | Self::InvalidKey { .. } => {
                Signal::Usage
            }
            Self::Store { .. } | Self::ShortBody { .. } | Self::Runtime(_) | Self::Task(_) => {
                Signal::Io
            }
            // A chunk that never came back intact: the last failure says why (a checksum that
            // never matched is ChecksumMismatch, a connection that kept dropping Io).
            Self::RetriesExhausted { last, .. } => last.signal(),
            Self::ObjectChanged { .. } => Signal::ChecksumMismatch,
            Self::HeadTooLarge { .. } => Signal::InvalidFormat,
            Self::Dataset(error) => error.signal(),
            Self::Model(error) => error.signal(),
            Self::Fold(error) => fold_signal(error),
        }
    }

    /// Whether retrying the same request may succeed: transport failures and bodies cut short
    /// or changed in transit, not a missing object, a refused credential or a changed object.
    pub(crate) fn is_transient(&self) -> bool {
        match self {
            Self::ShortBody { .. } => true,
            Self::Dataset(error) => error.signal() == Signal::ChecksumMismatch,
            Self::Model(error) => error.signal() == Signal::ChecksumMismatch,
            // Bytes that do not match their chunk's checksums (the index's own hashes are not
            // fetched again, so their mismatch is final).
            Self::Fold(error) => matches!(
                error,
                fold::Error::CrcMismatch { .. }
                    | fold::Error::Sha256Mismatch { .. }
                    | fold::Error::EccUncorrectable { .. }
            ),
            Self::Store { source, .. } => matches!(
                source,
                object_store::Error::Generic { .. } | object_store::Error::JoinError { .. }
            ),
            _ => false,
        }
    }
}

/// The Andon signal of a `.fold` refusal (`fold::Error` names the rule, not the signal): a
/// checksum or hash that does not hold is `ChecksumMismatch`, an I/O failure `Io`, a chunk the
/// index does not list `Usage`, any other broken rule `InvalidFormat`.
fn fold_signal(error: &fold::Error) -> Signal {
    match error {
        fold::Error::CrcMismatch { .. }
        | fold::Error::Sha256Mismatch { .. }
        | fold::Error::ChunkHashesMismatch { .. }
        | fold::Error::ManifestHashMismatch { .. }
        | fold::Error::EccUncorrectable { .. } => Signal::ChecksumMismatch,
        fold::Error::Io(_) => Signal::Io,
        fold::Error::ChunkNotFound { .. } => Signal::Usage,
        _ => Signal::InvalidFormat,
    }
}

/// Results of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
