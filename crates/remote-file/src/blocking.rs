//! The synchronous facades: a [`RemoteDataset`], a [`RemoteModel`] or a [`RemoteFold`] driven by
//! a private current-thread runtime, and a [`RemoteTrainingSet`] by a private multi-thread one
//! (its chunks are fetched ahead while the caller trains), for callers without a runtime of
//! their own (the command-line tools, training loops).

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::dataset::RemoteDataset;
use crate::fold::RemoteFold;
use crate::location::Location;
use crate::model::RemoteModel;
use crate::ranged::{ReadOptions, RemoteEnvelope};
use crate::training::{RemoteRankBatches, RemoteTrainingSet};
use crate::{Error, Result};

/// A [`RemoteDataset`] with blocking calls.
#[derive(Debug)]
pub struct BlockingDataset {
    runtime: tokio::runtime::Runtime,
    dataset: RemoteDataset,
}

impl BlockingDataset {
    /// As [`RemoteDataset::open`], blocking.
    ///
    /// # Errors
    /// `Runtime` if the runtime cannot start; as [`RemoteDataset::open`].
    pub fn open(location: &str, load: &ald::LoadOptions<'_>, options: ReadOptions) -> Result<Self> {
        Self::open_location(Location::parse(location)?, load, options)
    }

    /// As [`RemoteDataset::open_location`], blocking.
    ///
    /// # Errors
    /// As [`BlockingDataset::open`].
    pub fn open_location(
        location: Location,
        load: &ald::LoadOptions<'_>,
        options: ReadOptions,
    ) -> Result<Self> {
        let runtime = runtime()?;
        let dataset = runtime.block_on(RemoteDataset::open_location(location, load, options))?;
        Ok(Self { runtime, dataset })
    }

    /// The dataset (schema, metadata, header, counts, the object's requests).
    #[must_use]
    pub fn dataset(&self) -> &RemoteDataset {
        &self.dataset
    }

    /// The schema.
    #[must_use]
    pub fn schema(&self) -> &SchemaRef {
        self.dataset.schema()
    }

    /// As [`RemoteDataset::chunk`], blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::chunk`].
    pub fn chunk(&self, chunk: usize) -> Result<RecordBatch> {
        self.runtime.block_on(self.dataset.chunk(chunk))
    }

    /// As [`RemoteDataset::chunk_projected`], blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::chunk_projected`].
    pub fn chunk_projected(&self, chunk: usize, projection: &[usize]) -> Result<RecordBatch> {
        self.runtime
            .block_on(self.dataset.chunk_projected(chunk, projection))
    }

    /// As [`RemoteDataset::chunks`], blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::chunks`].
    pub fn chunks(&self, chunks: std::ops::Range<usize>) -> Result<Vec<RecordBatch>> {
        self.runtime.block_on(self.dataset.chunks(chunks))
    }

    /// As [`RemoteDataset::rows`], blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::rows`].
    pub fn rows(&self, start: u64, count: u64) -> Result<RecordBatch> {
        self.runtime.block_on(self.dataset.rows(start, count))
    }
}

/// The private runtime of a blocking facade.
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)
}

/// A [`RemoteModel`] with blocking calls.
#[derive(Debug)]
pub struct BlockingModel {
    runtime: tokio::runtime::Runtime,
    model: RemoteModel,
}

impl BlockingModel {
    /// As [`RemoteModel::open`], blocking.
    ///
    /// # Errors
    /// `Runtime` if the runtime cannot start; as [`RemoteModel::open`].
    pub fn open(location: &str, load: &apr::LoadOptions<'_>, options: ReadOptions) -> Result<Self> {
        Self::open_location(Location::parse(location)?, load, options)
    }

    /// As [`RemoteModel::open_location`], blocking.
    ///
    /// # Errors
    /// As [`BlockingModel::open`].
    pub fn open_location(
        location: Location,
        load: &apr::LoadOptions<'_>,
        options: ReadOptions,
    ) -> Result<Self> {
        let runtime = runtime()?;
        let model = runtime.block_on(RemoteModel::open_location(location, load, options))?;
        Ok(Self { runtime, model })
    }

    /// As [`RemoteModel::with_key`].
    ///
    /// # Errors
    /// As [`RemoteModel::with_key`].
    #[cfg(feature = "format-encryption")]
    pub fn with_key(self, key: envelope_crypto::DecryptionKey<'_>) -> Result<Self> {
        Ok(Self {
            runtime: self.runtime,
            model: self.model.with_key(key)?,
        })
    }

