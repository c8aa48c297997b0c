//! STREAMING files (000 §7): a chunk index of row groups, read one chunk at a time.
//!
//! [`StreamingDataset`] holds the verified file and its index; [`ChunkReader`] decodes chunks,
//! either directly (plain files) or through a decryptor whose key was derived once (encrypted
//! files, [`StreamingDataset::with_key`]). A chunk costs its own bytes: it is located through the
//! index, decompressed (and decrypted) alone, and decoded after the schema section.
//!
//! A non-STREAMING file opens too: it is one chunk holding every row. So does a TRUENO_NATIVE file
//! (000 §10), STREAMING or not: either way it has one chunk holding every row (a STREAMING one
//! says so in its chunk index, docs/zerocopy.md §10.1), rebuilt from the aligned arrays, each
//! checked by its CRC-32C when the file was opened lazily (by AES-GCM when encrypted).

use arrow_array::RecordBatch;
use arrow_buffer::Buffer;
use arrow_schema::SchemaRef;
use envelope_core::{
    ChunkEntry, DecryptionFailure, Envelope, Error as EnvelopeError, Format, FormatError,
};

use crate::ipc;
use crate::load::{LoadOptions, Opened, check_rows};
use crate::{Error, Result};

/// A verified dataset file read chunk by chunk.
#[derive(Debug, Clone)]
pub struct StreamingDataset<B> {
    opened: Opened<B>,
    /// The memory map behind `B`, for `prefetch` (files opened by path).
    #[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
    pub(crate) mapped: Option<std::sync::Arc<mapped_file::MappedFile>>,
}

impl<B: AsRef<[u8]>> StreamingDataset<B> {
    /// Verifies `bytes` without decoding any chunk. A STREAMING file is opened lazily
    /// (`Envelope::parse_lazy`, docs/envelope.md §4.1): the header, metadata, schema and chunk
    /// index are checked through the index's prefix CRC-32C, and each chunk's own CRC-32C (or
    /// AES-GCM tag) is checked when that chunk is read. A signature policy, when given, reads
    /// every byte.
    ///
    /// # Errors
    /// As [`Opened::open`].
    pub fn from_bytes(bytes: B, options: &LoadOptions<'_>) -> Result<Self> {
        let envelope = Envelope::parse_lazy(bytes, Format::Dataset)?.with_limits(options.limits);
        Ok(Self {
            opened: Opened::verify(envelope, options)?,
            #[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
            mapped: None,
        })
    }

    /// The verified file: header, metadata, schema, license.
    #[must_use]
    pub fn file(&self) -> &Opened<B> {
        &self.opened
    }

    /// The schema.
    #[must_use]
    pub fn schema(&self) -> &SchemaRef {
        self.opened.schema()
    }

    /// Total rows.
    #[must_use]
    pub fn num_rows(&self) -> u64 {
        self.opened.num_rows()
    }

    /// Number of chunks (1 for a non-STREAMING file).
    #[must_use]
    pub fn num_chunks(&self) -> usize {
        self.opened
            .envelope
            .chunk_index()
            .map_or(1, envelope_core::ChunkIndex::len)
    }

    /// The index entry of chunk `chunk` (`first_item`/`item_count` are rows); a non-STREAMING
    /// file has one entry covering the whole payload.
    #[must_use]
    pub fn chunk_entry(&self, chunk: usize) -> Option<ChunkEntry> {
        match self.opened.envelope.chunk_index() {
            Some(index) => index.entries().get(chunk).copied(),
            None => (chunk == 0).then(|| ChunkEntry {
                stored_offset: 0,
                stored_size: self.opened.envelope.payload().len() as u64,
                uncompressed_size: self.opened.envelope.uncompressed_size(),
                first_item: 0,
                item_count: self.num_rows(),
                stored_crc32c: 0,
            }),
        }
    }

