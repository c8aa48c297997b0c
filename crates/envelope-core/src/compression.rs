//! Payload compression and bounded decompression (000 §3.3, 001 §6.1).
//!
//! Key decision: decompression is driven by the size the file declares. Output grows only as the
//! stream actually produces bytes, never by pre-allocating an untrusted declared size in one go,
//! and a stream that would produce more than declared is stopped and refused
//! ([`DecompressionFailure::TooLarge`]): a decompression bomb is an error, not an out-of-memory.
//!
//! Backends: natively, zstd through libzstd (the `zstd` crate) and LZ4 through `lz4_flex`. On
//! wasm32, where no C may be linked, zstd goes through the pure-Rust `ruzstd`. Both write standard
//! single zstd frames, so a file written on one side loads on the other. ruzstd implements only its
//! fastest encoder level, so a wasm32 writer produces larger (still valid) frames for both zstd ids;
//! the id records the level the writer asked for, and readers accept any valid frame.

use std::borrow::Cow;
#[cfg(feature = "format-compression")]
use std::io::Read;

#[cfg(feature = "format-compression")]
use crate::error::{DecompressionFailure, FormatError};
use crate::error::{Error, Result, Section};
use crate::header::Compression;

/// zstd level for [`Compression::ZstdL3`].
pub const ZSTD_STANDARD_LEVEL: i32 = 3;
/// zstd level for [`Compression::ZstdL19`].
pub const ZSTD_ARCHIVAL_LEVEL: i32 = 19;
/// Largest zstd window a reader accepts (2^27 = 128 MiB), which bounds decoder memory. libzstd
/// never uses more than 8 MiB at level 19 for one frame written by this crate.
pub const ZSTD_MAX_WINDOW_LOG: u32 = 27;

#[cfg(feature = "format-compression")]
/// The first allocation for decompressed output is at most this many times the compressed size
/// (and never more than the declared size); beyond it the buffer grows as bytes arrive.
const INITIAL_EXPANSION: usize = 16;

/// Compresses `data` with `compression`.
///
/// # Errors
/// `Usage` if the build lacks the `format-compression` feature and `compression` is not `None`.
pub fn compress(compression: Compression, data: &[u8]) -> Result<Cow<'_, [u8]>> {
    match compression {
        Compression::None => Ok(Cow::Borrowed(data)),
        #[cfg(feature = "format-compression")]
        Compression::ZstdL3 => backend::zstd_compress(data, ZSTD_STANDARD_LEVEL).map(Cow::Owned),
        #[cfg(feature = "format-compression")]
        Compression::ZstdL19 => backend::zstd_compress(data, ZSTD_ARCHIVAL_LEVEL).map(Cow::Owned),
        #[cfg(feature = "format-compression")]
        Compression::Lz4 => lz4_compress(data).map(Cow::Owned),
        #[cfg(not(feature = "format-compression"))]
        _ => Err(disabled()),
    }
}

/// Decompresses `data`, which must decode to exactly `declared_len` bytes. `section` names where
/// the bytes came from, for the error.
///
/// # Errors
/// `InvalidFormat` ([`FormatError::Decompression`]) for a corrupt stream, trailing bytes after the
/// zstd frame, or any size other than `declared_len`; `Usage` if the build lacks the
/// `format-compression` feature.
pub fn decompress(
    compression: Compression,
    data: &[u8],
    declared_len: u64,
    section: Section,
) -> Result<Cow<'_, [u8]>> {
    match compression {
        Compression::None => {
            if data.len() as u64 != declared_len {
                return Err(crate::FormatError::SizeMismatch {
                    what: "uncompressed section length",
                    declared: declared_len,
                    found: data.len() as u64,
                }
                .into());
            }
            Ok(Cow::Borrowed(data))
        }
        #[cfg(feature = "format-compression")]
        Compression::ZstdL3 | Compression::ZstdL19 => backend::zstd_decompress(data, declared_len)
            .map_err(|failure| decompression_error(section, compression, failure))
            .map(Cow::Owned),
        #[cfg(feature = "format-compression")]
        Compression::Lz4 => {
            let decoder = lz4_flex::frame::FrameDecoder::new(data);
            read_bounded(decoder, data.len(), declared_len)
                .map_err(|failure| decompression_error(section, compression, failure))
                .map(Cow::Owned)
        }
        #[cfg(not(feature = "format-compression"))]
        _ => {
            let _ = section;
            Err(disabled())
        }
    }
}

#[cfg(not(feature = "format-compression"))]
fn disabled() -> Error {
    Error::FeatureDisabled {
        feature: "format-compression",
        what: "zstd or LZ4 payloads",
    }
}

