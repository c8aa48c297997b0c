//! Running cargo (through `$CARGO`) and other tools, and reading `cargo metadata`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

/// The cargo that runs this xtask (`$CARGO`, set by `cargo run`), else `cargo` on `PATH`.
pub(crate) fn cargo() -> Command {
    let program = std::env::var_os("CARGO").unwrap_or_else(|| OsString::from("cargo"));
    Command::new(program)
}

/// The workspace root: the parent of this crate's directory (rust-analyzer's `project_root`).
/// Read at run time first (`cargo run` and `cargo test` set `CARGO_MANIFEST_DIR` for the process),
/// so a binary that another checkout built into a shared target directory still looks here.
pub(crate) fn project_root() -> PathBuf {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    manifest_dir
        .parent()
        .map_or_else(|| manifest_dir.clone(), Path::to_path_buf)
}

/// The result of a command run to completion with its output captured.
pub(crate) struct Run {
    /// Exit status was success.
    pub(crate) ok: bool,
    /// Captured standard output.
    pub(crate) stdout: String,
    /// Captured standard error.
    pub(crate) stderr: String,
}

/// Runs `command` in `dir`, capturing stdout and stderr.
///
/// # Errors
/// If the program cannot be started.
pub(crate) fn capture(command: &mut Command, dir: &Path) -> Result<Run> {
    let Output {
        status,
        stdout,
        stderr,
    } = command
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("starting {command:?}"))?;
    Ok(Run {
        ok: status.success(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    })
}

/// `cargo metadata --format-version 1 --no-deps`, parsed.
///
/// # Errors
/// If cargo fails or prints something that is not JSON.
pub(crate) fn metadata(dir: &Path) -> Result<Value> {
    let run = capture(
        cargo().args(["metadata", "--format-version", "1", "--no-deps"]),
        dir,
    )?;
    if !run.ok {
        bail!("cargo metadata failed:\n{}", run.stderr);
    }
    serde_json::from_str(&run.stdout).context("parsing cargo metadata output")
}
