//! `cargo xtask wasm-gate`: every library crate builds for `wasm32-unknown-unknown`, links no C and
//! no host-only runtime there, and files round-trip between the native and the wasm32 loader.
//!
//! # Which crates and feature sets
//!
//! The crates are discovered, not listed: every workspace package with a library target whose
//! manifest lives under `crates/` and whose name does not end in `-cli` (the CLIs are native-only
//! by design). A new library crate is in the gate the moment it joins the workspace. A library
//! that exists only for the CLIs says so, with the reason, and is left out:
//!
//! ```toml
//! [package.metadata.wasm-gate]
//! native-crate = "terminal, signals and key files of the command-line tools"
//! ```
//!
//! For each crate the gate checks, always passing `--target wasm32-unknown-unknown`:
//! 1. `--no-default-features`;
//! 2. `--no-default-features --features F` for each feature `F` named `format-*` (the specs'
//!    feature names: `format-compression`, `format-encryption`, `format-signing`, ...);
//! 3. all `format-*` features together (when there are two or more);
//! 4. the default features, minus the native-only ones (below).
//!
//! Identical sets are checked once, with their labels joined.
//!
//! # Native-only features: `[package.metadata.wasm-gate]`
//!
//! A feature that cannot exist on wasm32 (filesystem, threads) is declared in the crate's manifest:
//!
//! ```toml
//! [package.metadata.wasm-gate]
//! native-only = ["fs"]
//! ```
//!
//! Those features are never enabled on wasm32. If the defaults include one, the gate checks
//! `--no-default-features --features <defaults minus native-only>` instead of the defaults. A name
//! that is not a feature of the crate, or a checked feature that enables a native-only one, is a
//! gate failure (a typo must not silently widen what is skipped).
//!
//! # Dependency policy
//!
//! For the same (crate, feature set), `cargo tree` for wasm32 must not show, linked into the wasm
//! module: `ring`, `openssl`, `openssl-sys`, `rayon`, `tokio`, any `-sys` crate (C linked into
//! wasm; `js-sys` and `web-sys` are Rust bindings to JavaScript and allowed), or `getrandom`
//! without its browser backend (feature `js` in 0.2, `wasm_js` from 0.3). Build scripts run on the
//! host, so most build-dependencies do not matter; but `cc`, `cmake` or `pkg-config` reachable from
//! the build script of a crate linked into wasm means C compiled or linked for wasm32, and fails.
//! Proc-macro crates and their dependencies run only on the host and are ignored.
//!
//! # Round trip
//!
//! Finally (unless `--no-node`) the `wasm-roundtrip` harness (`tests/wasm-roundtrip`) is built as a
//! wasm32 module and run under Node.js against files written by the native build, and the other
//! way round; see that crate's docs. Every step is a row of the table; any failure makes the exit
//! status non-zero.

mod deps;
mod roundtrip;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use serde_json::Value;

use crate::cargo::{self, Run};

/// The target every check passes explicitly (ripgrep's CI once added a wasm job without it).
pub(crate) const WASM_TARGET: &str = "wasm32-unknown-unknown";

/// At most this many error lines per failure are kept for the report.
const ERROR_LINES: usize = 12;

/// Command-line options of `wasm-gate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Options {
    /// Run the Node.js round trip (off with `--no-node`).
    pub(crate) node: bool,
}

impl Options {
    /// Parses the arguments after `wasm-gate`; `None` means `--help`.
    ///
    /// # Errors
    /// On an unknown argument.
    pub(crate) fn parse(args: &[&str]) -> Result<Option<Self>> {
        let mut options = Self { node: true };
        for arg in args {
            match *arg {
                "--no-node" => options.node = false,
                "--help" | "-h" => return Ok(None),
                other => bail!("wasm-gate: unknown argument `{other}` (try --help)"),
            }
        }
        Ok(Some(options))
    }
}

/// A library crate in the gate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GateCrate {
    /// Package name.
    pub(crate) name: String,
    /// The `[features]` table.
    pub(crate) features: BTreeMap<String, Vec<String>>,
    /// `[package.metadata.wasm-gate] native-only`.
    pub(crate) native_only: BTreeSet<String>,
}

