//! Saving models to `.apr` bytes and loading them back (001 §2-§5), from memory: this is the path
//! `include_bytes!` models take (001 §1.1) and it builds for wasm32.
//!
//! Order of checks on load (001 §5.1): the envelope's magic, version, CRC32, header rules and
//! section bounds ([`Envelope::parse`]), then the model type against the caller's, then the
//! metadata map, then the payload; nothing of the payload is parsed before the checksum passed.
//! Signature and decryption checks, when the caller asks for them, come before the payload too
//! (`crate::commercial` and `envelope-sign`'s `Policy`).

#[cfg(feature = "std")]
use alloc::borrow::{Cow, ToOwned};
#[cfg(feature = "std")]
use alloc::vec::Vec;

#[cfg(feature = "std")]
use envelope_core::{Compression, EnvelopeParts, Payload};
use envelope_core::{Envelope, Format};
#[cfg(feature = "std")]
use serde::Serialize;
use serde::de::DeserializeOwned;

#[cfg(feature = "std")]
use crate::card::ModelCard;
#[cfg(feature = "std")]
use crate::card::TensorEntry;
use crate::card::{ModelMetadata, PayloadKind};
use crate::error::{Error, Result};
#[cfg(feature = "std")]
use crate::model::TensorModel;
use crate::model_type::ModelType;
use crate::tensor::DType;
#[cfg(feature = "std")]
use crate::tensor::Tensor;

/// Deepest nesting of MessagePack arrays and maps a serde payload may have (a decision tree of
/// depth 100 needs about 200). Deeper input is `InvalidFormat`, never a stack overflow.
pub const MAX_PAYLOAD_DEPTH: usize = 512;

/// How to write a model.
#[derive(Debug, Clone, PartialEq)]
#[cfg(feature = "std")]
pub struct SaveOptions {
    /// The model card.
    pub card: ModelCard,
    /// Payload compression (each tensor chunk is compressed alone).
    pub compression: Compression,
}

#[cfg(feature = "std")]
impl Default for SaveOptions {
    fn default() -> Self {
        Self {
            card: ModelCard::default(),
            compression: Compression::None,
        }
    }
}

/// The envelope parts of a serde model, ready to write, encrypt or sign.
///
/// # Errors
/// `Encode` if the model cannot be encoded as MessagePack; `Usage` if the compression is not
/// compiled in.
#[cfg(feature = "std")]
pub fn model_parts<M: Serialize + ?Sized>(
    model: &M,
    model_type: ModelType,
    options: &SaveOptions,
) -> Result<EnvelopeParts<'static>> {
    let body = rmp_serde::to_vec_named(model).map_err(|source| Error::Encode {
        what: "model",
        source,
    })?;
    let metadata = ModelMetadata {
        model_card: options.card.clone(),
        payload: PayloadKind::Serde,
        tensors: Vec::new(),
        quantization: None,
    };
    let mut parts = EnvelopeParts::new(Format::Model, model_type.id());
    parts.compression = options.compression;
    parts.metadata = Cow::Owned(metadata.encode()?);
    let payload = Payload::compressed(options.compression, &body)?;
    parts.payload = owned(payload);
    Ok(parts)
}

#[cfg(feature = "std")]
fn owned(payload: Payload<'_>) -> Payload<'static> {
    match payload {
        Payload::Whole {
            stored,
            uncompressed_size,
        } => Payload::Whole {
            stored: Cow::Owned(stored.into_owned()),
            uncompressed_size,
        },
        Payload::Chunked { index, stored } => Payload::Chunked {
            index,
            stored: Cow::Owned(stored.into_owned()),
        },
    }
}

/// A serde model as `.apr` bytes.
///
/// # Errors
/// As [`model_parts`].
#[cfg(feature = "std")]
pub fn save_to_bytes<M: Serialize + ?Sized>(
    model: &M,
    model_type: ModelType,
    options: &SaveOptions,
) -> Result<Vec<u8>> {
    Ok(model_parts(model, model_type, options)?.to_bytes()?)
}

/// The metadata of a tensor model.
#[cfg(feature = "std")]
pub(crate) fn tensor_metadata(model: &TensorModel, card: &ModelCard) -> ModelMetadata {
    ModelMetadata {
        model_card: card.clone(),
        payload: PayloadKind::Tensors,
        tensors: model
            .tensors
            .iter()
            .map(|t| TensorEntry {
                name: t.name.clone(),
                dtype: t.dtype.code(),
                shape: t.shape.clone(),
                quantizer: t.quantizer.clone(),
            })
            .collect(),
        quantization: model.quantization.clone(),
    }
}

/// The envelope parts of a tensor model: a STREAMING payload with one chunk per tensor, in order,
/// so one tensor loads alone and files past 4 GiB work (u64 chunk offsets).
///
/// # Errors
/// `DuplicateName` for duplicate names; `Usage` if the compression is not compiled in.
#[cfg(feature = "std")]
pub fn tensor_parts(
    model: &TensorModel,
    model_type: ModelType,
    options: &SaveOptions,
) -> Result<EnvelopeParts<'static>> {
    model.check_unique_names()?;
    let metadata = tensor_metadata(model, &options.card);
    let mut parts = EnvelopeParts::new(Format::Model, model_type.id());
    parts.compression = options.compression;
    parts.quantized = model.is_quantized();
    parts.metadata = Cow::Owned(metadata.encode()?);
    parts.payload = Payload::chunked(
        options.compression,
        model.tensors.iter().map(|t| (1, t.data())),
    )?;
    Ok(parts)
}

