//! Project automation, run as `cargo xtask <command>` (the alias is in `.cargo/config.toml`).
//!
//! Commands are Rust code rather than shell scripts so they run the same on every machine and are
//! reviewed like the rest of the project (rust-analyzer's convention). Cargo is always called
//! through `$CARGO`, so the toolchain pinned in `rust-toolchain.toml` is the one that runs.
//!
//! - `wasm-gate`: see [`wasm_gate`].
//! - `regenerate WHAT`, `fuzz-seeds TARGET`: the generators of checked-in test data, see
//!   [`regenerate`].
//!
//! Tidy checks (every module opens with `//!`, ...) are `#[test]`s in `tidy.rs`, run by
//! `cargo test -p xtask`.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool reports on the terminal"
)]

mod cargo;
#[cfg(test)]
mod cli_binaries;
#[cfg(test)]
mod cli_conventions;
#[cfg(test)]
mod doc_examples;
mod regenerate;
#[cfg(test)]
mod tidy;
mod wasm_gate;

use std::process::ExitCode;

fn help() -> String {
    format!(
        "{HELP}\n\nregenerate WHAT (review `git diff` afterwards):\n{}\n\nfuzz-seeds TARGET:\n{}",
        regenerate::help("regenerate"),
        regenerate::help("fuzz-seeds")
    )
}

const HELP: &str = "\
cargo xtask <command>

Commands:
  wasm-gate [--no-node]   Check every library crate under crates/ for wasm32-unknown-unknown with
                          --no-default-features, each format-* feature, all of them, and the
                          defaults minus native-only features; enforce the wasm32 dependency
                          policy; then run the native <-> wasm32 round trip under Node.js.
                          --no-node skips the round trip (quick local use only; CI runs it).
                          Node is `$NODE` if set, else `node` on PATH.
  regenerate WHAT         Rewrite a crate's checked-in known-answer vectors or golden files
                          (generators never run as tests; see the list below).
  fuzz-seeds TARGET       Write the seed inputs of a fuzz target into fuzz/corpus/TARGET.
  help, --help            This text.

Tidy checks run as tests: cargo test -p xtask";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        [] | ["help" | "--help" | "-h"] => {
            println!("{}", help());
            return ExitCode::SUCCESS;
        }
        ["wasm-gate", flags @ ..] => match wasm_gate::Options::parse(flags) {
            Ok(Some(options)) => wasm_gate::run(&options),
            Ok(None) => {
                println!("{}", help());
                return ExitCode::SUCCESS;
            }
            Err(error) => Err(error),
        },
        [kind @ ("regenerate" | "fuzz-seeds"), name] => regenerate::run(kind, name),
        [other, ..] => Err(anyhow::anyhow!("unknown command `{other}`\n\n{}", help())),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("xtask: {error:#}");
            ExitCode::FAILURE
        }
    }
}
