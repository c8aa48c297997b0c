//! The wasm32 dependency policy, read from `cargo tree` output.
//!
//! Key decision: the tree is read with its edges, not as a flat list. `cargo tree --prefix none`
//! would mix what is linked into the wasm module with what only runs on the host (build scripts
//! and their dependencies), and `cc` means different things in the two places: as a
//! build-dependency of a crate linked into wasm it compiles C *for wasm32*; as a dependency of a
//! host tool it compiles C for the host, which is harmless. So the indented tree is parsed, and
//! every node is placed:
//!
//! - [`Place::Wasm`]: reached from the root through normal edges only; linked into the module.
//! - [`Place::BuildScriptOfWasm`]: reached through a build edge from a `Wasm` node, then normal
//!   edges; runs on the host but acts on the wasm32 target (this is where `cc` compiles for it).
//! - [`Place::Host`]: anything else (build-dependencies of build-dependencies, ...).
//!
//! Proc-macros are left out of the tree (`-e no-proc-macro`): they and their dependencies run only
//! in the compiler. The tree is not de-duplicated (`--no-dedupe`), so a package shown under one
//! place still has its subtree shown under every other.

use crate::wasm_gate::WASM_TARGET;

/// Crates that must never be linked into the wasm module: C crypto, or runtimes that assume
/// threads and an OS (the foundation issue's list).
const FORBIDDEN: &[(&str, &str)] = &[
    ("ring", "C and assembly crypto"),
    ("openssl", "binds the C OpenSSL"),
    ("openssl-sys", "links the C OpenSSL"),
    ("rayon", "needs threads"),
    ("tokio", "needs an OS runtime"),
];

/// `-sys` crates that link no C: Rust bindings to the JavaScript host (wasm-bindgen).
const PURE_RUST_SYS: &[&str] = &["js-sys", "web-sys"];

/// Build-dependencies that compile or locate C for the target their build script runs for.
const C_BUILDERS: &[&str] = &["cc", "cmake", "pkg-config"];

/// Where a package of the tree ends up (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Linked into the wasm module.
    Wasm,
    /// In the build script of a crate linked into the wasm module.
    BuildScriptOfWasm,
    /// Only on the host.
    Host,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Edge {
    Normal,
    Build,
    Other,
}

/// The `cargo tree` arguments (before the feature flags) whose output [`violations`] reads.
pub(crate) fn tree_args(package: &str) -> Vec<String> {
    [
        "tree",
        "-p",
        package,
        "--target",
        WASM_TARGET,
        "-e",
        "normal,build,no-proc-macro",
        "--no-dedupe",
        "--prefix",
        "indent",
        "--charset",
        "ascii",
        "--format",
        "{p}|{f}",
    ]
    .iter()
    .map(|arg| (*arg).to_owned())
    .collect()
}

/// A package line of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Node {
    /// Package name.
    pub(crate) name: String,
    /// Version without the `v`.
    pub(crate) version: String,
    /// Enabled features.
    pub(crate) features: Vec<String>,
    /// Where it ends up.
    pub(crate) place: Place,
    /// Name of the package that depends on it (empty for the root).
    pub(crate) parent: String,
}

/// Parses `cargo tree` output made with [`tree_args`] into placed nodes.
pub(crate) fn parse(tree: &str) -> Vec<Node> {
    struct Frame {
        name: String,
        place: Place,
        child_edge: Edge,
    }
    let mut stack: Vec<Frame> = Vec::new();
    let mut nodes = Vec::new();
    for line in tree.lines() {
        // ASCII prefixes are 4 columns per level: "|-- ", "`-- ", "|   ", "    ".
        let Some(column) = line.find(|c: char| !matches!(c, '|' | '`' | '-' | ' ')) else {
            continue;
        };
        let depth = column / 4;
        let text = &line[column..];
        if text.starts_with('[') {
            // "[build-dependencies]" at the children's column of the node at `depth`.
            if let Some(frame) = stack.get_mut(depth) {
                frame.child_edge = match text {
                    "[build-dependencies]" => Edge::Build,
                    "[dependencies]" => Edge::Normal,
                    _ => Edge::Other,
                };
            }
            continue;
        }
        stack.truncate(depth);
        let (place, parent) = match stack.last() {
            None => (Place::Wasm, String::new()),
            Some(parent) => {
                let place = match (parent.place, parent.child_edge) {
                    (Place::Wasm, Edge::Normal) => Place::Wasm,
                    (Place::Wasm, Edge::Build) | (Place::BuildScriptOfWasm, Edge::Normal) => {
                        Place::BuildScriptOfWasm
                    }
                    _ => Place::Host,
                };
                (place, parent.name.clone())
            }
        };
        let text = text.trim_end().trim_end_matches("(*)").trim_end();
        let (package, features) = text.rsplit_once('|').unwrap_or((text, ""));
        let mut words = package.split_whitespace();
        let name = words.next().unwrap_or_default().to_owned();
        let version = words
            .next()
            .unwrap_or_default()
            .trim_start_matches('v')
            .to_owned();
        let features = features
            .split(',')
            .map(str::trim)
            .filter(|feature| !feature.is_empty())
            .map(str::to_owned)
            .collect();
        stack.push(Frame {
            name: name.clone(),
            place,
            child_edge: Edge::Normal,
        });
        nodes.push(Node {
            name,
            version,
            features,
            place,
            parent,
        });
    }
    nodes
}