/// A tensor model as `.apr` bytes: the same bytes as `tensor_parts(..)?.to_bytes()`, written
/// chunk by chunk straight into the output ([`EnvelopeParts::begin_chunked`]) rather than through
/// a concatenated payload buffer.
///
/// # Errors
/// As [`tensor_parts`].
#[cfg(feature = "std")]
pub fn save_tensors_to_bytes(
    model: &TensorModel,
    model_type: ModelType,
    options: &SaveOptions,
) -> Result<Vec<u8>> {
    model.check_unique_names()?;
    let stored = model
        .tensors
        .iter()
        .map(|t| envelope_core::compression::compress(options.compression, t.data()))
        .collect::<envelope_core::Result<Vec<_>>>()?;
    let mut index = envelope_core::ChunkIndex::from_sizes(
        stored
            .iter()
            .zip(&model.tensors)
            .map(|(s, t)| (s.len() as u64, t.data().len() as u64, 1)),
    )?;
    for (chunk, bytes) in stored.iter().enumerate() {
        index.set_stored_crc32c(chunk, crc32c::crc32c(bytes))?;
    }
    let mut parts = EnvelopeParts::new(Format::Model, model_type.id());
    parts.compression = options.compression;
    parts.quantized = model.is_quantized();
    parts.metadata = Cow::Owned(tensor_metadata(model, &options.card).encode()?);
    let total = usize::try_from(index.payload_size()).unwrap_or(0);
    let mut writer = parts.begin_chunked(index, Vec::with_capacity(total + 4096))?;
    for bytes in &stored {
        writer.write_chunk(bytes)?;
    }
    Ok(writer.finish()?)
}

/// Loads a serde model from `.apr` bytes, for example `include_bytes!("model.apr")` (001 §1.1).
///
/// # Errors
/// The envelope's signals (`InvalidFormat`, `ChecksumMismatch`, `UnsupportedVersion`, ...), then
/// `ModelTypeMismatch` if the file holds another type, `DecryptionFailed` (key required) for an
/// encrypted file, `InvalidFormat` if the payload is not a MessagePack value of `M`.
pub fn load_from_bytes<M: DeserializeOwned>(bytes: &[u8], expected_type: ModelType) -> Result<M> {
    let file = AprFile::parse(bytes)?;
    file.expect_type(expected_type)?;
    file.model()
}

/// Loads a tensor model from `.apr` bytes.
///
/// Every byte of the file is checked by the whole-file CRC32 before any tensor is returned, as
/// [`AprFile::parse`] checks it, but in one pass: what precedes the payload (header, metadata,
/// chunk index) is checked first by the chunk index's prefix CRC-32C ([`AprFile::parse_lazy`]),
/// and the CRC32 of each tensor's bytes is computed piece by piece as they are copied out, while
/// they are still in the processor's cache; the model is returned only once the CRC32 of the
/// whole file matches its trailer. A compressed or encrypted file is verified whole first.
///
/// A file this one pass refuses is refused as the two-pass load ([`AprFile::parse`], then the
/// tensors) refuses it: the same check comes first (the whole-file CRC32), so a damaged file gets
/// the same signal whichever of its bytes is damaged (a flipped size field in the header, which
/// the lazy walk finds out of bounds before the prefix CRC-32C can be checked, is still
/// `ChecksumMismatch`).
///
/// # Errors
/// As [`load_from_bytes`], and `QuantizationCorrupt` / `UnsupportedQuantization` for quantized
/// tensors whose data or type byte is wrong.
#[cfg(feature = "std")]
pub fn load_tensors_from_bytes(bytes: &[u8], expected_type: ModelType) -> Result<TensorModel> {
    load_tensors_in_one_pass(bytes, expected_type).or_else(|_| {
        let file = AprFile::parse(bytes)?;
        file.expect_type(expected_type)?;
        file.tensors()
    })
}

