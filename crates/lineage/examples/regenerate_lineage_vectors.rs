//! Rewrites the `expect` field of every golden vector in `tests/data` from this crate's results
//! (`cargo xtask regenerate lineage`). A generator, never a test: `cargo test` compares each
//! case with its `expect`. Then confirm the new values with the Python reference
//! (`tests/python/lineage/lineage_ref.py golden crates/lineage/tests/data`) before committing.

#![allow(
    clippy::print_stdout,
    reason = "a maintenance tool reports what it wrote"
)]

#[path = "../tests/vectors/mod.rs"]
mod vectors;

fn main() {
    for path in vectors::golden_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut vector: serde_json::Value = serde_json::from_str(&text).unwrap();
        vector["expect"] = vectors::run_case(&vector["input"]);
        let out = serde_json::to_string_pretty(&vector).unwrap() + "\n";
        std::fs::write(&path, out).unwrap();
        println!("wrote {}", path.display());
    }
}
