//! Writing TRUENO_NATIVE envelopes and reading their tensors in place.

use std::borrow::Cow;
use std::sync::OnceLock;

use envelope_core::{
    ChunkIndex, Compression, Envelope, EnvelopeParts, Error, Flags, Format, Payload, Result,
    Section,
};

use crate::index::{ALIGNMENT, TensorEntry, TensorIndex};
use crate::view::TensorView;

/// Gives `parts` the aligned layout: the tensor index (with every tensor's CRC-32C), padding that
/// puts the payload on a 64-byte boundary of the file, and the payload itself, each tensor at its
/// planned offset with zero bytes in the gaps. `tensors[i]` holds the bytes of entry `i`,
/// little-endian.
///
/// With `chunk_bytes`, the payload is also STREAMING (TRUENO_NATIVE + STREAMING, the only way to
/// store more than 4 GiB: the header then says `0xFFFFFFFF` and the chunk index holds the u64
/// sizes, docs/envelope.md §4):
/// - a model (`.apr`) groups whole tensors into chunks of about `chunk_bytes` bytes, each chunk's
///   item count being its number of tensors, so a chunk boundary never splits a tensor;
/// - a dataset (`.ald`) has exactly one chunk covering the whole payload, whatever `chunk_bytes`
///   says: its chunk items are rows (docs/ald.md §6), and every array holds every row, so the one
///   chunk has `first_item` 0 and `item_count` = `parts.num_rows` (docs/zerocopy.md §10.1).
///
/// # Errors
/// `Usage` if `parts` are compressed or encrypted (zero-copy needs the bytes as stored), or if the
/// tensor bytes do not match the index.
pub fn aligned_parts<'a>(
    mut parts: EnvelopeParts<'a>,
    mut index: TensorIndex,
    tensors: &[&[u8]],
    chunk_bytes: Option<u64>,
) -> Result<EnvelopeParts<'a>> {
    if parts.compression != Compression::None || parts.encryption.is_some() {
        return Err(Error::InvalidArgument(
            "zero-copy (TRUENO_NATIVE) files are stored uncompressed and unencrypted",
        ));
    }
    if tensors.len() != index.len() {
        return Err(Error::ArgumentMismatch {
            what: "byte slices against the tensors of the index (one each)",
            expected: index.len() as u64,
            found: tensors.len() as u64,
        });
    }
    let mut payload = vec![0u8; Error::fit_in_memory("the payload's length", index.payload_len())?];
    for (position, bytes) in tensors.iter().enumerate() {
        let entry = &index.entries()[position];
        if bytes.len() as u64 != entry.size_bytes {
            return Err(Error::ArgumentMismatch {
                what: "a tensor's bytes against its index entry's size_bytes",
                expected: entry.size_bytes,
                found: bytes.len() as u64,
            });
        }
        let start = Error::fit_in_memory("a tensor's offset", entry.offset)?;
        payload[start..start + bytes.len()].copy_from_slice(bytes);
        index.set_crc32c(position, crc32c::crc32c(bytes))?;
    }
    parts.payload = match chunk_bytes {
        None => Payload::Whole {
            uncompressed_size: payload.len() as u64,
            stored: Cow::Owned(payload),
        },
        Some(target) => Payload::Chunked {
            index: match parts.format {
                // Every array holds every row: one chunk of all rows (docs/zerocopy.md §10.1).
                Format::Dataset => {
                    let len = payload.len() as u64;
                    ChunkIndex::from_sizes([(len, len, parts.num_rows)])?
                }
                Format::Model => chunks_of_whole_tensors(&index, target)?,
            },
            stored: Cow::Owned(payload),
        },
    };
    // Pad the index so the payload starts on a 64-byte boundary: measure with no padding first.
    parts.tensor_index = Some(index.encode(parts.format, 0)?.into());
    let before = parts.bytes_before_payload()?.len() as u64;
    let padding = usize::try_from((ALIGNMENT - before % ALIGNMENT) % ALIGNMENT).unwrap_or(0);
    parts.tensor_index = Some(index.encode(parts.format, padding)?.into());
    Ok(parts)
}