/// [`load_tensors_from_bytes`] without its fallback for refused files.
#[cfg(feature = "std")]
fn load_tensors_in_one_pass(bytes: &[u8], expected_type: ModelType) -> Result<TensorModel> {
    let file = AprFile::parse_lazy(bytes)?;
    file.expect_type(expected_type)?;
    if file.envelope.is_fully_verified() || !file.is_plain_stored() {
        file.envelope.verify_checksum()?;
        return file
            .tensors_from(|i| file.unpadded(i, file.envelope.decode_chunk(i)?.into_owned()));
    }
    file.tensors_checking_crc32()
}

/// `InvalidFormat`: chunks with gaps or overlaps (the envelope walk refuses them already).
#[cfg(feature = "std")]
fn not_contiguous() -> Error {
    Error::inconsistent("the chunks do not follow one another through the payload")
}

/// Natively, payloads of at least this many bytes are copied out on two threads: below it,
/// starting a thread costs more than it saves.
#[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
const PARALLEL_MIN_BYTES: u64 = 8 << 20;

/// Bytes copied (and checksummed) at a time: small enough to stay in the first-level data cache
/// between the checksum and the copy.
#[cfg(feature = "std")]
const PIECE: usize = 32 << 10;

/// A copy of `stored` and the CRC `update` computes over it on the way, one cache-sized piece
/// at a time (each piece is read from memory once, by the checksum, and copied from the cache).
#[cfg(feature = "std")]
fn copy_checksummed(stored: &[u8], mut update: impl FnMut(&[u8])) -> Vec<u8> {
    let mut out = Vec::with_capacity(stored.len());
    for piece in stored.chunks(PIECE) {
        update(piece);
        out.extend_from_slice(piece);
    }
    out
}

/// A verified `.apr` file: the envelope has passed every check and the metadata is decoded and
/// consistent with the payload's structure. Tensor data is read on demand.
#[derive(Debug)]
pub struct AprFile<B> {
    envelope: Envelope<B>,
    metadata: ModelMetadata,
    /// For a TRUENO_NATIVE file, each tensor's exact byte size (its chunk also holds the zero
    /// padding up to the next 64-byte boundary).
    #[cfg(feature = "std")]
    aligned_sizes: Option<Vec<u64>>,
}

impl<B: AsRef<[u8]>> AprFile<B> {
    /// Verifies `bytes` as an `.apr` file and decodes its metadata.
    ///
    /// # Errors
    /// The envelope's signals; `InvalidFormat` if the metadata is not an `.apr` map or disagrees
    /// with the payload (tensor count vs chunk count, duplicate names); `UnsupportedQuantization`
    /// for an unknown dtype byte; `QuantizationCorrupt` when a quantized tensor's stored size does
    /// not match its shape.
    pub fn parse(bytes: B) -> Result<Self> {
        let envelope = Envelope::parse(bytes, Format::Model)?;
        Self::from_envelope(envelope)
    }

    /// Verifies `bytes` reading only what precedes the payload of a STREAMING (tensor) file:
    /// header, metadata and chunk index are checked through the index's prefix CRC-32C, and each
    /// tensor's chunk through its own CRC-32C when it is read ([`Envelope::parse_lazy`]). Opening
    /// costs time proportional to the metadata, not the model.
    ///
    /// # Errors
    /// As [`AprFile::parse`].
    pub fn parse_lazy(bytes: B) -> Result<Self> {
        Self::from_envelope(Envelope::parse_lazy(bytes, Format::Model)?)
    }

    /// Wraps a verified envelope (for callers that checked a signature on it first).
    ///
    /// # Errors
    /// As [`AprFile::parse`] after the envelope checks.
    pub fn from_envelope(envelope: Envelope<B>) -> Result<Self> {
        let metadata = checked_metadata(&envelope)?;
        #[cfg(feature = "std")]
        let aligned_sizes = crate::trueno::aligned_sizes(&envelope, &metadata)?;
        Ok(Self {
            envelope,
            metadata,
            #[cfg(feature = "std")]
            aligned_sizes,
        })
    }

    /// Chunk `position`, decoded; for a TRUENO_NATIVE file without its trailing padding.
    ///
    /// In a lazily opened file stored uncompressed and unencrypted, the chunk's CRC-32C is
    /// computed while it is copied out (one read of the stored bytes), and the copy is returned
    /// only if it matches, with the same `ChecksumMismatch` as [`Envelope::chunk`] reports.
    #[cfg(feature = "std")]
    fn chunk_data(&self, position: usize) -> Result<Vec<u8>> {
        if let Some((stored, expected)) = self.unverified_stored_chunk(position) {
            let mut computed = 0;
            let data = copy_checksummed(stored, |piece| {
                computed = crc32c::crc32c_append(computed, piece);
            });
            if computed != expected {
                return Err(envelope_core::Error::ChecksumMismatch {
                    stored: expected,
                    computed,
                }
                .into());
            }
            return self.unpadded(position, data);
        }
        self.unpadded(position, self.envelope.decode_chunk(position)?.into_owned())
    }

