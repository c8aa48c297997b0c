//! `loadApr` and `AprModel`: a `.apr` file verified whole (envelope walk and CRC32, then the
//! signature policy, the license at JavaScript's clock, the metadata), its tensors listed from the
//! metadata and read one at a time, dequantized to `Float32Array` on demand.
//!
//! A plain file keeps its bytes in wasm memory and decodes a tensor only when asked. An encrypted
//! file is decrypted once at load (STREAM segments are authenticated as they are decrypted, so
//! no tensor byte is handed out unauthenticated either way).

// wasm-bindgen's exports expand to `unsafe` glue (see the manifest's lint table).
#![allow(unsafe_code)]

use apr::{AprFile, TensorModel};
use envelope_core::{Envelope, Flags, Format};
use serde_json::{Value, json};
use wasm_bindgen::prelude::*;

use crate::error::Result;
use crate::options::{Keys, now_unix};

/// Where a model's tensors come from.
enum Tensors {
    /// An unencrypted file, verified; tensors decoded on demand.
    Plain(Box<AprFile<Vec<u8>>>),
    /// An encrypted file's tensors, decrypted at load.
    Decrypted(TensorModel),
}

/// A verified `.apr` model.
#[wasm_bindgen]
pub struct AprModel {
    tensors: Tensors,
    list: Vec<apr::TensorEntry>,
    card: Value,
    model_type: String,
    publisher: Option<String>,
}

impl AprModel {
    /// Verifies `bytes` under `keys` (the Rust side of `loadApr`).
    ///
    /// # Errors
    /// The first failed check: the envelope's signals, `SignatureInvalid`, `LicenseExpired`,
    /// `DecryptionFailed`, then the metadata's `InvalidFormat`.
    pub fn load(bytes: Vec<u8>, keys: &Keys) -> Result<Self> {
        let policy = keys.policy(&bytes);
        let envelope = Envelope::parse(bytes, Format::Model)?;
        let signer = match policy {
            Some(policy) => policy.check(&envelope)?,
            None => None,
        };
        let encrypted = envelope.header().flags().contains(Flags::ENCRYPTED);
        let options = apr::LoadOptions {
            now_unix: now_unix(),
            ..apr::LoadOptions::default()
        };
        // The signature was checked above (to learn the signer); `verify` adds the license.
        let file = AprFile::verify(envelope, &options)?;
        let metadata = file.metadata();
        let list = metadata.tensors.clone();
        let card = card_json(&metadata.model_card)?;
        let model_type = match file.model_type() {
            Some(known) => known.name().to_owned(),
            None => format!("0x{:04x}", file.model_type_id()),
        };
        let tensors = if encrypted {
            let key = keys.key().ok_or(envelope_core::Error::DecryptionFailed(
                envelope_core::DecryptionFailure::KeyRequired,
            ))?;
            Tensors::Decrypted(match metadata.payload {
                apr::PayloadKind::Tensors => file.decrypt_tensors(key)?,
                // A serde model has no tensors to list; the key is still checked.
                apr::PayloadKind::Serde => {
                    file.decrypt_model::<serde::de::IgnoredAny>(key)?;
                    TensorModel::new(Vec::new())?
                }
            })
        } else {
            Tensors::Plain(Box::new(file))
        };
        Ok(Self {
            tensors,
            list,
            card,
            model_type,
            publisher: signer.as_ref().map(crate::options::key_hex),
        })
    }

    /// `[{name, shape, dtype}]` in payload order.
    #[must_use]
    pub fn tensors_json(&self) -> Value {
        Value::Array(
            self.list
                .iter()
                .map(|entry| {
                    let dtype = apr::DType::from_code(entry.dtype).map_or_else(
                        |_| format!("0x{:02x}", entry.dtype),
                        |d| d.name().to_owned(),
                    );
                    json!({ "name": entry.name, "shape": entry.shape, "dtype": dtype })
                })
                .collect(),
        )
    }

    /// The tensor `name` as `f32` values (dequantized or widened).
    ///
    /// # Errors
    /// `Usage` (`NoTensorNamed`) for an unknown name; `InvalidFormat` / `QuantizationCorrupt` for
    /// a corrupt chunk.
    pub fn tensor_values(&self, name: &str) -> Result<Vec<f32>> {
        // The decrypted model's tensor is converted where it is, without a copy of its data.
        let values = match &self.tensors {
            Tensors::Plain(file) => file.tensor(name)?.to_f32(),
            Tensors::Decrypted(model) => model
                .tensor(name)
                .ok_or_else(|| apr::Error::NoTensorNamed {
                    name: name.to_owned(),
                })?
                .to_f32(),
        };
        Ok(values?)
    }

    /// The header's model type name (`"LLAMA"`), or its id in hex when not in the catalog.
    #[must_use]
    pub fn model_type_name(&self) -> &str {
        &self.model_type
    }
}

/// The model card as JSON, with the kept source files (tokenizers, configs: possibly megabytes)
/// replaced by their sizes.
fn card_json(card: &apr::ModelCard) -> Result<Value> {
    let mut value = crate::options::card_json(card)?;
    if let Value::Object(fields) = &mut value {
        let sizes: serde_json::Map<String, Value> = card
            .source_files
            .0
            .iter()
            .map(|(name, bytes)| (name.clone(), json!(bytes.len())))
            .collect();
        fields.insert("source_files".to_owned(), Value::Object(sizes));
    }
    Ok(value)
}

#[wasm_bindgen]
impl AprModel {
    /// The model card as a plain object (`source_files` maps each kept file to its size).
    #[wasm_bindgen(getter)]
    pub fn card(&self) -> JsValue {
        crate::to_js(&self.card)
    }

    /// The model type (`"LLAMA"`, `"LINEAR_REGRESSION"`, ...).
    #[wasm_bindgen(getter, js_name = modelType)]
    pub fn model_type(&self) -> String {
        self.model_type.clone()
    }

    /// Hex Ed25519 key of the verified signer, or `null` when no signature was checked.
    #[wasm_bindgen(getter, unchecked_return_type = "string | null")]
    pub fn publisher(&self) -> JsValue {
        self.publisher
            .as_deref()
            .map_or(JsValue::NULL, JsValue::from_str)
    }

    /// `[{name, shape, dtype}]`, `dtype` as `f32`, `f16`, `q8_0`, `q4_0`, ...
    #[wasm_bindgen(getter, unchecked_return_type = "TensorInfo[]")]
    pub fn tensors(&self) -> JsValue {
        crate::to_js(&self.tensors_json())
    }

    /// The tensor `name` as a `Float32Array` (dequantized on demand).
    ///
    /// # Errors
    /// An `EnvelopeError` (`Usage` for an unknown name).
    #[wasm_bindgen(js_name = tensorF32)]
    pub fn tensor_f32(&self, name: &str) -> Result<Vec<f32>, JsValue> {
        Ok(self.tensor_values(name)?)
    }
}

/// Verifies a `.apr` file and lists its tensors.
///
/// # Errors
/// An `EnvelopeError` whose `signal` names the first failed check.
#[wasm_bindgen(js_name = loadApr)]
pub fn load_apr(
    bytes: Vec<u8>,
    options: Option<crate::LoadOptionsArg>,
) -> Result<AprModel, JsValue> {
    let keys = Keys::from_js(&options.map_or(JsValue::UNDEFINED, Into::into))?;
    Ok(AprModel::load(bytes, &keys)?)
}
