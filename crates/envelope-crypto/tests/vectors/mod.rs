//! The known-answer and failing vectors of `tests/data`, built from fixed keys and a counting
//! RNG: shared by the tests (which compare them byte for byte with the checked-in files) and by
//! the generator that rewrites those files (`cargo xtask regenerate envelope-crypto`,
//! examples/regenerate_*_vectors.rs).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use envelope_core::{Compression, EnvelopeParts, Format, Payload, Section};
use envelope_crypto::{
    Argon2Params, EncryptOptions, EncryptTo, Password, RecipientSecretKey, encrypt,
};

pub(crate) use test_support::CountingRng;

pub(crate) const KAT_PASSWORD: &str = "correct horse battery staple";

pub(crate) const KAT_SEGMENT: u32 = 1024;

pub(crate) const CHEAP: Argon2Params = Argon2Params {
    m_cost_kib: 1024,
    t_cost: 1,
    p_cost: 1,
};

pub(crate) fn alice() -> RecipientSecretKey {
    RecipientSecretKey::from_bytes([0xa1; 32])
}

pub(crate) fn bob() -> RecipientSecretKey {
    RecipientSecretKey::from_bytes([0xb2; 32])
}

pub(crate) fn eve() -> RecipientSecretKey {
    RecipientSecretKey::from_bytes([0xee; 32])
}

pub(crate) fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// 2500 bytes of text: three segments of 1024 (the last one partial).
pub(crate) fn kat_payload() -> Vec<u8> {
    b"The quick brown fox jumps over the lazy dog. "
        .iter()
        .copied()
        .cycle()
        .take(2500)
        .collect()
}

pub(crate) fn plain_parts(format: Format, payload: &[u8]) -> EnvelopeParts<'_> {
    let mut parts = EnvelopeParts::new(format, 0x0001);
    parts.metadata = Cow::Borrowed(b"\x81\xa4name\xa3kat");
    if format == Format::Dataset {
        parts.schema = Cow::Borrowed(b"SCHEMA");
        parts.num_rows = 3;
    }
    parts.payload = Payload::Whole {
        stored: Cow::Borrowed(payload),
        uncompressed_size: payload.len() as u64,
    };
    parts
}

pub(crate) fn streaming_parts(payload: &[u8]) -> EnvelopeParts<'_> {
    let mut parts = plain_parts(Format::Dataset, payload);
    let third = payload.len() / 3;
    parts.payload = Payload::chunked(
        Compression::None,
        [
            (1, &payload[..third]),
            (1, &payload[third..2 * third]),
            (1, &payload[2 * third..]),
        ],
    )
    .unwrap();
    parts
}

/// The known-answer vectors: file name, how to build it (from the counting RNG starting at 0).
/// Every checked-in vector, known-answer then failing: what `cargo xtask regenerate` writes and
/// the known-answer test compares.
pub(crate) fn checked_in() -> Vec<(&'static str, Vec<u8>)> {
    kat_vectors().into_iter().chain(fail_vectors()).collect()
}

pub(crate) fn kat_vectors() -> Vec<(&'static str, Vec<u8>)> {
    let payload = kat_payload();
    let password = Password::new(KAT_PASSWORD);
    let options = EncryptOptions {
        segment_size: KAT_SEGMENT,
    };
    let build = |parts: &EnvelopeParts<'_>, to: EncryptTo<'_>| {
        encrypt(parts, to, options, &mut CountingRng(0))
            .unwrap()
            .to_bytes()
            .unwrap()
    };
    let (a, b) = (alice().public_key(), bob().public_key());
    vec![
        (
            "kat_password.ald",
            build(
                &plain_parts(Format::Dataset, &payload),
                EncryptTo::Password {
                    password: &password,
                    params: CHEAP,
                },
            ),
        ),
        (
            "kat_recipient.apr",
            build(
                &plain_parts(Format::Model, &payload),
                EncryptTo::Recipient(&a),
            ),
        ),
        (
            "kat_multi_recipient.ald",
            build(
                &plain_parts(Format::Dataset, &payload),
                EncryptTo::Recipients(&[a, b]),
            ),
        ),
        (
            "kat_sealed_request.bin",
            envelope_crypto::query::seal_request(
                &a,
                &b,
                b"SELECT count(*) FROM rows",
                &mut CountingRng(0),
            )
            .unwrap(),
        ),
        ("kat_sealed_response.bin", {
            envelope_crypto::query::seal_message(&b, b"3", &mut CountingRng(0x40)).unwrap()
        }),
        (
            "kat_streaming_password.ald",
            build(
                &streaming_parts(&payload),
                EncryptTo::Password {
                    password: &password,
                    params: CHEAP,
                },
            ),
        ),
    ]
}

/// Failing vectors, each made from a known-answer file by one change an attacker could make (the
/// CRC32 recomputed): `fail_<what>.<Signal>.<ext>`.
pub(crate) fn fail_vectors() -> Vec<(&'static str, Vec<u8>)> {
    let vectors = kat_vectors();
    let file = |name: &str| vectors.iter().find(|(n, _)| *n == name).unwrap().1.clone();
    let mut type_changed = file("kat_recipient.apr");
    type_changed[6] ^= 0x02;
    test_support::fix_crc32_trailer(&mut type_changed);
    let mut hostile = file("kat_password.ald");
    let block = test_support::section_range(&hostile, Section::Encryption).start;
    hostile[block + 6..block + 10].copy_from_slice(&(64u32 << 20).to_le_bytes());
    test_support::fix_crc32_trailer(&mut hostile);
    let recipient = file("kat_recipient.apr");
    let payload = test_support::section_range(&recipient, Section::Payload).start;
    let mut swapped = recipient.clone();
    swapped[payload..payload + 1040].copy_from_slice(&recipient[payload + 1040..payload + 2080]);
    swapped[payload + 1040..payload + 2080].copy_from_slice(&recipient[payload..payload + 1040]);
    test_support::fix_crc32_trailer(&mut swapped);
    vec![
        ("fail_type_id_changed.DecryptionFailed.apr", type_changed),
        ("fail_argon2_64GiB.DecryptionFailed.ald", hostile),
        ("fail_segments_swapped.DecryptionFailed.apr", swapped),
    ]
}
