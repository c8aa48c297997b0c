//! The one-read paths [`envelope_sign::fs::sign_file`] and [`envelope_sign::fs::verify_file`]:
//! byte-for-byte the output of the in-memory [`sign`], the same verdict as parse-then-verify for
//! every vector and every tampered byte (CRC as stored and recomputed), files larger than one
//! read block, and signatures of earlier builds (algorithm `0x01`, SHA-512).

use std::borrow::Cow;
use std::path::Path;

use envelope_core::{Compression, EnvelopeParts, Error, Format, Payload, Signal, SignatureFailure};
use envelope_sign::fs::{sign_file, verify_file};
use envelope_sign::{Identity, TrustedKeys, sign};
use proptest::prelude::*;

use crate::check;
use crate::vectors::{checked_in, data, model, publisher, sign_sha512, trusted};

/// The verdict of the one-read verifier on `bytes`, written to a file in `dir`.
fn verify_bytes(dir: &Path, bytes: &[u8], trusted: &TrustedKeys) -> Result<Vec<u8>, Error> {
    let path = dir.join("file");
    std::fs::write(&path, bytes).unwrap();
    verify_file(&path, None, trusted).map(|key| key.as_bytes().to_vec())
}

/// The in-memory verdict, in the same form.
fn verify_in_memory(bytes: &[u8], trusted: &TrustedKeys) -> Result<Vec<u8>, Error> {
    check(bytes, trusted).map(|key| key.as_bytes().to_vec())
}

fn same_verdict(one_pass: &Result<Vec<u8>, Error>, in_memory: &Result<Vec<u8>, Error>) -> bool {
    match (one_pass, in_memory) {
        (Ok(a), Ok(b)) => a == b,
        (Err(a), Err(b)) => a.to_string() == b.to_string(),
        _ => false,
    }
}

/// A model of `len` payload bytes that are not all alike, with a license block.
fn big_model(len: usize) -> Vec<u8> {
    let payload: Vec<u8> = (0..len)
        .map(|i| (i * 7 + i / 251).to_le_bytes()[0])
        .collect();
    model(&payload)
}

#[test]
fn every_checked_in_vector_gets_the_in_memory_verdict() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in checked_in() {
        if name.ends_with(".key") || name.ends_with(".pub") {
            continue;
        }
        let one_pass = verify_bytes(dir.path(), &bytes, &trusted());
        let in_memory = verify_in_memory(&bytes, &trusted());
        assert!(
            same_verdict(&one_pass, &in_memory),
            "{name}: {one_pass:?} vs {in_memory:?}"
        );
        assert_eq!(name.starts_with("kat_"), one_pass.is_ok(), "{name}");
    }
}

/// Files of earlier builds (algorithm 0x01, SHA-512) still verify, on both paths; a 0x01 block
/// turned into 0x02 (or back) does not, and an unknown algorithm is Malformed.
#[test]
fn signatures_of_earlier_builds_still_verify() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = std::fs::read(data("kat_signed_sha512.apr")).unwrap();
    assert_eq!(legacy[0x35], envelope_sign::ALGORITHM_ED25519_SHA512);
    let key = publisher().signing_public_key().as_bytes().to_vec();
    assert_eq!(verify_bytes(dir.path(), &legacy, &trusted()).unwrap(), key);
    assert_eq!(verify_in_memory(&legacy, &trusted()).unwrap(), key);
    let current = std::fs::read(data("kat_signed.apr")).unwrap();
    assert_eq!(current[0x35], envelope_sign::ALGORITHM_ED25519_SHA256);
    for (bytes, other) in [(&legacy, 0x02), (&current, 0x01)] {
        let mut switched = bytes.clone();
        switched[0x35] = other;
        test_support::fix_crc32_trailer(&mut switched);
        for verdict in [
            verify_bytes(dir.path(), &switched, &trusted()),
            verify_in_memory(&switched, &trusted()),
        ] {
            assert!(matches!(
                verdict,
                Err(Error::SignatureInvalid(SignatureFailure::Mismatch))
            ));
        }
    }
    let mut unknown = current.clone();
    unknown[0x35] = 0x03;
    test_support::fix_crc32_trailer(&mut unknown);
    assert!(matches!(
        verify_bytes(dir.path(), &unknown, &trusted()),
        Err(Error::SignatureInvalid(SignatureFailure::Malformed))
    ));
}

/// Every byte of the signed model and of the encrypted signed dataset flipped, CRC as stored and
/// recomputed: the one-read verifier gives exactly the in-memory verdict (ChecksumMismatch first,
/// then the signature's).
#[test]
fn every_flipped_byte_gets_the_in_memory_verdict() {
    let dir = tempfile::tempdir().unwrap();
    for bytes in [
        std::fs::read(data("kat_signed.apr")).unwrap(),
        std::fs::read(data("kat_encrypted_signed.ald")).unwrap(),
    ] {
        for index in 0..bytes.len() {
            for fix_crc in [false, true] {
                let mut bad = bytes.clone();
                bad[index] ^= 0x10;
                if fix_crc {
                    test_support::fix_crc32_trailer(&mut bad);
                }
                let one_pass = verify_bytes(dir.path(), &bad, &trusted());
                let in_memory = verify_in_memory(&bad, &trusted());
                assert!(
                    same_verdict(&one_pass, &in_memory),
                    "byte {index}, CRC fixed {fix_crc}: {one_pass:?} vs {in_memory:?}"
                );
                // A flipped trailer byte, recomputed, is the original file again.
                let restored = fix_crc && index >= bytes.len() - 4;
                assert_eq!(one_pass.is_err(), !restored, "byte {index}");
            }
        }
    }
}

