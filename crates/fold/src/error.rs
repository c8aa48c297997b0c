//! The one error type of the crate: every failed rule of 002 §8 / §9 is a variant carrying the
//! chunk, offset and the expected / found values, never a bare string.

use std::fmt;

/// A region of the file, named in truncation and bounds errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Region {
    /// The 28-byte global header (002 §4).
    GlobalHeader,
    /// The JSON index (002 §6).
    Index,
    /// A 32-byte chunk header (002 §5).
    ChunkHeader,
    /// The compressed payload plus its ECC bytes (002 §5).
    ChunkBody,
}

/// A numeric field of a chunk, as named in the index and the chunk header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChunkField {
    /// `flags`: the compression flag.
    Flags,
    /// `uncomp_len`: length after decompression.
    UncompLen,
    /// `comp_len`: length of the stored payload.
    CompLen,
    /// `crc32c`: CRC32C of the stored payload.
    Crc32c,
    /// `ecc_len`: length of the ECC bytes.
    EccLen,
    /// `header_len`: the chunk header's size, 32 in v1.
    HeaderLen,
}

impl fmt::Display for ChunkField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Flags => "flags",
            Self::UncompLen => "uncomp_len",
            Self::CompLen => "comp_len",
            Self::Crc32c => "crc32c",
            Self::EccLen => "ecc_len",
            Self::HeaderLen => "header_len",
        })
    }
}

/// Why the index JSON text could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonErrorKind {
    /// A byte that cannot start or continue a JSON value here.
    UnexpectedByte,
    /// The text ended inside a value.
    UnexpectedEnd,
    /// Bytes after the top-level value.
    TrailingData,
    /// A malformed number literal, or an integer of more than 4300 digits (Python's limit).
    BadNumber,
    /// A malformed escape sequence in a string.
    BadEscape,
    /// A `\uXXXX` escape naming a lone UTF-16 surrogate (Python accepts it; a Rust string cannot
    /// hold it, so it is refused).
    LoneSurrogate,
    /// A raw control character (below U+0020) inside a string (Python's `strict=True`).
    ControlCharacter,
    /// The same key twice in one object (ambiguous; Python keeps the last, this reader refuses).
    DuplicateKey,
    /// More than [`crate::json::MAX_DEPTH`] nested arrays / objects.
    TooDeep,
}

/// What is wrong with a field of the index (002 §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaProblem {
    /// The field is absent.
    Missing,
    /// The field has the wrong JSON type.
    WrongType,
    /// An integer outside the range of its field (negative, or too large).
    OutOfRange,
    /// A string with the wrong shape (ctype not 4 ASCII characters, sha256 not 64 lowercase hex
    /// digits, unknown `ecc_algo`).
    BadValue,
}

impl fmt::Display for SchemaProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Missing => "missing",
            Self::WrongType => "wrong JSON type",
            Self::OutOfRange => "integer out of range",
            Self::BadValue => "malformed value",
        })
    }
}

/// Why a metadata signature did not verify. Deliberately coarse: the file's author learns no more
/// than "the signature does not hold".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SignatureProblem {
    /// `metadata.signature` is absent.
    Missing,
    /// `algorithm` is not `"ed25519"`, or the signature object is malformed.
    Unsupported,
    /// `payload_sha256` does not match the signed fields (metadata tampered with).
    PayloadMismatch,
    /// The Ed25519 signature does not verify under the given key.
    Invalid,
    /// The PEM key could not be parsed as an Ed25519 key.
    BadKey,
}

