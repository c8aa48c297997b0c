//! Shared code of the `alimentar` and `apr` command-line tools: what both print about an envelope
//! file, and the key, password, signing and encryption commands ([`security`]), defined once and
//! flattened into both binaries.
//!
//! Binaries are thin: argument parsing lives in `src/bin/*.rs`, everything a library user might
//! want lives in the library crates below; this crate holds only presentation.

pub mod dataset;
pub mod inspect;
pub mod model;
pub mod piracy;
pub mod security;

use std::process::ExitCode;
use std::sync::OnceLock;

use clap::Args;
use envelope_core::Limits;

/// How much any file may make `alimentar` and `apr` decode (envelope_core::Limits; defaults in
/// docs/envelope.md §7). Global options: they may be given before or after the subcommand.
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct LimitArgs {
    /// Largest size a compressed payload or chunk may decode to (bytes, or with a unit: 512MiB,
    /// 100GiB, 2TiB) [default: 64GiB per payload, 4GiB per chunk]. Raise it for larger tables or
    /// models; a few kilobytes can otherwise claim gigabytes.
    #[arg(long, global = true, value_name = "SIZE", value_parser = parse_size)]
    pub max_decoded: Option<u64>,
    /// Largest ratio of decoded to compressed bytes above 256 MiB of decoded data
    /// [default: 1024]. Raise it for very sparse data (large all-zero tensors).
    #[arg(long, global = true, value_name = "RATIO")]
    pub max_expansion: Option<u64>,
}

static LIMITS: OnceLock<Limits> = OnceLock::new();

impl LimitArgs {
    /// Makes these limits the process's ([`limits`]). Call once, in `main`.
    pub fn install(self) {
        let mut limits = Limits::DEFAULT;
        if let Some(max) = self.max_decoded {
            limits.max_decoded = max;
            limits.max_decoded_chunk = max;
        }
        if let Some(ratio) = self.max_expansion {
            limits.max_expansion = ratio;
        }
        let _ = LIMITS.set(limits);
    }
}

/// The options every command of `alimentar` and `apr` takes (docs/cli.md): `--json`, `--quiet`
/// and the reader limits.
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    #[command(flatten)]
    global: cli_support::run::GlobalArgs,
    #[command(flatten)]
    limits: LimitArgs,
}

impl CommonArgs {
    /// Makes the options take effect for the rest of the process.
    pub fn install(&self) {
        self.global.install();
        self.limits.install();
    }
}

/// The limits every file is read under (the defaults until [`LimitArgs::install`]).
#[must_use]
pub fn limits() -> Limits {
    LIMITS.get().copied().unwrap_or_default()
}

/// A size on the command line: bytes, or a number with `K`/`M`/`G`/`T` (powers of 1024, with or
/// without `iB`/`B`).
///
/// # Errors
/// A message for clap when the text is not such a size.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let number: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?}: expected a size such as 512MiB or 100GiB"))?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(format!("{text:?}: unknown unit (use K, M, G or T)")),
    };
    number
        .checked_mul(1u64 << shift)
        .ok_or_else(|| format!("{text:?}: too large"))
}

/// Runs one command of the tool `tool` and turns its outcome into the exit status
/// ([`cli_support::run::finish`]): 0 only when the operation fully succeeded; otherwise one line
/// on stderr that starts with the Andon signal's name for envelope errors (and, with `--json`, the
/// error object on stdout, whose `code` is that signal).
pub fn finish(tool: &str, outcome: anyhow::Result<()>) -> ExitCode {
    cli_support::run::finish_with(tool, outcome.map(|()| ExitCode::SUCCESS), classify)
}

/// The Andon signal of the first library error in `error`'s chain (each format crate's error
/// type, tried in turn); a file over the reader's limits, or a tensor or column the output format
/// cannot hold, is a failure of the operation (exit 1), not of the command line, although its
/// signal is `Usage`.
fn classify(error: &anyhow::Error) -> cli_support::run::Failure {
    let failure = |signal: envelope_core::Signal, operation: bool| cli_support::run::Failure {
        code: Some(signal.name().to_owned()),
        usage: operation.then_some(false),
    };
    for cause in error.chain() {
        // Remote reading (docs/remote.md): the file's own refusal keeps its signal; a location
        // that is not one is a command-line error (`Usage`), the network's failures `Io`.
        if let Some(error) = cause.downcast_ref::<remote_file::Error>() {
            return match error {
                remote_file::Error::Dataset(error) => {
                    failure(error.signal(), error.is_operation_failure())
                }
                error => failure(error.signal(), false),
            };
        }
        if let Some(error) = cause.downcast_ref::<apr::Error>() {
            return failure(error.signal(), error.is_operation_failure());
        }
        if let Some(error) = cause.downcast_ref::<ald::Error>() {
            return failure(error.signal(), error.is_operation_failure());
        }
        if let Some(error) = cause.downcast_ref::<envelope_core::Error>() {
            let operation = matches!(error, envelope_core::Error::LimitExceeded(_));
            return failure(error.signal(), operation);
        }
    }
    cli_support::run::Failure::default()
}

/// The `--backend` hint named `name` (`apr convert` and `alimentar convert --trueno-native`).
///
/// # Errors
/// `Usage` for a name that is not a hint.
pub fn backend_hint(name: &str) -> anyhow::Result<zerocopy_trueno::BackendHint> {
    zerocopy_trueno::BackendHint::from_name(name).ok_or_else(|| {
        anyhow::anyhow!(
            "Usage: unknown backend hint {name:?} (auto, scalar, sse2, avx, avx2, avx512, neon, wasm-simd, gpu)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("100G"), Ok(100 << 30));
        assert_eq!(parse_size("2 TiB"), Ok(2 << 40));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("99999999999T").is_err());
    }
}
