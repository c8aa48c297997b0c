//! Reading a `.fold` file from byte ranges the caller fetched (object storage, HTTP range
//! requests) instead of from a whole file: the reading `remote-file` builds on, with no I/O here.
//!
//! Opening needs the global header and the JSON index (docs/fold.md §3): the caller fetches the
//! first bytes (28 at least) and, with [`index_range`], the index's range, holds them in a
//! [`RangedSource`] and opens it with [`FoldReader::open_with`], which runs every open rule in its
//! usual order over those bytes (the header's rules, the index's UTF-8, JSON, schema and names, the
//! layout, `manifest_hash` and `chunk_hashes`). A chunk is then one range, its header and body
//! ([`FoldReader::chunk_range`]), and [`FoldReader::read_chunk_from`] reads it from the fetched
//! bytes with every rule [`FoldReader::read_chunk`] applies, in the same order (header against the
//! index, `ecc_len`, Reed-Solomon correction on a CRC32C mismatch, CRC32C, SHA-256, the hashes of
//! the metadata, bounded decompression, exact length).

use std::io;
use std::ops::Range;

use crate::error::{Error, Region, Result};
use crate::format::{CHUNK_HEADER_LEN, GLOBAL_HEADER_LEN, GlobalHeader};
use crate::reader::FoldReader;
use crate::source::Source;

/// A file of which only some byte ranges are held (fetched by the caller). A read of bytes it
/// does not hold fails with an I/O error (`Other`): nothing is ever made up.
#[derive(Debug, Clone, Default)]
pub struct RangedSource {
    len: u64,
    parts: Vec<(u64, Vec<u8>)>,
}

impl RangedSource {
    /// A file of `len` bytes of which nothing is held yet.
    #[must_use]
    pub fn new(len: u64) -> Self {
        Self {
            len,
            parts: Vec::new(),
        }
    }

    /// Holds `bytes` as the file's bytes from `offset` (bytes past the file's length are never
    /// served).
    pub fn hold(&mut self, offset: u64, bytes: Vec<u8>) {
        self.parts.push((offset, bytes));
    }

    /// Whether the bytes `range` are held (in one part).
    #[must_use]
    pub fn holds(&self, range: &Range<u64>) -> bool {
        range.is_empty() || self.part(range.start, range.end - range.start).is_some()
    }

    fn part(&self, offset: u64, len: u64) -> Option<&[u8]> {
        let end = offset.checked_add(len).filter(|end| *end <= self.len)?;
        self.parts.iter().find_map(|(start, bytes)| {
            let from = usize::try_from(offset.checked_sub(*start)?).ok()?;
            let to = usize::try_from(end - *start).ok()?;
            bytes.get(from..to)
        })
    }
}

impl Source for RangedSource {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let held = self.part(offset, buf.len() as u64).ok_or_else(|| {
            io::Error::other(format!(
                "bytes {offset}..{} of the file were not fetched",
                offset.saturating_add(buf.len() as u64)
            ))
        })?;
        buf.copy_from_slice(held);
        Ok(())
    }
}

/// The file offsets of the JSON index of a file of `file_len` bytes whose first bytes are
/// `head`, after the global header's rules in [`FoldReader::open`]'s order (002 §8.1): the file
/// holds 28 bytes, magic, `header_len`, `index_off`, `index_len`, and the index ends within the
/// file.
///
/// # Errors
/// [`Error::Truncated`] (a file, or a `head`, shorter than 28 bytes; an index past the end);
/// [`Error::BadMagic`], [`Error::BadHeaderLen`], [`Error::IndexInsideHeader`],
/// [`Error::IndexTooLarge`].
pub fn index_range(head: &[u8], file_len: u64) -> Result<Range<u64>> {
    let header_len = u64::from(GLOBAL_HEADER_LEN);
    let raw: &[u8; 28] = head
        .get(..28)
        .and_then(|raw| raw.try_into().ok())
        .filter(|_| file_len >= header_len)
        .ok_or(Error::Truncated {
            region: Region::GlobalHeader,
            chunk: None,
            offset: 0,
            len: header_len,
            file_len,
        })?;
    let header = GlobalHeader::parse(raw)?;
    let end = header
        .index_off
        .checked_add(header.index_len)
        .filter(|end| *end <= file_len)
        .ok_or(Error::Truncated {
            region: Region::Index,
            chunk: None,
            offset: header.index_off,
            len: header.index_len,
            file_len,
        })?;
    Ok(header.index_off..end)
}

/// A source that serves one fetched range from the caller's bytes and everything else from the
/// reader's own source.
struct Overlay<'a, S> {
    base: &'a S,
    at: u64,
    bytes: &'a [u8],
}

