//! `alimentar`: create, inspect, protect and read `.ald` datasets.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use envelope_cli::dataset::{self, ConvertArgs, HeadArgs, SchemaArgs};
use envelope_cli::piracy::{self, MarkArgs, PiracyCommand};
use envelope_cli::security::{self, KeyOptions, SecurityCommand, Tool};
use envelope_cli::{CommonArgs, finish};

/// Create, inspect, protect and read .ald datasets: Arrow tables in one file that proves where it
/// came from (Ed25519), who may open it (AES-256-GCM) and that not one bit changed (CRC32).
///
/// Every command takes --json (one JSON document on stdout) and --quiet. Outputs are written
/// atomically and never replace an existing file without --force. Exit status: 0 success,
/// 1 failure (the message starts with the check that failed: InvalidFormat, ChecksumMismatch,
/// SignatureInvalid, ...), 2 usage. Conventions: docs/cli.md.
#[derive(Parser)]
#[command(name = "alimentar", version, long_about)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Verify a file and show its header, flags, sections, signer, license, dataset card,
    /// schema and chunks.
    ///
    /// The file is memory-mapped. A STREAMING or TRUENO_NATIVE file is checked through the CRC-32C
    /// of its header and indexes only, so the answer takes milliseconds for any size; --verify
    /// reads and checks every byte. Other files are checked whole (magic, version, CRC32, every
    /// section bound). Exits non-zero, naming the Andon signal (InvalidFormat, ChecksumMismatch,
    /// UnsupportedVersion, ...), if the file fails a check. With --trusted-keys it also requires a
    /// valid signature; with a key or password it also decrypts and authenticates the payload.
    Info {
        /// The .ald file, or an s3://, gs://, az://, http(s):// URL of one (docs/remote.md;
        /// credentials and endpoint from the environment): the same report from the object's
        /// head and tail, fetched whole for --verify, --trusted-keys or a key.
        file: PathBuf,
        /// Check every byte: the whole-file CRC32 and every aligned array's CRC-32C.
        #[arg(long)]
        verify: bool,
        #[command(flatten)]
        keys: KeyOptions,
    },
    /// Convert between .csv, .jsonl, .parquet, .arrow (Arrow IPC file) and .ald, by extension.
    ///
    /// Rows move in batches; with --streaming the .ald output is written one row group at a time,
    /// so any input size converts in bounded memory. The output is written atomically and an
    /// existing one is refused unless --force. CSV and JSONL column types are inferred unless
    /// --schema gives them. Exits non-zero naming the Andon signal (InvalidFormat,
    /// ChecksumMismatch, ...) if an .ald input fails a check.
    Convert(ConvertArgs),
    /// Print the first rows of a dataset (only the row groups holding them are read and
    /// decoded); --json prints an array of row objects. Encrypted files need --password / --key;
    /// --trusted-keys requires a signature.
    Head(HeadArgs),
    /// Print a dataset's columns: name, Arrow type, nullability. For .ald files only the schema
    /// section is read, after the checks that precede it (the CRC32, or for a STREAMING file the
    /// chunk index's checksum), never the payload.
    Schema(SchemaArgs),
    /// Mark a copy of a dataset for one buyer (000 §9.3.1): a keyed fingerprint in its float
    /// columns (and integer columns named with --columns) that survives sampling, shuffling,
    /// column subsets, CSV and Parquet round trips and mild rounding or noise, and that only the
    /// seller's key reads. Column means and standard deviations move by far less than 0.01 %.
    ///
    /// Mark first, then `license --watermarked` (for the same buyer), `encrypt` and `sign`.
    /// Nothing is written when the table cannot carry the mark (too few values). Figures and
    /// limits: docs/watermark.md.
    Watermark(MarkArgs),
    /// Trace leaked copies (000 §9.3.5): keyless `detect` and `entropy`; with the seller key,
    /// `extract` the buyer, `prove` it in signed evidence, `verify` evidence, `scan` a directory.
    /// Suspects may be .ald, CSV, JSONL, Parquet or Arrow files.
    #[command(subcommand)]
    Piracy(PiracyCommand),
    #[command(flatten)]
    Security(SecurityCommand),
}

fn main() -> ExitCode {
    let tool = Tool::ALIMENTAR;
    let cli = Cli::parse();
    cli.common.install();
    let outcome = match cli.command {
        Command::Info { file, verify, keys } => dataset::info(&file, verify, &keys),
        Command::Convert(args) => dataset::convert(tool, &args),
        Command::Head(args) => dataset::head(tool, &args),
        Command::Schema(args) => dataset::schema(&args),
        Command::Watermark(args) => dataset::leaks::watermark(tool, &args),
        Command::Piracy(command) => piracy::run(dataset::leaks::PIRACY, command),
        Command::Security(command) => security::run(tool, command),
    };
    finish(tool.name, outcome)
}
