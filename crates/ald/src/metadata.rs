//! The metadata section: one MessagePack map (000 §8, §9.7, §5.1.4), written with `rmp-serde`
//! with field names as string keys so any MessagePack reader can use it (docs/ald.md §3).
//!
//! Unknown keys are ignored on reading (a newer writer may add some); every key is optional, and a
//! missing one reads as its default.

use envelope_core::{FormatError, Section};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// The `query_protocol` value of 000 §5.1.4 (the only one defined).
pub const QUERY_PROTOCOL: &str = "x25519-aes256gcm-v1";

/// A struct of the metadata map whose every field, when absent (`None`, an empty list), is left
/// out of the map rather than written as nil (docs/ald.md §3: every key is optional): the one
/// place that rule is written, for every field of the struct (as serde_with's
/// `skip_serializing_none` does).
macro_rules! absent_keys_not_written {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $($(#[$field_meta:meta])* pub $field:ident: $type:ty,)*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $(
                $(#[$field_meta])*
                #[serde(skip_serializing_if = "Absent::is_absent")]
                pub $field: $type,
            )*
        }
    };
}

/// A value that is not written when it holds nothing.
trait Absent {
    fn is_absent(&self) -> bool;
}

impl<T> Absent for Option<T> {
    fn is_absent(&self) -> bool {
        self.is_none()
    }
}

impl<T> Absent for Vec<T> {
    fn is_absent(&self) -> bool {
        self.is_empty()
    }
}

absent_keys_not_written! {
    /// Everything the metadata section holds.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(default)]
    pub struct Metadata {
        /// The dataset card (000 §8.1).
        pub card: Option<DatasetCard>,
        /// Column documentation, one per documented column (000 §8.2).
        pub columns: Vec<ColumnDoc>,
        /// Regulatory compliance fields (000 §9.7).
        pub compliance: Option<Compliance>,
        /// Base64 of the 32-byte X25519 key that private queries are sealed to (000 §5.1.4).
        pub query_pub_key: Option<String>,
        /// The private-query protocol, [`QUERY_PROTOCOL`] when `query_pub_key` is set.
        pub query_protocol: Option<String>,
        /// Spaces a writer adds so that the payload starts at a multiple of [`PAYLOAD_ALIGNMENT`]
        /// bytes (docs/ald.md §3); meaningless, and ignored by readers.
        pub pad: Option<String>,
    }
}

/// Where writers place the payload: a multiple of 64 bytes from the start of the file, so that an
/// uncompressed payload read or mapped into an aligned buffer has Arrow's preferred alignment and
/// decodes without copying its arrays.
pub const PAYLOAD_ALIGNMENT: usize = 64;

/// The datasheet of 000 §8.1 (Gebru et al. 2021, "Datasheets for Datasets").
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DatasetCard {
    /// Human-readable name.
    pub name: String,
    /// Version (semver).
    pub version: String,
    /// SPDX license identifier.
    pub license: Option<String>,
    /// Searchable tags.
    pub tags: Vec<String>,
    /// Markdown description.
    pub description: String,
    /// Where the data came from.
    pub sources: Vec<DataSource>,
    /// Intended uses.
    pub intended_uses: Vec<String>,
    /// Known limitations.
    pub limitations: Vec<String>,
    /// Citation (BibTeX).
    pub citation: Option<String>,
}

/// One source of a dataset (000 §8.1 names the type without fields; these are the datasheet's
/// "collection process" essentials).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DataSource {
    /// Name of the source.
    pub name: String,
    /// Where it can be found.
    pub url: Option<String>,
    /// Its license (SPDX identifier).
    pub license: Option<String>,
    /// How the data was collected or derived.
    pub description: Option<String>,
}

/// Documentation of one column (000 §8.2).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ColumnDoc {
    /// Column name.
    pub name: String,
    /// Human-readable description.
    pub description: String,
    /// Data type.
    pub dtype: String,
    /// Value range or categories.
    pub values: Option<String>,
    /// Missing value handling.
    pub missing: Option<String>,
}

absent_keys_not_written! {
    /// The compliance block of 000 §9.7.
    #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(default)]
    pub struct Compliance {
        /// Whether GDPR consent was obtained.
        pub gdpr_consent: Option<bool>,
        /// URL of the retention policy.
        pub data_retention_policy: Option<String>,
        /// URL of the datasheet.
        pub datasheet_url: Option<String>,
        /// Date of the last bias audit (ISO 8601).
        pub bias_audit_date: Option<String>,
        /// PII status (`anonymized`, `pseudonymized`, `none`, ...).
        pub pii_status: Option<String>,
        /// Export control classification (`EAR99`, ...).
        pub export_control: Option<String>,
    }
}

impl Metadata {
    /// Publishes `key` (base64 of an X25519 public key) for private queries.
    #[must_use]
    pub fn with_query_key(mut self, key_base64: String) -> Self {
        self.query_pub_key = Some(key_base64);
        self.query_protocol = Some(QUERY_PROTOCOL.to_owned());
        self
    }

    /// The MessagePack encoding (a map with string keys).
    ///
    /// # Errors
    /// `Usage` if serialization fails (it does not for these types).
    pub fn encode(&self) -> Result<Vec<u8>> {
        rmp_serde::to_vec_named(self).map_err(|error| Error::Unencodable {
            what: "the metadata cannot be encoded as MessagePack",
            cause: error.into(),
        })
    }

