//! The four command-line tools, built once for the tests that run them side by side
//! (`cli_conventions`, `doc_examples`), and a scratch directory holding the sample inputs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use crate::cargo::{cargo, project_root};

/// The tools and the packages that build them.
pub(crate) const TOOLS: [(&str, &str); 4] = [
    ("alimentar", "envelope-cli"),
    ("apr", "envelope-cli"),
    ("fold", "fold-cli"),
    ("lineage", "lineage-cli"),
];

/// The directory holding the four binaries (debug profile), built on first use with
/// `cargo build` (a no-op when `cargo test --workspace` already built them).
pub(crate) fn bin_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let mut command = cargo();
        command.args(["build", "--quiet", "--message-format=json"]);
        for package in ["envelope-cli", "fold-cli", "lineage-cli"] {
            command.args(["-p", package]);
        }
        let output = command
            .current_dir(project_root())
            .stderr(Stdio::inherit())
            .output()
            .expect("cargo runs");
        assert!(output.status.success(), "building the CLIs failed");
        let mut found = BTreeMap::new();
        for line in String::from_utf8_lossy(&output.stdout).lines() {
            let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            if let Some(executable) = message["executable"].as_str() {
                let path = PathBuf::from(executable);
                if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
                    found.insert(name.to_owned(), path.clone());
                }
            }
        }
        let dir = found
            .get("alimentar")
            .and_then(|path| path.parent())
            .expect("cargo reported the alimentar binary")
            .to_path_buf();
        for (tool, _) in TOOLS {
            assert!(
                dir.join(tool).is_file(),
                "{tool} was not built in {}",
                dir.display()
            );
        }
        dir
    })
}

/// A scratch directory with the repository's samples under the names the docs use, and the
/// environment the tools read passwords from.
pub(crate) struct Scratch {
    dir: tempfile::TempDir,
}

/// The password every scratch key file is sealed with (`me.pw` holds it too).
pub(crate) const PASSWORD: &str = "correct horse battery staple";

impl Scratch {
    /// A new scratch directory with `data.csv`, `model.safetensors`, `numeric.csv`, `sales.csv`,
    /// `me.pw`, the `samples/dataset` tree as `dataset/`, the Hugging Face checkpoint
    /// `samples/tiny-llama` as `tiny-llama/`, and `splits.json`, `transforms.json`.
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let samples = project_root().join("samples");
        let copy = |from: &str, to: &str| {
            std::fs::copy(samples.join(from), dir.path().join(to))
                .unwrap_or_else(|error| panic!("copying samples/{from}: {error}"));
        };
        copy("dataset/measurements/part-0.csv", "data.csv");
        copy("numeric/measurements.csv", "numeric.csv");
        copy("sales.csv", "sales.csv");
        copy("model/tiny-mlp.safetensors", "model.safetensors");
        copy("splits.json", "splits.json");
        copy("transforms.json", "transforms.json");
        copy_tree(&samples.join("dataset"), &dir.path().join("dataset"));
        copy_tree(&samples.join("tiny-llama"), &dir.path().join("tiny-llama"));
        std::fs::write(dir.path().join("me.pw"), format!("{PASSWORD}\n")).expect("me.pw");
        Self { dir }
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A command for `tool` in the scratch directory, with cheap passwords from the environment
    /// and no terminal on stdin.
    pub(crate) fn tool(&self, tool: &str) -> Command {
        let mut command = Command::new(bin_dir().join(tool));
        self.environment(&mut command);
        command
    }

    /// `bash -c script` in the scratch directory, with the tools first on `PATH`.
    pub(crate) fn bash(&self, script: &str) -> Output {
        let mut command = Command::new("bash");
        command.args(["-c", script]);
        self.environment(&mut command);
        command.output().expect("bash runs")
    }

    fn environment(&self, command: &mut Command) {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![bin_dir().to_path_buf()];
        paths.extend(std::env::split_paths(&path));
        command
            .current_dir(self.path())
            .stdin(Stdio::null())
            .env("PATH", std::env::join_paths(paths).expect("a PATH"))
            .env("ALIMENTAR_PASSWORD", PASSWORD)
            .env("APR_PASSWORD", PASSWORD)
            .env("FOLD_PASSWORD", PASSWORD)
            .env("LINEAGE_PASSWORD", PASSWORD)
            .env_remove("CARGO_TARGET_DIR");
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("a directory");
    for entry in std::fs::read_dir(from).expect("samples are readable") {
        let entry = entry.expect("an entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("a type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("a copy");
        }
    }
}
