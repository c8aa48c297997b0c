//! Where a reader gets its bytes, so opening touches only the header and the index and reading a
//! chunk touches only that chunk's range.
//!
//! Files are memory-mapped natively ([`MappedSource`], through the `mapped-file` crate, which
//! documents what happens if another program modifies a mapped file): chunks are verified straight
//! from the page cache, with no copy into a buffer. Sources that hold their bytes in memory say so
//! with [`Source::as_slice`]; the others (positional reads on a file, any `Read + Seek`) are read
//! into a buffer first.

use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Mutex;

/// A random-access byte source. `Sync` so that whole-file verification can read from two threads.
pub trait Source: Sync {
    /// Total length in bytes.
    fn len(&self) -> u64;

    /// True when the source holds no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Fills `buf` from `offset`. Callers have checked `offset + buf.len() <= len()`.
    ///
    /// # Errors
    /// The underlying I/O error; `UnexpectedEof` when the source is shorter than claimed.
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()>;

    /// All the bytes, when the source holds them in memory (a slice, a vector, a memory map): the
    /// reader then hashes chunks in place instead of copying them out first.
    fn as_slice(&self) -> Option<&[u8]> {
        None
    }
}

fn slice_read(bytes: &[u8], offset: u64, buf: &mut [u8]) -> io::Result<()> {
    let start = usize::try_from(offset).map_err(|_| io::ErrorKind::UnexpectedEof)?;
    let src = start
        .checked_add(buf.len())
        .and_then(|end| bytes.get(start..end))
        .ok_or(io::ErrorKind::UnexpectedEof)?;
    buf.copy_from_slice(src);
    Ok(())
}

impl Source for &[u8] {
    fn len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        slice_read(self, offset, buf)
    }
    fn as_slice(&self) -> Option<&[u8]> {
        Some(self)
    }
}

impl Source for Vec<u8> {
    fn len(&self) -> u64 {
        Vec::len(self) as u64
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        slice_read(self, offset, buf)
    }
    fn as_slice(&self) -> Option<&[u8]> {
        Some(self)
    }
}

/// A memory-mapped file (the default for [`crate::fs::open`]).
#[cfg(all(feature = "std-fs", not(target_arch = "wasm32")))]
#[derive(Debug)]
pub struct MappedSource {
    map: mapped_file::MappedFile,
}

#[cfg(all(feature = "std-fs", not(target_arch = "wasm32")))]
impl MappedSource {
    /// Maps `path` read-only.
    ///
    /// # Errors
    /// The open or mmap error.
    pub fn open(path: impl AsRef<std::path::Path>) -> io::Result<Self> {
        Ok(Self {
            map: mapped_file::MappedFile::open(path)?,
        })
    }
}

#[cfg(all(feature = "std-fs", not(target_arch = "wasm32")))]
impl Source for MappedSource {
    fn len(&self) -> u64 {
        self.map.len() as u64
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        slice_read(&self.map, offset, buf)
    }
    fn as_slice(&self) -> Option<&[u8]> {
        Some(&self.map)
    }
}

/// Any `Read + Seek` (a `Cursor`, a wasm host stream), serialized through a mutex.
#[derive(Debug)]
pub struct SeekSource<R> {
    inner: Mutex<R>,
    len: u64,
}

impl<R: Read + Seek> SeekSource<R> {
    /// Wraps `inner`, measuring its length once.
    ///
    /// # Errors
    /// The seek error.
    pub fn new(mut inner: R) -> io::Result<Self> {
        let len = inner.seek(SeekFrom::End(0))?;
        Ok(Self {
            inner: Mutex::new(inner),
            len,
        })
    }

    /// The wrapped reader.
    #[must_use]
    pub fn into_inner(self) -> R {
        self.inner
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl<R: Read + Seek + Send> Source for SeekSource<R> {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let mut r = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        r.seek(SeekFrom::Start(offset))?;
        r.read_exact(buf)
    }
}

/// A file read with positional reads (`pread`), safe to share between threads.
#[cfg(all(feature = "std-fs", not(target_arch = "wasm32")))]
#[derive(Debug)]
pub struct FileSource {
    file: std::fs::File,
    len: u64,
}

#[cfg(all(feature = "std-fs", not(target_arch = "wasm32")))]
impl FileSource {
    /// Wraps an open file, measuring its length once.
    ///
    /// # Errors
    /// The metadata error.
    pub fn new(file: std::fs::File) -> io::Result<Self> {
        let len = file.metadata()?.len();
        Ok(Self { file, len })
    }

    /// Opens `path` read-only.
    ///
    /// # Errors
    /// The open error.
    pub fn open(path: impl AsRef<std::path::Path>) -> io::Result<Self> {
        Self::new(std::fs::File::open(path)?)
    }
}

#[cfg(all(feature = "std-fs", not(target_arch = "wasm32")))]
impl Source for FileSource {
    fn len(&self) -> u64 {
        self.len
    }

    #[cfg(unix)]
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        std::os::unix::fs::FileExt::read_exact_at(&self.file, buf, offset)
    }

    #[cfg(windows)]
    fn read_exact_at(&self, mut offset: u64, mut buf: &mut [u8]) -> io::Result<()> {
        use std::os::windows::fs::FileExt;
        while !buf.is_empty() {
            match self.file.seek_read(buf, offset) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}
