//! Reading a verified envelope from bytes in memory.
//!
//! [`Envelope`] is generic over its byte storage (`&[u8]`, `Vec<u8>`, a memory map, an
//! `Arc<[u8]>`), so the same type serves `include_bytes!`, wasm32 buffers and files. It exists only
//! after the whole walk of [`crate::layout`] succeeded: magic, version, CRC32, header rules and
//! section bounds. Its accessors hand out the sections as slices; nothing is copied until a
//! payload has to be decompressed.

use alloc::borrow::Cow;
use alloc::vec;
use alloc::vec::Vec;
use core::ops::Range;

use crate::chunk_index::ChunkIndex;
use crate::compression::{PayloadPart, PayloadReader, decompress};
use crate::error::{DecryptionFailure, Error, FormatError, Result, Section};
use crate::header::{Flags, Format, Header};
use crate::layout::{Layout, Span, declared_totals, walk};
use crate::limits::Limits;
use crate::writer::{EnvelopeParts, Payload};

/// A verified envelope over the bytes `B`.
#[derive(Debug, Clone)]
pub struct Envelope<B> {
    bytes: B,
    layout: Layout,
    chunk_index: Option<ChunkIndex>,
    /// Opened by [`Envelope::parse_lazy`]: the payload is verified chunk by chunk as it is read.
    lazy: bool,
    /// What the reader accepts to decode from this file.
    limits: Limits,
}

impl<B: AsRef<[u8]>> Envelope<B> {
    /// Verifies `bytes` as a file of `format`.
    ///
    /// # Errors
    /// The first failed check, in order: `InvalidFormat` (magic, or the other format's magic),
    /// `UnsupportedVersion`, `ChecksumMismatch`, then `InvalidFormat` for any other header rule or
    /// section bound.
    ///
    /// # Example
    /// ```
    /// use envelope_core::{Compression, Envelope, EnvelopeParts, Format, Payload};
    ///
    /// let mut parts = EnvelopeParts::new(Format::Model, 0x0001);
    /// parts.metadata = b"\x80".as_slice().into(); // an empty MessagePack map
    /// parts.payload = Payload::compressed(Compression::Lz4, b"weights")?;
    /// parts.compression = Compression::Lz4;
    /// let bytes = parts.to_bytes()?;
    ///
    /// let envelope = Envelope::parse(&bytes[..], Format::Model)?;
    /// assert_eq!(&*envelope.decode_payload()?, b"weights");
    /// # Ok::<(), envelope_core::Error>(())
    /// ```
    pub fn parse(bytes: B, format: Format) -> Result<Self> {
        Self::parse_inner(bytes, Some(format))
    }

    /// Verifies `bytes` as a file of either format (for tools such as `inspect`).
    ///
    /// # Errors
    /// As [`Envelope::parse`].
    pub fn parse_any(bytes: B) -> Result<Self> {
        Self::parse_inner(bytes, None)
    }

    fn parse_inner(bytes: B, format: Option<Format>) -> Result<Self> {
        let (layout, chunk_index) = walk(&mut bytes.as_ref(), format)?;
        Ok(Self::from_walk(bytes, layout, chunk_index))
    }

