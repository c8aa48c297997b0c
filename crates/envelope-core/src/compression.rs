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

use alloc::borrow::Cow;
use alloc::vec::Vec;
#[cfg(feature = "std")]
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

/// The first allocation for decompressed output is at most this many times the compressed size
/// (and never more than the declared size); beyond it the buffer grows as bytes arrive.
#[cfg(feature = "format-compression")]
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
    let reader = DecodedReader::new(compression, data, declared_len, section)?;
    if compression == Compression::None {
        return Ok(Cow::Borrowed(data));
    }
    decode_all(reader, data.len(), declared_len).map(Cow::Owned)
}

/// Every decoded byte of `reader`, checked to end at the declared size.
#[cfg(feature = "format-compression")]
fn decode_all(
    mut reader: DecodedReader<'_>,
    stored_len: usize,
    declared_len: u64,
) -> Result<Vec<u8>> {
    let initial = stored_len
        .saturating_mul(INITIAL_EXPANSION)
        .saturating_add(4096);
    let capacity = usize::try_from(declared_len).map_or(initial, |declared| declared.min(initial));
    let mut out = Vec::with_capacity(capacity);
    reader.read_to_end(&mut out).map_err(Error::from_reader)?;
    reader.finish()?;
    Ok(out)
}

/// Without `format-compression`, [`DecodedReader::new`] has already refused every compression
/// but `None`, which [`decompress`] returns as it is.
#[cfg(not(feature = "format-compression"))]
fn decode_all(_: DecodedReader<'_>, _: usize, _: u64) -> Result<Vec<u8>> {
    Err(disabled())
}

/// The decoded bytes of one compressed (or stored) section, read incrementally: the caller chooses
/// where they go, so a payload can be decoded into many right-sized buffers instead of one buffer
/// as large as the whole payload.
///
/// The reader yields at most the declared size and fails (with the typed error wrapped in the
/// `io::Error`; [`Error::from_reader`] recovers it) if the stream is corrupt or ends early.
/// [`DecodedReader::finish`] then checks that the stream holds nothing beyond the declared size.
/// Reading a stream that declares more than it holds allocates nothing: bytes come only as the
/// stream produces them.
pub struct DecodedReader<'a> {
    source: Source<'a>,
    compression: Compression,
    section: Section,
    declared: u64,
    produced: u64,
}

enum Source<'a> {
    Stored(&'a [u8]),
    #[cfg(feature = "format-compression")]
    Zstd(backend::ZstdReader<'a>),
    #[cfg(feature = "format-compression")]
    Lz4(Lz4Frames<'a>),
}

impl core::fmt::Debug for DecodedReader<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DecodedReader")
            .field("compression", &self.compression)
            .field("section", &self.section)
            .field("declared", &self.declared)
            .field("produced", &self.produced)
            .finish_non_exhaustive()
    }
}

impl<'a> DecodedReader<'a> {
    /// A reader of `data` decompressed with `compression`, which must decode to exactly
    /// `declared_len` bytes.
    ///
    /// # Errors
    /// `InvalidFormat` for stored bytes of another length than declared, or a zstd payload that
    /// is not exactly one frame; `Usage` if the build lacks the `format-compression` feature.
    pub fn new(
        compression: Compression,
        data: &'a [u8],
        declared_len: u64,
        section: Section,
    ) -> Result<Self> {
        let source = match compression {
            Compression::None => {
                if data.len() as u64 != declared_len {
                    return Err(crate::FormatError::SizeMismatch {
                        what: "uncompressed section length",
                        declared: declared_len,
                        found: data.len() as u64,
                    }
                    .into());
                }
                Source::Stored(data)
            }
            #[cfg(feature = "format-compression")]
            Compression::ZstdL3 | Compression::ZstdL19 => Source::Zstd(
                backend::zstd_reader(data)
                    .map_err(|failure| decompression_error(section, compression, failure))?,
            ),
            #[cfg(feature = "format-compression")]
            Compression::Lz4 => {
                lz4_check_frames(data)
                    .map_err(|failure| decompression_error(section, compression, failure))?;
                Source::Lz4(Lz4Frames::new(data))
            }
            #[cfg(not(feature = "format-compression"))]
            _ => return Err(disabled()),
        };
        Ok(Self {
            source,
            compression,
            section,
            declared: declared_len,
            produced: 0,
        })
    }

