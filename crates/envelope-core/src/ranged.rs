//! Opening a STREAMING envelope from its head and tail only, for readers that fetch byte ranges
//! (object storage, HTTP) instead of holding the whole file.
//!
//! A reader fetches the first and the last bytes of a file (64 KiB each, say, in parallel) and
//! hands them to [`RangedEnvelope::open`] with the file's length. The open runs the very walk
//! [`Envelope::parse_lazy`](crate::Envelope::parse_lazy) runs (`layout::walk_lazy`, over a byte
//! source that holds only those two parts), so the checks, their order and their errors are the
//! same: magic, version, the chunk index's `prefix_crc32c` over every byte before it, the header
//! rules, every section's bounds, the chunk index's consistency with the header. When the walk
//! needs a byte neither part holds (a metadata section larger than the first read, a long chunk
//! index, signature and license blocks longer than the last read), the open says which range to
//! fetch next ([`Opening::NeedBytes`]): it always extends the head or the tail, so the reader
//! appends it and opens again. Each round reads further into the file, and the walk reads at most
//! three length prefixes before the payload, so a file opens in two requests in the common case
//! and rarely more than three or four.
//!
//! A file with neither the STREAMING nor the TRUENO_NATIVE flag is verified only by its whole-file
//! CRC32: the open says so ([`Opening::NeedWholeFile`]) once magic and version have passed, and
//! the reader fetches the rest and calls [`Envelope::parse`](crate::Envelope::parse).
//!
//! Chunks are then fetched by the caller ([`RangedEnvelope::chunk_range`]) and checked here
//! before use ([`RangedEnvelope::check_chunk`]): the length must be the index entry's
//! `stored_size` and the CRC-32C the entry's (AES-GCM authenticates an encrypted file's chunks
//! instead), so a range that came back changed is refused with `ChecksumMismatch`, never used.
//! This module knows nothing of the network: it is plain bytes in, verdicts out, and builds for
//! wasm32 and `no_std` like the rest of the crate.

use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::vec;
use core::ops::Range;

use crate::chunk_index::{ChunkEntry, ChunkIndex, masked_prefix_crc32c};
use crate::compression::{PayloadPart, PayloadReader, decompress};
use crate::envelope::{check_chunk_limits, refuse_encrypted};
use crate::error::{Error, FormatError, Result, Section};
use crate::header::{Flags, Format, Header};
use crate::layout::{ByteSource, Layout, Span, declared_totals, walk_lazy};
use crate::limits::Limits;

/// What [`RangedEnvelope::open`] concluded from the bytes it was given.
#[derive(Debug)]
pub enum Opening<B> {
    /// Everything before and after the payload is there and verified.
    Ready(Box<RangedEnvelope<B>>),
    /// The walk needs `missing`, which neither part holds. It starts where the head ends
    /// (`missing.start == head.len()`: append it to the head) or ends where the tail starts
    /// (`missing.end == file_len - tail.len()`: put it before the tail); fetch it and open again.
    NeedBytes {
        /// The bytes given, handed back.
        head: B,
        /// The bytes given, handed back.
        tail: B,
        /// The file offsets to fetch.
        missing: Range<u64>,
    },
    /// The file is verified only by its whole-file CRC32 (neither STREAMING nor TRUENO_NATIVE):
    /// magic and version have passed; fetch every byte and use `Envelope::parse`.
    NeedWholeFile {
        /// The bytes given, handed back.
        head: B,
        /// The bytes given, handed back.
        tail: B,
    },
}

/// A STREAMING (or TRUENO_NATIVE) envelope verified from its head (`[0, payload offset)` at
/// least) and its tail (`[payload end, file length)` at least), exactly as
/// [`Envelope::parse_lazy`](crate::Envelope::parse_lazy) verifies a whole file; chunks come from
/// the caller and are checked before use.
#[derive(Debug, Clone)]
pub struct RangedEnvelope<B> {
    head: B,
    tail: B,
    layout: Layout,
    chunk_index: Option<ChunkIndex>,
    limits: Limits,
}

