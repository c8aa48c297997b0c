//! Envelope cost against plain file I/O, and compression throughput.
//!
//! `cargo bench -p envelope-core --bench envelope`
//!
//! - `io_256MiB/*`: saving a 256 MiB uncompressed payload through the envelope (header, CRC32,
//!   temporary file, fsync, rename, directory fsync) against `File::create` + `write_all` +
//!   `sync_all` of the same bytes; loading it (read + CRC32 + section walk) against `std::fs::read`.
//!   Files live in the system temp directory; loads read from the page cache. `crc32_only` is the
//!   CPU floor of the envelope's own work.
//! - `compression_64MiB/*`: zstd level 3 and LZ4 on 64 MiB of float-like data, both directions.

#![allow(
    missing_docs,
    reason = "criterion_group! generates undocumented functions"
)]
#![allow(
    clippy::print_stderr,
    reason = "the benchmark reports the compression ratio it measured"
)]

use std::borrow::Cow;
use std::hint::black_box;
use std::io::Write;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use envelope_core::compression::{compress, decompress};
use envelope_core::{Compression, EnvelopeParts, Format, Payload, Section, fs};

const IO_LEN: usize = 256 << 20;
const COMPRESSION_LEN: usize = 64 << 20;

/// Bytes that look like model weights: f32 values of a smooth signal with a little noise, which
/// compress about as well as real weights do (neither random nor trivially repetitive).
/// One of the two writes the paired save benchmark alternates.
type TimedWrite<'a> = dyn Fn() + 'a;

fn weights_like(len: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut out = Vec::with_capacity(len);
    let mut i = 0u32;
    while out.len() < len {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let noise = f32::from(u8::try_from(state >> 56).unwrap_or(0)) / 4096.0;
        let value = (f32::from(u16::try_from(i % 4096).unwrap_or(0)) / 650.0).sin() * 0.5 + noise;
        out.extend_from_slice(&value.to_le_bytes());
        i = i.wrapping_add(1);
    }
    out.truncate(len);
    out
}

fn io(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let payload = weights_like(IO_LEN);
    let mut parts = EnvelopeParts::new(Format::Model, 0x0020);
    parts.metadata = Cow::Borrowed(b"\x81\xa4name\xa5bench");
    parts.payload = Payload::Whole {
        stored: Cow::Borrowed(&payload),
        uncompressed_size: IO_LEN as u64,
    };
    let envelope_path = dir.path().join("model.apr");
    let plain_path = dir.path().join("model.bin");

    // Both files exist before any benchmark runs, so each can be run alone with a filter.
    save_envelope_once(&envelope_path, &parts);
    std::fs::write(&plain_path, &payload).expect("write");

    let mut group = c.benchmark_group("io_256MiB");
    group.throughput(Throughput::Bytes(IO_LEN as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(30));
    // fsync time on this VM swings by 5x with writeback and discard state. To compare like with
    // like, each timed write is preceded by an untimed write of the other kind, so both see the
    // same state of the disk (a paired design).
    let save_envelope = || fs::save(&envelope_path, &parts).expect("save");
    let plain_write = || {
        let mut file = std::fs::File::create(&plain_path).expect("create");
        file.write_all(&payload).expect("write");
        file.sync_all().expect("fsync");
    };
    // (name, the timed write, the untimed write before it)
    let paired: [(&str, &TimedWrite<'_>, &TimedWrite<'_>); 2] = [
        ("save_envelope", &save_envelope, &plain_write),
        ("plain_write_fsync", &plain_write, &save_envelope),
    ];
    for (name, timed, untimed) in paired {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    untimed();
                    let start = Instant::now();
                    timed();
                    total += start.elapsed();
                }
                total
            });
        });
    }
    group.bench_function("load_envelope", |b| {
        b.iter(|| {
            let envelope = fs::load(&envelope_path, Format::Model).expect("load");
            black_box(envelope.decode_payload().expect("payload").len())
        });
    });
    group.bench_function("plain_read", |b| {
        b.iter(|| black_box(std::fs::read(&plain_path).expect("read").len()));
    });
    group.bench_function("crc32_only", |b| {
        b.iter(|| black_box(crc32fast::hash(&payload)))
    });
    group.finish();
}

fn save_envelope_once(path: &std::path::Path, parts: &EnvelopeParts<'_>) {
    fs::save(path, parts).expect("save");
}

fn compression(c: &mut Criterion) {
    let data = weights_like(COMPRESSION_LEN);
    let mut group = c.benchmark_group("compression_64MiB");
    group.throughput(Throughput::Bytes(COMPRESSION_LEN as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(15));
    for compression_id in [Compression::ZstdL3, Compression::Lz4] {
        let packed = compress(compression_id, &data)
            .expect("compress")
            .into_owned();
        eprintln!(
            "{compression_id}: ratio {:.2} ({} -> {} bytes)",
            data.len() as f64 / packed.len() as f64,
            data.len(),
            packed.len()
        );
        group.bench_function(format!("{compression_id}/compress"), |b| {
            b.iter(|| black_box(compress(compression_id, &data).expect("compress").len()));
        });
        group.bench_function(format!("{compression_id}/decompress"), |b| {
            b.iter(|| {
                let out = decompress(
                    compression_id,
                    &packed,
                    COMPRESSION_LEN as u64,
                    Section::Payload,
                );
                black_box(out.expect("decompress").len())
            });
        });
    }
    group.finish();
}

criterion_group!(benches, io, compression);
criterion_main!(benches);
