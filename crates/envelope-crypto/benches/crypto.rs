//! Throughput of payload encryption and decryption on 256 MiB (against raw AES-256-GCM over one
//! buffer), and the time of Argon2id at the default parameters. Figures in BENCHMARKS.md.
//!
//! `cargo bench -p envelope-crypto --bench crypto -- --warm-up-time 1 --measurement-time 10`
#![allow(
    missing_docs,
    reason = "criterion_group! generates undocumented functions"
)]

use std::hint::black_box;

use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes256Gcm, KeyInit, Nonce};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use envelope_core::{Envelope, EnvelopeParts, Format, Payload};
use envelope_crypto::{
    Argon2Params, DecryptionKey, Decryptor, EncryptOptions, EncryptTo, RecipientSecretKey, encrypt,
};

const LEN: usize = 256 << 20;

fn payload() -> Vec<u8> {
    (0..LEN)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13).to_le_bytes()[0])
        .collect()
}

fn throughput(c: &mut Criterion) {
    let data = payload();
    let key = RecipientSecretKey::from_bytes([1; 32]);
    let public = key.public_key();
    let mut rng = envelope_crypto::OsRng;
    let mut group = c.benchmark_group("256MiB");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(LEN as u64));

    group.bench_function("raw_aes256gcm_one_buffer", |b| {
        let cipher = Aes256Gcm::new(&[7u8; 32].into());
        let mut buffer = data.clone();
        b.iter(|| {
            black_box(
                cipher
                    .encrypt_in_place_detached(Nonce::from_slice(&[0; 12]), b"", &mut buffer)
                    .unwrap(),
            );
        });
    });

    // The same, allocating its output as the envelope API must (`Aead::encrypt`).
    group.bench_function("raw_aes256gcm_one_buffer_allocating", |b| {
        let cipher = Aes256Gcm::new(&[7u8; 32].into());
        b.iter(|| {
            black_box(
                aes_gcm::aead::Aead::encrypt(&cipher, Nonce::from_slice(&[0; 12]), &data[..])
                    .unwrap(),
            );
        });
    });

    let mut parts = EnvelopeParts::new(Format::Model, 1);
    parts.payload = Payload::Whole {
        stored: data.as_slice().into(),
        uncompressed_size: LEN as u64,
    };
    group.bench_function("encrypt_recipient", |b| {
        b.iter(|| {
            black_box(
                encrypt(
                    &parts,
                    EncryptTo::Recipient(&public),
                    EncryptOptions::default(),
                    &mut rng,
                )
                .unwrap(),
            );
        });
    });

    group.bench_function("encrypt_stream_recipient_to_sink", |b| {
        b.iter(|| {
            envelope_crypto::encrypt_stream(
                &parts,
                LEN as u64,
                LEN as u64,
                &data[..],
                EncryptTo::Recipient(&public),
                EncryptOptions::default(),
                &mut rng,
                std::io::sink(),
            )
            .unwrap();
        });
    });

    let bytes = encrypt(
        &parts,
        EncryptTo::Recipient(&public),
        EncryptOptions::default(),
        &mut rng,
    )
    .unwrap()
    .to_bytes()
    .unwrap();
    let envelope = Envelope::parse(&bytes[..], Format::Model).unwrap();
    group.bench_function("decrypt_recipient", |b| {
        b.iter(|| {
            let decryptor = Decryptor::new(&envelope, DecryptionKey::Recipient(&key)).unwrap();
            black_box(decryptor.payload().unwrap());
        });
    });
    group.bench_function("decrypt_recipient_segmentwise", |b| {
        b.iter(|| {
            let decryptor = Decryptor::new(&envelope, DecryptionKey::Recipient(&key)).unwrap();
            let mut total = 0usize;
            decryptor
                .payload_segments(|segment| {
                    total += segment.len();
                    Ok(())
                })
                .unwrap();
            black_box(total);
        });
    });
    group.finish();
}

fn argon2(c: &mut Criterion) {
    let mut group = c.benchmark_group("argon2id");
    group.sample_size(10);
    let password = envelope_crypto::Password::new("correct horse battery staple");
    let params = Argon2Params::DEFAULT;
    group.bench_function("default_m19456_t2_p1", |b| {
        b.iter(|| black_box(params.derive_key(&password, &[0; 16]).unwrap()));
    });
    group.finish();
}

criterion_group!(benches, throughput, argon2);
criterion_main!(benches);