impl<B: AsRef<[u8]>> RangedEnvelope<B> {
    /// Verifies the first bytes (`head`) and the last bytes (`tail`) of a file of `file_len`
    /// bytes as a file of `format`. The parts may overlap (a small file fetched whole in both).
    ///
    /// # Errors
    /// As [`Envelope::parse_lazy`](crate::Envelope::parse_lazy), in the same order:
    /// `InvalidFormat` (magic, or the other format's magic), `UnsupportedVersion`,
    /// `ChecksumMismatch` (the index's prefix CRC-32C), then `InvalidFormat` for any other header
    /// rule or section bound. `InvalidArgument` if a part is longer than `file_len`.
    pub fn open(head: B, tail: B, file_len: u64, format: Format) -> Result<Opening<B>> {
        let (head_len, tail_len) = (head.as_ref().len() as u64, tail.as_ref().len() as u64);
        if head_len > file_len || tail_len > file_len {
            return Err(Error::InvalidArgument(
                "a part of a file is longer than the file",
            ));
        }
        let mut parts = Parts {
            head: head.as_ref(),
            tail: tail.as_ref(),
            len: file_len,
            missing: None,
        };
        let walked = walk_lazy(&mut parts, Some(format));
        match parts.missing {
            Some(Missing::Bytes(missing)) => {
                return Ok(Opening::NeedBytes {
                    head,
                    tail,
                    missing,
                });
            }
            Some(Missing::WholeFile) => return Ok(Opening::NeedWholeFile { head, tail }),
            None => {}
        }
        let (layout, chunk_index, lazy) = walked?;
        if !lazy {
            // walk_lazy verifies a file without either flag through the whole-file CRC32, which
            // `Parts` never computes; this is not reached, but says what would be needed.
            return Ok(Opening::NeedWholeFile { head, tail });
        }
        // The walk read the frames' length prefixes but not every body (the encryption block,
        // the signature and license blocks): the envelope holds all of them.
        let payload = layout.span(Section::Payload).unwrap_or_default();
        let tail_start = file_len - tail_len;
        let missing = if head_len < payload.offset {
            Some(head_len..payload.offset)
        } else if tail_start > payload.end() {
            Some(payload.end()..tail_start)
        } else {
            None
        };
        if let Some(missing) = missing {
            return Ok(Opening::NeedBytes {
                head,
                tail,
                missing,
            });
        }
        Ok(Opening::Ready(Box::new(Self {
            head,
            tail,
            layout,
            chunk_index,
            limits: Limits::DEFAULT,
        })))
    }

    /// This envelope with the reader's resource policy `limits` (default [`Limits::DEFAULT`]),
    /// as [`Envelope::with_limits`](crate::Envelope::with_limits).
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The reader's resource policy for this file.
    #[must_use]
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The header.
    #[must_use]
    pub fn header(&self) -> &Header {
        self.layout.header()
    }

    /// Where every section lies.
    #[must_use]
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The chunk index (`None` for a TRUENO_NATIVE file without STREAMING).
    #[must_use]
    pub fn chunk_index(&self) -> Option<&ChunkIndex> {
        self.chunk_index.as_ref()
    }

    /// The file's total length.
    #[must_use]
    pub fn file_len(&self) -> u64 {
        self.layout.file_len()
    }

    /// The body of `section`, if the file has it (never the payload, which is not held).
    #[must_use]
    pub fn section(&self, section: Section) -> Option<&[u8]> {
        if section == Section::Payload {
            return None;
        }
        let span = self.layout.span(section)?;
        let head = self.head.as_ref();
        if span.end() <= head.len() as u64 {
            return head.get(to_usize(span.offset)..to_usize(span.end()));
        }
        let tail = self.tail.as_ref();
        let tail_start = self.file_len() - tail.len() as u64;
        let start = span.offset.checked_sub(tail_start)?;
        tail.get(to_usize(start)..to_usize(start + span.len))
    }

    /// The metadata bytes.
    #[must_use]
    pub fn metadata(&self) -> &[u8] {
        self.section(Section::Metadata).unwrap_or_default()
    }

    /// The schema bytes (`.ald`; empty for `.apr`).
    #[must_use]
    pub fn schema(&self) -> &[u8] {
        self.section(Section::Schema).unwrap_or_default()
    }

    /// The metadata section, if it is within [`Limits::max_metadata`].
    ///
    /// # Errors
    /// `LimitExceeded`.
    pub fn checked_metadata(&self) -> Result<&[u8]> {
        let metadata = self.metadata();
        self.limits.check_metadata(metadata.len() as u64)?;
        Ok(metadata)
    }

    /// The schema section, if it is within [`Limits::max_metadata`].
    ///
    /// # Errors
    /// `LimitExceeded`.
    pub fn checked_schema(&self) -> Result<&[u8]> {
        let schema = self.schema();
        self.limits.check_metadata(schema.len() as u64)?;
        Ok(schema)
    }

