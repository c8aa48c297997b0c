//! Rewrites envelope-sign's checked-in known-answer and failing vectors (`tests/data`), through
//! `cargo xtask regenerate envelope-sign`. A generator, never a test: `cargo test` compares the
//! rebuilt bytes with these files. Review the diff before committing.

#![allow(
    clippy::print_stdout,
    reason = "a maintenance tool reports what it wrote"
)]

#[path = "../tests/vectors/mod.rs"]
#[allow(dead_code, reason = "shared with the tests, which use more of it")]
mod vectors;

fn main() {
    for (name, bytes) in vectors::kat_vectors()
        .into_iter()
        .chain(vectors::fail_vectors())
    {
        std::fs::write(vectors::data(name), bytes).unwrap();
        println!("wrote tests/data/{name}");
    }
}
