//! Native filesystem helpers (feature `std-fs`): open by path (memory-mapped), and atomic
//! saves — a temporary file in the destination directory, fsync, rename — as pyfolds does with
//! `{path}.tmp` and `os.replace`.

use std::io::BufWriter;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::Result;
use crate::json::Map;
use crate::reader::{FoldReader, ReadOptions};
use crate::source::MappedSource;
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

/// A container being written to a temporary file that replaces `path` only on
/// [`AtomicFoldFile::commit`]; dropped uncommitted, it leaves `path` untouched.
#[derive(Debug)]
pub struct AtomicFoldFile {
    writer: FoldWriter<BufWriter<NamedTempFile>>,
    path: PathBuf,
}

impl AtomicFoldFile {
    /// Starts writing the container that will become `path`.
    ///
    /// # Errors
    /// I/O (the temporary file is created next to `path`).
    pub fn create(path: impl AsRef<Path>, opts: WriteOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let tmp = NamedTempFile::new_in(dir)?;
        let writer = FoldWriter::new(BufWriter::with_capacity(1 << 20, tmp), opts)?;
        Ok(Self { writer, path })
    }

    /// The writer, to add chunks.
    pub fn writer(&mut self) -> &mut FoldWriter<BufWriter<NamedTempFile>> {
        &mut self.writer
    }

    /// Finishes the container (index, header), fsyncs and renames it over `path`.
    ///
    /// # Errors
    /// As [`FoldWriter::finish`], and I/O.
    pub fn commit(self, metadata: Map, created_at_unix: f64) -> Result<()> {
        let buf = self.writer.finish(metadata, created_at_unix)?;
        let tmp = buf
            .into_inner()
            .map_err(std::io::IntoInnerError::into_error)?;
        tmp.as_file().sync_all()?;
        tmp.persist(&self.path).map_err(|e| e.error)?;
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
