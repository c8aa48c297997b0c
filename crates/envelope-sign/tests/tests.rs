//! Integration tests of envelope-sign: known-answer vectors (`tests/data/`), sign → verify
//! properties, the trusted-key policy, key files, the tamper sweep over an encrypted and signed
//! file, and interop with the independent Python implementation (`tests/python/crypto/`).

mod fuzz_checks;
mod one_pass;

use std::path::Path;

use envelope_core::{Envelope, Error, Format, Section, Signal, SignatureFailure};
use envelope_crypto::{DecryptionKey, Decryptor, Password};
use envelope_sign::{
    Identity, Policy, PublicKeyFile, SigningKey, SigningPublicKey, TrustedKeys, sign, verify,
};
use proptest::prelude::*;

mod vectors;
use vectors::{
    CHEAP, CountingRng, KAT_PASSWORD, checked_in, data, fail_vectors, model, publisher, trusted,
};

#[test]
fn every_failing_vector_gives_its_signal() {
    test_support::check_fail_vectors(&data(""), fail_vectors().len(), |vector| {
        check(&vector.bytes, &trusted()).unwrap_err()
    });
}

/// `cargo xtask regenerate envelope-sign` rewrites the vectors (review the diff!).
#[test]
fn known_answer_vectors_are_reproduced_byte_for_byte() {
    test_support::check_vectors(&data(""), checked_in());
}

/// The digest of docs/signing.md §6, computed independently (`hashlib.sha256` of the two signed
/// regions of `kat_signed.apr`), is the one inside the signed message.
#[test]
fn the_documented_message_of_the_worked_example() {
    let bytes = std::fs::read(data("kat_signed.apr")).unwrap();
    let envelope = Envelope::parse_any(&bytes[..]).unwrap();
    let message = envelope_sign::signed_message(&envelope);
    assert_eq!(&message[..12], b"apr-v1-sign\0");
    assert_eq!(
        hex::encode(&message[12..]),
        "7a51919577ecbbe7da375d71cb369d141bccca86c1c505a617748748ec864323"
    );
    assert_eq!(bytes[0x35], envelope_sign::ALGORITHM_ED25519_SHA256);
}

#[test]
fn the_vector_key_file_opens_with_its_password_only() {
    let file = std::fs::read(data("kat_identity.key")).unwrap();
    let identity = Identity::open(&file, &Password::new(KAT_PASSWORD)).unwrap();
    assert_eq!(
        identity.signing_public_key(),
        publisher().signing_public_key()
    );
    let error = Identity::open(&file, &Password::new("wrong")).unwrap_err();
    assert_eq!(error.signal(), Signal::DecryptionFailed);
    for index in 0..file.len() {
        let mut bad = file.clone();
        bad[index] ^= 0x01;
        assert!(
            Identity::open(&bad, &Password::new(KAT_PASSWORD)).is_err(),
            "byte {index}"
        );
    }
    let public =
        PublicKeyFile::parse(&std::fs::read_to_string(data("kat_identity.key.pub")).unwrap())
            .unwrap();
    assert_eq!(public.signing, [publisher().signing_public_key()]);
    assert_eq!(public.recipients, [publisher().recipient_public_key()]);
}

fn check(bytes: &[u8], trusted: &TrustedKeys) -> Result<SigningPublicKey, Error> {
    let envelope = Envelope::parse_any(bytes)?;
    Ok(Policy::RequireSignature { trusted }
        .check(&envelope)?
        .unwrap())
}

