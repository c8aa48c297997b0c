//! The binary structures of 002 §4 and §5: the 28-byte global header (`>8sIQQ`) and the 32-byte
//! chunk header (`>4sIQQII`), big-endian, plus the format's named constants.

use crate::error::{Error, Result};

/// `MAGIC = b"FOLDv1\0\0"` (002 §2).
pub const MAGIC: [u8; 8] = *b"FOLDv1\0\0";
/// Size of the global header, `struct.calcsize(">8sIQQ")` (002 §4).
pub const GLOBAL_HEADER_LEN: u32 = 28;
/// Size of a chunk header, `struct.calcsize(">4sIQQII")` (002 §5).
pub const CHUNK_HEADER_LEN: u32 = 32;
/// `FLAG_COMP_NONE` (002 §2).
pub const FLAG_COMP_NONE: u32 = 0;
/// `FLAG_COMP_ZSTD` (002 §2).
pub const FLAG_COMP_ZSTD: u32 = 1;
/// `MAX_INDEX_SIZE` (002 §9.1): 100 MiB.
pub const MAX_INDEX_SIZE: u64 = 100 * 1024 * 1024;
/// `MAX_CHUNK_SIZE`, pyfolds' value (2 GiB; 002 §9.2 proposes 1 GiB): the default bound on
/// `comp_len`, `uncomp_len` and `ecc_len`, overridable with [`crate::ReadOptions`].
pub const MAX_CHUNK_SIZE: u64 = 2 * 1024 * 1024 * 1024;
/// The index `format` value.
pub const FORMAT_NAME: &str = "fold";
/// The index `version` this crate writes (pyfolds 1.0.2).
pub const FORMAT_VERSION: &str = "1.2.0";
/// Versions pyfolds reads without a warning.
pub const SUPPORTED_VERSIONS: [&str; 3] = ["1.0.0", "1.1.0", "1.2.0"];
/// pyfolds' zstd level.
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;

/// The global header (002 §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GlobalHeader {
    /// Absolute offset of the JSON index.
    pub index_off: u64,
    /// Length of the JSON index in bytes.
    pub index_len: u64,
}

impl GlobalHeader {
    /// Parses and validates the 28 header bytes (002 §8.1: magic, header_len, index_off,
    /// index_len against `MAX_INDEX_SIZE`).
    ///
    /// # Errors
    /// [`Error::BadMagic`], [`Error::BadHeaderLen`], [`Error::IndexInsideHeader`],
    /// [`Error::IndexTooLarge`].
    pub fn parse(b: &[u8; 28]) -> Result<Self> {
        let magic: [u8; 8] = take(b, 0);
        if magic != MAGIC {
            return Err(Error::BadMagic { found: magic });
        }
        let header_len = u32::from_be_bytes(take(b, 8));
        if header_len != GLOBAL_HEADER_LEN {
            return Err(Error::BadHeaderLen {
                found: header_len,
                expected: GLOBAL_HEADER_LEN,
            });
        }
        let index_off = u64::from_be_bytes(take(b, 12));
        let index_len = u64::from_be_bytes(take(b, 20));
        if index_off < u64::from(header_len) {
            return Err(Error::IndexInsideHeader {
                index_off,
                header_len: u64::from(header_len),
            });
        }
        if index_len > MAX_INDEX_SIZE {
            return Err(Error::IndexTooLarge {
                index_len,
                max: MAX_INDEX_SIZE,
            });
        }
        Ok(Self {
            index_off,
            index_len,
        })
    }

    /// The 28 bytes.
    #[must_use]
    pub fn to_bytes(self) -> [u8; 28] {
        let mut b = [0_u8; 28];
        b[..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&GLOBAL_HEADER_LEN.to_be_bytes());
        b[12..20].copy_from_slice(&self.index_off.to_be_bytes());
        b[20..28].copy_from_slice(&self.index_len.to_be_bytes());
        b
    }
}