    /// The schema of a checked `projection` (the whole schema for `None`).
    fn projected_schema(&self, projection: Option<&[usize]>) -> Result<SchemaRef> {
        match projection {
            None => Ok(std::sync::Arc::clone(self.schema())),
            Some(projection) => projected_schema(self.schema(), projection),
        }
    }

    /// The chunk holding row `row` (`num_chunks()` if there is none).
    fn chunk_of_row(&self, row: u64) -> usize {
        match self.opened.envelope.chunk_index() {
            Some(index) => first_chunk_of(index.entries(), row),
            None => usize::from(row >= self.num_rows()),
        }
    }

    /// A reader of the chunks of an unencrypted file.
    #[must_use]
    pub fn reader(&self) -> ChunkReader<'_, B> {
        ChunkReader {
            dataset: self,
            #[cfg(feature = "format-encryption")]
            decryptor: None,
        }
    }

    /// A reader of the chunks of an encrypted file; the key is derived once, here.
    ///
    /// # Errors
    /// `DecryptionFailed` (or `Usage` if the file is not encrypted).
    #[cfg(feature = "format-encryption")]
    pub fn with_key(&self, key: envelope_crypto::DecryptionKey<'_>) -> Result<ChunkReader<'_, B>> {
        Ok(ChunkReader {
            dataset: self,
            decryptor: Some(envelope_crypto::Decryptor::new(&self.opened.envelope, key)?),
        })
    }

    /// Chunk `chunk` as one record batch (unencrypted files; see [`ChunkReader::get_chunk`]).
    ///
    /// # Errors
    /// As [`ChunkReader::get_chunk`].
    pub fn get_chunk(&self, chunk: usize) -> Result<RecordBatch> {
        self.reader().get_chunk(chunk)
    }

    /// Rows `start..start + count` (unencrypted files; see [`ChunkReader::get_rows`]).
    ///
    /// # Errors
    /// As [`ChunkReader::get_rows`].
    pub fn get_rows(&self, start: u64, count: u64) -> Result<RecordBatch> {
        self.reader().get_rows(start, count)
    }

    /// Chunk `chunk` with only the columns of `projection` (unencrypted files; see
    /// [`ChunkReader::get_chunk_projected`]).
    ///
    /// # Errors
    /// As [`ChunkReader::get_chunk_projected`].
    pub fn get_chunk_projected(&self, chunk: usize, projection: &[usize]) -> Result<RecordBatch> {
        self.reader().get_chunk_projected(chunk, projection)
    }

    /// Rows `start..start + count` with only the columns of `projection` (unencrypted files; see
    /// [`ChunkReader::get_rows_projected`]).
    ///
    /// # Errors
    /// As [`ChunkReader::get_rows_projected`].
    pub fn get_rows_projected(
        &self,
        start: u64,
        count: u64,
        projection: &[usize],
    ) -> Result<RecordBatch> {
        self.reader().get_rows_projected(start, count, projection)
    }

    /// Every chunk in order (unencrypted files).
    pub fn chunks(&self) -> ChunkIterator<'_, B> {
        self.reader().into_chunks()
    }

    /// Prefetching needs a memory map; without the `fs` feature (and on wasm32) the bytes are
    /// already in memory and this does nothing.
    #[cfg(not(all(feature = "fs", not(target_arch = "wasm32"))))]
    pub fn prefetch(&self, chunk: usize) {
        let _ = chunk;
    }

    /// The byte range of chunk `chunk` in the file, for prefetching (`None` for an unknown chunk).
    #[must_use]
    pub fn chunk_file_range(&self, chunk: usize) -> Option<core::ops::Range<u64>> {
        let payload = self
            .opened
            .envelope
            .layout()
            .span(envelope_core::Section::Payload)?;
        let entry = self.chunk_entry(chunk)?;
        let start = payload.offset + entry.stored_offset;
        Some(start..start + entry.stored_size)
    }
}

