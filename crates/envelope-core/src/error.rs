//! The one error type of the envelope family and the Andon signals it maps to.
//!
//! Every failure a loader can meet is a variant of [`Error`] with typed context (offsets, sizes,
//! what was expected and what was found). [`Error::signal`] names the specs' Andon signal
//! (000 §5.0, 001 §5.1) so callers and CLIs can act on the class of failure without matching every
//! variant. `envelope-crypto` and `envelope-sign` report their failures through these variants;
//! `ald` and `apr` have error enums of their own for what only a dataset or a model can meet
//! (`ald::Error`, `apr::Error`: a schema or model type other than the expected one, a column or
//! tensor another format cannot hold, quantized data), each joined to this one by `From` and
//! naming its signals from the same [`Signal`] vocabulary, which stays here.

use alloc::boxed::Box;
use alloc::string::String;

use crate::header::{Compression, Format, Version};
use crate::macros::named_enum;

/// Result alias used throughout the envelope crates.
pub type Result<T, E = Error> = core::result::Result<T, E>;

named_enum! {
    /// The Andon signals of the specifications (000 §5.0, 001 §5.1, 001 §6.2.9), plus two that are
    /// not about the file: `Io` (the operating system failed) and `Usage` (the caller asked for
    /// something this build or this API cannot do).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub enum Signal {
        /// Not a file of the expected format, or its structure is inconsistent.
        InvalidFormat => "InvalidFormat",
        /// The CRC32 trailer does not match the bytes before it.
        ChecksumMismatch => "ChecksumMismatch",
        /// A required signature is missing, made by an untrusted key, or does not verify.
        SignatureInvalid => "SignatureInvalid",
        /// The payload could not be decrypted (wrong key or password, or tampered ciphertext).
        DecryptionFailed => "DecryptionFailed",
        /// The file's format version is not one this reader supports.
        UnsupportedVersion => "UnsupportedVersion",
        /// A dataset's schema differs from the one the caller expects.
        SchemaMismatch => "SchemaMismatch",
        /// A model's type differs from the one the caller expects.
        ModelTypeMismatch => "ModelTypeMismatch",
        /// The license block forbids loading now.
        LicenseExpired => "LicenseExpired",
        /// The quantization type is unknown or not supported here.
        UnsupportedQuantization => "UnsupportedQuantization",
        /// Quantized data is inconsistent (sizes, scales, NaN where forbidden).
        QuantizationCorrupt => "QuantizationCorrupt",
        /// The operating system reported an I/O failure.
        Io => "Io",
        /// The request cannot be served by this build or this call (not a property of the file).
        Usage => "Usage",
    }
    /// The signal's name as the specs spell it (`"ChecksumMismatch"`).
    fn name;
}

named_enum! {
    /// A region of an envelope file, used to say where a failure is.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    #[non_exhaustive]
    pub enum Section {
        /// The fixed 32-byte header.
        Header => "header",
        /// The MessagePack metadata (dataset or model card).
        Metadata => "metadata",
        /// The Arrow IPC schema (`.ald` only).
        Schema => "schema",
        /// The aligned array / tensor index (TRUENO_NATIVE files).
        TensorIndex => "tensor_index",
        /// The chunk index (STREAMING files).
        ChunkIndex => "chunk_index",
        /// The encryption parameter block (ENCRYPTED files).
        Encryption => "encryption",
        /// The payload.
        Payload => "payload",
        /// The signature block (SIGNED files).
        Signature => "signature",
        /// The license block (LICENSED files).
        License => "license",
        /// The CRC32 trailer.
        Checksum => "checksum",
    }
    /// Lower-case name used in messages and JSON output.
    fn name;
}