impl<S: Source> Source for Overlay<'_, S> {
    fn len(&self) -> u64 {
        self.base.len()
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let inside = offset
            .checked_sub(self.at)
            .and_then(|from| usize::try_from(from).ok())
            .and_then(|from| self.bytes.get(from..from.checked_add(buf.len())?));
        match inside {
            Some(held) => {
                buf.copy_from_slice(held);
                Ok(())
            }
            None => self.base.read_exact_at(offset, buf),
        }
    }
}

impl<S: Source> FoldReader<S> {
    /// The file offsets of chunk `name`'s header and body (`offset .. offset + 32 + comp_len +
    /// ecc_len`), to fetch, after the rules of a chunk read that need none of its bytes, with
    /// [`FoldReader::read_chunk`]'s errors: the size limits, the offset past the global header,
    /// the header and body within the file.
    ///
    /// # Errors
    /// [`Error::ChunkNotFound`], [`Error::ChunkTooLarge`], [`Error::ChunkInsideHeader`],
    /// [`Error::Truncated`].
    pub fn chunk_range(&self, name: &str) -> Result<Range<u64>> {
        let (_, e) = self.entry(name)?;
        self.check_limits(e)?;
        let header_end = e
            .offset
            .checked_add(u64::from(CHUNK_HEADER_LEN))
            .filter(|end| *end <= self.file_len())
            .ok_or_else(|| Error::Truncated {
                region: Region::ChunkHeader,
                chunk: Some(e.name.clone()),
                offset: e.offset,
                len: u64::from(CHUNK_HEADER_LEN),
                file_len: self.file_len(),
            })?;
        let body_len = e.comp_len.saturating_add(e.ecc_len);
        let end = header_end
            .checked_add(body_len)
            .filter(|end| *end <= self.file_len())
            .ok_or_else(|| Error::Truncated {
                region: Region::ChunkBody,
                chunk: Some(e.name.clone()),
                offset: header_end,
                len: body_len,
                file_len: self.file_len(),
            })?;
        Ok(e.offset..end)
    }

