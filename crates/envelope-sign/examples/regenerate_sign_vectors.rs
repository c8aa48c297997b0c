//! Rewrites envelope-sign's checked-in known-answer and failing vectors (`tests/data`), through
//! `cargo xtask regenerate envelope-sign`. A generator, never a test: `cargo test` compares the
//! rebuilt bytes with these files. Review the diff before committing.

#[path = "../tests/vectors/mod.rs"]
#[allow(dead_code, reason = "shared with the tests, which use more of it")]
mod vectors;

fn main() {
    test_support::write_vectors(&vectors::data(""), vectors::checked_in());
}
