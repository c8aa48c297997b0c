//! Integration tests of envelope-crypto: known-answer vectors (`tests/data/`), encrypt → decrypt
//! properties across sizes and segment boundaries, the binding of everything before the payload,
//! the three modes, and interop with the independent Python reader (`tests/python/crypto/`).

use std::borrow::Cow;

use envelope_core::DecryptionFailure::{Failed, Malformed, NotARecipient};
use envelope_core::{
    Compression, DecryptionFailure, Envelope, EnvelopeParts, Error, Format, Payload, Section,
    Signal,
};
use envelope_crypto::{
    ChunkEncryptor, DecryptionKey, Decryptor, EncryptOptions, EncryptTo, Password,
    RecipientPublicKey, encrypt,
};
use proptest::prelude::*;

mod vectors;
use vectors::{
    CHEAP, CountingRng, KAT_PASSWORD, KAT_SEGMENT, alice, bob, checked_in, data, eve, fail_vectors,
    kat_payload, plain_parts, streaming_parts,
};

/// Every `fail_*` vector is refused with the signal its name gives, using the vectors' keys.
#[test]
fn every_failing_vector_gives_its_signal() {
    let password = Password::new(KAT_PASSWORD);
    let alice = alice();
    test_support::check_fail_vectors(&data(""), fail_vectors().len(), |vector| {
        let key = if vector.name.ends_with(".apr") {
            DecryptionKey::Recipient(&alice)
        } else {
            DecryptionKey::Password(&password)
        };
        decrypt(&vector.bytes, key).unwrap_err()
    });
}

/// The vectors are fixed bytes: rebuilding them gives the checked-in files, and the files
/// decrypt to the payload. `cargo xtask regenerate envelope-crypto` rewrites them (review the
/// diff!).
#[test]
fn known_answer_vectors_are_reproduced_byte_for_byte() {
    test_support::check_vectors(&data(""), checked_in());
}