#[cfg(feature = "format-compression")]
fn decompression_error(
    section: Section,
    compression: Compression,
    failure: DecompressionFailure,
) -> Error {
    FormatError::Decompression {
        section,
        compression,
        failure,
    }
    .into()
}

/// Reads `decoder` to its end, refusing more than `declared_len` bytes and anything but exactly
/// `declared_len`.
#[cfg(feature = "format-compression")]
fn read_bounded(
    decoder: impl Read,
    compressed_len: usize,
    declared_len: u64,
) -> Result<Vec<u8>, DecompressionFailure> {
    let initial = compressed_len
        .saturating_mul(INITIAL_EXPANSION)
        .saturating_add(4096);
    let capacity = usize::try_from(declared_len).map_or(initial, |declared| declared.min(initial));
    let mut out = Vec::with_capacity(capacity);
    // Ask for one byte more than declared: getting it proves the stream is too large.
    decoder
        .take(declared_len.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|_| DecompressionFailure::Corrupt)?;
    let actual = out.len() as u64;
    if actual > declared_len {
        return Err(DecompressionFailure::TooLarge {
            declared: declared_len,
        });
    }
    if actual < declared_len {
        return Err(DecompressionFailure::TooSmall {
            declared: declared_len,
            actual,
        });
    }
    Ok(out)
}

#[cfg(feature = "format-compression")]
fn lz4_compress(data: &[u8]) -> Result<Vec<u8>> {
    use std::io::Write;
    // The frame records the content size, so independent readers (e.g. Python's lz4.frame) can
    // size their output; block checksums are off because the envelope's CRC32 covers the bytes.
    let info = lz4_flex::frame::FrameInfo::new().content_size(Some(data.len() as u64));
    let mut encoder = lz4_flex::frame::FrameEncoder::with_frame_info(
        info,
        Vec::with_capacity(data.len() / 2 + 64),
    );
    encoder.write_all(data)?;
    encoder
        .finish()
        .map_err(|error| Error::Io(std::io::Error::other(error)))
}

#[cfg(all(feature = "format-compression", not(target_arch = "wasm32")))]
mod backend {
    //! zstd through libzstd.
    use super::{DecompressionFailure, read_bounded};
    use crate::error::Result;

    pub(super) fn zstd_compress(data: &[u8], level: i32) -> Result<Vec<u8>> {
        // `bulk` writes a single frame that records its content size.
        Ok(zstd::bulk::compress(data, level)?)
    }

    pub(super) fn zstd_decompress(
        data: &[u8],
        declared_len: u64,
    ) -> Result<Vec<u8>, DecompressionFailure> {
        // The format allows exactly one frame (ruzstd, the wasm32 decoder, reads only one).
        let frame_len = zstd::zstd_safe::find_frame_compressed_size(data)
            .map_err(|_| DecompressionFailure::Corrupt)?;
        if frame_len != data.len() {
            return Err(DecompressionFailure::TrailingData {
                extra: (data.len() - frame_len) as u64,
            });
        }
        let mut decoder = zstd::stream::read::Decoder::with_buffer(data)
            .map_err(|_| DecompressionFailure::Corrupt)?
            .single_frame();
        decoder
            .window_log_max(super::ZSTD_MAX_WINDOW_LOG)
            .map_err(|_| DecompressionFailure::Corrupt)?;
        read_bounded(decoder, data.len(), declared_len)
    }
}

#[cfg(all(feature = "format-compression", target_arch = "wasm32"))]
mod backend {
    //! zstd through the pure-Rust ruzstd (no C on wasm32).
    use super::{DecompressionFailure, read_bounded};
    use crate::error::Result;

    pub(super) fn zstd_compress(data: &[u8], _level: i32) -> Result<Vec<u8>> {
        // ruzstd implements only its fastest level; the frame is standard zstd all the same.
        Ok(ruzstd::encoding::compress_to_vec(
            data,
            ruzstd::encoding::CompressionLevel::Fastest,
        ))
    }

    pub(super) fn zstd_decompress(
        data: &[u8],
        declared_len: u64,
    ) -> Result<Vec<u8>, DecompressionFailure> {
        let mut rest = data;
        let window = 1u64 << super::ZSTD_MAX_WINDOW_LOG;
        let decoder =
            ruzstd::decoding::StreamingDecoder::new_with_max_window_size(&mut rest, window)
                .map_err(|_| DecompressionFailure::Corrupt)?;
        let out = read_bounded(decoder, data.len(), declared_len)?;
        // The decoder stops at the end of its frame: anything left over is a second frame or junk.
        if !rest.is_empty() {
            return Err(DecompressionFailure::TrailingData {
                extra: rest.len() as u64,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::error::FormatError;

    #[allow(
        clippy::cast_possible_truncation,
        reason = "test data wraps on purpose"
    )]
    fn sample(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i % 251) as u8 ^ (i / 1000) as u8)
            .collect()
    }

