//! Vectors as data (house style: failing cases are files named `fail_<what>.<Signal>.<ext>` under
//! a crate's `tests/data`, checked by one table-driven helper), the fuzz corpora replayed on
//! stable, and the one writer of the `cargo xtask regenerate` examples.

use std::path::{Path, PathBuf};

/// A failing known-answer file: `fail_<what>.<Signal>.<ext>`, to be refused with `Signal`.
#[derive(Debug, Clone)]
pub struct FailVector {
    /// The file name.
    pub name: String,
    /// Where it is.
    pub path: PathBuf,
    /// The Andon signal its name says it is refused with (`"ChecksumMismatch"`).
    pub signal: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// Every `fail_*` file directly in `dir`, by name.
///
/// # Panics
/// If `dir` cannot be read, or a `fail_` name does not say its signal.
#[must_use]
pub fn fail_vectors(dir: &Path) -> Vec<FailVector> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut vectors: Vec<FailVector> = entries
        .map(|entry| entry.expect("a directory entry").path())
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?.to_owned();
            let signal = name.strip_prefix("fail_")?.split('.').nth(1);
            let signal = signal
                .unwrap_or_else(|| panic!("{name}: not fail_<what>.<Signal>.<ext>"))
                .to_owned();
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
            Some(FailVector {
                name,
                path,
                signal,
                bytes,
            })
        })
        .collect();
    vectors.sort_by(|a, b| a.name.cmp(&b.name));
    vectors
}

/// Checks that `dir` holds `count` `fail_*` files and that `refuse` refuses each with the signal
/// its name gives.
///
/// # Panics
/// On another count, or on the first vector refused with another signal (naming the file and the
/// error).
pub fn check_fail_vectors(
    dir: &Path,
    count: usize,
    mut refuse: impl FnMut(&FailVector) -> envelope_core::Error,
) {
    let vectors = fail_vectors(dir);
    assert_eq!(vectors.len(), count, "fail_* files in {}", dir.display());
    for vector in &vectors {
        let error = refuse(vector);
        assert_eq!(
            error.signal().name(),
            vector.signal,
            "{}: {error}",
            vector.name
        );
    }
}

/// Hands `check` every input of the fuzz corpus `fuzz/corpus/<target>` (the inputs the fuzzer
/// kept, replayed on stable by `cargo test`).
///
/// # Panics
/// If the corpus is missing or empty (or `check` panics: the failure the replay looks for).
pub fn replay_corpus(target: &str, mut check: impl FnMut(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut count = 0;
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        check(&std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())));
        count += 1;
    }
    assert!(count > 0, "empty corpus at {}", dir.display());
}

/// Writes each `(name, bytes)` of `files` to `dir/name` and says so: the body of every
/// `examples/regenerate_*_vectors.rs` (`cargo xtask regenerate`), whose own part is the table.
///
/// # Panics
/// If a file cannot be written (a maintenance tool stops at the first failure).
#[allow(
    clippy::print_stdout,
    reason = "the regenerators report what they wrote"
)]
pub fn write_vectors<N: AsRef<Path>, B: AsRef<[u8]>>(
    dir: &Path,
    files: impl IntoIterator<Item = (N, B)>,
) {
    for (name, bytes) in files {
        let path = dir.join(name.as_ref());
        std::fs::write(&path, bytes.as_ref()).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        println!("wrote {}", path.display());
    }
}

/// Checks that each `(name, bytes)` of `files` is byte for byte the checked-in `dir/name`: the
/// known-answer test that pins what [`write_vectors`] wrote.
///
/// # Panics
/// On the first file missing or different (naming it).
pub fn check_vectors<N: AsRef<Path>, B: AsRef<[u8]>>(
    dir: &Path,
    files: impl IntoIterator<Item = (N, B)>,
) {
    for (name, bytes) in files {
        let path = dir.join(name.as_ref());
        let stored = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        // Not assert_eq!: the bytes are files of kilobytes, the name is what helps.
        assert!(
            stored == bytes.as_ref(),
            "{}: rebuilt bytes differ from the checked-in file (`cargo xtask regenerate`)",
            path.display()
        );
    }
}
