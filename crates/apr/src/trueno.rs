//! TRUENO_NATIVE models (003 §9, 001 §8): every tensor stored uncompressed on a 64-byte boundary
//! of the file, listed in a tensor index, so that `zerocopy_trueno::MappedModel` hands tensors out
//! of a memory map with no copy. The byte layout is `docs/zerocopy.md`; this module maps `.apr`
//! tensors onto it.
//!
//! The file stays an ordinary tensor model too: the metadata lists the tensors, and the payload is
//! STREAMING with one chunk per tensor, each chunk the tensor's bytes followed by the zero padding
//! up to the next tensor. So every `.apr` reader loads it (on wasm32, through the in-memory path),
//! and `MappedModel` maps it. Quantized tensors appear in the tensor index as `u8` byte arrays of
//! their blocks; their type and shape are in the metadata.

use envelope_core::{Envelope, Format, FormatError, Section};
use zerocopy_trueno::{BackendHint, DType as AlignedType, TensorIndex, aligned_parts};

use crate::card::{ModelCard, ModelMetadata};
use crate::codec::tensor_metadata;
use crate::error::{Error, Result};
use crate::model::TensorModel;
use crate::model_type::ModelType;
use crate::tensor::DType;

/// The element type a tensor has in the tensor index.
fn aligned_type(dtype: DType) -> AlignedType {
    match dtype {
        DType::F32 => AlignedType::F32,
        DType::F16 => AlignedType::F16,
        DType::BF16 => AlignedType::Bf16,
        DType::I8 => AlignedType::I8,
        DType::U8 | DType::Quantized(_) => AlignedType::U8,
    }
}

/// The envelope parts of `model` as a TRUENO_NATIVE file (uncompressed by nature).
///
/// # Errors
/// `DuplicateName` for duplicate names; `Usage` if a size overflows.
pub fn trueno_parts(
    model: &TensorModel,
    model_type: ModelType,
    card: &ModelCard,
    backend: BackendHint,
) -> Result<envelope_core::EnvelopeParts<'static>> {
    model.check_unique_names()?;
    let shapes: Vec<Vec<u64>> = model
        .tensors
        .iter()
        .map(|t| match t.dtype {
            DType::Quantized(_) => vec![t.data().len() as u64],
            _ => t.shape.clone(),
        })
        .collect();
    let index = TensorIndex::plan(
        model
            .tensors
            .iter()
            .zip(&shapes)
            .map(|(t, shape)| (t.name.as_str(), aligned_type(t.dtype), shape.as_slice())),
        backend,
    )?;
    let mut parts = envelope_core::EnvelopeParts::new(Format::Model, model_type.id());
    parts.quantized = model.is_quantized();
    parts.metadata = tensor_metadata(model, card).encode()?.into();
    let data: Vec<&[u8]> = model.tensors.iter().map(|t| t.data()).collect();
    // One chunk per tensor (a 1-byte target closes a chunk after every tensor).
    Ok(aligned_parts(parts, index, &data, Some(1))?)
}

/// A TRUENO_NATIVE tensor model as bytes.
///
/// # Errors
/// As [`trueno_parts`].
pub fn save_trueno_to_bytes(
    model: &TensorModel,
    model_type: ModelType,
    card: &ModelCard,
    backend: BackendHint,
) -> Result<Vec<u8>> {
    Ok(trueno_parts(model, model_type, card, backend)?.to_bytes()?)
}

/// An `InvalidFormat` error naming the tensor.
fn disagree(name: &str, reason: &'static str) -> Error {
    Error::Envelope(
        FormatError::InconsistentItem {
            kind: "tensor",
            name: name.to_owned(),
            reason,
        }
        .into(),
    )
}

