//! `loadAld` and `AldDataset`: a `.ald` file verified and decoded in the module's memory (000 §5.0
//! order: envelope and CRC32, signature, license at JavaScript's clock, schema, then the payload,
//! decrypted and decompressed), handed to JavaScript as Arrow IPC streams that `apache-arrow`
//! (or any Arrow library) reads.
//!
//! The table stays in wasm memory until `free()`; each `batchIpc(i)` encodes one record batch on
//! demand, so a page can show the first rows of a large table without copying all of it out.

// wasm-bindgen's exports expand to `unsafe` glue (see the manifest's lint table).
#![allow(unsafe_code)]

use ald::{ArrowDataset, LoadOptions};
use envelope_core::{Flags, Header};
use serde_json::Value;
use wasm_bindgen::prelude::*;

use crate::error::{Error, Result};
use crate::options::{Keys, now_unix};

/// A verified, decoded `.ald` dataset.
#[wasm_bindgen]
pub struct AldDataset {
    dataset: ArrowDataset,
    card: Value,
    publisher: Option<String>,
    header: Header,
}

impl AldDataset {
    /// Verifies and decodes `bytes` under `keys` (the Rust side of `loadAld`).
    ///
    /// # Errors
    /// The first failed check, as `ald::load_from_bytes_with`.
    pub fn load(bytes: &[u8], keys: &Keys) -> Result<Self> {
        let header = Header::parse(bytes)?;
        let options = LoadOptions {
            now_unix: now_unix(),
            signature: keys.policy(bytes),
            key: keys.key(),
            ..LoadOptions::default()
        };
        let loaded = ald::load_from_bytes_with(bytes, &options)?;
        let card = match &loaded.metadata.card {
            Some(card) => crate::options::card_json(card)?,
            None => Value::Null,
        };
        Ok(Self {
            dataset: loaded.dataset,
            card,
            publisher: loaded.signer.as_ref().map(crate::options::key_hex),
            header,
        })
    }

    /// The decoded table.
    #[must_use]
    pub fn dataset(&self) -> &ArrowDataset {
        &self.dataset
    }

    /// The schema as `[{name, type, nullable}]`.
    #[must_use]
    pub fn schema_json(&self) -> Value {
        // Strings and booleans only: serializing them cannot fail.
        serde_json::to_value(ald::FieldSummary::of_schema(self.dataset.schema()))
            .unwrap_or(Value::Null)
    }

    /// Record batch `index` alone as an Arrow IPC stream (schema, dictionaries, batch, end).
    ///
    /// # Errors
    /// `Usage` for an index past the last batch; `Usage` if Arrow cannot encode the batch.
    pub fn batch_stream(&self, index: usize) -> Result<Vec<u8>> {
        let batches = self.dataset.batches();
        let batch = batches.get(index).ok_or(Error::OutOfRange {
            what: "batch",
            index: index as u64,
            count: batches.len() as u64,
        })?;
        self.stream(std::slice::from_ref(batch))
    }

    /// All batches as one Arrow IPC stream.
    ///
    /// # Errors
    /// `Usage` if Arrow cannot encode a batch.
    pub fn full_stream(&self) -> Result<Vec<u8>> {
        self.stream(self.dataset.batches())
    }

    fn stream(&self, batches: &[ald::arrow_array::RecordBatch]) -> Result<Vec<u8>> {
        let schema = self.dataset.schema();
        let mut payload = Vec::new();
        ald::ipc::encode_batches(schema, batches, &mut payload)?;
        Ok(ald::ipc::full_stream(
            &ald::ipc::schema_message(schema)?,
            &payload,
        ))
    }
}

#[wasm_bindgen]
impl AldDataset {
    /// The dataset card as a plain object, or `null`.
    #[wasm_bindgen(getter)]
    pub fn card(&self) -> JsValue {
        crate::to_js(&self.card)
    }

    /// Hex Ed25519 key of the verified signer, or `null` when no signature was checked.
    #[wasm_bindgen(getter, unchecked_return_type = "string | null")]
    pub fn publisher(&self) -> JsValue {
        self.publisher
            .as_deref()
            .map_or(JsValue::NULL, JsValue::from_str)
    }

    /// Whether the file carries a signature (checked only against trusted keys).
    #[wasm_bindgen(getter)]
    pub fn signed(&self) -> bool {
        self.header.flags().contains(Flags::SIGNED)
    }

    /// Whether the payload was encrypted.
    #[wasm_bindgen(getter)]
    pub fn encrypted(&self) -> bool {
        self.header.flags().contains(Flags::ENCRYPTED)
    }

    /// The payload's compression (`none`, `zstd-l3`, `zstd-l19`, `lz4`).
    #[wasm_bindgen(getter)]
    pub fn compression(&self) -> String {
        self.header.compression().name().to_owned()
    }

    /// Rows in the table.
    #[wasm_bindgen(getter, js_name = numRows)]
    #[allow(clippy::cast_precision_loss)] // JS numbers; row counts stay far below 2^53
    pub fn num_rows(&self) -> f64 {
        self.dataset.num_rows() as f64
    }

    /// Record batches in the table.
    #[wasm_bindgen(getter, js_name = numBatches)]
    pub fn num_batches(&self) -> u32 {
        u32::try_from(self.dataset.batches().len()).unwrap_or(u32::MAX)
    }

    /// `[{name, type, nullable}]`, `type` as Arrow's `DataType` prints it (`Int64`, `Utf8`).
    #[wasm_bindgen(getter, unchecked_return_type = "SchemaField[]")]
    pub fn schema(&self) -> JsValue {
        crate::to_js(&self.schema_json())
    }

    /// Record batch `index` as an Arrow IPC stream.
    ///
    /// # Errors
    /// `Usage` (`signal`) for an index past the last batch.
    #[wasm_bindgen(js_name = batchIpc)]
    pub fn batch_ipc(&self, index: u32) -> Result<Vec<u8>, JsValue> {
        let index = usize::try_from(index).unwrap_or(usize::MAX);
        Ok(self.batch_stream(index)?)
    }

    /// Every batch as one Arrow IPC stream.
    ///
    /// # Errors
    /// `Usage` if a batch cannot be encoded.
    #[wasm_bindgen(js_name = toIpc)]
    pub fn to_ipc(&self) -> Result<Vec<u8>, JsValue> {
        Ok(self.full_stream()?)
    }
}

/// Verifies and decodes a `.ald` file.
///
/// # Errors
/// An `EnvelopeError` whose `signal` names the first failed check.
#[wasm_bindgen(js_name = loadAld)]
pub fn load_ald(
    bytes: &[u8],
    options: Option<crate::LoadOptionsArg>,
) -> Result<AldDataset, JsValue> {
    let keys = Keys::from_js(&options.map_or(JsValue::UNDEFINED, Into::into))?;
    Ok(AldDataset::load(bytes, &keys)?)
}
