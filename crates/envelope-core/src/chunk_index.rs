//! The chunk index of STREAMING files (000 §7.1), and the large-file path.
//!
//! The payload of a STREAMING file is a sequence of independently compressed (and, if encrypted,
//! independently authenticated) chunks. The index lists them with u64 offsets and sizes, so a
//! reader can jump to one chunk without touching the others, and so a payload larger than the
//! header's u32 fields can describe (the 4 GiB limit) still has exact sizes: the header then holds
//! [`SIZE_IN_CHUNK_INDEX`](crate::SIZE_IN_CHUNK_INDEX) and the index's totals are authoritative.
//!
//! Each chunk also carries an item range (`first_item`, `item_count`): rows for `.ald`, tensors
//! for `.apr`. Item ranges are contiguous, like byte ranges, so the item a caller wants is found by
//! binary search.
//!
//! Checksums let a reader open a STREAMING file without reading all of it
//! ([`Envelope::parse_lazy`](crate::Envelope::parse_lazy)): each entry carries the CRC-32C
//! (Castagnoli) of its chunk's stored bytes, and the body ends with `prefix_crc32c`, the CRC-32C of
//! every file byte from the header to just before that field (with the SIGNED and LICENSED flags cleared, because those
//! blocks are appended after the file is written, as for the encryption's associated data). An
//! encrypted file's entries hold zero instead: AES-GCM authenticates each chunk, and the ciphertext
//! cannot be known before the index it authenticates. CRC-32C rather than the trailer's CRC-32:
//! with the same polynomial, a file cut right after `prefix_crc32c` would end in a valid trailer.
//!
//! Body layout (little-endian): `payload_size u64 | uncompressed_size u64 | chunk_count u32`, then
//! `chunk_count` entries of five u64 and a u32: `stored_offset`, `stored_size`,
//! `uncompressed_size`, `first_item`, `item_count`, `stored_crc32c`; then `prefix_crc32c u32`.

use alloc::vec::Vec;

use crate::codec::{Reader, Writer};
use crate::error::{FormatError, Result, Section};
use crate::header::feed_with_appended_flags_cleared;

/// CRC-32C of `prefix` (file bytes from offset 0) with the SIGNED and LICENSED bits of the flags
/// byte cleared: the value of `prefix_crc32c`.
pub(crate) fn masked_prefix_crc32c(prefix: &[u8]) -> u32 {
    let mut crc = 0;
    feed_with_appended_flags_cleared(prefix, |piece| {
        crc = crate::castagnoli::crc32c_append(crc, piece)
    });
    crc
}

