//! `cargo xtask regenerate WHAT` and `cargo xtask fuzz-seeds TARGET`: the generators of checked-in
//! test data (known-answer vectors, golden files, fuzz seeds).
//!
//! Generators are never tests: a test that writes into the source tree races the tests that read
//! it (`cargo test -- --include-ignored` once rewrote a fuzz corpus while its replay read it). Each
//! generator is an example of the crate that owns the data (`examples/regenerate_*_vectors.rs`,
//! `examples/write_fuzz_seeds.rs`; example names are unique across the workspace, since cargo
//! puts every example in one directory), sharing the vector builders with that crate's tests through a
//! `#[path]` module, and is run from here. Review the diff before committing what they write.

use std::ffi::OsString;
use std::path::Path;

use anyhow::{Context as _, Result, bail};

use crate::cargo::{cargo, project_root};

/// One generator: the crate and example that writes the data, and the arguments it takes.
struct Generator {
    /// The name on the command line.
    name: &'static str,
    /// The package whose example writes the data.
    package: &'static str,
    /// The example.
    example: &'static str,
    /// What it writes, for `help`.
    writes: &'static str,
    /// Its arguments (paths are relative to the workspace root).
    args: fn(&Path) -> Result<Vec<OsString>>,
}

fn no_args(_root: &Path) -> Result<Vec<OsString>> {
    Ok(Vec::new())
}

/// The interop interpreter (`.ci/setup-python` creates it and prints its path).
fn interop_python(root: &Path) -> Result<Vec<OsString>> {
    let output = std::process::Command::new("bash")
        .arg(root.join(".ci/setup-python"))
        .current_dir(root)
        .output()
        .context("running .ci/setup-python")?;
    if !output.status.success() {
        bail!(
            ".ci/setup-python failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let python = String::from_utf8(output.stdout).context(".ci/setup-python printed non-UTF-8")?;
    Ok(vec![OsString::from(python.trim())])
}

/// Known-answer vectors and golden files.
const VECTORS: &[Generator] = &[
    Generator {
        name: "envelope-core",
        package: "envelope-core",
        example: "regenerate_core_vectors",
        writes: "crates/envelope-core/tests/data (the byte-stable known-answer files)",
        args: no_args,
    },
    Generator {
        name: "envelope-crypto",
        package: "envelope-crypto",
        example: "regenerate_crypto_vectors",
        writes: "crates/envelope-crypto/tests/data (kat_* and fail_* vectors)",
        args: no_args,
    },
    Generator {
        name: "envelope-sign",
        package: "envelope-sign",
        example: "regenerate_sign_vectors",
        writes: "crates/envelope-sign/tests/data (kat_* and fail_* vectors, key files)",
        args: no_args,
    },
    Generator {
        name: "apr",
        package: "apr",
        example: "regenerate_apr_vectors",
        writes: "crates/apr/tests/data (golden_q4_0.apr; kat/ from gguf.quants in .venv)",
        args: interop_python,
    },
    Generator {
        name: "lineage",
        package: "lineage",
        example: "regenerate_lineage_vectors",
        writes: "crates/lineage/tests/data (the `expect` field of every golden vector)",
        args: no_args,
    },
];

fn ald_reader_corpus(root: &Path) -> Result<Vec<OsString>> {
    Ok(vec![root.join("fuzz/corpus/ald_reader").into_os_string()])
}

/// Fuzz seeds (`fuzz/corpus/TARGET`).
const FUZZ_SEEDS: &[Generator] = &[Generator {
    name: "ald_reader",
    package: "ald",
    example: "write_fuzz_seeds",
    writes: "fuzz/corpus/ald_reader (small tables, whole and STREAMING, every compression)",
    args: ald_reader_corpus,
}];

/// The lines `cargo xtask help` prints for `kind`'s generators.
pub(crate) fn help(kind: &str) -> String {
    let table = if kind == "fuzz-seeds" {
        FUZZ_SEEDS
    } else {
        VECTORS
    };
    table
        .iter()
        .map(|g| format!("    {:<16} {}", g.name, g.writes))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `kind` (`regenerate` or `fuzz-seeds`) has a generator named `name`.
pub(crate) fn has(kind: &str, name: &str) -> bool {
    let table = if kind == "fuzz-seeds" {
        FUZZ_SEEDS
    } else {
        VECTORS
    };
    table.iter().any(|g| g.name == name)
}

/// Runs the generator named `name` of `kind` (`regenerate` or `fuzz-seeds`).
///
/// # Errors
/// An unknown name, or the generator's failure.
pub(crate) fn run(kind: &str, name: &str) -> Result<bool> {
    let table = if kind == "fuzz-seeds" {
        FUZZ_SEEDS
    } else {
        VECTORS
    };
    let Some(generator) = table.iter().find(|g| g.name == name) else {
        bail!(
            "unknown {kind} name `{name}`; one of: {}",
            table.iter().map(|g| g.name).collect::<Vec<_>>().join(", ")
        );
    };
    let root = project_root();
    let args = (generator.args)(&root)?;
    let status = cargo()
        .current_dir(&root)
        .args([
            "run",
            "--locked",
            "--quiet",
            "-p",
            generator.package,
            "--example",
            generator.example,
            "--",
        ])
        .args(args)
        .status()
        .with_context(|| format!("running the {} generator", generator.name))?;
    if status.success() {
        println!(
            "xtask: {kind} {name}: wrote {}; review `git diff` before committing",
            generator.writes
        );
    }
    Ok(status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every generator names an example that exists in its package.
    #[test]
    fn every_generator_has_its_example() {
        let root = project_root();
        for generator in VECTORS.iter().chain(FUZZ_SEEDS) {
            let path = root
                .join("crates")
                .join(generator.package)
                .join("examples")
                .join(format!("{}.rs", generator.example));
            assert!(
                path.is_file(),
                "{}: {} is missing",
                generator.name,
                path.display()
            );
        }
    }

    /// No test writes into the checked-in test data: writing happens only here.
    #[test]
    fn no_test_writes_checked_in_data() {
        let root = project_root();
        let mut offenders = Vec::new();
        for file in crate::tidy::rust_files(&root.join("crates")) {
            let relative = file.strip_prefix(&root).unwrap_or(&file);
            let in_tests = relative.components().any(|c| c.as_os_str() == "tests");
            if !in_tests {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            for (line_number, line) in text.lines().enumerate() {
                let writes = line.contains("std::fs::write(") || line.contains("fs::write(");
                let into_data = ["data_dir()", "data(", "corpus()", "CARGO_MANIFEST_DIR"]
                    .iter()
                    .any(|needle| line.contains(needle));
                if writes && into_data {
                    offenders.push(format!("{}:{}", relative.display(), line_number + 1));
                }
            }
        }
        assert!(
            offenders.is_empty(),
            "tests must not write checked-in data (use an xtask generator):\n  {}",
            offenders.join("\n  ")
        );
    }
}
