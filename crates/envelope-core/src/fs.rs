//! Native file I/O: saves through [`output_file`] (the workspace's one writer of files users name),
//! verified loads, and walking a file of any size without reading it into memory. Compiled only
//! with the `fs` feature on non-wasm32 targets.
//!
//! Nothing is lost: [`write_atomic`] writes a regular file through a temporary file in the
//! destination's directory, flushes and fsyncs it, renames it over the destination, then fsyncs
//! the directory. If anything fails before the rename, the old file is untouched and the
//! temporary file is removed. Devices and FIFOs are written in place, never renamed over; an
//! existing file is refused when the [`Destination`] says [`output_file::Existing::Keep`].

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

pub use output_file::{Access, Destination, Existing, Writer, with_early_sync};

use crate::chunk_index::ChunkIndex;
use crate::envelope::Envelope;
use crate::error::{Error, Result};
use crate::header::{CHECKSUM_LEN, Format};
use crate::layout::{ByteSource, Layout, walk};
use crate::writer::EnvelopeParts;

/// Buffer size for streaming reads.
const IO_BLOCK: usize = 1 << 20;

/// Loads read and hash in blocks of this size: large enough for full-speed `read(2)`, small enough
/// to still be in the core's L2 cache when the CRC runs over them.
const CACHE_BLOCK: usize = 256 << 10;

/// Writes `destination` (a path, or a [`Destination`] with its policy) through `write`, by
/// [`output_file::write`]'s rules: a regular file atomically, a device or FIFO in place.
///
/// # Errors
/// `Io` for any failure of the operating system (`AlreadyExists` for an existing file under
/// [`Existing::Keep`]), or whatever `write` returns; in every error case the previous content of
/// the destination is unchanged.
pub fn write_atomic<T>(
    destination: impl Into<Destination>,
    write: impl FnOnce(&mut Writer) -> Result<T>,
) -> Result<T> {
    output_file::write(destination, write)
}

/// Saves `parts` to `destination` atomically (see [`write_atomic`]).
///
/// # Errors
/// As [`EnvelopeParts::write_to`], plus `Io`.
pub fn save(destination: impl Into<Destination>, parts: &EnvelopeParts<'_>) -> Result<()> {
    parts.header()?;
    write_atomic(destination, |out| parts.write_to(out))
}

/// Loads and verifies a whole file of `format`. The CRC32 is computed block by block as the file
/// is read, while each block is still in cache.
///
/// # Errors
/// `Io` if the file cannot be read (or changes size while being read), then as
/// [`Envelope::parse`].
pub fn load(path: impl AsRef<Path>, format: Format) -> Result<Envelope<Vec<u8>>> {
    let (bytes, crc) = read_with_crc(path.as_ref())?;
    let (layout, index) = walk(&mut PrecomputedCrc { bytes: &bytes, crc }, Some(format))?;
    Ok(Envelope::from_walk(bytes, layout, index))
}

/// Walks and verifies a file of either format without reading it into memory: it reads the
/// header, the framed sections' lengths and the chunk index, and streams every byte through the
/// CRC32. Memory use is independent of the file's size.
///
/// # Errors
/// `Io`, then as [`Envelope::parse`].
pub fn inspect(path: impl AsRef<Path>) -> Result<(Layout, Option<ChunkIndex>)> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    walk(&mut FileSource { file, len }, None)
}

/// Verifies the file at `path` (of `format`, or either format) with one read of its bytes shared
/// with the caller. The structure is walked first, from the header and the frames' lengths alone;
/// then `pass` gets the open file and its [`Layout`] and MUST read every byte before the CRC32
/// trailer, returning their CRC32 with whatever else it computed on that read (a signature's
/// digest, a copy written elsewhere); the file is accepted only if that CRC32 equals the trailer.
/// Until then nothing `pass` read is verified: it may compute, not act.
///
/// # Errors
/// `Io`, then the error [`Envelope::parse`] gives for the same bytes, or whatever `pass` returns.
pub fn walk_with_pass<T>(
    path: impl AsRef<Path>,
    format: Option<Format>,
    pass: impl FnOnce(&File, &Layout) -> Result<(u32, T)>,
) -> Result<(Layout, Option<ChunkIndex>, T)> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    let mut source = FileSource { file, len };
    crate::layout::walk_then_crc(&mut source, format, |source, layout| {
        pass(&source.file, layout)
    })
}

