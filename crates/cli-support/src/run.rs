//! Running one command: the global options, the interrupt handler, and how its outcome becomes
//! an exit status and (at most) one line on stderr.
//!
//! Exit status (docs/cli.md): 0 success; 1 the operation failed (a check failed, an I/O error, an
//! output that exists and was not replaced); 2 usage (arguments clap refuses, or values the
//! command refuses: the message starts with `Usage:`); 130 interrupted. `lineage` adds 3 (stopped
//! by `--stop-after`, resumable). A closed stdout (`fold verify | head`) ends the command quietly
//! with status 0, as `cat` and `ripgrep` do.

use std::io::{self, Write as _};
use std::process::ExitCode;
use std::sync::OnceLock;

use clap::Args;

/// The options every command of every tool takes (flattened into each tool's top-level parser
/// with `global = true`, so they may be given before or after the subcommand).
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct GlobalArgs {
    /// Print exactly one JSON document on stdout: the result, or on failure
    /// {"ok": false, "error": {"code", "message"}}. The one-line error still goes to stderr.
    #[arg(long, global = true)]
    pub json: bool,
    /// Print only results and errors: no progress bars, no notes on stderr.
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
}

static MODE: OnceLock<GlobalArgs> = OnceLock::new();

impl GlobalArgs {
    /// Makes these options the process's (read back with [`mode`]) and installs the interrupt
    /// handler ([`install_interrupt_handler`]). Call once, first thing in `main`.
    pub fn install(self) {
        let _ = MODE.set(self);
        install_interrupt_handler();
    }
}

/// The global options in effect (defaults before [`GlobalArgs::install`]).
#[must_use]
pub fn mode() -> GlobalArgs {
    MODE.get().copied().unwrap_or_default()
}

/// Exit status of an interrupted command (128 + SIGINT, the shells' convention).
pub const EXIT_INTERRUPTED: i32 = 130;

/// On Ctrl-C, `SIGTERM` or `SIGHUP`: remove every temporary file and directory still in flight
/// ([`output_file::remove_temporary_files_and_exit`]) and exit with 130. Outputs already renamed
/// into place are complete; nothing half-written remains. The handler runs on a thread of its
/// own, not in signal context.
pub fn install_interrupt_handler() {
    // Fails only if a handler is already installed, which is then the one in effect.
    let _ = ctrlc::set_handler(|| output_file::remove_temporary_files_and_exit(EXIT_INTERRUPTED));
}

/// The one line printed for a failure: the error's chain joined with ": ", skipping a cause whose
/// text the previous one already ends with (envelope errors quote their cause), with a hint where
/// one helps (`--force` for an existing output).
#[must_use]
pub fn error_line(error: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if message.ends_with(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    if has_io_kind(error, io::ErrorKind::AlreadyExists) && !message.contains("--force") {
        message.push_str(" (pass --force to replace it)");
    }
    crate::terminal::escape(&message).into_owned()
}

fn has_io_kind(error: &anyhow::Error, kind: io::ErrorKind) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<io::Error>()
            .is_some_and(|io| io.kind() == kind)
    })
}

/// Whether the command failed because stdout (or stderr) was closed under it.
#[must_use]
pub fn is_broken_pipe(error: &anyhow::Error) -> bool {
    has_io_kind(error, io::ErrorKind::BrokenPipe)
}

/// `line` with the failure's `code` first, so that scripts and people read what failed before
/// where: `damaged.ald: ChecksumMismatch: CRC32 ...` becomes
/// `ChecksumMismatch: damaged.ald: CRC32 ...`. A line that does not quote the code as `CODE: ` is
/// left as it is.
#[must_use]
pub fn code_first(line: &str, code: &str) -> String {
    if line.starts_with(code) {
        return line.to_owned();
    }
    let marker = format!("{code}: ");
    match line.find(&marker) {
        Some(at) => format!("{marker}{}{}", &line[..at], &line[at + marker.len()..]),
        None => line.to_owned(),
    }
}

/// The exit status for a failed command: 2 when the message says the command line is wrong
/// (`Usage:`), else 1.
#[must_use]
pub fn failure_status(line: &str) -> u8 {
    if line.starts_with("Usage") { 2 } else { 1 }
}

