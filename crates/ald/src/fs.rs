//! Native file I/O: atomic saves, verified loads, memory-mapped streaming reads, and a
//! bounded-memory writer of STREAMING files. Compiled only with the `fs` feature off wasm32.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use envelope_core::{
    ChunkIndex, EnvelopeParts, Error, FRAME_PREFIX_LEN, Format, HEADER_LEN, Result,
};
use mapped_file::MappedFile;

use crate::dataset::{ArrowDataset, SaveOptions, check_schema};
use crate::ipc;
use crate::load::{LoadOptions, Loaded, Opened};
use crate::streaming::StreamingDataset;

/// Saves `dataset` to `path` atomically (temporary file, fsync, rename).
///
/// # Errors
/// As [`ArrowDataset::to_parts`], plus `Io`.
pub fn save(path: impl AsRef<Path>, dataset: &ArrowDataset, options: &SaveOptions) -> Result<()> {
    let parts = dataset.to_parts(options)?;
    envelope_core::fs::save(path, &parts)
}

/// Loads and verifies the dataset at `path` (checks in the order of [`crate::load`]).
///
/// The bytes cross memory once. An uncompressed, unencrypted file is read into one buffer (its
/// CRC32 computed block by block as it arrives) and its arrays are decoded in place, without a
/// copy: writers align the payload (docs/ald.md §3). Any other file is memory-mapped, checked
/// over the mapping, and decompressed or decrypted from it straight into the arrays' memory.
///
/// # Errors
/// `Io`, then as [`crate::load_from_bytes_with`].
pub fn load(path: impl AsRef<Path>, options: &LoadOptions<'_>) -> Result<Loaded> {
    let path = path.as_ref();
    if !stored_plain(path) {
        let map = MappedFile::open(path)?;
        return crate::load::load_from_bytes_with(&map, options);
    }
    let envelope = envelope_core::fs::load(path, Format::Dataset)?;
    let mut opened = Opened::verify(envelope, options)?;
    let (dataset_type, license) = (opened.dataset_type, opened.license.take());
    let metadata = std::mem::take(&mut opened.metadata);
    #[cfg(feature = "format-signing")]
    let signer = opened.signer;
    Ok(Loaded {
        dataset: opened.into_dataset(options)?,
        dataset_type,
        metadata,
        license,
        #[cfg(feature = "format-signing")]
        signer,
    })
}

/// Whether the header at the start of `path` says the payload is stored as is (uncompressed,
/// unencrypted). Only a routing hint: the chosen path verifies everything itself.
fn stored_plain(path: &Path) -> bool {
    let mut header = [0u8; HEADER_LEN];
    let read = File::open(path).and_then(|mut file| file.read_exact(&mut header));
    read.is_ok()
        && envelope_core::Header::parse(&header).is_ok_and(|header| {
            header.compression() == envelope_core::Compression::None
                && !header.flags().contains(envelope_core::Flags::ENCRYPTED)
        })
}

impl Opened<Vec<u8>> {
    /// As [`Opened::read_dataset`] for an uncompressed, unencrypted payload, decoded in place:
    /// the file's buffer becomes the arrays' buffer.
    fn into_dataset(self, options: &LoadOptions<'_>) -> Result<ArrowDataset> {
        let header = self.envelope.header();
        let plain =
            header.compression() == envelope_core::Compression::None && !self.is_encrypted();
        let Some(payload) = self
            .envelope
            .layout()
            .span(envelope_core::Section::Payload)
            .filter(|_| plain)
        else {
            return self.read_dataset(options);
        };
        let (start, len) = (to_usize(payload.offset)?, to_usize(payload.len)?);
        let num_rows = header.num_rows();
        let schema_section = self.envelope.schema().to_vec();
        let schema = Arc::clone(&self.schema);
        let verified = self.envelope.is_fully_verified();
        let file = arrow_buffer::Buffer::from_vec(self.envelope.into_inner());
        if let Some(arrays) = &self.arrays {
            // TRUENO_NATIVE (000 §10): the payload is aligned arrays, not Arrow IPC; the columns
            // become slices of the file's buffer.
            let payload = crate::aligned::ArrayBytes::Owned(file.slice_with_length(start, len));
            let batch =
                crate::aligned::decode_arrays(arrays, &schema, num_rows, &payload, verified)?;
            return ArrowDataset::new(schema, vec![batch]);
        }
        let batches = ipc::decode_batches(&schema_section, file.slice_with_length(start, len))?;
        crate::load::check_rows(&batches, num_rows)?;
        ArrowDataset::new(schema, batches)
    }
}

