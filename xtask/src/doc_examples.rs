//! Every command example in `README.md` and `docs/*.md` runs: each fenced ```` ```bash ```` block
//! is a script, run with `set -euo pipefail` in a scratch directory holding the samples under the
//! names the docs use (`data.csv`, `model.safetensors`, `dataset/`, `me.pw`, ...; see
//! [`crate::cli_binaries::Scratch`]) and the four tools on `PATH`. The blocks of one page run in
//! order in one directory, so a later example may use what an earlier one wrote.
//!
//! Blocks about the repository itself (building, CI, fuzzing) are fenced ```` ```sh ```` and are not
//! run here: CI runs them directly.

use std::path::{Path, PathBuf};

use crate::cargo::project_root;
use crate::cli_binaries::Scratch;

/// The fenced `bash` blocks of `markdown`, with the line each starts on.
fn bash_blocks(markdown: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (number, line) in markdown.lines().enumerate() {
        let fence = line.trim_start();
        match &mut current {
            None if fence == "```bash" => current = Some((number + 1, String::new())),
            Some(_) if fence.starts_with("```") => blocks.extend(current.take()),
            Some((_, text)) => {
                text.push_str(line);
                text.push('\n');
            }
            None => {}
        }
    }
    blocks
}

/// README.md and every page of docs/.
fn pages() -> Vec<PathBuf> {
    let root = project_root();
    let mut pages = vec![root.join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

fn run_page(page: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(page).expect("the page is readable");
    let scratch = Scratch::new();
    let mut failures = Vec::new();
    for (line, block) in bash_blocks(&text) {
        let output = scratch.bash(&format!("set -euo pipefail\n{block}"));
        if !output.status.success() {
            failures.push(format!(
                "{}:{line}: exit {:?}\n--- block ---\n{block}--- stdout ---\n{}--- stderr ---\n{}",
                page.strip_prefix(project_root()).unwrap_or(page).display(),
                output.status.code(),
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr),
            ));
        }
    }
    failures
}

#[test]
fn fences_are_found_in_order() {
    let blocks = bash_blocks("a\n```bash\nx\ny\n```\n```sh\nz\n```\n  ```bash\nw\n  ```\n");
    assert_eq!(blocks, [(2, "x\ny\n".to_owned()), (9, "w\n".to_owned())]);
}

#[test]
fn every_bash_example_in_the_readme_and_docs_runs() {
    let mut failures = Vec::new();
    let mut blocks = 0;
    for page in pages() {
        blocks += bash_blocks(&std::fs::read_to_string(&page).unwrap_or_default()).len();
        failures.extend(run_page(&page));
    }
    assert!(
        blocks >= 2,
        "the docs have command examples ({blocks} found)"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
