//! `apr`: create, inspect, protect, quantize and export `.apr` models.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use envelope_cli::model::{self, ConvertArgs, ExportArgs, ImportArgs, QuantizeArgs};
use envelope_cli::piracy::{self, MarkArgs, PiracyCommand};
use envelope_cli::security::{self, KeyOptions, SecurityCommand, Tool};
use envelope_cli::{CommonArgs, finish};

/// Create, inspect, protect, quantize and export .apr models: weights in one verified file,
/// optionally encrypted, signed and licensed. Import SafeTensors, quantize (GGUF-compatible Q8_0,
/// Q4_0, Q4_1, or Q8_TENSOR), export to GGUF or SafeTensors.
///
/// Every command takes --json (one JSON document on stdout) and --quiet. Outputs are written
/// atomically and never replace an existing file without --force. Exit status: 0 success,
/// 1 failure (the message starts with its Andon signal), 2 usage. Conventions: docs/cli.md.
#[derive(Parser)]
#[command(name = "apr", version, long_about)]
struct Cli {
    #[command(flatten)]
    common: CommonArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Verify a model file and show its header, sections, model type, card and tensors; with
    /// --quantization, how it was quantized. The file is memory-mapped: a STREAMING or
    /// TRUENO_NATIVE model is checked through the CRC-32C of its header and indexes only, so the
    /// answer takes milliseconds for any size (--verify reads and checks every byte); other files
    /// are checked whole (magic, version, CRC32, every section bound). Exits non-zero naming the
    /// Andon signal on failure. With --trusted-keys it also requires a valid signature; with a key
    /// or password it also decrypts and authenticates the payload.
    Inspect {
        /// The .apr file, or an s3://, gs://, az://, http(s):// URL of one (docs/remote.md;
        /// credentials and endpoint from the environment): the same report from the object's
        /// head and tail, fetched whole for --verify, --trusted-keys or a key.
        file: PathBuf,
        /// Also show how the model was quantized: type, block size, bits per weight, original
        /// dtype, and per tensor its type, error, and why it was kept if it was.
        #[arg(long)]
        quantization: bool,
        /// Check every byte: the whole-file CRC32 and every aligned tensor's CRC-32C.
        #[arg(long)]
        verify: bool,
        #[command(flatten)]
        keys: KeyOptions,
    },
    /// Import a Hugging Face model directory (config.json, safetensors shards, tokenizer files) or
    /// a .safetensors file as an .apr model, keeping tensor names, dtypes, shapes and order.
    Import(ImportArgs),
    /// Quantize a model (explicit opt-in, 001 §6.2.5), one tensor at a time: memory is bounded by
    /// the largest tensor. Bit-exact with ggml for q8_0, q4_0 and q4_1; norms, biases and other
    /// 1-D tensors stay as they are, as llama.cpp keeps them. Prints one summary line.
    Quantize(QuantizeArgs),
    /// Export a model to GGUF v3 or SafeTensors (001 §6.2.7).
    Export(ExportArgs),
    /// Rewrite a model: --trueno-native for the zero-copy deployment form (64-byte aligned
    /// tensors, memory-mapped in place), or another --compression.
    Convert(ConvertArgs),
    /// Mark a copy of a model for one buyer (003 §8.3): a keyed fingerprint in its F32 weights
    /// (quantization-index modulation) and Q8_0/Q4_0/Q4_1 blocks (keyed parity of a sparse set
    /// of quants) that only the seller's key reads. Outputs move by far less than 0.01 % for f32
    /// weights; quantized figures and limits: docs/watermark.md.
    ///
    /// Mark first, then `license --watermarked` (for the same buyer), `encrypt` and `sign`.
    /// Nothing is written when the model cannot carry the mark (too few weights).
    Watermark(MarkArgs),
    /// Trace leaked copies: keyless `detect` and `entropy`; with the seller key, `extract` the
    /// buyer, `prove` it in signed evidence, `verify` evidence, `scan` a directory. Suspects may
    /// be .apr or .safetensors files.
    #[command(subcommand)]
    Piracy(PiracyCommand),
    #[command(flatten)]
    Security(SecurityCommand),
}

fn main() -> ExitCode {
    let tool = Tool::APR;
    let cli = Cli::parse();
    cli.common.install();
    let outcome = match cli.command {
        Command::Inspect {
            file,
            quantization,
            verify,
            keys,
        } => model::inspect(&file, quantization, verify, &keys),
        Command::Import(args) => model::import(&args),
        Command::Quantize(args) => model::quantize(&args),
        Command::Export(args) => model::export(&args),
        Command::Convert(args) => model::convert(&args),
        Command::Watermark(args) => model::leaks::watermark(tool, &args),
        Command::Piracy(command) => piracy::run(model::leaks::PIRACY, command),
        Command::Security(command) => security::run(tool, command),
    };
    finish(tool.name, outcome)
}
