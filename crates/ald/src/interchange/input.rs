//! Where an input's bytes come from (a file, or memory for fuzzing and embedding), and the
//! progress reports of reading them: bytes of the input consumed so far, from the first byte.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;

use crate::Result;

/// Which pass over an input a progress report belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadStage {
    /// Reading a CSV or JSONL sample (or all of it) to infer the schema.
    Inferring,
    /// Reading the rows.
    Reading,
}

/// Receives, as an input is read, how many of its bytes have been consumed so far (the total is
/// the file's size, [`crate::interchange::Source::len`]). Called from the reading thread, often
/// (every buffer refill): keep it cheap, such as storing into an atomic or a progress bar.
#[derive(Clone)]
pub struct ByteProgress(Arc<dyn Fn(ReadStage, u64) + Send + Sync>);

impl ByteProgress {
    /// Wraps `report`.
    pub fn new(report: impl Fn(ReadStage, u64) + Send + Sync + 'static) -> Self {
        Self(Arc::new(report))
    }

    /// Reports `bytes` consumed in `stage`.
    pub fn report(&self, stage: ReadStage, bytes: u64) {
        (self.0)(stage, bytes);
    }
}

impl std::fmt::Debug for ByteProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ByteProgress")
    }
}

/// An input's bytes.
#[derive(Debug, Clone)]
pub(crate) enum Origin {
    /// A file, opened for each pass.
    File(PathBuf),
    /// Bytes in memory.
    Memory(Bytes),
}

/// Buffer of text readers: large enough that progress reports and system calls are rare.
const TEXT_BUFFER: usize = 256 << 10;

impl Origin {
    /// The input's size in bytes.
    pub(crate) fn len(&self) -> Result<u64> {
        Ok(match self {
            Self::File(path) => std::fs::metadata(path)?.len(),
            Self::Memory(bytes) => bytes.len() as u64,
        })
    }

    /// A buffered reader from the first byte, reporting progress in `stage`.
    pub(crate) fn reader(
        &self,
        stage: ReadStage,
        progress: Option<&ByteProgress>,
    ) -> Result<Box<dyn BufRead + Send>> {
        let progress = progress.cloned();
        // Small inputs get small buffers (every pass over an input opens a reader).
        let capacity = usize::try_from(self.len()?)
            .unwrap_or(TEXT_BUFFER)
            .clamp(8 << 10, TEXT_BUFFER);
        Ok(match self {
            Self::File(path) => Box::new(BufReader::with_capacity(
                capacity,
                Counting::new(File::open(path)?, stage, progress),
            )),
            Self::Memory(bytes) => Box::new(BufReader::with_capacity(
                capacity,
                Counting::new(io::Cursor::new(bytes.clone()), stage, progress),
            )),
        })
    }
}

/// A reader that reports the bytes read through it.
pub(crate) struct Counting<R> {
    inner: R,
    read: u64,
    stage: ReadStage,
    progress: Option<ByteProgress>,
}

impl<R> Counting<R> {
    pub(crate) fn new(inner: R, stage: ReadStage, progress: Option<ByteProgress>) -> Self {
        if let Some(progress) = &progress {
            progress.report(stage, 0);
        }
        Self {
            inner,
            read: 0,
            stage,
            progress,
        }
    }
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.read += read as u64;
        if let Some(progress) = &self.progress {
            progress.report(self.stage, self.read);
        }
        Ok(read)
    }
}

/// A reader that hands out only whole, valid UTF-8 text: bytes are passed on once they are known
/// to be complete characters, and invalid UTF-8 is an `InvalidData` error naming its offset.
///
/// arrow-csv checks that a batch's *field bytes* (delimiters and quotes removed) are UTF-8 and
/// then slices fields out of them without checking character boundaries, so the invalid text
/// `\xC3,\xBC` passes as `ü` split across two fields and a `&str` that is not UTF-8 reaches safe
/// code (the `csv_reader` fuzz target's finding). Checking the input itself before the decoder
/// sees it refuses such a file as the invalid UTF-8 it is.
pub(crate) struct Utf8Checked<R> {
    inner: R,
    buffer: Vec<u8>,
    /// `buffer[start..valid]` is checked text not consumed yet; `buffer[valid..filled]` the
    /// start of a character whose remaining bytes have not been read.
    start: usize,
    valid: usize,
    filled: usize,
    /// Input offset of `buffer[0]`, for messages.
    offset: u64,
}

/// Bytes read at a time by [`Utf8Checked`].
const UTF8_CHUNK: usize = 64 << 10;

impl<R: Read> Utf8Checked<R> {
    pub(crate) fn new(inner: R) -> Self {
        Self {
            inner,
            buffer: Vec::new(),
            start: 0,
            valid: 0,
            filled: 0,
            offset: 0,
        }
    }

    fn invalid(&self, at: usize) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("invalid UTF-8 at byte {}", self.offset + at as u64),
        )
    }
}