    /// Decoded bytes still to come, by the declared size.
    #[must_use]
    pub fn remaining(&self) -> u64 {
        self.declared - self.produced
    }

    /// Appends the next `len` decoded bytes to `out` (fewer if fewer remain by the declared size;
    /// returns how many). Stored bytes are copied straight from the input, which `Read` cannot
    /// do without first zeroing `out`'s spare room.
    ///
    /// # Errors
    /// As reading: `InvalidFormat` for a corrupt stream or one that ends early.
    pub fn append_to(&mut self, len: u64, out: &mut Vec<u8>) -> Result<u64> {
        let len = len.min(self.remaining());
        match &mut self.source {
            Source::Stored(stored) => {
                let (taken, rest) = stored.split_at(usize::try_from(len).unwrap_or(stored.len()));
                out.extend_from_slice(taken);
                *stored = rest;
                self.produced += taken.len() as u64;
                Ok(taken.len() as u64)
            }
            #[cfg(feature = "format-compression")]
            _ => {
                let before = out.len();
                Read::take(&mut *self, len)
                    .read_to_end(out)
                    .map_err(Error::from_reader)?;
                Ok((out.len() - before) as u64)
            }
        }
    }

    /// Checks, once every declared byte has been read, that the stream ends there.
    ///
    /// # Errors
    /// `InvalidFormat`: `SizeMismatch` if declared bytes were left unread; `Decompression` with
    /// `TooLarge` if the stream holds more, `TrailingData` for bytes after the zstd frame,
    /// `Corrupt` for a stream that fails past the declared end.
    pub fn finish(self) -> Result<()> {
        if self.remaining() != 0 {
            return Err(crate::FormatError::SizeMismatch {
                what: "decoded bytes read against the section's declared size",
                declared: self.declared,
                found: self.produced,
            }
            .into());
        }
        match self.source {
            Source::Stored(_) => Ok(()),
            #[cfg(feature = "format-compression")]
            _ => self.finish_stream(),
        }
    }

    #[cfg(feature = "format-compression")]
    fn finish_stream(mut self) -> Result<()> {
        let mut probe = [0u8; 1];
        let extra = match &mut self.source {
            Source::Stored(_) => Ok(0),
            Source::Zstd(decoder) => decoder.read(&mut probe),
            Source::Lz4(frames) => frames.read(&mut probe),
        };
        let failure = match extra {
            Ok(0) => match &self.source {
                Source::Zstd(decoder) => backend::zstd_trailing(decoder).err(),
                _ => None,
            },
            Ok(_) => Some(DecompressionFailure::TooLarge {
                declared: self.declared,
            }),
            Err(_) => Some(DecompressionFailure::Corrupt),
        };
        failure.map_or(Ok(()), |failure| {
            Err(decompression_error(self.section, self.compression, failure))
        })
    }

    #[cfg(feature = "format-compression")]
    fn failed(&self, failure: DecompressionFailure) -> std::io::Error {
        std::io::Error::other(decompression_error(self.section, self.compression, failure))
    }
}

#[cfg(feature = "std")]
impl Read for DecodedReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let limit = usize::try_from(self.remaining()).map_or(buf.len(), |left| left.min(buf.len()));
        if limit == 0 {
            return Ok(0);
        }
        let buf = &mut buf[..limit];
        let read = match &mut self.source {
            Source::Stored(stored) => stored.read(buf),
            #[cfg(feature = "format-compression")]
            Source::Zstd(decoder) => decoder.read(buf),
            #[cfg(feature = "format-compression")]
            Source::Lz4(frames) => frames.read(buf),
        };
        let read = match read {
            Ok(read) => read,
            #[cfg(feature = "format-compression")]
            Err(_) => return Err(self.failed(DecompressionFailure::Corrupt)),
            #[cfg(not(feature = "format-compression"))]
            Err(error) => return Err(error),
        };
        if read == 0 {
            // The stream ended before the declared size. (Stored bytes never do: their length
            // was checked.)
            #[cfg(feature = "format-compression")]
            return Err(self.failed(DecompressionFailure::TooSmall {
                declared: self.declared,
                actual: self.produced,
            }));
        }
        self.produced += read as u64;
        Ok(read)
    }
}