/// For a TRUENO_NATIVE file, the exact byte size of each tensor, after checking that the tensor
/// index and the metadata describe the same tensors (docs/zerocopy.md §9): the same names in the
/// same order, and for each the element type, shape and row-major layout the metadata implies
/// (a quantized tensor as a 1-D `u8` array of its stored bytes), at the offset where its chunk
/// starts, its chunk holding exactly its bytes and the padding up to the next tensor. `None` for
/// other files.
///
/// Both descriptions must agree because readers use both: `AprFile` builds tensors from the
/// metadata, `MappedModel` hands out views typed by the index.
///
/// # Errors
/// `InvalidFormat` (`InconsistentItem` naming the tensor) where the two disagree; as
/// [`TensorIndex::parse`] for an index that breaks its own rules.
pub(crate) fn aligned_sizes<B: AsRef<[u8]>>(
    envelope: &Envelope<B>,
    metadata: &ModelMetadata,
) -> Result<Option<Vec<u64>>> {
    aligned_sizes_of(
        envelope.section(Section::TensorIndex),
        envelope
            .chunk_index()
            .map(|c| c.entries())
            .unwrap_or_default(),
        metadata,
    )
}

/// [`aligned_sizes`] over the parts of a file it reads: the tensor index's body (`None` for a
/// file without one) and the chunk index's entries. Shared by the local loader and
/// `RangedOpening` (a file opened from ranges).
///
/// # Errors
/// As [`aligned_sizes`].
pub(crate) fn aligned_sizes_of(
    tensor_index: Option<&[u8]>,
    chunks: &[envelope_core::ChunkEntry],
    metadata: &ModelMetadata,
) -> Result<Option<Vec<u64>>> {
    let Some(body) = tensor_index else {
        return Ok(None);
    };
    let index = TensorIndex::parse(Format::Model, body)?;
    if index.len() != metadata.tensors.len() || chunks.len() != index.len() {
        return Err(Error::inconsistent(
            "the tensor index and the metadata list different tensors",
        ));
    }
    let entries = index.entries().iter().zip(&metadata.tensors).zip(chunks);
    for (position, ((aligned, listed), chunk)) in entries.enumerate() {
        if aligned.name != listed.name {
            return Err(disagree(
                &listed.name,
                "the tensor index names another tensor at this position",
            ));
        }
        let dtype = DType::from_code(listed.dtype)?;
        if aligned.dtype != aligned_type(dtype) {
            return Err(disagree(
                &listed.name,
                "the tensor index and the metadata give different element types",
            ));
        }
        let shape_agrees = match dtype {
            // A quantized tensor is a 1-D byte array; its size follows from the metadata's shape
            // (plugin formats excepted: only their quantizer knows it).
            DType::Quantized(quant) => {
                let stored = crate::tensor::element_count(&listed.shape)
                    .and_then(|elements| dtype.byte_len(elements));
                aligned.shape.len() == 1
                    && (quant == crate::QuantType::Custom || stored == Some(aligned.shape[0]))
            }
            _ => aligned.shape == listed.shape,
        };
        if !shape_agrees {
            return Err(disagree(
                &listed.name,
                "the tensor index and the metadata give different shapes",
            ));
        }
        if !aligned.is_contiguous() {
            return Err(disagree(
                &listed.name,
                "the tensor index gives strides other than row-major",
            ));
        }
        let chunk_end = chunk.stored_offset.checked_add(chunk.uncompressed_size);
        if aligned.offset != chunk.stored_offset
            || chunk_end != Some(index.padding_after(position).end)
        {
            return Err(disagree(
                &listed.name,
                "its chunk is not its bytes and the padding up to the next tensor",
            ));
        }
    }
    Ok(Some(index.entries().iter().map(|e| e.size_bytes).collect()))
}

/// A TRUENO_NATIVE tensor's chunk without its padding: the first `size` bytes, after checking
/// that the rest (under 64 bytes) is zero, so no byte of the file goes unchecked.
///
/// # Errors
/// `InvalidFormat` (`InconsistentItem`) for a chunk shorter than the tensor or non-zero padding.
pub(crate) fn unpadded(name: &str, mut data: Vec<u8>, size: u64) -> Result<Vec<u8>> {
    let size = usize::try_from(size).unwrap_or(usize::MAX);
    match data.get(size..) {
        Some(padding) if padding.len() < 64 && padding.iter().all(|&byte| byte == 0) => {
            data.truncate(size);
            Ok(data)
        }
        Some(_) => Err(disagree(name, "non-zero padding after the tensor")),
        None => Err(disagree(name, "its chunk is shorter than the tensor")),
    }
}