impl<R: Read> BufRead for Utf8Checked<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.start == self.valid {
            // Keep the unfinished character (at most 3 bytes), read more after it.
            self.buffer.copy_within(self.valid..self.filled, 0);
            self.offset += self.valid as u64;
            self.filled -= self.valid;
            (self.start, self.valid) = (0, 0);
            self.buffer.resize(self.filled + UTF8_CHUNK, 0);
            let read = self.inner.read(&mut self.buffer[self.filled..])?;
            self.buffer.truncate(self.filled + read);
            if read == 0 {
                if self.filled > 0 {
                    return Err(self.invalid(0));
                }
                break;
            }
            self.filled += read;
            self.valid = match std::str::from_utf8(&self.buffer[..self.filled]) {
                Ok(_) => self.filled,
                Err(error) if error.error_len().is_some() => {
                    return Err(self.invalid(error.valid_up_to()));
                }
                Err(error) => error.valid_up_to(),
            };
        }
        Ok(&self.buffer[self.start..self.valid])
    }

    fn consume(&mut self, amount: usize) {
        self.start = (self.start + amount).min(self.valid);
    }
}

impl<R: Read> Read for Utf8Checked<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let amount = available.len().min(out.len());
        out[..amount].copy_from_slice(&available[..amount]);
        self.consume(amount);
        Ok(amount)
    }
}

/// Consumes a UTF-8 byte order mark, if `reader` starts with one (spreadsheet programs write
/// it; pyarrow drops it too).
pub(crate) fn skip_bom(reader: &mut dyn BufRead) -> io::Result<()> {
    const BOM: &[u8] = b"\xEF\xBB\xBF";
    let mut seen = 0;
    while seen < BOM.len() {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            break;
        }
        let take = (BOM.len() - seen).min(buffer.len());
        if buffer[..take] != BOM[seen..seen + take] {
            // Not a BOM; nothing has been consumed unless a BOM prefix straddled a refill,
            // which a 256 KiB buffer never splits.
            break;
        }
        reader.consume(take);
        seen += take;
    }
    Ok(())
}

/// Consumes `lines` lines (through their `\n`), without holding a line in memory.
pub(crate) fn skip_lines(reader: &mut dyn BufRead, lines: u64) -> io::Result<()> {
    let mut left = lines;
    while left > 0 {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            break;
        }
        match buffer.iter().position(|b| *b == b'\n') {
            Some(end) => {
                reader.consume(end + 1);
                left -= 1;
            }
            None => {
                let all = buffer.len();
                reader.consume(all);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod utf8_tests {
    use super::*;

    fn read_all(bytes: &[u8], chunk: usize) -> io::Result<Vec<u8>> {
        /// Hands out at most `chunk` bytes per read, to split characters across reads.
        struct Trickle<'a>(&'a [u8], usize);
        impl Read for Trickle<'_> {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                let n = self.1.min(out.len()).min(self.0.len());
                out[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut out = Vec::new();
        Utf8Checked::new(Trickle(bytes, chunk)).read_to_end(&mut out)?;
        Ok(out)
    }

    #[test]
    fn text_passes_whole_whatever_the_reads_split() {
        let text = "a,ü,€,😀\nx,y,z,w\n".repeat(50);
        for chunk in [1, 2, 3, 5, 64, 1 << 20] {
            assert_eq!(read_all(text.as_bytes(), chunk).unwrap(), text.as_bytes());
        }
    }

    #[test]
    fn invalid_utf8_is_refused_with_its_offset() {
        // The fuzz finding: valid once the delimiter is removed, invalid as a file.
        let error = read_all(b"r \xC3,\xBC,true\n", 4).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert_eq!(error.to_string(), "invalid UTF-8 at byte 2");
        // A character cut off by the end of the input.
        let error = read_all(b"ab\xE2\x82", 64).unwrap_err();
        assert_eq!(error.to_string(), "invalid UTF-8 at byte 2");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    #[test]
    fn readers_report_bytes_from_the_first_one() {
        let seen = Arc::new(AtomicU64::new(u64::MAX));
        let store = Arc::clone(&seen);
        let progress = ByteProgress::new(move |_, bytes| store.store(bytes, Ordering::Relaxed));
        let origin = Origin::Memory(Bytes::from_static(b"\xEF\xBB\xBFskip me\nand me\nrest"));
        let mut reader = origin.reader(ReadStage::Reading, Some(&progress)).unwrap();
        assert_eq!(seen.load(Ordering::Relaxed), 0);
        skip_bom(&mut reader).unwrap();
        skip_lines(&mut reader, 2).unwrap();
        let mut rest = String::new();
        reader.read_to_string(&mut rest).unwrap();
        assert_eq!(rest, "rest");
        assert_eq!(seen.load(Ordering::Relaxed), origin.len().unwrap());
    }
}
