//! The execution certificate (004 §II.F "Commit binding"): a signed statement that one run read
//! one snapshot through one access plan, binding `dataset_snapshot_id`, `data_access_plan_hash`
//! and `lineage_root_hash`.
//!
//! A certificate is one canonical CBOR map (docs/lineage.md §6.2):
//!
//! ```text
//! {"certificate": "lineage_execution_certificate_v1",
//!  "payload": {"tenant_id": tstr, "run_id": tstr, "replay_token": bstr(32),
//!              "dataset_snapshot_id": bstr(32), "data_access_plan_hash": bstr(32),
//!              "lineage_root_hash": bstr(32)},
//!  "public_key": bstr(32), "signature": bstr(64)}
//! ```
//!
//! The signature is Ed25519 (RFC 8032) over `CBOR_CANONICAL(["lineage_execution_certificate_v1",
//! payload])`: the tag binds the bytes to this use, so a signature over an `.ald`, `.apr` or
//! evidence document can never pass for a certificate. Reading is strict: the bytes must be the
//! canonical encoding of exactly these fields, so nothing unsigned can ride along. Only a
//! caller-supplied key is trusted ([`Certificate::verify`]); the embedded key only says which.
//!
//! Building and reading need no cryptography; signing and verifying are behind the
//! `certificate` feature (ed25519-dalek).

use std::collections::BTreeMap;

use crate::cbor::Value;
use crate::error::Error;
use crate::hash::Digest;

/// The certificate's type tag, also the domain tag of the signed message.
pub const CERTIFICATE_TAG: &str = "lineage_execution_certificate_v1";

/// What a certificate states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificatePayload {
    /// The tenant whose namespace the snapshot and its lineage objects are in.
    pub tenant_id: String,
    /// The run.
    pub run_id: String,
    /// The run's replay token ([`replay_token`](crate::trace::replay_token)).
    pub replay_token: Digest,
    /// The snapshot the run read.
    pub dataset_snapshot_id: Digest,
    /// The run's access plan.
    pub data_access_plan_hash: Digest,
    /// The root over the snapshot's lineage objects.
    pub lineage_root_hash: Digest,
}

impl CertificatePayload {
    /// The payload as a CBOR map.
    #[must_use]
    pub fn to_cbor(&self) -> Value {
        Value::Map(BTreeMap::from([
            ("tenant_id".to_owned(), Value::text(&self.tenant_id)),
            ("run_id".to_owned(), Value::text(&self.run_id)),
            ("replay_token".to_owned(), self.replay_token.to_cbor()),
            (
                "dataset_snapshot_id".to_owned(),
                self.dataset_snapshot_id.to_cbor(),
            ),
            (
                "data_access_plan_hash".to_owned(),
                self.data_access_plan_hash.to_cbor(),
            ),
            (
                "lineage_root_hash".to_owned(),
                self.lineage_root_hash.to_cbor(),
            ),
        ]))
    }

    /// The bytes the signature covers: `CBOR_CANONICAL([CERTIFICATE_TAG, payload])`.
    #[must_use]
    pub fn signed_message(&self) -> Vec<u8> {
        Value::Array(vec![Value::text(CERTIFICATE_TAG), self.to_cbor()]).to_canonical_bytes()
    }

    fn from_cbor(value: Value) -> Result<Self, Error> {
        let mut map = exact_map(value, &PAYLOAD)?;
        Ok(Self {
            tenant_id: take_text(&mut map, "tenant_id")?,
            run_id: take_text(&mut map, "run_id")?,
            replay_token: take_digest(&mut map, "replay_token")?,
            dataset_snapshot_id: take_digest(&mut map, "dataset_snapshot_id")?,
            data_access_plan_hash: take_digest(&mut map, "data_access_plan_hash")?,
            lineage_root_hash: take_digest(&mut map, "lineage_root_hash")?,
        })
    }
}

const PAYLOAD_KEYS: [&str; 6] = [
    "tenant_id",
    "run_id",
    "replay_token",
    "dataset_snapshot_id",
    "data_access_plan_hash",
    "lineage_root_hash",
];
const CERTIFICATE_KEYS: [&str; 4] = ["certificate", "payload", "public_key", "signature"];

/// A signed execution certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Certificate {
    /// What it states.
    pub payload: CertificatePayload,
    /// The signer's Ed25519 public key (which trusted key to check against; trusted only if the
    /// caller trusts it).
    pub public_key: [u8; 32],
    /// The Ed25519 signature over [`CertificatePayload::signed_message`].
    pub signature: [u8; 64],
}

