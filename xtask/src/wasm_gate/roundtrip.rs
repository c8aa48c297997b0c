//! The Node.js round trip of `wasm-gate`: native → wasm32 and wasm32 → native.
//!
//! Steps: build the `wasm-roundtrip` cdylib for wasm32 (its path is read from cargo's JSON
//! messages, not guessed from the target directory); `native write DIR`; `node run.mjs MODULE DIR`
//! (verifies the native files in wasm, then writes `wasm-*` files); `native check DIR`. The
//! directory is deleted when everything passed and kept (and named in the report) otherwise.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result};

use super::{Cell, ERROR_LINES, Row, WASM_TARGET, deps, error_lines};
use crate::cargo::{self, Run};

/// The harness package.
pub(crate) const HARNESS: &str = "wasm-roundtrip";

/// The Node.js script, relative to the workspace root.
const SCRIPT: &str = "tests/wasm-roundtrip/run.mjs";

/// Runs the round trip; one row per step.
///
/// # Errors
/// Only if a temporary directory cannot be made; every other failure is a FAIL row.
pub(super) fn run(root: &Path) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let row = |what: &str| Row {
        krate: HARNESS.to_owned(),
        what: what.to_owned(),
        check: Cell::Fail,
        deps: Cell::Skipped,
        errors: Vec::new(),
    };

    // 1. The wasm module, and the dependency policy for the harness itself.
    let mut build = row("wasm32 cdylib (release)");
    let module = build_module(root, &mut build)?;
    let tree = cargo::capture(cargo::cargo().args(deps::tree_args(HARNESS)), root)?;
    let violations = deps::violations(&tree.stdout);
    if tree.ok && violations.is_empty() {
        build.deps = Cell::Ok(String::new());
    } else {
        build.deps = Cell::Fail;
        build.errors.push("dependency policy:".to_owned());
        build.errors.extend(if tree.ok {
            violations
        } else {
            error_lines(&tree)
        });
    }
    rows.push(build);
    let Some(module) = module else {
        return Ok(rows);
    };

    let dir = scratch_dir()?;
    let dir_arg = dir.as_os_str().to_owned();
    let keep_note = format!("files kept in {}", dir.display());

    // 2. native -> wasm: the native writer, then run.mjs (which also writes the wasm files).
    let mut to_wasm = row("node: native→wasm");
    let write = native(root, "write", &dir_arg)?;
    let script = root.join(SCRIPT);
    let node_run = if write.ok {
        eprintln!("wasm-gate: node {SCRIPT} {}", module.display());
        Some(cargo::capture(
            Command::new(node_program())
                .arg(&script)
                .arg(&module)
                .arg(&dir),
            root,
        ))
    } else {
        to_wasm.errors.push("native write:".to_owned());
        to_wasm.errors.extend(tail(&write));
        None
    };
    match &node_run {
        Some(Ok(node)) if node.ok => {
            let files = count(&dir, "native-");
            to_wasm.check = Cell::Ok(format!("{files} files"));
        }
        Some(Ok(node)) => {
            to_wasm.errors.push(format!("node {SCRIPT}:"));
            to_wasm.errors.extend(
                node.stdout
                    .lines()
                    .chain(node.stderr.lines())
                    .filter(|line| !line.starts_with("ok "))
                    .map(str::to_owned),
            );
        }
        Some(Err(error)) => to_wasm.errors.push(format!(
            "cannot run node ({error:#}); install Node.js 20 or set NODE to its path"
        )),
        None => {}
    }

    // 3. wasm -> native.
    let mut to_native = row("node: wasm→native");
    if to_wasm.check == Cell::Fail {
        to_native.check = Cell::Skipped;
    } else {
        let check = native(root, "check", &dir_arg)?;
        if check.ok {
            to_native.check = Cell::Ok(format!("{} files", count(&dir, "wasm-")));
        } else {
            to_native.errors.push("native check:".to_owned());
            to_native.errors.extend(
                check
                    .stdout
                    .lines()
                    .filter(|line| !line.starts_with("ok "))
                    .map(str::to_owned),
            );
            to_native.errors.extend(tail(&check));
        }
    }

    if to_wasm.check == Cell::Fail {
        to_wasm.errors.push(keep_note);
    } else if to_native.check == Cell::Fail {
        to_native.errors.push(keep_note);
    } else {
        // Best effort: a leftover directory in the temp dir is not a gate failure.
        let _ = std::fs::remove_dir_all(&dir);
    }
    rows.push(to_wasm);
    rows.push(to_native);
    Ok(rows)
}

/// Builds the cdylib for wasm32 and returns the `.wasm` path cargo reports for it.
fn build_module(root: &Path, row: &mut Row) -> Result<Option<PathBuf>> {
    eprintln!("wasm-gate: cargo build -p {HARNESS} --lib --release --target {WASM_TARGET}");
    let build = cargo::capture(
        cargo::cargo()
            .args(["build", "-p", HARNESS, "--lib", "--release"])
            .args(["--target", WASM_TARGET])
            .args(["--message-format", "json-render-diagnostics"]),
        root,
    )?;
    if !build.ok {
        row.errors.push("cargo build:".to_owned());
        row.errors.extend(error_lines(&build));
        return Ok(None);
    }
    let module = build
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact")
        .filter(|message| {
            message["target"]["kind"]
                .as_array()
                .is_some_and(|kinds| kinds.iter().any(|kind| kind == "cdylib"))
        })
        .flat_map(|message| message["filenames"].as_array().cloned().unwrap_or_default())
        .filter_map(|name| name.as_str().map(PathBuf::from))
        .find(|path| path.extension().is_some_and(|ext| ext == "wasm"));
    match module {
        Some(path) => {
            row.check = Cell::Ok(String::new());
            Ok(Some(path))
        }
        None => {
            row.errors
                .push("cargo reported no .wasm artifact for the cdylib".to_owned());
            Ok(None)
        }
    }
}

/// `cargo run -p wasm-roundtrip --bin native --release -- <command> DIR`.
fn native(root: &Path, command: &str, dir: &OsString) -> Result<Run> {
    eprintln!("wasm-gate: cargo run -p {HARNESS} --bin native --release -- {command} DIR");
    cargo::capture(
        cargo::cargo()
            .args(["run", "-p", HARNESS, "--bin", "native", "--release", "--"])
            .arg(command)
            .arg(dir),
        root,
    )
}

/// `$NODE`, else `node` on `PATH`.
fn node_program() -> OsString {
    std::env::var_os("NODE").unwrap_or_else(|| OsString::from("node"))
}

/// A fresh directory under the system temp dir.
fn scratch_dir() -> Result<PathBuf> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    let dir = std::env::temp_dir().join(format!("wasm-gate-{}-{nanos:09}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// Files in `dir` whose names start with `prefix`.
fn count(dir: &Path, prefix: &str) -> usize {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with(prefix))
        .count()
}

/// The last lines of a run's stderr (the harness binaries put their verdict there), without
/// cargo's progress lines.
fn tail(run: &Run) -> Vec<String> {
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| {
            let line = line.trim_start();
            !["Compiling ", "Finished ", "Running ", "Blocking "]
                .iter()
                .any(|status| line.starts_with(status))
        })
        .collect();
    lines[lines.len().saturating_sub(ERROR_LINES)..]
        .iter()
        .map(|line| (*line).to_owned())
        .collect()
}
