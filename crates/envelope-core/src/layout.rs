//! Walking the sections of an envelope without understanding their contents (000 §2, 001 §2).
//!
//! After the header come, in this order: metadata (`metadata_size` bytes), schema (`schema_size`
//! bytes, `.ald` only), then the optional *framed* sections that precede the payload — tensor
//! index (TRUENO_NATIVE), chunk index (STREAMING), encryption block (ENCRYPTED) — then the payload,
//! then the framed signature block (SIGNED) and license block (LICENSED), then the CRC32 trailer.
//! A framed section is a little-endian u32 body length followed by the body, so every section's
//! extent is known without parsing it.
//!
//! The walk checks, in the specs' order: magic, version, CRC32 of everything before the trailer,
//! the remaining header rules, then every section's bounds against the bytes actually present, the
//! chunk index's consistency with the header, and that nothing follows the last section.

use alloc::vec;
use alloc::vec::Vec;

use crate::chunk_index::{ChunkIndex, masked_prefix_crc32c};
use crate::codec::Reader;
use crate::error::{Error, FormatError, Result, Section};
use crate::header::{CHECKSUM_LEN, Compression, DeclaredSize, Flags, Format, HEADER_LEN, Header};

/// Bytes of a framed section's length prefix.
pub const FRAME_PREFIX_LEN: usize = 4;

/// Where a section's body lies in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Span {
    /// Offset of the first body byte from the start of the file.
    pub offset: u64,
    /// Body length in bytes (excluding a frame's length prefix).
    pub len: u64,
}

impl Span {
    /// One past the last byte.
    #[must_use]
    pub const fn end(&self) -> u64 {
        self.offset + self.len
    }
}

/// The validated positions of every section of one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    header: Header,
    metadata: Span,
    schema: Span,
    tensor_index: Option<Span>,
    chunk_index: Option<Span>,
    encryption: Option<Span>,
    payload: Span,
    signature: Option<Span>,
    license: Option<Span>,
    checksum: u32,
    file_len: u64,
}

impl Layout {
    /// The validated header.
    #[must_use]
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The body span of `section`, if the file has it. Metadata, payload and checksum are always
    /// present; the schema only in `.ald` files.
    #[must_use]
    pub fn span(&self, section: Section) -> Option<Span> {
        match section {
            Section::Header => Some(Span {
                offset: 0,
                len: HEADER_LEN as u64,
            }),
            Section::Metadata => Some(self.metadata),
            Section::Schema => (self.header.format() == Format::Dataset).then_some(self.schema),
            Section::TensorIndex => self.tensor_index,
            Section::ChunkIndex => self.chunk_index,
            Section::Encryption => self.encryption,
            Section::Payload => Some(self.payload),
            Section::Signature => self.signature,
            Section::License => self.license,
            Section::Checksum => Some(Span {
                offset: self.checksum_offset(),
                len: CHECKSUM_LEN as u64,
            }),
        }
    }

    /// Every present section with its body span and whether it is framed, in file order.
    #[must_use]
    pub fn sections(&self) -> Vec<(Section, Span, bool)> {
        [
            (Section::Header, false),
            (Section::Metadata, false),
            (Section::Schema, false),
            (Section::TensorIndex, true),
            (Section::ChunkIndex, true),
            (Section::Encryption, true),
            (Section::Payload, false),
            (Section::Signature, true),
            (Section::License, true),
            (Section::Checksum, false),
        ]
        .into_iter()
        .filter_map(|(section, framed)| self.span(section).map(|span| (section, span, framed)))
        .collect()
    }

    /// The CRC32 stored in (and verified against) the trailer.
    #[must_use]
    pub fn checksum(&self) -> u32 {
        self.checksum
    }

    /// Offset of the CRC32 trailer, which is also the length of the checksummed bytes.
    #[must_use]
    pub fn checksum_offset(&self) -> u64 {
        self.file_len - CHECKSUM_LEN as u64
    }

    /// Total file length.
    #[must_use]
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// The byte ranges a signature covers, in file order: every byte except the signature block's
    /// body and the CRC32 trailer (`docs/envelope.md` §5); the second is empty for an unsigned file.
    #[must_use]
    pub fn signed_ranges(&self) -> [core::ops::Range<u64>; 2] {
        let end = self.checksum_offset();
        match self.signature {
            Some(span) => [0..span.offset, span.end()..end],
            None => [0..end, end..end],
        }
    }
}