    /// Chunk `name` verified and decompressed exactly as [`FoldReader::read_chunk`] reads it
    /// (ECC → integrity → decompression, every rule in order), its header and body taken from
    /// `fetched`, the bytes [`FoldReader::chunk_range`] names.
    ///
    /// # Errors
    /// As [`FoldReader::read_chunk`]; [`Error::Io`] if `fetched` is not as long as the range.
    pub fn read_chunk_from(&self, name: &str, fetched: &[u8]) -> Result<Vec<u8>> {
        let range = self.chunk_range(name)?;
        if fetched.len() as u64 != range.end - range.start {
            return Err(Error::Io(io::Error::other(format!(
                "chunk {name:?}: {} bytes were given for its {} bytes",
                fetched.len(),
                range.end - range.start
            ))));
        }
        let overlay = Overlay {
            base: self.source(),
            at: range.start,
            bytes: fetched,
        };
        self.read_chunk_in(&overlay, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Compression, Ecc, FoldWriter, WriteOptions};

    /// Four chunks: raw, zstd (if compiled in), with and without Reed-Solomon bytes.
    fn sample() -> Vec<u8> {
        let mut writer = FoldWriter::new(
            std::io::Cursor::new(Vec::new()),
            WriteOptions::new(Compression::None, Ecc::None),
        )
        .unwrap();
        let text: Vec<u8> = (0..300_u32).flat_map(|i| (i % 7).to_le_bytes()).collect();
        writer
            .add_chunk_with("raw", "TSAV", &text, Compression::None, Ecc::None)
            .unwrap();
        writer
            .add_chunk_with(
                "protected",
                "TSAV",
                &text[..200],
                Compression::None,
                Ecc::Rs(16),
            )
            .unwrap();
        #[cfg(feature = "zstd")]
        writer
            .add_chunk_with("packed", "JSON", &text, Compression::Zstd, Ecc::Rs(8))
            .unwrap();
        writer
            .add_chunk_with("empty", "JSON", b"", Compression::None, Ecc::Rs(4))
            .unwrap();
        writer
            .finish(crate::json::Map::new(), 1_700_000_000.5)
            .unwrap()
            .into_inner()
    }

    fn at(offset: u64) -> usize {
        usize::try_from(offset).unwrap()
    }

    /// Opens `bytes` as a reader of ranges does: the first and last `first` bytes, then the
    /// index if they do not hold it.
    fn open_ranged(bytes: &[u8], first: usize) -> Result<(FoldReader<RangedSource>, usize)> {
        let len = bytes.len() as u64;
        let mut source = RangedSource::new(len);
        let head = &bytes[..first.min(bytes.len())];
        source.hold(0, head.to_vec());
        let tail = bytes.len().saturating_sub(first);
        source.hold(tail as u64, bytes[tail..].to_vec());
        let mut fetched = 2;
        let index = index_range(head, len)?;
        if !source.holds(&index) {
            fetched += 1;
            source.hold(index.start, bytes[at(index.start)..at(index.end)].to_vec());
        }
        Ok((FoldReader::open(source)?, fetched))
    }

    /// Every chunk the local reader lists, read from ranges, or the error that stopped it.
    fn read_ranged(bytes: &[u8], first: usize) -> Result<Vec<Vec<u8>>> {
        let (reader, _) = open_ranged(bytes, first)?;
        let names: Vec<String> = reader
            .index()
            .chunks
            .iter()
            .map(|c| c.name.clone())
            .collect();
        names
            .iter()
            .map(|name| {
                let range = reader.chunk_range(name)?;
                reader.read_chunk_from(name, &bytes[at(range.start)..at(range.end)])
            })
            .collect()
    }

    fn read_local(bytes: &[u8]) -> Result<Vec<Vec<u8>>> {
        let reader = FoldReader::open(bytes)?;
        let names: Vec<String> = reader
            .index()
            .chunks
            .iter()
            .map(|c| c.name.clone())
            .collect();
        names.iter().map(|name| reader.read_chunk(name)).collect()
    }

    /// The ranged read and the local one end alike: the same chunks, or the same error.
    fn agree(bytes: &[u8], first: usize, what: &str) {
        match (read_ranged(bytes, first), read_local(bytes)) {
            (Ok(ranged), Ok(local)) => assert_eq!(ranged, local, "{what}"),
            (Err(ranged), Err(local)) => {
                assert_eq!(ranged.to_string(), local.to_string(), "{what}");
            }
            (ranged, local) => panic!("{what}: ranged {ranged:?}, local {local:?}"),
        }
    }

    #[test]
    fn chunks_read_from_their_ranges_equal_the_local_read() {
        let bytes = sample();
        for first in [28, 64, 1 << 16] {
            let chunks = read_ranged(&bytes, first).unwrap();
            assert_eq!(chunks, read_local(&bytes).unwrap());
        }
        let (_, fetched) = open_ranged(&bytes, 1 << 16).unwrap();
        assert_eq!(fetched, 2, "a small file opens from its two ends");
        let (_, fetched) = open_ranged(&bytes, 64).unwrap();
        assert_eq!(fetched, 3, "the index fetched on its own");
    }

    #[test]
    fn a_changed_range_is_corrected_or_refused_never_used() {
        let bytes = sample();
        let (reader, _) = open_ranged(&bytes, 64).unwrap();
        let range = reader.chunk_range("raw").unwrap();
        let mut fetched = bytes[at(range.start)..at(range.end)].to_vec();
        fetched[40] ^= 1;
        assert!(matches!(
            reader.read_chunk_from("raw", &fetched),
            Err(Error::CrcMismatch { .. })
        ));
        // Reed-Solomon corrects a protected chunk as the local reader does.
        let range = reader.chunk_range("protected").unwrap();
        let mut fetched = bytes[at(range.start)..at(range.end)].to_vec();
        fetched[40] ^= 1;
        assert_eq!(
            reader.read_chunk_from("protected", &fetched).unwrap(),
            FoldReader::open(&bytes[..])
                .unwrap()
                .read_chunk("protected")
                .unwrap()
        );
        // The header copy is compared with the index; short bytes are refused.
        let mut fetched = bytes[at(range.start)..at(range.end)].to_vec();
        fetched[1] ^= 1;
        assert!(matches!(
            reader.read_chunk_from("protected", &fetched),
            Err(Error::CtypeMismatch { .. })
        ));
        assert!(matches!(
            reader.read_chunk_from("protected", &fetched[1..]),
            Err(Error::Io(_))
        ));
        assert!(matches!(
            reader.chunk_range("missing"),
            Err(Error::ChunkNotFound { .. })
        ));
    }

    /// Every truncation and a flip of two bits of every byte: the ranged reader never panics and
    /// ends as the local reader ends (the same chunks, or the same error).
    #[test]
    fn truncations_and_bit_flips_end_as_the_local_reader_ends() {
        let bytes = sample();
        for len in 0..bytes.len() {
            agree(&bytes[..len], 64, "truncated");
        }
        for position in 0..bytes.len() {
            for bit in [0x01, 0x80] {
                let mut damaged = bytes.clone();
                damaged[position] ^= bit;
                agree(&damaged, 64, "flipped");
            }
        }
    }
}