    proptest! {
        #[test]
        fn compress_decompress_is_identity(
            data in prop::collection::vec(any::<u8>(), 0..4096),
            compression in prop::sample::select(Compression::ALL.to_vec()),
        ) {
            let packed = compress(compression, &data).unwrap();
            let unpacked = decompress(compression, &packed, data.len() as u64, Section::Payload).unwrap();
            prop_assert_eq!(&*unpacked, &data[..]);
        }

        #[test]
        fn arbitrary_compressed_bytes_never_panic(
            data in prop::collection::vec(any::<u8>(), 0..512),
            declared in 0u64..1 << 20,
            compression in prop::sample::select(Compression::ALL.to_vec()),
        ) {
            if let Ok(out) = decompress(compression, &data, declared, Section::Payload) {
                prop_assert_eq!(out.len() as u64, declared);
            }
        }
    }

    #[test]
    fn decompression_bomb_is_refused_at_the_declared_size() {
        let zeros = vec![0u8; 64 << 20];
        for compression in [Compression::ZstdL3, Compression::Lz4] {
            let packed = compress(compression, &zeros).unwrap();
            assert!(packed.len() < 1 << 20, "{compression}: {}", packed.len());
            let error = decompress(compression, &packed, 1000, Section::Payload).unwrap_err();
            assert!(
                matches!(
                    error,
                    Error::InvalidFormat(FormatError::Decompression {
                        failure: DecompressionFailure::TooLarge { declared: 1000 },
                        ..
                    })
                ),
                "{compression}: {error}"
            );
        }
    }

    #[test]
    fn declared_size_larger_than_the_stream_is_refused_without_allocating_it() {
        let packed = compress(Compression::ZstdL3, b"hello").unwrap();
        // Declaring 1 TiB must not allocate 1 TiB: the result is a TooSmall error.
        let error =
            decompress(Compression::ZstdL3, &packed, 1 << 40, Section::Payload).unwrap_err();
        assert!(matches!(
            error,
            Error::InvalidFormat(FormatError::Decompression {
                failure: DecompressionFailure::TooSmall { actual: 5, .. },
                ..
            })
        ));
    }

    #[test]
    fn bytes_after_the_zstd_frame_are_refused() {
        let mut packed = compress(Compression::ZstdL3, b"hello")
            .unwrap()
            .into_owned();
        let second = compress(Compression::ZstdL3, b"world").unwrap();
        packed.extend_from_slice(&second);
        let error = decompress(Compression::ZstdL3, &packed, 10, Section::Payload).unwrap_err();
        assert!(matches!(
            error,
            Error::InvalidFormat(FormatError::Decompression {
                failure: DecompressionFailure::TrailingData { .. },
                ..
            })
        ));
    }

    /// The wasm32 build writes zstd with ruzstd and reads with ruzstd; native uses libzstd. Each
    /// must read the other's frames.
    #[test]
    fn ruzstd_and_libzstd_read_each_others_frames() {
        let data = sample(3 << 20);
        let from_ruzstd = ruzstd::encoding::compress_to_vec(
            &data[..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        let out = decompress(
            Compression::ZstdL3,
            &from_ruzstd,
            data.len() as u64,
            Section::Payload,
        )
        .unwrap();
        assert_eq!(&*out, &data[..]);

        for compression in [Compression::ZstdL3, Compression::ZstdL19] {
            let from_libzstd = compress(compression, &data).unwrap();
            let mut decoder = ruzstd::decoding::StreamingDecoder::new(&from_libzstd[..]).unwrap();
            let mut out = Vec::new();
            std::io::Read::read_to_end(&mut decoder, &mut out).unwrap();
            assert_eq!(out, data);
        }
    }

    #[test]
    fn uncompressed_data_is_borrowed_and_length_checked() {
        let data = sample(100);
        assert!(matches!(
            compress(Compression::None, &data).unwrap(),
            Cow::Borrowed(_)
        ));
        assert!(matches!(
            decompress(Compression::None, &data, 100, Section::Payload).unwrap(),
            Cow::Borrowed(_)
        ));
        assert!(decompress(Compression::None, &data, 99, Section::Payload).is_err());
    }
}