/// Random access to the bytes of a file being walked.
pub(crate) trait ByteSource {
    /// Total length.
    fn len(&self) -> u64;
    /// Fills `buf` from `offset`; the caller has checked the range is within `len()`.
    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<()>;
    /// CRC32 of the first `len` bytes.
    fn crc32_of_prefix(&mut self, len: u64) -> Result<u32>;
    /// The `prefix_crc32c` of the first `len` bytes (`masked_prefix_crc32c`); the caller has
    /// checked `len` is within `len()`.
    fn masked_crc32c_of_prefix(&mut self, len: u64) -> Result<u32> {
        let len = Error::fit_in_memory("the bytes before an index's prefix_crc32c", len)?;
        let mut prefix = vec![0u8; len];
        self.read_exact_at(0, &mut prefix)?;
        Ok(masked_prefix_crc32c(&prefix))
    }
}

impl ByteSource for &[u8] {
    fn len(&self) -> u64 {
        <[u8]>::len(self) as u64
    }

    fn read_exact_at(&mut self, offset: u64, buf: &mut [u8]) -> Result<()> {
        let start = usize::try_from(offset).ok();
        let slice = start.and_then(|start| self.get(start..start.checked_add(buf.len())?));
        let slice = slice.ok_or_else(|| {
            Error::truncated(
                Section::Header,
                offset,
                buf.len() as u64,
                ByteSource::len(self).saturating_sub(offset),
            )
        })?;
        buf.copy_from_slice(slice);
        Ok(())
    }

    fn crc32_of_prefix(&mut self, len: u64) -> Result<u32> {
        let too_long = || Error::TooLarge {
            what: "the prefix to check",
            size: len,
            max: ByteSource::len(self),
        };
        let prefix = usize::try_from(len)
            .ok()
            .and_then(|len| self.get(..len))
            .ok_or_else(too_long)?;
        Ok(crc32fast::hash(prefix))
    }

    fn masked_crc32c_of_prefix(&mut self, len: u64) -> Result<u32> {
        let len = Error::fit_in_memory("the bytes before an index's prefix_crc32c", len)?;
        let prefix = self.get(..len).ok_or_else(|| {
            Error::truncated(Section::Header, 0, len as u64, ByteSource::len(self))
        })?;
        Ok(masked_prefix_crc32c(prefix))
    }
}

/// Walks and validates the whole file. With `expected`, a file of the other format is refused
/// right after the magic check.
pub(crate) fn walk(
    source: &mut impl ByteSource,
    expected: Option<Format>,
) -> Result<(Layout, Option<ChunkIndex>)> {
    let (head, head_len) = identify_head(source, expected)?;
    let file_len = source.len();

    // 3. Checksum, before any other field is trusted.
    let checksum_offset = file_len - CHECKSUM_LEN as u64;
    let mut trailer = [0u8; CHECKSUM_LEN];
    source.read_exact_at(checksum_offset, &mut trailer)?;
    let stored = u32::from_le_bytes(trailer);
    let computed = source.crc32_of_prefix(checksum_offset)?;
    if stored != computed {
        return Err(Error::ChecksumMismatch { stored, computed });
    }

    // 4. Every other header rule, then the sections.
    let header = Header::parse(&head[..head_len])?;
    walk_sections(source, header, stored, true)
}

/// The walk of [`walk`] in another order, for callers that read every byte once anyway (a
/// signature's digest): the structure first (magic, version, header rules, section bounds, reading
/// only the header and the frames' lengths), then `pass`, which reads every byte before the
/// trailer and returns their CRC32 with whatever else it computed on the same read, then the CRC32
/// comparison. A file the structural walk refuses is walked again in [`walk`]'s order, so the error
/// is the one [`walk`] gives (a `ChecksumMismatch` before any header rule).
#[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
pub(crate) fn walk_then_crc<S: ByteSource, T>(
    source: &mut S,
    expected: Option<Format>,
    pass: impl FnOnce(&mut S, &Layout) -> Result<(u32, T)>,
) -> Result<(Layout, Option<ChunkIndex>, T)> {
    let structural = identify_head(source, expected).and_then(|(head, head_len)| {
        let mut trailer = [0u8; CHECKSUM_LEN];
        source.read_exact_at(source.len() - CHECKSUM_LEN as u64, &mut trailer)?;
        let header = Header::parse(&head[..head_len])?;
        walk_sections(source, header, u32::from_le_bytes(trailer), true)
    });
    let (layout, index) = match structural {
        Ok(walked) => walked,
        Err(refused) => return Err(walk(source, expected).err().unwrap_or(refused)),
    };
    let (computed, value) = pass(source, &layout)?;
    let stored = layout.checksum();
    if computed != stored {
        return Err(Error::ChecksumMismatch { stored, computed });
    }
    Ok((layout, index, value))
}

