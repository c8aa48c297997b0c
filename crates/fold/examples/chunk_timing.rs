//! Reading and verifying one 16 MiB chunk of a mapped container, timed interleaved with SHA-256
//! alone on 16 MiB (the floor), so both see the same machine load: the median ratio is the
//! figure in BENCHMARKS.md.
//!
//! Run: `cargo run --release -p fold --example chunk_timing $FOLD_BENCH_DIR/fold_1GiB.fold`
//! (the file the `fold` bench creates: 64 chunks of 16 MiB).

#![allow(clippy::print_stdout, reason = "an example that reports timings")]

use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: chunk_timing FOLD_1GIB_FILE");
    let floor_data: Vec<u8> = (0..16usize << 20)
        .map(|i| (i * 31 % 251).to_le_bytes()[0])
        .collect();
    let mut rows: Vec<[Duration; 3]> = Vec::new();
    for _ in 0..21 {
        let t = Instant::now();
        std::hint::black_box(Sha256::digest(&floor_data));
        let floor = t.elapsed();
        // Open (map, header, index), verify chunk40 in place (CRC32C + SHA-256), borrow it.
        let t = Instant::now();
        let reader = fold::fs::open(&path).expect("a fold file");
        std::hint::black_box(reader.read_chunk_cow("chunk40").expect("chunk40").len());
        let read = t.elapsed();
        // Closing the reader unmaps the file.
        let t = Instant::now();
        drop(reader);
        let close = t.elapsed();
        rows.push([floor, read, read + close]);
    }
    for (k, name) in [
        "SHA-256 floor",
        "open + read + verify",
        "... + close (munmap)",
    ]
    .iter()
    .enumerate()
    {
        let ms = median(rows.iter().map(|r| r[k].as_secs_f64() * 1e3).collect());
        let ratio = median(
            rows.iter()
                .map(|r| r[k].as_secs_f64() / r[0].as_secs_f64())
                .collect(),
        );
        println!("{name:>22}: median {ms:.2} ms, median ratio to the floor {ratio:.3}");
    }
}