/// A file of several read blocks, tampered at block boundaries, in the middle, in the license:
/// refused as stored (ChecksumMismatch) and with the CRC recomputed (Mismatch); signing a
/// corrupt file writes nothing.
#[test]
fn tampering_in_any_block_of_a_large_file_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.apr");
    std::fs::write(&input, big_model((3 << 20) + 12_345)).unwrap();
    let output = dir.path().join("signed.apr");
    sign_file(
        &input,
        Some(Format::Model),
        &output,
        &publisher().signing_key(),
    )
    .unwrap();
    let signed = std::fs::read(&output).unwrap();
    assert_eq!(
        signed,
        sign(&std::fs::read(&input).unwrap(), &publisher().signing_key()).unwrap()
    );
    assert!(verify_bytes(dir.path(), &signed, &trusted()).is_ok());
    let last = signed.len() - 5;
    for index in [
        40,
        (512 << 10) - 1,
        512 << 10,
        (1 << 20) + 3,
        2 << 20,
        last - 40,
        last,
    ] {
        let mut bad = signed.clone();
        bad[index] ^= 0x01;
        assert_eq!(
            verify_bytes(dir.path(), &bad, &trusted())
                .unwrap_err()
                .signal(),
            Signal::ChecksumMismatch,
            "byte {index}"
        );
        // Signing a corrupt input is refused, and nothing is written.
        let corrupt = dir.path().join("corrupt.apr");
        std::fs::write(&corrupt, &bad).unwrap();
        let target = dir.path().join("never.apr");
        let error = sign_file(&corrupt, None, &target, &publisher().signing_key()).unwrap_err();
        assert_eq!(error.signal(), Signal::ChecksumMismatch, "byte {index}");
        assert!(!target.exists());
        test_support::fix_crc32_trailer(&mut bad);
        assert!(
            matches!(
                verify_bytes(dir.path(), &bad, &trusted()),
                Err(Error::SignatureInvalid(SignatureFailure::Mismatch))
            ),
            "byte {index}"
        );
    }
}

/// A file of either format, with or without license, compression or encryption, signed (by an
/// earlier build) or not yet.
fn file_strategy() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<bool>(),
        proptest::collection::vec(any::<u8>(), 0..3000),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..100)),
        0..3u8,
        any::<bool>(),
    )
        .prop_map(|(dataset, payload, license, kind, pre_signed)| {
            let format = if dataset {
                Format::Dataset
            } else {
                Format::Model
            };
            let mut parts = EnvelopeParts::new(format, 1);
            parts.metadata = Cow::Borrowed(b"\x80");
            if dataset {
                parts.schema = Cow::Borrowed(b"SCHEMA");
            }
            parts.license = license.map(Cow::Owned);
            let bytes = match kind {
                0 => {
                    parts.payload = Payload::compressed(Compression::None, &payload).unwrap();
                    parts.to_bytes().unwrap()
                }
                1 => {
                    parts.compression = Compression::Lz4;
                    parts.payload = Payload::compressed(Compression::Lz4, &payload).unwrap();
                    parts.to_bytes().unwrap()
                }
                _ => {
                    parts.payload = Payload::compressed(Compression::None, &payload).unwrap();
                    let me = publisher().recipient_public_key();
                    envelope_crypto::encrypt(
                        &parts,
                        envelope_crypto::EncryptTo::Recipient(&me),
                        envelope_crypto::EncryptOptions { segment_size: 1024 },
                        &mut crate::vectors::CountingRng(0),
                    )
                    .unwrap()
                    .to_bytes()
                    .unwrap()
                }
            };
            if pre_signed {
                sign_sha512(&bytes, &Identity::from_seed([4; 32]).signing_key())
            } else {
                bytes
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The one-read signer writes exactly what the in-memory signer makes of the same file, and
    /// the one-read verifier accepts it.
    #[test]
    fn sign_file_writes_what_sign_makes(file in file_strategy(), seed: [u8; 32]) {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in");
        std::fs::write(&input, &file).unwrap();
        let identity = Identity::from_seed(seed);
        let output = dir.path().join("out");
        sign_file(&input, None, &output, &identity.signing_key()).unwrap();
        let written = std::fs::read(&output).unwrap();
        prop_assert_eq!(&written, &sign(&file, &identity.signing_key()).unwrap());
        let trusted = TrustedKeys::from_keys([identity.signing_public_key()]);
        prop_assert_eq!(
            verify_file(&output, None, &trusted).unwrap(),
            identity.signing_public_key()
        );
        // In place, as `sign FILE` without -o does.
        sign_file(&input, None, &input, &identity.signing_key()).unwrap();
        prop_assert_eq!(std::fs::read(&input).unwrap(), written);
    }
}

/// The caller's format is enforced (`apr sign` of a dataset is refused).
#[test]
fn the_callers_format_is_enforced() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("model.apr");
    std::fs::write(&input, model(b"weights")).unwrap();
    let target = dir.path().join("out.ald");
    let error = sign_file(
        &input,
        Some(Format::Dataset),
        &target,
        &publisher().signing_key(),
    )
    .unwrap_err();
    assert_eq!(error.signal(), Signal::InvalidFormat);
    assert!(!target.exists());
    let signed = dir.path().join("signed.apr");
    std::fs::copy(data("kat_signed.apr"), &signed).unwrap();
    assert_eq!(
        verify_file(&signed, Some(Format::Dataset), &trusted())
            .unwrap_err()
            .signal(),
        Signal::InvalidFormat
    );
}