    /// Opens `bytes` as a file of `format` reading only what precedes the payload, so that opening
    /// a STREAMING file of any size, mapped from disk, costs time proportional to its header and
    /// chunk index.
    ///
    /// For a STREAMING file the whole-file CRC32 is not computed. Instead the chunk index's
    /// `prefix_crc32c` is checked over every byte before it (header, metadata, schema, tensor index
    /// and the index itself), and [`Envelope::chunk`], [`Envelope::decode_chunk`] and
    /// [`Envelope::decode_payload`] check each chunk's own CRC-32C before handing it out (an
    /// encrypted file's chunks are authenticated by AES-GCM instead). The signature and license
    /// blocks after the payload are bounds-checked but covered only by the signature; callers
    /// that act on a license verify it (`envelope-sign`), which reads every byte.
    /// [`Envelope::verify_checksum`] computes the whole-file CRC32 on demand.
    ///
    /// In a TRUENO_NATIVE file without STREAMING, [`Envelope::decode_payload`] computes the whole
    /// CRC32 first; the zero-copy crate checks tensors one by one with the checksums in its index.
    ///
    /// A file with neither flag is verified exactly as by [`Envelope::parse`].
    ///
    /// # Errors
    /// As [`Envelope::parse`], with `ChecksumMismatch` reporting the prefix CRC32 for STREAMING
    /// files.
    pub fn parse_lazy(bytes: B, format: Format) -> Result<Self> {
        let (layout, chunk_index, lazy) =
            crate::layout::walk_lazy(&mut bytes.as_ref(), Some(format))?;
        Ok(Self {
            lazy,
            ..Self::from_walk(bytes, layout, chunk_index)
        })
    }

    /// This envelope with the reader's resource policy `limits` (the default is
    /// [`Limits::DEFAULT`]). Every decoding method checks the declared decoded sizes against it
    /// before decompressing anything; the metadata and schema sections too, when a format crate
    /// asks for them through [`Envelope::checked_metadata`] / [`Envelope::checked_schema`].
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

    /// Checks the declared decoded sizes of the whole payload and of every chunk against the
    /// limits (compressed payloads only: stored bytes decode to themselves).
    fn check_limits(&self) -> Result<()> {
        if self.header().compression() == crate::Compression::None {
            return Ok(());
        }
        match &self.chunk_index {
            Some(index) => {
                for (chunk, entry) in index.entries().iter().enumerate() {
                    self.limits.check_chunk(
                        Some(chunk as u64),
                        entry.stored_size,
                        entry.uncompressed_size,
                    )?;
                }
                self.limits
                    .check_payload(index.payload_size(), index.uncompressed_size())
            }
            None => self
                .limits
                .check_payload(self.payload().len() as u64, self.uncompressed_size()),
        }
    }

    /// Checks one chunk's declared decoded size against the limits.
    fn check_chunk_limits(&self, chunk: usize) -> Result<()> {
        check_chunk_limits(
            &self.limits,
            self.header(),
            self.chunk_index.as_ref(),
            chunk,
        )
    }

    /// Whether the whole-file CRC32 has been checked ([`Envelope::parse`], or a non-STREAMING file
    /// given to [`Envelope::parse_lazy`]). When false, chunks are checked as they are read.
    #[must_use]
    pub fn is_fully_verified(&self) -> bool {
        !self.lazy
    }

    /// Computes the whole-file CRC32 and compares it with the trailer.
    ///
    /// # Errors
    /// `ChecksumMismatch` if they differ.
    pub fn verify_checksum(&self) -> Result<()> {
        let bytes = self.bytes.as_ref();
        let end = to_usize(self.layout.checksum_offset());
        let computed = crc32fast::hash(&bytes[..end]);
        let stored = self.layout.checksum();
        if computed != stored {
            return Err(Error::ChecksumMismatch { stored, computed });
        }
        Ok(())
    }

    /// Wraps bytes that a walk over exactly these bytes has verified.
    pub(crate) fn from_walk(bytes: B, layout: Layout, chunk_index: Option<ChunkIndex>) -> Self {
        Self {
            bytes,
            layout,
            chunk_index,
            lazy: false,
            limits: Limits::DEFAULT,
        }
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

    /// The chunk index of a STREAMING file.
    #[must_use]
    pub fn chunk_index(&self) -> Option<&ChunkIndex> {
        self.chunk_index.as_ref()
    }

    /// The whole file.
    #[must_use]
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes.as_ref()
    }

    /// The storage (a memory map, a vector, ...), for storage-specific calls such as read-ahead
    /// hints.
    #[must_use]
    pub fn storage(&self) -> &B {
        &self.bytes
    }

