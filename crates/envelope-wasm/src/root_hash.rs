//! `datasetRootHash`: spec 004's dataset Merkle root over in-memory files, the same value
//! `lineage hash` computes for a directory of those files.

// wasm-bindgen's exports expand to `unsafe` glue (see the manifest's lint table).
#![allow(unsafe_code)]

use js_sys::{Array, Uint8Array};
use wasm_bindgen::prelude::*;

use crate::error::{Error, Result};
use crate::field;

/// The hex root hash of `(path, bytes)` files (the Rust side of `datasetRootHash`).
///
/// # Errors
/// Lineage's failure code (`INVALID_PATH`, `DUPLICATE_PATH`, `EMPTY_DATASET`, ...).
pub fn root_hash<P: AsRef<str>, B: AsRef<[u8]>>(files: &[(P, B)]) -> Result<String> {
    let digest = lineage::dataset_root_hash(files.iter().map(|(p, b)| (p.as_ref(), b.as_ref())))?;
    Ok(digest.root_hash.to_hex())
}

/// The dataset root hash (hex) of `entries`, `[{path, bytes}]` in any order.
///
/// # Errors
/// An `EnvelopeError` with lineage's failure code as `signal`, or `Usage` for a malformed entry.
#[wasm_bindgen(js_name = datasetRootHash)]
pub fn dataset_root_hash(
    #[wasm_bindgen(unchecked_param_type = "RootHashEntry[]")] entries: JsValue,
) -> Result<String, JsValue> {
    let list = entries
        .dyn_into::<Array>()
        .map_err(|_| Error::argument("entries", "not an array"))?;
    let mut files = Vec::new();
    for entry in list.iter() {
        let path = field(&entry, "path")?
            .as_string()
            .ok_or_else(|| Error::argument("entries[].path", "not a string"))?;
        let bytes = field(&entry, "bytes")?
            .dyn_into::<Uint8Array>()
            .map_err(|_| Error::argument("entries[].bytes", "not a Uint8Array"))?
            .to_vec();
        files.push((path, bytes));
    }
    Ok(root_hash(&files)?)
}