    /// Whether the payload is stored as is: chunked, neither compressed nor encrypted.
    #[cfg(feature = "std")]
    fn is_plain_stored(&self) -> bool {
        let header = self.envelope.header();
        self.envelope.chunk_index().is_some()
            && header.compression() == Compression::None
            && !header.flags().contains(envelope_core::Flags::ENCRYPTED)
    }

    /// The stored bytes of chunk `position` and the CRC-32C they must match, for a chunk of a
    /// lazily opened file that is stored as is and not verified yet: for callers that check the
    /// CRC-32C in the same pass as their own work on the bytes (the copy of [`AprFile::tensors`],
    /// `apr quantize`'s kernels), while the bytes are in cache. `None` otherwise:
    /// [`Envelope::decode_chunk`] then checks and decodes the chunk.
    #[cfg(feature = "std")]
    pub(crate) fn unverified_stored_chunk(&self, position: usize) -> Option<(&[u8], u32)> {
        if self.envelope.is_fully_verified() || !self.is_plain_stored() {
            return None;
        }
        self.stored_chunk(position)
            .map(|(stored, entry)| (stored, entry.stored_crc32c))
    }

    /// The stored bytes of chunk `position` and its index entry, when they decode to themselves
    /// (a plain stored payload whose entry declares as many decoded bytes as it stores).
    #[cfg(feature = "std")]
    fn stored_chunk(&self, position: usize) -> Option<(&[u8], &envelope_core::ChunkEntry)> {
        let entry = self.envelope.chunk_index()?.entries().get(position)?;
        let range = entry.stored_range();
        let stored = self
            .envelope
            .payload()
            .get(usize::try_from(range.start).ok()?..usize::try_from(range.end).ok()?)?;
        (entry.uncompressed_size == entry.stored_size).then_some((stored, entry))
    }

    /// `data`, the decoded chunk `position`, without the padding a TRUENO_NATIVE file puts after
    /// each tensor (checked to be zero).
    #[cfg(feature = "std")]
    pub(crate) fn unpadded(&self, position: usize, data: Vec<u8>) -> Result<Vec<u8>> {
        match self.aligned_sizes.as_ref().and_then(|s| s.get(position)) {
            Some(&size) => {
                let name = self
                    .metadata
                    .tensors
                    .get(position)
                    .map_or("", |t| t.name.as_str());
                crate::trueno::unpadded(name, data, size)
            }
            None => Ok(data),
        }
    }

    /// Whether the tensors are stored aligned for zero-copy reading (TRUENO_NATIVE).
    #[must_use]
    #[cfg(feature = "std")]
    pub fn is_aligned(&self) -> bool {
        self.aligned_sizes.is_some()
    }

    /// The verified envelope.
    #[must_use]
    pub fn envelope(&self) -> &Envelope<B> {
        &self.envelope
    }

    /// The decoded metadata.
    #[must_use]
    pub fn metadata(&self) -> &ModelMetadata {
        &self.metadata
    }

    /// The header's model type id.
    #[must_use]
    pub fn model_type_id(&self) -> u16 {
        self.envelope.header().type_id()
    }

    /// The model type, if the catalog has the header's id.
    #[must_use]
    pub fn model_type(&self) -> Option<ModelType> {
        ModelType::from_id(self.model_type_id())
    }

    /// Checks the model type.
    ///
    /// # Errors
    /// `ModelTypeMismatch` if the file holds another type.
    pub fn expect_type(&self, expected: ModelType) -> Result<()> {
        expected.expect(self.model_type_id())
    }

    /// Decodes a serde model from an unencrypted file.
    ///
    /// # Errors
    /// `DecryptionFailed` (key required) if encrypted; `WrongPayload` for a tensor model;
    /// `InvalidFormat` if the payload is not a MessagePack value of `M`.
    pub fn model<M: DeserializeOwned>(&self) -> Result<M> {
        decode_serde(self.metadata.payload, &self.envelope.decode_payload()?)
    }

    /// Reads every tensor of an unencrypted file.
    ///
    /// # Errors
    /// `DecryptionFailed` (key required) if encrypted; `WrongPayload` for a serde model;
    /// `InvalidFormat` for a corrupt chunk.
    #[cfg(feature = "std")]
    pub fn tensors(&self) -> Result<TensorModel> {
        self.tensors_from(|i| self.chunk_data(i))
    }