#[test]
fn the_policy_refuses_unsigned_untrusted_and_altered_files() {
    let signed = std::fs::read(data("kat_signed.apr")).unwrap();
    assert_eq!(
        check(&signed, &trusted()).unwrap(),
        publisher().signing_public_key()
    );

    let unsigned = model(b"weights");
    assert!(matches!(
        check(&unsigned, &trusted()),
        Err(Error::SignatureInvalid(SignatureFailure::Missing))
    ));

    let stranger = TrustedKeys::from_keys([Identity::from_seed([1; 32]).signing_public_key()]);
    assert!(matches!(
        check(&signed, &stranger),
        Err(Error::SignatureInvalid(SignatureFailure::UntrustedKey))
    ));

    // A file re-signed by another key that embeds the publisher's public key does not pass.
    let forger = SigningKey::from_bytes(&[2; 32]);
    let mut forged = sign(&signed, &forger).unwrap();
    let at = test_support::section_range(&forged, Section::Signature).start + 1;
    forged[at..at + 32].copy_from_slice(publisher().signing_public_key().as_bytes());
    test_support::fix_crc32_trailer(&mut forged);
    assert!(matches!(
        check(&forged, &trusted()),
        Err(Error::SignatureInvalid(SignatureFailure::Mismatch))
    ));

    // Accepting unsigned files checks nothing.
    let envelope = Envelope::parse_any(&unsigned[..]).unwrap();
    assert_eq!(Policy::AcceptUnsigned.check(&envelope).unwrap(), None);
}

/// Clearing the SIGNED flag (and fixing the CRC) does not slip past a caller that requires
/// signatures: the walk fails on the leftover block, and a file rebuilt without it is Missing.
#[test]
fn clearing_the_signed_flag_does_not_slip_past() {
    let signed = std::fs::read(data("kat_signed.apr")).unwrap();
    let mut cleared = signed.clone();
    cleared[21] &= !0x02;
    test_support::fix_crc32_trailer(&mut cleared);
    assert_eq!(
        check(&cleared, &trusted()).unwrap_err().signal(),
        Signal::InvalidFormat
    );
    let envelope = Envelope::parse_any(&signed[..]).unwrap();
    let mut parts = envelope.to_parts();
    parts.signature = None;
    let stripped = parts.to_bytes().unwrap();
    assert!(matches!(
        check(&stripped, &trusted()),
        Err(Error::SignatureInvalid(SignatureFailure::Missing))
    ));
}

#[test]
fn signing_an_encrypted_file_keeps_it_decryptable_and_signed_bytes_include_the_license() {
    let bytes = std::fs::read(data("kat_encrypted_signed.ald")).unwrap();
    check(&bytes, &trusted()).unwrap();
    let envelope = Envelope::parse_any(&bytes[..]).unwrap();
    let secret = publisher().recipient_secret_key();
    let payload = Decryptor::new(&envelope, DecryptionKey::Recipient(&secret))
        .unwrap()
        .payload()
        .unwrap();
    assert_eq!(payload, b"a,b\n1,2\n3,4\n".repeat(8));
    // Changing one license byte (CRC fixed) breaks the signature.
    let license = envelope.layout().span(Section::License).unwrap();
    let mut bad = bytes.clone();
    bad[usize::try_from(license.offset).unwrap()] ^= 0x20;
    test_support::fix_crc32_trailer(&mut bad);
    assert!(matches!(
        check(&bad, &trusted()),
        Err(Error::SignatureInvalid(SignatureFailure::Mismatch))
    ));
}

/// Loads as a careful reader does: verify the envelope, require a trusted signature, then
/// decrypt.
fn load(bytes: &[u8]) -> Result<Vec<u8>, Error> {
    let envelope = Envelope::parse(bytes, Format::Dataset)?;
    Policy::RequireSignature {
        trusted: &trusted(),
    }
    .check(&envelope)?;
    let secret = publisher().recipient_secret_key();
    Decryptor::new(&envelope, DecryptionKey::Recipient(&secret))?.payload()
}

fn section_of(envelope: &Envelope<&[u8]>, index: usize) -> Section {
    let index = index as u64;
    for (section, span, framed) in envelope.layout().sections() {
        let start = if framed { span.offset - 4 } else { span.offset };
        if (start..span.end()).contains(&index) {
            return section;
        }
    }
    Section::Checksum
}

