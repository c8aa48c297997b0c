//! Interleaved timings, so that every operation sees the same machine load (the criterion benches
//! run one operation after another and a busy machine skews their ratios):
//!
//! `cargo run --release -p fold --example verify_timing DIR` where DIR holds the files
//! `cargo bench -p fold --bench fold` creates (fold_100MiB.fold, fold_1GiB.fold).
//!
//! Prints medians over rounds of: SHA-256 of a 16 MiB chunk's bytes in memory (the floor), open +
//! read + verify of that chunk from each file, whole-file verification on one thread and with
//! `verify_all` (two threads).
#![allow(clippy::print_stdout, reason = "an example that reports timings")]

use std::path::Path;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

fn main() {
    let dir = std::env::args().nth(1).expect("usage: verify_timing DIR");
    let small = Path::new(&dir).join("fold_100MiB.fold");
    let big = Path::new(&dir).join("fold_1GiB.fold");
    let bytes = fold::fs::open(&big).unwrap().read_chunk("chunk40").unwrap();
    let (mut floor, mut r100, mut r1g) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..31 {
        floor.push(time(|| {
            std::hint::black_box(Sha256::digest(&bytes));
        }));
        r100.push(time(|| {
            let r = fold::fs::open(&small).unwrap();
            std::hint::black_box(r.read_chunk("chunk03").unwrap());
        }));
        r1g.push(time(|| {
            let r = fold::fs::open(&big).unwrap();
            std::hint::black_box(r.read_chunk("chunk40").unwrap());
        }));
    }
    let (f, a, b) = (median(floor), median(r100), median(r1g));
    let ratio = |x: Duration| x.as_secs_f64() / f.as_secs_f64();
    println!(
        "16 MiB chunk: sha256 floor {f:?}, read+verify from 100 MiB {a:?} ({:.2}x), from 1 GiB {b:?} ({:.2}x)",
        ratio(a),
        ratio(b)
    );
    let (mut one, mut two) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let r = fold::fs::open(&big).unwrap();
        one.push(time(|| {
            for c in &r.index().chunks {
                r.verify_chunk(&c.name).unwrap();
            }
        }));
        two.push(time(|| assert!(r.verify_all(&|_| {}).is_ok())));
    }
    println!(
        "1 GiB verify: one thread {:?}, verify_all two threads {:?}",
        median(one),
        median(two)
    );
}