/// A chunk header (002 §5). Parsing does not validate: the reader compares every field with the
/// index entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkHeader {
    /// `ctype4`.
    pub ctype: [u8; 4],
    /// Compression flags.
    pub flags: u32,
    /// Length after decompression.
    pub uncomp_len: u64,
    /// Length of the stored payload.
    pub comp_len: u64,
    /// CRC32C of the stored payload.
    pub crc32c: u32,
    /// Length of the ECC bytes.
    pub ecc_len: u32,
}

impl ChunkHeader {
    /// Reads the 32 bytes.
    #[must_use]
    pub fn parse(b: &[u8; 32]) -> Self {
        Self {
            ctype: take(b, 0),
            flags: u32::from_be_bytes(take(b, 4)),
            uncomp_len: u64::from_be_bytes(take(b, 8)),
            comp_len: u64::from_be_bytes(take(b, 16)),
            crc32c: u32::from_be_bytes(take(b, 24)),
            ecc_len: u32::from_be_bytes(take(b, 28)),
        }
    }

    /// The 32 bytes.
    #[must_use]
    pub fn to_bytes(self) -> [u8; 32] {
        let mut b = [0_u8; 32];
        b[..4].copy_from_slice(&self.ctype);
        b[4..8].copy_from_slice(&self.flags.to_be_bytes());
        b[8..16].copy_from_slice(&self.uncomp_len.to_be_bytes());
        b[16..24].copy_from_slice(&self.comp_len.to_be_bytes());
        b[24..28].copy_from_slice(&self.crc32c.to_be_bytes());
        b[28..32].copy_from_slice(&self.ecc_len.to_be_bytes());
        b
    }
}

/// A fixed-size array from `b[at..at + N]`; `at + N <= b.len()` holds at every call site.
fn take<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [0_u8; N];
    if let Some(src) = b.get(at..at + N) {
        out.copy_from_slice(src);
    }
    out
}

/// Compression of a chunk payload (`flags`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Flag 0: stored as is.
    None,
    /// Flag 1: one zstd frame (pyfolds: level 3, content size in the frame header).
    #[default]
    Zstd,
}

impl Compression {
    /// The flag value.
    #[must_use]
    pub fn flag(self) -> u32 {
        match self {
            Self::None => FLAG_COMP_NONE,
            Self::Zstd => FLAG_COMP_ZSTD,
        }
    }

    /// The compression of a flag value; `None` for reserved values.
    #[must_use]
    pub fn from_flag(flag: u64) -> Option<Self> {
        match flag {
            0 => Some(Self::None),
            1 => Some(Self::Zstd),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_header_round_trips_and_is_big_endian() {
        let h = GlobalHeader {
            index_off: 0x0102,
            index_len: 7,
        };
        let b = h.to_bytes();
        assert_eq!(&b[8..12], &[0, 0, 0, 28]);
        assert_eq!(b[19], 2);
        assert_eq!(GlobalHeader::parse(&b).unwrap(), h);
    }

    #[test]
    fn fail_header_rules_of_8_1() {
        let good = GlobalHeader {
            index_off: 28,
            index_len: 2,
        }
        .to_bytes();
        let mut b = good;
        b[0] = b'X';
        assert!(matches!(
            GlobalHeader::parse(&b),
            Err(Error::BadMagic { .. })
        ));
        let mut b = good;
        b[11] = 29;
        assert!(matches!(
            GlobalHeader::parse(&b),
            Err(Error::BadHeaderLen { found: 29, .. })
        ));
        let mut b = good;
        b[19] = 27;
        assert!(matches!(
            GlobalHeader::parse(&b),
            Err(Error::IndexInsideHeader { .. })
        ));
        let mut b = good;
        b[20..28].copy_from_slice(&(MAX_INDEX_SIZE + 1).to_be_bytes());
        assert!(matches!(
            GlobalHeader::parse(&b),
            Err(Error::IndexTooLarge { .. })
        ));
    }
}
