//! Legal evidence (000 §9.3.6, docs/watermark.md §14): what a verification found in one file,
//! as a JSON object signed with the seller's Ed25519 key, and the check of such a document.
//!
//! **Key design decision: the signed bytes are rebuilt from the JSON, not stored beside it.**
//! The message is a domain label and the evidence object as compact JSON with sorted keys, and
//! every real number in it is a decimal string, so any JSON library (Python's `json.dumps(...,
//! sort_keys=True, separators=(",", ":"), ensure_ascii=False)`) rebuilds the exact bytes: the
//! document stays readable and editable, and any edit breaks the signature.
//!
//! Behind the `evidence` feature (serde_json, ed25519-dalek, blake3); not part of the wasm32
//! engine.

use std::io::Read;

use base64ct::{Base64, Encoding as _};
use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};
use serde_json::{Value, json};

use crate::detect::SliceStatistics;
use crate::error::Error;
use crate::extract::{Extracted, Verification};
use crate::whole::Reading;

/// The `format` member of an evidence object.
pub const EVIDENCE_FORMAT: &str = "ml-envelope/watermark-evidence/v1";
/// The bytes the signed message starts with.
pub const EVIDENCE_DOMAIN: &[u8] = b"ml-envelope/watermark-evidence/v1\0";

/// The file the evidence is about: its name, size and BLAKE3 hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFacts {
    /// The file's name (without its directory), if it has one.
    pub name: Option<String>,
    /// Bytes.
    pub size: u64,
    /// BLAKE3 of the whole file.
    pub blake3: [u8; 32],
}

impl FileFacts {
    /// Hashes everything `reader` yields, in blocks (memory does not grow with the file).
    ///
    /// # Errors
    /// The reader's.
    pub fn read(name: Option<String>, reader: impl Read) -> std::io::Result<Self> {
        let mut hasher = blake3::Hasher::new();
        let size = std::io::copy(
            &mut std::io::BufReader::with_capacity(1 << 20, reader),
            &mut hasher,
        )?;
        Ok(Self {
            name,
            size,
            blake3: *hasher.finalize().as_bytes(),
        })
    }

    /// The BLAKE3 hash as lowercase hex.
    #[must_use]
    pub fn blake3_hex(&self) -> String {
        blake3::Hash::from_bytes(self.blake3).to_hex().to_string()
    }
}

/// What a verification found, to be written up.
#[derive(Debug, Clone)]
pub struct Finding<'a> {
    /// The buyer proven.
    pub buyer_hash: [u8; 32],
    /// The buyer's id, when the seller named it (null in the evidence otherwise).
    pub buyer: Option<&'a str>,
    /// The verification of `buyer_hash` over every slice read (must have matched).
    pub verification: &'a Verification,
    /// What extraction found, if anything.
    pub extracted: Option<&'a Extracted>,
    /// The reading (per-slice votes, exponents and energies).
    pub reading: &'a Reading,
    /// The keyless statistics per slice, by name.
    pub statistics: &'a [(String, SliceStatistics)],
}

/// A real number as evidence holds it: a decimal string.
fn decimal(value: f64) -> Value {
    Value::String(format!("{value:e}"))
}

/// The evidence object (docs/watermark.md §14) of `finding` in `file`, made by `tool` at
/// `analyzed_at` (RFC 3339; the library takes no clock) for the seller `seller`.
#[must_use]
pub fn build(
    tool: &str,
    file: &FileFacts,
    finding: &Finding<'_>,
    analyzed_at: &str,
    seller: &VerifyingKey,
) -> Value {
    let statistics = |name: &str| {
        finding
            .statistics
            .iter()
            .find(|(slice, _)| slice == name)
            .map(|(_, s)| s)
    };
    let columns: Vec<Value> = finding
        .reading
        .slices
        .iter()
        .map(|slice| {
            let stats = statistics(&slice.name);
            json!({
                "column_name": slice.name,
                "values": slice.evidence.values,
                "votes": slice.evidence.votes,
                "cell_exponent": slice.evidence.exponent,
                "cell_energy": decimal(slice.evidence.energy),
                "lsb_entropy": stats.map(|s| decimal(s.lsb_entropy)),
                "expected_entropy": decimal(1.0),
                "correlation_score": stats.map(|s| decimal(s.bit_correlation)),
            })
        })
        .collect();
    let extracted_same = finding
        .extracted
        .filter(|found| found.buyer_hash == finding.buyer_hash);
    let verification = finding.verification;
    json!({
        "format": EVIDENCE_FORMAT,
        "tool": tool,
        "file_name": file.name,
        "file_size": file.size,
        "dataset_hash": { "algorithm": "BLAKE3", "hex": file.blake3_hex() },
        "buyer_hash": hex_of(&finding.buyer_hash),
        "buyer": finding.buyer,
        "method": if extracted_same.is_some() { "extracted and verified" } else { "verified" },
        "confidence": decimal(verification.confidence),
        "p_value": decimal(verification.p_value),
        "positions_voted": verification.positions_voted,
        "agreement": decimal(verification.agreement),
        "decision_threshold": decimal(crate::VERIFY_THRESHOLD),
        "extraction_false_match_bound": extracted_same.map(|found| decimal(found.false_match_bound)),
        "analyzed_at": analyzed_at,
        "column_evidence": columns,
        "seller_public_key": Base64::encode_string(seller.as_bytes()),
    })
}

