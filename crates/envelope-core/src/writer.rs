//! Writing an envelope: from parts to bytes, with the CRC32 computed as the bytes go out.
//!
//! The structural flags are derived from which parts are present (an encryption block sets
//! ENCRYPTED, a chunk index sets STREAMING, ...), so a writer cannot produce a file whose flags and
//! sections disagree. Every size is checked against its header field: a section that does not fit
//! is an error (or, for the payload, goes through the chunk index's u64 totals), never truncated.

use alloc::borrow::Cow;
use alloc::vec::Vec;
#[cfg(feature = "std")]
use std::io::Write;

use crate::chunk_index::{CHUNK_INDEX_SUFFIX_LEN, ChunkIndex, masked_prefix_crc32c};
use crate::compression::compress;
use crate::error::{Error, Result, Section};
use crate::header::{
    CHECKSUM_LEN, Compression, DeclaredSize, Flags, Format, HEADER_LEN, Header, HeaderFields,
    Version,
};
use crate::layout::{FRAME_PREFIX_LEN, declared_totals};

/// The payload of an envelope as it will be stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload<'a> {
    /// One stored blob (compressed and/or encrypted as a whole).
    Whole {
        /// The bytes as stored.
        stored: Cow<'a, [u8]>,
        /// Their size after decryption and decompression.
        uncompressed_size: u64,
    },
    /// Independent chunks (the STREAMING flag), described by `index`.
    Chunked {
        /// Sizes and item ranges of the chunks.
        index: ChunkIndex,
        /// The stored chunks, concatenated in index order.
        stored: Cow<'a, [u8]>,
    },
}

impl Default for Payload<'_> {
    fn default() -> Self {
        Self::Whole {
            stored: Cow::Borrowed(&[]),
            uncompressed_size: 0,
        }
    }
}

impl<'a> Payload<'a> {
    /// A whole payload made by compressing `data` with `compression`.
    ///
    /// # Errors
    /// `Usage` if compression support is not compiled in.
    pub fn compressed(compression: Compression, data: &'a [u8]) -> Result<Self> {
        Ok(Self::Whole {
            stored: compress(compression, data)?,
            uncompressed_size: data.len() as u64,
        })
    }

    /// A chunked payload made by compressing each `(item_count, data)` chunk independently.
    ///
    /// # Errors
    /// `Usage` if compression support is not compiled in.
    pub fn chunked<'c>(
        compression: Compression,
        chunks: impl IntoIterator<Item = (u64, &'c [u8])>,
    ) -> Result<Payload<'static>> {
        let mut stored = Vec::new();
        let mut sizes = Vec::new();
        for (item_count, data) in chunks {
            let packed = compress(compression, data)?;
            sizes.push((packed.len() as u64, data.len() as u64, item_count));
            stored.extend_from_slice(&packed);
        }
        Ok(Payload::Chunked {
            index: ChunkIndex::from_sizes(sizes)?,
            stored: Cow::Owned(stored),
        })
    }

    /// The stored bytes.
    #[must_use]
    pub fn stored(&self) -> &[u8] {
        match self {
            Self::Whole { stored, .. } | Self::Chunked { stored, .. } => stored,
        }
    }

    fn index(&self) -> Option<&ChunkIndex> {
        match self {
            Self::Whole { .. } => None,
            Self::Chunked { index, .. } => Some(index),
        }
    }
}

/// Everything an envelope file is made of. Build one, then call [`EnvelopeParts::to_bytes`] or
/// [`EnvelopeParts::write_to`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvelopeParts<'a> {
    /// Dataset or model.
    pub format: Format,
    /// Format version to write ([`Format::current_version`] unless rewriting an older file).
    pub version: Version,
    /// `dataset_type` or `model_type`.
    pub type_id: u16,
    /// How the payload (or each chunk) was compressed.
    pub compression: Compression,
    /// QUANTIZED flag (models only).
    pub quantized: bool,
    /// Row count (datasets only).
    pub num_rows: u64,
    /// MessagePack metadata.
    pub metadata: Cow<'a, [u8]>,
    /// Arrow IPC schema (datasets only; at most 65,535 bytes).
    pub schema: Cow<'a, [u8]>,
    /// Aligned array / tensor index body; sets TRUENO_NATIVE.
    pub tensor_index: Option<Cow<'a, [u8]>>,
    /// Encryption block body; sets ENCRYPTED.
    pub encryption: Option<Cow<'a, [u8]>>,
    /// The payload; a chunked payload sets STREAMING.
    pub payload: Payload<'a>,
    /// Signature block body; sets SIGNED.
    pub signature: Option<Cow<'a, [u8]>>,
    /// License block body; sets LICENSED.
    pub license: Option<Cow<'a, [u8]>>,
}

