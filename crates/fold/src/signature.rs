//! pyfolds' Ed25519 metadata signature: `metadata.signature = {algorithm: "ed25519", key_id,
//! payload_sha256, value}` over the canonical JSON (`sort_keys=True`, `ensure_ascii=False`,
//! separators `(",", ":")`) of `{model_type, tags, reproducibility, protection}` taken from the
//! metadata. It binds those four fields only, as pyfolds defines it; chunk contents are bound by
//! `chunk_hashes` / `manifest_hash`, which the signature does not cover.

use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey};
use ed25519_dalek::{Signature, Signer};
pub use ed25519_dalek::{SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result, SignatureProblem};
use crate::json::{Map, Value, map_get, map_set};

/// The metadata fields the signature covers, and nothing else: not the chunks, not
/// `chunk_hashes`, not `manifest_hash`. A file whose chunks were replaced (and whose hashes were
/// recomputed) still carries a valid signature; tools must say so when they report one.
pub const SIGNED_FIELDS: [&str; 4] = ["model_type", "tags", "reproducibility", "protection"];

/// The canonical bytes pyfolds signs (the [`SIGNED_FIELDS`]). Missing fields read as pyfolds' `load_fold_or_mind` reads
/// them: `model_type` and `protection` as null, `tags` and `reproducibility` as `{}`.
#[must_use]
pub fn signed_payload(metadata: &Map) -> Vec<u8> {
    let get = |k: &str, default: Value| map_get(metadata, k).cloned().unwrap_or(default);
    let payload = Value::Object(vec![
        ("model_type".into(), get("model_type", Value::Null)),
        ("tags".into(), get("tags", Value::Object(Vec::new()))),
        (
            "reproducibility".into(),
            get("reproducibility", Value::Object(Vec::new())),
        ),
        ("protection".into(), get("protection", Value::Null)),
    ]);
    payload.to_python_json(false, true).into_bytes()
}

fn fail(p: SignatureProblem) -> Error {
    Error::Signature(p)
}

/// Adds (or replaces) `metadata.signature`, signing with a PKCS#8 PEM Ed25519 private key.
/// Deterministic (RFC 8032): no randomness is needed.
///
/// # Errors
/// [`Error::Signature`] with [`SignatureProblem::BadKey`] when the PEM is not an Ed25519 key.
pub fn sign(metadata: &mut Map, private_key_pem: &str, key_id: &str) -> Result<()> {
    let key =
        SigningKey::from_pkcs8_pem(private_key_pem).map_err(|_| fail(SignatureProblem::BadKey))?;
    sign_with(metadata, &key, key_id);
    Ok(())
}

/// Adds (or replaces) `metadata.signature`, signing with `key` (from a PEM file or from the
/// workspace's own key files): the same signature pyfolds makes and checks.
pub fn sign_with(metadata: &mut Map, key: &SigningKey, key_id: &str) {
    let payload = signed_payload(metadata);
    let sig = key.sign(&payload);
    let obj = Value::Object(vec![
        ("algorithm".into(), Value::String("ed25519".into())),
        ("key_id".into(), Value::String(key_id.to_owned())),
        (
            "payload_sha256".into(),
            Value::String(hex::encode(Sha256::digest(&payload))),
        ),
        ("value".into(), Value::String(hex::encode(sig.to_bytes()))),
    ]);
    map_set(metadata, "signature", obj);
}

/// Verifies `metadata.signature` under a SPKI PEM Ed25519 public key, in pyfolds' order:
/// algorithm, payload hash, then the signature.
///
/// # Errors
/// [`Error::Signature`].
pub fn verify(metadata: &Map, public_key_pem: &str) -> Result<()> {
    let key = VerifyingKey::from_public_key_pem(public_key_pem)
        .map_err(|_| fail(SignatureProblem::BadKey))?;
    verify_with(metadata, &key)
}

/// Verifies `metadata.signature` under `key`, in pyfolds' order: algorithm, payload hash, then
/// the signature (strict Ed25519 verification).
///
/// # Errors
/// [`Error::Signature`].
pub fn verify_with(metadata: &Map, key: &VerifyingKey) -> Result<()> {
    let sig = map_get(metadata, "signature")
        .filter(|v| v.is_truthy())
        .ok_or(fail(SignatureProblem::Missing))?;
    if sig.get("algorithm").and_then(Value::as_str) != Some("ed25519") {
        return Err(fail(SignatureProblem::Unsupported));
    }
    let payload = signed_payload(metadata);
    let claimed = sig
        .get("payload_sha256")
        .and_then(Value::as_str)
        .unwrap_or("");
    if claimed != hex::encode(Sha256::digest(&payload)) {
        return Err(fail(SignatureProblem::PayloadMismatch));
    }
    let value = sig.get("value").and_then(Value::as_str).unwrap_or("");
    // Python's `bytes.fromhex` for the plain case: either case, no whitespace.
    let bytes: [u8; 64] = hex::decode(value)
        .ok()
        .and_then(|v| v.try_into().ok())
        .ok_or(fail(SignatureProblem::Invalid))?;
    key.verify_strict(&payload, &Signature::from_bytes(&bytes))
        .map_err(|_| fail(SignatureProblem::Invalid))
}