/// One feature set to check, as cargo flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FeatureSet {
    /// What the set is, for the table (`--no-default-features`, `format-compression`, ...).
    pub(crate) label: String,
    /// `None`: cargo's default features (no flags). `Some(set)`: `--no-default-features` plus
    /// `--features` with `set` when it is not empty.
    pub(crate) features: Option<BTreeSet<String>>,
    /// Why this set must not be built (it enables a native-only feature), if so.
    pub(crate) invalid: Option<String>,
}

impl FeatureSet {
    /// The cargo flags selecting this set.
    pub(crate) fn flags(&self) -> Vec<String> {
        let Some(features) = &self.features else {
            return Vec::new();
        };
        let mut flags = vec!["--no-default-features".to_owned()];
        if !features.is_empty() {
            flags.push("--features".to_owned());
            flags.push(features.iter().cloned().collect::<Vec<_>>().join(","));
        }
        flags
    }
}

/// The state of one cell of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cell {
    Ok(String),
    Fail,
    Skipped,
}

impl Cell {
    fn text(&self) -> String {
        match self {
            Self::Ok(note) if note.is_empty() => "ok".to_owned(),
            Self::Ok(note) => format!("ok ({note})"),
            Self::Fail => "FAIL".to_owned(),
            Self::Skipped => "-".to_owned(),
        }
    }
}

/// One row of the table, and the errors behind its FAIL cells.
struct Row {
    krate: String,
    what: String,
    check: Cell,
    deps: Cell,
    errors: Vec<String>,
}

/// Runs the gate and prints the table. `Ok(false)` if any cell failed.
///
/// # Errors
/// If cargo metadata cannot be read (the gate cannot start).
pub(crate) fn run(options: &Options) -> Result<bool> {
    let metadata = cargo::metadata(&cargo::project_root())?;
    let root = PathBuf::from(
        metadata["workspace_root"]
            .as_str()
            .context("cargo metadata has no workspace_root")?,
    );
    let crates = discover(&metadata, &root)?;
    if crates.is_empty() {
        bail!("no library crates under {}/crates", root.display());
    }

    let mut rows = Vec::new();
    for krate in &crates {
        for set in feature_sets(krate) {
            rows.push(check_set(&root, krate, &set)?);
        }
    }
    if options.node {
        rows.extend(roundtrip::run(&root)?);
    } else {
        rows.push(Row {
            krate: roundtrip::HARNESS.to_owned(),
            what: "node round trip".to_owned(),
            check: Cell::Skipped,
            deps: Cell::Skipped,
            errors: vec!["skipped (--no-node); CI runs the full gate".to_owned()],
        });
    }

    print_table(&rows);
    let failed = rows
        .iter()
        .any(|row| row.check == Cell::Fail || row.deps == Cell::Fail);
    for row in rows.iter().filter(|row| !row.errors.is_empty()) {
        println!("\n--- {} [{}]", row.krate, row.what);
        for line in &row.errors {
            println!("    {line}");
        }
    }
    println!(
        "\nwasm-gate: {}",
        if failed { "FAILED" } else { "all passed" }
    );
    Ok(!failed)
}

