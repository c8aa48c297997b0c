//! A serializable description of a model file, for `apr inspect` and other tools.

use serde::Serialize;

use crate::card::{ModelCard, ModelMetadata, PayloadKind};
use crate::codec::AprFile;
use crate::model_type::ModelType;
use crate::quant::QuantizationInfo;
use crate::tensor::{DType, element_count};

/// What `apr inspect` shows about a model beyond the envelope.
#[derive(Debug, Clone, Serialize)]
pub struct ModelSummary {
    /// Header model type id.
    pub model_type_id: u16,
    /// Its catalog name, or `"UNKNOWN"`.
    pub model_type: &'static str,
    /// Serde value or named tensors.
    pub payload: PayloadKind,
    /// The model card.
    pub model_card: ModelCard,
    /// The tensors, in order.
    pub tensors: Vec<TensorSummary>,
    /// Quantization record, if quantized.
    pub quantization: Option<QuantizationInfo>,
}

/// One tensor in a [`ModelSummary`].
#[derive(Debug, Clone, Serialize)]
pub struct TensorSummary {
    /// Name.
    pub name: String,
    /// dtype name (`"q4_0"`), or `"unknown(0x..)"`.
    pub dtype: String,
    /// Shape, outermost first.
    pub shape: Vec<u64>,
    /// Number of elements.
    pub elements: u64,
}

/// Describes a verified model file (no payload byte is read).
#[must_use]
pub fn summarize<B: AsRef<[u8]>>(file: &AprFile<B>) -> ModelSummary {
    summary_of(file.model_type_id(), file.metadata())
}

/// The summary of a model of type `model_type_id` with `metadata`: [`summarize`] of a local file
/// and `RangedModel::summary` of one opened from ranges, alike.
pub(crate) fn summary_of(model_type_id: u16, metadata: &ModelMetadata) -> ModelSummary {
    ModelSummary {
        model_type_id,
        model_type: ModelType::from_id(model_type_id).map_or("UNKNOWN", |t| t.name()),
        payload: metadata.payload,
        model_card: metadata.model_card.clone(),
        tensors: metadata
            .tensors
            .iter()
            .map(|t| TensorSummary {
                name: t.name.clone(),
                dtype: DType::from_code(t.dtype).map_or_else(
                    |_| format!("unknown({:#04x})", t.dtype),
                    |d| d.name().to_owned(),
                ),
                shape: t.shape.clone(),
                elements: element_count(&t.shape).unwrap_or(0),
            })
            .collect(),
        quantization: metadata.quantization.clone(),
    }
}
