//! Replays the fuzz corpus (fuzz/corpus/fold_reader) on stable: no input may panic.

use super::fuzz_check::fold_reader;

#[test]
fn fuzz_corpus_replays_without_panic() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/fold_reader");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        fold_reader(&std::fs::read(&path).unwrap());
        n += 1;
    }
    assert!(n > 0, "empty corpus at {}", dir.display());
}