    /// The model (header, metadata, summary, the object's requests).
    #[must_use]
    pub fn model(&self) -> &RemoteModel {
        &self.model
    }

    /// As [`RemoteModel::tensor_at`], blocking.
    ///
    /// # Errors
    /// As [`RemoteModel::tensor_at`].
    pub fn tensor_at(&self, position: usize) -> Result<apr::Tensor> {
        self.runtime.block_on(self.model.tensor_at(position))
    }

    /// As [`RemoteModel::tensor`], blocking.
    ///
    /// # Errors
    /// As [`RemoteModel::tensor`].
    pub fn tensor(&self, name: &str) -> Result<apr::Tensor> {
        self.runtime.block_on(self.model.tensor(name))
    }

    /// As [`RemoteModel::tensors`], blocking.
    ///
    /// # Errors
    /// As [`RemoteModel::tensors`].
    pub fn tensors(&self, positions: std::ops::Range<usize>) -> Result<Vec<apr::Tensor>> {
        self.runtime.block_on(self.model.tensors(positions))
    }
}

/// A [`RemoteEnvelope`] with blocking calls, which becomes a [`BlockingModel`] or a
/// [`BlockingDataset`] on the same runtime and object.
#[derive(Debug)]
pub struct BlockingEnvelope {
    runtime: tokio::runtime::Runtime,
    envelope: RemoteEnvelope,
}

impl BlockingEnvelope {
    /// As [`RemoteEnvelope::open`], blocking.
    ///
    /// # Errors
    /// `Runtime` if the runtime cannot start; as [`RemoteEnvelope::open`].
    pub fn open(
        location: &str,
        format: envelope_core::Format,
        options: ReadOptions,
    ) -> Result<Self> {
        let location = Location::parse(location)?;
        let runtime = runtime()?;
        let envelope =
            runtime.block_on(RemoteEnvelope::open_location(location, format, options))?;
        Ok(Self { runtime, envelope })
    }

    /// The opened envelope (the object, the verified head and tail).
    #[must_use]
    pub fn remote(&self) -> &RemoteEnvelope {
        &self.envelope
    }

    /// As [`RemoteEnvelope::fetch_whole`], blocking.
    ///
    /// # Errors
    /// As [`RemoteEnvelope::fetch_whole`].
    pub fn fetch_whole(&self) -> Result<bytes::Bytes> {
        self.runtime.block_on(self.envelope.fetch_whole())
    }

    /// As [`RemoteModel::from_envelope`], blocking.
    ///
    /// # Errors
    /// As [`RemoteModel::from_envelope`].
    pub fn into_model(
        self,
        load: &apr::LoadOptions<'_>,
        options: ReadOptions,
    ) -> Result<BlockingModel> {
        let model =
            self.runtime
                .block_on(RemoteModel::from_envelope(self.envelope, load, options))?;
        Ok(BlockingModel {
            runtime: self.runtime,
            model,
        })
    }

    /// As [`RemoteDataset::from_envelope`], blocking.
    ///
    /// # Errors
    /// As [`RemoteDataset::from_envelope`].
    pub fn into_dataset(
        self,
        load: &ald::LoadOptions<'_>,
        options: ReadOptions,
    ) -> Result<BlockingDataset> {
        let dataset =
            self.runtime
                .block_on(RemoteDataset::from_envelope(self.envelope, load, options))?;
        Ok(BlockingDataset {
            runtime: self.runtime,
            dataset,
        })
    }
}

/// A [`RemoteFold`] with blocking calls.
#[derive(Debug)]
pub struct BlockingFold {
    runtime: tokio::runtime::Runtime,
    fold: RemoteFold,
}

impl BlockingFold {
    /// As [`RemoteFold::open`], blocking.
    ///
    /// # Errors
    /// `Runtime` if the runtime cannot start; as [`RemoteFold::open`].
    pub fn open(location: &str, limits: fold::ReadOptions, options: ReadOptions) -> Result<Self> {
        Self::open_location(Location::parse(location)?, limits, options)
    }

    /// As [`RemoteFold::open_location`], blocking.
    ///
    /// # Errors
    /// As [`BlockingFold::open`].
    pub fn open_location(
        location: Location,
        limits: fold::ReadOptions,
        options: ReadOptions,
    ) -> Result<Self> {
        let runtime = runtime()?;
        let fold = runtime.block_on(RemoteFold::open_location(location, limits, options))?;
        Ok(Self { runtime, fold })
    }

    /// The container (index, header, the object's requests).
    #[must_use]
    pub fn fold(&self) -> &RemoteFold {
        &self.fold
    }

