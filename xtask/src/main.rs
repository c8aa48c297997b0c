//! Project automation, run as `cargo xtask <command>` (the alias is in `.cargo/config.toml`).
//!
//! Commands are Rust code rather than shell scripts so they run the same on every machine and are
//! reviewed like the rest of the project (rust-analyzer's convention). Cargo is always called
//! through `$CARGO`, so the toolchain pinned in `rust-toolchain.toml` is the one that runs.
//!
//! - `wasm-gate`: see [`wasm_gate`].
//! - `regenerate WHAT`, `fuzz-seeds TARGET`: the generators of checked-in test data, see
//!   [`regenerate`] and, for the interchange fuzz targets, [`fuzz_seeds_interchange`].
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
mod fuzz_seeds_interchange;
mod regenerate;
#[cfg(test)]
mod tidy;
#[cfg(test)]
mod tidy_docs;
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
  fuzz-seeds TARGET|all [--python PATH]
                          For the interchange targets (arrow_file, arrow_stream, parquet_reader,
                          csv_reader, jsonl_reader, safetensors_import): files written by pyarrow,
                          pandas and safetensors (Python: --python, $INTEROP_PYTHON or
                          .venv/bin/python) and by our own writers (alimentar, apr).
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
        ["regenerate", name] => regenerate::run("regenerate", name),
        ["fuzz-seeds", name] if regenerate::has("fuzz-seeds", name) => {
            regenerate::run("fuzz-seeds", name)
        }
        ["fuzz-seeds", args @ ..] => match fuzz_seeds_interchange::Options::parse(args) {
            Ok(Some(options)) => fuzz_seeds_interchange::run(&options),
            Ok(None) => {
                println!("{}", help());
                return ExitCode::SUCCESS;
            }
            Err(error) => Err(error),
        },
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