/// A payload's decoded bytes, read across its STREAMING chunks in order
/// ([`crate::Envelope::payload_reader`]); each chunk is checked (if it carries a CRC-32C to check)
/// and decompressed on its own, as it is reached.
#[derive(Debug)]
pub struct PayloadReader<'a> {
    compression: Compression,
    /// The parts not yet started, last part first.
    parts: Vec<PayloadPart<'a>>,
    current: Option<DecodedReader<'a>>,
    remaining: u64,
}

/// One part of a payload: a whole payload, or one chunk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PayloadPart<'a> {
    /// The bytes as stored.
    pub(crate) stored: &'a [u8],
    /// The declared decoded size.
    pub(crate) declared: u64,
    /// The CRC-32C the stored bytes must have, when not already verified.
    pub(crate) crc32c: Option<u32>,
}

impl PayloadPart<'_> {
    /// `ChecksumMismatch` unless the stored bytes have the CRC-32C the part carries (if any).
    pub(crate) fn check(&self) -> Result<()> {
        if let Some(stored) = self.crc32c {
            let computed = crate::castagnoli::crc32c(self.stored);
            if computed != stored {
                return Err(Error::ChecksumMismatch { stored, computed });
            }
        }
        Ok(())
    }
}

impl<'a> PayloadReader<'a> {
    /// A reader of `parts`, in order.
    pub(crate) fn new(compression: Compression, mut parts: Vec<PayloadPart<'a>>) -> Result<Self> {
        let mut remaining = 0u64;
        for part in &parts {
            remaining =
                remaining
                    .checked_add(part.declared)
                    .ok_or(crate::FormatError::Inconsistent {
                        reason: "the chunks' decoded sizes add up to more than 2^64 bytes",
                    })?;
        }
        parts.reverse();
        Ok(Self {
            compression,
            parts,
            current: None,
            remaining,
        })
    }

    /// Decoded bytes still to come, by the declared sizes.
    #[must_use]
    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    /// Appends exactly `len` decoded bytes to `out`, across parts, copying stored bytes straight
    /// from the input (see [`DecodedReader::append_to`]).
    ///
    /// # Errors
    /// `InvalidFormat`: `SizeMismatch` if fewer than `len` bytes remain; as reading otherwise.
    pub fn append_to(&mut self, len: u64, out: &mut Vec<u8>) -> Result<()> {
        if len > self.remaining {
            return Err(crate::FormatError::SizeMismatch {
                what: "bytes asked of the decoded payload against what remains of it",
                declared: self.remaining,
                found: len,
            }
            .into());
        }
        let mut left = len;
        while left > 0 {
            let current = match &mut self.current {
                Some(current) if current.remaining() > 0 => current,
                _ => self.next_part()?,
            };
            let appended = current.append_to(left, out)?;
            left -= appended;
            self.remaining -= appended;
        }
        Ok(())
    }

    /// Finishes the current part and starts the next, checking its CRC-32C first.
    fn next_part(&mut self) -> Result<&mut DecodedReader<'a>> {
        if let Some(done) = self.current.take() {
            done.finish()?;
        }
        let part = self.parts.pop().ok_or(crate::FormatError::Inconsistent {
            reason: "the payload's parts end before their declared sizes",
        })?;
        part.check()?;
        Ok(self.current.insert(DecodedReader::new(
            self.compression,
            part.stored,
            part.declared,
            Section::Payload,
        )?))
    }

    /// Checks, once every declared byte has been read, that every part ends there (as
    /// [`DecodedReader::finish`], part by part).
    ///
    /// # Errors
    /// As [`DecodedReader::finish`].
    pub fn finish(mut self) -> Result<()> {
        while !self.parts.is_empty() {
            self.next_part()?;
        }
        self.current.take().map_or(Ok(()), DecodedReader::finish)
    }
}

