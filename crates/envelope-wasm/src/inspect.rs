//! `inspect`: what a file is, from its header (and a `.fold` container's index), without
//! verifying or decoding its contents: a quick look at a dropped file before asking for a
//! password or keys.

// wasm-bindgen's exports expand to `unsafe` glue (see the manifest's lint table).
#![allow(unsafe_code)]

use envelope_core::{Format, Header};
use serde_json::{Value, json};
use wasm_bindgen::prelude::*;

use crate::error::Result;

/// The summary of `bytes` (the Rust side of `inspect`): `{kind: "ald"|"apr", version, typeId,
/// flags, compression, ...}` from the envelope header, `{kind: "fold", chunks}` from a container's
/// index, `{kind: "unknown"}` for anything else.
///
/// # Errors
/// The header's (or the container index's) failure for a file whose magic is known but whose
/// header is not valid (`InvalidFormat`, `UnsupportedVersion`).
pub fn summary(bytes: &[u8]) -> Result<Value> {
    #[cfg(feature = "fold")]
    if bytes.starts_with(&fold::MAGIC) {
        return crate::container::summary(bytes);
    }
    let magic: Option<[u8; 4]> = bytes.get(..4).and_then(|m| m.try_into().ok());
    if magic.and_then(Format::from_magic).is_none() {
        return Ok(json!({ "kind": "unknown", "size": bytes.len() }));
    }
    let header = Header::parse(bytes)?;
    let kind = match header.format() {
        Format::Dataset => "ald",
        Format::Model => "apr",
    };
    let mut summary = json!({
        "kind": kind,
        "size": bytes.len(),
        "version": header.version().to_string(),
        "typeId": header.type_id(),
        "flags": header.flags().names(),
        "compression": header.compression().name(),
        "metadataSize": header.metadata_size(),
        "payloadSize": header.payload_size().exact(),
        "uncompressedSize": header.uncompressed_size().exact(),
    });
    if let (Format::Dataset, Value::Object(fields)) = (header.format(), &mut summary) {
        fields.insert("schemaSize".to_owned(), header.schema_size().into());
        fields.insert("numRows".to_owned(), header.num_rows().into());
    }
    Ok(summary)
}

/// Identifies a file and returns its header fields as a plain object.
///
/// # Errors
/// An `EnvelopeError` (`InvalidFormat`, `UnsupportedVersion`) when a known magic is followed by an
/// invalid header.
#[wasm_bindgen]
pub fn inspect(bytes: &[u8]) -> Result<JsValue, JsValue> {
    Ok(crate::to_js(&summary(bytes)?))
}
