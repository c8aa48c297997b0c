//! Lineage as a system (spec 004 §I.A "snapshot catalog and lineage graph", §I.C "snapshot
//! immutable after publish", §II.F CAS retention metadata and the GC invariant): where the
//! commitments of the `lineage` crate are kept.
//!
//! - [`cas`]: a content-addressed object store, tenant-namespaced, `object_id =
//!   SHA-256(CBOR_CANONICAL(payload))` computed by `lineage`'s own encoder and hash. Local
//!   directory by default ([`cas::LocalDir`]), behind the small [`cas::ObjectBackend`] trait an
//!   object-store backend implements. Writes are atomic (temporary file, fsync, rename that never
//!   replaces); reads re-hash and refuse a mismatch.
//! - [`Store`]: the catalog in SQLite (snapshots with their sources, splits, transforms, plan
//!   hashes and retention; pins; objects and their references) beside the object store, with
//!   publish, immutability (enforced by SQL triggers as well as here), `log`, `diff` and GC.
//!
//! **Key design decision: SQLite, not redb.** The catalog must take writers from several
//! processes at once (two `lineage publish` runs, a GC) without corruption: SQLite's file locking
//! and WAL give exactly that, where redb allows one process to open a database at a time. A
//! commit is one atomic, durable transaction (crash mid-publish leaves the old or the new state),
//! foreign keys and triggers hold the rules in the database itself, and any `sqlite3` client can
//! inspect a catalog. The library is compiled in (`rusqlite`'s `bundled`), so no system package is
//! needed.
//!
//! Native only: files, file locks and a C library; nothing here is reachable from wasm32.
//! `docs/lineage.md` §14-§16 describe the layout on disk, the schema and the GC.
//!
//! ```
//! use lineage::retention::RetentionMeta;
//! use lineage::{Digest, RelPath, SnapshotInputs};
//! use lineage_store::{SnapshotRecord, SourceFile, Store};
//! let dir = tempfile::tempdir()?;
//! let mut store = Store::open(dir.path().join(".lineage"))?;
//! let inputs = SnapshotInputs::new("acme", "v1", Default::default(), Default::default())?;
//! let file = SourceFile {
//!     path: RelPath::new("a.txt")?,
//!     size_bytes: 5,
//!     content_hash: lineage::hash::sha256(b"hello"),
//! };
//! let record = SnapshotRecord::new("words", inputs, vec![file], vec![], RetentionMeta::default())?;
//! store.publish(&record, 1_700_000_000)?;
//! let entry = store.snapshot(record.snapshot_id())?;
//! assert_eq!(entry.sources.len(), 1);
//! assert!(store.check()?.is_ok());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod cas;
pub mod error;
pub mod record;
pub mod schema;
pub mod store;

pub use cas::{LocalDir, ObjectBackend, ObjectStore};
pub use error::{Error, Result};
pub use record::{SnapshotRecord, SourceFile};
pub use store::{
    ChangedFile, ChangedSplit, CheckReport, Collected, GcReport, PublishOutcome, PublishState,
    SnapshotDiff, SnapshotEntry, SnapshotSummary, Store, TransformEntry,
};
