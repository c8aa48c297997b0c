//! Shared code of the `alimentar` and `apr` command-line tools: what both print about an envelope
//! file, and the key, password, signing and encryption commands ([`security`]), defined once and
//! flattened into both binaries.
//!
//! Binaries are thin: argument parsing lives in `src/bin/*.rs`, everything a library user might
//! want lives in the library crates below; this crate holds only presentation.

#![allow(clippy::print_stdout, reason = "a CLI prints its results")]

pub mod dataset;
pub mod inspect;
pub mod model;
pub mod security;

use std::process::ExitCode;

/// Runs one command of the tool `tool` and turns its outcome into the exit status: 0 only when the
/// operation fully succeeded; otherwise the message (which starts with the Andon signal's name for
/// envelope errors) goes to stderr and the status is 1.
pub fn finish(tool: &str, outcome: anyhow::Result<()>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            #[allow(clippy::print_stderr, reason = "a CLI reports failures on stderr")]
            {
                eprintln!("{tool}: {}", chain_message(&error));
            }
            ExitCode::FAILURE
        }
    }
}

/// The error's chain joined with ": ", skipping a cause whose message the previous one already
/// ends with (envelope errors quote their cause, as in "InvalidFormat: <cause>").
fn chain_message(error: &anyhow::Error) -> String {
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
    message
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
