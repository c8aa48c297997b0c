//! The metadata section of an `.apr` file: the model card of 001 §4.1 and what the loader needs to
//! decode the payload, as one MessagePack map with named keys (`docs/apr.md` §3).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::quant::QuantizationInfo;

/// Deepest nesting of MessagePack arrays and maps the metadata decoder follows: the map itself
/// is 4 deep, hyperparameters get the rest. Deeper input is `InvalidFormat`, never a stack
/// overflow.
pub const MAX_METADATA_DEPTH: usize = 64;

/// Model card (001 §4.1, after Mitchell et al. 2019). Maps are ordered so that the same card always
/// encodes to the same bytes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelCard {
    /// Model name.
    pub name: String,
    /// Model version.
    pub version: String,
    /// Author.
    pub author: Option<String>,
    /// SPDX license identifier.
    pub license: Option<String>,
    /// Git SHA of the training code.
    pub source_code_hash: Option<String>,
    /// Hash of the training data (for example an `.ald` snapshot id).
    pub training_data_hash: Option<String>,
    /// Domain (`"NLP"`, `"Tabular"`).
    pub domain: Option<String>,
    /// Intended users.
    pub intended_users: Vec<String>,
    /// Out-of-scope uses.
    pub out_of_scope: Vec<String>,
    /// Metrics (`{"accuracy": 0.95}`).
    pub metrics: BTreeMap<String, f32>,
    /// Hyperparameters, any JSON-like value.
    pub hyperparameters: BTreeMap<String, serde_json::Value>,
    /// Known bias risks.
    pub bias_risks: Option<String>,
    /// Limitations.
    pub limitations: Option<String>,
    /// Creation time, RFC 3339.
    pub created_at: String,
    /// Last update, RFC 3339.
    pub updated_at: Option<String>,
    /// The files of the model's source directory kept verbatim by a Hugging Face import
    /// (`config.json`, the tokenizer files): what GGUF and SafeTensors export need to write a
    /// model llama.cpp runs and transformers loads (`docs/apr.md` §11). Part of the card so that
    /// every rewrite (quantize, convert, sign, license, watermark) carries it.
    #[serde(skip_serializing_if = "SourceFiles::is_empty")]
    pub source_files: SourceFiles,
}

/// Source files by name (`config.json`, `tokenizer.json`, ...), their bytes verbatim.
///
/// In MessagePack (the `.apr` metadata) a map of names to `bin` values. In a human-readable
/// format (JSON: `apr inspect --json`, the GGUF `apr.model_card` key) only each file's length
/// is written, and reading one back from JSON is refused: the files come from an import, never
/// from a hand-written card.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceFiles(pub BTreeMap<String, Vec<u8>>);

impl SourceFiles {
    /// True if no file is kept.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The bytes of the file `name`, if kept.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.0.get(name).map(Vec::as_slice)
    }
}

impl Serialize for SourceFiles {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> core::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let human = serializer.is_human_readable();
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, bytes) in &self.0 {
            if human {
                map.serialize_entry(name, &bytes.len())?;
            } else {
                map.serialize_entry(name, serde_bytes::Bytes::new(bytes))?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for SourceFiles {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> core::result::Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            return Err(serde::de::Error::custom(
                "source_files are kept by `apr import` of a model directory, not set by a card",
            ));
        }
        let files = BTreeMap::<String, serde_bytes::ByteBuf>::deserialize(deserializer)?;
        Ok(Self(
            files
                .into_iter()
                .map(|(name, bytes)| (name, bytes.into_vec()))
                .collect(),
        ))
    }
}

/// What the payload holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PayloadKind {
    /// One MessagePack value of the caller's serde type (a whole payload).
    Serde,
    /// Named tensors, one chunk per tensor (a STREAMING payload).
    Tensors,
}

/// One tensor's entry in the metadata; its data is the payload chunk of the same position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorEntry {
    /// Name.
    pub name: String,
    /// dtype code (`docs/apr.md` §3.2).
    pub dtype: u8,
    /// Shape, outermost first.
    pub shape: Vec<u64>,
    /// Plugin quantizer name, for Custom data.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub quantizer: String,
}

/// The whole metadata map.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelMetadata {
    /// The model card.
    pub model_card: ModelCard,
    /// What the payload holds.
    pub payload: PayloadKind,
    /// The tensors, in payload order (empty for serde payloads).
    #[serde(default)]
    pub tensors: Vec<TensorEntry>,
    /// How the model was quantized, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantization: Option<QuantizationInfo>,
}