    /// The decoded payload size, as
    /// [`Envelope::uncompressed_size`](crate::Envelope::uncompressed_size) (the chunk index's
    /// total for a file past the header's u32 fields).
    #[must_use]
    pub fn uncompressed_size(&self) -> u64 {
        // The walk already reconciled header and index, so this cannot fail here.
        declared_totals(self.header(), self.chunk_index.as_ref()).map_or(0, |(_, decoded)| decoded)
    }

    /// Where the payload lies in the file.
    #[must_use]
    pub fn payload_span(&self) -> Span {
        self.layout.span(Section::Payload).unwrap_or_default()
    }

    /// Every byte before the payload (header to encryption block), as
    /// [`Envelope::bytes_before_payload`](crate::Envelope::bytes_before_payload).
    #[must_use]
    pub fn bytes_before_payload(&self) -> &[u8] {
        &self.head.as_ref()[..to_usize(self.payload_span().offset)]
    }

    /// Every byte after the payload: signature and license blocks (framed) and the CRC32 trailer.
    #[must_use]
    pub fn bytes_after_payload(&self) -> &[u8] {
        let tail = self.tail.as_ref();
        let tail_start = self.file_len() - tail.len() as u64;
        &tail[to_usize(self.payload_span().end() - tail_start)..]
    }

    /// The entry of chunk `chunk`.
    ///
    /// # Errors
    /// `InvalidFormat` if the file has no chunk index or no such chunk.
    pub fn chunk_entry(&self, chunk: usize) -> Result<&ChunkEntry> {
        let index = self.chunk_index.as_ref().ok_or(FormatError::Inconsistent {
            reason: "chunks were requested from a file without the STREAMING flag",
        })?;
        index.entries().get(chunk).ok_or_else(|| {
            FormatError::NoSuchChunk {
                chunk: chunk as u64,
                count: index.len() as u64,
            }
            .into()
        })
    }

    /// The file offsets of chunk `chunk`'s stored bytes, to fetch.
    ///
    /// # Errors
    /// As [`RangedEnvelope::chunk_entry`].
    pub fn chunk_range(&self, chunk: usize) -> Result<Range<u64>> {
        let entry = self.chunk_entry(chunk)?;
        let start = self.payload_span().offset + entry.stored_offset;
        Ok(start..start + entry.stored_size)
    }

    /// Checks bytes fetched for chunk `chunk`: their length must be the entry's `stored_size`
    /// and, unless the file is encrypted (AES-GCM authenticates its chunks), their CRC-32C the
    /// entry's.
    ///
    /// # Errors
    /// `InvalidFormat` (`SizeMismatch`) for another length; `ChecksumMismatch`; as
    /// [`RangedEnvelope::chunk_entry`].
    pub fn check_chunk(&self, chunk: usize, stored: &[u8]) -> Result<()> {
        self.part(chunk, stored)?.check()
    }

    /// Chunk `chunk` as a payload part over the caller's bytes, length checked.
    fn part<'a>(&self, chunk: usize, stored: &'a [u8]) -> Result<PayloadPart<'a>> {
        let entry = self.chunk_entry(chunk)?;
        if stored.len() as u64 != entry.stored_size {
            return Err(FormatError::SizeMismatch {
                what: "the bytes of a chunk against its index entry's stored_size",
                declared: entry.stored_size,
                found: stored.len() as u64,
            }
            .into());
        }
        let encrypted = self.header().flags().contains(Flags::ENCRYPTED);
        Ok(PayloadPart {
            stored,
            declared: entry.uncompressed_size,
            crc32c: (!encrypted).then_some(entry.stored_crc32c),
        })
    }

    /// Checks and decompresses chunk `chunk` of an unencrypted file from its fetched bytes, as
    /// [`Envelope::decode_chunk`](crate::Envelope::decode_chunk).
    ///
    /// # Errors
    /// `DecryptionFailed` (key required) for encrypted files; `LimitExceeded`; as
    /// [`RangedEnvelope::check_chunk`]; `InvalidFormat` for a corrupt stream.
    pub fn decode_chunk<'a>(&self, chunk: usize, stored: &'a [u8]) -> Result<Cow<'a, [u8]>> {
        refuse_encrypted(self.header())?;
        check_chunk_limits(
            &self.limits,
            self.header(),
            self.chunk_index.as_ref(),
            chunk,
        )?;
        let part = self.part(chunk, stored)?;
        part.check()?;
        decompress(
            self.header().compression(),
            part.stored,
            part.declared,
            Section::Payload,
        )
    }

    /// Chunk `chunk` of an unencrypted file as a reader of its decoded bytes, from its fetched
    /// bytes, as [`Envelope::chunk_reader`](crate::Envelope::chunk_reader) (the CRC-32C is
    /// checked before the first byte is read).
    ///
    /// # Errors
    /// As [`RangedEnvelope::decode_chunk`].
    pub fn chunk_reader<'a>(&self, chunk: usize, stored: &'a [u8]) -> Result<PayloadReader<'a>> {
        refuse_encrypted(self.header())?;
        check_chunk_limits(
            &self.limits,
            self.header(),
            self.chunk_index.as_ref(),
            chunk,
        )?;
        let part = self.part(chunk, stored)?;
        PayloadReader::new(self.header().compression(), vec![part])
    }

    /// Gives the two parts back.
    #[must_use]
    pub fn into_parts(self) -> (B, B) {
        (self.head, self.tail)
    }
}

