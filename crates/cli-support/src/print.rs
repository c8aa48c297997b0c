//! Results on stdout, without panicking when stdout is a closed pipe.
//!
//! `println!` panics when the reader has gone (`fold verify | head`): Rust ignores `SIGPIPE`, so
//! the write fails with `BrokenPipe`. Every result goes through [`line`](fn@line) (or [`say!`](crate::say)) and
//! [`json`], which return the error; [`crate::run::finish`] turns a `BrokenPipe` into a quiet exit
//! with status 0. Notes and warnings go to stderr and never fail the command.

use std::fmt::Display;
use std::io::{self, Write as _};

/// Writes `text` and a newline to stdout.
///
/// # Errors
/// The write's error (`BrokenPipe` when the reader has gone).
pub fn line(text: impl Display) -> io::Result<()> {
    writeln!(io::stdout().lock(), "{text}")
}

/// Writes `value` as pretty-printed JSON and a newline to stdout.
///
/// # Errors
/// As [`line`](fn@line).
pub fn json(value: &serde_json::Value) -> io::Result<()> {
    let mut out = io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, value).map_err(io::Error::from)?;
    writeln!(out)
}

/// Writes raw bytes to stdout (a chunk's content), then flushes.
///
/// # Errors
/// As [`line`](fn@line).
pub fn bytes(data: &[u8]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(data)?;
    out.flush()
}

/// A note for the user on stderr (what was written, what was kept), unless `--quiet`.
pub fn note(text: impl Display) {
    if !crate::run::mode().quiet {
        let _ = writeln!(io::stderr().lock(), "{text}");
    }
}

/// A warning on stderr, printed even with `--quiet`.
pub fn warn(text: impl Display) {
    let _ = writeln!(io::stderr().lock(), "warning: {text}");
}

/// `say!("{} rows", n)?`: [`line`](fn@line) with `format!` arguments.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::print::line(::std::format_args!($($arg)*))
    };
}
