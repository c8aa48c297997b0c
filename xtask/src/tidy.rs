//! Tidy checks over the source tree, run as tests (rust-analyzer's `xtask/src/tidy.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::cargo::project_root;

/// Directories whose `.rs` files must open with a module doc: every crate, plus this xtask and the
/// wasm harness.
const DOCUMENTED: &[&str] = &["crates", "xtask", "tests/wasm-roundtrip"];

/// Every module opens with `//!` (STYLE.md), possibly after inner attributes (`#![...]`, which may
/// span lines). Files included with `#[path]` are held to the same rule.
#[test]
fn every_module_opens_with_a_module_doc() {
    let root = project_root();
    let mut missing = Vec::new();
    for dir in DOCUMENTED {
        for file in rust_files(&root.join(dir)) {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            if !opens_with_module_doc(&text) {
                missing.push(
                    file.strip_prefix(&root)
                        .unwrap_or(&file)
                        .display()
                        .to_string(),
                );
            }
        }
    }
    assert!(
        missing.is_empty(),
        "these files do not open with a `//!` module doc:\n  {}",
        missing.join("\n  ")
    );
}

/// Two crates copy `[workspace.lints]` because they need `unsafe` somewhere: the wasm harness
/// (its exports need `#[unsafe(no_mangle)]`) and `mapped-file` (creating a memory map). This keeps
/// the copies from drifting. The one allowed difference is `unsafe_code = "deny"` instead of
/// `"forbid"`, and no other crate may leave the workspace lints.
#[test]
fn lint_copies_match_the_workspace() {
    const COPIES: [&str; 2] = [
        "tests/wasm-roundtrip/Cargo.toml",
        "crates/mapped-file/Cargo.toml",
    ];
    let root = project_root();
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    let workspace = read(&root.join("Cargo.toml"));
    for copy in COPIES {
        let manifest = read(&root.join(copy));
        for group in ["rust", "clippy"] {
            let mut expected = table(&workspace, &format!("[workspace.lints.{group}]"));
            let found = table(&manifest, &format!("[lints.{group}]"));
            assert!(!expected.is_empty(), "no [workspace.lints.{group}] found");
            if group == "rust" {
                assert_eq!(
                    expected.insert("unsafe_code".into(), "\"deny\"".into()),
                    Some("\"forbid\"".into())
                );
            }
            assert_eq!(
                found, expected,
                "{copy} [lints.{group}] differs from the workspace's"
            );
        }
    }
    for manifest in std::fs::read_dir(root.join("crates"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let path = manifest.path().join("Cargo.toml");
        let text = read(&path);
        let relative = path
            .strip_prefix(&root)
            .unwrap_or(&path)
            .display()
            .to_string();
        if !COPIES.contains(&relative.as_str()) {
            assert!(
                text.contains("[lints]\nworkspace = true"),
                "{relative} must use the workspace lints ([lints] workspace = true)"
            );
        }
    }
}

/// Whether `text` opens with inner attributes (if any) followed by a `//!` line.
fn opens_with_module_doc(text: &str) -> bool {
    let mut rest = text.trim_start_matches('\u{feff}');
    while let Some(attribute) = rest.strip_prefix("#![") {
        // Skip to the `]` closing this attribute; brackets inside it are balanced.
        let mut depth = 1usize;
        let mut end = None;
        for (index, c) in attribute.char_indices() {
            match c {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(index + 1);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else { return false };
        rest = attribute[end..].trim_start_matches([' ', '\t', '\r', '\n']);
    }
    rest.starts_with("//!")
}

/// `key = value` lines of the TOML table `header` (comments and blank lines skipped).
fn table(manifest: &str, header: &str) -> BTreeMap<String, String> {
    manifest
        .lines()
        .skip_while(|line| line.trim() != header)
        .skip(1)
        .take_while(|line| !line.trim_start().starts_with('['))
        .filter_map(|line| {
            let line = line.trim();
            if line.starts_with('#') {
                return None;
            }
            let (key, value) = line.split_once('=')?;
            Some((key.trim().to_owned(), value.trim().to_owned()))
        })
        .collect()
}

/// Every `.rs` file under `dir`, skipping `target` directories and hidden ones.
pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if path.is_dir() {
                if name != "target" && !name.starts_with('.') {
                    pending.push(path);
                }
            } else if name.ends_with(".rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn module_doc_detection() {
    assert!(opens_with_module_doc("//! Doc.\nfn main() {}"));
    assert!(opens_with_module_doc(
        "#![allow(\n    clippy::x,\n    reason = \"a [bracket]\"\n)]\n\n//! Doc."
    ));
    assert!(opens_with_module_doc(
        "#![no_std]\n#![forbid(unsafe_code)]\n//! Doc."
    ));
    assert!(!opens_with_module_doc("// A comment.\n//! Doc."));
    assert!(!opens_with_module_doc("\n//! Doc after a blank line."));
    assert!(!opens_with_module_doc("#![no_std]\nfn f() {}"));
    assert!(!opens_with_module_doc("/// Item doc.\nfn f() {}"));
}
