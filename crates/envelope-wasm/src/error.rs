//! The crate's one error type, and how it reaches JavaScript: a thrown `Error` whose `name` is
//! `"EnvelopeError"`, whose `signal` is the specs' Andon signal (`"ChecksumMismatch"`,
//! `"SignatureInvalid"`, ...) and whose `message` is the Rust error's text (which for the envelope
//! formats starts with the same signal name).
//!
//! The signal vocabulary is `envelope_core::Signal` for everything the envelope formats report;
//! `.fold` failures are mapped onto it (a digest that does not match is `ChecksumMismatch`, like
//! the envelope's CRC32), and lineage failures carry spec 004's failure code (`"INVALID_PATH"`,
//! ...), since that spec names its failures that way. The fold rule (`"§8.3 crc32c"`) and the
//! lineage code stay visible in the message.

use wasm_bindgen::{JsCast as _, JsValue};

/// Everything the bindings can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The envelope (header, sections, CRC32, compression, signature, encryption) refused.
    #[error(transparent)]
    Envelope(#[from] envelope_core::Error),
    /// The `.ald` reader refused.
    #[cfg(feature = "dataset")]
    #[error(transparent)]
    Dataset(#[from] ald::Error),
    /// The `.apr` reader refused.
    #[cfg(feature = "model")]
    #[error(transparent)]
    Model(#[from] apr::Error),
    /// The `.fold` reader refused.
    #[cfg(feature = "fold")]
    #[error("{}: fold {}: {source}", fold_signal(source), source.rule())]
    Fold {
        /// The reader's error.
        #[from]
        source: fold::Error,
    },
    /// Lineage refused the entries (a bad path, a duplicate, no files).
    #[cfg(feature = "lineage")]
    #[error("{}: {source}", source.failure_code().as_str())]
    Lineage {
        /// Lineage's error.
        #[from]
        source: lineage::Error,
    },
    /// A JavaScript argument is not what the API takes.
    #[error("Usage: {what}: {problem}")]
    Argument {
        /// Which argument (`"options.trustedKeys[0]"`).
        what: &'static str,
        /// What is wrong with it.
        problem: String,
    },
    /// The index names no such record batch, or the model no such tensor.
    #[error("Usage: {what} {index} is out of range (there are {count})")]
    OutOfRange {
        /// What was asked for (`"batch"`).
        what: &'static str,
        /// The index asked for.
        index: u64,
        /// How many there are.
        count: u64,
    },
    /// The browser (fetch, a stream, IndexedDB) failed; the JS error's text is kept.
    #[error("Io: {what}: {detail}")]
    Host {
        /// Which step (`"fetch"`, `"IndexedDB open"`).
        what: &'static str,
        /// The JS error's string form.
        detail: String,
    },
}

/// The crate's result type.
pub type Result<T, E = Error> = core::result::Result<T, E>;

impl Error {
    /// The signal JavaScript sees as `error.signal`.
    #[must_use]
    pub fn signal(&self) -> &'static str {
        match self {
            Self::Envelope(error) => error.signal().name(),
            #[cfg(feature = "dataset")]
            Self::Dataset(error) => error.signal().name(),
            #[cfg(feature = "model")]
            Self::Model(error) => error.signal().name(),
            #[cfg(feature = "fold")]
            Self::Fold { source } => fold_signal(source),
            #[cfg(feature = "lineage")]
            Self::Lineage { source } => source.failure_code().as_str(),
            Self::Argument { .. } | Self::OutOfRange { .. } => "Usage",
            Self::Host { .. } => "Io",
        }
    }

    /// A JS argument error.
    #[cfg_attr(not(any(feature = "crypto", feature = "lineage")), allow(dead_code))]
    pub(crate) fn argument(what: &'static str, problem: impl Into<String>) -> Self {
        Self::Argument {
            what,
            problem: problem.into(),
        }
    }

    /// A host (browser) failure, keeping the JS error's text.
    #[cfg_attr(not(any(feature = "crypto", feature = "lineage")), allow(dead_code))]
    pub(crate) fn host(what: &'static str, error: &JsValue) -> Self {
        // `dyn_ref` checks `instanceof Error`: a thrown string or event has no `message`.
        let detail = error
            .dyn_ref::<js_sys::Error>()
            .and_then(|e| e.message().as_string())
            .or_else(|| error.as_string())
            .unwrap_or_else(|| format!("{error:?}"));
        Self::Host { what, detail }
    }

    /// The thrown JS value: `Error` with `name = "EnvelopeError"` and `signal`.
    #[must_use]
    pub fn to_js(&self) -> JsValue {
        let error = js_sys::Error::new(&self.to_string());
        error.set_name("EnvelopeError");
        // Setting a property on a fresh plain `Error` cannot fail (it is extensible).
        let _ = js_sys::Reflect::set(&error, &"signal".into(), &self.signal().into());
        error.into()
    }
}

impl From<Error> for JsValue {
    fn from(error: Error) -> Self {
        error.to_js()
    }
}

/// The envelope signal a `.fold` failure corresponds to.
#[cfg(feature = "fold")]
fn fold_signal(error: &fold::Error) -> &'static str {
    use fold::Error as E;
    match error {
        E::CrcMismatch { .. }
        | E::Sha256Mismatch { .. }
        | E::ChunkHashesMismatch { .. }
        | E::ManifestHashMismatch { .. }
        | E::EccUncorrectable { .. } => "ChecksumMismatch",
        E::Signature(_) => "SignatureInvalid",
        E::UnsupportedFormat { .. } => "UnsupportedVersion",
        E::ChunkNotFound { .. } => "Usage",
        E::Io(_) => "Io",
        _ => "InvalidFormat",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_errors_are_usage_and_say_which_argument() {
        let error = Error::argument("options.password", "not a string");
        assert_eq!(error.signal(), "Usage");
        assert_eq!(error.to_string(), "Usage: options.password: not a string");
    }

    #[test]
    fn envelope_errors_keep_their_signal() {
        let error = Error::from(envelope_core::Header::parse(b"ALDF\x09\x00").unwrap_err());
        assert_eq!(error.signal(), "UnsupportedVersion");
    }

    #[cfg(feature = "fold")]
    #[test]
    fn fold_failures_map_to_a_signal_and_name_their_rule() {
        let error = Error::from(fold::Error::ChunkNotFound {
            name: "x".to_owned(),
        });
        assert_eq!(error.signal(), "Usage");
        assert!(error.to_string().starts_with("Usage: fold chunk not found"));
    }
}