fn to_usize(offset: u64) -> usize {
    // Offsets into the parts, which are in memory: below their usize lengths.
    usize::try_from(offset).unwrap_or(usize::MAX)
}

/// What a walk over [`Parts`] needed and did not have.
enum Missing {
    Bytes(Range<u64>),
    WholeFile,
}

/// A file of which only the first and last bytes are present.
struct Parts<'a> {
    head: &'a [u8],
    tail: &'a [u8],
    len: u64,
    /// The first read that could not be served.
    missing: Option<Missing>,
}

impl Parts<'_> {
    fn tail_start(&self) -> u64 {
        self.len - self.tail.len() as u64
    }

    /// Bytes `offset..offset + len`, if the parts hold them.
    fn bytes(&self, offset: u64, len: u64) -> Option<Cow<'_, [u8]>> {
        let end = offset.checked_add(len)?;
        let (head_len, tail_start) = (self.head.len() as u64, self.tail_start());
        if end <= head_len {
            return self
                .head
                .get(to_usize(offset)..to_usize(end))
                .map(Cow::Borrowed);
        }
        if offset >= tail_start {
            return self
                .tail
                .get(to_usize(offset - tail_start)..to_usize(end - tail_start))
                .map(Cow::Borrowed);
        }
        if head_len >= tail_start {
            // The parts overlap or touch: the range starts in the head and ends in the tail.
            let mut joined = self.head.get(to_usize(offset)..)?.to_vec();
            joined.extend_from_slice(
                self.tail
                    .get(to_usize(head_len - tail_start)..to_usize(end - tail_start))?,
            );
            return Some(Cow::Owned(joined));
        }
        None
    }

    /// Records that `offset..offset + len` was needed, as the smaller extension of the head or
    /// the tail that covers it, and returns the error that stops the walk (never seen by callers).
    fn need(&mut self, offset: u64, len: u64) -> Error {
        let end = offset.saturating_add(len).min(self.len);
        let (head_len, tail_start) = (self.head.len() as u64, self.tail_start());
        let grow_head = head_len..end.max(head_len);
        let grow_tail = offset.min(tail_start)..tail_start;
        let missing = if grow_head.end - grow_head.start <= grow_tail.end - grow_tail.start {
            grow_head
        } else {
            grow_tail
        };
        self.missing.get_or_insert(Missing::Bytes(missing));
        Error::truncated(Section::Payload, offset, len, 0)
    }
}