#[test]
fn known_answer_vectors_decrypt_with_every_listed_key() {
    let payload = kat_payload();
    let password = Password::new(KAT_PASSWORD);
    let (alice, bob) = (alice(), bob());
    let cases: [(&str, Format, &[DecryptionKey<'_>]); 4] = [
        (
            "kat_password.ald",
            Format::Dataset,
            &[DecryptionKey::Password(&password)],
        ),
        (
            "kat_recipient.apr",
            Format::Model,
            &[DecryptionKey::Recipient(&alice)],
        ),
        (
            "kat_multi_recipient.ald",
            Format::Dataset,
            &[
                DecryptionKey::Recipient(&alice),
                DecryptionKey::Recipient(&bob),
            ],
        ),
        (
            "kat_streaming_password.ald",
            Format::Dataset,
            &[DecryptionKey::Password(&password)],
        ),
    ];
    for (name, format, keys) in cases {
        let bytes = std::fs::read(data(name)).unwrap();
        let envelope = Envelope::parse(&bytes[..], format).unwrap();
        for key in keys {
            assert_eq!(
                Decryptor::new(&envelope, *key).unwrap().payload().unwrap(),
                payload,
                "{name}"
            );
        }
    }
}

fn decrypt(bytes: &[u8], key: DecryptionKey<'_>) -> Result<Vec<u8>, Error> {
    let envelope = Envelope::parse_any(bytes)?;
    Decryptor::new(&envelope, key)?.payload()
}

#[test]
fn the_sealed_request_and_response_vectors_open_with_the_right_keys_only() {
    let request = std::fs::read(data("kat_sealed_request.bin")).unwrap();
    let (reply_to, query) = envelope_crypto::query::open_request(&alice(), &request).unwrap();
    assert_eq!(
        (reply_to, query.as_slice()),
        (bob().public_key(), &b"SELECT count(*) FROM rows"[..])
    );
    assert!(envelope_crypto::query::open_request(&bob(), &request).is_err());
    let response = std::fs::read(data("kat_sealed_response.bin")).unwrap();
    assert_eq!(
        envelope_crypto::query::open_message(&bob(), &response).unwrap(),
        b"3"
    );
    assert_eq!(
        envelope_crypto::query::open_message(&eve(), &response)
            .unwrap_err()
            .signal(),
        Signal::DecryptionFailed
    );
}

#[test]
fn outsiders_and_wrong_passwords_get_decryption_failed() {
    let eve = eve();
    let wrong = Password::new("wrong");
    for name in ["kat_recipient.apr", "kat_multi_recipient.ald"] {
        let bytes = std::fs::read(data(name)).unwrap();
        assert_decryption_failure(&bytes, DecryptionKey::Recipient(&eve), NotARecipient);
        let error = decrypt(&bytes, DecryptionKey::Password(&wrong)).unwrap_err();
        assert_eq!(error.signal(), Signal::DecryptionFailed);
    }
    let bytes = std::fs::read(data("kat_password.ald")).unwrap();
    assert_decryption_failure(&bytes, DecryptionKey::Password(&wrong), Failed);
}

/// Every bit of every byte before the payload (and of the payload), flipped with the CRC
/// recomputed, is refused: by the envelope walk (InvalidFormat) or by authentication
/// (DecryptionFailed), never silently accepted. A structural byte may also make the walk fail
/// before decryption; what matters is that no flip loads.
#[test]
fn every_bit_before_and_in_the_payload_is_bound() {
    let bytes = std::fs::read(data("kat_recipient.apr")).unwrap();
    let alice = alice();
    let core::ops::Range { start, end } = test_support::section_range(&bytes, Section::Payload);
    // Every byte before the payload; in the payload, every segment's first and last bytes and
    // every tag byte of the first segment (the rest of the payload is the same AES-GCM check).
    let payload_probes = [
        start,
        start + 1,
        start + 1023,
        start + 1024,
        start + 1039,
        end - 1,
    ];
    for index in (0..start).chain(payload_probes) {
        for bit in 0..8 {
            let mut bad = bytes.clone();
            bad[index] ^= 1 << bit;
            test_support::fix_crc32_trailer(&mut bad);
            let error = decrypt(&bad, DecryptionKey::Recipient(&alice)).unwrap_err();
            assert!(
                matches!(
                    error.signal(),
                    Signal::InvalidFormat | Signal::DecryptionFailed | Signal::UnsupportedVersion
                ),
                "byte {index} bit {bit}: {error}"
            );
        }
    }
}

/// Signature and license blocks are added after encryption: their flags are not in the AAD.
#[test]
fn adding_signature_and_license_blocks_keeps_the_file_decryptable() {
    let bytes = std::fs::read(data("kat_password.ald")).unwrap();
    let envelope = Envelope::parse_any(&bytes[..]).unwrap();
    let mut parts = envelope.to_parts();
    parts.signature = Some(Cow::Owned(vec![0; 97]));
    parts.license = Some(Cow::Owned(b"license".to_vec()));
    let signed = parts.to_bytes().unwrap();
    let password = Password::new(KAT_PASSWORD);
    assert_eq!(
        decrypt(&signed, DecryptionKey::Password(&password)).unwrap(),
        kat_payload()
    );
}

#[test]
fn one_chunk_of_a_streaming_file_decrypts_alone_and_chunks_cannot_be_swapped() {
    let bytes = std::fs::read(data("kat_streaming_password.ald")).unwrap();
    let password = Password::new(KAT_PASSWORD);
    let envelope = Envelope::parse_any(&bytes[..]).unwrap();
    let decryptor = Decryptor::new(&envelope, DecryptionKey::Password(&password)).unwrap();
    let payload = kat_payload();
    assert_eq!(decryptor.chunk(1).unwrap(), &payload[833..1666]);

    // Swap the stored bytes of chunks 0 and 1 (same sizes) and fix the CRC: chunk 0 now fails.
    let index = envelope.chunk_index().unwrap();
    let base = test_support::section_range(&bytes, Section::Payload).start;
    let (e0, e1) = (index.entries()[0], index.entries()[1]);
    assert_eq!(e0.stored_size, e1.stored_size);
    let r0 = base + usize::try_from(e0.stored_offset).unwrap();
    let r1 = base + usize::try_from(e1.stored_offset).unwrap();
    let len = usize::try_from(e0.stored_size).unwrap();
    let mut swapped = bytes.clone();
    swapped[r0..r0 + len].copy_from_slice(&bytes[r1..r1 + len]);
    swapped[r1..r1 + len].copy_from_slice(&bytes[r0..r0 + len]);
    test_support::fix_crc32_trailer(&mut swapped);
    assert_decryption_failure(&swapped, DecryptionKey::Password(&password), Failed);
}

/// A segment size outside what readers accept is refused with the numbers (a typed `NotInRange`,
/// `Usage` like every misuse).
#[test]
fn a_segment_size_out_of_range_is_refused_with_the_allowed_range() {
    let payload = kat_payload();
    let parts = plain_parts(Format::Dataset, &payload);
    let alice = alice().public_key();
    let options = EncryptOptions { segment_size: 512 };
    let Err(error) = encrypt(
        &parts,
        EncryptTo::Recipient(&alice),
        options,
        &mut CountingRng(0),
    ) else {
        panic!("a 512-byte segment size was accepted");
    };
    assert!(
        matches!(
            error,
            Error::NotInRange { what: "segment size", value: 512, min: 1024, max } if max == 16 << 20
        ),
        "{error}"
    );
    assert_eq!(error.signal(), Signal::Usage);
}

/// Argon2id asking for 64 GiB (the failing vector, built in `vectors::fail_vectors`) is refused
/// as a malformed block before any memory is taken.
#[test]
fn hostile_kdf_parameters_are_refused_as_malformed() {
    let bytes = std::fs::read(data("fail_argon2_64GiB.DecryptionFailed.ald")).unwrap();
    let password = Password::new(KAT_PASSWORD);
    assert_decryption_failure(&bytes, DecryptionKey::Password(&password), Malformed);
}

#[test]
fn a_low_order_recipient_key_is_refused() {
    let parts = plain_parts(Format::Model, b"x");
    let zero = RecipientPublicKey::from_bytes([0; 32]);
    let error = encrypt(
        &parts,
        EncryptTo::Recipient(&zero),
        EncryptOptions::default(),
        &mut CountingRng(0),
    )
    .unwrap_err();
    assert_eq!(error.signal(), Signal::Usage);
}

#[test]
fn an_unencrypted_file_needs_no_key_and_an_encrypted_one_refuses_plain_decoding() {
    let bytes = std::fs::read(data("kat_password.ald")).unwrap();
    let envelope = Envelope::parse_any(&bytes[..]).unwrap();
    let error = envelope.decode_payload().unwrap_err();
    assert!(matches!(
        error,
        Error::DecryptionFailed(DecryptionFailure::KeyRequired)
    ));
}

#[test]
fn decrypted_parts_write_back_the_plaintext_file() {
    let payload = kat_payload();
    let original = plain_parts(Format::Dataset, &payload).to_bytes().unwrap();
    let bytes = std::fs::read(data("kat_password.ald")).unwrap();
    let envelope = Envelope::parse_any(&bytes[..]).unwrap();
    let password = Password::new(KAT_PASSWORD);
    let parts = Decryptor::new(&envelope, DecryptionKey::Password(&password))
        .unwrap()
        .decrypted_parts()
        .unwrap();
    assert_eq!(parts.to_bytes().unwrap(), original);
}

fn sizes() -> impl Strategy<Value = usize> {
    prop_oneof![
        Just(0usize),
        0usize..5000,
        (1usize..4).prop_flat_map(|k| (k * 1024 - 1)..=(k * 1024 + 1)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn encrypt_then_decrypt_is_identity(len in sizes(), mode in 0u8..3, compression in 0usize..4) {
        let compression = Compression::ALL[compression];
        let payload: Vec<u8> = (0..len).map(|i| u8::try_from(i % 251).unwrap()).collect();
        let mut parts = plain_parts(Format::Model, &payload);
        parts.compression = compression;
        parts.payload = Payload::compressed(compression, &payload).unwrap();
        let password = Password::new("pw");
        let (a, b) = (alice(), bob());
        let keys = [a.public_key(), b.public_key()];
        let (to, key) = match mode {
            0 => (EncryptTo::Password { password: &password, params: CHEAP }, DecryptionKey::Password(&password)),
            1 => (EncryptTo::Recipient(&keys[0]), DecryptionKey::Recipient(&a)),
            _ => (EncryptTo::Recipients(&keys), DecryptionKey::Recipient(&b)),
        };
        let options = EncryptOptions { segment_size: 1024 };
        let bytes = encrypt(&parts, to, options, &mut CountingRng(7)).unwrap().to_bytes().unwrap();
        prop_assert_eq!(decrypt(&bytes, key).unwrap(), payload);
    }

    #[test]
    fn streaming_encrypt_then_decrypt_is_identity(lens in proptest::collection::vec(sizes(), 1..4)) {
        let chunks: Vec<Vec<u8>> = lens.iter().enumerate().map(|(c, &len)| vec![u8::try_from(c).unwrap(); len]).collect();
        let mut parts = EnvelopeParts::new(Format::Model, 1);
        parts.payload = Payload::chunked(Compression::None, chunks.iter().map(|c| (1, c.as_slice()))).unwrap();
        let a = alice();
        let bytes = encrypt(&parts, EncryptTo::Recipient(&a.public_key()), EncryptOptions { segment_size: 1024 }, &mut CountingRng(3))
            .unwrap().to_bytes().unwrap();
        let envelope = Envelope::parse_any(&bytes[..]).unwrap();
        let decryptor = Decryptor::new(&envelope, DecryptionKey::Recipient(&a)).unwrap();
        for (number, chunk) in chunks.iter().enumerate() {
            prop_assert_eq!(&decryptor.chunk(number).unwrap(), chunk);
        }
    }
}

/// The independent Python reader (written from docs/crypto.md alone) decrypts the vectors.
#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn python_reader_decrypts_every_mode() {
    let reader = |args: &[&std::ffi::OsStr]| test_support::python_ok("crypto/reader.py", args);
    let payload = kat_payload();
    for (name, secret, expected) in [
        ("kat_sealed_request.bin", "a1", Vec::new()),
        ("kat_sealed_response.bin", "b2", b"3".to_vec()),
    ] {
        let secret = secret.repeat(32);
        let stdout = reader(&[
            "open-message".as_ref(),
            data(name).as_os_str(),
            "--secret-hex".as_ref(),
            secret.as_ref(),
        ]);
        if name == "kat_sealed_request.bin" {
            // requester public key (bob's) || query
            assert_eq!(&stdout[..32], bob().public_key().as_bytes());
            assert_eq!(&stdout[32..], b"SELECT count(*) FROM rows");
        } else {
            assert_eq!(stdout, expected, "{name}");
        }
    }
    let cases: [(&str, &[&str]); 5] = [
        ("kat_password.ald", &["--password", KAT_PASSWORD]),
        ("kat_streaming_password.ald", &["--password", KAT_PASSWORD]),
        ("kat_recipient.apr", &["--secret-hex", &"a1".repeat(32)]),
        (
            "kat_multi_recipient.ald",
            &["--secret-hex", &"a1".repeat(32)],
        ),
        (
            "kat_multi_recipient.ald",
            &["--secret-hex", &"b2".repeat(32)],
        ),
    ];
    for (name, args) in cases {
        let path = data(name);
        let mut all = vec!["decrypt".as_ref(), path.as_os_str()];
        all.extend(args.iter().map(std::ffi::OsStr::new));
        assert_eq!(reader(&all), payload, "{name}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The streaming writer gives exactly the bytes of the in-memory path, for every mode and
    /// sizes around segment boundaries, with a license block kept.
    #[test]
    fn encrypt_stream_writes_the_same_bytes_as_encrypt(len in sizes(), mode in 0u8..3) {
        let payload: Vec<u8> = (0..len).map(|i| u8::try_from(i % 253).unwrap()).collect();
        let mut parts = plain_parts(Format::Dataset, &payload);
        parts.license = Some(Cow::Borrowed(b"licensee=Acme"));
        let password = Password::new("pw");
        let keys = [alice().public_key(), bob().public_key()];
        let to = match mode {
            0 => EncryptTo::Password { password: &password, params: CHEAP },
            1 => EncryptTo::Recipient(&keys[0]),
            _ => EncryptTo::Recipients(&keys),
        };
        let options = EncryptOptions { segment_size: 1024 };
        let in_memory = encrypt(&parts, to, options, &mut CountingRng(9)).unwrap().to_bytes().unwrap();
        let mut streamed = Vec::new();
        envelope_crypto::encrypt_stream(
            &parts,
            len as u64,
            len as u64,
            &payload[..],
            to,
            options,
            &mut CountingRng(9),
            &mut streamed,
        )
        .unwrap();
        prop_assert!(streamed == in_memory);
    }
}

#[test]
fn encrypt_stream_refuses_a_short_reader() {
    let parts = plain_parts(Format::Model, b"");
    let error = envelope_crypto::encrypt_stream(
        &parts,
        10,
        10,
        &b"short"[..],
        EncryptTo::Recipient(&alice().public_key()),
        EncryptOptions::default(),
        &mut CountingRng(0),
        std::io::sink(),
    )
    .unwrap_err();
    assert_eq!(error.signal(), Signal::Io);
}

/// Writing a STREAMING file chunk by chunk (`ChunkEncryptor` + `begin_chunked`) gives exactly the
/// bytes of the in-memory `encrypt`, for the known-answer streaming vector and in every mode, and
/// one chunk of it opens alone after a lazy open.
#[test]
fn chunk_at_a_time_encryption_matches_encrypt() {
    let payload = kat_payload();
    let parts = streaming_parts(&payload);
    let password = Password::new(KAT_PASSWORD);
    let (a, b) = (alice().public_key(), bob().public_key());
    let both = [a, b];
    let options = EncryptOptions {
        segment_size: KAT_SEGMENT,
    };
    let modes = [
        EncryptTo::Password {
            password: &password,
            params: CHEAP,
        },
        EncryptTo::Recipient(&a),
        EncryptTo::Recipients(&both),
    ];
    let Payload::Chunked {
        index: plain,
        stored,
    } = &parts.payload
    else {
        unreachable!("streaming_parts are chunked")
    };
    for to in modes {
        let whole = encrypt(&parts, to, options, &mut CountingRng(0))
            .unwrap()
            .to_bytes()
            .unwrap();

        let encryptor =
            ChunkEncryptor::new(Format::Dataset, to, options, &mut CountingRng(0)).unwrap();
        let mut header = parts.clone();
        header.encryption = Some(encryptor.encryption_block().into());
        let mut writer = header
            .begin_chunked(encryptor.sealed_index(plain).unwrap(), Vec::new())
            .unwrap();
        let sealer = encryptor.sealer(writer.bytes_before_payload());
        for (number, entry) in (0u32..).zip(plain.entries()) {
            let range = usize::try_from(entry.stored_offset).unwrap()
                ..usize::try_from(entry.stored_offset + entry.stored_size).unwrap();
            writer
                .write_chunk(&sealer.seal(number, &stored[range]).unwrap())
                .unwrap();
        }
        let chunked = writer.finish().unwrap();
        assert_eq!(chunked, whole);
        if matches!(to, EncryptTo::Password { .. }) {
            let vector = std::fs::read(data("kat_streaming_password.ald")).unwrap();
            assert_eq!(
                chunked, vector,
                "the known-answer file, written chunk by chunk"
            );
        }

        let envelope = Envelope::parse_lazy(&chunked[..], Format::Dataset).unwrap();
        assert!(!envelope.is_fully_verified());
        let key = match to {
            EncryptTo::Password { .. } => DecryptionKey::Password(&password),
            _ => DecryptionKey::Recipient(&alice()),
        };
        let decryptor = Decryptor::new(&envelope, key).unwrap();
        let third = payload.len() / 3;
        assert_eq!(decryptor.chunk(1).unwrap(), &payload[third..2 * third]);
    }
}

/// `bytes` fail to decrypt with `key` for exactly `failure`.
#[track_caller]
fn assert_decryption_failure(bytes: &[u8], key: DecryptionKey<'_>, failure: DecryptionFailure) {
    let error = decrypt(bytes, key).unwrap_err();
    assert!(
        matches!(error, Error::DecryptionFailed(found) if found == failure),
        "expected {failure}: {error}"
    );
}