/// Every failure of the `fold` crate. Variants name the rule of 002 they enforce.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The source failed to read or write.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// 002 §8.1: the magic is not `FOLDv1\0\0`.
    #[error("§8.1 magic: found {found:02x?}, expected \"FOLDv1\\0\\0\"")]
    BadMagic {
        /// The first 8 bytes of the file.
        found: [u8; 8],
    },
    /// 002 §8.1: `header_len` is not 28.
    #[error("§8.1 header_len: found {found}, expected {expected}")]
    BadHeaderLen {
        /// The value in the header.
        found: u32,
        /// The canonical value, [`crate::GLOBAL_HEADER_LEN`].
        expected: u32,
    },
    /// 002 §8.1: `index_off < header_len`.
    #[error("§8.1 index_off: {index_off} is inside the {header_len}-byte header")]
    IndexInsideHeader {
        /// The index offset from the header.
        index_off: u64,
        /// The header length.
        header_len: u64,
    },
    /// 002 §8.1 / §9.1: `index_len > MAX_INDEX_SIZE`.
    #[error("§9.1 index_len: {index_len} bytes exceeds MAX_INDEX_SIZE {max}")]
    IndexTooLarge {
        /// The index length from the header (or of the index being written).
        index_len: u64,
        /// The limit.
        max: u64,
    },
    /// 002 §8.1 / §8.2: a range reaches past the end of the file.
    #[error("§8.1 truncated: {region:?} at offset {offset} needs {len} bytes, file has {file_len}")]
    Truncated {
        /// Which region was being read.
        region: Region,
        /// Chunk name, when the region belongs to a chunk.
        chunk: Option<String>,
        /// Start of the range.
        offset: u64,
        /// Length of the range.
        len: u64,
        /// Total length of the source.
        file_len: u64,
    },
    /// 002 §7.4: the index is not UTF-8.
    #[error("§7 index: invalid UTF-8 at index byte {position}")]
    IndexNotUtf8 {
        /// Byte position inside the index of the first invalid sequence.
        position: u64,
    },
    /// 002 §7.4: the index is not JSON (in Python's dialect, see [`crate::json`]).
    #[error("§7 index: JSON {kind:?} at index byte {position}")]
    IndexJson {
        /// What went wrong.
        kind: JsonErrorKind,
        /// Byte position inside the index.
        position: u64,
        /// The strict JSON reader's refusal (its finer kind).
        #[source]
        source: strict_json::Error,
    },
    /// 002 §6: a field of the index is missing or malformed.
    #[error("§6 index field {field}{}: {problem}", chunk.map(|c| format!(" of chunk #{c}")).unwrap_or_default())]
    IndexSchema {
        /// Position of the chunk entry in `chunks`, for per-chunk fields.
        chunk: Option<usize>,
        /// The JSON key.
        field: &'static str,
        /// What is wrong with it.
        problem: SchemaProblem,
    },
    /// 002 §6: `format` is not `"fold"`.
    #[error("§6 format: found {found:?}, expected \"fold\"")]
    UnsupportedFormat {
        /// The value of `format`.
        found: String,
    },
    /// Two chunks of the index share one name (pyfolds would silently read the first).
    #[error("§6 chunks: name {name:?} appears twice")]
    DuplicateChunk {
        /// The repeated name.
        name: String,
    },
    /// No chunk of that name in the index.
    #[error("chunk {name:?} not found in the index")]
    ChunkNotFound {
        /// The name asked for.
        name: String,
    },
    /// 002 §8.2: `offset < header_len`.
    #[error("§8.2 chunk {chunk:?}: offset {offset} is inside the global header")]
    ChunkInsideHeader {
        /// Chunk name.
        chunk: String,
        /// The chunk's offset.
        offset: u64,
    },
    /// 002 §9.2: `comp_len`, `uncomp_len` or `ecc_len` above the chunk size limit.
    #[error("§9.2 chunk {chunk:?}: {field} {value} exceeds MAX_CHUNK_SIZE {max}")]
    ChunkTooLarge {
        /// Chunk name.
        chunk: String,
        /// Which length.
        field: ChunkField,
        /// Its value.
        value: u64,
        /// The limit in force.
        max: u64,
    },
    /// The chunk header disagrees with the index entry (a header byte was corrupted or the index
    /// was edited; the header is not covered by ECC nor by the hashes).
    #[error(
        "§5/§6 chunk {chunk:?} at offset {offset}: {field} is {header} in the chunk header, {index} in the index"
    )]
    HeaderIndexMismatch {
        /// Chunk name.
        chunk: String,
        /// The chunk's offset.
        offset: u64,
        /// Which field.
        field: ChunkField,
        /// Value in the binary chunk header.
        header: u64,
        /// Value in the JSON index.
        index: u64,
    },
    /// The chunk header's `ctype4` disagrees with the index's `ctype`.
    #[error(
        "§5/§6 chunk {chunk:?} at offset {offset}: ctype is {header:?} in the chunk header, {index:?} in the index"
    )]
    CtypeMismatch {
        /// Chunk name.
        chunk: String,
        /// The chunk's offset.
        offset: u64,
        /// Bytes in the chunk header.
        header: [u8; 4],
        /// Bytes in the index.
        index: [u8; 4],
    },
    /// A compression flag other than 0 (none) or 1 (zstd).
    #[error("§5 chunk {chunk:?}: unknown compression flags {flags}")]
    UnknownFlags {
        /// Chunk name.
        chunk: String,
        /// The flags value.
        flags: u64,
    },
    /// The chunk is zstd-compressed but this build has no zstd feature.
    #[error("chunk {chunk:?} is zstd-compressed and this build has no `zstd` feature")]
    ZstdUnavailable {
        /// Chunk name.
        chunk: String,
    },
    /// `ecc_len` does not match the length the ECC algorithm gives for `comp_len`.
    #[error(
        "§5 chunk {chunk:?}: ecc_len {found}, expected {expected} for {algo} over comp_len bytes"
    )]
    BadEccLen {
        /// Chunk name.
        chunk: String,
        /// The algorithm, as written in the index.
        algo: crate::Ecc,
        /// Length the algorithm gives.
        expected: u64,
        /// Length in the file.
        found: u64,
    },
    /// 002 §7.8: more corrupted bytes in a Reed-Solomon codeword than its parity can correct.
    #[error(
        "§7.8 chunk {chunk:?}: ECC codeword {codeword} (payload offset {offset}) is uncorrectable"
    )]
    EccUncorrectable {
        /// Chunk name.
        chunk: String,
        /// Number of the 255-byte codeword within the chunk.
        codeword: u64,
        /// Absolute file offset of the codeword's first data byte.
        offset: u64,
    },
    /// 002 §8.3: the CRC32C of the stored payload does not match the chunk header.
    #[error(
        "§8.3 crc32c: chunk {chunk:?} at offset {offset}: expected {expected:#010x}, computed {actual:#010x}"
    )]
    CrcMismatch {
        /// Chunk name.
        chunk: String,
        /// The chunk's offset.
        offset: u64,
        /// CRC in the chunk header.
        expected: u32,
        /// CRC of the bytes read (after ECC).
        actual: u32,
    },
    /// 002 §8.3: the SHA-256 of the stored payload does not match the index.
    #[error(
        "§8.3 sha256: chunk {chunk:?} at offset {offset}: expected {}, computed {}",
        hex::encode(expected),
        hex::encode(actual)
    )]
    Sha256Mismatch {
        /// Chunk name.
        chunk: String,
        /// The chunk's offset.
        offset: u64,
        /// Digest in the index.
        expected: [u8; 32],
        /// Digest of the bytes read (after ECC).
        actual: [u8; 32],
    },
    /// 002 §8.3: `metadata.chunk_hashes[name]` disagrees with the chunk's `sha256`.
    #[error(
        "§8.3 chunk_hashes: chunk {chunk:?}: metadata.chunk_hashes disagrees with the index sha256"
    )]
    ChunkHashesMismatch {
        /// Chunk name.
        chunk: String,
    },
    /// `metadata.manifest_hash` is not the SHA-256 of the rest of the metadata.
    #[error(
        "§6 manifest_hash: expected {expected:?}, computed {}",
        hex::encode(actual)
    )]
    ManifestHashMismatch {
        /// The value in the metadata (as JSON text when it is not a string).
        expected: String,
        /// The digest computed.
        actual: [u8; 32],
    },
    /// 002 §7.10: the zstd payload could not be decoded.
    #[error("§7.10 chunk {chunk:?} at offset {offset}: zstd payload does not decode")]
    Decompress {
        /// Chunk name.
        chunk: String,
        /// The chunk's offset.
        offset: u64,
        /// The zstd decoder's error.
        #[source]
        source: std::io::Error,
    },
    /// 002 §8.4: the decompressed length is not `uncomp_len`.
    #[error("§8.4 chunk {chunk:?}: decompressed to {actual}{} bytes, uncomp_len is {expected}", if *at_least { "+" } else { "" })]
    UncompLenMismatch {
        /// Chunk name.
        chunk: String,
        /// `uncomp_len`.
        expected: u64,
        /// Bytes produced before stopping.
        actual: u64,
        /// True when decoding stopped at the bound (the real length is larger).
        at_least: bool,
    },
    /// The metadata signature does not hold (see [`SignatureProblem`]).
    #[error("metadata.signature: {0:?}")]
    Signature(SignatureProblem),
    /// Writer: the ctype is not 4 ASCII characters.
    #[error("ctype {0:?} is not 4 ASCII characters")]
    InvalidCtype(String),
    /// Writer: a chunk of that name was already added.
    #[error("chunk name {0:?} already used")]
    DuplicateName(String),
    /// Two chunks' byte ranges overlap, or a chunk overlaps the index (one side is `"(index)"`):
    /// refused at open (002 §3: chunks are laid out back to back, then the index), so no byte
    /// range is read, hashed or decoded for two entries.
    #[error("§3 layout: {first:?} and {second:?} overlap")]
    OverlappingChunks {
        /// The earlier chunk.
        first: String,
        /// The later chunk.
        second: String,
    },
}