impl ByteSource for Parts<'_> {
    fn len(&self) -> u64 {
        self.len
    }

    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<()> {
        match self.bytes(offset, buf.len() as u64) {
            Some(bytes) => {
                buf.copy_from_slice(&bytes);
                Ok(())
            }
            None => Err(self.need(offset, buf.len() as u64)),
        }
    }

    fn crc32_of_prefix(&mut self, len: u64) -> Result<u32> {
        // Only the whole-file walk asks for this: such a file is read whole.
        self.missing.get_or_insert(Missing::WholeFile);
        Err(Error::truncated(Section::Payload, 0, len, 0))
    }

    fn masked_crc32c_of_prefix(&mut self, len: u64) -> Result<u32> {
        match self.bytes(0, len) {
            Some(bytes) => Ok(masked_prefix_crc32c(&bytes)),
            None => Err(self.need(0, len)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Compression, Envelope, EnvelopeParts, Payload};

    /// A STREAMING dataset of `chunks` compressed chunks, with signature and license blocks.
    fn streaming_file(chunks: &[&[u8]], metadata_len: usize) -> alloc::vec::Vec<u8> {
        let mut parts = EnvelopeParts::new(Format::Dataset, 1);
        parts.metadata = vec![0x80; metadata_len].into();
        parts.compression = Compression::None;
        parts.num_rows = chunks.len() as u64;
        parts.payload =
            Payload::chunked(Compression::None, chunks.iter().map(|chunk| (1, *chunk))).unwrap();
        parts.signature = Some(vec![7u8; 100].into());
        parts.license = Some(vec![9u8; 40].into());
        parts.to_bytes().unwrap()
    }

    /// Opens `bytes` from a head and a tail of `first` bytes each, extending as asked; returns
    /// the envelope and the number of rounds.
    fn open_in_rounds(bytes: &[u8], first: usize) -> (RangedEnvelope<alloc::vec::Vec<u8>>, usize) {
        let len = bytes.len();
        let mut head = bytes[..first.min(len)].to_vec();
        let mut tail = bytes[len - first.min(len)..].to_vec();
        for round in 1..10 {
            match RangedEnvelope::open(head, tail, len as u64, Format::Dataset).unwrap() {
                Opening::Ready(envelope) => return (*envelope, round),
                Opening::NeedBytes {
                    head: h,
                    tail: t,
                    missing,
                } => {
                    let (start, end) = (to_usize(missing.start), to_usize(missing.end));
                    assert!(start < end, "an empty range was asked for");
                    (head, tail) = (h, t);
                    if start == head.len() {
                        head.extend_from_slice(&bytes[start..end]);
                    } else {
                        assert_eq!(end, len - tail.len());
                        let mut grown = bytes[start..end].to_vec();
                        grown.extend_from_slice(&tail);
                        tail = grown;
                    }
                }
                Opening::NeedWholeFile { .. } => panic!("a STREAMING file is read by ranges"),
            }
        }
        panic!("the open did not converge")
    }

    #[test]
    fn a_small_head_and_tail_grow_until_the_file_opens() {
        let chunks: [&[u8]; 3] = [b"first chunk", b"second", b"third!"];
        let bytes = streaming_file(&chunks, 300);
        let (envelope, rounds) = open_in_rounds(&bytes, 40);
        assert!(rounds > 2);
        let local = Envelope::parse_lazy(&bytes[..], Format::Dataset).unwrap();
        assert_eq!(envelope.layout(), local.layout());
        assert_eq!(envelope.uncompressed_size(), local.uncompressed_size());
        for (number, chunk) in chunks.iter().enumerate() {
            let range = envelope.chunk_range(number).unwrap();
            let stored = &bytes[to_usize(range.start)..to_usize(range.end)];
            assert_eq!(&*envelope.decode_chunk(number, stored).unwrap(), *chunk);
        }
        assert_eq!(envelope.section(Section::License), Some(&[9u8; 40][..]));
        assert_eq!(
            envelope.bytes_after_payload().len() as u64,
            envelope.file_len() - envelope.payload_span().end()
        );
    }

    #[test]
    fn a_large_first_read_opens_in_one_round() {
        let bytes = streaming_file(&[b"a", b"b"], 10);
        let (_, rounds) = open_in_rounds(&bytes, 65536);
        assert_eq!(rounds, 1);
    }

    #[test]
    fn a_changed_chunk_is_refused() {
        let bytes = streaming_file(&[b"abc", b"def"], 10);
        let (envelope, _) = open_in_rounds(&bytes, 65536);
        assert!(matches!(
            envelope.check_chunk(1, b"deF"),
            Err(Error::ChecksumMismatch { .. })
        ));
        assert!(envelope.check_chunk(1, b"de").is_err());
        assert!(envelope.decode_chunk(2, b"def").is_err());
    }

    #[test]
    fn a_file_without_chunks_is_read_whole() {
        let mut parts = EnvelopeParts::new(Format::Dataset, 1);
        parts.payload = Payload::compressed(Compression::None, b"rows").unwrap();
        let bytes = parts.to_bytes().unwrap();
        let opening = RangedEnvelope::open(
            &bytes[..8],
            &bytes[8..],
            bytes.len() as u64,
            Format::Dataset,
        );
        assert!(matches!(opening, Ok(Opening::NeedWholeFile { .. })));
        let wrong =
            RangedEnvelope::open(&bytes[..8], &bytes[8..], bytes.len() as u64, Format::Model);
        assert!(wrong.is_err());
    }
}
