//! What the four command-line tools (`alimentar`, `apr`, `fold`, `lineage`) share, so that they
//! follow one convention (`docs/cli.md`) and treat a user's files the way `cp`, `cargo` and `age`
//! do:
//!
//! - [`run`]: the global `--json` and `--quiet` options, the interrupt handler that removes
//!   temporary files, and [`run::finish`]: one line on stderr naming what failed, a JSON error
//!   object with `--json`, exit codes 0 / 1 / 2, and a quiet exit 0 when stdout is a closed pipe
//!   (`fold verify | head`).
//! - [`print`](mod@print): writing results to stdout without panicking on a closed pipe
//!   ([`say!`](crate::say)).
//! - [`output`]: `-o/--output` (with `-` for stdout) and `--force`, turned into an
//!   [`output_file::Destination`] checked before any work is done.
//! - [`terminal`]: text that came from a file, escaped so it cannot drive the terminal.
//! - [`progress`]: progress bars on stderr, only on a terminal and never with `--quiet`.
//! - [`keys`]: where passwords come from, and private, public and trusted key files with errors
//!   that say which one is wrong.
//!
//! Binaries stay thin: this crate holds presentation and conventions only; every check and every
//! byte written comes from the library crates.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the one place the tools write to the terminal"
)]

pub mod keys;
pub mod output;
pub mod print;
pub mod progress;
pub mod run;
pub mod terminal;