    /// The encoding, with a `pad` entry sized so that `prefix_len` bytes (every byte before the
    /// payload except the metadata) plus the metadata is a multiple of [`PAYLOAD_ALIGNMENT`].
    ///
    /// # Errors
    /// As [`Metadata::encode`].
    pub fn encode_aligned(&self, prefix_len: usize) -> Result<Vec<u8>> {
        let mut padded = Self {
            pad: None,
            ..self.clone()
        };
        let plain = padded.encode()?;
        if (prefix_len + plain.len()).is_multiple_of(PAYLOAD_ALIGNMENT) {
            return Ok(plain);
        }
        // The entry's own overhead (key, string header) varies with its length: try each length
        // until the total lands on the boundary (at most two alignments' worth).
        for spaces in 0..2 * PAYLOAD_ALIGNMENT {
            padded.pad = Some(" ".repeat(spaces));
            let bytes = padded.encode()?;
            if (prefix_len + bytes.len()).is_multiple_of(PAYLOAD_ALIGNMENT) {
                return Ok(bytes);
            }
        }
        Ok(plain)
    }

    /// Decodes a metadata section. An empty section is the default metadata.
    ///
    /// # Errors
    /// `InvalidFormat` if the bytes are not one MessagePack map of this shape.
    pub fn decode(bytes: &[u8]) -> Result<Self> {
        if bytes.is_empty() {
            return Ok(Self::default());
        }
        let mut reader = bytes;
        let metadata: Self =
            rmp_serde::decode::from_read(&mut reader).map_err(|error| Error::Undecodable {
                rule: MALFORMED,
                cause: error.into(),
            })?;
        if !reader.is_empty() {
            return Err(MALFORMED.into());
        }
        Ok(metadata)
    }
}

/// The rule a metadata section breaks when it does not decode.
const MALFORMED: FormatError = FormatError::MalformedBlock {
    section: Section::Metadata,
    reason: "not one MessagePack map of the dataset metadata keys (docs/ald.md §3)",
};

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn text() -> impl Strategy<Value = String> {
        "\\PC{0,12}"
    }

    prop_compose! {
        fn any_metadata()(
            name in text(), version in text(), license in proptest::option::of(text()),
            tags in proptest::collection::vec(text(), 0..3), description in text(),
            source in proptest::option::of((text(), proptest::option::of(text()))),
            column in proptest::option::of((text(), text(), text(), proptest::option::of(text()))),
            consent in proptest::option::of(any::<bool>()), pii in proptest::option::of(text()),
            key in proptest::option::of(text()),
        ) -> Metadata {
            let card = DatasetCard {
                name, version, license, tags, description,
                sources: source.into_iter().map(|(name, url)| DataSource { name, url, ..DataSource::default() }).collect(),
                intended_uses: vec!["research".into()],
                limitations: vec![],
                citation: None,
            };
            let mut metadata = Metadata {
                card: Some(card),
                columns: column.into_iter().map(|(name, description, dtype, values)| ColumnDoc { name, description, dtype, values, missing: None }).collect(),
                compliance: Some(Compliance { gdpr_consent: consent, pii_status: pii, ..Compliance::default() }),
                ..Metadata::default()
            };
            if let Some(key) = key {
                metadata = metadata.with_query_key(key);
            }
            metadata
        }
    }

    proptest! {
        #[test]
        fn encode_then_decode_is_identity(metadata in any_metadata()) {
            prop_assert_eq!(Metadata::decode(&metadata.encode().unwrap()).unwrap(), metadata);
        }

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = Metadata::decode(&bytes);
        }
    }

    #[test]
    fn keys_are_strings_and_absent_fields_are_left_out() {
        let metadata = Metadata::default().with_query_key("AAAA".into());
        let bytes = metadata.encode().unwrap();
        // fixmap of 2: "query_pub_key" -> "AAAA", "query_protocol" -> QUERY_PROTOCOL.
        assert_eq!(bytes[0], 0x82);
        assert_eq!(&bytes[1..15], b"\xadquery_pub_key");
    }

    #[test]
    fn aligned_encodings_end_on_the_boundary_and_decode_to_the_same_metadata() {
        let metadata = Metadata::default().with_query_key("AAAA".into());
        for prefix in 0..200 {
            let bytes = metadata.encode_aligned(prefix).unwrap();
            assert_eq!((prefix + bytes.len()) % PAYLOAD_ALIGNMENT, 0, "{prefix}");
            let decoded = Metadata::decode(&bytes).unwrap();
            assert_eq!(
                Metadata {
                    pad: None,
                    ..decoded
                },
                metadata
            );
        }
    }

    #[test]
    fn trailing_bytes_and_non_maps_are_invalid_format() {
        let mut bytes = Metadata::default().encode().unwrap();
        bytes.push(0xc0);
        for bad in [&bytes[..], b"\x01", b"\x91\x01", b"\xc1"] {
            assert_eq!(
                Metadata::decode(bad).unwrap_err().signal(),
                envelope_core::Signal::InvalidFormat
            );
        }
        assert_eq!(Metadata::decode(b"").unwrap(), Metadata::default());
    }
}
