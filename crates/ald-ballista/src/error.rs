//! The error type of `ald-ballista`: an `.ald` plan node that cannot be shipped (encoding) or that
//! is refused when it arrives (decoding untrusted bytes), each with its Andon signal first in the
//! message, as every crate of the workspace.
//!
//! DataFusion's codec traits return [`DataFusionError`]; every error of this crate reaches
//! DataFusion as [`DataFusionError::External`] holding an [`Error`], found again with
//! [`Error::find`].

use datafusion::error::DataFusionError;
use envelope_core::Signal;

/// Result alias of this crate.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// Every failure of `ald-ballista`. See [`Error::signal`] for the Andon signal of each.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The bytes of an `.ald` plan node do not parse: truncated, a count larger than the bytes
    /// present, a flag or tag that does not exist, trailing bytes, text that is not UTF-8.
    #[error("InvalidFormat: .ald plan node: {what}")]
    Malformed {
        /// What is wrong.
        what: &'static str,
    },
    /// An `.ald` plan node larger than this build decodes.
    #[error("InvalidFormat: .ald plan node of {size} bytes, more than the {max} this build reads")]
    TooLarge {
        /// The node's size in bytes.
        size: usize,
        /// The largest node decoded.
        max: usize,
    },
    /// An `.ald` plan node written by another version of this codec.
    #[error(
        "UnsupportedVersion: .ald plan node version {found}, this build reads version {expected}"
    )]
    Version {
        /// The version found.
        found: u8,
        /// The version this build writes and reads.
        expected: u8,
    },
    /// A table or scan this codec cannot put into a plan (a path that is not UTF-8, more files
    /// or chunks than the format counts).
    #[error("Usage: the .ald scan cannot be shipped: {what}")]
    Unshippable {
        /// Why.
        what: String,
    },
    /// The loopback cluster ([`crate::local::LocalCluster`]) could not start: a port, the
    /// connection to the scheduler, a work directory.
    #[error("Io: the loopback Ballista cluster: {what}: {source}")]
    Cluster {
        /// What was being started.
        what: &'static str,
        /// Ballista's, tonic's or the operating system's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The schema inside a node: `ald`'s own schema section parser refused it (its message
    /// starts with the signal), or `ald` cannot encode the table's schema.
    #[error("{0}")]
    Schema(#[source] ald::Error),
    /// `ald-datafusion` refused to rebuild the table or scan from the decoded parts (they do not
    /// hold together), or the table's schema does not match the one the plan declares.
    #[error("{0}")]
    Table(#[source] ald_datafusion::Error),
}

impl Error {
    /// The Andon signal this failure raises.
    #[must_use]
    pub fn signal(&self) -> Signal {
        match self {
            Self::Malformed { .. } | Self::TooLarge { .. } => Signal::InvalidFormat,
            Self::Version { .. } => Signal::UnsupportedVersion,
            Self::Unshippable { .. } => Signal::Usage,
            Self::Cluster { .. } => Signal::Io,
            Self::Schema(source) => source.signal(),
            Self::Table(source) => source.signal(),
        }
    }

    /// This crate's error inside a DataFusion error, however DataFusion wrapped it.
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
}

impl From<ald_datafusion::Error> for Error {
    fn from(error: ald_datafusion::Error) -> Self {
        Self::Table(error)
    }
}

impl From<Error> for DataFusionError {
    fn from(error: Error) -> Self {
        Self::External(Box::new(error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_carry_their_signal_and_are_found_through_datafusion() {
        let error: DataFusionError = Error::Malformed { what: "truncated" }.into();
        let wrapped = error.context("decoding a task");
        let found = Error::find(&wrapped).unwrap();
        assert_eq!(found.signal(), Signal::InvalidFormat);
        assert!(found.to_string().starts_with("InvalidFormat: "));
        let version = Error::Version {
            found: 9,
            expected: 1,
        };
        assert_eq!(version.signal(), Signal::UnsupportedVersion);
        assert!(version.to_string().starts_with("UnsupportedVersion: "));
        let plan = Error::from(ald_datafusion::Error::Plan { what: "no file" });
        assert_eq!(plan.signal(), Signal::InvalidFormat);
        assert!(Error::find(&DataFusionError::Plan("x".into())).is_none());
    }
}
