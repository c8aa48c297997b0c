//! The known-answer and failing vectors of `tests/data`, built from fixed keys and a counting
//! RNG: shared by the tests (which compare them byte for byte with the checked-in files) and by
//! the generator that rewrites those files (`cargo xtask regenerate envelope-sign`,
//! examples/regenerate_*_vectors.rs).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use envelope_core::{Compression, Envelope, EnvelopeParts, Format, Payload, Section};
use envelope_crypto::{Argon2Params, EncryptOptions, EncryptTo, Password, encrypt};
use envelope_sign::{
    Algorithm, Identity, SignatureBlock, SigningKey, TrustedKeys, message_of, sign,
};

pub(crate) use test_support::CountingRng;

pub(crate) const CHEAP: Argon2Params = Argon2Params {
    m_cost_kib: 1024,
    t_cost: 1,
    p_cost: 1,
};

pub(crate) const KAT_PASSWORD: &str = "correct horse battery staple";

pub(crate) fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// The publisher of the vectors: seed 32 x 0x5e.
pub(crate) fn publisher() -> Identity {
    Identity::from_seed([0x5e; 32])
}

pub(crate) fn trusted() -> TrustedKeys {
    TrustedKeys::from_keys([publisher().signing_public_key()])
}

pub(crate) fn model(payload: &[u8]) -> Vec<u8> {
    let mut parts = EnvelopeParts::new(Format::Model, 0x0001);
    parts.metadata = Cow::Borrowed(b"\x81\xa4name\xa3kat");
    parts.payload = Payload::compressed(Compression::None, payload).unwrap();
    parts.license = Some(Cow::Borrowed(b"licensee=Acme;expires=2027-01-01"));
    parts.to_bytes().unwrap()
}

/// `bytes` signed as builds before algorithm `0x02` signed (algorithm `0x01`, SHA-512): what
/// [`sign`] makes, with the block re-made over the SHA-512 message. Independent of the new code's
/// digest: the signed regions leave the block's body out.
pub(crate) fn sign_sha512(bytes: &[u8], key: &SigningKey) -> Vec<u8> {
    let mut signed = sign(bytes, key).unwrap();
    let envelope = Envelope::parse_any(&signed[..]).unwrap();
    let message = message_of(&envelope, Algorithm::Ed25519Sha512);
    let block = SignatureBlock {
        algorithm: Algorithm::Ed25519Sha512,
        ..SignatureBlock::new(key, message.as_bytes())
    };
    let at = test_support::section_range(&signed, Section::Signature).start;
    signed[at..at + envelope_sign::SIGNATURE_BLOCK_LEN].copy_from_slice(&block.encode());
    test_support::fix_crc32_trailer(&mut signed);
    signed
}

/// The small encrypted (recipient mode, to the publisher's own X25519 key) and signed dataset
/// of the tamper sweep and the interop tests.
pub(crate) fn encrypted_and_signed() -> Vec<u8> {
    let payload = b"a,b\n1,2\n3,4\n".repeat(8);
    let mut parts = EnvelopeParts::new(Format::Dataset, 0x0001);
    parts.metadata = Cow::Borrowed(b"\x81\xa4name\xa3kat");
    parts.schema = Cow::Borrowed(b"SCHEMA");
    parts.num_rows = 16;
    parts.payload = Payload::compressed(Compression::None, &payload).unwrap();
    parts.license = Some(Cow::Borrowed(b"licensee=Acme"));
    let me = publisher().recipient_public_key();
    let sealed = encrypt(
        &parts,
        EncryptTo::Recipient(&me),
        EncryptOptions { segment_size: 1024 },
        &mut CountingRng(0),
    )
    .unwrap();
    sign(&sealed.to_bytes().unwrap(), &publisher().signing_key()).unwrap()
}

/// Every checked-in vector, known-answer then failing: what `cargo xtask regenerate` writes and
/// the known-answer test compares.
pub(crate) fn checked_in() -> Vec<(&'static str, Vec<u8>)> {
    kat_vectors().into_iter().chain(fail_vectors()).collect()
}

pub(crate) fn kat_vectors() -> Vec<(&'static str, Vec<u8>)> {
    let identity = publisher();
    let password = Password::new(KAT_PASSWORD);
    vec![
        (
            "kat_signed.apr",
            sign(&model(b"weights"), &identity.signing_key()).unwrap(),
        ),
        (
            "kat_signed_sha512.apr",
            sign_sha512(&model(b"weights"), &identity.signing_key()),
        ),
        ("kat_encrypted_signed.ald", encrypted_and_signed()),
        (
            "kat_identity.key",
            identity
                .seal(&password, CHEAP, &mut CountingRng(0))
                .unwrap(),
        ),
        (
            "kat_identity.key.pub",
            identity.public_key_file().into_bytes(),
        ),
    ]
}

/// Failing vectors: `fail_<what>.<Signal>.<ext>`, checked against the publisher's key.
pub(crate) fn fail_vectors() -> Vec<(&'static str, Vec<u8>)> {
    let signed = sign(&model(b"weights"), &publisher().signing_key()).unwrap();
    let mut changed = signed.clone();
    changed[0x2a] ^= 0x20; // the first payload byte: "weights" -> "Weights"
    test_support::fix_crc32_trailer(&mut changed);
    let stranger = sign(
        &model(b"weights"),
        &Identity::from_seed([1; 32]).signing_key(),
    )
    .unwrap();
    vec![
        ("fail_payload_changed.SignatureInvalid.apr", changed),
        ("fail_untrusted_signer.SignatureInvalid.apr", stranger),
        ("fail_unsigned.SignatureInvalid.apr", model(b"weights")),
    ]
}
