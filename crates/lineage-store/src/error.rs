//! The crate's one error type. Every message starts with its failure code, as `lineage`'s do
//! (`lineage::FailureCode` for the commitments, the codes below for the store and catalog).

use std::path::PathBuf;

use lineage::Digest;

/// Every failure of the store and the catalog. [`Error::code`] is the failure code a CLI prints.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A commitment or input rule of the contract (`lineage`'s own error, with its code).
    #[error(transparent)]
    Lineage(#[from] lineage::Error),
    /// An object file whose bytes do not hash to the ID it is stored under.
    #[error("OBJECT_CORRUPT: object {key}: stored bytes hash to {found}, not to its ID {expected}")]
    ObjectCorrupt {
        /// The object's address (`tenant/type/id`).
        key: String,
        /// Its ID.
        expected: Digest,
        /// SHA-256 of the bytes found.
        found: Digest,
    },
    /// An object file larger than [`MAX_OBJECT_BYTES`](crate::cas::MAX_OBJECT_BYTES).
    #[error("OBJECT_CORRUPT: object {key}: larger than {max} bytes")]
    ObjectTooLarge {
        /// The object's address.
        key: String,
        /// The limit.
        max: u64,
    },
    /// An object the catalog or a caller names is not in the store.
    #[error("OBJECT_MISSING: object {key} is not stored")]
    ObjectMissing {
        /// The object's address.
        key: String,
    },
    /// A write to a published snapshot (§I.C: immutable after publish).
    #[error(
        "SNAPSHOT_PUBLISHED: snapshot {snapshot_id} is published and cannot be changed ({what})"
    )]
    SnapshotPublished {
        /// The snapshot.
        snapshot_id: Digest,
        /// What was attempted.
        what: &'static str,
    },
    /// A dataset version or tag that already names another snapshot.
    #[error(
        "VERSION_EXISTS: tenant {tenant_id:?} dataset {dataset:?} version {version:?} is already snapshot {existing}"
    )]
    VersionExists {
        /// Tenant.
        tenant_id: String,
        /// Dataset name.
        dataset: String,
        /// The version or tag.
        version: String,
        /// The snapshot it names.
        existing: Digest,
    },
    /// No snapshot with this ID in the catalog.
    #[error("SNAPSHOT_NOT_FOUND: no snapshot {snapshot_id} in the catalog")]
    SnapshotNotFound {
        /// The ID asked for.
        snapshot_id: Digest,
    },
    /// No snapshot, or more than one, starts with the ID prefix given.
    #[error("SNAPSHOT_NOT_FOUND: {given:?}: {reason}")]
    UnknownSnapshot {
        /// The ID or prefix as given.
        given: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// A tenant, dataset name or other argument the store cannot take.
    #[error("INVALID_ARGUMENT: {what}: {reason}")]
    InvalidArgument {
        /// Which argument.
        what: &'static str,
        /// What is wrong.
        reason: &'static str,
    },
    /// The catalog was written by a newer schema than this build knows.
    #[error(
        "CATALOG_VERSION: {}: schema version {found} is newer than this build's {supported}",
        path.display()
    )]
    CatalogVersion {
        /// The catalog file.
        path: PathBuf,
        /// Its `PRAGMA user_version`.
        found: i64,
        /// The newest this build migrates to.
        supported: i64,
    },
    /// A catalog row that breaks the schema's rules (a value out of its domain).
    #[error("CATALOG_CORRUPT: {what}: {reason}")]
    CatalogCorrupt {
        /// Table and column.
        what: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// SQLite refused a statement (a trigger's `RAISE` included: its message names the rule).
    #[error("CATALOG: {context}: {source}")]
    Sqlite {
        /// What the catalog was doing.
        context: &'static str,
        /// SQLite's error.
        #[source]
        source: rusqlite::Error,
    },
    /// Reading or writing a file of the store.
    #[error("IO: {}: {source}", path.display())]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// The failure code (the first word of the message).
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            Self::Lineage(e) => e.failure_code().as_str(),
            Self::ObjectCorrupt { .. } | Self::ObjectTooLarge { .. } => "OBJECT_CORRUPT",
            Self::ObjectMissing { .. } => "OBJECT_MISSING",
            Self::SnapshotPublished { .. } => "SNAPSHOT_PUBLISHED",
            Self::VersionExists { .. } => "VERSION_EXISTS",
            Self::SnapshotNotFound { .. } | Self::UnknownSnapshot { .. } => "SNAPSHOT_NOT_FOUND",
            Self::InvalidArgument { .. } => "INVALID_ARGUMENT",
            Self::CatalogVersion { .. } => "CATALOG_VERSION",
            Self::CatalogCorrupt { .. } => "CATALOG_CORRUPT",
            Self::Sqlite { source, .. } => {
                // A trigger's RAISE(ABORT, 'SNAPSHOT_PUBLISHED: ...') keeps its code.
                if source.to_string().starts_with("SNAPSHOT_PUBLISHED") {
                    "SNAPSHOT_PUBLISHED"
                } else {
                    "CATALOG"
                }
            }
            Self::Io { .. } => "IO",
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| Self::Io { path, source }
    }

    pub(crate) fn sql(context: &'static str) -> impl FnOnce(rusqlite::Error) -> Self {
        move |source| Self::Sqlite { context, source }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
