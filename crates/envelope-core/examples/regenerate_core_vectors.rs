//! Rewrites envelope-core's byte-stable known-answer files (`tests/data`: the first uncompressed
//! samples), through `cargo xtask regenerate envelope-core`. A generator, never a test: `cargo
//! test` compares the writer's output with these files. Review the diff before committing. (The
//! `fail_*` vectors come from `tests/data/make_failing_vectors.py`.)

#![allow(
    clippy::print_stdout,
    reason = "a maintenance tool reports what it wrote"
)]

#[path = "../tests/vectors/mod.rs"]
#[allow(dead_code, reason = "shared with the tests, which use more of it")]
mod vectors;

fn main() {
    for sample in vectors::samples()
        .into_iter()
        .take(vectors::KNOWN_ANSWER_SAMPLES)
    {
        std::fs::write(vectors::data_dir().join(sample.name), &sample.bytes).unwrap();
        println!("wrote tests/data/{}", sample.name);
    }
}