#[cfg(feature = "std")]
impl Read for PayloadReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        while self.remaining > 0 {
            let current = match &mut self.current {
                Some(current) if current.remaining() > 0 => current,
                // Parts that decode to nothing are passed over (and checked) here.
                _ => self.next_part().map_err(std::io::Error::other)?,
            };
            let read = current.read(buf)?;
            if read > 0 {
                self.remaining -= read as u64;
                return Ok(read);
            }
        }
        Ok(0)
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

/// The magic number of a standard LZ4 frame (LZ4 Frame Format 1.6.x, "General Structure").
#[cfg(feature = "format-compression")]
const LZ4_FRAME_MAGIC: u32 = 0x184D_2204;

/// Checks that an LZ4 payload is one or more complete standard frames back to back and nothing
/// else (docs/envelope.md §2.3), by walking frame headers and block sizes; nothing is decoded.
///
/// `lz4_flex`'s `FrameDecoder` reports the end of a frame, an empty block and input that stops
/// inside a frame all as the end of the stream. Alone, it would read only the first frame of a
/// valid multi-frame payload, ignore whatever follows it (a hidden second frame), and accept a
/// frame cut off at a block boundary. After this walk the input is whole frames, and
/// [`Lz4Frames`] decodes each one to its end. Skippable frames (bytes no reader
/// checks) and the legacy format are refused with everything that is not a standard frame.
///
/// # Errors
/// `Corrupt` for a payload whose first bytes are not a frame, or a frame that runs past the end;
/// `TrailingData` for bytes after a complete frame that do not start another.
#[cfg(feature = "format-compression")]
fn lz4_check_frames(data: &[u8]) -> Result<(), DecompressionFailure> {
    let mut pos = 0;
    while pos < data.len() {
        let rest = &data[pos..];
        let magic = rest
            .first_chunk::<4>()
            .map(|magic| u32::from_le_bytes(*magic));
        if magic != Some(LZ4_FRAME_MAGIC) {
            return Err(if pos == 0 {
                DecompressionFailure::Corrupt
            } else {
                DecompressionFailure::TrailingData {
                    extra: rest.len() as u64,
                }
            });
        }
        pos += lz4_frame_len(rest).ok_or(DecompressionFailure::Corrupt)?;
    }
    if pos == 0 {
        // Not even one frame (writers always emit one, even for empty data).
        return Err(DecompressionFailure::Corrupt);
    }
    Ok(())
}

/// The length of the standard LZ4 frame at the start of `frame`, `None` if it runs past the end:
/// magic, FLG, BD, optional content size (FLG bit 3) and dictionary id (bit 0), header checksum,
/// then blocks (a little-endian u32 size, high bit = stored uncompressed, then the data and a
/// block checksum if FLG bit 4) up to the end mark 0, then a content checksum if FLG bit 2.
/// Field values (version, reserved bits, checksums, sizes) are checked by the decoder.
#[cfg(feature = "format-compression")]
fn lz4_frame_len(frame: &[u8]) -> Option<usize> {
    let flags = *frame.get(4)?;
    let mut pos: usize = 7;
    if flags & 0x08 != 0 {
        pos += 8;
    }
    if flags & 0x01 != 0 {
        pos += 4;
    }
    let block_checksum = if flags & 0x10 != 0 { 4 } else { 0 };
    loop {
        let size = u32::from_le_bytes(*frame.get(pos..)?.first_chunk::<4>()?);
        pos += 4;
        if size == 0 {
            break;
        }
        let data_len = usize::try_from(size & 0x7FFF_FFFF).ok()?;
        pos = pos.checked_add(data_len)?.checked_add(block_checksum)?;
        if pos > frame.len() {
            return None;
        }
    }
    if flags & 0x04 != 0 {
        pos += 4;
    }
    (pos <= frame.len()).then_some(pos)
}

/// The decoded bytes of an LZ4 payload [`lz4_check_frames`] accepted, frame after frame.
///
/// Each frame gets a decoder of its own over exactly its bytes: `lz4_flex` 0.11 keeps its buffers
/// from one frame to the next and trips its own assertions when the next frame's block size
/// differs. A 0 from a decoder with input left is an empty block, not the end.
#[cfg(feature = "format-compression")]
struct Lz4Frames<'a> {
    decoder: lz4_flex::frame::FrameDecoder<&'a [u8]>,
    /// The frames after the current one.
    rest: &'a [u8],
}