/// Every bit of every section of a small encrypted, signed and licensed file, flipped: as stored,
/// the CRC32 catches it (magic and version are checked first and give their own signals); with
/// the CRC recomputed, the signature does, unless the walk already refuses the structure.
#[test]
fn every_bit_of_an_encrypted_signed_file_is_caught_by_the_right_signal() {
    let bytes = std::fs::read(data("kat_encrypted_signed.ald")).unwrap();
    assert!(load(&bytes).is_ok());
    let envelope = Envelope::parse_any(&bytes[..]).unwrap();
    let crc_at = bytes.len() - 4;
    let mut seen = std::collections::BTreeMap::<(&str, &str, &str), usize>::new();
    for index in 0..bytes.len() {
        let section = section_of(&envelope, index);
        for bit in 0..8 {
            let mut bad = bytes.clone();
            bad[index] ^= 1 << bit;
            let raw = load(&bad).unwrap_err().signal();
            // A version flip that lands on another supported version (1.2 -> 1.0) passes the
            // version check and meets the CRC.
            let expected_raw: &[Signal] = match index {
                0..4 => &[Signal::InvalidFormat],
                4..6 => &[Signal::UnsupportedVersion, Signal::ChecksumMismatch],
                _ => &[Signal::ChecksumMismatch],
            };
            assert!(
                expected_raw.contains(&raw),
                "{section} byte {index} bit {bit}, CRC as stored: {raw}"
            );
            if index >= crc_at {
                continue;
            }
            test_support::fix_crc32_trailer(&mut bad);
            let fixed = load(&bad).unwrap_err().signal();
            let allowed: &[Signal] = match index {
                0..4 => &[Signal::InvalidFormat],
                4..6 => &[Signal::UnsupportedVersion, Signal::SignatureInvalid],
                _ => &[Signal::SignatureInvalid, Signal::InvalidFormat],
            };
            assert!(
                allowed.contains(&fixed),
                "{section} byte {index} bit {bit}: {fixed} with CRC fixed"
            );
            *seen
                .entry((section.name(), raw.name(), fixed.name()))
                .or_default() += 1;
        }
    }
    // Every section's payload-carrying bytes reached the signature check at least once.
    for section in [
        "metadata",
        "schema",
        "encryption",
        "payload",
        "signature",
        "license",
    ] {
        assert!(
            seen.keys()
                .any(|(s, _, f)| *s == section && *f == "SignatureInvalid"),
            "{section}: {seen:?}"
        );
    }
}

/// Without a signature policy the same flips in the encrypted parts are DecryptionFailed: the
/// associated data binds everything before the payload.
#[test]
fn without_a_policy_flips_before_and_in_the_payload_are_decryption_failures() {
    let bytes = std::fs::read(data("kat_encrypted_signed.ald")).unwrap();
    let envelope = Envelope::parse_any(&bytes[..]).unwrap();
    let secret = publisher().recipient_secret_key();
    let payload_end =
        usize::try_from(envelope.layout().span(Section::Payload).unwrap().end()).unwrap();
    let mut decryption_failures = 0;
    for index in 6..payload_end {
        let mut bad = bytes.clone();
        bad[index] ^= 0x04;
        test_support::fix_crc32_trailer(&mut bad);
        let result = Envelope::parse_any(&bad[..]).and_then(|envelope| {
            Decryptor::new(&envelope, DecryptionKey::Recipient(&secret))?.payload()
        });
        let signal = result.unwrap_err().signal();
        assert!(
            matches!(signal, Signal::InvalidFormat | Signal::DecryptionFailed),
            "byte {index}: {signal}"
        );
        decryption_failures += usize::from(signal == Signal::DecryptionFailed);
    }
    assert!(
        decryption_failures > payload_end / 2,
        "{decryption_failures}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn sign_then_verify_succeeds_and_any_covered_flip_fails(
        payload in proptest::collection::vec(any::<u8>(), 0..300),
        seed: [u8; 32],
        flip in any::<prop::sample::Index>(),
    ) {
        let identity = Identity::from_seed(seed);
        let signed = sign(&model(&payload), &identity.signing_key()).unwrap();
        let trusted = TrustedKeys::from_keys([identity.signing_public_key()]);
        let envelope = Envelope::parse_any(&signed[..]).unwrap();
        prop_assert_eq!(verify(&envelope, &trusted).unwrap(), identity.signing_public_key());
        // Signing again gives the same bytes (Ed25519 is deterministic) and replaces the block.
        prop_assert_eq!(sign(&signed, &identity.signing_key()).unwrap(), signed.clone());
        let index = 6 + flip.index(signed.len() - 10);
        let mut bad = signed.clone();
        bad[index] ^= 0x80;
        test_support::fix_crc32_trailer(&mut bad);
        prop_assert!(check(&bad, &trusted).is_err());
    }
}