/// The gate's crates, from `cargo metadata --no-deps` output.
///
/// # Errors
/// On malformed metadata, or a `native-only` entry that is not a feature of its crate.
pub(crate) fn discover(metadata: &Value, root: &Path) -> Result<Vec<GateCrate>> {
    let crates_dir = root.join("crates");
    let mut out = Vec::new();
    for package in metadata["packages"]
        .as_array()
        .context("cargo metadata has no packages")?
    {
        let name = package["name"].as_str().context("package without name")?;
        let manifest = Path::new(package["manifest_path"].as_str().unwrap_or_default());
        let is_lib = package["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|target| target["kind"].as_array().into_iter().flatten())
            .any(|kind| {
                matches!(
                    kind.as_str(),
                    Some("lib" | "rlib" | "dylib" | "cdylib" | "staticlib")
                )
            });
        if !is_lib || !manifest.starts_with(&crates_dir) || name.ends_with("-cli") {
            continue;
        }
        match &package["metadata"]["wasm-gate"]["native-crate"] {
            Value::Null => {}
            Value::String(reason) if !reason.trim().is_empty() => continue,
            _ => bail!("{name}: [package.metadata.wasm-gate] native-crate must say why"),
        }
        let mut features = BTreeMap::new();
        for (feature, enables) in package["features"].as_object().into_iter().flatten() {
            let enables = enables
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|value| value.as_str().map(str::to_owned))
                .collect();
            features.insert(feature.clone(), enables);
        }
        let native_only: BTreeSet<String> = match &package["metadata"]["wasm-gate"]["native-only"] {
            Value::Null => BTreeSet::new(),
            Value::Array(names) => names
                .iter()
                .map(|name| name.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .with_context(|| format!("{name}: native-only must be a list of strings"))?,
            _ => bail!("{name}: [package.metadata.wasm-gate] native-only must be a list"),
        };
        if let Some(unknown) = native_only.iter().find(|f| !features.contains_key(*f)) {
            bail!(
                "{name}: [package.metadata.wasm-gate] native-only names `{unknown}`, which is not a feature of the crate"
            );
        }
        out.push(GateCrate {
            name: name.to_owned(),
            features,
            native_only,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The feature sets to check for `krate`, identical sets merged.
pub(crate) fn feature_sets(krate: &GateCrate) -> Vec<FeatureSet> {
    let format: Vec<&String> = krate
        .features
        .keys()
        .filter(|name| name.starts_with("format-") && !krate.native_only.contains(*name))
        .collect();
    let one = |name: &str| BTreeSet::from([name.to_owned()]);

    let mut candidates = vec![("--no-default-features".to_owned(), Some(BTreeSet::new()))];
    for name in &format {
        candidates.push(((*name).clone(), Some(one(name))));
    }
    if format.len() > 1 {
        let all = format.iter().map(|name| (*name).clone()).collect();
        candidates.push(("all format-*".to_owned(), Some(all)));
    }
    let defaults: BTreeSet<String> = krate
        .features
        .get("default")
        .into_iter()
        .flatten()
        .cloned()
        .collect();
    let dropped: Vec<&String> = defaults.intersection(&krate.native_only).collect();
    if dropped.is_empty() {
        candidates.push(("default".to_owned(), None));
    } else {
        let label = format!(
            "default minus {}",
            dropped
                .iter()
                .map(|name| name.as_str())
                .collect::<Vec<_>>()
                .join(",")
        );
        let kept = defaults.difference(&krate.native_only).cloned().collect();
        candidates.push((label, Some(kept)));
    }

    let mut sets: Vec<FeatureSet> = Vec::new();
    for (label, features) in candidates {
        // Compare by what is enabled: the plain defaults equal the explicit default list.
        let enabled = features.clone().unwrap_or_else(|| defaults.clone());
        let same = sets.iter_mut().find(|set| {
            set.features
                .clone()
                .unwrap_or_else(|| defaults.clone())
                .eq(&enabled)
        });
        if let Some(set) = same {
            set.label = format!("{} = {label}", set.label);
            continue;
        }
        let reached = closure(&krate.features, &enabled);
        let invalid = krate
            .native_only
            .iter()
            .find(|name| reached.contains(*name))
            .map(|name| {
                format!(
                    "this set enables native-only feature `{name}`; drop it from the set's features or from native-only"
                )
            });
        sets.push(FeatureSet {
            label,
            features,
            invalid,
        });
    }
    sets
}

/// The crate's own features reachable from `start` through its `[features]` table (entries such as
/// `dep:x` and `x/y` name dependencies and are not followed).
fn closure(table: &BTreeMap<String, Vec<String>>, start: &BTreeSet<String>) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<&str> = start.iter().map(String::as_str).collect();
    while let Some(name) = stack.pop() {
        if !seen.insert(name.to_owned()) {
            continue;
        }
        if let Some(enables) = table.get(name) {
            stack.extend(enables.iter().map(String::as_str));
        }
    }
    seen
}

/// `cargo check` and the dependency policy for one (crate, feature set).
fn check_set(root: &Path, krate: &GateCrate, set: &FeatureSet) -> Result<Row> {
    let mut row = Row {
        krate: krate.name.clone(),
        what: set.label.clone(),
        check: Cell::Fail,
        deps: Cell::Fail,
        errors: Vec::new(),
    };
    if let Some(reason) = &set.invalid {
        row.errors.push(reason.clone());
        return Ok(row);
    }
    let flags = set.flags();
    eprintln!(
        "wasm-gate: cargo check -p {} --lib --target {WASM_TARGET} {}",
        krate.name,
        flags.join(" ")
    );
    let check = cargo::capture(
        cargo::cargo()
            .args(["check", "-p", &krate.name, "--lib", "--target", WASM_TARGET])
            .args(["--message-format", "short"])
            .args(&flags),
        root,
    )?;
    if check.ok {
        row.check = Cell::Ok(String::new());
    } else {
        row.errors.push("cargo check:".to_owned());
        row.errors.extend(error_lines(&check));
    }

    let tree = cargo::capture(
        cargo::cargo()
            .args(deps::tree_args(&krate.name))
            .args(&flags),
        root,
    )?;
    if !tree.ok {
        row.errors.push("cargo tree:".to_owned());
        row.errors.extend(error_lines(&tree));
        return Ok(row);
    }
    let violations = deps::violations(&tree.stdout);
    if violations.is_empty() {
        row.deps = Cell::Ok(String::new());
    } else {
        row.errors.push("dependency policy:".to_owned());
        row.errors.extend(violations);
    }
    Ok(row)
}

/// The first error lines of a failed cargo run (all of stderr's tail if none say `error`).
fn error_lines(run: &Run) -> Vec<String> {
    let errors: Vec<String> = run
        .stderr
        .lines()
        .filter(|line| {
            let line = line.trim_start();
            line.starts_with("error") || line.contains(": error")
        })
        .take(ERROR_LINES)
        .map(str::to_owned)
        .collect();
    if !errors.is_empty() {
        return errors;
    }
    let lines: Vec<&str> = run.stderr.lines().collect();
    lines[lines.len().saturating_sub(ERROR_LINES)..]
        .iter()
        .map(|line| (*line).to_owned())
        .collect()
}

fn print_table(rows: &[Row]) {
    let header = ["crate", "features", "check", "deps"];
    let cells: Vec<[String; 4]> = rows
        .iter()
        .map(|row| {
            [
                row.krate.clone(),
                row.what.clone(),
                row.check.text(),
                row.deps.text(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 4]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        println!("| {} |", padded.join(" | "));
    };
    println!();
    line(header);
    let rule: Vec<String> = widths.iter().map(|width| "-".repeat(*width)).collect();
    println!("|-{}-|", rule.join("-|-"));
    for row in &cells {
        line([&row[0], &row[1], &row[2], &row[3]]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn krate(features: &[(&str, &[&str])], native_only: &[&str]) -> GateCrate {
        GateCrate {
            name: "c".to_owned(),
            features: features
                .iter()
                .map(|(name, enables)| {
                    (
                        (*name).to_owned(),
                        enables.iter().map(|s| (*s).to_owned()).collect(),
                    )
                })
                .collect(),
            native_only: native_only.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    fn labels_and_flags(sets: &[FeatureSet]) -> Vec<(String, String)> {
        sets.iter()
            .map(|set| (set.label.clone(), set.flags().join(" ")))
            .collect()
    }

    #[test]
    fn envelope_core_shape_checks_two_distinct_sets() {
        let c = krate(
            &[
                ("default", &["format-compression", "fs"]),
                ("format-compression", &["dep:zstd"]),
                ("fs", &["dep:tempfile"]),
            ],
            &["fs"],
        );
        let sets = feature_sets(&c);
        assert_eq!(
            labels_and_flags(&sets),
            [
                (
                    "--no-default-features".to_owned(),
                    "--no-default-features".to_owned()
                ),
                (
                    "format-compression = default minus fs".to_owned(),
                    "--no-default-features --features format-compression".to_owned()
                ),
            ]
        );
        assert!(sets.iter().all(|set| set.invalid.is_none()));
    }

    #[test]
    fn each_format_feature_then_all_then_plain_defaults() {
        let c = krate(
            &[
                ("default", &["std"]),
                ("std", &[]),
                ("format-signing", &[]),
                ("format-encryption", &["std"]),
            ],
            &[],
        );
        assert_eq!(
            labels_and_flags(&feature_sets(&c)),
            [
                (
                    "--no-default-features".into(),
                    "--no-default-features".into()
                ),
                (
                    "format-encryption".into(),
                    "--no-default-features --features format-encryption".into()
                ),
                (
                    "format-signing".into(),
                    "--no-default-features --features format-signing".into()
                ),
                (
                    "all format-*".into(),
                    "--no-default-features --features format-encryption,format-signing".into()
                ),
                ("default".into(), String::new()),
            ]
        );
    }

    #[test]
    fn a_set_that_reaches_a_native_only_feature_is_refused() {
        let c = krate(
            &[
                ("default", &["format-x"]),
                ("format-x", &["fs"]),
                ("fs", &[]),
            ],
            &["fs"],
        );
        let sets = feature_sets(&c);
        let format_x = sets.iter().find(|set| set.label.starts_with("format-x"));
        assert!(format_x.unwrap().invalid.is_some());
        assert!(sets[0].invalid.is_none());
    }

    #[test]
    fn discovery_takes_libraries_under_crates_except_clis() {
        let metadata = serde_json::json!({
            "packages": [
                {"name": "core", "manifest_path": "/w/crates/core/Cargo.toml",
                 "targets": [{"kind": ["lib"]}], "features": {"default": ["fs"], "fs": []},
                 "metadata": {"wasm-gate": {"native-only": ["fs"]}}},
                {"name": "x-cli", "manifest_path": "/w/crates/x-cli/Cargo.toml",
                 "targets": [{"kind": ["lib"]}, {"kind": ["bin"]}], "features": {}, "metadata": null},
                {"name": "tool", "manifest_path": "/w/crates/tool/Cargo.toml",
                 "targets": [{"kind": ["bin"]}], "features": {}, "metadata": null},
                {"name": "harness", "manifest_path": "/w/tests/harness/Cargo.toml",
                 "targets": [{"kind": ["cdylib", "rlib"]}], "features": {}, "metadata": null},
                {"name": "cli-helpers", "manifest_path": "/w/crates/cli-helpers/Cargo.toml",
                 "targets": [{"kind": ["lib"]}], "features": {},
                 "metadata": {"wasm-gate": {"native-crate": "terminal only"}}}
            ]
        });
        let crates = discover(&metadata, Path::new("/w")).unwrap();
        assert_eq!(crates.len(), 1);
        assert_eq!(crates[0].name, "core");
        assert!(crates[0].native_only.contains("fs"));
    }

    #[test]
    fn discovery_refuses_a_native_only_name_that_is_no_feature() {
        let metadata = serde_json::json!({
            "packages": [
                {"name": "core", "manifest_path": "/w/crates/core/Cargo.toml",
                 "targets": [{"kind": ["lib"]}], "features": {"fs": []},
                 "metadata": {"wasm-gate": {"native-only": ["fss"]}}}
            ]
        });
        let error = discover(&metadata, Path::new("/w")).unwrap_err();
        assert!(error.to_string().contains("`fss`"), "{error}");
    }

    #[test]
    fn options_parse() {
        assert_eq!(Options::parse(&[]).unwrap(), Some(Options { node: true }));
        assert_eq!(
            Options::parse(&["--no-node"]).unwrap(),
            Some(Options { node: false })
        );
        assert_eq!(Options::parse(&["--help"]).unwrap(), None);
        assert!(Options::parse(&["--nope"]).is_err());
    }
}
