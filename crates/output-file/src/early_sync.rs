//! Writing a large output while the disk already stores it: [`with_early_sync`] hands the
//! caller a writer that, every so many bytes, asks a helper thread to flush what has been
//! written so far to disk (`fdatasync` of a second handle on the same file). The commit's fsync
//! then finds little left to wait for: the disk's write-back overlaps the rest of the writing,
//! instead of starting after it. [`PositionalWriter`] does the same for a file written at
//! offsets, from several threads at once.

use std::fs::File;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

use crate::Writer;

/// The writer [`with_early_sync`] hands out: `out`, written in pieces of at most `every`
/// bytes, with a flush to disk requested after each `every` bytes.
pub struct EarlySyncWriter<'w> {
    out: &'w mut Writer,
    syncer: Syncer,
    unsynced: usize,
    every: usize,
}

impl core::fmt::Debug for EarlySyncWriter<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("EarlySyncWriter")
            .field("every", &self.every)
            .field("unsynced", &self.unsynced)
            .finish_non_exhaustive()
    }
}

impl Write for EarlySyncWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // A piece at most `every` long, so that a single large write still kicks the flushes
        // along the way (the buffered writer passes a piece larger than its buffer straight
        // through, without a copy).
        let written = self.out.write(&buf[..buf.len().min(self.every)])?;
        self.unsynced += written;
        if self.unsynced >= self.every {
            self.unsynced = 0;
            self.out.flush()?;
            self.syncer.request();
        }
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Runs `body` with a writer over `out` that requests a flush to disk of what has been written
/// every `every` bytes (at least 1 MiB), on a helper thread that lives as long as `body`.
///
/// The flushes are requests: their errors are ignored (a device or FIFO cannot sync, and any
/// write error is reported again by the commit's fsync, which is what makes the file durable).
/// The bytes written and their order are exactly those of writing to `out` directly.
///
/// # Errors
/// Whatever `body` returns.
pub fn with_early_sync<T, E>(
    out: &mut Writer,
    every: usize,
    body: impl FnOnce(&mut EarlySyncWriter<'_>) -> Result<T, E>,
) -> Result<T, E> {
    let syncer = Syncer::start(out.get_ref());
    let mut writer = EarlySyncWriter {
        out,
        syncer,
        unsynced: 0,
        every: every.max(1 << 20),
    };
    // The writer (and its syncer) is dropped when `body` returns, which ends the helper.
    body(&mut writer)
}

/// The helper thread of [`with_early_sync`] and [`PositionalWriter`]: `fdatasync`s a second
/// handle on the file each time it is asked; dropping it ends the thread after the flush it may
/// be doing.
struct Syncer {
    /// Wakes the thread (`None` when the file could not be cloned or the thread not started:
    /// no early flush).
    kick: Option<mpsc::SyncSender<()>>,
    helper: Option<std::thread::JoinHandle<()>>,
}

impl Syncer {
    fn start(file: &File) -> Self {
        let Ok(syncing) = file.try_clone() else {
            return Self {
                kick: None,
                helper: None,
            };
        };
        let (kick, kicked) = mpsc::sync_channel::<()>(1);
        let helper = std::thread::Builder::new()
            .name("early-sync".into())
            .spawn(move || {
                for () in kicked {
                    if syncing.sync_data().is_err() {
                        break;
                    }
                }
            })
            .ok();
        Self {
            kick: helper.is_some().then_some(kick),
            helper,
        }
    }

    /// Asks for a flush (none is queued if one is under way already: the next request will do).
    fn request(&self) {
        if let Some(kick) = &self.kick {
            let _ = kick.try_send(());
        }
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop.
        self.kick = None;
        if let Some(helper) = self.helper.take() {
            let _ = helper.join();
        }
    }
}

/// A file written at chosen offsets, from any number of threads at once (it is `Sync`), that
/// asks a helper thread to flush it to disk (`fdatasync`) each time another `every` bytes have
/// been handed to it, as [`with_early_sync`] does for a writer: the disk's write-back overlaps
/// the writing. Made by [`crate::PendingFile::positional`]; dropping it ends the helper.
///
/// The flushes are requests, their errors ignored: the commit's fsync is what makes the file
/// durable, and reports any write error again.
pub struct PositionalWriter {
    /// A second handle on the file, written with `pwrite` (no shared cursor).
    file: File,
    /// Bytes handed to [`PositionalWriter::write_all_at`] so far.
    written: AtomicU64,
    every: u64,
    syncer: Syncer,
}

impl core::fmt::Debug for PositionalWriter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PositionalWriter")
            .field("every", &self.every)
            .field("written", &self.written)
            .finish_non_exhaustive()
    }
}

