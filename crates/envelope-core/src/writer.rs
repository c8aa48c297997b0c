//! Writing an envelope: from parts to bytes, with the CRC32 computed as the bytes go out.
//!
//! The structural flags are derived from which parts are present (an encryption block sets
//! ENCRYPTED, a chunk index sets STREAMING, ...), so a writer cannot produce a file whose flags and
//! sections disagree. Every size is checked against its header field: a section that does not fit
//! is an error (or, for the payload, goes through the chunk index's u64 totals), never truncated.

use std::borrow::Cow;
use std::io::Write;

use crate::chunk_index::ChunkIndex;
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
        let metadata_size = narrow_u32(Section::Metadata, self.metadata.len())?;
        // 000 §3: schema_size is a u16; a larger schema is refused rather than truncated.
        let schema_size = u16::try_from(self.schema.len())
            .map_err(|_| too_large(Section::Schema, self.schema.len(), u64::from(u16::MAX)))?;
        if self.format == Format::Model && !self.schema.is_empty() {
            return Err(Error::InvalidArgument("an .apr file has no schema section"));
        }
        let (stored, decoded) = match &self.payload {
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
                (stored, *uncompressed_size)
            }
            Payload::Chunked { index, stored } => {
                if stored.len() as u64 != index.payload_size() {
                    return Err(Error::InvalidArgument(
                        "chunked payload bytes differ from the chunk index total",
                    ));
                }
                (index.payload_size(), index.uncompressed_size())
            }
        };
        let header = Header::new(HeaderFields {
            format: self.format,
            version: self.version,
            type_id: self.type_id,
            metadata_size,
            payload_size: DeclaredSize::for_size(stored),
            uncompressed_size: DeclaredSize::for_size(decoded),
            compression: self.compression,
            flags: self.flags(),
            schema_size,
            num_rows: if self.format == Format::Dataset {
                self.num_rows
            } else {
                0
            },
        })?;
        // The same reconciliation a reader performs (rows against the index, plain chunk sizes).
        declared_totals(&header, self.payload.index())?;
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
        let mut out = Vec::new();
        self.write_prefix(&mut out, &self.header()?)?;
        Ok(out)
    }

    fn write_prefix(&self, out: &mut impl Write, header: &Header) -> Result<()> {
        out.write_all(&header.encode())?;
        out.write_all(&self.metadata)?;
        out.write_all(&self.schema)?;
        if let Some(body) = &self.tensor_index {
            write_frame(out, Section::TensorIndex, body)?;
        }
        if let Some(index) = self.payload.index() {
            write_frame(out, Section::ChunkIndex, &index.encode()?)?;
        }
        if let Some(body) = &self.encryption {
            write_frame(out, Section::Encryption, body)?;
        }
        Ok(())
    }

    /// Writes the file to `out`, computing the CRC32 trailer on the way.
    ///
    /// # Errors
    /// As [`EnvelopeParts::header`], plus `Io` from `out`.
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
    fn write_sections(&self, out: &mut impl Write) -> Result<()> {
        let header = self.header()?;
        self.write_prefix(out, &header)?;
        out.write_all(self.payload.stored())?;
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
        let len = usize::try_from(self.encoded_len()?).map_err(|_| {
            Error::InvalidArgument("the file is larger than this platform's memory can hold")
        })?;
        let mut out = Vec::with_capacity(len);
        self.write_to(&mut out)?;
        Ok(out)
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

fn write_frame(out: &mut impl Write, section: Section, body: &[u8]) -> Result<()> {
    let len = narrow_u32(section, body.len())?;
    out.write_all(&len.to_le_bytes())?;
    out.write_all(body)?;
    Ok(())
}

/// Largest piece [`CrcWriter`] hashes and passes on at once: small enough to stay in cache
/// between the CRC and the copy the write makes, large enough to pass straight through a
/// `BufWriter` of the same capacity without being copied into its buffer.
const CRC_PIECE: usize = 1 << 20;

/// Passes bytes through while feeding them to a CRC32. Each piece is hashed right after it is
/// written, while it is still in cache, so a large payload crosses main memory once for both.
struct CrcWriter<W> {
    inner: W,
    hasher: crc32fast::Hasher,
}

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