impl EnvelopeParts<'_> {
    /// Empty parts of `format` and type: no metadata, an empty uncompressed payload.
    #[must_use]
    pub fn new(format: Format, type_id: u16) -> Self {
        Self {
            format,
            version: format.current_version(),
            type_id,
            compression: Compression::None,
            quantized: false,
            num_rows: 0,
            metadata: Cow::Borrowed(&[]),
            schema: Cow::Borrowed(&[]),
            tensor_index: None,
            encryption: None,
            payload: Payload::default(),
            signature: None,
            license: None,
        }
    }

    /// The flags these parts produce.
    #[must_use]
    pub fn flags(&self) -> Flags {
        let mut flags = Flags::empty();
        let present = [
            (self.encryption.is_some(), Flags::ENCRYPTED),
            (self.signature.is_some(), Flags::SIGNED),
            (self.payload.index().is_some(), Flags::STREAMING),
            (self.license.is_some(), Flags::LICENSED),
            (self.tensor_index.is_some(), Flags::TRUENO_NATIVE),
            (self.quantized, Flags::QUANTIZED),
        ];
        for (set, flag) in present {
            if set {
                flags = flags.with(flag);
            }
        }
        flags
    }

    /// The header these parts produce.
    ///
    /// # Errors
    /// `Usage` if a section does not fit its field; `InvalidFormat` if the parts break a header
    /// rule (for example TRUENO_NATIVE with compression, or QUANTIZED on a dataset).
    pub fn header(&self) -> Result<Header> {
        let shape = match &self.payload {
            Payload::Whole {
                stored,
                uncompressed_size,
            } => {
                let stored = stored.len() as u64;
                for (size, section) in [
                    (stored, Section::Payload),
                    (*uncompressed_size, Section::Payload),
                ] {
                    if DeclaredSize::for_size(size) == DeclaredSize::InChunkIndex {
                        // Only the chunk index can describe a payload of 4 GiB or more.
                        return Err(Error::SectionTooLarge {
                            section,
                            size,
                            max: u64::from(u32::MAX) - 1,
                        });
                    }
                }
                (stored, *uncompressed_size, None)
            }
            Payload::Chunked { index, stored } => {
                if stored.len() as u64 != index.payload_size() {
                    return Err(Error::ArgumentMismatch {
                        what: "chunked payload bytes against the chunk index's payload_size",
                        expected: index.payload_size(),
                        found: stored.len() as u64,
                    });
                }
                (index.payload_size(), index.uncompressed_size(), Some(index))
            }
        };
        self.header_for(shape)
    }

    /// The header for a payload of `stored` bytes decoding to `decoded`, chunked by `index`.
    fn header_for(
        &self,
        (stored, decoded, index): (u64, u64, Option<&ChunkIndex>),
    ) -> Result<Header> {
        let metadata_size = narrow_u32(Section::Metadata, self.metadata.len())?;
        // 000 §3: schema_size is a u16; a larger schema is refused rather than truncated.
        let schema_size = u16::try_from(self.schema.len())
            .map_err(|_| too_large(Section::Schema, self.schema.len(), u64::from(u16::MAX)))?;
        if self.format == Format::Model && !self.schema.is_empty() {
            return Err(Error::InvalidArgument("an .apr file has no schema section"));
        }
        let mut flags = self.flags();
        if index.is_some() {
            flags = flags.with(Flags::STREAMING);
        }
        let header = Header::new(HeaderFields {
            format: self.format,
            version: self.version,
            type_id: self.type_id,
            metadata_size,
            payload_size: DeclaredSize::for_size(stored),
            uncompressed_size: DeclaredSize::for_size(decoded),
            compression: self.compression,
            flags,
            schema_size,
            num_rows: if self.format == Format::Dataset {
                self.num_rows
            } else {
                0
            },
        })?;
        // The same reconciliation a reader performs (rows against the index, plain chunk sizes).
        declared_totals(&header, index)?;
        Ok(header)
    }

    /// Exact length of the encoded file.
    ///
    /// # Errors
    /// As [`EnvelopeParts::header`].
    pub fn encoded_len(&self) -> Result<u64> {
        self.header()?;
        let framed = |body: Option<usize>| body.map_or(0, |len| (FRAME_PREFIX_LEN + len) as u64);
        Ok(
            (HEADER_LEN + CHECKSUM_LEN + self.metadata.len() + self.schema.len()) as u64
                + framed(self.tensor_index.as_ref().map(|body| body.len()))
                + framed(self.payload.index().map(ChunkIndex::encoded_len))
                + framed(self.encryption.as_ref().map(|body| body.len()))
                + self.payload.stored().len() as u64
                + framed(self.signature.as_ref().map(|body| body.len()))
                + framed(self.license.as_ref().map(|body| body.len())),
        )
    }

    /// Every byte that precedes the payload: header through encryption block.
    ///
    /// # Errors
    /// As [`EnvelopeParts::header`].
    pub fn bytes_before_payload(&self) -> Result<Vec<u8>> {
        let index = self.index_with_checksums();
        self.prefix(&self.header()?, index.as_ref())
    }

    /// The chunk index as it will be written: each entry's CRC-32C computed from the stored bytes
    /// (zero when encrypted, see `chunk_index`).
    fn index_with_checksums(&self) -> Option<ChunkIndex> {
        let Payload::Chunked { index, stored } = &self.payload else {
            return None;
        };
        let mut index = index.clone();
        let encrypted = self.encryption.is_some();
        for chunk in 0..index.len() {
            let range = index.entries()[chunk].stored_range();
            let crc = match (
                encrypted,
                usize::try_from(range.start),
                usize::try_from(range.end),
            ) {
                (false, Ok(start), Ok(end)) => {
                    stored.get(start..end).map_or(0, crate::castagnoli::crc32c)
                }
                _ => 0,
            };
            // `chunk` is in range: the loop runs over the index's own entries.
            let _ = index.set_stored_crc32c(chunk, crc);
        }
        Some(index)
    }

    /// Header through encryption block, with the chunk index's `prefix_crc32c` computed.
    fn prefix(&self, header: &Header, index: Option<&ChunkIndex>) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(
            HEADER_LEN
                + self.metadata.len()
                + self.schema.len()
                + self
                    .tensor_index
                    .as_ref()
                    .map_or(0, |body| body.len() + FRAME_PREFIX_LEN)
                + index.map_or(0, |index| index.encoded_len() + FRAME_PREFIX_LEN)
                + self
                    .encryption
                    .as_ref()
                    .map_or(0, |body| body.len() + FRAME_PREFIX_LEN),
        );
        out.extend_from_slice(&header.encode());
        out.extend_from_slice(&self.metadata);
        out.extend_from_slice(&self.schema);
        if let Some(body) = &self.tensor_index {
            // The body's last 4 bytes are the tensor index's prefix CRC-32C (docs/envelope.md §4.2),
            // the rest is the zero-copy crate's.
            if body.len() < CHUNK_INDEX_SUFFIX_LEN {
                return Err(Error::InvalidArgument(
                    "a tensor index body ends with a 4-byte prefix_crc32c",
                ));
            }
            write_frame(&mut out, Section::TensorIndex, body)?;
            let field = out.len() - CHUNK_INDEX_SUFFIX_LEN;
            let crc = masked_prefix_crc32c(&out[..field]);
            out[field..].copy_from_slice(&crc.to_le_bytes());
        }
        if let Some(index) = index {
            write_frame(&mut out, Section::ChunkIndex, &index.encode()?)?;
            let field = out.len() - CHUNK_INDEX_SUFFIX_LEN;
            let crc = masked_prefix_crc32c(&out[..field]);
            out[field..].copy_from_slice(&crc.to_le_bytes());
        }
        if let Some(body) = &self.encryption {
            write_frame(&mut out, Section::Encryption, body)?;
        }
        Ok(out)
    }

    /// Starts writing a STREAMING file whose chunks are produced one at a time, so the payload
    /// never has to be in memory at once. `index` describes the chunks that will be written,
    /// including each chunk's CRC-32C of its stored bytes (zero if these parts are encrypted; see
    /// `docs/envelope.md` §4). The parts' own `payload` is ignored. Write every chunk with
    /// [`ChunkedWriter::write_chunk`], in order, then call [`ChunkedWriter::finish`].
    ///
    /// The output is byte for byte what [`EnvelopeParts::to_bytes`] gives for the same parts with
    /// `Payload::Chunked { index, stored }`.
    ///
    /// # Errors
    /// As [`EnvelopeParts::header`]; `Usage` if an encrypted file's index carries non-zero chunk
    /// checksums; `Io` from `out`.
    ///
    /// # Example
    /// ```
    /// use envelope_core::{ChunkIndex, Envelope, EnvelopeParts, Format};
    ///
    /// let chunks: [&[u8]; 2] = [b"rows 0-9", b"rows 10-14"];
    /// let mut index = ChunkIndex::from_sizes([(8, 8, 10), (10, 10, 5)])?;
    /// for (number, chunk) in chunks.iter().enumerate() {
    ///     index.set_stored_crc32c(number, crc32c::crc32c(chunk))?;
    /// }
    /// let mut parts = EnvelopeParts::new(Format::Dataset, 0x0001);
    /// parts.num_rows = 15;
    /// let mut writer = parts.begin_chunked(index, Vec::new())?;
    /// for chunk in chunks {
    ///     writer.write_chunk(chunk)?;
    /// }
    /// let bytes = writer.finish()?;
    /// let envelope = Envelope::parse_lazy(&bytes[..], Format::Dataset)?;
    /// assert_eq!(&*envelope.decode_chunk(1)?, b"rows 10-14");
    /// # Ok::<(), envelope_core::Error>(())
    /// ```
    #[cfg(feature = "std")]
    pub fn begin_chunked<W: Write>(&self, index: ChunkIndex, out: W) -> Result<ChunkedWriter<W>> {
        let encrypted = self.encryption.is_some();
        let PlacedLayout {
            prefix, trailer, ..
        } = self.placed_layout(&index)?;
        let mut out = CrcWriter {
            inner: out,
            hasher: crc32fast::Hasher::new(),
        };
        out.write_all(&prefix)?;
        Ok(ChunkedWriter {
            out,
            prefix,
            index,
            next_chunk: 0,
            encrypted,
            trailer,
        })
    }

    /// The layout of a STREAMING file whose chunks the caller places itself (at
    /// [`PlacedLayout::payload_offset`] plus each chunk's offset in the payload, in any order and
    /// from any thread): the bytes before the payload and the blocks after it, and, from the
    /// CRC32 of the chunks' bytes, the file's CRC32 trailer. `index` is as for
    /// [`EnvelopeParts::begin_chunked`] (each chunk's CRC-32C set, zero if encrypted) and the
    /// parts' own `payload` is ignored.
    ///
    /// Prefix, chunks in index order, then [`PlacedLayout::trailer`] are byte for byte what
    /// [`EnvelopeParts::begin_chunked`] writes (which is built on this) and
    /// [`EnvelopeParts::to_bytes`] gives for the same parts with `Payload::Chunked`.
    ///
    /// # Errors
    /// As [`EnvelopeParts::header`]; `Usage` if an encrypted file's index carries non-zero chunk
    /// checksums.
    ///
    /// # Example
    /// ```
    /// use envelope_core::{ChunkIndex, Envelope, EnvelopeParts, Format};
    ///
    /// let chunks: [&[u8]; 2] = [b"rows 0-9", b"rows 10-14"];
    /// let mut index = ChunkIndex::from_sizes([(8, 8, 10), (10, 10, 5)])?;
    /// for (number, chunk) in chunks.iter().enumerate() {
    ///     index.set_stored_crc32c(number, crc32c::crc32c(chunk))?;
    /// }
    /// let mut parts = EnvelopeParts::new(Format::Dataset, 0x0001);
    /// parts.num_rows = 15;
    /// let layout = parts.placed_layout(&index)?;
    /// // The file as a positional writer fills it: the chunks first (here the second one before
    /// // the first), each hashed where it is written, then the prefix and the trailer.
    /// let start = layout.payload_offset() as usize;
    /// let mut file = vec![0u8; start + 18];
    /// let mut second = crc32fast::Hasher::new();
    /// file[start + 8..].copy_from_slice(chunks[1]);
    /// second.update(chunks[1]);
    /// let mut payload = crc32fast::Hasher::new();
    /// file[start..start + 8].copy_from_slice(chunks[0]);
    /// payload.update(chunks[0]);
    /// payload.combine(&second);
    /// file[..start].copy_from_slice(layout.prefix());
    /// file.extend_from_slice(&layout.trailer(&payload));
    /// let envelope = Envelope::parse_lazy(&file[..], Format::Dataset)?;
    /// assert_eq!(&*envelope.decode_chunk(1)?, b"rows 10-14");
    /// # Ok::<(), envelope_core::Error>(())
    /// ```
    pub fn placed_layout(&self, index: &ChunkIndex) -> Result<PlacedLayout> {
        if self.encryption.is_some() && index.entries().iter().any(|entry| entry.stored_crc32c != 0)
        {
            return Err(Error::InvalidArgument(
                "an encrypted file's chunk checksums must be zero",
            ));
        }
        let header =
            self.header_for((index.payload_size(), index.uncompressed_size(), Some(index)))?;
        let prefix = self.prefix(&header, Some(index))?;
        let mut trailer = Vec::new();
        self.write_blocks_after_payload(&mut trailer)?;
        Ok(PlacedLayout {
            prefix,
            payload_size: index.payload_size(),
            trailer,
        })
    }

    /// Writes the file to `out`, computing the CRC32 trailer on the way.
    ///
    /// # Errors
    /// As [`EnvelopeParts::header`], plus `Io` from `out`.
    #[cfg(feature = "std")]
    pub fn write_to(&self, out: impl Write) -> Result<()> {
        let mut out = CrcWriter {
            inner: out,
            hasher: crc32fast::Hasher::new(),
        };
        self.write_sections(&mut out)?;
        let checksum = out.hasher.finalize();
        out.inner.write_all(&checksum.to_le_bytes())?;
        Ok(())
    }

    /// Writes every section, in file order, without the CRC32 trailer.
    fn write_sections(&self, out: &mut impl Sink) -> Result<()> {
        let header = self.header()?;
        let index = self.index_with_checksums();
        out.put(&self.prefix(&header, index.as_ref())?)?;
        out.put(self.payload.stored())?;
        self.write_blocks_after_payload(out)
    }

    /// The signature and license frames, in file order, after the payload.
    fn write_blocks_after_payload(&self, out: &mut impl Sink) -> Result<()> {
        if let Some(body) = &self.signature {
            write_frame(out, Section::Signature, body)?;
        }
        if let Some(body) = &self.license {
            write_frame(out, Section::License, body)?;
        }
        Ok(())
    }

    /// The encoded file.
    ///
    /// # Errors
    /// As [`EnvelopeParts::header`].
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let len = Error::fit_in_memory("the file's length", self.encoded_len()?)?;
        let mut out = Vec::with_capacity(len);
        #[cfg(feature = "std")]
        self.write_to(&mut out)?;
        // Without `std` there is no `Write` to hash on the way: the sections, then their CRC32.
        #[cfg(not(feature = "std"))]
        {
            self.write_sections(&mut out)?;
            let checksum = crc32fast::hash(&out);
            out.extend_from_slice(&checksum.to_le_bytes());
        }
        Ok(out)
    }
}

