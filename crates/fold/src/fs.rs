//! Native filesystem helpers (feature `std-fs`): open by path (memory-mapped), one chunk written
//! to a file ([`extract_chunk`], the path of `fold cat -o`), and atomic saves — a temporary file
//! in the destination directory, fsync, rename — as pyfolds does with `{path}.tmp` and
//! `os.replace` (here through the workspace's `output-file`, whose temporary names are random and
//! created exclusively).

use std::io::Write as _;
use std::path::Path;

use output_file::{Destination, Kind, PendingFile};

use crate::error::Result;
use crate::json::Map;
use crate::reader::{FoldReader, ReadOptions};
use crate::source::{MappedSource, Source};
use crate::writer::{FoldWriter, WriteOptions};

/// Opens `path`, memory-mapped: reads the header and the index only; each chunk is verified in
/// place when read. (Use `FoldReader::open(FileSource::open(path)?)` for positional reads instead
/// of a mapping.)
///
/// # Errors
/// I/O, and the errors of [`FoldReader::open`].
pub fn open(path: impl AsRef<Path>) -> Result<FoldReader<MappedSource>> {
    FoldReader::open(MappedSource::open(path)?)
}

/// Opens `path` with explicit limits.
///
/// # Errors
/// As [`open`].
pub fn open_with(path: impl AsRef<Path>, opts: ReadOptions) -> Result<FoldReader<MappedSource>> {
    FoldReader::open_with(MappedSource::open(path)?, opts)
}

/// Writes the raw (decompressed, verified, ECC-corrected) bytes of chunk `name` to `destination`
/// and returns how many were written. Every rule [`FoldReader::read_chunk`] checks holds before
/// the output is visible:
///
/// - A regular file (new or replaced) is written to its temporary file and renamed into place only
///   after every check held; if one fails, the temporary file is removed and the destination is
///   untouched. For a chunk stored uncompressed in a source held in memory (a mapping), the bytes
///   go from the source to the temporary file, and that write and its fsync run on another
///   thread while the chunk is hashed, so the output costs about what the hash costs.
/// - A device, FIFO or standard output ([`Destination::stdout`]) gets no byte before the chunk is
///   verified: bytes written there cannot be taken back.
///
/// # Errors
/// The error `read_chunk` reports for this chunk; the destination's refusal (as
/// [`Destination::check`]); I/O.
pub fn extract_chunk<S: Source>(
    reader: &FoldReader<S>,
    name: &str,
    destination: impl Into<Destination>,
) -> Result<u64> {
    let destination = destination.into();
    if matches!(
        destination.check()?,
        Kind::Missing | Kind::RegularFile { .. }
    ) {
        let written = reader.verify_stored_alongside(name, |bytes| {
            let mut pending = PendingFile::create(destination.clone())?;
            pending.write_all(bytes)?;
            pending.flush()?;
            // Durable while the hash still runs: the fsync of `commit` then finds nothing to
            // write. Nothing is renamed before the verdict.
            pending.writer().get_ref().sync_all()?;
            std::io::Result::Ok((pending, bytes.len() as u64))
        })?;
        if let Some(written) = written {
            let (pending, len) = written?;
            pending.commit()?;
            return Ok(len);
        }
    }
    let bytes = reader.read_chunk_cow(name)?;
    output_file::write(destination, |out| out.write_all(&bytes))?;
    Ok(bytes.len() as u64)
}

/// A container being written to a temporary file that replaces the destination only on
/// [`AtomicFoldFile::commit`]; dropped uncommitted, it leaves the destination untouched and no
/// temporary file. Written through [`output_file::PendingFile`]: the same rules as every other
/// output of the workspace (permissions follow the umask; a device or FIFO destination is written
/// in place, never renamed over; an existing file is kept under `Existing::Keep`).
#[derive(Debug)]
pub struct AtomicFoldFile {
    writer: FoldWriter<PendingFile>,
}

impl AtomicFoldFile {
    /// Starts writing the container that will become `destination` (a path, or an
    /// [`output_file::Destination`] with its policy).
    ///
    /// # Errors
    /// I/O (the destination is refused, or the temporary file cannot be created next to it).
    pub fn create(destination: impl Into<Destination>, opts: WriteOptions) -> Result<Self> {
        let pending = PendingFile::create(destination)?;
        let writer = FoldWriter::new(pending, opts)?;
        Ok(Self { writer })
    }

    /// The writer, to add chunks.
    pub fn writer(&mut self) -> &mut FoldWriter<PendingFile> {
        &mut self.writer
    }

    /// Finishes the container (index, header), fsyncs and renames it into place.
    ///
    /// # Errors
    /// As [`FoldWriter::finish`], and I/O.
    pub fn commit(self, metadata: Map, created_at_unix: f64) -> Result<()> {
        self.writer.finish(metadata, created_at_unix)?.commit()?;
        Ok(())
    }
}

/// Seconds since the Unix epoch as a float, like Python's `time.time()`.
#[must_use]
pub fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