fn hex_of(bytes: &[u8]) -> String {
    use core::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut text, byte| {
        let _ = write!(text, "{byte:02x}");
        text
    })
}

fn malformed(reason: impl Into<String>) -> Error {
    Error::EvidenceMalformed {
        reason: reason.into(),
    }
}

/// The bytes an evidence signature covers: [`EVIDENCE_DOMAIN`], then `evidence` as compact JSON
/// with every object's keys sorted.
///
/// # Errors
/// [`Error::EvidenceMalformed`] if `evidence` holds a JSON float (its numbers are strings).
pub fn message(evidence: &Value) -> Result<Vec<u8>, Error> {
    fn check(value: &Value) -> Result<(), Error> {
        match value {
            Value::Number(number) if number.is_f64() => Err(malformed(format!(
                "a float ({number}) where evidence numbers are strings"
            ))),
            Value::Array(items) => items.iter().try_for_each(check),
            Value::Object(map) => map.values().try_for_each(check),
            _ => Ok(()),
        }
    }
    check(evidence)?;
    // serde_json's map is a BTreeMap (no `preserve_order` feature): keys come out sorted by
    // their UTF-8 bytes, which is code-point order.
    let mut message = EVIDENCE_DOMAIN.to_vec();
    message.extend(serde_json::to_vec(evidence).map_err(|e| malformed(e.to_string()))?);
    Ok(message)
}

/// The signed document `{"evidence": …, "signature": {"algorithm": "ed25519", "public_key":
/// base64, "signature": hex}}`.
///
/// # Errors
/// As [`message`]; [`Error::EvidenceMalformed`] if the evidence's `seller_public_key` is not
/// `key`'s.
pub fn sign(evidence: Value, key: &SigningKey) -> Result<Value, Error> {
    let public_key = Base64::encode_string(key.verifying_key().as_bytes());
    if evidence["seller_public_key"].as_str() != Some(public_key.as_str()) {
        return Err(malformed("seller_public_key is not the signing key's"));
    }
    let signature = key.sign(&message(&evidence)?);
    Ok(json!({
        "evidence": evidence,
        "signature": {
            "algorithm": "ed25519",
            "public_key": public_key,
            "signature": hex_of(&signature.to_bytes()),
        },
    }))
}

