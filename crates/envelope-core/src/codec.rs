//! The one reader and writer of the envelope family's fixed-width fields: every integer is
//! little-endian (docs/envelope.md §1), and every read is bounds-checked.
//!
//! The header, the chunk index, the encryption, signature and license blocks, key files and the
//! TRUENO tensor index all read through [`Reader`] and write through [`Writer`], so the byte order
//! and the "no read past the end" rule are written once. A read past the end returns `None`; each
//! caller turns that into the error that names its own section.
//!
//! ```
//! use envelope_core::codec::{Reader, Writer};
//!
//! let mut bytes = Vec::new();
//! Writer::new(&mut bytes).u8(2).u16(0x0304).u32(5).bytes(b"ok");
//! assert_eq!(bytes, [2, 4, 3, 5, 0, 0, 0, b'o', b'k']);
//!
//! let mut reader = Reader::new(&bytes);
//! assert_eq!(reader.u8(), Some(2));
//! assert_eq!(reader.u16(), Some(0x0304));
//! assert_eq!(reader.u32(), Some(5));
//! assert_eq!(reader.take(2), Some(&b"ok"[..]));
//! assert_eq!(reader.u8(), None); // past the end: nothing is consumed
//! assert!(reader.is_empty());
//! ```

use alloc::vec::Vec;

/// A bounds-checked little-endian reader over a byte slice.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    #[must_use]
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, at: 0 }
    }

    /// How many bytes have been read.
    #[must_use]
    pub fn position(&self) -> usize {
        self.at
    }

    /// The bytes not read yet.
    #[must_use]
    pub fn rest(&self) -> &'a [u8] {
        &self.bytes[self.at..]
    }

    /// Whether every byte has been read.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.at == self.bytes.len()
    }

    /// The next `n` bytes, or `None` (and nothing consumed) if fewer remain.
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let taken = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(taken)
    }

    /// The next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    /// The next byte.
    pub fn u8(&mut self) -> Option<u8> {
        self.array::<1>().map(|[byte]| byte)
    }

    /// The next little-endian `u16`.
    pub fn u16(&mut self) -> Option<u16> {
        self.array().map(u16::from_le_bytes)
    }

    /// The next little-endian `u32`.
    pub fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }

    /// The next little-endian `u64`.
    pub fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }
}

/// Appends little-endian fields to a byte vector.
#[derive(Debug)]
pub struct Writer<'a> {
    out: &'a mut Vec<u8>,
}

impl<'a> Writer<'a> {
    /// A writer appending to `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        Self { out }
    }

    /// Appends `bytes` as they are.
    pub fn bytes(&mut self, bytes: &[u8]) -> &mut Self {
        self.out.extend_from_slice(bytes);
        self
    }

    /// Appends one byte.
    pub fn u8(&mut self, value: u8) -> &mut Self {
        self.out.push(value);
        self
    }

    /// Appends a little-endian `u16`.
    pub fn u16(&mut self, value: u16) -> &mut Self {
        self.bytes(&value.to_le_bytes())
    }

    /// Appends a little-endian `u32`.
    pub fn u32(&mut self, value: u32) -> &mut Self {
        self.bytes(&value.to_le_bytes())
    }

    /// Appends a little-endian `u64`.
    pub fn u64(&mut self, value: u64) -> &mut Self {
        self.bytes(&value.to_le_bytes())
    }
}

/// Recomputes the CRC32 trailer (the last [`crate::CHECKSUM_LEN`] bytes) of a whole file whose
/// earlier bytes were changed in place (a signature block filled in after the file was laid out).
///
/// Files shorter than the trailer are left as they are.
pub fn rewrite_trailer(file: &mut [u8]) {
    if let Some(end) = file.len().checked_sub(crate::CHECKSUM_LEN) {
        let crc = crc32fast::hash(&file[..end]);
        file[end..].copy_from_slice(&crc.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn what_the_writer_writes_the_reader_reads(
            a in any::<u8>(), b in any::<u16>(), c in any::<u32>(), d in any::<u64>(),
            tail in proptest::collection::vec(any::<u8>(), 0..16),
        ) {
            let mut out = Vec::new();
            Writer::new(&mut out).u8(a).u16(b).u32(c).u64(d).bytes(&tail);
            prop_assert_eq!(out.len(), 15 + tail.len());
            let mut reader = Reader::new(&out);
            prop_assert_eq!(reader.u8(), Some(a));
            prop_assert_eq!(reader.u16(), Some(b));
            prop_assert_eq!(reader.u32(), Some(c));
            prop_assert_eq!(reader.u64(), Some(d));
            prop_assert_eq!(reader.position(), 15);
            prop_assert_eq!(reader.rest(), &tail[..]);
            prop_assert_eq!(reader.take(tail.len()), Some(&tail[..]));
            prop_assert!(reader.is_empty());
        }

        #[test]
        fn a_short_read_consumes_nothing(bytes in proptest::collection::vec(any::<u8>(), 0..8)) {
            let mut reader = Reader::new(&bytes);
            prop_assert_eq!(reader.u64(), None);
            prop_assert_eq!(reader.take(bytes.len() + 1), None);
            prop_assert_eq!(reader.take(usize::MAX), None);
            prop_assert_eq!(reader.position(), 0);
        }
    }

    #[test]
    fn little_endian_known_answers() {
        let mut reader = Reader::new(&[1, 0, 0, 0, 0, 0, 0, 0x80, 0xff, 0xfe]);
        assert_eq!(reader.u64(), Some(0x8000_0000_0000_0001));
        assert_eq!(reader.u16(), Some(0xfeff));
    }

    #[test]
    fn the_trailer_is_the_crc32_of_everything_before_it() {
        let mut file = b"hello world\0\0\0\0".to_vec();
        rewrite_trailer(&mut file);
        assert_eq!(&file[11..], &crc32fast::hash(b"hello world").to_le_bytes());
        let mut short = vec![1, 2, 3];
        rewrite_trailer(&mut short);
        assert_eq!(short, [1, 2, 3]);
    }
}