impl Certificate {
    /// The certificate's canonical CBOR bytes.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        Value::Map(BTreeMap::from([
            ("certificate".to_owned(), Value::text(CERTIFICATE_TAG)),
            ("payload".to_owned(), self.payload.to_cbor()),
            ("public_key".to_owned(), Value::bytes(&self.public_key)),
            ("signature".to_owned(), Value::bytes(&self.signature)),
        ]))
        .to_canonical_bytes()
    }

    /// Reads a certificate. Checks its form only; [`Certificate::verify`] checks the signature.
    ///
    /// # Errors
    /// [`Error::Cbor`] for bytes that are not one canonical CBOR item;
    /// [`Error::CertificateInvalid`] for a missing, extra or mistyped field or another tag.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let mut map = exact_map(crate::cbor::decode(bytes)?, &CERTIFICATE)?;
        if take_text(&mut map, "certificate")? != CERTIFICATE_TAG {
            return Err(invalid(
                "the certificate tag is not lineage_execution_certificate_v1",
            ));
        }
        let payload = CertificatePayload::from_cbor(take(&mut map, "payload")?)?;
        let public_key = take_bytes(&mut map, "public_key")?
            .try_into()
            .map_err(|_| invalid("public_key is not 32 bytes"))?;
        let signature = take_bytes(&mut map, "signature")?
            .try_into()
            .map_err(|_| invalid("signature is not 64 bytes"))?;
        Ok(Self {
            payload,
            public_key,
            signature,
        })
    }

    /// Signs `payload` with `key`.
    #[cfg(feature = "certificate")]
    #[must_use]
    pub fn sign(payload: CertificatePayload, key: &ed25519_dalek::SigningKey) -> Self {
        use ed25519_dalek::Signer as _;
        let signature = key.sign(&payload.signed_message()).to_bytes();
        Self {
            public_key: key.verifying_key().to_bytes(),
            payload,
            signature,
        }
    }

    /// Checks the signature under the one of `trusted` that is the embedded public key
    /// (`verify_strict`: no small-order keys, no malleable signatures), and returns that key.
    ///
    /// # Errors
    /// [`Error::CertificateInvalid`]: the signer is not trusted, or the signature does not hold.
    #[cfg(feature = "certificate")]
    pub fn verify<'k>(
        &self,
        trusted: impl IntoIterator<Item = &'k ed25519_dalek::VerifyingKey>,
    ) -> Result<&'k ed25519_dalek::VerifyingKey, Error> {
        let key = trusted
            .into_iter()
            .find(|key| key.as_bytes() == &self.public_key)
            .ok_or_else(|| invalid("the signer is not a trusted key"))?;
        let signature = ed25519_dalek::Signature::from_bytes(&self.signature);
        key.verify_strict(&self.payload.signed_message(), &signature)
            .map_err(|_| invalid("the signature does not verify"))?;
        Ok(key)
    }
}

fn invalid(reason: &'static str) -> Error {
    Error::CertificateInvalid { reason }
}

/// The fields a map must have exactly, and what to say when it is not such a map.
struct Shape {
    keys: &'static [&'static str],
    not_a_map: &'static str,
    wrong_fields: &'static str,
}

const PAYLOAD: Shape = Shape {
    keys: &PAYLOAD_KEYS,
    not_a_map: "the payload is not a map",
    wrong_fields: "the payload's fields are not exactly tenant_id, run_id, replay_token, \
                   dataset_snapshot_id, data_access_plan_hash and lineage_root_hash",
};

const CERTIFICATE: Shape = Shape {
    keys: &CERTIFICATE_KEYS,
    not_a_map: "a certificate is a CBOR map",
    wrong_fields: "the fields are not exactly certificate, payload, public_key and signature",
};

/// `value` as a map with exactly the keys of `shape`.
fn exact_map(value: Value, shape: &Shape) -> Result<BTreeMap<String, Value>, Error> {
    let Value::Map(map) = value else {
        return Err(invalid(shape.not_a_map));
    };
    if map.len() != shape.keys.len() || !shape.keys.iter().all(|key| map.contains_key(*key)) {
        return Err(invalid(shape.wrong_fields));
    }
    Ok(map)
}

fn take(map: &mut BTreeMap<String, Value>, key: &'static str) -> Result<Value, Error> {
    map.remove(key).ok_or(invalid("a field is missing"))
}

