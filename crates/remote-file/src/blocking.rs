//! The synchronous facade: a [`RemoteDataset`] driven by a private current-thread runtime, for
//! callers without one of their own (the command-line tools).

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;

use crate::dataset::{ReadOptions, RemoteDataset};
use crate::location::Location;
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
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Error::Runtime)?;
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
