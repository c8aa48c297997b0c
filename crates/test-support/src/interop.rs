//! The interop tests' one way to run the independent Python implementations
//! (`tests/python/`): under the interpreter `$INTEROP_PYTHON` names (the tests are `#[ignore]`d
//! without it; `.ci/run` sets it).

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

/// Runs the workspace's `tests/python/<script>` with `args` and returns what it did.
///
/// # Panics
/// If `$INTEROP_PYTHON` is not set or the interpreter cannot be started.
#[must_use]
pub fn python(script: &str, args: &[&OsStr]) -> Output {
    let python = std::env::var_os("INTEROP_PYTHON").expect("INTEROP_PYTHON");
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/python")
        .join(script);
    Command::new(python)
        .arg(&script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", script.display()))
}

/// As [`python`], for a run that must succeed: its stdout.
///
/// # Panics
/// As [`python`], and with the script's stderr if it failed.
#[track_caller]
#[must_use]
pub fn python_ok(script: &str, args: &[&OsStr]) -> Vec<u8> {
    let output = python(script, args);
    assert!(
        output.status.success(),
        "{script} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}
