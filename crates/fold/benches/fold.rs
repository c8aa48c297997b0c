//! Criterion benchmarks of the `fold` crate (figures and commands in BENCHMARKS.md, `## fold`).
//!
//! Files: a 1 GiB container of 64 chunks of 16 MiB and a 100 MiB one (6 x 16 MiB + 4 MiB), stored
//! uncompressed without ECC, under `$FOLD_BENCH_DIR` (default: the system temp dir / fold-bench);
//! generated on first run and reused, so tests/python/fold/bench_pyfolds.py times pyfolds on the
//! very same files.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_main};
use fold::{Compression, Ecc, WriteOptions};
use sha2::{Digest, Sha256};

const MIB: usize = 1 << 20;

fn bench_dir() -> PathBuf {
    let d = std::env::var_os("FOLD_BENCH_DIR")
        .map_or_else(|| std::env::temp_dir().join("fold-bench"), PathBuf::from);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Deterministic incompressible bytes (xorshift).
fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    let mut v = Vec::with_capacity(len);
    while v.len() < len {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        v.extend_from_slice(&s.to_le_bytes());
    }
    v.truncate(len);
    v
}

fn sizes_1gib() -> Vec<usize> {
    vec![16 * MIB; 64]
}

fn sizes_100mib() -> Vec<usize> {
    let mut v = vec![16 * MIB; 6];
    v.push(4 * MIB);
    v
}

fn write_container(path: &std::path::Path, sizes: &[usize], chunks: &[Vec<u8>]) {
    let opts = WriteOptions::new(Compression::None, Ecc::None);
    let mut f = fold::fs::AtomicFoldFile::create(path, opts).unwrap();
    for (i, &n) in sizes.iter().enumerate() {
        f.writer()
            .add_chunk(
                &format!("chunk{i:02}"),
                "TSAV",
                &chunks[i % chunks.len()][..n],
            )
            .unwrap();
    }
    f.commit(Vec::new(), 1_700_000_000.0).unwrap();
}

fn ensure(name: &str, sizes: &[usize]) -> PathBuf {
    let path = bench_dir().join(name);
    if !path.exists() {
        let chunks: Vec<Vec<u8>> = (0..sizes.len())
            .map(|i| payload(sizes[i], i as u64 + 1))
            .collect();
        write_container(&path, sizes, &chunks);
    }
    path
}

fn chunk_reads(c: &mut Criterion) {
    let small = ensure("fold_100MiB.fold", &sizes_100mib());
    let big = ensure("fold_1GiB.fold", &sizes_1gib());
    let mut g = c.benchmark_group("chunk_16MiB");
    g.throughput(Throughput::Bytes(16 * MIB as u64));
    let data = payload(16 * MIB, 99);
    g.bench_function("sha256_floor", |b| {
        b.iter(|| Sha256::digest(black_box(&data)))
    });
    g.bench_function("crc32c_only", |b| {
        b.iter(|| crc32c::crc32c(black_box(&data)))
    });
    g.bench_function("pread_only_1GiB", |b| {
        let src = fold::FileSource::open(&big).unwrap();
        b.iter(|| {
            let mut v = vec![0_u8; 16 * MIB];
            fold::Source::read_exact_at(&src, 40 * (16 * MIB as u64 + 32) + 60, &mut v).unwrap();
            v
        });
    });
    // The zero-copy read of a mapped file (open: map, header, index; verify the chunk in place,
    // CRC32C + SHA-256 over the page cache; borrow it), and the owned read (a fresh 16 MiB vector
    // filled from the mapping while SHA-256 runs on a second thread).
    for (label, path, name, owned) in [
        ("read_verify_mapped_from_100MiB", &small, "chunk03", false),
        ("read_verify_mapped_from_1GiB", &big, "chunk40", false),
        ("read_verify_from_100MiB", &small, "chunk03", true),
        ("read_verify_from_1GiB", &big, "chunk40", true),
    ] {
        let read = || fold::fs::open(path).unwrap().read_chunk(name).unwrap();
        let borrow = || {
            let r = fold::fs::open(path).unwrap();
            black_box(r.read_chunk_cow(name).unwrap().len())
        };
        // An owned buffer is dropped outside the timing (munmap is the caller's cost, and
        // back-to-back drop / allocate cycles make glibc hand out non-lazy heap memory).
        g.bench_function(label, |b| {
            if owned {
                b.iter_with_large_drop(read);
            } else {
                b.iter(borrow);
            }
        });
    }
    g.finish();
}

fn whole_file(c: &mut Criterion) {
    let big = ensure("fold_1GiB.fold", &sizes_1gib());
    let mut g = c.benchmark_group("file_1GiB_64_chunks");
    g.sample_size(10).measurement_time(Duration::from_secs(40));
    g.throughput(Throughput::Bytes(1 << 30));
    g.bench_function("verify_all_2_threads", |b| {
        b.iter(|| {
            let r = fold::fs::open(&big).unwrap();
            assert!(r.verify_all(&|_| {}).is_ok());
        });
    });
    let chunks: Vec<Vec<u8>> = (0..4).map(|i| payload(16 * MIB, i + 1)).collect();
    let out = bench_dir().join("fold_write_bench.fold");
    g.bench_function("write_fsync", |b| {
        b.iter(|| write_container(&out, &sizes_1gib(), &chunks))
    });
    g.finish();
    let _ = std::fs::remove_file(out);
}

fn reed_solomon(c: &mut Criterion) {
    let mut g = c.benchmark_group("reed_solomon_rs32");
    let data = payload(MIB, 7);
    let ecc = Ecc::Rs(32);
    g.throughput(Throughput::Bytes(MIB as u64));
    g.bench_function("encode_1MiB", |b| b.iter(|| ecc.encode(black_box(&data))));
    let parity = ecc.encode(&data);
    let mut damaged = data.clone();
    // 16 errors (the capacity) in every 223-byte piece.
    for piece in damaged.chunks_mut(223) {
        for k in 0..16.min(piece.len()) {
            piece[k * piece.len() / 16] ^= 0x5A;
        }
    }
    for (label, input) in [
        ("decode_clean_1MiB", &data),
        ("decode_16_errors_per_codeword_1MiB", &damaged),
    ] {
        g.bench_with_input(BenchmarkId::new(label, ""), input, |b, input| {
            b.iter(|| {
                let mut d = input.clone();
                let mut p = parity.clone();
                ecc.correct(&mut d, &mut p).unwrap();
                d
            });
        });
    }
    g.finish();
}

mod group {
    #![allow(
        missing_docs,
        reason = "criterion_group! generates an undocumented pub fn"
    )]
    use super::{chunk_reads, reed_solomon, whole_file};
    criterion::criterion_group!(benches, chunk_reads, whole_file, reed_solomon);
}
use group::benches;
criterion_main!(benches);