    /// Gives the storage back.
    #[must_use]
    pub fn into_inner(self) -> B {
        self.bytes
    }

    /// The body of `section`, if the file has it.
    #[must_use]
    pub fn section(&self, section: Section) -> Option<&[u8]> {
        self.layout
            .span(section)
            .map(|span| &self.bytes.as_ref()[to_range(span)])
    }

    /// The metadata bytes (MessagePack, interpreted by the format crates).
    #[must_use]
    pub fn metadata(&self) -> &[u8] {
        self.section(Section::Metadata).unwrap_or_default()
    }

    /// The schema bytes (`.ald`; empty for `.apr`).
    #[must_use]
    pub fn schema(&self) -> &[u8] {
        self.section(Section::Schema).unwrap_or_default()
    }

    /// The payload as stored (compressed and/or encrypted).
    #[must_use]
    pub fn payload(&self) -> &[u8] {
        self.section(Section::Payload).unwrap_or_default()
    }

    /// The total decoded payload size (from the header, or the chunk index for large files).
    #[must_use]
    pub fn uncompressed_size(&self) -> u64 {
        // The walk already reconciled header and index, so this cannot fail here.
        declared_totals(self.header(), self.chunk_index.as_ref()).map_or(0, |(_, decoded)| decoded)
    }

    /// Every byte before the payload: header, metadata, schema and the framed sections up to and
    /// including the encryption block.
    #[must_use]
    pub fn bytes_before_payload(&self) -> &[u8] {
        &self.bytes.as_ref()[..to_usize(
            self.layout
                .span(Section::Payload)
                .unwrap_or_default()
                .offset,
        )]
    }

    /// The bytes a signature covers: every byte except the signature block's body and the CRC32
    /// trailer (see `docs/envelope.md`), as two slices to be fed to the hash in order.
    #[must_use]
    pub fn signed_regions(&self) -> [&[u8]; 2] {
        let bytes = self.bytes.as_ref();
        self.layout
            .signed_ranges()
            .map(|range| &bytes[to_usize(range.start)..to_usize(range.end)])
    }

    /// The stored bytes of chunk `chunk` of a STREAMING file (checked against the chunk's CRC-32C in
    /// an unencrypted file opened with [`Envelope::parse_lazy`]).
    ///
    /// # Errors
    /// `InvalidFormat` if the file is not STREAMING or has no such chunk; `ChecksumMismatch` if a
    /// lazily opened chunk does not match its CRC-32C.
    pub fn chunk(&self, chunk: usize) -> Result<&[u8]> {
        let mut part = self.chunk_part(chunk)?;
        if self.header().flags().contains(Flags::ENCRYPTED) {
            // Encrypted chunks are authenticated by AES-GCM instead (their stored CRC-32C is 0).
            part.crc32c = None;
        }
        part.check()?;
        Ok(part.stored)
    }

