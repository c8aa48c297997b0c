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

use envelope_core::{Envelope, Error, Format, FormatError, Result, Section};
use zerocopy_trueno::{BackendHint, DType as AlignedType, TensorIndex, aligned_parts};

use crate::card::{ModelCard, ModelMetadata};
use crate::codec::tensor_metadata;
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
/// `InvalidArgument` for duplicate names; `Usage` if a size overflows.
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
    aligned_parts(parts, index, &data, Some(1))
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
    trueno_parts(model, model_type, card, backend)?.to_bytes()
}

/// For a TRUENO_NATIVE file, the exact byte size of each tensor, after checking that the tensor
/// index agrees with the metadata (same names in the same order) and with the chunks (tensor `i`
/// starts chunk `i`); `None` for other files.
pub(crate) fn aligned_sizes<B: AsRef<[u8]>>(
    envelope: &Envelope<B>,
    metadata: &ModelMetadata,
) -> Result<Option<Vec<u64>>> {
    let Some(body) = envelope.section(Section::TensorIndex) else {
        return Ok(None);
    };
    let disagree = |reason| Error::InvalidFormat(FormatError::Inconsistent { reason });
    let index = TensorIndex::parse(Format::Model, body)?;
    let chunks = envelope
        .chunk_index()
        .map(|c| c.entries())
        .unwrap_or_default();
    if index.len() != metadata.tensors.len() || chunks.len() != index.len() {
        return Err(disagree(
            "the tensor index and the metadata list different tensors",
        ));
    }
    for ((aligned, listed), chunk) in index.entries().iter().zip(&metadata.tensors).zip(chunks) {
        if aligned.name != listed.name || aligned.offset != chunk.stored_offset {
            return Err(disagree(
                "the tensor index and the metadata list different tensors",
            ));
        }
        if aligned.size_bytes > chunk.uncompressed_size {
            return Err(disagree("a tensor is larger than its chunk"));
        }
    }
    Ok(Some(index.entries().iter().map(|e| e.size_bytes).collect()))
}