/// Decodes the chunks of a [`StreamingDataset`].
pub struct ChunkReader<'a, B> {
    dataset: &'a StreamingDataset<B>,
    #[cfg(feature = "format-encryption")]
    decryptor: Option<envelope_crypto::Decryptor<'a, B>>,
}

impl<B> core::fmt::Debug for ChunkReader<'_, B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ChunkReader").finish_non_exhaustive()
    }
}

impl<'a, B: AsRef<[u8]>> ChunkReader<'a, B> {
    fn decoded_chunk(&self, chunk: usize) -> Result<Buffer> {
        let envelope = &self.dataset.opened.envelope;
        let count = self.dataset.num_chunks();
        if chunk >= count {
            return Err(FormatError::NoSuchChunk {
                chunk: chunk as u64,
                count: count as u64,
            }
            .into());
        }
        let streaming = envelope.chunk_index().is_some();
        #[cfg(feature = "format-encryption")]
        if let Some(decryptor) = &self.decryptor {
            let plain = if streaming {
                decryptor.chunk(chunk)?
            } else {
                decryptor.payload()?
            };
            return Ok(Buffer::from_vec(plain));
        }
        if self.dataset.opened.is_encrypted() {
            return Err(EnvelopeError::DecryptionFailed(DecryptionFailure::KeyRequired).into());
        }
        let decoded = if streaming {
            envelope.decode_chunk(chunk)?
        } else {
            envelope.decode_payload()?
        };
        Ok(match decoded {
            std::borrow::Cow::Owned(bytes) => Buffer::from_vec(bytes),
            std::borrow::Cow::Borrowed(bytes) => Buffer::from(bytes),
        })
    }

    /// Chunk `chunk` as one record batch, decoding no other chunk.
    ///
    /// # Errors
    /// `InvalidFormat` for a missing chunk or a corrupt one (including a row count other than
    /// its index entry's); `DecryptionFailed`.
    pub fn get_chunk(&self, chunk: usize) -> Result<RecordBatch> {
        self.chunk_with(chunk, None)
    }

    /// Chunk `chunk` with only the columns of `projection` (indices into the schema, in the
    /// order wanted, each at most once; empty for the row count alone), decoding no other chunk
    /// and none of the other columns' buffers (docs/ald.md §6.2). The chunk's bytes are checked
    /// (CRC-32C or AES-GCM), decrypted and decompressed whole, exactly as by
    /// [`ChunkReader::get_chunk`], before any of them is parsed: those checks cover the chunk,
    /// not a column. Equal to `get_chunk(chunk)?.project(projection)` for every intact chunk.
    ///
    /// # Errors
    /// `Usage` ([`Error::NoSuchColumn`], [`Error::DuplicateColumn`]) for a projection the schema
    /// does not allow, before the chunk is read; otherwise as [`ChunkReader::get_chunk`].
    pub fn get_chunk_projected(&self, chunk: usize, projection: &[usize]) -> Result<RecordBatch> {
        ipc::check_projection(self.dataset.schema(), projection)?;
        self.chunk_with(chunk, Some(projection))
    }

    /// The chunk with all columns (`None`) or those of a checked `projection`.
    fn chunk_with(&self, chunk: usize, projection: Option<&[usize]>) -> Result<RecordBatch> {
        if self.dataset.opened.is_trueno_native() {
            return self.aligned_chunk(chunk, projection);
        }
        let payload = self.decoded_chunk(chunk)?;
        let section = self.dataset.opened.envelope.schema();
        let batches = match projection {
            None => ipc::decode_batches(section, payload)?,
            Some(projection) => ipc::decode_batches_projected(section, payload, projection)?,
        };
        let rows = self
            .dataset
            .chunk_entry(chunk)
            .map_or(0, |entry| entry.item_count);
        check_rows(&batches, rows)?;
        concat(&self.dataset.projected_schema(projection)?, &batches)
    }

