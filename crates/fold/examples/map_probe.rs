//! Probe: where the time of a mapped single-chunk read goes (interleaved with the SHA-256 floor).
#![allow(clippy::print_stdout, missing_docs)]
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let off = 40 * (16 * (1 << 20) + 32) + 60;
    let len = 16 << 20;
    let data: Vec<u8> = (0..len)
        .map(|i: usize| (i * 31 % 251).to_le_bytes()[0])
        .collect();
    let mut rows: Vec<[Duration; 5]> = Vec::new();
    for _ in 0..21 {
        let t = Instant::now();
        std::hint::black_box(Sha256::digest(&data));
        let floor = t.elapsed();
        // A: fault on touch, sequential crc + sha.
        let t = Instant::now();
        let m = mapped_file::MappedFile::open(&path).unwrap();
        let b = &m[off..off + len];
        std::hint::black_box((crc32c::crc32c(b), Sha256::digest(b)));
        drop(m);
        let a = t.elapsed();
        // P: populate, then sequential.
        let t = Instant::now();
        let m = mapped_file::MappedFile::open(&path).unwrap();
        m.populate(off..off + len);
        let b = &m[off..off + len];
        std::hint::black_box((crc32c::crc32c(b), Sha256::digest(b)));
        drop(m);
        let p = t.elapsed();
        // T: crc thread runs ahead (taking the faults), sha behind.
        let t = Instant::now();
        let m = mapped_file::MappedFile::open(&path).unwrap();
        let b = &m[off..off + len];
        std::thread::scope(|s| {
            let c = s.spawn(|| crc32c::crc32c(b));
            std::hint::black_box(Sha256::digest(b));
            std::hint::black_box(c.join().unwrap());
        });
        drop(m);
        let th = t.elapsed();
        let t = Instant::now();
        let r = fold::fs::open(&path).unwrap();
        std::hint::black_box(r.read_chunk_cow("chunk40").unwrap().len());
        let lib = t.elapsed();
        rows.push([floor, a, p, th, lib]);
    }
    for (k, name) in [
        "floor",
        "fault+seq",
        "populate+seq",
        "crc-thread-ahead",
        "library",
    ]
    .iter()
    .enumerate()
    {
        let mut v: Vec<f64> = rows.iter().map(|r| r[k].as_secs_f64() * 1e3).collect();
        let mut ratio: Vec<f64> = rows
            .iter()
            .map(|r| r[k].as_secs_f64() / r[0].as_secs_f64())
            .collect();
        v.sort_by(f64::total_cmp);
        ratio.sort_by(f64::total_cmp);
        println!(
            "{name:>18}: median {:.2} ms, median ratio to floor {:.3}",
            v[v.len() / 2],
            ratio[ratio.len() / 2]
        );
    }
}