impl Error {
    /// A short, stable name of the rule that failed (`"§8.3 crc32c"`), for tools that report
    /// failures by rule.
    #[must_use]
    pub fn rule(&self) -> &'static str {
        match self {
            Self::Io(_) => "io",
            Self::BadMagic { .. } => "§8.1 magic",
            Self::BadHeaderLen { .. } => "§8.1 header_len",
            Self::IndexInsideHeader { .. } => "§8.1 index_off",
            Self::IndexTooLarge { .. } => "§9.1 MAX_INDEX_SIZE",
            Self::Truncated { .. } => "§8.1 truncated",
            Self::IndexNotUtf8 { .. } | Self::IndexJson { .. } => "§7 index json",
            Self::IndexSchema { .. } | Self::DuplicateChunk { .. } => "§6 index schema",
            Self::UnsupportedFormat { .. } => "§6 format",
            Self::ChunkNotFound { .. } => "chunk not found",
            Self::ChunkInsideHeader { .. } => "§8.2 offset",
            Self::ChunkTooLarge { .. } => "§9.2 MAX_CHUNK_SIZE",
            Self::HeaderIndexMismatch { .. } | Self::CtypeMismatch { .. } => {
                "§5 header/index agreement"
            }
            Self::UnknownFlags { .. } | Self::ZstdUnavailable { .. } => "§5 flags",
            Self::BadEccLen { .. } => "§5 ecc_len",
            Self::EccUncorrectable { .. } => "§7.8 ecc",
            Self::CrcMismatch { .. } => "§8.3 crc32c",
            Self::Sha256Mismatch { .. } => "§8.3 sha256",
            Self::ChunkHashesMismatch { .. } => "§8.3 chunk_hashes",
            Self::ManifestHashMismatch { .. } => "§6 manifest_hash",
            Self::Decompress { .. } => "§7.10 decompress",
            Self::UncompLenMismatch { .. } => "§8.4 uncomp_len",
            Self::Signature(_) => "signature",
            Self::OverlappingChunks { .. } => "§3 layout",
            Self::InvalidCtype(_) | Self::DuplicateName(_) => "writer",
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