impl ModelMetadata {
    /// MessagePack with named keys.
    ///
    /// # Errors
    /// `Encode` if a value cannot be encoded (a non-string map key in a hyperparameter).
    pub fn encode(&self) -> Result<Vec<u8>> {
        rmp_serde::to_vec_named(self).map_err(|source| Error::Encode {
            what: "model card",
            source,
        })
    }

    /// Decodes a metadata section.
    ///
    /// # Errors
    /// `InvalidFormat` if it is not a metadata map of this format.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        decode_messagepack(
            bytes,
            MAX_METADATA_DEPTH,
            "the metadata is not an .apr model card map (docs/apr.md §3)",
        )
    }
}

/// A MessagePack value of `T` from a file's bytes, nested at most `max_depth` deep (deeper input
/// is refused, never a stack overflow); `Malformed` with `reason` and the decoder's error
/// otherwise.
pub(crate) fn decode_messagepack<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    max_depth: usize,
    reason: &'static str,
) -> Result<T> {
    let mut decoder = rmp_serde::Deserializer::from_read_ref(bytes);
    decoder.set_max_depth(max_depth);
    T::deserialize(&mut decoder).map_err(|source| Error::malformed(reason, source))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_round_trips_through_messagepack() {
        let mut card = ModelCard {
            name: "iris".into(),
            version: "1.0.0".into(),
            author: Some("me".into()),
            ..ModelCard::default()
        };
        card.metrics.insert("accuracy".into(), 0.95);
        card.hyperparameters
            .insert("layers".into(), serde_json::json!([4, 8, 3]));
        let metadata = ModelMetadata {
            model_card: card,
            payload: PayloadKind::Tensors,
            tensors: vec![TensorEntry {
                name: "w".into(),
                dtype: 0x20,
                shape: vec![2, 3],
                quantizer: String::new(),
            }],
            quantization: None,
        };
        let bytes = metadata.encode().unwrap();
        assert_eq!(ModelMetadata::decode(&bytes).unwrap(), metadata);
    }

    #[test]
    fn source_files_are_bytes_in_messagepack_and_lengths_in_json() {
        let mut card = ModelCard::default();
        card.source_files
            .0
            .insert("tokenizer.model".into(), vec![0, 159, 146, 150]);
        let metadata = ModelMetadata {
            model_card: card.clone(),
            payload: PayloadKind::Tensors,
            tensors: Vec::new(),
            quantization: None,
        };
        let back = ModelMetadata::decode(&metadata.encode().unwrap()).unwrap();
        assert_eq!(back.model_card.source_files, card.source_files);
        let json = serde_json::to_value(&card).unwrap();
        assert_eq!(
            json["source_files"],
            serde_json::json!({"tokenizer.model": 4})
        );
        let error = serde_json::from_value::<ModelCard>(json).unwrap_err();
        assert!(error.to_string().contains("apr import"), "{error}");
        // A card without files says nothing about them.
        let plain = serde_json::to_value(ModelCard::default()).unwrap();
        assert!(plain.get("source_files").is_none());
    }

    #[test]
    fn garbage_metadata_is_invalid_format() {
        let error = ModelMetadata::decode(&[0xc1, 0x00]).unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::InvalidFormat);
    }
}

#[cfg(test)]
mod hostile {
    use super::*;

    #[test]
    fn deeply_nested_hyperparameters_are_refused_without_overflowing_the_stack() {
        // {"model_card": {"hyperparameters": {"x": [[[[...]]]]}}}, 100,000 levels deep.
        let mut bytes = vec![0x81, 0xaa];
        bytes.extend_from_slice(b"model_card");
        bytes.extend_from_slice(&[0x81, 0xaf]);
        bytes.extend_from_slice(b"hyperparameters");
        bytes.extend_from_slice(&[0x81, 0xa1, b'x']);
        bytes.extend(std::iter::repeat_n(0x91, 100_000));
        bytes.push(0xc0);
        let error = ModelMetadata::decode(&bytes).unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::InvalidFormat);
    }

    #[test]
    fn huge_declared_lengths_do_not_allocate() {
        // A tensor list claiming 2^32 - 1 entries in a few bytes.
        let mut bytes = vec![0x82, 0xaa];
        bytes.extend_from_slice(b"model_card");
        bytes.push(0x80);
        bytes.push(0xa7);
        bytes.extend_from_slice(b"tensors");
        bytes.extend_from_slice(&[0xdd, 0xff, 0xff, 0xff, 0xff]);
        assert!(ModelMetadata::decode(&bytes).is_err());
    }
}