/// Why a file's structure was refused (the `InvalidFormat` signal).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The first four bytes are not a known magic.
    #[error("bad magic {found:02x?}: not an .ald or .apr file")]
    BadMagic {
        /// The bytes found at offset 0.
        found: [u8; 4],
    },
    /// The magic is valid but names the other format.
    #[error("this is an {found} file, expected {expected}")]
    WrongFormat {
        /// The format the caller asked for.
        expected: Format,
        /// The format the magic names.
        found: Format,
    },
    /// A section runs past the end of the file.
    #[error("{section} at offset {offset} needs {needed} bytes, only {available} remain")]
    Truncated {
        /// The section being read.
        section: Section,
        /// Its start offset in the file.
        offset: u64,
        /// Bytes it needs.
        needed: u64,
        /// Bytes present from `offset` to the end of the readable area.
        available: u64,
    },
    /// Bytes follow the last section before the CRC trailer.
    #[error("{count} unexpected bytes at offset {offset} after the last section")]
    TrailingBytes {
        /// Where the unexpected bytes start.
        offset: u64,
        /// How many there are.
        count: u64,
    },
    /// Flag bits that the format reserves are set.
    #[error("reserved flag bits {bits:#04x} are set")]
    ReservedFlags {
        /// The offending bits.
        bits: u8,
    },
    /// A reserved header byte is not zero.
    #[error("reserved header byte at offset {offset} is {value:#04x}, must be zero")]
    ReservedByte {
        /// Offset within the header.
        offset: u8,
        /// The value found.
        value: u8,
    },
    /// The compression id is not one of 0x00-0x03.
    #[error("unknown compression id {id:#04x}")]
    UnknownCompression {
        /// The id found.
        id: u8,
    },
    /// Two flags, or a flag and a field, cannot go together.
    #[error("inconsistent header: {reason}")]
    Inconsistent {
        /// Which rule was broken (a fixed sentence from the format documentation).
        reason: &'static str,
    },
    /// A size declared in one place disagrees with the size found in another.
    #[error("{what}: declared {declared}, found {found}")]
    SizeMismatch {
        /// Which size.
        what: &'static str,
        /// The value the header or index declares.
        declared: u64,
        /// The value actually found.
        found: u64,
    },
    /// A chunk of the chunk index does not follow its predecessor.
    #[error("chunk {chunk}: {what} is {found}, expected {expected}")]
    ChunkNotContiguous {
        /// Index of the chunk.
        chunk: u64,
        /// Which field (`stored_offset` or `first_item`).
        what: &'static str,
        /// What contiguity requires.
        expected: u64,
        /// What the index says.
        found: u64,
    },
    /// A chunk was requested that the index does not have.
    #[error("chunk {chunk} requested, the file has {count}")]
    NoSuchChunk {
        /// The requested chunk.
        chunk: u64,
        /// Number of chunks.
        count: u64,
    },
    /// One named item (a tensor, a column) is described differently in two places of the file,
    /// or its bytes break a rule of its own; `name` says which.
    #[error("{kind} {name:?}: {reason}")]
    InconsistentItem {
        /// What the item is (`"tensor"`, `"column"`).
        kind: &'static str,
        /// Its name.
        name: String,
        /// Which rule was broken (a fixed sentence from the format documentation).
        reason: &'static str,
    },
    /// A framed block that a higher layer owns (for example the license block) breaks its own
    /// layout rules.
    #[error("{section} is malformed: {reason}")]
    MalformedBlock {
        /// The block.
        section: Section,
        /// Which rule was broken (a fixed sentence from the block's documentation).
        reason: &'static str,
    },
    /// A compressed stream is corrupt or decodes to a size other than the declared one.
    #[error("{compression} data in {section}: {failure}")]
    Decompression {
        /// The section that held it.
        section: Section,
        /// The algorithm.
        compression: Compression,
        /// What went wrong.
        failure: DecompressionFailure,
    },
}

/// What went wrong while decompressing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecompressionFailure {
    /// The compressed bytes are not a valid stream of their algorithm.
    #[error("corrupt stream")]
    Corrupt,
    /// Bytes follow the single frame the format allows.
    #[error("{extra} bytes after the end of the frame")]
    TrailingData {
        /// How many.
        extra: u64,
    },
    /// The stream decodes to more bytes than declared (a decompression bomb is refused here).
    #[error("decodes to more than the declared {declared} bytes")]
    TooLarge {
        /// The declared size.
        declared: u64,
    },
    /// The stream decodes to fewer bytes than declared.
    #[error("decodes to {actual} bytes, declared {declared}")]
    TooSmall {
        /// The declared size.
        declared: u64,
        /// What it decoded to.
        actual: u64,
    },
}

/// Why a signature check refused a file (the `SignatureInvalid` signal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureFailure {
    /// The caller requires a signature and the file has none (or its SIGNED flag was cleared).
    #[error("the file is not signed")]
    Missing,
    /// The signing key is not among the caller's trusted keys.
    #[error("signed by a key that is not trusted")]
    UntrustedKey,
    /// The signature does not verify over the covered bytes.
    #[error("the signature does not verify")]
    Mismatch,
    /// The signature block cannot be parsed.
    #[error("the signature block is malformed")]
    Malformed,
}

/// Why decryption did not happen (the `DecryptionFailed` signal). Deliberately coarse: a wrong key
/// and a tampered ciphertext are indistinguishable (`Failed`), as with RustCrypto's `aead::Error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecryptionFailure {
    /// The payload is encrypted and no key or password was supplied.
    #[error("the payload is encrypted and no key was given")]
    KeyRequired,
    /// The file is encrypted for other recipients than the key given.
    #[error("not encrypted for this key")]
    NotARecipient,
    /// Authentication failed: wrong key or password, or the file was altered.
    #[error("decryption failed")]
    Failed,
    /// The encryption block is malformed or names an unknown cipher suite.
    #[error("the encryption block is malformed")]
    Malformed,
}

