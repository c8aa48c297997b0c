//! JavaScript bindings of the workspace's readers, built with wasm-bindgen into the npm package
//! `packages/envelope-wasm` (000/001 Appendix A: loading in the browser and Node.js).
//!
//! The JS API (camelCase, one module; the TypeScript declarations are generated from this crate):
//! - `loadAld(bytes, options?)` → `AldDataset` (card, publisher, flags, schema, `batchIpc(i)` and
//!   `toIpc()` as Arrow IPC streams for `apache-arrow`), [`dataset`];
//! - `loadFromUrl(url, options?)` / `loadCached(key, options?)`: download with progress and an
//!   IndexedDB cache, browser side ([`web`]);
//! - `loadApr(bytes, options?)` → `AprModel` (card, model type, publisher, tensor list,
//!   `tensorF32(name)`), [`model`];
//! - `readFoldChunk(bytes, name)` ([`container`]), `datasetRootHash(entries)` ([`root_hash`]),
//!   `inspect(bytes)` ([`inspect`](mod@inspect)).
//!
//! Every failure is thrown as a JS `Error` with `name = "EnvelopeError"` and `signal` = the specs'
//! Andon signal ([`Error`]). The checks are the format crates' own, in their order: nothing here
//! re-implements a check, this crate only converts arguments and results.
//!
//! # Features
//! `dataset`, `model`, `fold`, `lineage` (all default) each bring one part of the API, so the
//! size of a dataset-only or model-only module can be measured (`scripts/wasm-size.sh`).
//!
//! The crate compiles natively too (its Rust-side functions are unit-tested there); the JS glue
//! only works in a wasm32 module.

pub mod error;
#[cfg(feature = "crypto")]
pub mod options;

#[cfg(feature = "fold")]
pub mod container;
#[cfg(feature = "dataset")]
pub mod dataset;
pub mod inspect;
#[cfg(feature = "model")]
pub mod model;
#[cfg(feature = "lineage")]
pub mod root_hash;
#[cfg(feature = "dataset")]
pub mod web;

pub use error::{Error, Result};

/// The TypeScript type glue: extern types that only name the option objects' declared types, so
/// the generated `.d.ts` says `options?: LoadOptions` rather than `any`.
#[allow(unsafe_code)] // wasm-bindgen's extern glue (see the manifest's lint table)
mod types {
    use wasm_bindgen::prelude::*;

    #[wasm_bindgen(typescript_custom_section)]
    const OPTIONS: &str = r#"
/** Keys and policy of a load. */
export interface LoadOptions {
  /** Ed25519 public keys trusted as publishers (32 bytes or 64 hex digits). */
  trustedKeys?: (Uint8Array | string)[];
  /** Refuse unsigned files (default: true when trustedKeys is non-empty). */
  requireSignature?: boolean;
  /** Password of a password-encrypted file. */
  password?: string;
  /** 32-byte X25519 secret key of a recipient-encrypted file. */
  x25519Secret?: Uint8Array;
}
/** `loadFromUrl`'s options: a load's, plus the cache key and a progress callback. */
export interface UrlOptions extends LoadOptions {
  /** Store the verified file in IndexedDB under this key (read back by `loadCached`). */
  cacheKey?: string;
  /** Called after each received chunk; `total` is the Content-Length, if sent. */
  onProgress?: (loaded: number, total: number | null) => void;
}
/** One column of `AldDataset.schema`; `type` as Arrow's Rust `DataType` prints it. */
export interface SchemaField {
  name: string;
  type: string;
  nullable: boolean;
}
/** One tensor of `AprModel.tensors` (`dtype`: f32, f16, bf16, i8, u8, q8_0, q4_0, q4_1, ...). */
export interface TensorInfo {
  name: string;
  shape: number[];
  dtype: string;
}
/**
 * What every function throws (or a promise rejects with): an `Error` whose `name` is
 * "EnvelopeError" and whose `signal` is the specs' Andon signal ("InvalidFormat",
 * "ChecksumMismatch", "SignatureInvalid", "DecryptionFailed", "UnsupportedVersion",
 * "LicenseExpired", "UnsupportedQuantization", "QuantizationCorrupt", "Io", "Usage", ...; for
 * `datasetRootHash`, spec 004's failure code).
 */
export interface EnvelopeError extends Error {
  name: "EnvelopeError";
  signal: string;
}
/** One file of `datasetRootHash`. */
export interface RootHashEntry {
  path: string;
  bytes: Uint8Array;
}
"#;

    #[wasm_bindgen]
    extern "C" {
        /// A `LoadOptions` object (read field by field in `options::Keys::from_js`).
        #[wasm_bindgen(typescript_type = "LoadOptions")]
        pub type LoadOptionsArg;
        /// A `UrlOptions` object.
        #[wasm_bindgen(typescript_type = "UrlOptions")]
        pub type UrlOptionsArg;
    }
}

pub use types::{LoadOptionsArg, UrlOptionsArg};

use wasm_bindgen::JsValue;

/// `object[name]` (`undefined` when absent).
#[cfg(any(feature = "crypto", feature = "lineage"))]
///
/// # Errors
/// `Io` if the property read throws (a getter that throws, a revoked proxy).
pub(crate) fn field(object: &JsValue, name: &str) -> Result<JsValue> {
    js_sys::Reflect::get(object, &JsValue::from_str(name)).map_err(|e| Error::host("argument", &e))
}

/// A JSON value as a plain JS value (objects, arrays, numbers, strings).
pub(crate) fn to_js(value: &serde_json::Value) -> JsValue {
    // A serde_json value always prints as valid JSON, which JSON.parse always accepts.
    js_sys::JSON::parse(&value.to_string()).unwrap_or(JsValue::NULL)
}