#[cfg(feature = "format-compression")]
impl<'a> Lz4Frames<'a> {
    fn new(data: &'a [u8]) -> Self {
        let (first, rest) = Self::split_frame(data);
        Self {
            decoder: lz4_flex::frame::FrameDecoder::new(first),
            rest,
        }
    }

    /// The first frame and what follows it (the walk already succeeded; a failure here would
    /// leave everything to one decoder, which then reports it as corrupt).
    fn split_frame(data: &'a [u8]) -> (&'a [u8], &'a [u8]) {
        data.split_at(lz4_frame_len(data).unwrap_or(data.len()))
    }
}

#[cfg(feature = "format-compression")]
impl Read for Lz4Frames<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // Every pass consumes at least a block header or starts the next frame, so this ends.
        loop {
            let read = self.decoder.read(buf)?;
            if read > 0 {
                return Ok(read);
            }
            if self.decoder.get_ref().is_empty() {
                if self.rest.is_empty() {
                    return Ok(0);
                }
                let (next, rest) = Self::split_frame(self.rest);
                self.decoder = lz4_flex::frame::FrameDecoder::new(next);
                self.rest = rest;
            }
        }
    }
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
    use super::DecompressionFailure;
    use crate::error::Result;

    pub(super) type ZstdReader<'a> = zstd::stream::read::Decoder<'static, &'a [u8]>;

    pub(super) fn zstd_compress(data: &[u8], level: i32) -> Result<Vec<u8>> {
        // `bulk` writes a single frame that records its content size.
        Ok(zstd::bulk::compress(data, level)?)
    }

    pub(super) fn zstd_reader(data: &[u8]) -> Result<ZstdReader<'_>, DecompressionFailure> {
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
        Ok(decoder)
    }

    /// Checked up front by [`zstd_reader`].
    #[allow(
        clippy::unnecessary_wraps,
        reason = "the same signature as the wasm32 backend's"
    )]
    pub(super) fn zstd_trailing(_: &ZstdReader<'_>) -> Result<(), DecompressionFailure> {
        Ok(())
    }
}

#[cfg(all(feature = "format-compression", target_arch = "wasm32"))]
mod backend {
    //! zstd through the pure-Rust ruzstd (no C on wasm32).
    use super::DecompressionFailure;
    use crate::error::Result;

    pub(super) type ZstdReader<'a> =
        ruzstd::decoding::StreamingDecoder<&'a [u8], ruzstd::decoding::FrameDecoder>;

    pub(super) fn zstd_compress(data: &[u8], _level: i32) -> Result<Vec<u8>> {
        // ruzstd implements only its fastest level; the frame is standard zstd all the same.
        Ok(ruzstd::encoding::compress_to_vec(
            data,
            ruzstd::encoding::CompressionLevel::Fastest,
        ))
    }