impl PositionalWriter {
    /// Writes to `file` (through a second handle on it), requesting a flush to disk every
    /// `every` bytes (at least 1 MiB).
    ///
    /// # Errors
    /// I/O, if the handle cannot be duplicated.
    pub fn new(file: &File, every: usize) -> io::Result<Self> {
        Ok(Self {
            file: file.try_clone()?,
            written: AtomicU64::new(0),
            every: every.max(1 << 20) as u64,
            syncer: Syncer::start(file),
        })
    }

    /// Writes all of `bytes` at `offset` (the file grows as needed; the bytes between its end
    /// and `offset` read as zeros until written).
    ///
    /// # Errors
    /// I/O.
    pub fn write_all_at(&self, bytes: &[u8], offset: u64) -> io::Result<()> {
        write_all_at(&self.file, bytes, offset)?;
        let len = bytes.len() as u64;
        let before = self.written.fetch_add(len, Ordering::Relaxed);
        if before / self.every != (before + len) / self.every {
            self.syncer.request();
        }
        Ok(())
    }

    /// Bytes written so far.
    #[must_use]
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }
}

#[cfg(unix)]
fn write_all_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
}

#[cfg(windows)]
fn write_all_at(file: &File, mut bytes: &[u8], mut offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt as _;
    while !bytes.is_empty() {
        match file.seek_write(bytes, offset) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                bytes = &bytes[n..];
                offset += n as u64;
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

#[cfg(not(any(unix, windows)))]
fn write_all_at(_file: &File, _bytes: &[u8], _offset: u64) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no positional writes on this platform",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek};

    /// The bytes reach the file unchanged, in order, whatever the sizes of the writes.
    #[test]
    fn writes_the_same_bytes() {
        let bytes: Vec<u8> = (0..5_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut out = Writer::new(tempfile::tempfile().unwrap());
        with_early_sync(&mut out, 1 << 20, |writer| -> io::Result<()> {
            writer.write_all(&bytes[..10])?;
            writer.write_all(&bytes[10..3_000_000])?;
            for piece in bytes[3_000_000..].chunks(4099) {
                writer.write_all(piece)?;
            }
            writer.flush()
        })
        .unwrap();
        let mut file = out.into_inner().unwrap();
        file.rewind().unwrap();
        let mut back = Vec::new();
        file.read_to_end(&mut back).unwrap();
        assert!(back == bytes);
    }

    /// Pieces written at offsets from several threads, in any order, make the file.
    #[test]
    fn positional_writes_from_threads_make_the_file() {
        let bytes: Vec<u8> = (0..5_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let file = tempfile::tempfile().unwrap();
        let writer = PositionalWriter::new(&file, 1 << 20).unwrap();
        let pieces: Vec<(usize, &[u8])> = bytes
            .chunks(300_001)
            .enumerate()
            .map(|(i, piece)| (i * 300_001, piece))
            .collect();
        std::thread::scope(|scope| {
            for half in [0, 1] {
                let (writer, pieces) = (&writer, &pieces);
                scope.spawn(move || {
                    for (at, piece) in pieces.iter().rev().skip(half).step_by(2) {
                        writer.write_all_at(piece, *at as u64).unwrap();
                    }
                });
            }
        });
        assert_eq!(writer.written(), bytes.len() as u64);
        drop(writer);
        let mut back = Vec::new();
        let mut file = file;
        file.read_to_end(&mut back).unwrap();
        assert!(back == bytes);
    }

    /// The body's error comes back, and the helper thread ends with it.
    #[test]
    fn the_body_error_is_returned() {
        let mut out = Writer::new(tempfile::tempfile().unwrap());
        let result: Result<(), &str> = with_early_sync(&mut out, 1, |_| Err("stop"));
        assert_eq!(result, Err("stop"));
    }
}