/// Where the parts of a STREAMING file go when the caller places its chunks
/// ([`EnvelopeParts::placed_layout`]): the prefix at offset 0, the chunks' stored bytes from
/// [`PlacedLayout::payload_offset`] on, in index order, then [`PlacedLayout::trailer`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacedLayout {
    /// Header through encryption block (what `begin_chunked` writes first).
    prefix: Vec<u8>,
    /// The chunks' stored bytes in all.
    payload_size: u64,
    /// The signature and license frames, without the CRC32.
    trailer: Vec<u8>,
}

impl PlacedLayout {
    /// Every byte before the payload.
    #[must_use]
    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// Where the first chunk starts: the prefix's length.
    #[must_use]
    pub fn payload_offset(&self) -> u64 {
        self.prefix.len() as u64
    }

    /// The chunks' stored bytes in all (the index's `payload_size`).
    #[must_use]
    pub fn payload_size(&self) -> u64 {
        self.payload_size
    }

    /// Where [`PlacedLayout::trailer`] goes: right after the payload.
    #[must_use]
    pub fn trailer_offset(&self) -> u64 {
        self.payload_offset() + self.payload_size
    }

    /// The blocks after the payload (signature, license), without the CRC32.
    #[must_use]
    pub fn trailer_without_crc(&self) -> &[u8] {
        &self.trailer
    }