/// The first `(what, expected, found)` of `checks` whose two numbers differ, as `error` makes it.
fn all_equal<const N: usize>(
    checks: [(&'static str, u64, u64); N],
    error: impl Fn(&'static str, u64, u64) -> FormatError,
) -> Result<()> {
    match checks
        .into_iter()
        .find(|(_, expected, found)| expected != found)
    {
        Some((what, expected, found)) => Err(error(what, expected, found).into()),
        None => Ok(()),
    }
}

/// Bytes before the first entry.
pub const CHUNK_INDEX_PREFIX_LEN: usize = 20;

/// Bytes per entry.
pub const CHUNK_ENTRY_LEN: usize = 44;

/// Bytes after the last entry (`prefix_crc32c`).
pub const CHUNK_INDEX_SUFFIX_LEN: usize = 4;

/// One chunk of a STREAMING payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChunkEntry {
    /// Offset of the chunk's stored bytes from the start of the payload section.
    pub stored_offset: u64,
    /// Bytes stored (compressed and/or encrypted).
    pub stored_size: u64,
    /// Bytes after decryption and decompression.
    pub uncompressed_size: u64,
    /// First item (row or tensor) in the chunk.
    pub first_item: u64,
    /// Number of items in the chunk.
    pub item_count: u64,
    /// CRC-32C of the chunk's stored bytes; zero in an encrypted file.
    pub stored_crc32c: u32,
}

impl ChunkEntry {
    /// The stored byte range relative to the payload start.
    #[must_use]
    pub fn stored_range(&self) -> core::ops::Range<u64> {
        // Contiguity was checked at parse or build time, so this cannot overflow.
        self.stored_offset..self.stored_offset + self.stored_size
    }
}

/// A validated chunk index: contiguous byte and item ranges, consistent totals.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChunkIndex {
    entries: Vec<ChunkEntry>,
    payload_size: u64,
    uncompressed_size: u64,
    item_count: u64,
    prefix_crc32c: u32,
}

/// The sizes of one chunk as a writer knows them: `(stored_size, uncompressed_size, item_count)`.
pub type ChunkSizes = (u64, u64, u64);

impl ChunkIndex {
    /// Builds the index of consecutive chunks from their sizes, computing offsets and totals. The
    /// chunk checksums are zero; writers fill them from the stored bytes (see
    /// [`ChunkIndex::set_stored_crc32c`]).
    ///
    /// # Errors
    /// `InvalidFormat` if the totals overflow a u64.
    pub fn from_sizes(sizes: impl IntoIterator<Item = ChunkSizes>) -> Result<Self> {
        let mut index = Self::default();
        for (stored_size, uncompressed_size, item_count) in sizes {
            let entry = ChunkEntry {
                stored_offset: index.payload_size,
                stored_size,
                uncompressed_size,
                first_item: index.item_count,
                item_count,
                stored_crc32c: 0,
            };
            index.push(entry)?;
        }
        Ok(index)
    }

    fn push(&mut self, entry: ChunkEntry) -> Result<()> {
        let overflow = |what| FormatError::SizeMismatch {
            what,
            declared: u64::MAX,
            found: u64::MAX,
        };
        self.payload_size = self
            .payload_size
            .checked_add(entry.stored_size)
            .ok_or_else(|| overflow("chunk index payload_size overflows u64"))?;
        self.uncompressed_size = self
            .uncompressed_size
            .checked_add(entry.uncompressed_size)
            .ok_or_else(|| overflow("chunk index uncompressed_size overflows u64"))?;
        self.item_count = self
            .item_count
            .checked_add(entry.item_count)
            .ok_or_else(|| overflow("chunk index item count overflows u64"))?;
        self.entries.push(entry);
        Ok(())
    }

    /// Parses and validates an index body.
    ///
    /// # Errors
    /// `InvalidFormat` if the body's length does not match its chunk count, a chunk does not start
    /// where the previous one ended (bytes or items), or the totals disagree with the entries.
    pub fn parse(body: &[u8]) -> Result<Self> {
        let mut cursor = Cursor(Reader::new(body));
        let declared_payload = cursor.u64()?;
        let declared_uncompressed = cursor.u64()?;
        let count = cursor.u32()?;
        // The count is untrusted: compare it with the bytes present before allocating.
        let needed = (CHUNK_INDEX_PREFIX_LEN + CHUNK_INDEX_SUFFIX_LEN) as u64
            + u64::from(count) * CHUNK_ENTRY_LEN as u64;
        if needed != body.len() as u64 {
            return Err(FormatError::SizeMismatch {
                what: "chunk index length for its chunk_count",
                declared: needed,
                found: body.len() as u64,
            }
            .into());
        }
        let mut index = Self {
            entries: Vec::with_capacity(count as usize),
            ..Self::default()
        };
        for chunk in 0..u64::from(count) {
            let entry = ChunkEntry {
                stored_offset: cursor.u64()?,
                stored_size: cursor.u64()?,
                uncompressed_size: cursor.u64()?,
                first_item: cursor.u64()?,
                item_count: cursor.u64()?,
                stored_crc32c: cursor.u32()?,
            };
            let contiguity = [
                ("stored_offset", index.payload_size, entry.stored_offset),
                ("first_item", index.item_count, entry.first_item),
            ];
            all_equal(contiguity, |what, expected, found| {
                FormatError::ChunkNotContiguous {
                    chunk,
                    what,
                    expected,
                    found,
                }
            })?;
            index.push(entry)?;
        }
        index.prefix_crc32c = cursor.u32()?;
        let totals = [
            (
                "chunk index payload_size",
                declared_payload,
                index.payload_size,
            ),
            (
                "chunk index uncompressed_size",
                declared_uncompressed,
                index.uncompressed_size,
            ),
        ];
        all_equal(totals, |what, declared, found| FormatError::SizeMismatch {
            what,
            declared,
            found,
        })?;
        Ok(index)
    }

    /// The encoded body.
    ///
    /// # Errors
    /// `Usage` if there are more than `u32::MAX` chunks.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let count =
            u32::try_from(self.entries.len()).map_err(|_| crate::Error::SectionTooLarge {
                section: Section::ChunkIndex,
                size: self.entries.len() as u64,
                max: u64::from(u32::MAX),
            })?;
        let mut out = Vec::with_capacity(self.encoded_len());
        let mut writer = Writer::new(&mut out);
        writer
            .u64(self.payload_size)
            .u64(self.uncompressed_size)
            .u32(count);
        for entry in &self.entries {
            writer
                .u64(entry.stored_offset)
                .u64(entry.stored_size)
                .u64(entry.uncompressed_size)
                .u64(entry.first_item)
                .u64(entry.item_count)
                .u32(entry.stored_crc32c);
        }
        writer.u32(self.prefix_crc32c);
        Ok(out)
    }

    /// Length of the encoded body.
    #[must_use]
    pub fn encoded_len(&self) -> usize {
        CHUNK_INDEX_PREFIX_LEN + self.entries.len() * CHUNK_ENTRY_LEN + CHUNK_INDEX_SUFFIX_LEN
    }

    /// Sets the CRC-32C of chunk `chunk`'s stored bytes.
    ///
    /// # Errors
    /// `InvalidFormat` (`NoSuchChunk`) if there is no such chunk.
    pub fn set_stored_crc32c(&mut self, chunk: usize, crc: u32) -> Result<()> {
        let count = self.entries.len() as u64;
        let entry = self
            .entries
            .get_mut(chunk)
            .ok_or(FormatError::NoSuchChunk {
                chunk: chunk as u64,
                count,
            })?;
        entry.stored_crc32c = crc;
        Ok(())
    }

    /// The `prefix_crc32c` field as parsed (writers compute it while writing the file).
    #[must_use]
    pub fn prefix_crc32c(&self) -> u32 {
        self.prefix_crc32c
    }

    /// The chunks in order.
    #[must_use]
    pub fn entries(&self) -> &[ChunkEntry] {
        &self.entries
    }

    /// Number of chunks.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no chunks.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Total stored bytes.
    #[must_use]
    pub fn payload_size(&self) -> u64 {
        self.payload_size
    }

    /// Total decoded bytes.
    #[must_use]
    pub fn uncompressed_size(&self) -> u64 {
        self.uncompressed_size
    }

    /// Total items.
    #[must_use]
    pub fn item_count(&self) -> u64 {
        self.item_count
    }

    /// The chunk holding `item`, if any (binary search over the contiguous item ranges).
    #[must_use]
    pub fn chunk_of_item(&self, item: u64) -> Option<usize> {
        if item >= self.item_count {
            return None;
        }
        // Chunks with zero items share a first_item with their successor; partition_point finds
        // the first chunk whose range ends after `item`, which is the one that holds it.
        let position = self
            .entries
            .partition_point(|entry| entry.first_item + entry.item_count <= item);
        (position < self.entries.len()).then_some(position)
    }
}

