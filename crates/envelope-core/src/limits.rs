//! The reader's resource policy: how much decoded data, and how much metadata, a reader accepts
//! from one file (docs/envelope.md §7 "Limits").
//!
//! Key decision: a file declares how large its payload and chunks are once decoded, and a
//! compressed stream can honestly produce that much: zstd turns a 48 KB file into 1.5 GB of zeros.
//! "Capped by the declared size" bounds nothing when the attacker declares the size, so the
//! reader decides instead. A compressed section may decode to at most
//! `max(expansion_floor, max_expansion × stored)` bytes, and never more than `max_decoded` (per
//! payload) or `max_decoded_chunk` (per chunk); the check is made on the declared sizes, before
//! any byte is allocated or decompressed. Stored (uncompressed) data is not limited here: it is
//! present in the file, whose size the caller already knows.
//!
//! The defaults let every file this workspace writes from ordinary data load (an all-zero tensor
//! of up to 256 MiB compresses past any ratio and still loads), while a few kilobytes can no
//! longer claim gigabytes. Users with larger legitimate inputs raise the limits explicitly
//! (`--max-decoded` and `--max-expansion` on the CLIs, [`Limits`] in the API).

use alloc::borrow::ToOwned;
use alloc::format;

use crate::error::{Error, Result};

/// Bytes in a mebibyte, for the defaults below.
const MIB: u64 = 1 << 20;
/// Bytes in a gibibyte.
const GIB: u64 = 1 << 30;

/// How much a reader accepts from one file. `Copy`, cheap to pass; [`Limits::default`] is the
/// policy of the CLIs and of the wasm32 build (smaller there: a wasm32 instance addresses 4 GiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Largest decoded size of a whole compressed payload (all chunks together).
    pub max_decoded: u64,
    /// Largest decoded size of one compressed chunk (a row group, a tensor).
    pub max_decoded_chunk: u64,
    /// Largest ratio of decoded to stored bytes of a compressed section beyond
    /// [`Limits::expansion_floor`].
    pub max_expansion: u64,
    /// Decoded sizes up to this are never refused for their ratio (sparse data compresses past
    /// any ratio, and small sections cost little).
    pub expansion_floor: u64,
    /// Largest metadata or schema section a reader decodes (MessagePack cards, tensor
    /// directories, Arrow schemas).
    pub max_metadata: u64,
}

impl Limits {
    /// The default policy on 64-bit native targets.
    #[cfg(not(target_arch = "wasm32"))]
    pub const DEFAULT: Self = Self {
        max_decoded: 64 * GIB,
        max_decoded_chunk: 4 * GIB,
        max_expansion: 1024,
        expansion_floor: 256 * MIB,
        max_metadata: 64 * MIB,
    };

    /// The default policy on wasm32 (4 GiB of address space in all).
    #[cfg(target_arch = "wasm32")]
    pub const DEFAULT: Self = Self {
        max_decoded: GIB,
        max_decoded_chunk: 512 * MIB,
        max_expansion: 1024,
        expansion_floor: 64 * MIB,
        max_metadata: 16 * MIB,
    };

    /// No limit at all (every size accepted; decoding still stops at the declared size).
    pub const UNLIMITED: Self = Self {
        max_decoded: u64::MAX,
        max_decoded_chunk: u64::MAX,
        max_expansion: u64::MAX,
        expansion_floor: u64::MAX,
        max_metadata: u64::MAX,
    };

    /// The largest size `stored` compressed bytes may decode to, by the ratio rule alone.
    #[must_use]
    pub fn expansion_allowance(&self, stored: u64) -> u64 {
        stored
            .saturating_mul(self.max_expansion)
            .max(self.expansion_floor)
    }

    /// Checks one compressed chunk (or a whole payload without chunks, as `chunk = None`) that
    /// declares `declared` decoded bytes from `stored` bytes.
    ///
    /// # Errors
    /// [`Error::LimitExceeded`] naming the limit.
    pub fn check_chunk(&self, chunk: Option<u64>, stored: u64, declared: u64) -> Result<()> {
        let (limit, what) = if chunk.is_some() {
            (self.max_decoded_chunk, LimitKind::ChunkSize)
        } else {
            (self.max_decoded, LimitKind::PayloadSize)
        };
        if declared > limit {
            return Err(Error::LimitExceeded(LimitExceeded {
                what,
                chunk,
                declared,
                limit,
            }));
        }
        let allowance = self.expansion_allowance(stored);
        if declared > allowance {
            return Err(Error::LimitExceeded(LimitExceeded {
                what: LimitKind::Expansion { stored },
                chunk,
                declared,
                limit: allowance,
            }));
        }
        Ok(())
    }

