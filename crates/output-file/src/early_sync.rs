//! Writing a large output while the disk already stores it: [`with_early_sync`] hands the
//! caller a writer that, every so many bytes, asks a helper thread to flush what has been
//! written so far to disk (`fdatasync` of a second handle on the same file). The commit's fsync
//! then finds little left to wait for: the disk's write-back overlaps the rest of the writing,
//! instead of starting after it.

use std::fs::File;
use std::io::{self, Write};
use std::sync::mpsc;

use crate::Writer;

/// The writer [`with_early_sync`] hands out: `out`, written in pieces of at most `every`
/// bytes, with a flush to disk requested after each `every` bytes.
pub struct EarlySyncWriter<'w> {
    out: &'w mut Writer,
    /// Wakes the syncing thread (`None` when the file could not be cloned: no early flush).
    kick: Option<mpsc::SyncSender<()>>,
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
            if let Some(kick) = &self.kick {
                // Busy syncing already: the next kick will do.
                let _ = kick.try_send(());
            }
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
    let syncing: Option<File> = out.get_ref().try_clone().ok();
    std::thread::scope(|scope| {
        let kick = syncing.map(|file| {
            let (kick, kicked) = mpsc::sync_channel::<()>(1);
            scope.spawn(move || {
                for () in kicked {
                    if file.sync_data().is_err() {
                        break;
                    }
                }
            });
            kick
        });
        let mut writer = EarlySyncWriter {
            out,
            kick,
            unsynced: 0,
            every: every.max(1 << 20),
        };
        // The writer (and its sender) is dropped when `body` returns, which ends the helper.
        body(&mut writer)
    })
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

    /// The body's error comes back, and the helper thread ends with it.
    #[test]
    fn the_body_error_is_returned() {
        let mut out = Writer::new(tempfile::tempfile().unwrap());
        let result: Result<(), &str> = with_early_sync(&mut out, 1, |_| Err("stop"));
        assert_eq!(result, Err("stop"));
    }
}
