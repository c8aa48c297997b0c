//! Rewrites apr's checked-in known-answer vectors (`cargo xtask regenerate apr`): the golden model
//! file, and the values quantized by the Python `gguf` package (`tests/data/kat`). A generator,
//! never a test: `cargo test` only compares against these files. Review the diff before
//! committing; the vectors change only when the format does.
//!
//! Usage: `regenerate_apr_vectors PYTHON` (an interpreter with `gguf` installed, for example the one
//! `.ci/setup-python` prints).

#[path = "../tests/vectors/mod.rs"]
#[allow(dead_code, reason = "shared with the tests, which use more of it")]
mod vectors;

use std::path::Path;
use std::process::Command;

use vectors::{data_dir, golden_bytes, golden_stump_bytes, test_values, to_bytes};

fn main() {
    let python = std::env::args_os()
        .nth(1)
        .expect("usage: regenerate_apr_vectors PYTHON (with the gguf package)");
    let values = to_bytes(&test_values(0x5eed, 48));
    test_support::write_vectors(
        &data_dir(),
        [
            ("golden_q4_0.apr", golden_bytes()),
            ("golden_stump.apr", golden_stump_bytes()),
            ("kat/values.f32", values),
        ],
    );
    let dir = data_dir().join("kat");
    let oracle = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/python/apr/oracle.py");
    let status = Command::new(python)
        .arg(oracle)
        .arg("quantize")
        .arg(dir.join("values.f32"))
        .arg(&dir)
        .status()
        .unwrap();
    assert!(status.success(), "oracle.py quantize failed");
}
