//! Criterion benchmarks: in-memory dataset root, split derivation, and the multi-core directory
//! hasher on small-file and large-file trees (generated in a temp dir). The side-by-side against
//! `find | sort | xargs sha256sum` on the full-size trees is a shell command, recorded
//! in BENCHMARKS.md (`## lineage`).
#![allow(missing_docs, reason = "criterion_group! generates an undocumented fn")]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use lineage::fs::{BuildOutcome, HashOptions, SymlinkPolicy, hash_tree, walk};
use lineage::{SplitDef, SplitDefs, dataset_root_hash};

fn in_memory(c: &mut Criterion) {
    let files: Vec<(String, Vec<u8>)> = (0..1000u32)
        .map(|i| {
            (
                format!("d{}/f{i:05}", i % 10),
                vec![u8::try_from(i % 251).unwrap_or(0); 4096],
            )
        })
        .collect();
    let mut g = c.benchmark_group("in_memory");
    g.throughput(Throughput::Bytes(4096 * 1000));
    g.bench_function("dataset_root_hash_1000x4KiB", |b| {
        b.iter(|| dataset_root_hash(files.iter().map(|(p, d)| (p.as_str(), d.as_slice()))));
    });
    g.finish();
    let defs = SplitDefs::new(vec![
        SplitDef {
            name: "train".into(),
            fraction: 0.8,
            seed: Some(42),
        },
        SplitDef {
            name: "test".into(),
            fraction: 0.2,
            seed: Some(42),
        },
    ])
    .unwrap_or_default();
    c.bench_function("seeded_split_assign_100k", |b| {
        b.iter(|| defs.assign(black_box(100_000)))
    });
}

fn tree(c: &mut Criterion) {
    let Ok(dir) = tempfile::tempdir() else { return };
    let small = dir.path().join("small");
    let large = dir.path().join("large");
    for i in 0..5000u32 {
        let p = small.join(format!("{}/{i:05}", i % 50));
        let _ = std::fs::create_dir_all(p.parent().unwrap_or(&small));
        let _ = std::fs::write(
            &p,
            vec![u8::try_from(i % 251).unwrap_or(0); 1024 + (i as usize * 37) % 3072],
        );
    }
    let _ = std::fs::create_dir_all(&large);
    for i in 0..4u8 {
        let _ = std::fs::write(large.join(format!("{i}.bin")), vec![i; 32 << 20]);
    }
    let mut g = c.benchmark_group("directory");
    g.sample_size(10);
    for (name, root) in [("5000_small_files", &small), ("4x32MiB", &large)] {
        g.bench_function(name, |b| {
            b.iter(|| {
                let t = walk(root, SymlinkPolicy::Refuse).ok()?;
                match hash_tree(&t, &HashOptions::default(), &mut |_| {}).ok()? {
                    BuildOutcome::Complete(d) => Some(d.root_hash),
                    BuildOutcome::Stopped { .. } => None,
                }
            });
        });
    }
    g.finish();
}

criterion_group!(benches, in_memory, tree);
criterion_main!(benches);