    /// The file's CRC32 trailer, given `payload`: a CRC32 hasher fed the chunks' stored bytes in
    /// file order (per piece hashers joined in order with [`crc32fast::Hasher::combine`] give the
    /// same). The prefix and the blocks after the payload are hashed here.
    #[must_use]
    pub fn trailer_crc32(&self, payload: &crc32fast::Hasher) -> u32 {
        let mut file = crc32fast::Hasher::new();
        file.update(&self.prefix);
        file.combine(payload);
        file.update(&self.trailer);
        file.finalize()
    }

    /// Everything after the payload: the blocks, then the CRC32 ([`PlacedLayout::trailer_crc32`]
    /// of `payload`), little-endian.
    #[must_use]
    pub fn trailer(&self, payload: &crc32fast::Hasher) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.trailer.len() + CHECKSUM_LEN);
        out.extend_from_slice(&self.trailer);
        out.extend_from_slice(&self.trailer_crc32(payload).to_le_bytes());
        out
    }
}

fn too_large(section: Section, len: usize, max: u64) -> Error {
    Error::SectionTooLarge {
        section,
        size: len as u64,
        max,
    }
}

fn narrow_u32(section: Section, len: usize) -> Result<u32> {
    u32::try_from(len).map_err(|_| too_large(section, len, u64::from(u32::MAX)))
}