/// A shared memory map, the storage of a [`StreamingDataset`] opened from a path.
#[derive(Debug, Clone)]
pub struct SharedMap(Arc<MappedFile>);

impl AsRef<[u8]> for SharedMap {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl StreamingDataset<SharedMap> {
    /// Opens the file at `path` through a memory map: the header, metadata, schema and chunk
    /// index are verified and read; chunk bytes are read only when a chunk is asked for.
    ///
    /// # Errors
    /// `Io`, then as [`Opened::open`].
    pub fn open(path: impl AsRef<Path>, options: &LoadOptions<'_>) -> Result<Self> {
        let map = Arc::new(MappedFile::open(path)?);
        let mut dataset = Self::from_bytes(SharedMap(Arc::clone(&map)), options)?;
        dataset.mapped = Some(map);
        Ok(dataset)
    }
}

impl<B: AsRef<[u8]>> StreamingDataset<B> {
    /// Asks the operating system to read chunk `chunk` ahead of use, without waiting (no effect
    /// for an unknown chunk, for data already in memory, or on systems without `madvise`).
    pub fn prefetch(&self, chunk: usize) {
        let Some(map) = &self.mapped else { return };
        let Some(range) = self.chunk_file_range(chunk) else {
            return;
        };
        if let (Ok(start), Ok(end)) = (usize::try_from(range.start), usize::try_from(range.end)) {
            map.advise_willneed(start..end);
        }
    }
}

/// Writes a STREAMING `.ald` file from batches as they come, holding one chunk in memory at a
/// time: each chunk is encoded and compressed as soon as it is full and spilled to a temporary
/// file beside the destination (the chunk index precedes the payload, so every size must be known
/// before the first payload byte is written). [`StreamingWriter::finish`] assembles the file
/// atomically.
#[derive(Debug)]
pub struct StreamingWriter {
    path: PathBuf,
    schema: SchemaRef,
    options: SaveOptions,
    chunk_rows: usize,
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    spill: tempfile::NamedTempFile,
    /// Per chunk: stored size, encoded size, rows, CRC-32C of the stored bytes.
    sizes: Vec<(u64, u64, u64, u32)>,
    rows: u64,
}

impl StreamingWriter {
    /// Starts a file at `path` for batches of `schema`, with chunks of `options.chunk_rows` rows
    /// (or [`crate::DEFAULT_CHUNK_ROWS`]).
    ///
    /// # Errors
    /// `Io` if the spill file cannot be created; `Usage` for a zero chunk size or a schema too
    /// large for the schema section.
    pub fn create(path: impl AsRef<Path>, schema: SchemaRef, options: SaveOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let chunk_rows = options.chunk_rows.unwrap_or(crate::DEFAULT_CHUNK_ROWS);
        if chunk_rows == 0 {
            return Err(Error::InvalidArgument("chunk_rows must be at least 1"));
        }
        ipc::schema_message(&schema)?;
        let dir = match path.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let spill = tempfile::Builder::new()
            .prefix(".ald-chunks-")
            .tempfile_in(dir)?;
        Ok(Self {
            path,
            schema,
            options,
            chunk_rows,
            pending: Vec::new(),
            pending_rows: 0,
            spill,
            sizes: Vec::new(),
            rows: 0,
        })
    }

    /// Adds `batch`'s rows.
    ///
    /// # Errors
    /// `SchemaMismatch` for a batch of another schema; `Io` writing the spill file.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        check_schema(&self.schema, &batch.schema())?;
        let mut offset = 0;
        while offset < batch.num_rows() {
            let take = (self.chunk_rows - self.pending_rows).min(batch.num_rows() - offset);
            self.pending.push(batch.slice(offset, take));
            self.pending_rows += take;
            offset += take;
            if self.pending_rows == self.chunk_rows {
                self.flush_chunk()?;
            }
        }
        Ok(())
    }

