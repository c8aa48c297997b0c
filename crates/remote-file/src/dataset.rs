//! An `.ald` dataset read over object storage: opened from its head and tail
//! (`ald::RangedOpening`), chunks fetched by range and decoded as they arrive.

use std::ops::Range;

use ald::{LoadOptions, RangedDataset, RangedOpening, StreamingDataset};
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use envelope_core::{Flags, Format};

use crate::fetch::RemoteFile;
use crate::location::Location;
use crate::ranged::{InFlight, ReadOptions, RemoteEnvelope};
use crate::{Error, Result};

enum Inner {
    /// A STREAMING file: head and tail held, chunks fetched on demand.
    Ranged(Box<RangedDataset<Vec<u8>>>),
    /// A file only its whole-file CRC32 verifies (or a TRUENO_NATIVE one): fetched whole, read
    /// by the local reader.
    Whole(Box<StreamingDataset<Vec<u8>>>),
}

/// A verified `.ald` file over object storage.
pub struct RemoteDataset {
    file: RemoteFile,
    inner: Inner,
    options: ReadOptions,
    in_flight: InFlight,
}

impl std::fmt::Debug for RemoteDataset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteDataset")
            .field("file", &self.file)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl RemoteDataset {
    /// Opens `location` (a URL or a local path, see [`Location::parse`]) and verifies everything
    /// but the chunks, as the local loader does (`ald::LoadOptions`: signature policy, license,
    /// expected schema, key). A STREAMING file costs two requests (first and last
    /// [`ReadOptions::first_read`] bytes, in parallel), more only when its sections are larger;
    /// under `RequireSignature` the payload is streamed through the signature check as well.
    ///
    /// # Errors
    /// `Location`; what [`RemoteFile`] returns; `HeadTooLarge`; `Dataset` for a file the
    /// loader refuses (integrity, signature, license, schema).
    pub async fn open(
        location: &str,
        load: &LoadOptions<'_>,
        options: ReadOptions,
    ) -> Result<Self> {
        Self::open_location(Location::parse(location)?, load, options).await
    }

    /// As [`RemoteDataset::open`], for a location already parsed (with store options of its
    /// own, [`Location::parse_with`]).
    ///
    /// # Errors
    /// As [`RemoteDataset::open`].
    pub async fn open_location(
        location: Location,
        load: &LoadOptions<'_>,
        options: ReadOptions,
    ) -> Result<Self> {
        let opened = RemoteEnvelope::open_location(location, Format::Dataset, options).await?;
        Self::from_envelope(opened, load, options).await
    }

    /// As [`RemoteDataset::open`], for an envelope already opened as a dataset.
    ///
    /// # Errors
    /// As [`RemoteDataset::open`].
    pub async fn from_envelope(
        opened: RemoteEnvelope,
        load: &LoadOptions<'_>,
        options: ReadOptions,
    ) -> Result<Self> {
        let (file, envelope) = opened.into_parts();
        let size = file.size();
        let streaming = envelope
            .as_ref()
            .is_some_and(|envelope| !envelope.header().flags().contains(Flags::TRUENO_NATIVE));
        let inner = match envelope {
            Some(envelope) if streaming => {
                let mut opening = RangedOpening::begin(envelope, load)?;
                if let Some(range) = opening.signed_payload() {
                    file.stream(range, |piece| Ok(opening.update(piece)?))
                        .await?;
                }
                Inner::Ranged(Box::new(opening.finish()?))
            }
            _ => {
                // The whole file: its CRC32 (or, TRUENO_NATIVE, its arrays' CRC-32C) is checked
                // by the local reader over exactly these bytes.
                let whole = file.range(0..size, |_| Ok(())).await?;
                Inner::Whole(Box::new(StreamingDataset::from_bytes(
                    whole.to_vec(),
                    load,
                )?))
            }
        };
        Ok(Self {
            file,
            inner,
            options,
            in_flight: InFlight::new(options.max_in_flight),
        })
    }

    /// The object read (size, ETag, requests sent).
    #[must_use]
    pub fn file(&self) -> &RemoteFile {
        &self.file
    }

    /// The schema.
    #[must_use]
    pub fn schema(&self) -> &SchemaRef {
        match &self.inner {
            Inner::Ranged(dataset) => dataset.schema(),
            Inner::Whole(dataset) => dataset.schema(),
        }
    }

    /// The metadata (dataset card, column docs, ...).
    #[must_use]
    pub fn metadata(&self) -> &ald::Metadata {
        match &self.inner {
            Inner::Ranged(dataset) => dataset.metadata(),
            Inner::Whole(dataset) => dataset.file().metadata(),
        }
    }

    /// The header's dataset type.
    #[must_use]
    pub fn dataset_type(&self) -> ald::DatasetType {
        match &self.inner {
            Inner::Ranged(dataset) => dataset.dataset_type(),
            Inner::Whole(dataset) => dataset.file().dataset_type(),
        }
    }

    /// The header.
    #[must_use]
    pub fn header(&self) -> &envelope_core::Header {
        match &self.inner {
            Inner::Ranged(dataset) => dataset.envelope().header(),
            Inner::Whole(dataset) => dataset.file().envelope().header(),
        }
    }

    /// The license block, if any.
    #[must_use]
    pub fn license(&self) -> Option<&ald::LicenseBlock> {
        match &self.inner {
            Inner::Ranged(dataset) => dataset.license(),
            Inner::Whole(dataset) => dataset.file().license(),
        }
    }

    /// Total rows.
    #[must_use]
    pub fn num_rows(&self) -> u64 {
        match &self.inner {
            Inner::Ranged(dataset) => dataset.num_rows(),
            Inner::Whole(dataset) => dataset.num_rows(),
        }
    }

    /// Number of chunks (1 for a file read whole).
    #[must_use]
    pub fn num_chunks(&self) -> usize {
        match &self.inner {
            Inner::Ranged(dataset) => dataset.num_chunks(),
            Inner::Whole(dataset) => dataset.num_chunks(),
        }
    }

    /// The chunk index entry of chunk `chunk` (rows, stored and decoded sizes); a file read whole
    /// has one entry covering its payload, as the local reader gives.
    #[must_use]
    pub fn chunk_entry(&self, chunk: usize) -> Option<envelope_core::ChunkEntry> {
        match &self.inner {
            Inner::Ranged(dataset) => dataset.chunk_entry(chunk),
            Inner::Whole(dataset) => dataset.chunk_entry(chunk),
        }
    }

    /// Whether the payload is encrypted.
    #[must_use]
    pub fn is_encrypted(&self) -> bool {
        match &self.inner {
            Inner::Ranged(dataset) => dataset.is_encrypted(),
            Inner::Whole(dataset) => dataset.file().is_encrypted(),
        }
    }

    /// Whether chunks are fetched by range (a STREAMING file), rather than read from the whole
    /// object fetched at open.
    #[must_use]
    pub fn is_ranged(&self) -> bool {
        matches!(self.inner, Inner::Ranged(_))
    }

    /// Chunk `chunk` as one record batch: one range request (more only on retries).
    ///
    /// # Errors
    /// As [`RemoteDataset::chunks`].
    pub async fn chunk(&self, chunk: usize) -> Result<RecordBatch> {
        let mut batches = self.chunks(chunk..chunk + 1).await?;
        batches.pop().ok_or_else(|| {
            Error::from(envelope_core::Error::from(
                envelope_core::FormatError::NoSuchChunk {
                    chunk: chunk as u64,
                    count: self.num_chunks() as u64,
                },
            ))
        })
    }

    /// Chunks `chunks`, in order, fetched in parallel: at most
    /// [`ReadOptions::max_requests`] requests and [`ReadOptions::max_in_flight`] bytes fetched
    /// and not yet decoded at once. Each chunk's bytes are checked (CRC-32C, or AES-GCM) before
    /// they are decoded; a chunk whose bytes do not match is requested again (a body changed in
    /// transit), within the retry budget.
    ///
    /// # Errors
    /// `ObjectChanged`; `RetriesExhausted` (its signal is the last failure's:
    /// `ChecksumMismatch` for a chunk that never matched); `Dataset` for a chunk that does not
    /// decode, `DecryptionFailed`; `Usage` for a chunk the file does not have.
    pub async fn chunks(&self, chunks: Range<usize>) -> Result<Vec<RecordBatch>> {
        self.chunks_within(&self.in_flight, self.options.max_requests, chunks)
            .await
    }

    /// As [`RemoteDataset::chunks`], under the bound `in_flight` (one a caller shares between
    /// several files, as a training set's rank stream does) and at most `max_requests`
    /// requests.
    pub(crate) async fn chunks_within(
        &self,
        in_flight: &InFlight,
        max_requests: usize,
        chunks: Range<usize>,
    ) -> Result<Vec<RecordBatch>> {
        let dataset = match &self.inner {
            Inner::Ranged(dataset) => dataset,
            Inner::Whole(dataset) => {
                return chunks
                    .map(|chunk| dataset.get_chunk(chunk).map_err(Error::from))
                    .collect();
            }
        };
        in_flight
            .fetch_chunks(
                &self.file,
                max_requests,
                chunks,
                |chunk| Ok(dataset.chunk_range(chunk)?),
                |chunk, bytes| Ok(dataset.check_chunk(chunk, bytes)?),
                |chunk, stored| Ok(dataset.decode_chunk(chunk, &stored)?),
            )
            .await
    }

    /// Chunk `chunk` with only the columns of `projection` (indices into the schema, in the
    /// order wanted): fetched and checked whole as by [`RemoteDataset::chunk`] (the CRC-32C or
    /// AES-GCM tag covers the whole chunk), then only those columns decoded (docs/ald.md §6.2).
    ///
    /// # Errors
    /// `Usage` for a projection the schema does not allow; as [`RemoteDataset::chunks`].
    pub async fn chunk_projected(&self, chunk: usize, projection: &[usize]) -> Result<RecordBatch> {
        let dataset = match &self.inner {
            Inner::Ranged(dataset) => dataset,
            Inner::Whole(dataset) => return Ok(dataset.get_chunk_projected(chunk, projection)?),
        };
        let mut batches = self
            .in_flight
            .fetch_chunks(
                &self.file,
                1,
                std::iter::once(chunk),
                |chunk| Ok(dataset.chunk_range(chunk)?),
                |chunk, bytes| Ok(dataset.check_chunk(chunk, bytes)?),
                |chunk, stored| Ok(dataset.decode_chunk_projected(chunk, &stored, projection)?),
            )
            .await?;
        batches.pop().ok_or_else(|| {
            Error::from(envelope_core::Error::from(
                envelope_core::FormatError::NoSuchChunk {
                    chunk: chunk as u64,
                    count: self.num_chunks() as u64,
                },
            ))
        })
    }

    /// Rows `start..start + count`, fetching only the chunks they lie in.
    ///
    /// # Errors
    /// `Usage` if the range goes past the last row; as [`RemoteDataset::chunks`].
    pub async fn rows(&self, start: u64, count: u64) -> Result<RecordBatch> {
        let dataset = match &self.inner {
            Inner::Ranged(dataset) => dataset,
            Inner::Whole(dataset) => return Ok(dataset.get_rows(start, count)?),
        };
        let chunks = dataset.chunks_of_rows(start, count)?;
        let first = chunks.start;
        let batches = self.chunks(chunks).await?;
        let mut pieces = Vec::with_capacity(batches.len());
        let end = start + count;
        for (offset, batch) in batches.iter().enumerate() {
            // `chunks_of_rows` gave chunks of the index: each has an entry.
            let Some(entry) = dataset.chunk_entry(first + offset) else {
                continue;
            };
            let from = start.saturating_sub(entry.first_item);
            let to = end.min(entry.first_item + entry.item_count) - entry.first_item;
            let (from, to) = (to_usize(from)?, to_usize(to)?);
            pieces.push(batch.slice(from, to.saturating_sub(from)));
        }
        arrow_select::concat::concat_batches(self.schema(), &pieces).map_err(|error| {
            Error::Dataset(ald::Error::from(envelope_core::Error::Decoding {
                what: "the rows asked for",
                source: Box::new(error),
            }))
        })
    }
}

fn to_usize(value: u64) -> Result<usize> {
    Ok(envelope_core::Error::fit_in_memory("a row offset", value)?)
}