#[test]
fn key_files_round_trip_through_the_filesystem_and_trusted_dirs_read_every_pub_file() {
    let dir = tempfile::tempdir().unwrap();
    let identity = Identity::from_seed([9; 32]);
    let password = Password::new("pw");
    let path = dir.path().join("me.key");
    envelope_sign::fs::write_key_files(&path, &identity, &password, CHEAP, &mut CountingRng(1))
        .unwrap();
    let back = envelope_sign::fs::read_identity(&path, &password).unwrap();
    assert_eq!(back.signing_public_key(), identity.signing_public_key());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
    let trusted_dir = dir.path().join("trusted");
    std::fs::create_dir(&trusted_dir).unwrap();
    assert!(envelope_sign::fs::trusted_keys_from_dir(&trusted_dir).is_err());
    std::fs::copy(dir.path().join("me.key.pub"), trusted_dir.join("me.pub")).unwrap();
    std::fs::write(trusted_dir.join("notes.txt"), "ignored").unwrap();
    let trusted = envelope_sign::fs::trusted_keys_from_dir(&trusted_dir).unwrap();
    assert_eq!(trusted.len(), 1);
}

/// Runs the Python reference implementation (`tests/python/crypto/reader.py`) with `args`.
fn python(args: &[&std::ffi::OsStr]) -> std::process::Output {
    test_support::python("crypto/reader.py", args)
}

/// As [`python`], for a run that must succeed: its stdout.
fn python_ok(args: &[&std::ffi::OsStr]) -> Vec<u8> {
    test_support::python_ok("crypto/reader.py", args)
}

/// The Python reference's arguments to verify the file at `path` against `pub_file`.
fn verify_args<'a>(path: &'a Path, pub_file: &'a Path) -> [&'a std::ffi::OsStr; 4] {
    [
        "verify".as_ref(),
        path.as_os_str(),
        "--public-key-file".as_ref(),
        pub_file.as_os_str(),
    ]
}