    /// The one chunk of a TRUENO_NATIVE file: every row, rebuilt from the aligned arrays (all
    /// of them, or those of a checked `projection`).
    fn aligned_chunk(&self, chunk: usize, projection: Option<&[usize]>) -> Result<RecordBatch> {
        if chunk != 0 {
            return Err(FormatError::NoSuchChunk {
                chunk: chunk as u64,
                count: 1,
            }
            .into());
        }
        let opened = &self.dataset.opened;
        #[cfg(feature = "format-encryption")]
        if let Some(decryptor) = &self.decryptor {
            let index = opened.arrays().ok_or(Error::NotTruenoNative)?;
            let payload = crate::aligned::ArrayBytes::Owned(Buffer::from_vec(decryptor.payload()?));
            return crate::aligned::decode_arrays(
                index,
                opened.schema(),
                opened.num_rows(),
                &payload,
                true,
                projection,
            );
        }
        opened.read_arrays(&LoadOptions::default(), projection)
    }

    /// Rows `start..start + count`, decoding only the chunks they lie in.
    ///
    /// # Errors
    /// `Usage` if the range goes past the last row; as [`ChunkReader::get_chunk`].
    pub fn get_rows(&self, start: u64, count: u64) -> Result<RecordBatch> {
        self.rows_with(start, count, None)
    }

    /// Rows `start..start + count` with only the columns of `projection` (as
    /// [`ChunkReader::get_chunk_projected`]), decoding only the chunks they lie in.
    ///
    /// # Errors
    /// `Usage` for a projection the schema does not allow or a range past the last row; as
    /// [`ChunkReader::get_chunk`].
    pub fn get_rows_projected(
        &self,
        start: u64,
        count: u64,
        projection: &[usize],
    ) -> Result<RecordBatch> {
        ipc::check_projection(self.dataset.schema(), projection)?;
        self.rows_with(start, count, Some(projection))
    }

    fn rows_with(
        &self,
        start: u64,
        count: u64,
        projection: Option<&[usize]>,
    ) -> Result<RecordBatch> {
        let end = start
            .checked_add(count)
            .filter(|end| *end <= self.dataset.num_rows())
            .ok_or(Error::RowsOutOfRange {
                start,
                count,
                num_rows: self.dataset.num_rows(),
            })?;
        let mut pieces = Vec::new();
        // The chunks holding the rows, in order; none when no row is asked for.
        let mut chunk = if count == 0 {
            self.dataset.num_chunks()
        } else {
            self.dataset.chunk_of_row(start)
        };
        while let Some(entry) = self
            .dataset
            .chunk_entry(chunk)
            .filter(|entry| entry.first_item < end)
        {
            if entry.item_count > 0 {
                let from = start.saturating_sub(entry.first_item);
                let to = end.min(entry.first_item + entry.item_count) - entry.first_item;
                let batch = self.first_rows_of_chunk(chunk, to, projection)?;
                pieces.push(batch.slice(to_usize(from)?, to_usize(to - from)?));
            }
            chunk += 1;
        }
        concat(&self.dataset.projected_schema(projection)?, &pieces)
    }

    /// At least the first `rows` rows of chunk `chunk` (all of them where only whole chunks can
    /// be read: encrypted and TRUENO_NATIVE files). An unencrypted chunk is decoded message by
    /// message and only until `rows` rows are there, so memory follows what is asked for, not the
    /// chunk's (or, in a file without chunks, the payload's) declared size.
    fn first_rows_of_chunk(
        &self,
        chunk: usize,
        rows: u64,
        projection: Option<&[usize]>,
    ) -> Result<RecordBatch> {
        let opened = &self.dataset.opened;
        #[cfg(feature = "format-encryption")]
        let decrypting = self.decryptor.is_some();
        #[cfg(not(feature = "format-encryption"))]
        let decrypting = false;
        if decrypting || opened.is_encrypted() || opened.is_trueno_native() {
            return self.chunk_with(chunk, projection);
        }
        let envelope = &opened.envelope;
        let reader = if envelope.chunk_index().is_some() {
            envelope.chunk_reader(chunk)?
        } else {
            envelope.payload_reader()?
        };
        let section = envelope.schema();
        let batches = match projection {
            None => ipc::decode_first_rows(section, reader, rows)?,
            Some(projection) => {
                ipc::decode_first_rows_projected(section, reader, rows, projection)?
            }
        };
        let have: u64 = batches.iter().map(|batch| batch.num_rows() as u64).sum();
        let declared = self.dataset.chunk_entry(chunk).map_or(0, |e| e.item_count);
        if have < rows.min(declared) {
            return Err(FormatError::SizeMismatch {
                what: "rows of a chunk against its index entry",
                declared,
                found: have,
            }
            .into());
        }
        concat(&self.dataset.projected_schema(projection)?, &batches)
    }

