//! Reader and writer of the `.fold` / `.mind` chunked container (spec 002), byte-compatible with
//! its reference implementation, pyfolds 1.0.2.
//!
//! A file is a 28-byte big-endian global header, a sequence of chunks (32-byte header, payload —
//! raw or zstd — and optional Reed-Solomon bytes), and a JSON index at the end that the header
//! points to. Every chunk carries CRC32C and SHA-256 of its stored bytes; the index metadata
//! carries `chunk_hashes` and a `manifest_hash`.
//!
//! **Key design decision: positional reads of untrusted bytes, every length checked against the
//! bytes present before anything is allocated.** Opening reads the header and the index only
//! ([`FoldReader::open`]); reading a chunk touches only that chunk's range, through any
//! [`Source`] (a byte slice, a `Read + Seek`, or a file read with `pread`). The read order is the
//! spec's safety order — ECC, then integrity, then decompression bounded by `uncomp_len` — and each
//! failed rule of 002 §8 / §9 is its own [`Error`] variant naming the chunk and offset.
//!
//! JSON is handled by a small parser / serializer in Python's dialect ([`json`]) because the
//! index bytes and `manifest_hash` are defined by what CPython's `json` module writes.
//!
//! Features: `zstd` (libzstd natively, `ruzstd` on wasm32), `std-fs` (open by path, atomic save)
//! and `parallel` (two-thread verification); without default features the crate builds for
//! `wasm32-unknown-unknown` with no C, filesystem, threads or OS randomness.
//!
//! ```
//! use fold::{Compression, Ecc, FoldReader, FoldWriter, WriteOptions};
//! let opts = WriteOptions::new(Compression::None, Ecc::Rs(16));
//! let mut w = FoldWriter::new(std::io::Cursor::new(Vec::new()), opts)?;
//! w.add_chunk("weights", "TSAV", &[7_u8; 100])?;
//! let mut bytes = w.finish(Vec::new(), 1_700_000_000.0)?.into_inner();
//! bytes[28 + 32 + 5] ^= 0xFF; // corrupt one stored byte
//! let r = FoldReader::open(bytes)?;
//! assert_eq!(r.read_chunk("weights")?, vec![7_u8; 100]); // ECC repaired it
//! # Ok::<(), fold::Error>(())
//! ```
#![forbid(unsafe_code)]

mod compress;
pub mod ecc;
mod error;
mod format;
#[cfg(all(feature = "std-fs", not(target_arch = "wasm32")))]
pub mod fs;
mod index;
pub mod json;
mod ranged;
mod reader;
pub mod rs;
#[cfg(feature = "signature")]
pub mod signature;
mod source;
mod writer;

pub use ecc::Ecc;
pub use error::{
    ChunkField, Error, JsonErrorKind, Region, Result, SchemaProblem, SignatureProblem,
};
pub use format::{
    CHUNK_HEADER_LEN, ChunkHeader, Compression, DEFAULT_ZSTD_LEVEL, FLAG_COMP_NONE, FLAG_COMP_ZSTD,
    FORMAT_NAME, FORMAT_VERSION, GLOBAL_HEADER_LEN, GlobalHeader, MAGIC, MAX_CHUNK_SIZE,
    MAX_INDEX_SIZE, SUPPORTED_VERSIONS,
};
pub use index::{ChunkEntry, Index, manifest_hash, parse_index, parse_sha256_hex};
pub use ranged::{RangedSource, index_range};
pub use reader::{ChunkReport, FoldReader, ReadOptions, StoredChunk, VerifyReport};
#[cfg(all(feature = "std-fs", not(target_arch = "wasm32")))]
pub use source::{FileSource, MappedSource};
pub use source::{SeekSource, Source};
pub use writer::{FoldWriter, WriteOptions};
