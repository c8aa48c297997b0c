//! The metadata section of an `.apr` file: the model card of 001 §4.1 and what the loader needs to
//! decode the payload, as one MessagePack map with named keys (`docs/apr.md` §3).

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

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
    #[cfg(feature = "std")]
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
    #[cfg(feature = "std")]
    {
        let mut decoder = rmp_serde::Deserializer::from_read_ref(bytes);
        decoder.set_max_depth(max_depth);
        T::deserialize(&mut decoder).map_err(|source| Error::malformed(reason, source))
    }
    // messagepack-serde recurses once per level up to a fixed 256, more stack than a small
    // device has: the nesting is measured first, without recursion, against the same limits.
    #[cfg(not(feature = "std"))]
    {
        within_nesting(bytes, max_depth).map_err(|source| Error::malformed(reason, source))?;
        messagepack_serde::from_slice(bytes).map_err(|source| Error::malformed(reason, source))
    }
}

/// The MessagePack decoder error of the `no_std` build.
#[cfg(any(test, not(feature = "std")))]
type NoStdDecodeError =
    messagepack_serde::de::Error<messagepack_serde::messagepack_core::io::RError>;

/// Checks, without recursion, that the MessagePack value at the start of `bytes` nests fewer than
/// `max_depth` arrays and maps, as rmp-serde's `set_max_depth` counts (`[[1]]` needs 3);
/// `RecursionLimitExceeded` otherwise. Memory: one counter per open level, at most `max_depth`. A length that runs past
/// the end stops the walk without an error: the decoder then refuses the truncated value itself.
#[cfg(any(test, not(feature = "std")))]
fn within_nesting(bytes: &[u8], max_depth: usize) -> core::result::Result<(), NoStdDecodeError> {
    // Items still to read in each open array or map (a map's keys and values both count).
    let mut open: Vec<u64> = Vec::new();
    let mut at = 0usize;
    let mut remaining_at_top = 1u64;
    loop {
        match open.last_mut() {
            Some(0) => {
                open.pop();
                continue;
            }
            Some(left) => *left -= 1,
            None if remaining_at_top == 0 => return Ok(()),
            None => remaining_at_top -= 1,
        }
        let Some(&marker) = bytes.get(at) else {
            return Ok(());
        };
        at += 1;
        // The big-endian unsigned integer of `n` bytes at `at`, or `None` past the end.
        let length = |at: usize, n: usize| -> Option<u64> {
            let field = bytes.get(at..at.checked_add(n)?)?;
            Some(field.iter().fold(0u64, |v, &b| (v << 8) | u64::from(b)))
        };
        // (items it opens, bytes of length field, fixed bytes after it)
        let (items, skip): (Option<u64>, Option<u64>) = match marker {
            0x80..=0x8f => (Some(u64::from(marker & 0x0f) * 2), Some(0)),
            0x90..=0x9f => (Some(u64::from(marker & 0x0f)), Some(0)),
            0xa0..=0xbf => (None, Some(u64::from(marker & 0x1f))),
            0xc4 | 0xd9 => (None, length(at, 1).map(|n| n + 1)),
            0xc5 | 0xda => (None, length(at, 2).map(|n| n + 2)),
            0xc6 | 0xdb => (None, length(at, 4).map(|n| n + 4)),
            0xc7 => (None, length(at, 1).map(|n| n + 2)),
            0xc8 => (None, length(at, 2).map(|n| n + 3)),
            0xc9 => (None, length(at, 4).map(|n| n + 5)),
            0xcc | 0xd0 => (None, Some(1)),
            0xcd | 0xd1 | 0xd4 => (None, Some(2)),
            0xd5 => (None, Some(3)),
            0xca | 0xce | 0xd2 => (None, Some(4)),
            0xd6 => (None, Some(5)),
            0xcb | 0xcf | 0xd3 => (None, Some(8)),
            0xd7 => (None, Some(9)),
            0xd8 => (None, Some(17)),
            0xdc => (length(at, 2), Some(2)),
            0xdd => (length(at, 4), Some(4)),
            0xde => (length(at, 2).map(|n| n * 2), Some(2)),
            0xdf => (length(at, 4).map(|n| n * 2), Some(4)),
            // Fixints, nil, booleans; 0xc1 (never used) is the decoder's to refuse.
            _ => (None, Some(0)),
        };
        let Some(next) = skip
            .and_then(|n| usize::try_from(n).ok())
            .and_then(|n| at.checked_add(n))
        else {
            return Ok(());
        };
        at = next;
        let opens = matches!(marker, 0x80..=0x9f | 0xdc..=0xdf);
        if opens {
            let Some(items) = items else {
                return Ok(());
            };
            // rmp-serde's count, which the std build applies: the limit includes the innermost
            // value, so `max_depth - 1` arrays or maps may nest.
            if open.len() + 1 >= max_depth {
                return Err(NoStdDecodeError::RecursionLimitExceeded);
            }
            open.push(items);
        }
    }
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

/// The `no_std` build decodes MessagePack with `messagepack-serde` (rmp-serde needs `std`): these
/// tests hold it to rmp-serde's reading of every kind of value an `.apr` file holds, so a model
/// reads the same on a microcontroller as on a server.
#[cfg(test)]
mod no_std_decoder {
    use proptest::prelude::*;
    use serde::de::DeserializeOwned;

    use super::*;
    use crate::quant::TensorQuantization;

    fn both<T: DeserializeOwned + PartialEq + core::fmt::Debug>(bytes: &[u8]) -> Option<T> {
        let std_build = rmp_serde::from_slice::<T>(bytes).ok();
        let no_std_build = messagepack_serde::from_slice::<T>(bytes).ok();
        assert_eq!(std_build, no_std_build, "the two decoders disagree");
        std_build
    }

    fn text() -> impl Strategy<Value = String> {
        "[a-z0-9._ -]{0,12}"
    }

    fn json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<u64>().prop_map(serde_json::Value::from),
            (-1e9f64..1e9).prop_map(serde_json::Value::from),
            text().prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                proptest::collection::btree_map(text(), inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn metadata() -> impl Strategy<Value = ModelMetadata> {
        let card = (
            (
                text(),
                text(),
                proptest::option::of(text()),
                proptest::option::of(text()),
            ),
            proptest::collection::vec(text(), 0..3),
            proptest::collection::btree_map(text(), -1e6f32..1e6, 0..3),
            proptest::collection::btree_map(text(), json(), 0..3),
            proptest::collection::btree_map(
                text(),
                proptest::collection::vec(any::<u8>(), 0..40),
                0..3,
            ),
        )
            .prop_map(
                |((name, version, author, license), users, metrics, hyper, files)| ModelCard {
                    name,
                    version,
                    author,
                    license,
                    intended_users: users,
                    metrics,
                    hyperparameters: hyper,
                    source_files: SourceFiles(files),
                    ..ModelCard::default()
                },
            );
        let tensors = proptest::collection::vec(
            (
                text(),
                any::<u8>(),
                proptest::collection::vec(any::<u64>(), 0..4),
                text(),
            )
                .prop_map(|(name, dtype, shape, quantizer)| TensorEntry {
                    name,
                    dtype,
                    shape,
                    quantizer,
                }),
            0..4,
        );
        let quantization = proptest::option::of(
            (
                any::<u8>(),
                any::<u32>(),
                proptest::collection::vec(
                    (
                        text(),
                        proptest::option::of(any::<u8>()),
                        proptest::option::of(any::<f32>()),
                    )
                        .prop_map(|(name, quant_type, relative_error)| {
                            TensorQuantization {
                                name,
                                quant_type,
                                relative_error,
                                kept_because: None,
                                output_error: relative_error,
                            }
                        }),
                    0..3,
                ),
                proptest::collection::vec(text(), 0..2),
            )
                .prop_map(|(quant_type, samples, tensors, warnings)| {
                    QuantizationInfo {
                        quant_type,
                        calibration_method: "minmax".into(),
                        calibration_samples: samples,
                        original_dtype: "F32".into(),
                        quantizer: "builtin".into(),
                        block_size: 32,
                        bits_per_weight: 8.5,
                        tensors,
                        warnings,
                    }
                }),
        );
        (card, any::<bool>(), tensors, quantization).prop_map(
            |(model_card, serde, tensors, quantization)| ModelMetadata {
                model_card,
                payload: if serde {
                    PayloadKind::Serde
                } else {
                    PayloadKind::Tensors
                },
                tensors,
                quantization,
            },
        )
    }

    proptest! {
        #[test]
        fn every_metadata_map_decodes_the_same(metadata in metadata()) {
            let bytes = metadata.encode().unwrap();
            // NaN relative errors make `==` false in both: compare the re-encoded bytes.
            let back: ModelMetadata = messagepack_serde::from_slice(&bytes).unwrap();
            prop_assert_eq!(back.encode().unwrap(), bytes);
        }

        #[test]
        fn damaged_metadata_is_refused_or_read_the_same(
            metadata in metadata(),
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
        ) {
            let mut bytes = metadata.encode().unwrap();
            let at = at.index(bytes.len());
            bytes[at] = byte;
            // What the no_std build reads, the std build reads the same. The no_std decoder is
            // stricter in one place: a map key that is not UTF-8, which rmp-serde reads as bytes
            // and skips as an unknown field, is refused.
            let no_std_build = messagepack_serde::from_slice::<ModelMetadata>(&bytes).ok();
            if let Some(no_std_build) = no_std_build {
                let std_build = rmp_serde::from_slice::<ModelMetadata>(&bytes);
                prop_assert_eq!(
                    std_build.ok().map(|m| m.encode().unwrap()),
                    Some(no_std_build.encode().unwrap())
                );
            }
        }
    }

    #[test]
    fn the_golden_files_metadata_decodes_the_same() {
        let file = envelope_core::Envelope::parse(
            &include_bytes!("../tests/data/golden_q4_0.apr")[..],
            envelope_core::Format::Model,
        )
        .unwrap();
        let metadata: ModelMetadata = both(file.metadata()).unwrap();
        assert!(!metadata.tensors.is_empty());
    }

    /// The nesting walk of the no_std build refuses what rmp-serde's depth limit refuses, and
    /// nothing else, on every shape of nesting.
    #[test]
    fn the_nesting_walk_counts_levels_as_rmp_serde_does() {
        // [[[...nil...]]] `depth` deep, and {"k": {"k": ... nil}} the same, with scalars, strings,
        // bins and exts beside each level so that their lengths are skipped right.
        for depth in [0usize, 1, 2, 5, 63, 64, 65, 200] {
            for map in [false, true] {
                let mut bytes = Vec::new();
                for _ in 0..depth {
                    if map {
                        bytes.extend_from_slice(&[0x82, 0xa1, b'k']);
                    } else {
                        bytes.push(0x93);
                        bytes.extend_from_slice(&[0xd9, 2, b'a', b'b', 0xc5, 0, 1, 7]);
                    }
                }
                bytes.push(0xc0);
                for _ in 0..depth {
                    if map {
                        bytes.extend_from_slice(&[0xa1, b's', 0xcb, 0, 0, 0, 0, 0, 0, 0, 0]);
                    }
                }
                let mut decoder = rmp_serde::Deserializer::from_read_ref(&bytes[..]);
                decoder.set_max_depth(64);
                let rmp = <serde::de::IgnoredAny as serde::Deserialize>::deserialize(&mut decoder);
                let ok = rmp.is_ok();
                assert_eq!(
                    within_nesting(&bytes, 64).is_ok(),
                    ok,
                    "depth {depth}, map {map}"
                );
                if ok && depth < 200 {
                    assert!(messagepack_serde::from_slice::<serde::de::IgnoredAny>(&bytes).is_ok());
                }
            }
        }
        // Extension values (never in an .apr file; rmp-serde reads them) are skipped whole.
        let ext = [
            0x92, 0xc7, 1, 5, 0x91, 0xd8, 1, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91,
            0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0x91, 0xc0,
        ];
        assert!(within_nesting(&ext, 1).is_err());
        assert!(within_nesting(&ext, 2).is_ok());
        assert!(within_nesting(&[0xdd, 0xff, 0xff, 0xff, 0xff], 64).is_ok());
        assert!(within_nesting(&[0x91; 1_000_000], 64).is_err());
        assert!(within_nesting(&[0xc6, 0xff, 0xff], 64).is_ok());
    }

    #[test]
    fn hostile_metadata_is_refused_by_both() {
        let mut deep = vec![0x81, 0xa1, b'x'];
        deep.extend(std::iter::repeat_n(0x91, 100_000));
        deep.push(0xc0);
        // The no_std build walks the nesting before messagepack-serde recurses into it.
        assert!(within_nesting(&deep, MAX_METADATA_DEPTH).is_err());
        assert!(ModelMetadata::decode(&deep).is_err());
        let mut long = vec![0x81, 0xa7];
        long.extend_from_slice(b"tensors");
        long.extend_from_slice(&[0xdd, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(both::<ModelMetadata>(&long), None);
    }
}
