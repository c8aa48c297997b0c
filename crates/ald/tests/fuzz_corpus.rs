//! Replays the `ald_reader` fuzz corpus (fuzz/corpus/ald_reader) and the interchange readers'
//! corpora on stable. The seeds are written by `cargo xtask fuzz-seeds TARGET`, never by a test:
//! the replays below read those directories.

#![allow(
    clippy::cast_possible_truncation,
    reason = "the shared fuzz check compares row counts of small tables"
)]

use std::path::{Path, PathBuf};

use crate::{fuzz_check, fuzz_check_interchange};

/// A fuzz target's check.
type FuzzCheck = fn(&[u8]);

/// Replays the corpora of the interchange fuzz targets (`fuzz/corpus/<target>`): no input may
/// panic a reader, and what reads is consistent (`fuzz_check_interchange`).
#[test]
fn interchange_fuzz_corpora_replay_without_panic() {
    let targets: [(&str, FuzzCheck); 5] = [
        ("arrow_file", fuzz_check_interchange::arrow_file),
        ("arrow_stream", fuzz_check_interchange::arrow_stream),
        ("parquet_reader", fuzz_check_interchange::parquet_reader),
        ("csv_reader", fuzz_check_interchange::csv_reader),
        ("jsonl_reader", fuzz_check_interchange::jsonl_reader),
    ];
    for (target, check) in targets {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus")
            .join(target);
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            check(&std::fs::read(entry.unwrap().path()).unwrap());
            seen += 1;
        }
        assert!(seen > 0, "empty corpus at {}", dir.display());
    }
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/ald_reader")
}

/// No input of the corpus may panic a reader.
#[test]
fn fuzz_corpus_replays_without_panic() {
    let mut seen = 0;
    for entry in std::fs::read_dir(corpus()).unwrap() {
        fuzz_check::ald_reader(&std::fs::read(entry.unwrap().path()).unwrap());
        seen += 1;
    }
    assert!(seen > 0, "empty corpus at {}", corpus().display());
}