    /// Reads the tensor at `position` (payload order) of an unencrypted file, and only it: the
    /// way to walk a model larger than memory.
    ///
    /// # Errors
    /// As [`AprFile::tensors`]; `NoTensorAt` if there is no such position.
    #[cfg(feature = "std")]
    pub fn tensor_at(&self, position: usize) -> Result<Tensor> {
        if position >= self.metadata.tensors.len() {
            return Err(Error::NoTensorAt {
                position,
                count: self.metadata.tensors.len(),
            });
        }
        let data = self.chunk_data(position)?;
        self.build(position, data)
    }

    /// Reads the tensor named `name` of an unencrypted file, and only it.
    ///
    /// # Errors
    /// As [`AprFile::tensors`]; `NoTensorNamed` if there is no such tensor.
    #[cfg(feature = "std")]
    pub fn tensor(&self, name: &str) -> Result<Tensor> {
        let position = self
            .metadata
            .tensors
            .iter()
            .position(|t| t.name == name)
            .ok_or_else(|| Error::NoTensorNamed {
                name: name.to_owned(),
            })?;
        let data = self.chunk_data(position)?;
        self.build(position, data)
    }

    /// Builds every tensor from chunk data supplied by `chunk` (plain or decrypted).
    #[cfg(feature = "std")]
    pub(crate) fn tensors_from(
        &self,
        chunk: impl FnMut(usize) -> Result<Vec<u8>>,
    ) -> Result<TensorModel> {
        tensors_from(&self.metadata, chunk)
    }

    #[cfg(feature = "std")]
    fn build(&self, position: usize, data: Vec<u8>) -> Result<Tensor> {
        build(&self.metadata, position, data)
    }
}

/// The one-pass load of a plain stored file, its runs shared between threads natively.
#[cfg(feature = "std")]
impl<B: AsRef<[u8]> + Sync> AprFile<B> {
    /// Every tensor of a lazily opened, plain stored file (see [`load_tensors_from_bytes`]): the
    /// whole-file CRC32, each chunk's share computed while the chunk is copied out, compared with
    /// the trailer before the model is returned. Nothing is handed out on a mismatch, which is
    /// reported as `ChecksumMismatch` with the trailer's and the computed CRC32, exactly as
    /// [`Envelope::parse`] reports it.
    ///
    /// Natively (the `fs` feature), a payload of at least [`PARALLEL_MIN_BYTES`] is split into
    /// two runs of chunks, copied and hashed on two threads; the two CRC32s are combined.
    fn tensors_checking_crc32(&self) -> Result<TensorModel> {
        if self.metadata.payload != PayloadKind::Tensors {
            return Err(Error::WrongPayload {
                found: self.metadata.payload,
            });
        }
        let bytes = self.envelope.as_bytes();
        let layout = self.envelope.layout();
        let payload = layout
            .span(envelope_core::Section::Payload)
            .unwrap_or_default();
        let to_usize = |at: u64| envelope_core::Error::fit_in_memory("the file", at);
        let payload_start = to_usize(payload.offset)?;
        let payload_end = to_usize(payload.end())?;
        let trailer = to_usize(layout.checksum_offset())?;
        // Chunks are contiguous and in order (the walk checks it; checked again here because the
        // CRC32 of the chunks one after the other must be the CRC32 of the payload).
        let entries = self
            .envelope
            .chunk_index()
            .map(|index| index.entries())
            .unwrap_or_default();
        let mut next = 0u64;
        for entry in entries {
            if entry.stored_offset != next {
                return Err(not_contiguous());
            }
            next += entry.stored_size;
        }
        if next != payload.len {
            return Err(not_contiguous());
        }
        let mut crc = crc32fast::Hasher::new();
        crc.update(&bytes[..payload_start]);
        let (tensors, runs) = self.copy_runs(entries)?;
        for run in &runs {
            crc.combine(run);
        }
        crc.update(&bytes[payload_end..trailer]);
        let computed = crc.finalize();
        let stored = layout.checksum();
        if computed != stored {
            return Err(envelope_core::Error::ChecksumMismatch { stored, computed }.into());
        }
        Ok(TensorModel {
            tensors,
            quantization: self.metadata.quantization.clone(),
        })
    }

    /// The tensors of chunks `run`, each copied out while its bytes are hashed, and the CRC32 of
    /// the run's stored bytes.
    fn copy_run(&self, run: core::ops::Range<usize>) -> Result<(Vec<Tensor>, crc32fast::Hasher)> {
        let mut crc = crc32fast::Hasher::new();
        let mut tensors = Vec::with_capacity(run.len());
        for position in run {
            let (stored, _) = self.stored_chunk(position).ok_or_else(not_contiguous)?;
            let data = copy_checksummed(stored, |piece| crc.update(piece));
            tensors.push(self.build(position, self.unpadded(position, data)?)?);
        }
        Ok((tensors, crc))
    }