/// The index body's fields, read through the shared codec; a field past the end of the body is
/// `Truncated` at its offset.
struct Cursor<'a>(Reader<'a>);

impl<'a> Cursor<'a> {
    fn field<T>(
        &mut self,
        len: usize,
        read: impl FnOnce(&mut Reader<'a>) -> Option<T>,
    ) -> Result<T> {
        let (at, left) = (self.0.position(), self.0.rest().len());
        read(&mut self.0).ok_or_else(|| {
            crate::Error::truncated(Section::ChunkIndex, at as u64, len as u64, left as u64)
        })
    }

    fn u64(&mut self) -> Result<u64> {
        self.field(8, Reader::u64)
    }

    fn u32(&mut self) -> Result<u32> {
        self.field(4, Reader::u32)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::Error;

    proptest! {
        #[test]
        fn chunk_index_encode_parse_is_identity(
            sizes in prop::collection::vec((0u64..1 << 40, 0u64..1 << 40, 0u64..1 << 20), 0..64)
        ) {
            let index = ChunkIndex::from_sizes(sizes.clone()).unwrap();
            let body = index.encode().unwrap();
            prop_assert_eq!(body.len(), index.encoded_len());
            let parsed = ChunkIndex::parse(&body).unwrap();
            prop_assert_eq!(&parsed, &index);
            prop_assert_eq!(parsed.payload_size(), sizes.iter().map(|s| s.0).sum::<u64>());
            for item in (0..index.item_count()).step_by(97) {
                let chunk = index.chunk_of_item(item).unwrap();
                let entry = index.entries()[chunk];
                prop_assert!(entry.first_item <= item && item < entry.first_item + entry.item_count);
            }
            prop_assert_eq!(index.chunk_of_item(index.item_count()), None);
        }

        #[test]
        fn arbitrary_index_bodies_never_panic(body in prop::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(index) = ChunkIndex::parse(&body) {
                prop_assert_eq!(index.encode().unwrap(), body);
            }
        }
    }

    #[test]
    fn gap_between_chunks_is_refused() {
        let index = ChunkIndex::from_sizes([(10, 10, 1), (5, 5, 1)]).unwrap();
        let mut body = index.encode().unwrap();
        // Second entry's stored_offset: prefix + one entry.
        let at = CHUNK_INDEX_PREFIX_LEN + CHUNK_ENTRY_LEN;
        body[at..at + 8].copy_from_slice(&11u64.to_le_bytes());
        assert!(matches!(
            ChunkIndex::parse(&body),
            Err(Error::InvalidFormat(FormatError::ChunkNotContiguous {
                chunk: 1,
                expected: 10,
                found: 11,
                ..
            }))
        ));
    }

    #[test]
    fn chunk_count_larger_than_the_body_is_refused_before_allocating() {
        let mut body = ChunkIndex::default().encode().unwrap();
        body[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(body.len(), 24);
        assert!(matches!(
            ChunkIndex::parse(&body),
            Err(Error::InvalidFormat(FormatError::SizeMismatch { .. }))
        ));
    }

    #[test]
    fn empty_chunks_do_not_hide_items() {
        let index = ChunkIndex::from_sizes([(1, 1, 0), (1, 1, 3), (1, 1, 0), (1, 1, 2)]).unwrap();
        assert_eq!(index.chunk_of_item(0), Some(1));
        assert_eq!(index.chunk_of_item(2), Some(1));
        assert_eq!(index.chunk_of_item(3), Some(3));
        assert_eq!(index.chunk_of_item(5), None);
    }
}