/// Reads the whole file, hashing each block right after it is read, while it is still in the
/// core's cache: the bytes cross main memory once (the read's copy) instead of twice.
fn read_with_crc(path: &Path) -> Result<(Vec<u8>, u32)> {
    let mut file = File::open(path)?;
    let len = Error::fit_in_memory("the file's length", file.metadata()?.len())?;
    let mut bytes = vec![0u8; len];
    let (checked, trailer) = bytes.split_at_mut(len.saturating_sub(CHECKSUM_LEN));
    let mut hasher = crc32fast::Hasher::new();
    for block in checked.chunks_mut(CACHE_BLOCK) {
        file.read_exact(block)?;
        hasher.update(block);
    }
    file.read_exact(trailer)?;
    // A file that grew while being read would leave bytes unread: refuse it.
    if file.read(&mut [0u8; 1])? != 0 {
        return Err(Error::Io(std::io::Error::other(
            "the file changed size while being read",
        )));
    }
    Ok((bytes, hasher.finalize()))
}

/// A fully read file whose CRC32 was computed during the read.
struct PrecomputedCrc<'a> {
    bytes: &'a [u8],
    crc: u32,
}

impl ByteSource for PrecomputedCrc<'_> {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.bytes.read_exact_at(offset, buf)
    }

    fn crc32_of_prefix(&mut self, len: u64) -> Result<u32> {
        if len == self.len().saturating_sub(CHECKSUM_LEN as u64) {
            Ok(self.crc)
        } else {
            self.bytes.crc32_of_prefix(len)
        }
    }
}

/// A file read by offset.
struct FileSource {
    file: File,
    len: u64,
}

impl ByteSource for FileSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.file.seek(SeekFrom::Start(offset))?;
        self.file.read_exact(buf)?;
        Ok(())
    }

    fn crc32_of_prefix(&mut self, len: u64) -> Result<u32> {
        self.file.seek(SeekFrom::Start(0))?;
        let mut hasher = crc32fast::Hasher::new();
        let mut block = vec![0u8; IO_BLOCK];
        let mut remaining = len;
        while remaining > 0 {
            let want =
                usize::try_from(remaining).map_or(IO_BLOCK, |remaining| remaining.min(IO_BLOCK));
            self.file.read_exact(&mut block[..want])?;
            hasher.update(&block[..want]);
            remaining -= want as u64;
        }
        Ok(hasher.finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    use crate::{Compression, Payload};

    fn sample_parts(payload: &[u8]) -> EnvelopeParts<'_> {
        let mut parts = EnvelopeParts::new(Format::Dataset, 1);
        parts.metadata = b"\x81\xa4name\xa4test".as_slice().into();
        parts.payload = Payload::Whole {
            stored: payload.into(),
            uncompressed_size: payload.len() as u64,
        };
        parts.compression = Compression::None;
        parts
    }

    #[test]
    fn save_then_load_round_trips_and_inspect_agrees() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.ald");
        let payload = vec![7u8; 3 * IO_BLOCK + 5];
        save(&path, &sample_parts(&payload)).unwrap();
        let loaded = load(&path, Format::Dataset).unwrap();
        assert_eq!(&*loaded.decode_payload().unwrap(), &payload[..]);
        let (layout, _) = inspect(&path).unwrap();
        assert_eq!(&layout, loaded.layout());
        // Only the destination remains: the temporary file was renamed.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn failed_write_leaves_the_old_file_intact() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.ald");
        std::fs::write(&path, b"old content").unwrap();
        let result: Result<()> = write_atomic(&path, |out| {
            out.write_all(b"partial new content")?;
            Err(Error::InvalidArgument("simulated failure half-way"))
        });
        assert!(result.is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"old content");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            1,
            "temporary file removed"
        );
    }

    #[test]
    fn corrupt_file_on_disk_is_refused_by_load_and_inspect() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.ald");
        save(&path, &sample_parts(b"payload")).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[40] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            load(&path, Format::Dataset),
            Err(Error::ChecksumMismatch { .. })
        ));
        assert!(matches!(
            inspect(&path),
            Err(Error::ChecksumMismatch { .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn new_files_follow_the_umask_and_existing_permissions_are_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.ald");
        save(&path, &sample_parts(b"x")).unwrap();
        let reference = dir.path().join("reference");
        File::create(&reference).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode(),
            std::fs::metadata(&reference).unwrap().permissions().mode(),
            "0666 & !umask, as File::create"
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        save(&path, &sample_parts(b"y")).unwrap();
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