/// Every policy violation in `tree` (the output of `cargo tree` with [`tree_args`]), one line
/// each, de-duplicated.
pub(crate) fn violations(tree: &str) -> Vec<String> {
    let mut out: Vec<String> = parse(tree).iter().filter_map(violation).collect();
    out.sort();
    out.dedup();
    out
}

fn violation(node: &Node) -> Option<String> {
    let Node {
        name,
        version,
        parent,
        ..
    } = node;
    match node.place {
        Place::Wasm => {
            if let Some((_, why)) = FORBIDDEN.iter().find(|(forbidden, _)| forbidden == name) {
                return Some(format!(
                    "{name} v{version} is linked into wasm32 ({why}), via {parent}"
                ));
            }
            if name.ends_with("-sys") && !PURE_RUST_SYS.contains(&name.as_str()) {
                return Some(format!(
                    "{name} v{version} links C into wasm32 (a -sys crate), via {parent}"
                ));
            }
            if name == "getrandom" {
                return getrandom_without_backend(node);
            }
            None
        }
        Place::BuildScriptOfWasm if C_BUILDERS.contains(&name.as_str()) => Some(format!(
            "{name} v{version} is in the build script of {parent}, which is linked into wasm32: C built for wasm32"
        )),
        Place::BuildScriptOfWasm | Place::Host => None,
    }
}

/// getrandom has no entropy source on wasm32-unknown-unknown unless its browser backend is on.
fn getrandom_without_backend(node: &Node) -> Option<String> {
    let mut parts = node.version.split('.');
    let major = parts.next().unwrap_or_default();
    let minor: u32 = parts.next().unwrap_or_default().parse().unwrap_or(0);
    let backend = match (major, minor) {
        ("0", 0 | 1) => "wasm-bindgen",
        ("0", 2) => "js",
        _ => "wasm_js",
    };
    if node.features.iter().any(|feature| feature == backend) {
        return None;
    }
    Some(format!(
        "getrandom v{} is linked into wasm32 without its browser backend (feature `{backend}`), via {}",
        node.version, node.parent
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOLD_LIKE: &str = "\
fold v0.1.0 (/w/crates/fold)|default,zstd
|-- crc32c v0.6.9|
|   [build-dependencies]
|   `-- rustc_version v0.4.1|
|       `-- semver v1.0.28|default,std
|-- ed25519-dalek v2.2.0|alloc,std
|   `-- curve25519-dalek v4.1.3|alloc
|       `-- cfg-if v1.0.5|
`-- ruzstd v0.9.1|std
";

    #[test]
    fn places_follow_the_edges() {
        let places: Vec<(String, Place, String)> = parse(FOLD_LIKE)
            .into_iter()
            .map(|node| (node.name, node.place, node.parent))
            .collect();
        let expected = [
            ("fold", Place::Wasm, ""),
            ("crc32c", Place::Wasm, "fold"),
            ("rustc_version", Place::BuildScriptOfWasm, "crc32c"),
            ("semver", Place::BuildScriptOfWasm, "rustc_version"),
            ("ed25519-dalek", Place::Wasm, "fold"),
            ("curve25519-dalek", Place::Wasm, "ed25519-dalek"),
            ("cfg-if", Place::Wasm, "curve25519-dalek"),
            ("ruzstd", Place::Wasm, "fold"),
        ]
        .map(|(name, place, parent)| (name.to_owned(), place, parent.to_owned()));
        assert_eq!(places, expected);
        assert!(violations(FOLD_LIKE).is_empty());
    }

    #[test]
    fn forbidden_and_sys_crates_linked_into_wasm_fail() {
        let tree = "\
core v0.1.0 (/w/crates/core)|
|-- zstd v0.13.3|
|   `-- zstd-safe v7.2.4|
|       `-- zstd-sys v2.0.16+zstd.1.5.7|
|           [build-dependencies]
|           `-- cc v1.2.0|
|-- rayon v1.10.0|
`-- js-sys v0.3.77|
";
        let found = violations(tree);
        assert_eq!(found.len(), 3, "{found:#?}");
        assert!(found.iter().any(|v| v.starts_with("rayon")));
        assert!(found.iter().any(|v| v.starts_with("zstd-sys")));
        assert!(
            found
                .iter()
                .any(|v| v.starts_with("cc ") && v.contains("zstd-sys"))
        );
    }

    #[test]
    fn c_builders_on_the_host_only_are_fine() {
        let tree = "\
core v0.1.0 (/w/crates/core)|
`-- thing v1.0.0|
    [build-dependencies]
    `-- helper v1.0.0|
        [build-dependencies]
        `-- cc v1.2.0|
";
        let nodes = parse(tree);
        assert_eq!(nodes[2].place, Place::BuildScriptOfWasm);
        assert_eq!(nodes[3].place, Place::Host);
        assert!(violations(tree).is_empty());
    }

    #[test]
    fn getrandom_needs_its_browser_backend() {
        let with = |line: &str| format!("core v0.1.0 (/w/crates/core)|\n`-- {line}\n");
        assert_eq!(violations(&with("getrandom v0.2.15|std")).len(), 1);
        assert!(violations(&with("getrandom v0.2.15|js,std")).is_empty());
        assert_eq!(violations(&with("getrandom v0.3.3|js")).len(), 1);
        assert!(violations(&with("getrandom v0.3.3|wasm_js")).is_empty());
    }

    #[test]
    fn a_build_only_getrandom_does_not_count() {
        let tree = "\
core v0.1.0 (/w/crates/core)|
[build-dependencies]
`-- getrandom v0.2.15|std
";
        assert!(violations(tree).is_empty());
    }
}