    /// As [`RemoteFold::chunk`], blocking.
    ///
    /// # Errors
    /// As [`RemoteFold::chunk`].
    pub fn chunk(&self, name: &str) -> Result<Vec<u8>> {
        self.runtime.block_on(self.fold.chunk(name))
    }

    /// As [`RemoteFold::chunks`], blocking.
    ///
    /// # Errors
    /// As [`RemoteFold::chunks`].
    pub fn chunks(&self, names: &[&str]) -> Result<Vec<Vec<u8>>> {
        self.runtime.block_on(self.fold.chunks(names))
    }
}

/// A [`RemoteTrainingSet`] with blocking calls, on a private runtime with worker threads (up to
/// four, one per core): the chunks a rank fetches ahead are fetched and decoded on them while
/// the caller works on the batch it has.
#[derive(Debug)]
pub struct BlockingTrainingSet {
    runtime: tokio::runtime::Runtime,
    set: RemoteTrainingSet,
}

impl BlockingTrainingSet {
    /// As [`RemoteTrainingSet::open`], blocking.
    ///
    /// # Errors
    /// `Runtime` if the runtime cannot start; as [`RemoteTrainingSet::open`].
    pub fn open(location: &str, load: &ald::LoadOptions<'_>, options: ReadOptions) -> Result<Self> {
        Self::open_location(Location::parse(location)?, load, options)
    }

    /// As [`RemoteTrainingSet::open_location`], blocking.
    ///
    /// # Errors
    /// As [`BlockingTrainingSet::open`].
    pub fn open_location(
        prefix: Location,
        load: &ald::LoadOptions<'_>,
        options: ReadOptions,
    ) -> Result<Self> {
        let workers = std::thread::available_parallelism().map_or(1, |cores| cores.get().min(4));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
            .map_err(Error::Runtime)?;
        let set = runtime.block_on(RemoteTrainingSet::open_location(prefix, load, options))?;
        Ok(Self { runtime, set })
    }

    /// The set (schema, paths, units, members and their requests).
    #[must_use]
    pub fn set(&self) -> &RemoteTrainingSet {
        &self.set
    }

    /// The schema every member shares.
    #[must_use]
    pub fn schema(&self) -> &SchemaRef {
        self.set.schema()
    }

    /// The members' keys relative to the prefix, in canonical order.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.set.paths()
    }

    /// Units (chunks) in the set.
    #[must_use]
    pub fn num_units(&self) -> u64 {
        self.set.num_units()
    }

    /// Rows in the set.
    #[must_use]
    pub fn num_rows(&self) -> u64 {
        self.set.num_rows()
    }

    /// The member and chunk of unit `unit`.
    #[must_use]
    pub fn unit(&self, unit: u64) -> Option<(&str, usize)> {
        self.set.unit(unit)
    }

    /// As [`RemoteTrainingSet::sampler_config`].
    ///
    /// # Errors
    /// As [`RemoteTrainingSet::sampler_config`].
    pub fn sampler_config(
        world_size: u64,
        batch_size: u64,
        shuffle_seed: Option<u64>,
        drop_last: bool,
    ) -> Result<lineage::plan::SamplerConfig> {
        RemoteTrainingSet::sampler_config(world_size, batch_size, shuffle_seed, drop_last)
    }

    /// As [`RemoteTrainingSet::rank_batches`], as an iterator.
    ///
    /// # Errors
    /// As [`RemoteTrainingSet::rank_batches`].
    pub fn rank_batches(
        &self,
        sampler: &lineage::plan::Sampler,
        rank: u64,
        epoch: u64,
    ) -> Result<BlockingRankBatches<'_>> {
        let _entered = self.runtime.enter();
        let stream = self.set.rank_batches(sampler, rank, epoch)?;
        Ok(BlockingRankBatches {
            runtime: &self.runtime,
            stream,
        })
    }
}

/// The chunks of one rank in one epoch ([`BlockingTrainingSet::rank_batches`]): an iterator of
/// `(unit, record batch)` in the rank's order.
#[derive(Debug)]
pub struct BlockingRankBatches<'a> {
    runtime: &'a tokio::runtime::Runtime,
    stream: RemoteRankBatches,
}

impl Iterator for BlockingRankBatches<'_> {
    type Item = Result<(u64, RecordBatch)>;

    fn next(&mut self) -> Option<Self::Item> {
        self.runtime
            .block_on(futures::StreamExt::next(&mut self.stream))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        futures::Stream::size_hint(&self.stream)
    }
}
