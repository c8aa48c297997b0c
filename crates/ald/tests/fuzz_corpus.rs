//! Replays the `ald_reader` fuzz corpus (fuzz/corpus/ald_reader) on stable. The seeds are written
//! by `cargo xtask fuzz-seeds ald_reader` (crates/ald/examples/write_fuzz_seeds.rs), never by a
//! test: the replay below reads that directory.

#![allow(
    clippy::cast_possible_truncation,
    reason = "the shared fuzz check compares row counts of small tables"
)]

use std::path::{Path, PathBuf};

mod fuzz_check;

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