/// Every failure of the envelope family. See [`Error::signal`] for the Andon signal of each.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file's structure is invalid.
    #[error("InvalidFormat: {0}")]
    InvalidFormat(#[from] FormatError),
    /// The CRC32 trailer does not match.
    #[error("ChecksumMismatch: CRC32 stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch {
        /// The value in the trailer.
        stored: u32,
        /// The value of the bytes before it.
        computed: u32,
    },
    /// The format version is not supported by this reader.
    #[error(
        "UnsupportedVersion: {format} format version {found}, this reader supports {min} to {max}"
    )]
    UnsupportedVersion {
        /// The file's format.
        format: Format,
        /// The version in the file.
        found: Version,
        /// Oldest supported version.
        min: Version,
        /// Newest supported version.
        max: Version,
    },
    /// A signature check failed.
    #[error("SignatureInvalid: {0}")]
    SignatureInvalid(SignatureFailure),
    /// Decryption failed.
    #[error("DecryptionFailed: {0}")]
    DecryptionFailed(DecryptionFailure),
    /// The license forbids loading at the given time.
    #[error("LicenseExpired: license expired at {expires_at} (unix seconds), now is {now}")]
    LicenseExpired {
        /// Expiry time from the license block.
        expires_at: u64,
        /// The time the caller passed in.
        now: u64,
    },
    /// A section is too large for its header field and has no large-file path.
    #[error("Usage: {section} is {size} bytes, the format allows at most {max}")]
    SectionTooLarge {
        /// Which section.
        section: Section,
        /// Its size.
        size: u64,
        /// The largest the format can describe.
        max: u64,
    },
    /// The file uses a feature this build was compiled without.
    #[error("Usage: this build lacks the `{feature}` feature needed for {what}")]
    FeatureDisabled {
        /// The cargo feature.
        feature: &'static str,
        /// What needed it.
        what: &'static str,
    },
    /// The caller asked for a named item (a tensor, a column, a chunk) the file does not have.
    #[error("Usage: no {kind} named {name:?} in this file")]
    NoSuchItem {
        /// What kind of item (`tensor`, `column`, ...).
        kind: &'static str,
        /// The name asked for.
        name: String,
    },
    /// The caller asked for an item as a type it is not stored as.
    #[error("Usage: {name:?} holds {stored}, not {requested}")]
    WrongType {
        /// The item's name.
        name: String,
        /// Its stored type.
        stored: &'static str,
        /// The type asked for.
        requested: &'static str,
    },
    /// The caller passed arguments that cannot work together.
    #[error("Usage: {0}")]
    InvalidArgument(&'static str),
    /// A size or count the caller's data has does not fit where it must go: this platform's
    /// memory, a field of fixed width, an algorithm's limit. (A section that does not fit its
    /// header field is [`Error::SectionTooLarge`].)
    #[error("Usage: {what} is {size}, at most {max} fits")]
    TooLarge {
        /// What does not fit (`"the file's length"`, `"tensors in the index"`).
        what: &'static str,
        /// Its size or count (`u64::MAX` when the sum that makes it overflows a `u64`).
        size: u64,
        /// The most that fits.
        max: u64,
    },
    /// A number the caller chose is outside the range the format or its readers allow.
    #[error("Usage: {what} is {value}, must be {min} to {max}")]
    NotInRange {
        /// Which number (`"segment size"`, `"recipients"`).
        what: &'static str,
        /// What was passed.
        value: u64,
        /// The smallest allowed.
        min: u64,
        /// The largest allowed.
        max: u64,
    },
    /// A number the caller passed disagrees with the one it must match (a chunk's size against
    /// its chunk index entry).
    #[error("Usage: {what}: expected {expected}, got {found}")]
    ArgumentMismatch {
        /// Which number.
        what: &'static str,
        /// What it must be.
        expected: u64,
        /// What was passed.
        found: u64,
    },
    /// The caller asked for a position past the end (a tensor, a chunk, an element).
    #[error("Usage: {what} {index} is out of range: there are {len}")]
    OutOfRange {
        /// What the position counts (`"tensor"`, `"chunk"`).
        what: &'static str,
        /// The position asked for.
        index: u64,
        /// How many there are.
        len: u64,
    },
    /// Text or bytes the caller passed (a public key, a key file line) do not decode; the
    /// decoder's own error is kept as the source.
    #[error("Usage: {what}: {source}")]
    Decoding {
        /// What was being decoded.
        what: &'static str,
        /// Why the decoder refused it.
        #[source]
        source: Box<dyn core::error::Error + Send + Sync>,
    },
    /// The file asks for more than the reader's [`crate::Limits`] allow (a reader policy, not a
    /// fault of the file: raise the limit to read it).
    #[error("Usage: LimitExceeded: {0}")]
    LimitExceeded(crate::limits::LimitExceeded),
    /// The operating system reported an error (builds with `std` only).
    #[cfg(feature = "std")]
    #[error("Io: {0}")]
    Io(#[from] std::io::Error),
}

impl Error {
    /// The Andon signal this failure raises.
    #[must_use]
    pub const fn signal(&self) -> Signal {
        match self {
            Self::InvalidFormat(_) => Signal::InvalidFormat,
            Self::ChecksumMismatch { .. } => Signal::ChecksumMismatch,
            Self::UnsupportedVersion { .. } => Signal::UnsupportedVersion,
            Self::SignatureInvalid(_) => Signal::SignatureInvalid,
            Self::DecryptionFailed(_) => Signal::DecryptionFailed,
            Self::LicenseExpired { .. } => Signal::LicenseExpired,
            Self::SectionTooLarge { .. }
            | Self::FeatureDisabled { .. }
            | Self::InvalidArgument(_)
            | Self::TooLarge { .. }
            | Self::NotInRange { .. }
            | Self::ArgumentMismatch { .. }
            | Self::OutOfRange { .. }
            | Self::Decoding { .. }
            | Self::NoSuchItem { .. }
            | Self::WrongType { .. }
            | Self::LimitExceeded(_) => Signal::Usage,
            #[cfg(feature = "std")]
            Self::Io(_) => Signal::Io,
        }
    }

    /// The error behind an `io::Error` returned by one of this crate's readers (such as
    /// [`crate::compression::DecodedReader`]), which carry their typed errors inside; any other
    /// I/O error becomes `Io`.
    #[cfg(feature = "std")]
    #[must_use]
    pub fn from_reader(error: std::io::Error) -> Self {
        error.downcast::<Self>().unwrap_or_else(Self::Io)
    }

    /// `value` as a `usize`, or [`Error::TooLarge`] naming `what` when this platform cannot
    /// address that many bytes (a file over 4 GiB on a 32-bit target).
    ///
    /// # Errors
    /// `TooLarge` (`Usage`) as above.
    pub fn fit_in_memory(what: &'static str, value: u64) -> Result<usize> {
        usize::try_from(value).map_err(|_| Self::TooLarge {
            what,
            size: value,
            max: usize::MAX as u64,
        })
    }

    /// Shorthand for an [`FormatError::Truncated`] error.
    pub(crate) fn truncated(section: Section, offset: u64, needed: u64, available: u64) -> Self {
        FormatError::Truncated {
            section,
            offset,
            needed,
            available,
        }
        .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_message_starts_with_its_signal_name() {
        let errors = [
            Error::from(FormatError::BadMagic { found: *b"XXXX" }),
            Error::ChecksumMismatch {
                stored: 1,
                computed: 2,
            },
            Error::SignatureInvalid(SignatureFailure::Missing),
            Error::DecryptionFailed(DecryptionFailure::Failed),
            Error::LicenseExpired {
                expires_at: 1,
                now: 2,
            },
            Error::InvalidArgument("x"),
            Error::TooLarge {
                what: "x",
                size: 2,
                max: 1,
            },
            Error::ArgumentMismatch {
                what: "x",
                expected: 1,
                found: 2,
            },
            Error::OutOfRange {
                what: "x",
                index: 2,
                len: 1,
            },
            Error::Decoding {
                what: "x",
                source: "y".into(),
            },
        ];
        for error in errors {
            let message = error.to_string();
            assert!(message.starts_with(error.signal().name()), "{message}");
        }
    }

    /// The typed variants that replaced `InvalidArgument` where a failure has numbers or a cause
    /// keep its signal (the CLIs' exit codes and `--json` codes depend on it).
    #[test]
    fn typed_argument_errors_keep_the_usage_signal() {
        let errors = [
            Error::TooLarge {
                what: "the file's length",
                size: 5,
                max: 4,
            },
            Error::NotInRange {
                what: "recipients",
                value: 0,
                min: 1,
                max: 1024,
            },
            Error::ArgumentMismatch {
                what: "chunk 0's stored size",
                expected: 1,
                found: 2,
            },
            Error::OutOfRange {
                what: "tensor",
                index: 3,
                len: 3,
            },
        ];
        for error in errors {
            assert_eq!(error.signal(), Signal::Usage, "{error}");
        }
        let message = Error::TooLarge {
            what: "the file's length",
            size: 5,
            max: 4,
        }
        .to_string();
        assert_eq!(message, "Usage: the file's length is 5, at most 4 fits");
    }
}