/// The independent Python implementation verifies signatures made here, and signs a file that
/// verifies here; it also opens the key file and decrypts the encrypted and signed file.
#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn python_verifies_rust_signatures_and_rust_verifies_python_signatures() {
    let pub_file = data("kat_identity.key.pub");
    for name in ["kat_signed.apr", "kat_encrypted_signed.ald"] {
        // Both algorithm 0x02 (SHA-256), as this build writes.
        python_ok(&verify_args(&data(name), &pub_file));
    }
    // A flipped byte (CRC fixed) must fail in Python too.
    let mut bad = std::fs::read(data("kat_signed.apr")).unwrap();
    bad[33] ^= 1;
    test_support::fix_crc32_trailer(&mut bad);
    let dir = tempfile::tempdir().unwrap();
    let bad_path = dir.path().join("bad.apr");
    std::fs::write(&bad_path, &bad).unwrap();
    assert!(!python(&verify_args(&bad_path, &pub_file)).status.success());

    // Python signs an unsigned file with a seed; Rust verifies it.
    let unsigned = dir.path().join("unsigned.apr");
    std::fs::write(&unsigned, model(b"python weights")).unwrap();
    let signed = dir.path().join("signed.apr");
    let seed = "5e".repeat(32);
    python_ok(&[
        "sign".as_ref(),
        unsigned.as_os_str(),
        "--seed-hex".as_ref(),
        seed.as_ref(),
        "-o".as_ref(),
        signed.as_os_str(),
    ]);
    let bytes = std::fs::read(&signed).unwrap();
    assert_eq!(
        check(&bytes, &trusted()).unwrap(),
        publisher().signing_public_key()
    );

    // Python signs as earlier builds did (algorithm 0x01, SHA-512); both Rust verifiers accept it.
    let legacy = dir.path().join("legacy.apr");
    python_ok(&[
        "sign".as_ref(),
        unsigned.as_os_str(),
        "--seed-hex".as_ref(),
        seed.as_ref(),
        "--algorithm".as_ref(),
        "0x01".as_ref(),
        "-o".as_ref(),
        legacy.as_os_str(),
    ]);
    let bytes = std::fs::read(&legacy).unwrap();
    let body = test_support::section_range(&bytes, Section::Signature);
    assert_eq!(bytes[body.start], envelope_sign::ALGORITHM_ED25519_SHA512);
    assert_eq!(
        check(&bytes, &trusted()).unwrap(),
        publisher().signing_public_key()
    );
    assert_eq!(
        envelope_sign::fs::verify_file(&legacy, None, &trusted()).unwrap(),
        publisher().signing_public_key()
    );
    // Python verifies the legacy vector, and a large file signed by the one-read signer.
    python_ok(&verify_args(&data("kat_signed_sha512.apr"), &pub_file));
    let large = dir.path().join("large.apr");
    let payload: Vec<u8> = (0..(2usize << 20) + 77)
        .map(|i| i.to_le_bytes()[1])
        .collect();
    std::fs::write(&large, model(&payload)).unwrap();
    envelope_sign::fs::sign_file(&large, None, &large, &publisher().signing_key()).unwrap();
    python_ok(&verify_args(&large, &pub_file));

    // Python opens the key file and decrypts the encrypted and signed file with the X25519 key it
    // derives from the seed.
    let stdout = python_ok(&[
        "decrypt".as_ref(),
        data("kat_encrypted_signed.ald").as_os_str(),
        "--key-file".as_ref(),
        data("kat_identity.key").as_os_str(),
        "--password".as_ref(),
        KAT_PASSWORD.as_ref(),
    ]);
    assert_eq!(stdout, b"a,b\n1,2\n3,4\n".repeat(8));
}

/// The fuzz corpora of the key-file and crypto-block parsers replay without a panic.
#[test]
fn fuzz_corpora_replay_clean() {
    test_support::replay_corpus("crypto_parsers", fuzz_checks::crypto_parsers);
    test_support::replay_corpus("key_file", fuzz_checks::key_file);
}

/// Known answer computed by an independent HKDF (Python `cryptography`, `HKDF(SHA256(), 32, None,
/// b"ml-envelope/watermark/v1/seller-key").derive(bytes(range(32)))`).
#[test]
fn the_watermark_secret_is_the_documented_hkdf_of_the_seed() {
    let seed: [u8; 32] = std::array::from_fn(|i| u8::try_from(i).unwrap());
    let identity = envelope_sign::Identity::from_seed(seed);
    assert_eq!(
        hex::encode(identity.watermark_secret().as_ref()),
        "d46c3498e62fd3b640e34b5b4067496fc1533376a23c0046d39c36cd02c79d27"
    );
    assert_ne!(
        identity.watermark_secret().as_ref(),
        identity.recipient_secret_key().to_bytes().as_ref()
    );
}
