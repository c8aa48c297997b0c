//! Rewrites envelope-core's byte-stable known-answer files (`tests/data`: the first uncompressed
//! samples), through `cargo xtask regenerate envelope-core`. A generator, never a test: `cargo
//! test` compares the writer's output with these files. Review the diff before committing. (The
//! `fail_*` vectors come from `tests/data/make_failing_vectors.py`.)

#[path = "../tests/vectors/mod.rs"]
#[allow(dead_code, reason = "shared with the tests, which use more of it")]
mod vectors;

fn main() {
    test_support::write_vectors(&vectors::data_dir(), vectors::checked_in());
}