    pub(super) fn zstd_reader(data: &[u8]) -> Result<ZstdReader<'_>, DecompressionFailure> {
        let window = 1u64 << super::ZSTD_MAX_WINDOW_LOG;
        ruzstd::decoding::StreamingDecoder::new_with_max_window_size(data, window)
            .map_err(|_| DecompressionFailure::Corrupt)
    }

    /// The decoder stops at the end of its frame: anything left over is a second frame or junk.
    pub(super) fn zstd_trailing(decoder: &ZstdReader<'_>) -> Result<(), DecompressionFailure> {
        let rest = decoder.get_ref();
        if rest.is_empty() {
            Ok(())
        } else {
            Err(DecompressionFailure::TrailingData {
                extra: rest.len() as u64,
            })
        }
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

    /// Reads `reader` in pieces of the given sizes (cycled), as a caller decoding message by
    /// message does.
    fn read_in_pieces(mut reader: impl Read, pieces: &[usize]) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        for &piece in pieces.iter().cycle() {
            let mut buf = vec![0u8; piece.max(1)];
            let read = reader.read(&mut buf)?;
            if read == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..read]);
        }
        unreachable!("cycle is endless")
    }

    proptest! {
        #[test]
        fn the_reader_yields_what_decompress_does(
            data in prop::collection::vec(any::<u8>(), 0..20_000),
            pieces in prop::collection::vec(1usize..5000, 1..8),
            compression in prop::sample::select(Compression::ALL.to_vec()),
        ) {
            let packed = compress(compression, &data).unwrap();
            let mut reader =
                DecodedReader::new(compression, &packed, data.len() as u64, Section::Payload).unwrap();
            let out = read_in_pieces(&mut reader, &pieces).unwrap();
            prop_assert_eq!(&out, &data);
            prop_assert_eq!(reader.remaining(), 0);
            reader.finish().unwrap();
        }

        #[test]
        fn a_payload_reader_joins_its_parts(
            parts in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..3000), 0..6),
            pieces in prop::collection::vec(1usize..4000, 1..8),
            compression in prop::sample::select(Compression::ALL.to_vec()),
        ) {
            let packed: Vec<Vec<u8>> =
                parts.iter().map(|part| compress(compression, part).unwrap().into_owned()).collect();
            let stored = packed
                .iter()
                .zip(&parts)
                .map(|(p, part)| PayloadPart { stored: p, declared: part.len() as u64, crc32c: Some(crc32c::crc32c(p)) })
                .collect();
            let mut reader = PayloadReader::new(compression, stored).unwrap();
            let total: usize = parts.iter().map(Vec::len).sum();
            prop_assert_eq!(reader.remaining(), total as u64);
            let out = read_in_pieces(&mut reader, &pieces).unwrap();
            prop_assert_eq!(out, parts.concat());
            reader.finish().unwrap();
        }

        #[test]
        fn arbitrary_bytes_through_the_reader_never_panic(
            data in prop::collection::vec(any::<u8>(), 0..512),
            declared in 0u64..1 << 20,
            compression in prop::sample::select(Compression::ALL.to_vec()),
        ) {
            if let Ok(mut reader) = DecodedReader::new(compression, &data, declared, Section::Payload)
                && let Ok(out) = read_in_pieces(&mut reader, &[4096])
            {
                prop_assert_eq!(out.len() as u64, declared);
                let _ = reader.finish();
            }
        }
    }

    fn failure_of(error: &Error) -> Option<&DecompressionFailure> {
        match error {
            Error::InvalidFormat(FormatError::Decompression { failure, .. }) => Some(failure),
            _ => None,
        }
    }

    #[test]
    fn the_reader_refuses_bombs_short_streams_and_trailing_frames_with_typed_errors() {
        let zeros = vec![0u8; 1 << 20];
        for compression in [Compression::ZstdL3, Compression::Lz4] {
            let packed = compress(compression, &zeros).unwrap();
            // More than declared: every declared byte reads, then `finish` finds the rest.
            let mut reader =
                DecodedReader::new(compression, &packed, 1000, Section::Payload).unwrap();
            assert_eq!(read_in_pieces(&mut reader, &[300]).unwrap().len(), 1000);
            let error = reader.finish().unwrap_err();
            assert_eq!(
                failure_of(&error),
                Some(&DecompressionFailure::TooLarge { declared: 1000 }),
                "{compression}: {error}"
            );
            // Less than declared: the read fails, and the typed error comes back out.
            let declared = (1 << 20) + 1;
            let mut reader =
                DecodedReader::new(compression, &packed, declared, Section::Payload).unwrap();
            let error = Error::from_reader(read_in_pieces(&mut reader, &[65536]).unwrap_err());
            assert_eq!(
                failure_of(&error),
                Some(&DecompressionFailure::TooSmall {
                    declared,
                    actual: 1 << 20
                }),
                "{compression}: {error}"
            );
        }
        let mut two_frames = compress(Compression::ZstdL3, b"hello")
            .unwrap()
            .into_owned();
        two_frames.extend_from_slice(&compress(Compression::ZstdL3, b"world").unwrap());
        let error =
            DecodedReader::new(Compression::ZstdL3, &two_frames, 10, Section::Payload).unwrap_err();
        assert!(matches!(
            failure_of(&error),
            Some(DecompressionFailure::TrailingData { .. })
        ));
        // Stored bytes: the length is checked up front, and unread bytes are refused by `finish`.
        assert!(DecodedReader::new(Compression::None, b"abc", 4, Section::Payload).is_err());
        let reader = DecodedReader::new(Compression::None, b"abc", 3, Section::Payload).unwrap();
        assert!(matches!(
            reader.finish().unwrap_err(),
            Error::InvalidFormat(FormatError::SizeMismatch { .. })
        ));
        // Other I/O errors stay I/O errors.
        assert!(matches!(
            Error::from_reader(std::io::Error::other("disk on fire")),
            Error::Io(_)
        ));
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

    fn lz4_failure(packed: &[u8], declared: u64) -> Option<DecompressionFailure> {
        match decompress(Compression::Lz4, packed, declared, Section::Payload) {
            Ok(_) => None,
            Err(error) => Some(
                failure_of(&error)
                    .unwrap_or_else(|| panic!("{error}"))
                    .clone(),
            ),
        }
    }

    fn lz4(data: &[u8]) -> Vec<u8> {
        compress(Compression::Lz4, data).unwrap().into_owned()
    }

    /// The LZ4 frame format allows a payload of several frames: all of them are decoded.
    #[test]
    fn every_frame_of_a_multi_frame_lz4_payload_is_decoded() {
        let big = sample(200_000);
        let mut packed = lz4(b"hello");
        packed.extend_from_slice(&lz4(b""));
        packed.extend_from_slice(&lz4(&big));
        packed.extend_from_slice(&lz4(b"world"));
        let mut want = b"hello".to_vec();
        want.extend_from_slice(&big);
        want.extend_from_slice(b"world");
        let declared = want.len() as u64;
        let out = decompress(Compression::Lz4, &packed, declared, Section::Payload).unwrap();
        assert_eq!(&out[..], &want[..]);
        let mut reader =
            DecodedReader::new(Compression::Lz4, &packed, declared, Section::Payload).unwrap();
        assert_eq!(read_in_pieces(&mut reader, &[1, 7, 4096]).unwrap(), want);
        reader.finish().unwrap();
        // An empty stored block inside a frame does not end the frame.
        let frame = lz4(b"hello");
        let header_len = 7 + 8; // magic, FLG, BD, content size, header checksum
        let mut with_empty_block = frame[..header_len].to_vec();
        with_empty_block.extend_from_slice(&0x8000_0000_u32.to_le_bytes());
        with_empty_block.extend_from_slice(&frame[header_len..]);
        assert_eq!(lz4_failure(&with_empty_block, 5), None);
    }

    /// Every byte of an LZ4 payload belongs to a frame that is decoded and checked: a hidden
    /// second frame, junk, a skippable frame or a frame cut short are all refused.
    #[test]
    fn lz4_bytes_outside_complete_frames_are_refused() {
        let hello = lz4(b"hello");
        let mut hidden = hello.clone();
        hidden.extend_from_slice(&lz4(b"world"));
        assert_eq!(
            lz4_failure(&hidden, 5),
            Some(DecompressionFailure::TooLarge { declared: 5 })
        );
        let mut junk = hello.clone();
        junk.extend_from_slice(b"junk!");
        assert_eq!(
            lz4_failure(&junk, 5),
            Some(DecompressionFailure::TrailingData { extra: 5 })
        );
        let mut skippable = hello.clone();
        skippable.extend_from_slice(&0x184D_2A50_u32.to_le_bytes());
        skippable.extend_from_slice(&4_u32.to_le_bytes());
        skippable.extend_from_slice(b"data");
        assert_eq!(
            lz4_failure(&skippable, 5),
            Some(DecompressionFailure::TrailingData { extra: 12 })
        );
        let mut magic_only = hello.clone();
        magic_only.extend_from_slice(&LZ4_FRAME_MAGIC.to_le_bytes());
        assert_eq!(
            lz4_failure(&magic_only, 5),
            Some(DecompressionFailure::Corrupt)
        );
        // Without its end mark, or cut inside a block, a frame is incomplete.
        for cut in [4, 5, 9] {
            assert_eq!(
                lz4_failure(&hello[..hello.len() - cut], 5),
                Some(DecompressionFailure::Corrupt),
                "{cut}"
            );
        }
        assert_eq!(lz4_failure(b"", 0), Some(DecompressionFailure::Corrupt));
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