fn write_frame(out: &mut impl Sink, section: Section, body: &[u8]) -> Result<()> {
    let len = narrow_u32(section, body.len())?;
    out.put(&len.to_le_bytes())?;
    out.put(body)
}

/// Where [`EnvelopeParts`] writes sections: a `Vec` in every build, and with `std` the CRC32
/// writer over any `io::Write`. (`io::Write` itself is not in `core`, so the section writer is
/// generic over this instead.)
trait Sink {
    /// Appends `bytes`.
    fn put(&mut self, bytes: &[u8]) -> Result<()>;
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.extend_from_slice(bytes);
        Ok(())
    }
}

#[cfg(feature = "std")]
impl<W: Write> Sink for CrcWriter<W> {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        Ok(self.write_all(bytes)?)
    }
}

/// Largest piece [`CrcWriter`] hashes and passes on at once: small enough to stay in cache
/// between the CRC and the copy the write makes, large enough to pass straight through a
/// `BufWriter` of the same capacity without being copied into its buffer.
#[cfg(feature = "std")]
const CRC_PIECE: usize = 1 << 20;

/// Passes bytes through while feeding them to a CRC32. Each piece is hashed right after it is
/// written, while it is still in cache, so a large payload crosses main memory once for both.
#[cfg(feature = "std")]
struct CrcWriter<W> {
    inner: W,
    hasher: crc32fast::Hasher,
}