/// Steps 1-2 of the walk (magic, the caller's format, version) and the minimum length: the
/// header's bytes (fewer than 32 only if the file is shorter, which then fails here).
fn identify_head(
    source: &mut impl ByteSource,
    expected: Option<Format>,
) -> Result<([u8; HEADER_LEN], usize)> {
    let file_len = source.len();
    let mut head = [0u8; HEADER_LEN];
    let head_len = usize::try_from(file_len.min(HEADER_LEN as u64)).unwrap_or(HEADER_LEN);
    source.read_exact_at(0, &mut head[..head_len])?;
    if let (Some(expected), Some(magic)) = (expected, head[..head_len].get(..4)) {
        let found = Format::from_magic([magic[0], magic[1], magic[2], magic[3]]);
        if let Some(found) = found.filter(|found| *found != expected) {
            return Err(FormatError::WrongFormat { expected, found }.into());
        }
    }
    crate::header::identify(&head[..head_len])?;
    let minimum = (HEADER_LEN + CHECKSUM_LEN) as u64;
    if file_len < minimum {
        return Err(Error::truncated(Section::Header, 0, minimum, file_len));
    }
    Ok((head, head_len))
}

/// The lazy walk of a STREAMING or TRUENO_NATIVE file (`Envelope::parse_lazy`, and
/// `RangedEnvelope::open` over the head and tail of a file): instead of the whole-file CRC32, the
/// `prefix_crc32c` of the last index before the payload (the chunk index, else the tensor index)
/// is checked over the bytes before it, which is all that is interpreted; chunks (or tensors, by
/// the zero-copy crate) are checked one by one when read. Returns `lazy = false` (after the full
/// walk) for a file with neither flag.
///
/// Bytes are read in this order, and only these: the header, the frames' length prefixes up to
/// the last index, the bytes before that index's `prefix_crc32c` and the field itself, the
/// trailer, then (in [`walk_sections`]) the frames' length prefixes again, the chunk index's body
/// and the length prefixes of the frames after the payload. No payload byte is read.
pub(crate) fn walk_lazy<S: ByteSource>(
    source: &mut S,
    expected: Option<Format>,
) -> Result<(Layout, Option<ChunkIndex>, bool)> {
    let (head, _) = identify_head(source, expected)?;
    let raw_flags = head[crate::FLAGS_OFFSET];
    let streaming = raw_flags & Flags::STREAMING.bits() != 0;
    let trueno = raw_flags & Flags::TRUENO_NATIVE.bits() != 0;
    if !streaming && !trueno {
        return walk(source, expected).map(|(layout, index)| (layout, index, false));
    }
    // Locate the indexes from the raw size fields alone; nothing found on the way is used
    // unless the prefix CRC-32C below matches.
    let format =
        Format::from_magic([head[0], head[1], head[2], head[3]]).unwrap_or(Format::Dataset);
    // The size fields as the header lays them out; `Header::parse` checks the rest below.
    let mut fields = Reader::new(&head[8..]);
    let metadata_size = fields.u32().unwrap_or_default();
    let schema_size = match format {
        Format::Dataset => Reader::new(&head[22..]).u16().unwrap_or_default(),
        Format::Model => 0,
    };
    let checksum_offset = source.len() - CHECKSUM_LEN as u64;
    let mut walker = Walker {
        source: &mut *source,
        at: HEADER_LEN as u64,
        end: checksum_offset,
    };
    walker.fixed(Section::Metadata, u64::from(metadata_size))?;
    walker.fixed(Section::Schema, u64::from(schema_size))?;
    let tensor_index = walker.framed_if(trueno, Section::TensorIndex)?;
    // The last index before the payload carries the CRC-32C of every byte before it.
    let (index, section) = match walker.framed_if(streaming, Section::ChunkIndex)? {
        Some(chunk_index) => (chunk_index, Section::ChunkIndex),
        None => (tensor_index.unwrap_or_default(), Section::TensorIndex),
    };
    if index.len < crate::chunk_index::CHUNK_INDEX_SUFFIX_LEN as u64 {
        return Err(Error::truncated(
            section,
            index.offset,
            crate::chunk_index::CHUNK_INDEX_SUFFIX_LEN as u64,
            index.len,
        ));
    }
    let field = index.end() - crate::chunk_index::CHUNK_INDEX_SUFFIX_LEN as u64;
    let mut stored = [0u8; crate::chunk_index::CHUNK_INDEX_SUFFIX_LEN];
    source.read_exact_at(field, &mut stored)?;
    let stored = u32::from_le_bytes(stored);
    let computed = source.masked_crc32c_of_prefix(field)?;
    if stored != computed {
        return Err(Error::ChecksumMismatch { stored, computed });
    }
    let header = Header::parse(&head)?;
    let mut trailer = [0u8; CHECKSUM_LEN];
    source.read_exact_at(checksum_offset, &mut trailer)?;
    walk_sections(source, header, u32::from_le_bytes(trailer), false)
        .map(|(layout, index)| (layout, index, true))
}

