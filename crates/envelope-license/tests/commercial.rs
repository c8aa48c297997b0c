//! Commercial packaging end to end: package (encrypt → license → sign) and open (signature →
//! license → decryption), each failure with its signal, in the documented order.

mod fuzz_check;

use envelope_core::{Compression, Envelope, EnvelopeParts, Format, Payload, Signal};
use envelope_crypto::{DecryptionKey, EncryptOptions, EncryptTo, RecipientSecretKey};
use envelope_license::commercial::{CommercialPackage, open, package};
use envelope_license::{LicenseBlock, LicenseFlags, read_license};
use envelope_sign::{Identity, SigningPublicKey, TrustedKeys};
use test_support::CountingRng;

const NOW: u64 = 1_750_000_000;

fn parts(format: Format) -> EnvelopeParts<'static> {
    let mut parts = EnvelopeParts::new(format, 0x0001);
    parts.compression = Compression::ZstdL3;
    parts.metadata = b"\x80".to_vec().into();
    parts.payload = Payload::chunked(
        Compression::ZstdL3,
        [
            (1u64, &b"tensor zero"[..]),
            (1, &b"tensor one, a little longer"[..]),
        ],
    )
    .unwrap();
    if format == Format::Dataset {
        parts.num_rows = 2;
    }
    parts
}

fn license() -> LicenseBlock {
    let mut license = LicenseBlock::new([9; 16], "buyer@example.com", NOW - 10, NOW + 86_400);
    license.flags = LicenseFlags::EXPIRATION_ENFORCED;
    license
}

struct World {
    seller: Identity,
    buyer: RecipientSecretKey,
    trusted: TrustedKeys,
}

fn world() -> World {
    let seller = Identity::from_seed([1; 32]);
    let buyer = RecipientSecretKey::from_bytes([2; 32]);
    let trusted = TrustedKeys::from_keys([seller.signing_public_key()]);
    World {
        seller,
        buyer,
        trusted,
    }
}

fn packaged(world: &World, format: Format, encrypt: bool) -> Vec<u8> {
    let signer = world.seller.signing_key();
    let buyer = world.buyer.public_key();
    let spec = CommercialPackage {
        license: license(),
        signer: &signer,
        encrypt_to: encrypt.then_some(EncryptTo::Recipient(&buyer)),
        options: EncryptOptions::default(),
    };
    package(&parts(format), &spec, &mut CountingRng(0)).unwrap()
}

#[test]
fn packaged_files_open_for_the_buyer() {
    let world = world();
    for format in [Format::Dataset, Format::Model] {
        for encrypt in [false, true] {
            let bytes = packaged(&world, format, encrypt);
            let envelope = Envelope::parse(&bytes[..], format).unwrap();
            let key = DecryptionKey::Recipient(&world.buyer);
            let unlocked = open(&envelope, &world.trusted, Some(key), NOW).unwrap();
            assert_eq!(unlocked.license(), &license());
            assert_eq!(
                unlocked.signer(),
                SigningPublicKey::of(&world.seller.signing_key())
            );
            assert_eq!(unlocked.chunk(1).unwrap(), b"tensor one, a little longer");
            assert_eq!(
                unlocked.payload().unwrap(),
                b"tensor zerotensor one, a little longer"
            );
            assert_eq!(read_license(&envelope).unwrap(), Some(license()));
        }
    }
}

#[test]
fn each_check_fails_with_its_signal_in_order() {
    let world = world();
    let bytes = packaged(&world, Format::Model, true);
    let envelope = Envelope::parse(&bytes[..], Format::Model).unwrap();
    let key = DecryptionKey::Recipient(&world.buyer);
    let signal = |trusted: &TrustedKeys, key: Option<DecryptionKey<'_>>, now: u64| {
        open(&envelope, trusted, key, now).unwrap_err().signal()
    };
    // Untrusted signer first, even when the license has expired and no key is given.
    assert_eq!(
        signal(&TrustedKeys::new(), None, u64::MAX),
        Signal::SignatureInvalid
    );
    // Then the license, before any key is derived.
    assert_eq!(
        signal(&world.trusted, None, NOW + 86_400),
        Signal::LicenseExpired
    );
    // Then the key.
    assert_eq!(signal(&world.trusted, None, NOW), Signal::DecryptionFailed);
    let stranger = RecipientSecretKey::from_bytes([3; 32]);
    assert_eq!(
        signal(
            &world.trusted,
            Some(DecryptionKey::Recipient(&stranger)),
            NOW
        ),
        Signal::DecryptionFailed
    );
    assert!(open(&envelope, &world.trusted, Some(key), NOW).is_ok());
}

/// Pushing the expiry date out (and fixing the CRC) breaks the signature: the license is covered.
#[test]
fn an_edited_license_breaks_the_signature() {
    let world = world();
    let bytes = packaged(&world, Format::Dataset, false);
    let envelope = Envelope::parse(&bytes[..], Format::Dataset).unwrap();
    let span = envelope
        .layout()
        .span(envelope_core::Section::License)
        .unwrap();
    let expires = usize::try_from(span.offset).unwrap() + 56;
    let mut edited = bytes.clone();
    edited[expires + 7] = 0x7f;
    let end = edited.len() - 4;
    let crc = crc32fast::hash(&edited[..end]);
    edited[end..].copy_from_slice(&crc.to_le_bytes());
    let envelope = Envelope::parse(&edited[..], Format::Dataset).unwrap();
    let error = open(&envelope, &world.trusted, None, NOW).unwrap_err();
    assert_eq!(error.signal(), Signal::SignatureInvalid, "{error}");
}

#[test]
fn unlicensed_or_already_signed_inputs_are_refused() {
    let world = world();
    let signer = world.seller.signing_key();
    let plain = envelope_sign::sign(&parts(Format::Model).to_bytes().unwrap(), &signer).unwrap();
    let envelope = Envelope::parse(&plain[..], Format::Model).unwrap();
    let error = open(&envelope, &world.trusted, None, NOW).unwrap_err();
    assert_eq!(error.signal(), Signal::InvalidFormat);
    assert!(error.to_string().contains("license block"), "{error}");

    let signed = envelope.to_parts();
    let spec = CommercialPackage {
        license: license(),
        signer: &signer,
        encrypt_to: None,
        options: EncryptOptions::default(),
    };
    let error = package(&signed, &spec, &mut CountingRng(0)).unwrap_err();
    assert_eq!(error.signal(), Signal::Usage);
}

/// Replays the fuzz corpus (fuzz/corpus/license_block) on stable: no input may panic or break the
/// round trip.
#[test]
fn fuzz_corpus_replays_without_panic() {
    test_support::replay_corpus("license_block", fuzz_check::license_block);
}
