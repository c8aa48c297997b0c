//! Native file I/O: atomic saves, verified loads, memory-mapped streaming reads, and a
//! bounded-memory writer of STREAMING files. Compiled only with the `fs` feature off wasm32.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use envelope_core::fs::Destination;
use envelope_core::{ChunkIndex, EnvelopeParts, FRAME_PREFIX_LEN, Format, HEADER_LEN};
use mapped_file::MappedFile;

use crate::dataset::{ArrowDataset, SaveOptions, check_schema};
use crate::ipc;
use crate::load::{LoadOptions, Loaded};
use crate::streaming::StreamingDataset;
use crate::{Error, Result};

/// Saves `dataset` to `destination` (a path, or an [`envelope_core::fs::Destination`] with its
/// overwrite and permission policy) atomically: temporary file, fsync, rename.
///
/// # Errors
/// As [`ArrowDataset::to_parts`], plus `Io`.
pub fn save(
    destination: impl Into<Destination>,
    dataset: &ArrowDataset,
    options: &SaveOptions,
) -> Result<()> {
    let destination = destination.into();
    destination.check()?;
    let parts = dataset.to_parts(options)?;
    Ok(envelope_core::fs::save(destination, &parts)?)
}

/// Loads and verifies the dataset at `path` (checks in the order of [`crate::load`]).
///
/// The file is memory-mapped, verified over the mapping, and each Arrow IPC message is
/// decompressed (or, if stored, copied) from the mapping into a buffer of its own, which becomes
/// its arrays' memory. The loaded table owns its memory: nothing refers to the mapping once `load`
/// returns. An encrypted payload is decrypted whole.
///
/// An unencrypted STREAMING file's chunks are decoded on one thread per core (they decode
/// independently, docs/ald.md §6); any other payload on the calling thread.
///
/// How the bytes are verified: such a file is read the lazy way of docs/envelope.md §4.1,
/// which covers every byte the table is made of with one pass: the header and indexes by their
/// CRC-32C, each chunk by its own CRC-32C just before it is decoded, while it is still in the
/// processor's cache. A file with frames after the payload (signature, license), which the lazy
/// checks do not cover, has its whole-file CRC32 checked first, as does any other file.
///
/// # Errors
/// `Io`, then as [`crate::load_from_bytes_with`].
pub fn load(path: impl AsRef<Path>, options: &LoadOptions<'_>) -> Result<Loaded> {
    let map = map_for(path.as_ref(), options)?;
    if crate::one_pass::is_plain_streaming(&map) {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        return crate::one_pass::load_streaming(&map, options, cores);
    }
    crate::load::load_from_bytes_with(&map, options)
}