    /// Every chunk's tensor and the CRC32 of each run of chunks, in order: one run on the calling
    /// thread (wasm32, small payloads, or without the `fs` feature).
    #[cfg(not(all(feature = "fs", not(target_arch = "wasm32"))))]
    fn copy_runs(
        &self,
        entries: &[envelope_core::ChunkEntry],
    ) -> Result<(Vec<Tensor>, Vec<crc32fast::Hasher>)> {
        let (tensors, crc) = self.copy_run(0..entries.len())?;
        Ok((tensors, vec![crc]))
    }

    /// Every chunk's tensor and the CRC32 of each run of chunks, in order: natively, a payload of
    /// at least [`PARALLEL_MIN_BYTES`] is split in two runs of about equal size, the second
    /// copied and hashed on a scoped thread while the calling thread does the first (both the
    /// page faults of the fresh tensor buffers and the checksum divide between the cores).
    #[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
    fn copy_runs(
        &self,
        entries: &[envelope_core::ChunkEntry],
    ) -> Result<(Vec<Tensor>, Vec<crc32fast::Hasher>)> {
        let total: u64 = entries.iter().map(|entry| entry.stored_size).sum();
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        if total < PARALLEL_MIN_BYTES || cores < 2 || entries.len() < 2 {
            let (tensors, crc) = self.copy_run(0..entries.len())?;
            return Ok((tensors, vec![crc]));
        }
        // The first chunk that ends past half the payload starts the second run.
        let split = entries
            .iter()
            .position(|entry| entry.stored_offset + entry.stored_size > total / 2)
            .unwrap_or(entries.len())
            .clamp(1, entries.len() - 1);
        let (first, second) = std::thread::scope(|scope| {
            let second = scope.spawn(|| self.copy_run(split..entries.len()));
            let first = self.copy_run(0..split);
            (first, second.join())
        });
        let (mut tensors, first_crc) = first?;
        let (rest, second_crc) = second.unwrap_or(Err(Error::inconsistent(
            "a thread copying tensors stopped unexpectedly",
        )))?;
        tensors.extend(rest);
        Ok((tensors, vec![first_crc, second_crc]))
    }
}

/// Builds every tensor described by `metadata` from chunk data supplied by `chunk`.
#[cfg(feature = "std")]
pub(crate) fn tensors_from(
    metadata: &ModelMetadata,
    mut chunk: impl FnMut(usize) -> Result<Vec<u8>>,
) -> Result<TensorModel> {
    if metadata.payload != PayloadKind::Tensors {
        return Err(Error::WrongPayload {
            found: metadata.payload,
        });
    }
    let mut tensors = Vec::with_capacity(metadata.tensors.len());
    for position in 0..metadata.tensors.len() {
        tensors.push(build(metadata, position, chunk(position)?)?);
    }
    Ok(TensorModel {
        tensors,
        quantization: metadata.quantization.clone(),
    })
}

#[cfg(feature = "std")]
pub(crate) fn build(metadata: &ModelMetadata, position: usize, data: Vec<u8>) -> Result<Tensor> {
    let entry = metadata.tensors.get(position).ok_or(Error::NoTensorAt {
        position,
        count: metadata.tensors.len(),
    })?;
    let mut tensor = Tensor::new(
        entry.name.clone(),
        DType::from_code(entry.dtype)?,
        entry.shape.clone(),
        data,
    )
    .map_err(|error| match error {
        // The tensor rules a caller breaks are the file's fault here.
        Error::NameLength { .. } | Error::TooManyDims { .. } | Error::DataLength { .. } => {
            Error::inconsistent("a tensor entry is invalid")
        }
        other => other,
    })?;
    tensor.quantizer.clone_from(&entry.quantizer);
    Ok(tensor)
}

pub(crate) fn decode_serde<M: DeserializeOwned>(kind: PayloadKind, payload: &[u8]) -> Result<M> {
    if kind != PayloadKind::Serde {
        return Err(Error::WrongPayload { found: kind });
    }
    crate::card::decode_messagepack(
        payload,
        MAX_PAYLOAD_DEPTH,
        "the payload is not a MessagePack value of the requested type",
    )
}

/// Decodes the metadata of a verified envelope and checks it against the payload's structure.
pub(crate) fn checked_metadata<B: AsRef<[u8]>>(envelope: &Envelope<B>) -> Result<ModelMetadata> {
    let metadata = ModelMetadata::decode(envelope.checked_metadata()?)?;
    check_structure(envelope, &metadata)?;
    Ok(metadata)
}