    /// Checks a whole compressed payload of `stored` bytes declaring `declared` decoded bytes.
    ///
    /// # Errors
    /// [`Error::LimitExceeded`].
    pub fn check_payload(&self, stored: u64, declared: u64) -> Result<()> {
        self.check_chunk(None, stored, declared)
    }

    /// Checks a metadata or schema section of `len` bytes.
    ///
    /// # Errors
    /// [`Error::LimitExceeded`].
    pub fn check_metadata(&self, len: u64) -> Result<()> {
        if len > self.max_metadata {
            return Err(Error::LimitExceeded(LimitExceeded {
                what: LimitKind::Metadata,
                chunk: None,
                declared: len,
                limit: self.max_metadata,
            }));
        }
        Ok(())
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Which limit a file exceeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LimitKind {
    /// [`Limits::max_decoded`].
    PayloadSize,
    /// [`Limits::max_decoded_chunk`].
    ChunkSize,
    /// [`Limits::max_expansion`] over `stored` compressed bytes.
    Expansion {
        /// The compressed size.
        stored: u64,
    },
    /// [`Limits::max_metadata`].
    Metadata,
}

/// A file that asks for more than the reader's [`Limits`] allow: what, where, how much.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LimitExceeded {
    /// The limit.
    pub what: LimitKind,
    /// The chunk, if one chunk exceeded it.
    pub chunk: Option<u64>,
    /// What the file declares.
    pub declared: u64,
    /// What the reader accepts.
    pub limit: u64,
}

impl core::fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let place = match self.chunk {
            Some(chunk) => format!("chunk {chunk}"),
            None => "the payload".to_owned(),
        };
        match self.what {
            LimitKind::PayloadSize | LimitKind::ChunkSize => write!(
                f,
                "{place} decodes to {} bytes, over the reader's limit of {} bytes (raise it with \
                 --max-decoded)",
                self.declared, self.limit
            ),
            LimitKind::Expansion { stored } => write!(
                f,
                "{place} declares {} decoded bytes from {stored} compressed bytes, more than the \
                 reader's limit of {} bytes for that size (raise it with --max-expansion)",
                self.declared, self.limit
            ),
            LimitKind::Metadata => write!(
                f,
                "a metadata section of {} bytes is over the reader's limit of {} bytes",
                self.declared, self.limit
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bomb_is_refused_before_any_byte_is_decoded() {
        let limits = Limits::DEFAULT;
        // 48 KB claiming 1.5 GB (zstd's ratio on zeros).
        let error = limits.check_payload(48_000, 1_500_000_000).unwrap_err();
        assert!(matches!(
            error,
            Error::LimitExceeded(LimitExceeded {
                what: LimitKind::Expansion { stored: 48_000 },
                ..
            })
        ));
        assert_eq!(error.signal(), crate::Signal::Usage);
        // 2 MB claiming a 64 GiB chunk.
        assert!(limits.check_chunk(Some(3), 2_000_000, 64 * GIB).is_err());
    }

    #[test]
    fn ordinary_and_sparse_data_load() {
        let limits = Limits::DEFAULT;
        // 10x compression of 3 GiB.
        limits.check_payload(300 * MIB, 3 * GIB).unwrap();
        // An all-zero 256 MiB tensor that compressed to a few kilobytes.
        limits.check_chunk(Some(0), 9_000, 256 * MIB).unwrap();
        Limits::UNLIMITED.check_chunk(Some(0), 1, u64::MAX).unwrap();
    }

    #[test]
    fn metadata_is_bounded() {
        assert!(Limits::DEFAULT.check_metadata(64 * MIB).is_ok());
        assert!(Limits::DEFAULT.check_metadata(64 * MIB + 1).is_err());
    }
}