/// Steps 5-7 of the walk: every section's bounds, the chunk index (with its `prefix_crc32c` when
/// `check_prefix`; the lazy walk has checked it already), and nothing after the last section.
fn walk_sections(
    source: &mut impl ByteSource,
    header: Header,
    checksum: u32,
    check_prefix: bool,
) -> Result<(Layout, Option<ChunkIndex>)> {
    let file_len = source.len();
    let checksum_offset = file_len - CHECKSUM_LEN as u64;
    let flags = header.flags();
    let mut walker = Walker {
        source,
        at: HEADER_LEN as u64,
        end: checksum_offset,
    };
    let metadata = walker.fixed(Section::Metadata, u64::from(header.metadata_size()))?;
    let schema = walker.fixed(Section::Schema, u64::from(header.schema_size()))?;
    let tensor_index =
        walker.framed_if(flags.contains(Flags::TRUENO_NATIVE), Section::TensorIndex)?;
    if let Some(span) = tensor_index.filter(|_| check_prefix) {
        if span.len < crate::chunk_index::CHUNK_INDEX_SUFFIX_LEN as u64 {
            return Err(Error::truncated(
                Section::TensorIndex,
                span.offset,
                crate::chunk_index::CHUNK_INDEX_SUFFIX_LEN as u64,
                span.len,
            ));
        }
        check_prefix_crc(walker.source, span, "tensor index prefix_crc32c")?;
    }
    let chunk_span = walker.framed_if(flags.contains(Flags::STREAMING), Section::ChunkIndex)?;
    let encryption = walker.framed_if(flags.contains(Flags::ENCRYPTED), Section::Encryption)?;

    let chunk_index = match chunk_span {
        Some(span) => {
            let index = ChunkIndex::parse(&walker.read_body(span)?)?;
            if check_prefix {
                let field = span.end() - crate::chunk_index::CHUNK_INDEX_SUFFIX_LEN as u64;
                let len = Error::fit_in_memory(
                    "the bytes before the chunk index's prefix_crc32c",
                    field,
                )?;
                let mut prefix = vec![0u8; len];
                walker.source.read_exact_at(0, &mut prefix)?;
                let computed = masked_prefix_crc32c(&prefix);
                if computed != index.prefix_crc32c() {
                    return Err(FormatError::SizeMismatch {
                        what: "chunk index prefix_crc32c",
                        declared: u64::from(index.prefix_crc32c()),
                        found: u64::from(computed),
                    }
                    .into());
                }
            }
            Some(index)
        }
        None => None,
    };
    let (payload_size, _) = declared_totals(&header, chunk_index.as_ref())?;
    let payload = walker.fixed(Section::Payload, payload_size)?;
    let signature = walker.framed_if(flags.contains(Flags::SIGNED), Section::Signature)?;
    let license = walker.framed_if(flags.contains(Flags::LICENSED), Section::License)?;
    if walker.at != walker.end {
        return Err(FormatError::TrailingBytes {
            offset: walker.at,
            count: walker.end - walker.at,
        }
        .into());
    }

    let layout = Layout {
        header,
        metadata,
        schema,
        tensor_index,
        chunk_index: chunk_span,
        encryption,
        payload,
        signature,
        license,
        checksum,
        file_len,
    };
    Ok((layout, chunk_index))
}