fn check_structure<B: AsRef<[u8]>>(envelope: &Envelope<B>, metadata: &ModelMetadata) -> Result<()> {
    check_structure_of(
        envelope.chunk_index(),
        envelope
            .section(envelope_core::Section::TensorIndex)
            .is_some(),
        envelope.header().flags(),
        metadata,
    )
}

/// The checks of [`checked_metadata`] after decoding, over the parts of a file they read: its
/// chunk index, whether it has a tensor index (TRUENO_NATIVE), its flags. Shared by the local
/// loader and `RangedOpening` (a file opened from ranges), so both refuse the same files alike.
pub(crate) fn check_structure_of(
    index: Option<&envelope_core::ChunkIndex>,
    aligned: bool,
    flags: envelope_core::Flags,
    metadata: &ModelMetadata,
) -> Result<()> {
    match (metadata.payload, index) {
        (PayloadKind::Serde, None) => return Ok(()),
        (PayloadKind::Serde, Some(_)) => {
            return Err(Error::inconsistent(
                "a serde model's payload must not be chunked",
            ));
        }
        (PayloadKind::Tensors, None) => {
            return Err(Error::inconsistent(
                "a tensor model's payload must be chunked",
            ));
        }
        (PayloadKind::Tensors, Some(_)) => {}
    }
    let index = index.map(|i| i.entries()).unwrap_or_default();
    if index.len() != metadata.tensors.len() {
        return Err(Error::inconsistent(
            "the metadata lists a different number of tensors than the payload has chunks",
        ));
    }
    crate::error::check_unique(metadata.tensors.iter().map(|t| t.name.as_str()))
        .map_err(|_| Error::inconsistent("two tensors have the same name"))?;
    let mut any_quantized = false;
    for (entry, chunk) in metadata.tensors.iter().zip(index) {
        let dtype = DType::from_code(entry.dtype)?;
        any_quantized |= dtype.is_quantized();
        if entry.shape.len() > crate::tensor::MAX_DIMS {
            return Err(Error::inconsistent("a tensor has more than 8 dimensions"));
        }
        let expected = crate::tensor::element_count(&entry.shape).and_then(|n| dtype.byte_len(n));
        // An aligned (TRUENO_NATIVE) chunk also holds the padding to the next 64-byte boundary;
        // its exact size is checked against the tensor index in `trueno::aligned_sizes`.
        match (dtype, expected) {
            (DType::Quantized(crate::QuantType::Custom), _) => {}
            (_, Some(len)) if len == chunk.uncompressed_size => {}
            (_, Some(len))
                if aligned
                    && len <= chunk.uncompressed_size
                    && chunk.uncompressed_size - len < 64 => {}
            (DType::Quantized(_), _) => {
                return Err(Error::corrupt(
                    &entry.name,
                    "the block data does not match the tensor's shape",
                ));
            }
            _ => {
                return Err(Error::inconsistent(
                    "a tensor's stored size does not match its dtype and shape",
                ));
            }
        }
    }
    let flagged = flags.contains(envelope_core::Flags::QUANTIZED);
    if flagged != any_quantized {
        return Err(Error::inconsistent(
            "the QUANTIZED flag disagrees with the tensors' dtypes",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use envelope_core::Signal;

    /// `count` f32 tensors of `side` × `side`, each with its own values.
    fn model(count: usize, side: usize) -> TensorModel {
        TensorModel::new(
            (0..count)
                .map(|t| {
                    let values: Vec<f32> = (0..side * side)
                        .map(|i| (i * 31 + t * 7) as f32 * 1e-3)
                        .collect();
                    Tensor::from_f32(format!("t{t}"), vec![side as u64, side as u64], &values)
                })
                .collect::<Result<Vec<_>>>()
                .unwrap(),
        )
        .unwrap()
    }

    /// The one-pass load (fused CRC32, and natively two threads past `PARALLEL_MIN_BYTES`: this
    /// model is 12 MiB) hands out exactly what the two-pass load does, and refuses a flipped byte
    /// anywhere in the file with the signal `Envelope::parse` gives it: in the header, the chunk
    /// index, the first and the last tensor (one per thread), and the CRC32 trailer itself.
    #[test]
    fn the_one_pass_load_equals_the_two_pass_load_and_refuses_every_flipped_byte() {
        let model = model(12, 512);
        let bytes =
            save_tensors_to_bytes(&model, ModelType::Custom, &SaveOptions::default()).unwrap();
        // The one pass itself, not its fallback, loads the intact file.
        let loaded = load_tensors_in_one_pass(&bytes, ModelType::Custom).unwrap();
        assert_eq!(
            loaded,
            AprFile::parse(&bytes[..]).unwrap().tensors().unwrap()
        );
        assert_eq!(
            load_tensors_from_bytes(&bytes, ModelType::Custom).unwrap(),
            loaded
        );
        assert_eq!(loaded, model);
        let file = AprFile::parse(&bytes[..]).unwrap();
        let payload = file
            .envelope()
            .layout()
            .span(envelope_core::Section::Payload)
            .unwrap();
        let start = usize::try_from(payload.offset).unwrap();
        let end = usize::try_from(payload.end()).unwrap();
        for at in [
            8,
            start - 5,
            start,
            start + 1_000_003,
            end - 1,
            bytes.len() - 4,
            bytes.len() - 1,
        ] {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            // The one pass refuses it on its own (whatever its own signal), then the load
            // reports the two-pass verdict.
            assert!(
                load_tensors_in_one_pass(&damaged, ModelType::Custom).is_err(),
                "byte {at}"
            );
            let two_pass = AprFile::parse(&damaged[..]).unwrap_err();
            let one_pass = load_tensors_from_bytes(&damaged, ModelType::Custom).unwrap_err();
            assert_eq!(two_pass.signal(), Signal::ChecksumMismatch, "byte {at}");
            assert_eq!(
                one_pass.signal(),
                Signal::ChecksumMismatch,
                "byte {at}: {one_pass}"
            );
        }
    }

    /// A lazily opened file copies each chunk out while computing its CRC-32C: a flipped byte
    /// in a tensor is refused when that tensor is read, with the envelope's `ChecksumMismatch`.
    #[test]
    fn a_lazily_opened_file_checks_each_chunk_while_copying_it() {
        let model = model(3, 64);
        let bytes =
            save_tensors_to_bytes(&model, ModelType::Custom, &SaveOptions::default()).unwrap();
        assert_eq!(
            AprFile::parse_lazy(&bytes[..]).unwrap().tensors().unwrap(),
            model
        );
        let mut damaged = bytes.clone();
        let at = bytes.len() - 4 - 100;
        damaged[at] ^= 1;
        let file = AprFile::parse_lazy(&damaged[..]).unwrap();
        assert_eq!(file.tensor_at(0).unwrap(), model.tensors[0]);
        let error = file.tensor_at(2).unwrap_err();
        assert_eq!(error.signal(), Signal::ChecksumMismatch, "{error}");
        let error = file.envelope().chunk(2).unwrap_err();
        assert!(matches!(
            error,
            envelope_core::Error::ChecksumMismatch { .. }
        ));
    }

    #[test]
    fn deeply_nested_payloads_are_refused_without_overflowing_the_stack() {
        let mut body = vec![0x91u8; 100_000];
        body.push(0xc0);
        let mut parts = model_parts(&0u8, ModelType::Custom, &SaveOptions::default()).unwrap();
        parts.payload = Payload::Whole {
            uncompressed_size: body.len() as u64,
            stored: Cow::Owned(body),
        };
        let bytes = parts.to_bytes().unwrap();
        let error = load_from_bytes::<serde_json::Value>(&bytes, ModelType::Custom).unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::InvalidFormat);
    }

    /// A serde model of every shape serde derives (unit, newtype, tuple and struct variants,
    /// options, maps, bytes, floats): the payload the `no_std` build decodes with
    /// messagepack-serde reads as rmp-serde reads it (see `card::no_std_decoder`).
    #[test]
    fn serde_payloads_decode_the_same_without_std() {
        #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        enum Node {
            Leaf,
            Value(f32),
            Pair(u16, i64),
            Split {
                feature: u32,
                threshold: f64,
                children: Vec<Node>,
            },
        }
        #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        struct Forest {
            name: String,
            trees: Vec<Node>,
            weights: std::collections::BTreeMap<String, f32>,
            bias: Option<f64>,
            #[serde(with = "serde_bytes")]
            blob: Vec<u8>,
            none: Option<u8>,
        }
        let model = Forest {
            name: "forest".into(),
            trees: vec![
                Node::Leaf,
                Node::Value(-0.5),
                Node::Pair(7, -3),
                Node::Split {
                    feature: 3,
                    threshold: 0.25,
                    children: vec![Node::Leaf, Node::Value(1.5)],
                },
            ],
            weights: [("a".to_owned(), 0.5), ("b".to_owned(), -2.0)].into(),
            bias: Some(1e-3),
            blob: vec![0, 255, 7],
            none: None,
        };
        let bytes = save_to_bytes(&model, ModelType::Custom, &SaveOptions::default()).unwrap();
        let file = AprFile::parse(&bytes[..]).unwrap();
        let payload = file.envelope().decode_payload().unwrap();
        let no_std_build: Forest = messagepack_serde::from_slice(&payload).unwrap();
        assert_eq!(no_std_build, model);
        assert_eq!(
            load_from_bytes::<Forest>(&bytes, ModelType::Custom).unwrap(),
            model
        );
    }
}