    /// Decompresses chunk `chunk` of an unencrypted STREAMING file.
    ///
    /// # Errors
    /// `DecryptionFailed` (key required) for encrypted files; `InvalidFormat` for a missing chunk
    /// or a corrupt stream.
    pub fn decode_chunk(&self, chunk: usize) -> Result<Cow<'_, [u8]>> {
        self.refuse_encrypted()?;
        self.check_chunk_limits(chunk)?;
        let stored = self.chunk(chunk)?;
        let declared = self
            .chunk_index
            .as_ref()
            .map_or(0, |index| index.entries()[chunk].uncompressed_size);
        decompress(
            self.header().compression(),
            stored,
            declared,
            Section::Payload,
        )
    }

    /// The decoded payload of an unencrypted file: borrowed when stored uncompressed, otherwise
    /// decompressed (all chunks, in order, for STREAMING files).
    ///
    /// # Errors
    /// `DecryptionFailed` (key required) for encrypted files; `InvalidFormat` for a corrupt stream
    /// or one whose size differs from the declared size.
    pub fn decode_payload(&self) -> Result<Cow<'_, [u8]>> {
        self.refuse_encrypted()?;
        self.check_limits()?;
        if self.lazy && self.chunk_index.is_none() {
            // A lazily opened TRUENO_NATIVE file: the trailer is the payload's only checksum
            // here (the zero-copy crate checks tensors one by one instead).
            self.verify_checksum()?;
        }
        let compression = self.header().compression();
        // Compressed chunks are checked by `decode_chunk` below; stored ones here.
        if self.lazy
            && compression == crate::Compression::None
            && let Some(index) = &self.chunk_index
        {
            for chunk in 0..index.len() {
                self.chunk(chunk)?;
            }
        }
        let Some(index) = self
            .chunk_index
            .as_ref()
            .filter(|_| compression != crate::Compression::None)
        else {
            return decompress(
                compression,
                self.payload(),
                self.uncompressed_size(),
                Section::Payload,
            );
        };
        let mut out = Vec::new();
        for chunk in 0..index.len() {
            out.extend_from_slice(&self.decode_chunk(chunk)?);
        }
        Ok(Cow::Owned(out))
    }

    /// The decoded payload of an unencrypted file as a reader, for decoding it into buffers of
    /// the caller's choosing (each record batch in its own, say) rather than one buffer the size of
    /// the payload. STREAMING files read as their chunks in order.
    ///
    /// Nothing unverified is read. In a fully verified envelope the CRC32 has covered every byte;
    /// in a lazily opened one each chunk's CRC-32C is checked as the reader reaches the chunk,
    /// just before its bytes are used (so the bytes are still in the processor's cache when they
    /// are copied or decompressed), and a TRUENO_NATIVE payload without chunks has the whole-file
    /// CRC32 checked here.
    ///
    /// # Errors
    /// `DecryptionFailed` (key required) for encrypted files; `ChecksumMismatch`; `InvalidFormat`
    /// for a stored payload or chunk whose length differs from its declared size or a zstd payload
    /// that is not one frame. Reads fail with the typed error inside the `io::Error`
    /// ([`Error::from_reader`]).
    pub fn payload_reader(&self) -> Result<PayloadReader<'_>> {
        self.refuse_encrypted()?;
        self.check_limits()?;
        if self.lazy && self.chunk_index.is_none() {
            self.verify_checksum()?;
        }
        let parts = match &self.chunk_index {
            Some(index) => (0..index.len())
                .map(|chunk| self.payload_part(index, chunk))
                .collect(),
            None => vec![PayloadPart {
                stored: self.payload(),
                declared: self.uncompressed_size(),
                crc32c: None,
            }],
        };
        PayloadReader::new(self.header().compression(), parts)
    }

    /// The decoded bytes of chunk `chunk` of an unencrypted STREAMING file as a reader, checked
    /// as [`Envelope::payload_reader`] checks each chunk. Chunks decode independently, so several
    /// readers may run at once (on several threads: an `Envelope` over shareable bytes is `Sync`).
    ///
    /// # Errors
    /// As [`Envelope::payload_reader`]; `InvalidFormat` if the file is not STREAMING or has no
    /// such chunk.
    pub fn chunk_reader(&self, chunk: usize) -> Result<PayloadReader<'_>> {
        self.refuse_encrypted()?;
        self.check_chunk_limits(chunk)?;
        PayloadReader::new(self.header().compression(), vec![self.chunk_part(chunk)?])
    }

    /// Chunk `chunk` as a part of a payload reader (see [`Envelope::payload_part`]).
    fn chunk_part(&self, chunk: usize) -> Result<PayloadPart<'_>> {
        let index = self.chunk_index.as_ref().ok_or(FormatError::Inconsistent {
            reason: "chunks were requested from a file without the STREAMING flag",
        })?;
        if chunk >= index.len() {
            return Err(FormatError::NoSuchChunk {
                chunk: chunk as u64,
                count: index.len() as u64,
            }
            .into());
        }
        Ok(self.payload_part(index, chunk))
    }

    /// Chunk `chunk` (in range) as a part of a payload reader, with its CRC-32C to check if the
    /// envelope was opened lazily.
    fn payload_part(&self, index: &ChunkIndex, chunk: usize) -> PayloadPart<'_> {
        let entry = &index.entries()[chunk];
        let payload = self.layout.span(Section::Payload).unwrap_or_default();
        let span = Span {
            offset: payload.offset + entry.stored_offset,
            len: entry.stored_size,
        };
        PayloadPart {
            stored: &self.bytes.as_ref()[to_range(span)],
            declared: entry.uncompressed_size,
            crc32c: self.lazy.then_some(entry.stored_crc32c),
        }
    }

    fn refuse_encrypted(&self) -> Result<()> {
        refuse_encrypted(self.header())
    }

    /// The parts of this file, borrowed, ready to be changed and written again. Writing them
    /// unchanged gives back the same bytes.
    #[must_use]
    pub fn to_parts(&self) -> EnvelopeParts<'_> {
        let header = self.header();
        let optional = |section| self.section(section).map(Cow::Borrowed);
        let payload = match &self.chunk_index {
            Some(index) => Payload::Chunked {
                index: index.clone(),
                stored: Cow::Borrowed(self.payload()),
            },
            None => Payload::Whole {
                stored: Cow::Borrowed(self.payload()),
                uncompressed_size: self.uncompressed_size(),
            },
        };
        EnvelopeParts {
            format: header.format(),
            version: header.version(),
            type_id: header.type_id(),
            compression: header.compression(),
            quantized: header.flags().contains(Flags::QUANTIZED),
            num_rows: header.num_rows(),
            metadata: Cow::Borrowed(self.metadata()),
            schema: Cow::Borrowed(self.schema()),
            tensor_index: optional(Section::TensorIndex),
            encryption: optional(Section::Encryption),
            payload,
            signature: optional(Section::Signature),
            license: optional(Section::License),
        }
    }
}