fn take_text(map: &mut BTreeMap<String, Value>, key: &'static str) -> Result<String, Error> {
    match take(map, key)? {
        Value::Text(text) => Ok(text),
        _ => Err(invalid("a text field holds another type")),
    }
}

fn take_bytes(map: &mut BTreeMap<String, Value>, key: &'static str) -> Result<Vec<u8>, Error> {
    match take(map, key)? {
        Value::Bytes(bytes) => Ok(bytes),
        _ => Err(invalid("a byte-string field holds another type")),
    }
}

fn take_digest(map: &mut BTreeMap<String, Value>, key: &'static str) -> Result<Digest, Error> {
    Digest::from_slice(&take_bytes(map, key)?).ok_or(invalid("a hash field is not 32 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload() -> CertificatePayload {
        CertificatePayload {
            tenant_id: "acme".into(),
            run_id: "run-1".into(),
            replay_token: Digest([1; 32]),
            dataset_snapshot_id: Digest([2; 32]),
            data_access_plan_hash: Digest([3; 32]),
            lineage_root_hash: Digest([4; 32]),
        }
    }

    #[test]
    fn bytes_round_trip_and_are_canonical() {
        let cert = Certificate {
            payload: payload(),
            public_key: [5; 32],
            signature: [6; 64],
        };
        let bytes = cert.to_bytes();
        assert_eq!(Certificate::from_bytes(&bytes).unwrap(), cert);
        // A byte appended, or one field more, is refused.
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Certificate::from_bytes(&longer).is_err());
    }

    #[test]
    fn signed_message_is_the_tagged_pair() {
        let message = payload().signed_message();
        let mut prefix = vec![0x82, 0x78, 0x20];
        prefix.extend_from_slice(CERTIFICATE_TAG.as_bytes());
        assert!(message.starts_with(&prefix));
        assert_eq!(
            crate::cbor::decode(&message).unwrap(),
            Value::Array(vec![Value::text(CERTIFICATE_TAG), payload().to_cbor()])
        );
    }

    #[test]
    fn wrong_shapes_are_refused_with_the_certificate_code() {
        let good = Certificate {
            payload: payload(),
            public_key: [5; 32],
            signature: [6; 64],
        };
        let Value::Map(map) = crate::cbor::decode(&good.to_bytes()).unwrap() else {
            unreachable!()
        };
        type Fields = BTreeMap<String, Value>;
        let mutations: [fn(&mut Fields); 7] = [
            |m| {
                m.insert("certificate".into(), Value::text("other_v1"));
            },
            |m| {
                m.insert("extra".into(), Value::Null);
            },
            |m| {
                m.remove("signature");
            },
            |m| {
                m.insert("public_key".into(), Value::bytes(&[1; 31]));
            },
            |m| {
                m.insert("signature".into(), Value::text("sig"));
            },
            |m| {
                let Some(Value::Map(p)) = m.get_mut("payload") else {
                    unreachable!()
                };
                p.insert("lineage_root_hash".into(), Value::bytes(&[0; 33]));
            },
            |m| {
                let Some(Value::Map(p)) = m.get_mut("payload") else {
                    unreachable!()
                };
                p.remove("run_id");
            },
        ];
        for mutate in mutations {
            let mut changed = map.clone();
            mutate(&mut changed);
            let error = Certificate::from_bytes(&Value::Map(changed).to_canonical_bytes())
                .expect_err("a malformed certificate was read");
            assert_eq!(error.failure_code().as_str(), "CERTIFICATE_INVALID");
        }
    }

    #[cfg(feature = "certificate")]
    #[test]
    fn signature_binds_every_field_and_only_trusted_keys_verify() {
        let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
        let other = ed25519_dalek::SigningKey::from_bytes(&[8; 32]);
        let cert = Certificate::sign(payload(), &key);
        let trusted = [key.verifying_key()];
        assert!(cert.verify(&trusted).is_ok());
        assert!(cert.verify(&[other.verifying_key()]).is_err());
        let mut changed = cert.clone();
        changed.payload.data_access_plan_hash = Digest([9; 32]);
        assert!(changed.verify(&trusted).is_err());
        let mut changed = cert.clone();
        changed.payload.run_id = "run-2".into();
        assert!(changed.verify(&trusted).is_err());
        let mut changed = cert;
        changed.signature[0] ^= 1;
        assert!(changed.verify(&trusted).is_err());
    }
}