#[cfg(feature = "std")]
impl<W: Write> Write for CrcWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let piece = &buf[..buf.len().min(CRC_PIECE)];
        let written = self.inner.write(piece)?;
        self.hasher.update(&piece[..written]);
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A STREAMING file being written one chunk at a time (see [`EnvelopeParts::begin_chunked`]).
#[cfg(feature = "std")]
pub struct ChunkedWriter<W: Write> {
    out: CrcWriter<W>,
    prefix: Vec<u8>,
    index: ChunkIndex,
    next_chunk: usize,
    encrypted: bool,
    trailer: Vec<u8>,
}

#[cfg(feature = "std")]
impl<W: Write> core::fmt::Debug for ChunkedWriter<W> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ChunkedWriter")
            .field("chunks", &self.index.len())
            .field("next_chunk", &self.next_chunk)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "std")]
impl<W: Write> ChunkedWriter<W> {
    /// Every byte before the payload, as written (the associated data of an encrypted file is
    /// computed from these).
    #[must_use]
    pub fn bytes_before_payload(&self) -> &[u8] {
        &self.prefix
    }

    /// The chunk index being followed.
    #[must_use]
    pub fn index(&self) -> &ChunkIndex {
        &self.index
    }

    /// Writes the stored bytes of the next chunk.
    ///
    /// # Errors
    /// `Usage` if the index lists no further chunk, or `stored` differs from its entry in size or
    /// (unencrypted) CRC-32C; `Io` from the output.
    pub fn write_chunk(&mut self, stored: &[u8]) -> Result<()> {
        let entry = self
            .index
            .entries()
            .get(self.next_chunk)
            .ok_or(Error::OutOfRange {
                what: "chunk (more written than the index lists)",
                index: self.next_chunk as u64,
                len: self.index.len() as u64,
            })?;
        if stored.len() as u64 != entry.stored_size {
            return Err(Error::ArgumentMismatch {
                what: "a chunk's size against its chunk index entry",
                expected: entry.stored_size,
                found: stored.len() as u64,
            });
        }
        let crc = if self.encrypted {
            entry.stored_crc32c
        } else {
            crate::castagnoli::crc32c(stored)
        };
        if crc != entry.stored_crc32c {
            return Err(Error::ArgumentMismatch {
                what: "a chunk's CRC-32C against its chunk index entry",
                expected: entry.stored_crc32c.into(),
                found: crc.into(),
            });
        }
        self.out.write_all(stored)?;
        self.next_chunk += 1;
        Ok(())
    }

