//! What the end-to-end tests of `alimentar` and `apr` share: a scratch directory the binaries run
//! in (so file names are relative and a command line reads as one line), and the assertions on
//! what a command printed and how it exited (docs/cli.md: exit 0 success, 1 failure, 2 usage; one
//! line on stderr naming the failure's code right after the tool's name).

use std::path::Path;
use std::process::{Command, Output, Stdio};

pub(crate) const ALIMENTAR: &str = env!("CARGO_BIN_EXE_alimentar");
pub(crate) const APR: &str = env!("CARGO_BIN_EXE_apr");

/// Cheap Argon2id costs for tests (still within the reader limits).
pub(crate) const CHEAP_KDF: &str = "--argon2-m-kib 1024 --argon2-t 1";

/// A command line: a `&str` is split at white space (for the common case of arguments without
/// spaces); a slice or vector is taken as it is.
pub(crate) trait CommandLine {
    /// The arguments, in order.
    fn to_args(&self) -> Vec<String>;
}

impl CommandLine for &str {
    fn to_args(&self) -> Vec<String> {
        self.split_whitespace().map(str::to_owned).collect()
    }
}

impl CommandLine for String {
    fn to_args(&self) -> Vec<String> {
        self.as_str().to_args()
    }
}

impl CommandLine for &[&str] {
    fn to_args(&self) -> Vec<String> {
        self.iter().map(|arg| (*arg).to_owned()).collect()
    }
}

impl<const N: usize> CommandLine for [&str; N] {
    fn to_args(&self) -> Vec<String> {
        self.as_slice().to_args()
    }
}

impl CommandLine for Vec<String> {
    fn to_args(&self) -> Vec<String> {
        self.clone()
    }
}

impl CommandLine for Vec<&str> {
    fn to_args(&self) -> Vec<String> {
        self.as_slice().to_args()
    }
}

/// A temporary directory that the binaries run in.
pub(crate) struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    pub(crate) fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The absolute path of `name` in the directory.
    pub(crate) fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().unwrap().to_owned()
    }

    /// Writes `bytes` to `name` and returns its absolute path.
    pub(crate) fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> String {
        std::fs::write(self.path(name), bytes).unwrap();
        self.path(name)
    }

    pub(crate) fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.path(name)).unwrap()
    }

    pub(crate) fn exists(&self, name: &str) -> bool {
        self.dir.path().join(name).exists()
    }

    /// Runs `binary` in the directory, with no standard input and `env` added.
    pub(crate) fn run_env(
        &self,
        binary: &str,
        args: impl CommandLine,
        env: &[(&str, &str)],
    ) -> Output {
        let mut command = Command::new(binary);
        command
            .args(args.to_args())
            .current_dir(self.dir.path())
            .stdin(Stdio::null());
        for (key, value) in env {
            command.env(key, value);
        }
        command.output().expect("the binary runs")
    }

    pub(crate) fn run(&self, binary: &str, args: impl CommandLine) -> Output {
        self.run_env(binary, args, &[])
    }

    /// Runs a command that must succeed.
    pub(crate) fn succeeded(&self, binary: &str, args: impl CommandLine) -> Output {
        let args = args.to_args();
        let output = self.run(binary, args.clone());
        assert!(
            output.status.success(),
            "{binary} {args:?} failed: {}",
            stderr(&output)
        );
        output
    }

    /// Runs a command that must succeed; returns its standard output.
    pub(crate) fn ok(&self, binary: &str, args: impl CommandLine) -> String {
        String::from_utf8(self.succeeded(binary, args).stdout).unwrap()
    }

    /// Runs a writing command that must succeed; returns what it said on stderr (the note about
    /// its output, docs/cli.md).
    pub(crate) fn wrote(&self, binary: &str, args: impl CommandLine) -> String {
        String::from_utf8(self.succeeded(binary, args).stderr).unwrap()
    }

    /// Runs a command with `--json` output that must succeed; returns the document.
    pub(crate) fn json(&self, binary: &str, args: impl CommandLine) -> serde_json::Value {
        serde_json::from_str(&self.ok(binary, args)).unwrap()
    }

    /// Runs a command that must fail naming `needle` (see [`assert_fails_with`]); returns its
    /// message.
    pub(crate) fn refused(&self, binary: &str, args: impl CommandLine, needle: &str) -> String {
        let output = self.run(binary, args);
        assert_fails_with(&output, needle);
        stderr(&output)
    }

    /// `keygen -o NAME.key` with password `NAME-pw` in `NAME.pw`; the public key also goes to
    /// `trusted-NAME/NAME.pub`. Returns the key file's absolute path.
    pub(crate) fn keygen(&self, binary: &str, name: &str) -> String {
        self.write(&format!("{name}.pw"), format!("{name}-pw\n"));
        self.wrote(
            binary,
            format!("keygen -o {name}.key --password-file {name}.pw {CHEAP_KDF}"),
        );
        let trusted = self.path(&format!("trusted-{name}"));
        std::fs::create_dir_all(&trusted).unwrap();
        let key = self.path(&format!("{name}.key"));
        std::fs::copy(format!("{key}.pub"), format!("{trusted}/{name}.pub")).unwrap();
        key
    }
}

/// The options that unlock `NAME`'s key file made by [`Scratch::keygen`].
pub(crate) fn key_of(name: &str) -> String {
    format!("--key {name}.key --password-file {name}.pw")
}

/// The command failed with exit status 1 (2 for a usage error) and its one line names `needle`:
/// `SIGNAL: detail` matches the signal right after the tool's name and the detail anywhere after
/// it (the file the failure is about is named in between).
pub(crate) fn assert_fails_with(output: &Output, needle: &str) {
    let text = stderr(output);
    let status = if needle.starts_with("Usage") { 2 } else { 1 };
    assert_eq!(output.status.code(), Some(status), "{text}");
    let (code, detail) = needle.split_once(": ").unwrap_or((needle, ""));
    let after_tool = text.split_once(": ").map_or("", |(_, rest)| rest);
    assert!(after_tool.starts_with(code), "{needle}: {text}");
    assert!(text.contains(detail), "{needle}: {text}");
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs the interop venv's interpreter (`INTEROP_PYTHON`, made by `.ci/setup-python`) in `dir`
/// on an inline program (`-c CODE ARGS`; the scripts under `tests/python/` go through
/// `test_support::python_ok`); it must succeed. Returns its standard output.
pub(crate) fn python(dir: &Path, args: impl CommandLine) -> String {
    let interpreter = std::env::var("INTEROP_PYTHON")
        .expect("INTEROP_PYTHON names the interpreter of the interop venv");
    let args = args.to_args();
    let output = Command::new(interpreter)
        .current_dir(dir)
        .args(&args)
        .output()
        .expect("the interpreter runs");
    assert!(
        output.status.success(),
        "python {:?}:\n{}\n{}",
        args.get(..2),
        String::from_utf8_lossy(&output.stdout),
        stderr(&output)
    );
    String::from_utf8(output.stdout).unwrap()
}
