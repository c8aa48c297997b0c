//! The error type of `ald-datafusion`: a file's own failure ([`ald::Error`], its Andon signal
//! first in the message) with the path it came from, and the few failures of the table itself
//! (files of different schemas, a file changed since it was registered, a configuration value that
//! does not parse, a location this crate cannot read), and the remote reader's failures
//! ([`remote_file::Error`]) with the URL they came from.
//!
//! DataFusion's traits return [`DataFusionError`]; every error of this crate reaches DataFusion as
//! [`DataFusionError::External`] holding an [`Error`], so a caller finds it again (and its
//! signal) with [`Error::find`] or [`signal_of`].

use std::path::PathBuf;

use datafusion::error::DataFusionError;
use envelope_core::Signal;

/// Result alias of this crate.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Every failure of `ald-datafusion`. See [`Error::signal`] for the Andon signal of each.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file refused by `ald`'s verified read path (structure, checksum, signature, decryption,
    /// license, limits, I/O): `ald`'s message, which starts with its signal, then the path.
    #[error("{source} ({})", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// `ald`'s error (boxed: it is large, and failures are rare).
        #[source]
        source: Box<ald::Error>,
    },
    /// Listing a directory (or reading a file's metadata) failed.
    #[error("Io: {}: {source}", path.display())]
    Io {
        /// The directory or file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A directory holds no file with the table's extension.
    #[error("Usage: no {extension} file in {}", path.display())]
    NoFiles {
        /// The directory.
        path: PathBuf,
        /// The extension looked for (`.ald`).
        extension: String,
    },
    /// Two files of one table do not have the same schema (`ald`'s `SchemaMismatch` says how).
    #[error("SchemaMismatch: {} does not have the schema of {}: {source}", path.display(), first.display())]
    SchemaMismatch {
        /// The file whose schema differs.
        path: PathBuf,
        /// The file the table's schema was taken from.
        first: PathBuf,
        /// `ald`'s comparison.
        #[source]
        source: Box<ald::Error>,
    },
    /// A file's schema or chunk index is not what it was when the table was registered (it was
    /// replaced meanwhile): no row of it is used.
    #[error("InvalidFormat: {} changed since the table was registered: {what}", path.display())]
    Changed {
        /// The file.
        path: PathBuf,
        /// What differs.
        what: &'static str,
    },
    /// An object (or a prefix) on object storage that the remote reader refused: the store's
    /// refusal (`Io`), an object that changed while being read (`ChecksumMismatch`), or the check
    /// of the file that failed, with `remote-file`'s signal and message.
    #[error("{source} ({location})")]
    Remote {
        /// The URL.
        location: String,
        /// The remote reader's error.
        #[source]
        source: Box<remote_file::Error>,
    },
    /// A location this crate does not read (a URL of another scheme).
    #[error("Usage: {location}: {reason}")]
    Location {
        /// The location as given.
        location: String,
        /// Why it cannot be read.
        reason: &'static str,
    },
    /// A value of the `ald.*` session configuration that does not parse. Secrets are not
    /// repeated in the message.
    #[error("Usage: ald.{key}: {reason}")]
    Config {
        /// The key, without the `ald.` prefix.
        key: &'static str,
        /// What is wrong with the value.
        reason: &'static str,
    },
    /// A table or scan rebuilt from its parts ([`crate::AldTable::from_parts`],
    /// [`crate::AldScanExec::from_parts`]: a plan shipped from another process) that does not
    /// hold together. Nothing was opened.
    #[error("InvalidFormat: .ald scan plan: {what}")]
    Plan {
        /// What is inconsistent.
        what: &'static str,
    },
    /// A verified batch that the C Data Interface bridge from arrow 60 to DataFusion's arrow 59
    /// refused (a type one side cannot express); the bridge's error is the source.
    #[error("Usage: column {column:?} cannot be handed to DataFusion: {cause}")]
    Bridge {
        /// The column (or field) name.
        column: String,
        /// Arrow's error, from either side of the bridge.
        #[source]
        cause: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl Error {
    /// The Andon signal this failure raises.
    #[must_use]
    pub fn signal(&self) -> Signal {
        match self {
            Self::File { source, .. } => source.signal(),
            Self::Remote { source, .. } => source.signal(),
            Self::Io { .. } => Signal::Io,
            Self::SchemaMismatch { .. } => Signal::SchemaMismatch,
            Self::Changed { .. } | Self::Plan { .. } => Signal::InvalidFormat,
            Self::NoFiles { .. }
            | Self::Location { .. }
            | Self::Config { .. }
            | Self::Bridge { .. } => Signal::Usage,
        }
    }

    /// The `ald` error behind this failure, if a file's verification refused it.
    #[must_use]
    pub fn ald(&self) -> Option<&ald::Error> {
        match self {
            Self::File { source, .. } | Self::SchemaMismatch { source, .. } => Some(source),
            Self::Remote { source, .. } => match source.as_ref() {
                remote_file::Error::Dataset(error) => Some(error),
                _ => None,
            },
            _ => None,
        }
    }

    /// This crate's error inside a DataFusion error, however DataFusion wrapped it (context,
    /// shared between partitions, external).
    #[must_use]
    pub fn find(error: &DataFusionError) -> Option<&Self> {
        let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
        while let Some(error) = current {
            if let Some(found) = error.downcast_ref::<Self>() {
                return Some(found);
            }
            current = error.source();
        }
        None
    }

    pub(crate) fn file(path: impl Into<PathBuf>) -> impl FnOnce(ald::Error) -> Self {
        let path = path.into();
        move |source| Self::File {
            path,
            source: Box::new(source),
        }
    }
}

impl Error {
    pub(crate) fn remote(location: &str) -> impl FnOnce(remote_file::Error) -> Self {
        let location = location.to_owned();
        move |source| Self::Remote {
            location,
            source: Box::new(source),
        }
    }
}

impl From<Error> for DataFusionError {
    fn from(error: Error) -> Self {
        Self::External(Box::new(error))
    }
}

/// The Andon signal of the `ald-datafusion` failure inside `error`, if there is one.
#[must_use]
pub fn signal_of(error: &DataFusionError) -> Option<Signal> {
    Error::find(error).map(Error::signal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_is_found_through_datafusion_wrappers() {
        let error: DataFusionError = Error::NoFiles {
            path: "/data".into(),
            extension: ".ald".into(),
        }
        .into();
        let wrapped = DataFusionError::Shared(std::sync::Arc::new(error.context("while scanning")));
        assert_eq!(signal_of(&wrapped), Some(Signal::Usage));
        assert!(wrapped.to_string().contains("Usage: no .ald file in /data"));
        assert_eq!(signal_of(&DataFusionError::Plan("x".into())), None);
    }
}
