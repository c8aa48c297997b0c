//! Replays the `ald_reader` fuzz corpus (fuzz/corpus/ald_reader) and the interchange readers'
//! corpora on stable. The seeds are written by `cargo xtask fuzz-seeds TARGET`, never by a test:
//! the replays below read those directories.

#![allow(
    clippy::cast_possible_truncation,
    reason = "the shared fuzz check compares row counts of small tables"
)]

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
        test_support::replay_corpus(target, check);
    }
}

/// No input of the corpus may panic a reader.
#[test]
fn fuzz_corpus_replays_without_panic() {
    test_support::replay_corpus("ald_reader", fuzz_check::ald_reader);
}