    /// Every chunk in order.
    #[must_use]
    pub fn into_chunks(self) -> ChunkIterator<'a, B> {
        ChunkIterator {
            reader: self,
            next: 0,
        }
    }
}

/// The first chunk whose rows end after `row` (`entries.len()` if none): with contiguous item
/// ranges, the chunk holding `row`. Pure arithmetic on u64 index fields, so it holds for files
/// past 4 GiB and 2^32 rows.
pub(crate) fn first_chunk_of(entries: &[ChunkEntry], row: u64) -> usize {
    entries.partition_point(|entry| entry.first_item + entry.item_count <= row)
}

/// `schema` with the columns of `projection`.
///
/// # Errors
/// `Usage` for a projection the schema does not allow.
pub(crate) fn projected_schema(schema: &SchemaRef, projection: &[usize]) -> Result<SchemaRef> {
    ipc::check_projection(schema, projection)?;
    schema
        .project(projection)
        .map(std::sync::Arc::new)
        .map_err(Error::unencodable("the columns cannot be projected"))
}

/// `batches` as one record batch of `schema` (a view of the one batch a chunk holds).
pub(crate) fn concat(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<RecordBatch> {
    arrow_select::concat::concat_batches(schema, batches)
        .map_err(Error::unencodable("the batches cannot be concatenated"))
}

fn to_usize(value: u64) -> Result<usize> {
    Ok(envelope_core::Error::fit_in_memory("a row offset", value)?)
}

/// The chunks of a dataset, decoded one at a time.
#[derive(Debug)]
pub struct ChunkIterator<'a, B> {
    reader: ChunkReader<'a, B>,
    next: usize,
}

impl<B: AsRef<[u8]>> Iterator for ChunkIterator<'_, B> {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.reader.dataset.num_chunks() {
            return None;
        }
        let chunk = self.reader.get_chunk(self.next);
        self.next += 1;
        Some(chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envelope_core::ChunkIndex;

    /// The >4 GiB logic without writing 4 GiB: a synthetic index of 3 GiB chunks of 2^31 rows.
    #[test]
    fn row_lookup_works_past_four_gibibytes_and_two_to_the_32_rows() {
        const GIB: u64 = 1 << 30;
        let index =
            ChunkIndex::from_sizes((0..6).map(|_| (3 * GIB, 3 * GIB + 17, 1u64 << 31))).unwrap();
        let entries = index.entries();
        assert_eq!(index.payload_size(), 18 * GIB);
        assert_eq!(first_chunk_of(entries, 0), 0);
        assert_eq!(first_chunk_of(entries, (1 << 31) - 1), 0);
        assert_eq!(first_chunk_of(entries, 1 << 31), 1);
        assert_eq!(first_chunk_of(entries, 5 * (1 << 31) + 7), 5);
        assert_eq!(first_chunk_of(entries, 6 * (1 << 31)), 6);
        assert_eq!(entries[5].stored_offset, 15 * GIB);
        for row in [0, 1 << 32, (1 << 33) + 3, 6 * (1 << 31) - 1] {
            assert_eq!(Some(first_chunk_of(entries, row)), index.chunk_of_item(row));
        }
    }
}