/// Chunks of consecutive whole tensors, each closed once it reaches `target` bytes; the padding
/// before a tensor belongs to the chunk that holds the tensor.
fn chunks_of_whole_tensors(index: &TensorIndex, target: u64) -> Result<ChunkIndex> {
    let mut sizes = Vec::new();
    let (mut start, mut items) = (0u64, 0u64);
    let entries = index.entries();
    for position in 0..entries.len() {
        items += 1;
        let end = entries
            .get(position + 1)
            .map_or(index.payload_len(), |next| next.offset);
        if end - start >= target.max(1) || position + 1 == entries.len() {
            sizes.push((end - start, end - start, items));
            (start, items) = (end, 0);
        }
    }
    ChunkIndex::from_sizes(sizes)
}

/// How much a reader checks before handing out tensor bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Integrity {
    /// The default: opening checks the header and index (their CRC-32C), and each tensor's
    /// CRC-32C is checked the first time it is read. Opening costs the same for 100 MiB and
    /// 10 GiB; reading a tensor costs one pass over it, once. No unverified byte is handed out.
    #[default]
    PerTensor,
    /// Check the whole-file CRC32 at open (one pass over the file), then hand tensors out
    /// unchecked.
    AtOpen,
    /// The caller has already verified every byte (for example the file's Ed25519 signature,
    /// checked once after download, or `AtOpen` on an earlier open of the same immutable file):
    /// check the header and index only.
    Trusted,
}

/// The aligned tensors of one TRUENO_NATIVE file, read in place from its bytes (a memory map
/// natively, any byte buffer elsewhere).
pub struct AlignedTensors<B> {
    envelope: Envelope<B>,
    index: TensorIndex,
    payload_offset: usize,
    integrity: Integrity,
    /// Per tensor, the outcome of its CRC-32C check, computed once.
    checked: Vec<OnceLock<std::result::Result<(), (u32, u32)>>>,
}

impl<B> core::fmt::Debug for AlignedTensors<B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("AlignedTensors")
            .field("tensors", &self.index.len())
            .field("integrity", &self.integrity)
            .finish_non_exhaustive()
    }
}

impl<B: AsRef<[u8]>> AlignedTensors<B> {
    /// Opens the TRUENO_NATIVE file in `bytes` as `format`, checking as `integrity` says.
    ///
    /// Bounds, sizes and the payload's 64-byte alignment in the file are checked here, once; a
    /// tensor handed out later needs no further checks but its checksum (and its type, when asked
    /// for a typed slice).
    ///
    /// # Errors
    /// The envelope's errors (`InvalidFormat`, `ChecksumMismatch`, ...); `Usage` for a file
    /// without TRUENO_NATIVE, or an encrypted one (which has no zero-copy form: decrypt it with
    /// the format crate's in-memory loader); `InvalidFormat` for an index that breaks a rule, a
    /// payload that is not exactly the tensors and the zero padding between them, or a STREAMING
    /// dataset of more than one chunk (docs/zerocopy.md §10.1).
    pub fn open(bytes: B, format: Format, integrity: Integrity) -> Result<Self> {
        let envelope = match integrity {
            Integrity::AtOpen => Envelope::parse(bytes, format)?,
            Integrity::PerTensor | Integrity::Trusted => Envelope::parse_lazy(bytes, format)?,
        };
        let flags = envelope.header().flags();
        if flags.contains(Flags::ENCRYPTED) {
            return Err(Error::InvalidArgument(
                "an encrypted file has no zero-copy form: load it with a key through the in-memory path",
            ));
        }
        let body = envelope
            .section(Section::TensorIndex)
            .ok_or(Error::InvalidArgument(
                "the file is not TRUENO_NATIVE: it has no aligned tensors (convert it with --trueno-native)",
            ))?;
        let index = TensorIndex::parse(format, body)?;
        if format == Format::Dataset
            && envelope
                .chunk_index()
                .is_some_and(|chunks| chunks.len() != 1)
        {
            // Every array holds every row, and a dataset's chunk items are rows.
            return Err(Error::InvalidFormat(
                envelope_core::FormatError::Inconsistent {
                    reason: "a STREAMING TRUENO_NATIVE dataset has exactly one chunk, holding every row",
                },
            ));
        }
        let payload = envelope.layout().span(Section::Payload).unwrap_or_default();
        if !payload.offset.is_multiple_of(ALIGNMENT) {
            return Err(malformed(
                "the payload does not start on a 64-byte boundary",
            ));
        }
        let payload_offset = Error::fit_in_memory("the payload's offset", payload.offset)?;
        // The payload is exactly the tensors and the zero padding between them: every byte is
        // then covered by a tensor's CRC-32C or known to be zero (docs/zerocopy.md §2).
        let payload_bytes = usize::try_from(payload.len)
            .ok()
            .and_then(|len| {
                envelope
                    .as_bytes()
                    .get(payload_offset..payload_offset.checked_add(len)?)
            })
            .ok_or(Error::TooLarge {
                what: "the payload's end",
                size: payload.end(),
                max: envelope.as_bytes().len() as u64,
            })?;
        index.check_payload(payload_bytes)?;
        let checked = (0..index.len()).map(|_| OnceLock::new()).collect();
        Ok(Self {
            envelope,
            index,
            payload_offset,
            integrity,
            checked,
        })
    }