/// Checks the `prefix_crc32c` in the last 4 bytes of the index body `span` (at least 4 bytes)
/// against the bytes before it (full walk: the trailer has already been verified, so a mismatch is
/// a structural fault, `SizeMismatch`).
fn check_prefix_crc(source: &mut impl ByteSource, span: Span, what: &'static str) -> Result<()> {
    let field = span.end() - crate::chunk_index::CHUNK_INDEX_SUFFIX_LEN as u64;
    let len = Error::fit_in_memory("the bytes up to the end of the index", span.end())?;
    let mut prefix = vec![0u8; len];
    source.read_exact_at(0, &mut prefix)?;
    let (covered, stored) =
        prefix.split_at(prefix.len() - crate::chunk_index::CHUNK_INDEX_SUFFIX_LEN);
    let stored = Reader::new(stored).u32().unwrap_or_default();
    let computed = masked_prefix_crc32c(covered);
    debug_assert_eq!(covered.len() as u64, field);
    if computed != stored {
        return Err(FormatError::SizeMismatch {
            what,
            declared: u64::from(stored),
            found: u64::from(computed),
        }
        .into());
    }
    Ok(())
}

/// The stored and decoded payload sizes, reconciling the header's u32 fields with the chunk
/// index's u64 totals (the large-file path).
pub(crate) fn declared_totals(header: &Header, index: Option<&ChunkIndex>) -> Result<(u64, u64)> {
    let Some(index) = index else {
        // Without an index, Header::new guarantees both fields are exact.
        let stored = header.payload_size().exact().unwrap_or(0);
        let decoded = header.uncompressed_size().exact().unwrap_or(0);
        return Ok((stored, decoded));
    };
    let pairs = [
        ("payload_size", header.payload_size(), index.payload_size()),
        (
            "uncompressed_size",
            header.uncompressed_size(),
            index.uncompressed_size(),
        ),
    ];
    for (what, declared, total) in pairs {
        // The header must hold the exact value when it fits, the sentinel only when it does not.
        if declared != DeclaredSize::for_size(total) {
            return Err(FormatError::SizeMismatch {
                what,
                declared: declared.exact().unwrap_or(u64::from(u32::MAX)),
                found: total,
            }
            .into());
        }
    }
    if header.format() == Format::Dataset && index.item_count() != header.num_rows() {
        return Err(FormatError::SizeMismatch {
            what: "num_rows against the chunk index's rows",
            declared: header.num_rows(),
            found: index.item_count(),
        }
        .into());
    }
    let encrypted = header.flags().contains(Flags::ENCRYPTED);
    if encrypted && index.entries().iter().any(|entry| entry.stored_crc32c != 0) {
        return Err(FormatError::Inconsistent {
            reason: "an encrypted file's chunk checksums must be zero",
        }
        .into());
    }
    let plain = header.compression() == Compression::None && !encrypted;
    if plain
        && let Some(entry) = index
            .entries()
            .iter()
            .find(|entry| entry.stored_size != entry.uncompressed_size)
    {
        return Err(FormatError::SizeMismatch {
            what: "stored_size of an uncompressed chunk",
            declared: entry.uncompressed_size,
            found: entry.stored_size,
        }
        .into());
    }
    Ok((index.payload_size(), index.uncompressed_size()))
}

struct Walker<'s, S> {
    source: &'s mut S,
    at: u64,
    end: u64,
}

impl<S: ByteSource> Walker<'_, S> {
    fn remaining(&self) -> u64 {
        self.end - self.at
    }

    fn fixed(&mut self, section: Section, len: u64) -> Result<Span> {
        if len > self.remaining() {
            return Err(Error::truncated(section, self.at, len, self.remaining()));
        }
        let span = Span {
            offset: self.at,
            len,
        };
        self.at += len;
        Ok(span)
    }

    fn framed_if(&mut self, present: bool, section: Section) -> Result<Option<Span>> {
        if !present {
            return Ok(None);
        }
        let prefix = self.fixed(section, FRAME_PREFIX_LEN as u64)?;
        let mut len = [0u8; FRAME_PREFIX_LEN];
        self.source.read_exact_at(prefix.offset, &mut len)?;
        self.fixed(section, u64::from(u32::from_le_bytes(len)))
            .map(Some)
    }

    /// Reads a body the walk has already bounded by the file's length.
    fn read_body(&mut self, span: Span) -> Result<Vec<u8>> {
        let len = usize::try_from(span.len).map_err(|_| Error::SectionTooLarge {
            section: Section::ChunkIndex,
            size: span.len,
            max: usize::MAX as u64,
        })?;
        let mut body = vec![0u8; len];
        self.source.read_exact_at(span.offset, &mut body)?;
        Ok(body)
    }
}
