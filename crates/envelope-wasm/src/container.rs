//! `readFoldChunk`: one chunk of a `.fold`/`.mind` container, read as the native reader reads it
//! (002's safety order: ECC, CRC-32C and SHA-256 of the stored bytes, decompression, length), and
//! the container summary `inspect` shows.

// wasm-bindgen's exports expand to `unsafe` glue (see the manifest's lint table).
#![allow(unsafe_code)]

use fold::FoldReader;
use serde_json::{Value, json};
use wasm_bindgen::prelude::*;

use crate::error::Result;

/// The verified, decompressed bytes of chunk `name` (the Rust side of `readFoldChunk`).
///
/// # Errors
/// The reader's failure (`ChecksumMismatch` for a digest, `Usage` for an unknown name).
pub fn read_chunk(bytes: &[u8], name: &str) -> Result<Vec<u8>> {
    Ok(FoldReader::open(bytes)?.read_chunk(name)?)
}

/// The header and index of a container (no chunk is read).
///
/// # Errors
/// The reader's failure on the header or index.
pub fn summary(bytes: &[u8]) -> Result<Value> {
    let reader = FoldReader::open(bytes)?;
    let index = reader.index();
    let chunks: Vec<Value> = index
        .chunks
        .iter()
        .map(|chunk| {
            json!({
                "name": chunk.name,
                "ctype": String::from_utf8_lossy(&chunk.ctype),
                "flags": chunk.flags,
                "compLen": chunk.comp_len,
                "uncompLen": chunk.uncomp_len,
            })
        })
        .collect();
    Ok(json!({
        "kind": "fold",
        "version": index.version,
        "chunks": chunks,
        "fileLen": reader.file_len(),
    }))
}

/// Reads and verifies one chunk of a `.fold` container.
///
/// # Errors
/// An `EnvelopeError` whose `signal` names the failed check.
#[wasm_bindgen(js_name = readFoldChunk)]
pub fn read_fold_chunk(bytes: &[u8], name: &str) -> Result<Vec<u8>, JsValue> {
    Ok(read_chunk(bytes, name)?)
}
