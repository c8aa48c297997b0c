//! `alimentar`: create, inspect, protect and read `.ald` datasets.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use envelope_cli::security::{self, KeyOptions, SecurityCommand, Tool};
use envelope_cli::{finish, inspect};

/// Work with `.ald` datasets: Arrow tables in a verified, optionally encrypted and signed file.
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Verify a file (magic, version, CRC32, every section bound) and show its header and sections.
    ///
    /// Reads only the header and section lengths and streams the rest through the checksum, so it
    /// works on files of any size in constant memory. Exits non-zero, naming the Andon signal
    /// (InvalidFormat, ChecksumMismatch, UnsupportedVersion, ...), if the file fails a check.
    /// With --trusted-keys it also requires a valid signature; with a key or password it also
    /// decrypts and authenticates the payload.
    Info {
        /// The .ald file.
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
    let tool = Tool::ALIMENTAR;
    let outcome = match Cli::parse().command {
        Command::Info { file, json, keys } => inspect::run(&file, tool, json, &keys),
        Command::Security(command) => security::run(tool, command),
    };
    finish(tool.name, outcome)
}
