//! Signing and verifying a 256 MiB file in memory (SHA-256 over the signed regions, one Ed25519
//! operation). The whole commands, which read the file once: `scripts/bench-sign.sh`.
//! Figures in BENCHMARKS.md.
//!
//! `cargo bench -p envelope-sign --bench sign -- --warm-up-time 1 --measurement-time 10`
#![allow(
    missing_docs,
    reason = "criterion_group! generates undocumented functions"
)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use envelope_core::{Envelope, EnvelopeParts, Format, Payload};
use envelope_sign::{Identity, Policy, TrustedKeys, sign};

const LEN: usize = 256 << 20;

fn bench(c: &mut Criterion) {
    let data: Vec<u8> = (0..LEN)
        .map(|i| i.to_le_bytes()[0] ^ (i >> 9).to_le_bytes()[0])
        .collect();
    let mut parts = EnvelopeParts::new(Format::Model, 1);
    parts.payload = Payload::Whole {
        stored: data.as_slice().into(),
        uncompressed_size: LEN as u64,
    };
    let file = parts.to_bytes().unwrap();
    let identity = Identity::from_seed([3; 32]);
    let key = identity.signing_key();
    let trusted = TrustedKeys::from_keys([identity.signing_public_key()]);
    let mut group = c.benchmark_group("256MiB");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(LEN as u64));
    group.bench_function("sign", |b| b.iter(|| black_box(sign(&file, &key).unwrap())));
    let signed = sign(&file, &key).unwrap();
    let envelope = Envelope::parse(&signed[..], Format::Model).unwrap();
    group.bench_function("verify", |b| {
        b.iter(|| {
            black_box(
                Policy::RequireSignature { trusted: &trusted }
                    .check(&envelope)
                    .unwrap(),
            )
        });
    });
    group.bench_function("parse_and_verify", |b| {
        b.iter(|| {
            let envelope = Envelope::parse(&signed[..], Format::Model).unwrap();
            black_box(
                Policy::RequireSignature { trusted: &trusted }
                    .check(&envelope)
                    .unwrap(),
            )
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
