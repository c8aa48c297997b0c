//! The shared envelope of the `.ald` dataset and `.apr` model formats: the 32-byte header, the
//! section layout, compression, the CRC32 trailer, and the error signals everything above uses.
//!
//! This crate knows the *shape* of a file, not its contents: metadata, schema, encryption,
//! signature and license blocks are byte ranges it can locate, bound-check and hand out, but never
//! interpret. That is what lets one reader `inspect` any file of the family, and it keeps crypto
//! out of the bottom layer (the crypto and signing crates build on these ranges). The byte-level
//! format is specified in `docs/envelope.md`.
//!
//! Key decision: verification happens before anything is handed out. An [`Envelope`] exists only
//! after magic, version, CRC32, every header rule and every section bound have been checked, in
//! that order, so a caller cannot parse a payload the checksum has not covered.
//!
//! ```
//! use envelope_core::{Compression, Envelope, EnvelopeParts, Format, Payload, Signal};
//!
//! let mut parts = EnvelopeParts::new(Format::Dataset, 0x0001);
//! parts.compression = Compression::ZstdL3;
//! parts.payload = Payload::compressed(Compression::ZstdL3, b"rows rows rows rows")?;
//! let mut bytes = parts.to_bytes()?;
//! assert_eq!(&*Envelope::parse(&bytes[..], Format::Dataset)?.decode_payload()?, b"rows rows rows rows");
//!
//! bytes[40] ^= 0x01; // one flipped bit
//! let error = Envelope::parse(&bytes[..], Format::Dataset).unwrap_err();
//! assert_eq!(error.signal(), Signal::ChecksumMismatch);
//! # Ok::<(), envelope_core::Error>(())
//! ```
//!
//! # Features
//! - `format-compression` (default): zstd and LZ4 payloads (libzstd natively, pure-Rust `ruzstd`
//!   on wasm32).
//! - `fs` (default, native only): [`fs::save`], [`fs::load`], [`fs::inspect`], [`fs::write_atomic`].
//!
//! - `std` (default): `std::io` readers and writers ([`compression::DecodedReader`] and
//!   [`compression::PayloadReader`] as `Read`, [`EnvelopeParts::write_to`], [`ChunkedWriter`]),
//!   [`Error::Io`], and hardware CRCs. `format-compression` and `fs` imply it.
//!
//! With `--no-default-features` the crate is `no_std` + `alloc`: it builds for
//! `wasm32-unknown-unknown` and for microcontrollers (`thumbv7em-none-eabihf`), and parses,
//! verifies and writes uncompressed files in memory (`Envelope::parse`, `decode_chunk`,
//! `append_to` on the payload readers, `EnvelopeParts::to_bytes`).

#![cfg_attr(not(feature = "std"), no_std)]

// `Vec`, `Cow`, `String` and `Box` come from `alloc` in every build (with `std` they are the same
// types), so one set of imports serves both.
extern crate alloc;

mod macros;

mod castagnoli;

mod chunk_index;
pub mod codec;
pub mod compression;
mod envelope;
mod error;
mod header;
mod layout;
mod limits;
mod ranged;
mod writer;

#[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
pub mod fs;

pub use chunk_index::{
    CHUNK_ENTRY_LEN, CHUNK_INDEX_PREFIX_LEN, CHUNK_INDEX_SUFFIX_LEN, ChunkEntry, ChunkIndex,
    ChunkSizes,
};
pub use envelope::Envelope;
pub use error::{
    DecompressionFailure, DecryptionFailure, Error, FormatError, Result, Section, Signal,
    SignatureFailure,
};
pub use header::{
    CHECKSUM_LEN, Compression, DeclaredSize, FLAGS_OFFSET, Flags, Format, HEADER_LEN, Header,
    HeaderFields, SIZE_IN_CHUNK_INDEX, Version, feed_with_appended_flags_cleared, identify,
};
pub use layout::{FRAME_PREFIX_LEN, Layout, Span};
pub use limits::{LimitExceeded, LimitKind, Limits};
pub use ranged::{Opening, RangedEnvelope};
#[cfg(feature = "std")]
pub use writer::ChunkedWriter;
pub use writer::{EnvelopeParts, Payload, PlacedLayout};