/// The bytes of `path` for loading under `options`. With a signature policy they are a snapshot
/// (`mapped_file::Mode::Snapshot`), so that the bytes decoded are the bytes whose signature was
/// checked whatever another program does to the file meanwhile (SECURITY.md "What was verified is
/// what is used"); otherwise a plain mapping.
fn map_for(path: &Path, options: &LoadOptions<'_>) -> Result<MappedFile> {
    #[cfg(feature = "format-signing")]
    if options.signature.is_some() {
        return Ok(MappedFile::open_with(path, mapped_file::Mode::Snapshot)?);
    }
    let _ = options;
    Ok(MappedFile::open(path)?)
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
    /// `Io`, then as [`crate::load::Opened::open`].
    pub fn open(path: impl AsRef<Path>, options: &LoadOptions<'_>) -> Result<Self> {
        let map = Arc::new(map_for(path.as_ref(), options)?);
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
/// atomically. The spill file is anonymous (unlinked as it is created), so no exit path, not even
/// a killed process, leaves it behind.
#[derive(Debug)]
pub struct StreamingWriter {
    destination: Destination,
    schema: SchemaRef,
    options: SaveOptions,
    chunk_rows: usize,
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    spill: std::fs::File,
    /// Per chunk: stored size, encoded size, rows, CRC-32C of the stored bytes.
    sizes: Vec<(u64, u64, u64, u32)>,
    rows: u64,
}

impl StreamingWriter {
    /// Starts a file at `destination` for batches of `schema`, with chunks of
    /// `options.chunk_rows` rows (or [`crate::DEFAULT_CHUNK_ROWS`]). The destination is checked
    /// now, so a refused output fails before any row is read.
    ///
    /// # Errors
    /// `Io` if the destination is refused or the spill file cannot be created; `Usage` for a zero
    /// chunk size or a schema too large for the schema section.
    pub fn create(
        destination: impl Into<Destination>,
        schema: SchemaRef,
        options: SaveOptions,
    ) -> Result<Self> {
        let destination = destination.into();
        destination.check()?;
        let chunk_rows = options.chunk_rows.unwrap_or(crate::DEFAULT_CHUNK_ROWS);
        if chunk_rows == 0 {
            return Err(Error::InvalidArgument("chunk_rows must be at least 1"));
        }
        ipc::schema_message(&schema)?;
        let spill = tempfile::tempfile_in(destination.scratch_dir()?)?;
        Ok(Self {
            destination,
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
        self.spill.write_all(&stored)?;
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
    #[cfg(feature = "format-encryption")]
    pub fn finish_encrypted(self, encryptor: &envelope_crypto::ChunkEncryptor) -> Result<u64> {
        self.assemble(Some(encryptor))
    }

    fn assemble(mut self, encryptor: Option<&dyn ChunkSealing>) -> Result<u64> {
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
        let spill = &mut self.spill;
        spill.seek(SeekFrom::Start(0))?;
        let sizes = &self.sizes;
        output_file::write(self.destination.clone(), |out| -> Result<()> {
            let mut writer = parts.begin_chunked(index, out)?;
            let seal = encryptor.map(|encryptor| encryptor.sealer(writer.bytes_before_payload()));
            let mut stored = Vec::new();
            for (number, (size, ..)) in sizes.iter().enumerate() {
                stored.resize(to_usize(*size)?, 0);
                spill.read_exact(&mut stored)?;
                match &seal {
                    Some(seal) => {
                        let ordinal =
                            u32::try_from(number).map_err(|_| envelope_core::Error::TooLarge {
                                what: "the number of chunks",
                                size: number as u64,
                                max: u64::from(u32::MAX),
                            })?;
                        writer.write_chunk(&seal(ordinal, &stored)?)?;
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

/// What encrypts a STREAMING file's chunks as they are copied into it: `envelope-crypto`'s
/// `ChunkEncryptor` with the `format-encryption` feature. A trait so that the writer itself
/// compiles (and links no cipher) without that feature.
trait ChunkSealing {
    fn encryption_block(&self) -> Vec<u8>;
    fn sealed_index(&self, plain: &ChunkIndex) -> envelope_core::Result<ChunkIndex>;
    fn sealer<'s>(&'s self, bytes_before_payload: &[u8]) -> ChunkSeal<'s>;
}

/// Seals chunk `ordinal`'s stored bytes.
type ChunkSeal<'s> = Box<dyn Fn(u32, &[u8]) -> envelope_core::Result<Vec<u8>> + 's>;

#[cfg(feature = "format-encryption")]
impl ChunkSealing for envelope_crypto::ChunkEncryptor {
    fn encryption_block(&self) -> Vec<u8> {
        envelope_crypto::ChunkEncryptor::encryption_block(self)
    }

    fn sealed_index(&self, plain: &ChunkIndex) -> envelope_core::Result<ChunkIndex> {
        envelope_crypto::ChunkEncryptor::sealed_index(self, plain)
    }

    fn sealer<'s>(&'s self, bytes_before_payload: &[u8]) -> ChunkSeal<'s> {
        let sealer = envelope_crypto::ChunkEncryptor::sealer(self, bytes_before_payload);
        Box::new(move |ordinal, stored| sealer.seal(ordinal, stored))
    }
}

fn to_usize(size: u64) -> Result<usize> {
    Ok(envelope_core::Error::fit_in_memory("a chunk", size)?)
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
