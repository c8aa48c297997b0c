//! Tidy checks that the documents which describe the workspace agree with it, run as tests: the
//! README's crate table, the root manifest's layer comments and ARCHITECTURE.md's code map each
//! name every crate under `crates/` once, with the layer its manifest declares.
//!
//! Each check is a pure function over the documents' text and the crates' declared layers, so a
//! planted mismatch is tested as well as the real tree.

use std::collections::BTreeMap;

use crate::cargo::project_root;

/// Every crate under `crates/` and the layer its manifest declares (`[package.metadata] layer`).
fn declared_layers() -> BTreeMap<String, u64> {
    let root = project_root();
    let metadata = crate::cargo::metadata(&root).expect("cargo metadata runs");
    let crates_dir = root.join("crates");
    metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|package| {
            package["manifest_path"]
                .as_str()
                .is_some_and(|path| std::path::Path::new(path).starts_with(&crates_dir))
        })
        .map(|package| {
            let name = package["name"].as_str().unwrap_or_default().to_owned();
            let layer = package["metadata"]["layer"].as_u64().unwrap_or_else(|| {
                panic!("{name}: declare its layer in Cargo.toml ([package.metadata] layer = N)")
            });
            (name, layer)
        })
        .collect()
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(project_root().join(relative))
        .unwrap_or_else(|error| panic!("{relative}: {error}"))
}

/// The crates of the README's table (`| [`name`](crates/name) | layer | ... |`) with the layer
/// each row gives (`None` for a row whose layer is not a number). Rows for members outside
/// `crates/` (`xtask`, layer "tooling") are not crates of the layered graph and are skipped.
fn readme_rows(readme: &str) -> Vec<(String, Option<u64>)> {
    readme
        .lines()
        .filter_map(|line| {
            let mut cells = line.strip_prefix('|')?.split('|').map(str::trim);
            let name_cell = cells.next()?;
            let (name, link) = name_cell.strip_prefix("[`")?.split_once("`]")?;
            link.strip_prefix("(crates/")?;
            let layer = cells.next()?.parse().ok();
            Some((name.to_owned(), layer))
        })
        .collect()
}

/// The layer the root manifest's comments give each `crates/<name>` member: the last
/// "Layer N" said in the comment lines above it, within the `members` list.
fn manifest_comment_layers(manifest: &str) -> Vec<(String, Option<u64>)> {
    let mut in_members = false;
    let mut current = None;
    let mut members = Vec::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with("members") {
            in_members = true;
            continue;
        }
        if !in_members {
            continue;
        }
        if line.starts_with(']') {
            break;
        }
        if let Some(comment) = line.strip_prefix('#') {
            if let Some(layer) = layer_named_in(comment) {
                current = Some(layer);
            }
            continue;
        }
        if let Some(name) = line
            .trim_matches(|c| c == '"' || c == ',')
            .strip_prefix("crates/")
        {
            members.push((name.to_owned(), current));
        }
    }
    members
}

/// The N of the first "Layer N" in `comment`.
fn layer_named_in(comment: &str) -> Option<u64> {
    let at = comment.find("Layer ")?;
    let digits: String = comment[at + "Layer ".len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The crates ARCHITECTURE.md's code map has a section for (`### \`crates/name\`` headings, one
/// or several crates each).
fn architecture_sections(architecture: &str) -> Vec<String> {
    architecture
        .lines()
        .filter_map(|line| line.strip_prefix("### "))
        .flat_map(|heading| {
            heading
                .split('`')
                .filter_map(|part| part.strip_prefix("crates/"))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// What the rows of a document get wrong against the declared layers: crates missing, named
/// twice, unknown, or given another layer (`check_layers` false: only presence counts).
fn mismatches(
    document: &str,
    rows: &[(String, Option<u64>)],
    declared: &BTreeMap<String, u64>,
    check_layers: bool,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut seen = BTreeMap::new();
    for (name, layer) in rows {
        *seen.entry(name.as_str()).or_insert(0) += 1;
        match declared.get(name) {
            None => problems.push(format!("{document}: names `{name}`, which is not a crate")),
            Some(declared) if check_layers && *layer != Some(*declared) => problems.push(format!(
                "{document}: gives `{name}` layer {}, its manifest says {declared}",
                layer.map_or_else(|| "(none)".to_owned(), |l| l.to_string())
            )),
            Some(_) => {}
        }
    }
    for name in declared.keys() {
        match seen.get(name.as_str()) {
            None => problems.push(format!("{document}: has no entry for `{name}`")),
            Some(count) if *count > 1 => {
                problems.push(format!("{document}: names `{name}` {count} times"));
            }
            Some(_) => {}
        }
    }
    problems
}

#[test]
fn readme_crate_table_matches_the_workspace() {
    let problems = mismatches(
        "README.md",
        &readme_rows(&read("README.md")),
        &declared_layers(),
        true,
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn manifest_layer_comments_match_the_manifests() {
    let problems = mismatches(
        "Cargo.toml (members' layer comments)",
        &manifest_comment_layers(&read("Cargo.toml")),
        &declared_layers(),
        true,
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn architecture_maps_every_crate() {
    let sections: Vec<(String, Option<u64>)> = architecture_sections(&read("ARCHITECTURE.md"))
        .into_iter()
        .map(|name| (name, None))
        .collect();
    let problems = mismatches("ARCHITECTURE.md", &sections, &declared_layers(), false);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn planted_mismatches_are_caught() {
    let declared: BTreeMap<String, u64> = [("core".to_owned(), 1), ("top".to_owned(), 7)].into();
    let readme = "| crate | layer |\n|---|---|\n| [`core`](crates/core) | 1 | x |\n\
                  | [`top`](crates/top) | 6 | y |\n| [`gone`](crates/gone) | 2 | z |\n";
    let problems = mismatches("README", &readme_rows(readme), &declared, true);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].contains("`top` layer 6, its manifest says 7"));
    assert!(problems[1].contains("`gone`"));

    let missing = "| [`core`](crates/core) | 1 | x |\n";
    let problems = mismatches("README", &readme_rows(missing), &declared, true);
    assert_eq!(problems, ["README: has no entry for `top`"]);

    let manifest = "members = [\n    # Layer 1: the core.\n    \"crates/core\",\n    \
                    # Layer 6 too, native only.\n    \"crates/top\",\n]\n";
    let problems = mismatches(
        "manifest",
        &manifest_comment_layers(manifest),
        &declared,
        true,
    );
    assert_eq!(
        problems,
        ["manifest: gives `top` layer 6, its manifest says 7"]
    );

    let architecture = "### `crates/core`\n### `crates/core`, `crates/top`\n";
    let sections: Vec<_> = architecture_sections(architecture)
        .into_iter()
        .map(|name| (name, None))
        .collect();
    let problems = mismatches("ARCHITECTURE", &sections, &declared, false);
    assert_eq!(problems, ["ARCHITECTURE: names `core` 2 times"]);
}