/// Turns a command's outcome into the exit status, printing what the user needs: nothing on
/// success (the command printed its result), one line `tool: message` on stderr on failure, and
/// with `--json` also `{"ok": false, "error": {"code", "message"}}` on stdout. `code` names the
/// failure for scripts (the Andon signal, the `.fold` rule, the lineage failure code); it
/// defaults to the message's first word.
pub fn finish(
    tool: &str,
    outcome: anyhow::Result<ExitCode>,
    code: impl Fn(&anyhow::Error) -> Option<String>,
) -> ExitCode {
    finish_with(tool, outcome, |error| Failure {
        code: code(error),
        usage: None,
    })
}

/// How a tool classifies one of its failures for [`finish_with`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Failure {
    /// The code scripts see (see [`finish`]).
    pub code: Option<String>,
    /// Whether it is a usage error (exit 2); `None` decides by the message (`Usage:` first).
    pub usage: Option<bool>,
}

/// [`finish`], with the tool deciding both the code and whether a failure is a usage error.
pub fn finish_with(
    tool: &str,
    outcome: anyhow::Result<ExitCode>,
    classify: impl Fn(&anyhow::Error) -> Failure,
) -> ExitCode {
    let error = match outcome {
        Ok(status) => return status,
        Err(error) => error,
    };
    if is_broken_pipe(&error) {
        return ExitCode::SUCCESS;
    }
    let Failure { code, usage } = classify(&error);
    let raw = error_line(&error);
    // Decided before the code is moved first: unless the tool says, a usage error is one whose
    // outermost message says so (the tool's own argument checks, or a library refusing the
    // request itself); a library error about the content, wrapped in the tool's context, is a
    // failure even if its signal is `Usage`.
    let status = match usage {
        Some(true) => 2,
        Some(false) => 1,
        None => failure_status(&raw),
    };
    let line = match &code {
        Some(code) => code_first(&raw, code),
        None => raw,
    };
    if mode().json {
        let code =
            code.unwrap_or_else(|| line.split([':', ' ']).next().unwrap_or_default().to_owned());
        let value = serde_json::json!({
            "ok": false,
            "error": { "code": code, "message": line },
        });
        let _ = writeln!(io::stdout().lock(), "{value}");
    }
    let _ = writeln!(io::stderr().lock(), "{tool}: {line}");
    ExitCode::from(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_skips_causes_already_quoted_and_hints_at_force() {
        let io = io::Error::new(io::ErrorKind::AlreadyExists, "out.ald already exists");
        let error = anyhow::Error::new(io).context("writing out.ald");
        assert_eq!(
            error_line(&error),
            "writing out.ald: out.ald already exists (pass --force to replace it)"
        );
        let error = anyhow::anyhow!("InvalidFormat: bad magic").context("InvalidFormat: bad magic");
        assert_eq!(error_line(&error), "InvalidFormat: bad magic");
    }

    #[test]
    fn a_broken_pipe_anywhere_in_the_chain_is_recognized() {
        let error = anyhow::Error::new(io::Error::from(io::ErrorKind::BrokenPipe)).context("ls");
        assert!(is_broken_pipe(&error));
        assert!(!is_broken_pipe(&anyhow::anyhow!("other")));
    }

    #[test]
    fn the_code_comes_first_and_the_file_stays_named() {
        assert_eq!(
            code_first(
                "damaged.ald: ChecksumMismatch: CRC32 differs",
                "ChecksumMismatch"
            ),
            "ChecksumMismatch: damaged.ald: CRC32 differs"
        );
        assert_eq!(code_first("Io: x: gone", "Io"), "Io: x: gone");
        assert_eq!(code_first("x.apr: gone", "Io"), "x.apr: gone");
    }

    #[test]
    fn usage_errors_exit_2_and_others_1() {
        assert_eq!(failure_status("Usage: --expires is not in the future"), 2);
        assert_eq!(failure_status("ChecksumMismatch: ..."), 1);
    }

    #[test]
    fn control_characters_in_messages_are_escaped() {
        let error = anyhow::anyhow!("InvalidFormat: column \u{1b}]0;pwned\u{7} is bad");
        assert_eq!(
            error_line(&error),
            "InvalidFormat: column \\x1b]0;pwned\\x07 is bad"
        );
    }
}
