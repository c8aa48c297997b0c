//! Private queries and private inference (000 §5.1.4, 003 §4.1.4), protocol
//! `x25519-aes256gcm-v1`: a dataset or model publishes an X25519 key in its metadata; a requester
//! seals a request to it, and the owner seals the response to the requester's key
//! (docs/crypto.md §6).
//!
//! A sealed message is `version (0x01) || ephemeral_pub (32) || ciphertext || tag (16)`. The key
//! is `HKDF-SHA256(ikm = X25519(ephemeral, recipient), salt = ephemeral_pub || recipient_pub,
//! info = "x25519-aes256gcm-v1")`; it is used once, so the nonce is twelve zero bytes; the
//! associated data is the version byte and the ephemeral key.

use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Nonce, Tag};
use envelope_core::{DecryptionFailure, Error, Format, Result};
use rand_core::CryptoRngCore;

use crate::keys::{KEY_LEN, RecipientPublicKey, RecipientSecretKey, from_sender, to_recipient};
use crate::stream::TAG_LEN;

/// The protocol name published next to the key, and the HKDF `info`.
pub const QUERY_PROTOCOL: &str = "x25519-aes256gcm-v1";
/// First byte of every sealed message.
pub const SEALED_MESSAGE_VERSION: u8 = 0x01;
/// Bytes a sealed message adds to its plaintext.
pub const SEALED_MESSAGE_OVERHEAD: usize = 1 + KEY_LEN + TAG_LEN;

/// The metadata fields that publish the key and the protocol: `query_pub_key` /
/// `query_protocol` for datasets (000 §5.1.4), `inference_pub_key` / `inference_protocol` for
/// models (003 §4.1.4). The key's value is [`RecipientPublicKey::to_base64`].
#[must_use]
pub const fn published_key_fields(format: Format) -> (&'static str, &'static str) {
    match format {
        Format::Dataset => ("query_pub_key", "query_protocol"),
        Format::Model => ("inference_pub_key", "inference_protocol"),
    }
}

/// Seals `plaintext` to `to` with a fresh ephemeral key (32 bytes from `rng`).
///
/// # Errors
/// `Usage` if `to` is a low-order point.
pub fn seal_message(
    to: &RecipientPublicKey,
    plaintext: &[u8],
    rng: &mut impl CryptoRngCore,
) -> Result<Vec<u8>> {
    let (ephemeral_pub, key) = to_recipient(to, QUERY_PROTOCOL.as_bytes(), rng)?;
    let mut out = Vec::with_capacity(plaintext.len() + SEALED_MESSAGE_OVERHEAD);
    out.push(SEALED_MESSAGE_VERSION);
    out.extend_from_slice(&ephemeral_pub);
    out.extend_from_slice(plaintext);
    let (head, body) = out.split_at_mut(1 + KEY_LEN);
    let tag = key
        .cipher()
        .encrypt_in_place_detached(Nonce::from_slice(&[0; 12]), head, body)
        .map_err(|_| Error::InvalidArgument("message too long for AES-GCM"))?;
    out.extend_from_slice(&tag);
    Ok(out)
}

/// Opens a message sealed to `secret`'s public key.
///
/// # Errors
/// `DecryptionFailed`: `Malformed` for a wrong version or a message too short; `Failed` for a
/// wrong key or any altered byte.
pub fn open_message(secret: &RecipientSecretKey, sealed: &[u8]) -> Result<Vec<u8>> {
    if sealed.len() < SEALED_MESSAGE_OVERHEAD || sealed[0] != SEALED_MESSAGE_VERSION {
        return Err(Error::DecryptionFailed(DecryptionFailure::Malformed));
    }
    let (head, rest) = sealed.split_at(1 + KEY_LEN);
    let (body, tag) = rest.split_at(rest.len() - TAG_LEN);
    let mut ephemeral_pub = [0u8; KEY_LEN];
    ephemeral_pub.copy_from_slice(&head[1..]);
    let key = from_sender(secret, &ephemeral_pub, QUERY_PROTOCOL.as_bytes())?;
    let mut out = body.to_vec();
    key.cipher()
        .decrypt_in_place_detached(
            Nonce::from_slice(&[0; 12]),
            head,
            &mut out,
            Tag::from_slice(tag),
        )
        .map_err(|_| Error::DecryptionFailed(DecryptionFailure::Failed))?;
    Ok(out)
}

/// A request to the owner of `owner`: the requester's public key (where the response goes)
/// followed by the query, sealed to the owner.
///
/// # Errors
/// As [`seal_message`].
pub fn seal_request(
    owner: &RecipientPublicKey,
    requester: &RecipientPublicKey,
    query: &[u8],
    rng: &mut impl CryptoRngCore,
) -> Result<Vec<u8>> {
    let mut plaintext = zeroize::Zeroizing::new(Vec::with_capacity(KEY_LEN + query.len()));
    plaintext.extend_from_slice(requester.as_bytes());
    plaintext.extend_from_slice(query);
    seal_message(owner, &plaintext, rng)
}

/// Opens a request with the owner's secret key: the requester's public key and the query.
///
/// # Errors
/// As [`open_message`]; `Malformed` if the plaintext is shorter than a public key.
pub fn open_request(
    owner: &RecipientSecretKey,
    sealed: &[u8],
) -> Result<(RecipientPublicKey, Vec<u8>)> {
    let plaintext = open_message(owner, sealed)?;
    let (key, query) = plaintext
        .split_at_checked(KEY_LEN)
        .ok_or(Error::DecryptionFailed(DecryptionFailure::Malformed))?;
    let mut bytes = [0u8; KEY_LEN];
    bytes.copy_from_slice(key);
    Ok((RecipientPublicKey::from_bytes(bytes), query.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    use test_support::CountingRng;

    #[test]
    fn request_and_response_round_trip_and_tampering_fails() {
        let mut rng = CountingRng(1);
        let owner = RecipientSecretKey::generate(&mut rng);
        let user = RecipientSecretKey::generate(&mut rng);
        let request = seal_request(
            &owner.public_key(),
            &user.public_key(),
            b"SELECT 1",
            &mut rng,
        )
        .unwrap();
        let (reply_to, query) = open_request(&owner, &request).unwrap();
        assert_eq!(
            (reply_to, query.as_slice()),
            (user.public_key(), &b"SELECT 1"[..])
        );
        let response = seal_message(&reply_to, b"1", &mut rng).unwrap();
        assert_eq!(open_message(&user, &response).unwrap(), b"1");
        assert!(open_message(&owner, &response).is_err());
        for index in 0..response.len() {
            let mut bad = response.clone();
            bad[index] ^= 1;
            assert!(open_message(&user, &bad).is_err(), "byte {index}");
        }
    }
}