/// Checks a signed document: its format, that its signing key is the evidence's
/// `seller_public_key`, and the Ed25519 signature over [`message`]. Returns the evidence object
/// and the signer (whether the signer is trusted is the caller's decision).
///
/// # Errors
/// [`Error::EvidenceMalformed`] for a document of another shape, [`Error::EvidenceSignatureInvalid`]
/// for a signature that does not verify.
pub fn verify(document: &Value) -> Result<(&Value, VerifyingKey), Error> {
    let evidence = &document["evidence"];
    if evidence["format"] != json!(EVIDENCE_FORMAT) {
        return Err(malformed(format!("not {EVIDENCE_FORMAT} evidence")));
    }
    let signature = &document["signature"];
    if signature["algorithm"] != json!("ed25519") {
        return Err(malformed("the signature algorithm is not ed25519"));
    }
    let key_text = signature["public_key"]
        .as_str()
        .ok_or_else(|| malformed("no signature.public_key"))?;
    if evidence["seller_public_key"].as_str() != Some(key_text) {
        return Err(Error::EvidenceSignatureInvalid);
    }
    let mut key_bytes = [0u8; 32];
    let decoded = Base64::decode(key_text, &mut key_bytes).map(<[u8]>::len);
    let key = (decoded == Ok(32))
        .then(|| VerifyingKey::from_bytes(&key_bytes).ok())
        .flatten()
        .ok_or_else(|| malformed("signature.public_key is not an Ed25519 key"))?;
    let signature_text = signature["signature"].as_str().unwrap_or_default();
    let signature_bytes: [u8; 64] = (0..64)
        .map(|i| {
            signature_text
                .get(2 * i..2 * i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
        })
        .collect::<Option<Vec<u8>>>()
        .filter(|_| signature_text.len() == 128)
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(|| malformed("signature.signature is not 64 bytes of hex"))?;
    key.verify_strict(
        &message(evidence)?,
        &Signature::from_bytes(&signature_bytes),
    )
    .map_err(|_| Error::EvidenceSignatureInvalid)?;
    Ok((evidence, key))
}

/// Checks that `file` is the file `evidence` is about (its BLAKE3 hash).
///
/// # Errors
/// [`Error::EvidenceFileMismatch`].
pub fn check_file(evidence: &Value, file: &FileFacts) -> Result<(), Error> {
    let found = file.blake3_hex();
    if evidence["dataset_hash"]["algorithm"] == json!("BLAKE3")
        && evidence["dataset_hash"]["hex"].as_str() == Some(found.as_str())
    {
        Ok(())
    } else {
        Err(Error::EvidenceFileMismatch { blake3: found })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{SellerKey, Watermark, synthetic};

    fn signed() -> (Value, FileFacts) {
        let seller = SellerKey::new([9; 32]);
        let mark = Watermark::for_buyer(&seller, b"acme");
        let mut column = synthetic::Dist::Normal {
            mean: 50.0,
            sd: 10.0,
        }
        .column(&mut synthetic::Rng::new(4), 5_000);
        crate::embed(&mut column, &mark, &seller).unwrap();
        let mut reading = Reading::new(&seller);
        reading.add("price", &column);
        let verification = reading.verify(&mark.buyer_hash);
        let extracted = reading.extract();
        let statistics = vec![("price".to_owned(), crate::detect::analyze(&column))];
        let file = FileFacts::read(Some("leak.csv".into()), &b"the leaked bytes"[..]).unwrap();
        let key = SigningKey::from_bytes(&[5; 32]);
        let finding = Finding {
            buyer_hash: mark.buyer_hash,
            buyer: Some("acme"),
            verification: &verification,
            extracted: extracted.as_ref(),
            reading: &reading,
            statistics: &statistics,
        };
        let evidence = build(
            "test 1",
            &file,
            &finding,
            "2026-11-24T00:00:00Z",
            &key.verifying_key(),
        );
        (sign(evidence, &key).unwrap(), file)
    }

    #[test]
    fn signed_evidence_verifies_and_names_its_file() {
        let (document, file) = signed();
        let (evidence, _) = verify(&document).unwrap();
        assert_eq!(evidence["method"], "extracted and verified");
        assert_eq!(evidence["buyer"], "acme");
        check_file(evidence, &file).unwrap();
        let other = FileFacts::read(None, &b"other bytes"[..]).unwrap();
        assert!(matches!(
            check_file(evidence, &other),
            Err(Error::EvidenceFileMismatch { .. })
        ));
        // Through text and back: the signature still holds.
        let text = serde_json::to_string_pretty(&document).unwrap();
        verify(&serde_json::from_str(&text).unwrap()).unwrap();
    }

    #[test]
    fn any_edit_breaks_the_signature() {
        let (document, _) = signed();
        for (path, value) in [
            ("buyer", json!("someone else")),
            ("p_value", json!("1e0")),
            ("file_size", json!(1)),
        ] {
            let mut edited = document.clone();
            edited["evidence"][path] = value;
            assert_eq!(
                verify(&edited),
                Err(Error::EvidenceSignatureInvalid),
                "{path}"
            );
        }
        let mut float = document.clone();
        float["evidence"]["p_value"] = json!(0.5);
        assert!(matches!(
            verify(&float),
            Err(Error::EvidenceMalformed { .. })
        ));
        let mut other_key = document;
        other_key["signature"]["public_key"] = json!(Base64::encode_string(
            SigningKey::from_bytes(&[6; 32]).verifying_key().as_bytes()
        ));
        assert_eq!(verify(&other_key), Err(Error::EvidenceSignatureInvalid));
    }

    /// Known answer: BLAKE3 of "abc" (the reference implementation's test vector).
    #[test]
    fn the_file_hash_is_blake3() {
        let facts = FileFacts::read(None, &b"abc"[..]).unwrap();
        assert_eq!(
            facts.blake3_hex(),
            "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85"
        );
        assert_eq!(facts.size, 3);
    }
}