    fn flush_chunk(&mut self) -> Result<()> {
        if self.pending_rows == 0 {
            return Ok(());
        }
        let mut encoded = Vec::new();
        ipc::encode_chunk(&self.schema, &self.pending, &mut encoded)?;
        let stored = envelope_core::compression::compress(self.options.compression, &encoded)?;
        self.spill.as_file_mut().write_all(&stored)?;
        self.sizes.push((
            stored.len() as u64,
            encoded.len() as u64,
            self.pending_rows as u64,
            crc32c::crc32c(&stored),
        ));
        self.rows += self.pending_rows as u64;
        self.pending.clear();
        self.pending_rows = 0;
        Ok(())
    }

    /// Rows written so far.
    #[must_use]
    pub fn rows(&self) -> u64 {
        self.rows + self.pending_rows as u64
    }

    /// Writes the last chunk and assembles the file atomically; returns the row count.
    ///
    /// # Errors
    /// `Io`; `Usage` if a section is too large.
    pub fn finish(self) -> Result<u64> {
        self.assemble(None)
    }

    /// As [`StreamingWriter::finish`], encrypting each chunk as it is copied into the file (one
    /// chunk in memory at a time).
    ///
    /// # Errors
    /// As [`StreamingWriter::finish`].
    pub fn finish_encrypted(self, encryptor: &envelope_crypto::ChunkEncryptor) -> Result<u64> {
        self.assemble(Some(encryptor))
    }

    fn assemble(mut self, encryptor: Option<&envelope_crypto::ChunkEncryptor>) -> Result<u64> {
        self.flush_chunk()?;
        let mut index = ChunkIndex::from_sizes(
            self.sizes
                .iter()
                .map(|(stored, plain, rows, _)| (*stored, *plain, *rows)),
        )?;
        for (chunk, (.., crc)) in self.sizes.iter().enumerate() {
            index.set_stored_crc32c(chunk, *crc)?;
        }
        let mut parts = self.parts()?;
        let index = match encryptor {
            Some(encryptor) => {
                parts.encryption = Some(encryptor.encryption_block().into());
                encryptor.sealed_index(&index)?
            }
            None => index,
        };
        let prefix_len = HEADER_LEN
            + parts.schema.len()
            + FRAME_PREFIX_LEN
            + index.encoded_len()
            + parts
                .encryption
                .as_ref()
                .map_or(0, |block| FRAME_PREFIX_LEN + block.len());
        parts.metadata = self.options.metadata.encode_aligned(prefix_len)?.into();
        let spill = self.spill.as_file_mut();
        spill.seek(SeekFrom::Start(0))?;
        let sizes = &self.sizes;
        envelope_core::fs::write_atomic(&self.path, |out| {
            let mut writer = parts.begin_chunked(index, out)?;
            let sealer = encryptor.map(|encryptor| encryptor.sealer(writer.bytes_before_payload()));
            let mut stored = Vec::new();
            for (number, (size, ..)) in sizes.iter().enumerate() {
                stored.resize(to_usize(*size)?, 0);
                spill.read_exact(&mut stored)?;
                match &sealer {
                    Some(sealer) => {
                        let ordinal = u32::try_from(number)
                            .map_err(|_| Error::InvalidArgument("more than u32::MAX chunks"))?;
                        writer.write_chunk(&sealer.seal(ordinal, &stored)?)?;
                    }
                    None => writer.write_chunk(&stored)?,
                }
            }
            writer.finish()?;
            Ok(())
        })?;
        Ok(self.rows)
    }

    fn parts(&self) -> Result<EnvelopeParts<'static>> {
        let mut parts = EnvelopeParts::new(Format::Dataset, self.options.dataset_type.id());
        parts.compression = self.options.compression;
        parts.num_rows = self.rows;
        parts.metadata = self.options.metadata.encode()?.into();
        parts.schema = ipc::schema_message(&self.schema)?.into();
        Ok(parts)
    }
}

fn to_usize(size: u64) -> Result<usize> {
    usize::try_from(size).map_err(|_| Error::InvalidArgument("a chunk larger than memory"))
}

/// Verifies the file at `path` (CRC32 included, through a memory map) and describes it without
/// decoding the payload.
///
/// # Errors
/// `Io`, then the first failed envelope check, then as [`crate::DatasetInfo::of`].
pub fn inspect(path: impl AsRef<Path>) -> Result<crate::DatasetInfo> {
    let map = MappedFile::open(path)?;
    let envelope = envelope_core::Envelope::parse(&map[..], Format::Dataset)?;
    crate::DatasetInfo::of(&envelope)
}
