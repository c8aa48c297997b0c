//! The `.ald` dataset format (spec 000): an Arrow table in the shared envelope, with a dataset
//! card, optional compression, encryption, signature and license, and STREAMING row groups that
//! are read one at a time.
//!
//! Key decisions (the byte format is `docs/ald.md`):
//! - **One Arrow IPC stream, split in two.** The schema section holds the IPC schema message; the
//!   payload holds the dictionary and record batch messages. `schema ‖ payload ‖ end-of-stream`
//!   is a plain Arrow IPC stream any Arrow library reads. `schema`/`inspect` never touch the
//!   payload, and a STREAMING file's chunks, concatenated, are exactly the payload of the same
//!   table written whole.
//! - **Chunks are independent.** Each STREAMING chunk carries its own dictionaries, so one chunk
//!   decodes (and decrypts) without the others: opening a file and reading one chunk costs that
//!   chunk, not the file.
//! - **Checks before content.** Loading follows 000 §5.0: envelope (magic, version, CRC32,
//!   bounds), signature, license, schema, and only then the payload ([`load`] module docs).
//! - **A zero-copy form for deployment.** [`aligned::trueno_parts`] writes a TRUENO_NATIVE file
//!   (000 §10, docs/zerocopy.md §10): the same metadata and schema sections, but each column
//!   stored as one 64-byte-aligned array that `zerocopy_trueno::MappedDataset` borrows from a
//!   memory map. Every loader here reads such files too, rebuilding the record batch from the
//!   arrays (without a copy when it owns the file's buffer).
//! - **One error type, causes kept.** [`Error`] holds the envelope's failures
//!   ([`Error::Envelope`]) and the dataset's own (a schema mismatch, a column an output format
//!   cannot hold, a foreign file its reader refuses), with Arrow's, parquet's and MessagePack's
//!   errors as their [`source`](std::error::Error::source) ([`Cause`]); [`Error::signal`] names
//!   the Andon signal, which every message starts with.
//! - **Leak tracing on the table, not the file.** [`watermark`] marks a buyer's fingerprint in
//!   the numeric columns of an [`ArrowDataset`] (each column one slice across its batches, null
//!   slots untouched), so it survives re-chunking, sampling, shuffling and export; commercial
//!   packaging sets the license's WATERMARKED flag only after the marked table reads back.
//! - **Time is an argument.** License expiry is checked against the `now_unix` the caller passes,
//!   so wasm32 works without a clock.
//!
//! ```
//! use std::sync::Arc;
//! use ald::{ArrowDataset, DatasetType, SaveOptions};
//! use arrow_array::{Int32Array, RecordBatch};
//! use envelope_core::Compression;
//!
//! let batch = RecordBatch::try_from_iter([("n", Arc::new(Int32Array::from(vec![1, 2, 3])) as _)])
//!     .unwrap();
//! let dataset = ArrowDataset::from_batch(batch);
//! let bytes = dataset.to_bytes(&SaveOptions::new(DatasetType::Tabular, Compression::None))?;
//! assert_eq!(ald::load_from_bytes(&bytes)?, dataset);
//! # Ok::<(), ald::Error>(())
//! ```
//!
//! # Features
//! - `format-compression` (default): zstd and LZ4 payloads.
//! - `format-encryption`, `format-signing` (default): decrypting and signature policies on load.
//! - `commercial` (default; implies both): commercial packaging ([`commercial`]).
//! - `fs` (default, native only): [`fs`] save/load, memory-mapped [`StreamingDataset::open`],
//!   the bounded-memory [`fs::StreamingWriter`].
//! - `interchange` (default, native only): CSV, JSONL, Parquet and Arrow IPC files
//!   ([`interchange`]).
//!
//! With `--no-default-features` the crate builds for `wasm32-unknown-unknown` and reads and
//! writes uncompressed files from memory.

pub mod aligned;
mod dataset;
mod dataset_type;
mod error;
mod info;
pub mod ipc;
pub mod load;
mod metadata;
mod one_pass;
mod ranged;
mod streaming;
pub mod watermark;

#[cfg(feature = "commercial")]
pub mod commercial;

#[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
pub mod fs;

#[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
pub mod train;

#[cfg(all(feature = "interchange", not(target_arch = "wasm32")))]
pub mod interchange;

pub use dataset::{
    ArrowDataset, DEFAULT_CHUNK_ROWS, FieldSummary, SaveOptions, check_schema, render_schema,
};
pub use dataset_type::DatasetType;
pub use error::{Cause, Error, Result};
pub use info::DatasetInfo;
pub use load::{LoadOptions, Loaded, Opened, load_from_bytes, load_from_bytes_with, read_schema};
pub use metadata::{
    ColumnDoc, Compliance, DataSource, DatasetCard, Metadata, PAYLOAD_ALIGNMENT, QUERY_PROTOCOL,
};
pub use ranged::{RangedDataset, RangedOpening};
pub use streaming::{ChunkIterator, ChunkReader, StreamingDataset};

/// The Arrow crates of this crate's API, re-exported so callers use the same versions.
pub use {arrow_array, arrow_schema};

/// The license block and its flags, re-exported from `envelope-license`.
pub use envelope_license::{LicenseBlock, LicenseFlags, licensee_hash};