    /// Writes the blocks after the payload and the CRC32 trailer, and hands back the output.
    ///
    /// # Errors
    /// `Usage` if fewer chunks were written than the index lists; `Io` from the output.
    pub fn finish(mut self) -> Result<W> {
        if self.next_chunk != self.index.len() {
            return Err(Error::ArgumentMismatch {
                what: "chunks written against the chunk index's count",
                expected: self.index.len() as u64,
                found: self.next_chunk as u64,
            });
        }
        self.out.write_all(&self.trailer)?;
        let checksum = self.out.hasher.finalize();
        self.out.inner.write_all(&checksum.to_le_bytes())?;
        self.out.inner.flush()?;
        Ok(self.out.inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// A file whose chunks are placed by the caller (written in any order, hashed per chunk
        /// and the hashers combined) is byte for byte what `begin_chunked` and `to_bytes` write,
        /// with and without the blocks after the payload.
        #[test]
        fn placed_chunks_give_the_chunked_writers_bytes(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 1..6),
            metadata in proptest::collection::vec(any::<u8>(), 0..200),
            signature in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..100)),
            license in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..100)),
            reversed in any::<bool>(),
        ) {
            let mut index = ChunkIndex::from_sizes(
                chunks.iter().map(|chunk| (chunk.len() as u64, chunk.len() as u64, 1)),
            ).unwrap();
            for (number, chunk) in chunks.iter().enumerate() {
                index.set_stored_crc32c(number, crate::castagnoli::crc32c(chunk)).unwrap();
            }
            let mut parts = EnvelopeParts::new(Format::Dataset, 1);
            parts.num_rows = chunks.len() as u64;
            parts.metadata = Cow::Owned(metadata);
            parts.signature = signature.map(Cow::Owned);
            parts.license = license.map(Cow::Owned);

            let layout = parts.placed_layout(&index).unwrap();
            let start = usize::try_from(layout.payload_offset()).unwrap();
            let mut placed = vec![0u8; usize::try_from(layout.trailer_offset()).unwrap()];
            let mut hashers = vec![crc32fast::Hasher::new(); chunks.len()];
            let mut order: Vec<usize> = (0..chunks.len()).collect();
            if reversed {
                order.reverse();
            }
            for number in order {
                let range = index.entries()[number].stored_range();
                let at = start + usize::try_from(range.start).unwrap();
                placed[at..at + chunks[number].len()].copy_from_slice(&chunks[number]);
                hashers[number].update(&chunks[number]);
            }
            let mut payload = crc32fast::Hasher::new();
            for hasher in &hashers {
                payload.combine(hasher);
            }
            placed[..start].copy_from_slice(layout.prefix());
            placed.extend_from_slice(&layout.trailer(&payload));

            let mut writer = parts.begin_chunked(index.clone(), Vec::new()).unwrap();
            for chunk in &chunks {
                writer.write_chunk(chunk).unwrap();
            }
            let streamed = writer.finish().unwrap();
            prop_assert!(placed == streamed);
            parts.payload = Payload::Chunked {
                index,
                stored: Cow::Owned(chunks.concat()),
            };
            prop_assert!(placed == parts.to_bytes().unwrap());
            prop_assert!(crate::Envelope::parse_lazy(&placed[..], Format::Dataset).is_ok());
        }
    }
}
