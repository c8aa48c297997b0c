//! `-o/--output` and `--force`: where a command writes, checked before any work is done.
//!
//! The rules are [`output_file`]'s (atomic replacement of regular files only; devices and FIFOs
//! written in place; permissions from the umask, `0600` for private outputs; temporary files
//! removed on every exit path). What this module adds is the command line's side: `-` means
//! stdout, binary data is never written to a terminal, and an existing output is kept unless the
//! user passed `--force`, which is said before a long conversion starts, not after.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use clap::Args;
pub use output_file::{Access, Destination, Existing};

/// The `--force` flag of every command that writes a file.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct Force {
    /// Replace an output that already exists (atomically: the old file stays intact until the
    /// new one is complete). Without it an existing output is never touched.
    #[arg(long)]
    pub force: bool,
}

/// What a command writes to its output, which decides whether it may go to a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Content {
    /// Text meant for people or scripts (CSV, JSONL, JSON).
    Text,
    /// Anything else (`.ald`, `.apr`, `.fold`, Parquet, GGUF, a chunk's raw bytes).
    Binary,
}

/// The destination `path` names: standard output for `-`, else the file, with `--force` deciding
/// whether an existing one may be replaced. Checked now: an existing output without `--force`, a
/// directory, a symlink to nothing, or binary data for a terminal fails here, before any input is
/// read.
///
/// # Errors
/// `Usage` for binary data to a terminal; the check's error, naming the path.
pub fn destination(
    path: &Path,
    force: Force,
    access: Access,
    content: Content,
) -> anyhow::Result<Destination> {
    if path.as_os_str() == "-" {
        if content == Content::Binary && std::io::stdout().is_terminal() {
            anyhow::bail!(
                "Usage: refusing to write binary data to a terminal; redirect stdout or name a \
                 file with -o"
            );
        }
        return Ok(Destination::stdout().access(access));
    }
    let destination = Destination::new(path)
        .existing(Existing::replace_if(force.force))
        .access(access);
    destination
        .check()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(destination)
}

/// The destination of a command that rewrites its input in place (`sign`, `encrypt`, `license`
/// without `-o`): replaced atomically, so an interruption leaves the old file whole.
#[must_use]
pub fn in_place(path: &Path, access: Access) -> Destination {
    Destination::new(path)
        .existing(Existing::Replace)
        .access(access)
}

/// The output of a command that writes either to `-o OUT` (checked with `force`) or, without it,
/// back over its input in place.
///
/// # Errors
/// As [`destination`].
pub fn output_or_in_place(
    output: Option<&Path>,
    input: &Path,
    force: Force,
    access: Access,
) -> anyhow::Result<Destination> {
    match output {
        Some(path) => destination(path, force, access, Content::Binary),
        None => Ok(in_place(input, access)),
    }
}

/// The arguments of a command that rewrites FILE: without `-o`, FILE is replaced atomically by
/// the result; with `-o OUT` (`-` for stdout) FILE is left as it is and OUT is written, an existing
/// one only with `--force`.
#[derive(Debug, Clone, Args)]
pub struct InPlace {
    /// The file to read (and, without -o, to replace).
    pub file: PathBuf,
    /// Write the result to OUT (`-` for stdout) instead of replacing FILE.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Replace an existing output (`--force`).
    #[command(flatten)]
    pub force: Force,
}

impl InPlace {
    /// Where the result goes: see [`output_or_in_place`].
    ///
    /// # Errors
    /// As [`destination`].
    pub fn target(&self, access: Access) -> anyhow::Result<Destination> {
        output_or_in_place(self.output.as_deref(), &self.file, self.force, access)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_output_needs_force_and_the_message_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.ald");
        std::fs::write(&path, b"x").unwrap();
        let error =
            destination(&path, Force::default(), Access::Shared, Content::Binary).unwrap_err();
        let line = crate::run::error_line(&error);
        assert!(line.contains("out.ald"), "{line}");
        assert!(line.ends_with("(pass --force to replace it)"), "{line}");
        assert!(
            destination(
                &path,
                Force { force: true },
                Access::Shared,
                Content::Binary
            )
            .is_ok()
        );
    }

    #[test]
    fn a_dash_is_standard_output() {
        let destination = destination(
            Path::new("-"),
            Force::default(),
            Access::Shared,
            Content::Text,
        )
        .unwrap();
        assert!(destination.is_stdout());
    }
}
