//! Reading `.ald` datasets, `.apr` models and `.fold` containers over object storage (S3, Google Cloud Storage, Azure
//! Blob, HTTP, local files) through `object_store`, with range requests: the first and last bytes
//! of a file to open it, then one request per chunk (a dataset's row group, a model's tensor)
//! read (docs/remote.md).
//!
//! Key decision: this crate does I/O and nothing else. What a file means and whether its bytes
//! are right is decided below it, by the same code a local read runs: `envelope_core`'s
//! `RangedEnvelope` walks the head and tail exactly as `Envelope::parse_lazy` walks a memory map,
//! and `ald`'s `RangedDataset` (`apr`'s `RangedModel`) checks signature, license and schema (model
//! type, metadata, tensor directory) in the local loader's order and each chunk's CRC-32C (or
//! AES-GCM tag) before decoding it. A range that comes back changed is
//! refused and requested again, never used; an object that changes between requests (another
//! ETag, a failed `If-Match`) stops the read with [`Error::ObjectChanged`].
//!
//! Native only, and the one library crate of the workspace with an async runtime (tokio, which
//! `object_store` needs) and a TLS stack (rustls through reqwest): no format crate depends on it
//! (deny.toml, `cargo xtask wasm-gate`). [`BlockingDataset`], [`BlockingModel`] and
//! [`BlockingTrainingSet`] drive it from synchronous code.
//!
//! ```no_run
//! use remote_file::{BlockingDataset, ReadOptions};
//!
//! // AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ... come from the environment.
//! let dataset = BlockingDataset::open(
//!     "s3://bucket/train.ald",
//!     &ald::LoadOptions::default(),
//!     ReadOptions::default(),
//! )?;
//! let first = dataset.rows(0, 10)?;
//! println!("{} rows of {}", first.num_rows(), dataset.dataset().num_rows());
//! # Ok::<(), remote_file::Error>(())
//! ```
//!
//! A sharded `.ald` set under a prefix is read for training by [`RemoteTrainingSet`]
//! ([`BlockingTrainingSet`]): the members, unit numbers and per-rank order of
//! `ald::train::TrainingSet` over a local copy, each rank's chunks fetched a bounded number ahead.
//!
//! ```no_run
//! use remote_file::{BlockingTrainingSet, ReadOptions};
//!
//! let set = BlockingTrainingSet::open(
//!     "s3://bucket/shards/",
//!     &ald::LoadOptions::default(),
//!     ReadOptions::default(),
//! )?;
//! // 8 ranks, batches of 32 units, shuffled with seed 7, the last partial batch dropped.
//! let sampler = BlockingTrainingSet::sampler_config(8, 32, Some(7), true)?.sampler()?;
//! let (rank, epoch) = (0, 0);
//! for item in set.rank_batches(&sampler, rank, epoch)? {
//!     let (unit, batch) = item?;
//!     println!("unit {unit}: {} rows", batch.num_rows());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod blocking;
mod dataset;
mod error;
mod fetch;
mod fold;
mod listing;
mod location;
mod model;
mod ranged;
mod training;

pub use blocking::{
    BlockingDataset, BlockingEnvelope, BlockingFold, BlockingModel, BlockingRankBatches,
    BlockingTrainingSet,
};
pub use dataset::RemoteDataset;
pub use error::{Error, Result};
pub use fetch::{RemoteFile, Retry};
pub use fold::RemoteFold;
pub use listing::{Listed, for_each_object};
pub use location::Location;
pub use model::RemoteModel;
pub use ranged::{ReadOptions, RemoteEnvelope};
pub use training::{RemoteRankBatches, RemoteTrainingSet};