    /// The index.
    #[must_use]
    pub fn index(&self) -> &TensorIndex {
        &self.index
    }

    /// The envelope (header, metadata, sections).
    #[must_use]
    pub fn envelope(&self) -> &Envelope<B> {
        &self.envelope
    }

    /// Whether typed views borrow the file's bytes: true when the buffer itself is 64-byte
    /// aligned in memory, as a memory map (page-aligned) always is. A byte vector usually is
    /// not; its typed views then fail and [`TensorView::to_f32_vec`] copies instead.
    #[must_use]
    pub fn is_zero_copy(&self) -> bool {
        let base = self.envelope.as_bytes().as_ptr() as usize;
        (base as u64).is_multiple_of(ALIGNMENT)
    }

    /// The tensor called `name`, its checksum verified (once) under [`Integrity::PerTensor`].
    ///
    /// # Errors
    /// `Usage` (`NoSuchItem`) for an unknown name; `ChecksumMismatch` if the tensor's bytes do not
    /// match their CRC-32C.
    pub fn tensor(&self, name: &str) -> Result<TensorView<'_>> {
        let position = self.index.position(name).ok_or_else(|| Error::NoSuchItem {
            kind: "tensor",
            name: name.to_owned(),
        })?;
        self.tensor_at(position)
    }

    /// Tensor number `position` in index order.
    ///
    /// # Errors
    /// As [`AlignedTensors::tensor`].
    pub fn tensor_at(&self, position: usize) -> Result<TensorView<'_>> {
        let entry = self
            .index
            .entries()
            .get(position)
            .ok_or(Error::OutOfRange {
                what: "tensor",
                index: position as u64,
                len: self.index.len() as u64,
            })?;
        let bytes = self.bytes_of(entry);
        if self.integrity == Integrity::PerTensor {
            let outcome = self.checked[position].get_or_init(|| {
                let computed = crc32c::crc32c(bytes);
                if computed == entry.crc32c {
                    Ok(())
                } else {
                    Err((entry.crc32c, computed))
                }
            });
            if let Err((stored, computed)) = *outcome {
                return Err(Error::ChecksumMismatch { stored, computed });
            }
        }
        Ok(TensorView::new(entry, bytes))
    }

    /// Checks every tensor now (under [`Integrity::PerTensor`], each is then not checked again).
    ///
    /// # Errors
    /// The first tensor that fails.
    pub fn verify_all(&self) -> Result<()> {
        for position in 0..self.index.len() {
            self.tensor_at(position)?;
        }
        Ok(())
    }

    /// The byte range of `entry` in the file (checked at open to lie within the payload).
    #[must_use]
    pub fn file_range(&self, entry: &TensorEntry) -> core::ops::Range<usize> {
        let start = self.payload_offset + usize::try_from(entry.offset).unwrap_or(0);
        start..start + usize::try_from(entry.size_bytes).unwrap_or(0)
    }

    fn bytes_of(&self, entry: &TensorEntry) -> &[u8] {
        &self.envelope.as_bytes()[self.file_range(entry)]
    }
}

fn malformed(reason: &'static str) -> Error {
    Error::InvalidFormat(envelope_core::FormatError::MalformedBlock {
        section: Section::TensorIndex,
        reason,
    })
}
