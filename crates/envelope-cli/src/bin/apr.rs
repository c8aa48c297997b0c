//! `apr`: create, inspect, protect, quantize and export `.apr` models.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use envelope_cli::security::{self, KeyOptions, SecurityCommand, Tool};
use envelope_cli::{finish, inspect};

/// Work with `.apr` models: weights in a verified, optionally encrypted and signed file.
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Verify a model file (magic, version, CRC32, every section bound) and show its header and
    /// sections. Constant memory for any file size; exits non-zero naming the Andon signal on
    /// failure. With --trusted-keys it also requires a valid signature; with a key or password it
    /// also decrypts and authenticates the payload.
    Inspect {
        /// The .apr file.
        file: PathBuf,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        keys: KeyOptions,
    },
    #[command(flatten)]
    Security(SecurityCommand),
}

fn main() -> ExitCode {
    let tool = Tool::APR;
    let outcome = match Cli::parse().command {
        Command::Inspect { file, json, keys } => inspect::run(&file, tool, json, &keys),
        Command::Security(command) => security::run(tool, command),
    };
    finish(tool.name, outcome)
}
