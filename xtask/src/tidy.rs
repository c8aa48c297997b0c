//! Tidy checks over the source tree, run as tests (rust-analyzer's `xtask/src/tidy.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::cargo::project_root;

/// Directories whose `.rs` files must open with a module doc: every crate, plus this xtask and the
/// wasm harness.
const DOCUMENTED: &[&str] = &[
    "crates",
    "xtask",
    "tests/wasm-roundtrip",
    "examples/embedded-apr",
];

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

/// Five crates copy `[workspace.lints]` because they need `unsafe` somewhere: the wasm harness
/// (its exports need `#[unsafe(no_mangle)]`), `envelope-wasm` (wasm-bindgen's exports expand to
/// `unsafe` glue), `mapped-file` (creating a memory map), `ald-datafusion` (the Arrow C Data
/// Interface bridge from arrow 60 to DataFusion's arrow 59) and the bare-metal example (its entry
/// point and allocator). This keeps the copies from drifting. The one allowed difference is
/// `unsafe_code = "deny"` instead of `"forbid"`, and no other crate may leave the workspace lints.
#[test]
fn lint_copies_match_the_workspace() {
    const COPIES: [&str; 5] = [
        "tests/wasm-roundtrip/Cargo.toml",
        "crates/envelope-wasm/Cargo.toml",
        "crates/mapped-file/Cargo.toml",
        "crates/ald-datafusion/Cargo.toml",
        "examples/embedded-apr/Cargo.toml",
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

/// The layer each crate under `crates/` declares (`[package.metadata] layer = N`), and its
/// workspace dependencies that count for layering (normal and build, not dev: a test may use a
/// helper crate from any layer).
fn layered_graph() -> (BTreeMap<String, u64>, Vec<(String, String)>) {
    let root = project_root();
    let metadata = crate::cargo::metadata(&root).expect("cargo metadata runs");
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let under_crates = |package: &serde_json::Value| {
        package["manifest_path"]
            .as_str()
            .is_some_and(|path| Path::new(path).starts_with(root.join("crates")))
    };
    let mut layers = BTreeMap::new();
    let mut edges = Vec::new();
    for package in packages.iter().filter(|p| under_crates(p)) {
        let name = package["name"].as_str().unwrap_or_default().to_owned();
        let layer = package["metadata"]["layer"].as_u64().unwrap_or_else(|| {
            panic!("{name}: declare its layer in Cargo.toml ([package.metadata] layer = N)")
        });
        layers.insert(name.clone(), layer);
        for dependency in package["dependencies"].as_array().into_iter().flatten() {
            if dependency["kind"].as_str() == Some("dev") || dependency["path"].is_null() {
                continue;
            }
            let to = dependency["name"].as_str().unwrap_or_default().to_owned();
            edges.push((name.clone(), to));
        }
    }
    (layers, edges)
}

/// Every edge that does not point to a strictly lower layer, as `from (n) -> to (m)`.
fn layering_violations(layers: &BTreeMap<String, u64>, edges: &[(String, String)]) -> Vec<String> {
    edges
        .iter()
        .filter_map(|(from, to)| {
            let (&high, &low) = (layers.get(from)?, layers.get(to)?);
            (low >= high).then(|| format!("{from} (layer {high}) -> {to} (layer {low})"))
        })
        .collect()
}

/// Dependencies point down only (ARCHITECTURE.md): each crate's workspace dependencies have a
/// lower layer than its own, as the manifests declare them.
#[test]
fn every_crate_depends_only_on_lower_layers() {
    let (layers, edges) = layered_graph();
    assert!(
        layers.len() >= 12,
        "every crate declares a layer: {layers:?}"
    );
    let violations = layering_violations(&layers, &edges);
    assert!(
        violations.is_empty(),
        "edges to the same or a higher layer:\n  {}",
        violations.join("\n  ")
    );
}

#[test]
fn a_planted_upward_or_sideways_edge_is_caught() {
    let layers: BTreeMap<String, u64> = [("envelope-core", 0), ("envelope-crypto", 1), ("ald", 4)]
        .into_iter()
        .map(|(name, layer)| (name.to_owned(), layer))
        .collect();
    let edge = |from: &str, to: &str| (from.to_owned(), to.to_owned());
    assert!(layering_violations(&layers, &[edge("ald", "envelope-core")]).is_empty());
    assert_eq!(
        layering_violations(
            &layers,
            &[
                edge("envelope-core", "ald"),
                edge("ald", "ald"),
                edge("ald", "serde")
            ]
        ),
        [
            "envelope-core (layer 0) -> ald (layer 4)",
            "ald (layer 4) -> ald (layer 4)"
        ]
    );
}

/// Crates that encrypt, sign or derive keys: none may be linked by a crate built without its
/// default features ("features remove what they name").
const CRYPTO_CRATES: &[&str] = &[
    "aes",
    "aes-gcm",
    "argon2",
    "chacha20poly1305",
    "curve25519-dalek",
    "ed25519-dalek",
    "ghash",
    "hkdf",
    "polyval",
    "x25519-dalek",
    "ring",
    "openssl",
];

/// The crypto crates named in a `cargo tree --prefix none` listing.
fn crypto_in_tree(tree: &str) -> Vec<String> {
    let mut found: Vec<String> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| CRYPTO_CRATES.contains(name))
        .map(str::to_owned)
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Without default features every library crate is a small core: no cipher, no signature scheme,
/// no KDF in its dependency tree (the crypto arrives with `format-encryption`, `format-signing`,
/// `commercial`, fold's `signature`).
#[test]
fn trees_without_default_features_link_no_crypto() {
    let root = project_root();
    let (layers, _) = layered_graph();
    let mut offenders = Vec::new();
    for name in layers.keys() {
        if matches!(
            name.as_str(),
            "envelope-crypto"
                | "envelope-sign"
                | "cli-support"
                | "test-support"
                | "ald-datafusion"
                | "ald-ballista"
        ) || name.ends_with("-cli")
        {
            // Crypto is what these crates are (or they are binaries, or test-only, or, for
            // ald-datafusion and ald-ballista above it, native consumers that decrypt and verify
            // with the session's or the executor's keys, as the CLIs do).
            continue;
        }
        if name == "remote-file" {
            // Native only (layer 6): TLS (rustls on ring) and request signing are what reading
            // over HTTPS and S3 is; its own format features still remove the cipher and the
            // signature scheme (docs/remote.md).
            continue;
        }
        let run = crate::cargo::capture(
            crate::cargo::cargo().args([
                "tree",
                "-p",
                name,
                "--no-default-features",
                "-e",
                "normal",
                "--prefix",
                "none",
                "--locked",
            ]),
            &root,
        )
        .expect("cargo tree runs");
        assert!(run.ok, "cargo tree -p {name}: {}", run.stderr);
        let found = crypto_in_tree(&run.stdout);
        if !found.is_empty() {
            offenders.push(format!("{name}: {}", found.join(", ")));
        }
    }
    assert!(
        offenders.is_empty(),
        "crypto crates without default features:\n  {}",
        offenders.join("\n  ")
    );
}

/// The specs' blocklist (000 §1.0, 001 §1.0): crates no format crate may reach, in any
/// configuration. `deny.toml` allows tokio only as a dependency of the crates that wrap it
/// (DataFusion's, for `ald-datafusion`); this keeps those wrappers, and DataFusion itself, out of
/// the format crates' trees.
const BLOCKLIST: &[&str] = &[
    "ring",
    "openssl",
    "openssl-sys",
    "rayon",
    "tokio",
    "datafusion",
    "object_store",
];

/// The blocklisted crates named in a `cargo tree --prefix none` listing.
fn blocklisted_in_tree(tree: &str) -> Vec<String> {
    let mut found: Vec<String> = tree
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| BLOCKLIST.contains(name))
        .map(str::to_owned)
        .collect();
    found.sort();
    found.dedup();
    found
}

/// Every format crate (layers 0 to 5), with all its features and for every target, reaches none
/// of the blocklist: tokio and its wrappers stay in the native-only crates at the top of the graph
/// (`ald-datafusion`, layer 6).
#[test]
fn format_crates_reach_no_blocklisted_crate() {
    let root = project_root();
    let (layers, _) = layered_graph();
    let mut offenders = Vec::new();
    for (name, _) in layers.iter().filter(|(_, layer)| **layer <= 5) {
        let run = crate::cargo::capture(
            crate::cargo::cargo().args([
                "tree",
                "-p",
                name,
                "--all-features",
                "--target",
                "all",
                "-e",
                "normal,build",
                "--prefix",
                "none",
                "--locked",
            ]),
            &root,
        )
        .expect("cargo tree runs");
        assert!(run.ok, "cargo tree -p {name}: {}", run.stderr);
        let found = blocklisted_in_tree(&run.stdout);
        if !found.is_empty() {
            offenders.push(format!("{name}: {}", found.join(", ")));
        }
    }
    assert!(
        offenders.is_empty(),
        "format crates that reach the blocklist:\n  {}",
        offenders.join("\n  ")
    );
}

#[test]
fn a_planted_blocklisted_crate_is_caught() {
    let tree = "ald v0.1.0 (/x)\nparquet v59.3.2\ntokio v1.54.1\nserde v1.0.0\n";
    assert_eq!(blocklisted_in_tree(tree), ["tokio"]);
    assert!(blocklisted_in_tree("ald v0.1.0\ntokio-util v0.7.0\n").is_empty());
}

#[test]
fn a_planted_crypto_crate_is_caught() {
    let tree = "ald v0.1.0 (/x)\nenvelope-core v0.1.0 (/y)\naes-gcm v0.10.3\nserde v1.0.0\n";
    assert_eq!(crypto_in_tree(tree), ["aes-gcm"]);
    assert!(crypto_in_tree("ald v0.1.0\nsha2 v0.10.9\n").is_empty());
}