/// Checks chunk `chunk`'s declared decoded size against `limits` (compressed files only: stored
/// bytes decode to themselves). Shared by [`Envelope`] and [`crate::RangedEnvelope`].
pub(crate) fn check_chunk_limits(
    limits: &Limits,
    header: &Header,
    index: Option<&ChunkIndex>,
    chunk: usize,
) -> Result<()> {
    if header.compression() == crate::Compression::None {
        return Ok(());
    }
    if let Some(entry) = index.and_then(|index| index.entries().get(chunk)) {
        limits.check_chunk(
            Some(chunk as u64),
            entry.stored_size,
            entry.uncompressed_size,
        )?;
    }
    Ok(())
}

/// `DecryptionFailed` (key required) for an encrypted file, whose payload only a decryptor reads.
pub(crate) fn refuse_encrypted(header: &Header) -> Result<()> {
    if header.flags().contains(Flags::ENCRYPTED) {
        return Err(Error::DecryptionFailed(DecryptionFailure::KeyRequired));
    }
    Ok(())
}

fn to_usize(offset: u64) -> usize {
    // Spans come from a walk over an in-memory slice, so they are below its usize length.
    usize::try_from(offset).unwrap_or(usize::MAX)
}

fn to_range(span: Span) -> Range<usize> {
    to_usize(span.offset)..to_usize(span.end())
}

impl Envelope<Vec<u8>> {
    /// Verifies an owned buffer (see [`Envelope::parse`]).
    ///
    /// # Errors
    /// As [`Envelope::parse`].
    pub fn from_vec(bytes: Vec<u8>, format: Format) -> Result<Self> {
        Self::parse(bytes, format)
    }
}
