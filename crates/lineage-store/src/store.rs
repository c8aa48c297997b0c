//! [`Store`]: the object store and the SQLite catalog of one directory, and the order in which
//! their writes happen.
//!
//! **Order of writes.** A publish writes its objects to the object store (each durable on its
//! own) *before* the one catalog transaction that names them; a GC deletes catalog rows in one
//! transaction *before* it removes their files. So the catalog never names an object that is not
//! stored, whatever point a crash stops either at; what a crash can leave is object files no row
//! names, which the next GC removes.
//!
//! **Concurrency.** SQLite serializes writers (WAL, `BEGIN IMMEDIATE`, a busy timeout). The
//! object store and the catalog are two things, so a lock file orders them: a publish holds it
//! shared from its first object write to its commit, a GC holds it exclusive from its decision to
//! its last file removal. Publishers run side by side; a GC never deletes a file that a publish in
//! flight has just found present and is about to name.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;

use lineage::cbor::Value;
use lineage::object::{LineageObject, ObjectRef, ObjectType};
use lineage::retention::{ObjectKey, RetentionClass, RetentionMeta, StoredObject, plan_gc};
use lineage::{Digest, RelPath, SnapshotInputs, SplitDef, SplitDefs, Transform, TransformChain};
use rusqlite::{Connection, OptionalExtension as _, Transaction, TransactionBehavior, params};

use crate::cas::{ObjectStore, check_tenant};
use crate::error::{Error, Result};
use crate::record::{SnapshotRecord, SourceFile};
use crate::schema;

/// The catalog database inside a store directory.
pub const CATALOG_FILE: &str = "catalog.sqlite";
/// The object directory inside a store directory (local backend).
pub const OBJECTS_DIR: &str = "objects";
/// The lock file that orders object writes and GC (see the module docs).
pub const LOCK_FILE: &str = "lock";
/// How long a writer waits for another before giving up (`PRAGMA busy_timeout`).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(120);

/// Publish state of a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublishState {
    /// Recorded, still changeable (re-recording replaces it).
    Draft,
    /// Immutable (004 §I.C).
    Published,
}

impl PublishState {
    /// `"draft"` / `"published"`, as stored.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Published => "published",
        }
    }
}

/// What [`Store::publish`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublishOutcome {
    /// The snapshot is now published.
    Published,
    /// It was published already, identically (nothing written).
    AlreadyPublished,
}

/// A snapshot's catalog row.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotSummary {
    /// `dataset_snapshot_id`.
    pub snapshot_id: Digest,
    /// Tenant.
    pub tenant_id: String,
    /// Dataset name.
    pub dataset_name: String,
    /// `dataset_version_or_tag`.
    pub version: String,
    /// When it was recorded (Unix seconds).
    pub created_utc: u64,
    /// Draft or published.
    pub state: PublishState,
    /// When it was published.
    pub published_utc: Option<u64>,
    /// Merkle root over the files.
    pub dataset_root_hash: Digest,
    /// Commitment to the splits.
    pub split_hashes: Digest,
    /// Commitment to the transforms.
    pub transform_chain_hash: Digest,
    /// Root over its lineage objects.
    pub lineage_root_hash: Digest,
    /// Files.
    pub source_count: u64,
    /// Transforms.
    pub transform_count: u64,
    /// Sum of file sizes.
    pub snapshot_size_bytes: u64,
    /// Retention class and time (its `pin_root_refs` are on its root object).
    pub retention: RetentionMeta,
}

impl SnapshotSummary {
    /// Published and not expired at `now_utc`: a GC root.
    #[must_use]
    pub const fn is_active(&self, now_utc: u64) -> bool {
        matches!(self.state, PublishState::Published) && !self.retention.collectible_at(now_utc)
    }
}

/// One transform of a recorded chain.
#[derive(Debug, Clone, PartialEq)]
pub struct TransformEntry {
    /// Its `seq`.
    pub seq: u64,
    /// Its object's ID.
    pub object_id: Digest,
    /// Its committed map (read back from the object store, verified).
    pub body: Value,
}

/// Everything the catalog holds about a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotEntry {
    /// The row.
    pub summary: SnapshotSummary,
    /// Its files in canonical order.
    pub sources: Vec<SourceFile>,
    /// Its split entries in name order.
    pub splits: Vec<SplitDef>,
    /// Its transforms in `seq` order.
    pub transforms: Vec<TransformEntry>,
    /// Recorded `data_access_plan_hash` values.
    pub plan_hashes: Vec<Digest>,
}

impl SnapshotEntry {
    /// Rebuilds the record, recomputing every commitment from the stored inputs.
    ///
    /// # Errors
    /// `lineage`'s validation errors if stored rows no longer form valid inputs.
    pub fn to_record(&self) -> Result<SnapshotRecord> {
        let splits = SplitDefs::new(self.splits.clone())?;
        let transforms = TransformChain::new(
            self.transforms
                .iter()
                .enumerate()
                .map(|(i, t)| Transform::new(i, t.body.clone()))
                .collect::<Result<_, _>>()?,
        )?;
        let inputs = SnapshotInputs::new(
            &self.summary.tenant_id,
            &self.summary.version,
            splits,
            transforms,
        )?;
        SnapshotRecord::new(
            &self.summary.dataset_name,
            inputs,
            self.sources.clone(),
            self.plan_hashes.clone(),
            self.summary.retention.clone(),
        )
    }
}

/// A file present in both snapshots with different content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    /// In the first snapshot.
    pub before: SourceFile,
    /// In the second.
    pub after: SourceFile,
}

/// A split present in both with a different definition.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangedSplit {
    /// In the first snapshot.
    pub before: SplitDef,
    /// In the second.
    pub after: SplitDef,
}

/// What changed from one snapshot to another.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotDiff {
    /// The first snapshot.
    pub from: SnapshotSummary,
    /// The second.
    pub to: SnapshotSummary,
    /// Files only in the second.
    pub files_added: Vec<SourceFile>,
    /// Files only in the first.
    pub files_removed: Vec<SourceFile>,
    /// Files in both with different size or content.
    pub files_changed: Vec<ChangedFile>,
    /// Splits only in the second.
    pub splits_added: Vec<SplitDef>,
    /// Splits only in the first.
    pub splits_removed: Vec<SplitDef>,
    /// Splits in both with another fraction or seed.
    pub splits_changed: Vec<ChangedSplit>,
    /// Whether the transform chains differ (`transform_chain_hash`).
    pub transforms_changed: bool,
}

/// One object a GC collected (or would collect, in a dry run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collected {
    /// The object.
    pub object: ObjectRef,
    /// Its size in bytes.
    pub size_bytes: u64,
}

/// What a GC did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GcReport {
    /// The time it judged retention at.
    pub now_utc: u64,
    /// Nothing was deleted.
    pub dry_run: bool,
    /// Objects collected (rows and files), in key order.
    pub collected: Vec<Collected>,
    /// Snapshots whose root object was collected (published and expired, or drafts).
    pub snapshots_removed: Vec<Digest>,
    /// Object-store keys no catalog row names (leftovers of interrupted publishes), removed.
    pub leftovers: Vec<String>,
    /// Objects kept.
    pub objects_kept: u64,
    /// Sum of the collected objects' sizes.
    pub bytes_freed: u64,
}

/// What [`Store::check`] found: nothing, when the store is sound.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CheckReport {
    /// Lines of `PRAGMA integrity_check` other than `ok`, and of `PRAGMA foreign_key_check`.
    pub sqlite: Vec<String>,
    /// Objects named by the catalog that are missing or corrupt, with the error's message.
    pub objects: Vec<String>,
    /// Snapshots whose rows do not recompute to their ID, or are incomplete.
    pub snapshots: Vec<String>,
}

impl CheckReport {
    /// Whether nothing was found.
    #[must_use]
    pub fn is_ok(&self) -> bool {
        self.sqlite.is_empty() && self.objects.is_empty() && self.snapshots.is_empty()
    }
}

/// A lineage store: objects and catalog of one directory (default layout: `DIR/catalog.sqlite`,
/// `DIR/objects/`, `DIR/lock`).
#[derive(Debug)]
pub struct Store {
    root: PathBuf,
    conn: Connection,
    objects: ObjectStore,
}

/// A step of a publish, for tests that stop one midway (`fail_at`).
pub(crate) type Hook<'a> = &'a mut dyn FnMut(&'static str) -> Result<()>;

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

fn to_i64(what: &'static str, v: u64) -> Result<i64> {
    i64::try_from(v).map_err(|_| Error::InvalidArgument {
        what,
        reason: "larger than 2^63 - 1 (SQLite's integers)",
    })
}

fn from_i64(what: &'static str, v: i64) -> Result<u64> {
    u64::try_from(v).map_err(|_| Error::CatalogCorrupt {
        what,
        reason: format!("negative value {v}"),
    })
}

fn digest(what: &'static str, s: &str) -> Result<Digest> {
    Digest::from_hex(s).map_err(|_| Error::CatalogCorrupt {
        what,
        reason: format!("not 64 hex digits: {s:?}"),
    })
}

fn object_type(what: &'static str, s: &str) -> Result<ObjectType> {
    ObjectType::parse(s).map_err(|_| Error::CatalogCorrupt {
        what,
        reason: format!("unknown object type {s:?}"),
    })
}

fn retention_class(what: &'static str, s: &str) -> Result<RetentionClass> {
    RetentionClass::parse(s).map_err(|_| Error::CatalogCorrupt {
        what,
        reason: format!("unknown retention class {s:?}"),
    })
}

fn len_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

const SUMMARY_COLUMNS: &str = "snapshot_id, tenant_id, dataset_name, version, created_utc, state, \
    published_utc, dataset_root_hash, split_hashes, transform_chain_hash, lineage_root_hash, \
    source_count, transform_count, snapshot_size_bytes, retention_class, gc_eligible_after_utc";

/// A summary row as read, before its values are checked.
type RawSummary = (
    String,
    String,
    String,
    String,
    i64,
    String,
    Option<i64>,
    [String; 4],
    [i64; 3],
    String,
    Option<i64>,
);

fn raw_summary(r: &rusqlite::Row<'_>) -> rusqlite::Result<RawSummary> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
        [r.get(7)?, r.get(8)?, r.get(9)?, r.get(10)?],
        [r.get(11)?, r.get(12)?, r.get(13)?],
        r.get(14)?,
        r.get(15)?,
    ))
}

fn summary(raw: RawSummary) -> Result<SnapshotSummary> {
    let (
        id,
        tenant_id,
        dataset_name,
        version,
        created,
        state,
        published,
        hashes,
        counts,
        class,
        after,
    ) = raw;
    let state = match state.as_str() {
        "draft" => PublishState::Draft,
        "published" => PublishState::Published,
        other => {
            return Err(Error::CatalogCorrupt {
                what: "snapshots.state",
                reason: format!("unknown state {other:?}"),
            });
        }
    };
    Ok(SnapshotSummary {
        snapshot_id: digest("snapshots.snapshot_id", &id)?,
        tenant_id,
        dataset_name,
        version,
        created_utc: from_i64("snapshots.created_utc", created)?,
        state,
        published_utc: published
            .map(|p| from_i64("snapshots.published_utc", p))
            .transpose()?,
        dataset_root_hash: digest("snapshots.dataset_root_hash", &hashes[0])?,
        split_hashes: digest("snapshots.split_hashes", &hashes[1])?,
        transform_chain_hash: digest("snapshots.transform_chain_hash", &hashes[2])?,
        lineage_root_hash: digest("snapshots.lineage_root_hash", &hashes[3])?,
        source_count: from_i64("snapshots.source_count", counts[0])?,
        transform_count: from_i64("snapshots.transform_count", counts[1])?,
        snapshot_size_bytes: from_i64("snapshots.snapshot_size_bytes", counts[2])?,
        retention: RetentionMeta {
            retention_class: retention_class("snapshots.retention_class", &class)?,
            pin_root_refs: vec![],
            gc_eligible_after_utc: after
                .map(|a| from_i64("snapshots.gc_eligible_after_utc", a))
                .transpose()?,
        },
    })
}

impl Store {
    /// Opens (creating it if needed) the store in `dir` with a local object directory, and
    /// migrates its catalog to the current schema.
    ///
    /// # Errors
    /// I/O, [`Error::Sqlite`], [`Error::CatalogVersion`] (a newer catalog).
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref();
        Self::open_with(dir, ObjectStore::local(dir.join(OBJECTS_DIR)))
    }

    /// Opens the store in `dir` with its objects in `objects` (another backend).
    ///
    /// # Errors
    /// As [`open`](Self::open).
    pub fn open_with(dir: impl AsRef<Path>, objects: ObjectStore) -> Result<Self> {
        let root = dir.as_ref().to_path_buf();
        fs::create_dir_all(&root).map_err(Error::io(&root))?;
        let db = root.join(CATALOG_FILE);
        let conn = Connection::open(&db).map_err(Error::sql("opening the catalog"))?;
        conn.busy_timeout(BUSY_TIMEOUT)
            .map_err(Error::sql("setting busy_timeout"))?;
        // WAL: readers never block the one writer; FULL: a commit is durable when it returns.
        // Switching a new database to WAL takes a lock SQLite does not wait for (no busy
        // handler), so a process that opens a new catalog while another does retries.
        let started = std::time::Instant::now();
        let mode: String = loop {
            match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)) {
                Err(e) if is_busy(&e) && started.elapsed() < BUSY_TIMEOUT => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                other => break other.map_err(Error::sql("setting WAL mode"))?,
            }
        };
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(Error::CatalogCorrupt {
                what: "journal_mode",
                reason: format!("SQLite kept {mode:?} instead of WAL"),
            });
        }
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
            .map_err(Error::sql("setting pragmas"))?;
        let mut store = Self {
            root,
            conn,
            objects,
        };
        store.migrate(&db)?;
        Ok(store)
    }

    fn migrate(&mut self, db: &Path) -> Result<()> {
        loop {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(Error::sql("starting a migration"))?;
            let version: i64 = tx
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .map_err(Error::sql("reading user_version"))?;
            if version > schema::LATEST {
                return Err(Error::CatalogVersion {
                    path: db.to_path_buf(),
                    found: version,
                    supported: schema::LATEST,
                });
            }
            let Some(sql) = usize::try_from(version)
                .ok()
                .and_then(|v| schema::MIGRATIONS.get(v))
            else {
                return Ok(());
            };
            tx.execute_batch(sql)
                .map_err(Error::sql("applying a migration"))?;
            tx.execute_batch(&format!("PRAGMA user_version = {}", version + 1))
                .map_err(Error::sql("setting user_version"))?;
            tx.commit().map_err(Error::sql("committing a migration"))?;
        }
    }

    /// The store's directory.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The object store.
    #[must_use]
    pub const fn objects(&self) -> &ObjectStore {
        &self.objects
    }

    /// The SQLite connection, for read-only inspection (tests, tools).
    #[must_use]
    pub const fn connection(&self) -> &Connection {
        &self.conn
    }

    fn lock(&self, exclusive: bool) -> Result<File> {
        let path = self.root.join(LOCK_FILE);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(Error::io(&path))?;
        if exclusive {
            file.lock()
        } else {
            file.lock_shared()
        }
        .map_err(Error::io(&path))?;
        Ok(file)
    }

    /// Records `record` and publishes it, in one transaction: afterwards the snapshot and its
    /// rows are immutable. Publishing the same snapshot again under the same dataset name does
    /// nothing; a draft of it is replaced.
    ///
    /// # Errors
    /// [`Error::SnapshotPublished`] (published under another dataset name),
    /// [`Error::VersionExists`] (the dataset's version names another snapshot), store and
    /// catalog failures.
    pub fn publish(&mut self, record: &SnapshotRecord, now_utc: u64) -> Result<PublishOutcome> {
        self.record_with(record, now_utc, true, &mut |_| Ok(()))
    }

    /// Records `record` as a draft (replacing an earlier draft of the same snapshot).
    ///
    /// # Errors
    /// As [`publish`](Self::publish).
    pub fn record_draft(&mut self, record: &SnapshotRecord, now_utc: u64) -> Result<()> {
        self.record_with(record, now_utc, false, &mut |_| Ok(()))
            .map(|_| ())
    }

    pub(crate) fn record_with(
        &mut self,
        record: &SnapshotRecord,
        now_utc: u64,
        publish: bool,
        hook: Hook<'_>,
    ) -> Result<PublishOutcome> {
        let now = to_i64("now", now_utc)?;
        let _lock = self.lock(false)?;
        // 1. The objects, each durable, before any row names them.
        let objects = record.lineage_objects();
        let mut stored = Vec::with_capacity(objects.len());
        for o in &objects {
            stored.push(self.objects.put(&o.tenant_id, o.object_type, &o.payload)?);
            hook("object stored")?;
        }
        // 2. One transaction for every row.
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(Error::sql("starting a publish"))?;
        let id = record.snapshot_id();
        let id_hex = id.to_hex();
        let existing: Option<(String, String)> = tx
            .query_row(
                "SELECT state, dataset_name FROM snapshots WHERE snapshot_id = ?1",
                [&id_hex],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(Error::sql("reading the snapshot"))?;
        match existing {
            Some((state, name)) if state == "published" => {
                return if name == record.dataset_name() && publish {
                    Ok(PublishOutcome::AlreadyPublished)
                } else {
                    Err(Error::SnapshotPublished {
                        snapshot_id: id,
                        what: "recording it again",
                    })
                };
            }
            Some(_) => delete_snapshot_rows(&tx, &id_hex)?,
            None => {}
        }
        let tenant = &record.inputs().tenant_id;
        if let Some(other) = tx
            .query_row(
                "SELECT snapshot_id FROM snapshots
                 WHERE tenant_id = ?1 AND dataset_name = ?2 AND version = ?3",
                params![tenant, record.dataset_name(), record.inputs().version],
                |r| r.get::<_, String>(0),
            )
            .optional()
            .map_err(Error::sql("checking the version"))?
        {
            return Err(Error::VersionExists {
                tenant_id: tenant.clone(),
                dataset: record.dataset_name().to_owned(),
                version: record.inputs().version.clone(),
                existing: digest("snapshots.snapshot_id", &other)?,
            });
        }
        let meta = record.retention();
        for (o, s) in objects.iter().zip(&stored) {
            insert_object(&tx, o, s.size, meta, now)?;
        }
        hook("objects recorded")?;
        insert_snapshot_rows(&tx, record, now)?;
        hook("rows recorded")?;
        if publish {
            tx.execute(
                "UPDATE snapshots SET state = 'published', published_utc = ?2 WHERE snapshot_id = ?1",
                params![id_hex, now],
            )
            .map_err(Error::sql("publishing"))?;
        }
        hook("published")?;
        tx.commit().map_err(Error::sql("committing the publish"))?;
        Ok(PublishOutcome::Published)
    }

    /// Publishes a recorded draft.
    ///
    /// # Errors
    /// [`Error::SnapshotNotFound`], [`Error::SnapshotPublished`] (already published).
    pub fn publish_draft(&mut self, snapshot_id: Digest, now_utc: u64) -> Result<()> {
        let now = to_i64("now", now_utc)?;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(Error::sql("starting a publish"))?;
        let state: Option<String> = tx
            .query_row(
                "SELECT state FROM snapshots WHERE snapshot_id = ?1",
                [snapshot_id.to_hex()],
                |r| r.get(0),
            )
            .optional()
            .map_err(Error::sql("reading the snapshot"))?;
        match state.as_deref() {
            None => return Err(Error::SnapshotNotFound { snapshot_id }),
            Some("published") => {
                return Err(Error::SnapshotPublished {
                    snapshot_id,
                    what: "publishing it again",
                });
            }
            Some(_) => {}
        }
        tx.execute(
            "UPDATE snapshots SET state = 'published', published_utc = ?2 WHERE snapshot_id = ?1",
            params![snapshot_id.to_hex(), now],
        )
        .map_err(Error::sql("publishing"))?;
        tx.commit().map_err(Error::sql("committing the publish"))
    }

    /// Stores a lineage object (any type: artifacts, policies, certificates' roots) with its
    /// retention metadata and references. Every reference must be in the same tenant and already
    /// stored. An object already recorded keeps its first metadata and references.
    ///
    /// # Errors
    /// [`lineage::Error::CrossTenantReference`], [`lineage::Error::MissingLineageRef`], store and
    /// catalog failures.
    pub fn put_object(
        &mut self,
        object: &LineageObject,
        meta: &RetentionMeta,
        now_utc: u64,
    ) -> Result<ObjectRef> {
        let mut refs = self.put_objects(&[(object.clone(), meta.clone())], now_utc)?;
        refs.pop().ok_or(Error::InvalidArgument {
            what: "objects",
            reason: "nothing was stored",
        })
    }

    /// Stores many objects: every file first, then one transaction for every row. A reference
    /// may name an object stored before or one earlier in `objects`.
    ///
    /// # Errors
    /// As [`put_object`](Self::put_object); on an error no row is written.
    pub fn put_objects(
        &mut self,
        objects: &[(LineageObject, RetentionMeta)],
        now_utc: u64,
    ) -> Result<Vec<ObjectRef>> {
        let now = to_i64("now", now_utc)?;
        for (object, _) in objects {
            if let Some(r) = object.refs.iter().find(|r| r.tenant_id != object.tenant_id) {
                return Err(lineage::Error::CrossTenantReference {
                    expected: object.tenant_id.clone(),
                    found: r.tenant_id.clone(),
                    object_id: r.object_id,
                }
                .into());
            }
        }
        let _lock = self.lock(false)?;
        let mut stored = Vec::with_capacity(objects.len());
        for (object, _) in objects {
            stored.push(self.objects.put(
                &object.tenant_id,
                object.object_type,
                &object.payload,
            )?);
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(Error::sql("starting an object insert"))?;
        let mut earlier: HashSet<&ObjectRef> = HashSet::new();
        for ((object, meta), s) in objects.iter().zip(&stored) {
            for r in &object.refs {
                if !earlier.contains(r) && !object_row_exists(&tx, r)? {
                    return Err(lineage::Error::MissingLineageRef {
                        object_type: r.object_type.as_str(),
                        object_id: r.object_id,
                    }
                    .into());
                }
            }
            insert_object(&tx, object, s.size, meta, now)?;
            earlier.insert(&s.object);
        }
        tx.commit().map_err(Error::sql("committing objects"))?;
        Ok(stored.into_iter().map(|s| s.object).collect())
    }

    /// Pins `object` (stored) as a GC root under `label`.
    ///
    /// # Errors
    /// [`Error::ObjectMissing`] if the catalog has no such object; catalog failures.
    pub fn pin(&mut self, object: &ObjectRef, label: &str, now_utc: u64) -> Result<()> {
        let now = to_i64("now", now_utc)?;
        if label.is_empty() {
            return Err(Error::InvalidArgument {
                what: "pin label",
                reason: "must not be empty",
            });
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(Error::sql("starting a pin"))?;
        if !object_row_exists(&tx, object)? {
            return Err(Error::ObjectMissing {
                key: crate::cas::object_key(object)?,
            });
        }
        tx.execute(
            "INSERT INTO pins (tenant_id, object_type, object_id, label, created_utc)
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
            params![
                object.tenant_id,
                object.object_type.as_str(),
                object.object_id.to_hex(),
                label,
                now
            ],
        )
        .map_err(Error::sql("pinning"))?;
        tx.commit().map_err(Error::sql("committing a pin"))
    }

    /// Removes the pin `label` of `object`; whether there was one.
    ///
    /// # Errors
    /// Catalog failures.
    pub fn unpin(&mut self, object: &ObjectRef, label: &str) -> Result<bool> {
        let n = self
            .conn
            .execute(
                "DELETE FROM pins WHERE tenant_id = ?1 AND object_type = ?2 AND object_id = ?3
                 AND label = ?4",
                params![
                    object.tenant_id,
                    object.object_type.as_str(),
                    object.object_id.to_hex(),
                    label
                ],
            )
            .map_err(Error::sql("unpinning"))?;
        Ok(n > 0)
    }

    /// The snapshot whose ID is `given` or starts with it (at least 4 hex digits).
    ///
    /// # Errors
    /// [`Error::UnknownSnapshot`]: not hex, too short, no match, or several.
    pub fn resolve_snapshot(&self, given: &str) -> Result<Digest> {
        let fail = |reason| Error::UnknownSnapshot {
            given: given.to_owned(),
            reason,
        };
        let prefix = given.to_ascii_lowercase();
        if prefix.len() < 4 || prefix.len() > 64 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(fail("expected 4 to 64 hex digits of a snapshot ID"));
        }
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT snapshot_id FROM snapshots WHERE substr(snapshot_id, 1, ?2) = ?1 LIMIT 2",
            )
            .map_err(Error::sql("resolving a snapshot ID"))?;
        let ids: Vec<String> = st
            .query_map(
                params![prefix, i64::try_from(prefix.len()).unwrap_or(64)],
                |r| r.get(0),
            )
            .map_err(Error::sql("resolving a snapshot ID"))?
            .collect::<rusqlite::Result<_>>()
            .map_err(Error::sql("resolving a snapshot ID"))?;
        match ids.as_slice() {
            [one] => digest("snapshots.snapshot_id", one),
            [] => Err(fail("no snapshot in the catalog has this ID")),
            _ => Err(fail(
                "several snapshots start with this prefix; give more digits",
            )),
        }
    }

    /// The catalog row of a snapshot.
    ///
    /// # Errors
    /// [`Error::SnapshotNotFound`], catalog failures.
    pub fn summary(&self, snapshot_id: Digest) -> Result<SnapshotSummary> {
        let raw = self
            .conn
            .query_row(
                &format!("SELECT {SUMMARY_COLUMNS} FROM snapshots WHERE snapshot_id = ?1"),
                [snapshot_id.to_hex()],
                raw_summary,
            )
            .optional()
            .map_err(Error::sql("reading a snapshot"))?
            .ok_or(Error::SnapshotNotFound { snapshot_id })?;
        summary(raw)
    }

    /// Everything recorded about a snapshot; transform bodies are read from the object store
    /// and verified.
    ///
    /// # Errors
    /// [`Error::SnapshotNotFound`], catalog failures, object-store failures.
    pub fn snapshot(&self, snapshot_id: Digest) -> Result<SnapshotEntry> {
        let summary = self.summary(snapshot_id)?;
        let id = snapshot_id.to_hex();
        let sql = |c| Error::sql("reading a snapshot")(c);
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT path, size_bytes, content_hash FROM snapshot_sources
                 WHERE snapshot_id = ?1 ORDER BY path",
            )
            .map_err(sql)?;
        let rows = st
            .query_map([&id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(sql)?;
        let mut sources = Vec::new();
        for row in rows {
            let (path, size, hash) = row.map_err(sql)?;
            sources.push(SourceFile {
                path: RelPath::new(&path)?,
                size_bytes: from_i64("snapshot_sources.size_bytes", size)?,
                content_hash: digest("snapshot_sources.content_hash", &hash)?,
            });
        }
        // Path order is the bytes' order: SQLite's BINARY collation compares UTF-8 bytes.
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT split_name, split_fraction, split_seed FROM snapshot_splits
                 WHERE snapshot_id = ?1 ORDER BY split_name",
            )
            .map_err(sql)?;
        let rows = st
            .query_map([&id], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, f64>(1)?,
                    r.get::<_, Option<String>>(2)?,
                ))
            })
            .map_err(sql)?;
        let mut splits = Vec::new();
        for row in rows {
            let (name, fraction, seed) = row.map_err(sql)?;
            let seed = seed
                .map(|s| {
                    s.parse::<u64>().map_err(|_| Error::CatalogCorrupt {
                        what: "snapshot_splits.split_seed",
                        reason: format!("not a u64: {s:?}"),
                    })
                })
                .transpose()?;
            splits.push(SplitDef {
                name,
                fraction,
                seed,
            });
        }
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT seq, object_id FROM snapshot_transforms
                 WHERE snapshot_id = ?1 ORDER BY position",
            )
            .map_err(sql)?;
        let rows = st
            .query_map([&id], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(sql)?;
        let mut transforms = Vec::new();
        for row in rows {
            let (seq, object_id) = row.map_err(sql)?;
            let object_id = digest("snapshot_transforms.object_id", &object_id)?;
            let body = self.objects.get(&ObjectRef {
                tenant_id: summary.tenant_id.clone(),
                object_type: ObjectType::Transform,
                object_id,
            })?;
            transforms.push(TransformEntry {
                seq: seq.parse().map_err(|_| Error::CatalogCorrupt {
                    what: "snapshot_transforms.seq",
                    reason: format!("not a u64: {seq:?}"),
                })?,
                object_id,
                body,
            });
        }
        let mut st = self
            .conn
            .prepare_cached(
                "SELECT data_access_plan_hash FROM snapshot_plans WHERE snapshot_id = ?1
                 ORDER BY data_access_plan_hash",
            )
            .map_err(sql)?;
        let plan_hashes = st
            .query_map([&id], |r| r.get::<_, String>(0))
            .map_err(sql)?
            .map(|h| digest("snapshot_plans.data_access_plan_hash", &h.map_err(sql)?))
            .collect::<Result<Vec<_>>>()?;
        Ok(SnapshotEntry {
            summary,
            sources,
            splits,
            transforms,
            plan_hashes,
        })
    }

    /// The snapshots of a dataset (every tenant), oldest first.
    ///
    /// # Errors
    /// Catalog failures.
    pub fn log(&self, dataset_name: &str) -> Result<Vec<SnapshotSummary>> {
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT {SUMMARY_COLUMNS} FROM snapshots WHERE dataset_name = ?1
                 ORDER BY created_utc, rowid"
            ))
            .map_err(Error::sql("reading a dataset's log"))?;
        let rows = st
            .query_map([dataset_name], raw_summary)
            .map_err(Error::sql("reading a dataset's log"))?;
        rows.map(|r| summary(r.map_err(Error::sql("reading a dataset's log"))?))
            .collect()
    }

    /// What changed from snapshot `from` to snapshot `to`: files (by path: added, removed,
    /// changed content or size), splits (by name), and whether the transform chain differs.
    ///
    /// # Errors
    /// As [`snapshot`](Self::snapshot).
    pub fn diff(&self, from: Digest, to: Digest) -> Result<SnapshotDiff> {
        let a = self.snapshot(from)?;
        let b = self.snapshot(to)?;
        let before: BTreeMap<&RelPath, &SourceFile> =
            a.sources.iter().map(|s| (&s.path, s)).collect();
        let after: BTreeMap<&RelPath, &SourceFile> =
            b.sources.iter().map(|s| (&s.path, s)).collect();
        let files_added = b
            .sources
            .iter()
            .filter(|s| !before.contains_key(&s.path))
            .cloned()
            .collect();
        let files_removed = a
            .sources
            .iter()
            .filter(|s| !after.contains_key(&s.path))
            .cloned()
            .collect();
        let files_changed = a
            .sources
            .iter()
            .filter_map(|s| {
                after
                    .get(&s.path)
                    .filter(|t| **t != s)
                    .map(|t| ChangedFile {
                        before: s.clone(),
                        after: (*t).clone(),
                    })
            })
            .collect();
        let split_before: BTreeMap<&str, &SplitDef> =
            a.splits.iter().map(|s| (s.name.as_str(), s)).collect();
        let split_after: BTreeMap<&str, &SplitDef> =
            b.splits.iter().map(|s| (s.name.as_str(), s)).collect();
        let same_split = |x: &SplitDef, y: &SplitDef| {
            x.fraction.to_bits() == y.fraction.to_bits() && x.seed == y.seed
        };
        Ok(SnapshotDiff {
            files_added,
            files_removed,
            files_changed,
            splits_added: b
                .splits
                .iter()
                .filter(|s| !split_before.contains_key(s.name.as_str()))
                .cloned()
                .collect(),
            splits_removed: a
                .splits
                .iter()
                .filter(|s| !split_after.contains_key(s.name.as_str()))
                .cloned()
                .collect(),
            splits_changed: a
                .splits
                .iter()
                .filter_map(|s| {
                    split_after
                        .get(s.name.as_str())
                        .filter(|t| !same_split(s, t))
                        .map(|t| ChangedSplit {
                            before: s.clone(),
                            after: (*t).clone(),
                        })
                })
                .collect(),
            transforms_changed: a.summary.transform_chain_hash != b.summary.transform_chain_hash,
            from: a.summary,
            to: b.summary,
        })
    }

    /// Collects what retention allows at `now_utc` (see `docs/lineage.md` §16): the objects that
    /// `lineage::retention::plan_gc` finds collectible, per tenant, with roots = every pinned
    /// object, every `pin_root_refs` entry, and the root object of every active (published, not
    /// expired) snapshot; then the snapshot rows of collected roots, and object-store keys no row
    /// names. With `dry_run`, only reports.
    ///
    /// Order: under the exclusive store lock, one transaction decides and deletes every row;
    /// only after it commits are the files removed. A crash leaves no row without its file.
    ///
    /// # Errors
    /// Catalog and object-store failures (before the commit nothing is deleted).
    pub fn gc(&mut self, now_utc: u64, dry_run: bool) -> Result<GcReport> {
        let now = to_i64("now", now_utc)?;
        let _lock = self.lock(!dry_run)?;
        let tx = self
            .conn
            .transaction_with_behavior(if dry_run {
                TransactionBehavior::Deferred
            } else {
                TransactionBehavior::Immediate
            })
            .map_err(Error::sql("starting a GC"))?;
        let graph = load_graph(&tx, now_utc)?;
        let mut report = GcReport {
            now_utc,
            dry_run,
            ..GcReport::default()
        };
        for (tenant, g) in &graph {
            let collect: BTreeSet<ObjectKey> = plan_gc(&g.objects, &g.active_roots, now_utc)
                .into_iter()
                .collect();
            for key in g.objects.keys() {
                let object = ObjectRef {
                    tenant_id: tenant.clone(),
                    object_type: key.0,
                    object_id: key.1,
                };
                if collect.contains(key) {
                    let size_bytes = g.sizes.get(key).copied().unwrap_or(0);
                    report.bytes_freed = report.bytes_freed.saturating_add(size_bytes);
                    if key.0 == ObjectType::Dataset && g.snapshots.contains(&key.1) {
                        report.snapshots_removed.push(key.1);
                    }
                    report.collected.push(Collected { object, size_bytes });
                } else {
                    report.objects_kept += 1;
                }
            }
        }
        if !dry_run {
            tx.execute("INSERT INTO gc_clock (now_utc) VALUES (?1)", [now])
                .map_err(Error::sql("setting the GC clock"))?;
            for id in &report.snapshots_removed {
                delete_snapshot_rows(&tx, &id.to_hex())?;
            }
            {
                let mut del = tx
                    .prepare_cached(
                        "DELETE FROM objects WHERE tenant_id = ?1 AND object_type = ?2
                         AND object_id = ?3",
                    )
                    .map_err(Error::sql("collecting objects"))?;
                for c in &report.collected {
                    del.execute(params![
                        c.object.tenant_id,
                        c.object.object_type.as_str(),
                        c.object.object_id.to_hex()
                    ])
                    .map_err(Error::sql("collecting objects"))?;
                }
            }
            tx.execute("DELETE FROM gc_clock", [])
                .map_err(Error::sql("clearing the GC clock"))?;
            tx.commit().map_err(Error::sql("committing the GC"))?;
            // Rows are gone: now the files (a crash here leaves only unnamed files).
            for c in &report.collected {
                self.objects.delete(&c.object)?;
            }
        } else {
            drop(tx);
        }
        // Files no row names: leftovers of publishes that stopped before their commit (no
        // publish is in flight: the exclusive lock is held). Every object row read above, kept
        // or collected, is named; the files of the collected ones are gone already (or, in a
        // dry run, reported as collected).
        self.objects.visit(&mut |object, key| {
            let named = object.is_some_and(|o| {
                graph
                    .get(&o.tenant_id)
                    .is_some_and(|g| g.objects.contains_key(&(o.object_type, o.object_id)))
            });
            if !named {
                report.leftovers.push(key.to_owned());
            }
        })?;
        report.leftovers.sort();
        if !dry_run {
            for key in &report.leftovers {
                self.objects.delete_key(key)?;
            }
        }
        Ok(report)
    }

    /// Checks the whole store: `PRAGMA integrity_check` and `foreign_key_check`, every object row
    /// against its file (present, hashing to its ID), and every snapshot's rows against its ID
    /// (complete, recomputing to the same commitments).
    ///
    /// # Errors
    /// Catalog failures that stop the check itself.
    pub fn check(&self) -> Result<CheckReport> {
        let sql = |c| Error::sql("checking the catalog")(c);
        let mut report = CheckReport::default();
        let mut st = self.conn.prepare("PRAGMA integrity_check").map_err(sql)?;
        for line in st.query_map([], |r| r.get::<_, String>(0)).map_err(sql)? {
            let line = line.map_err(sql)?;
            if line != "ok" {
                report.sqlite.push(line);
            }
        }
        let mut st = self.conn.prepare("PRAGMA foreign_key_check").map_err(sql)?;
        for row in st
            .query_map([], |r| {
                Ok(format!(
                    "foreign key violation in {}",
                    r.get::<_, String>(0)?
                ))
            })
            .map_err(sql)?
        {
            report.sqlite.push(row.map_err(sql)?);
        }
        let mut st = self
            .conn
            .prepare("SELECT tenant_id, object_type, object_id FROM objects")
            .map_err(sql)?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(sql)?;
        for row in rows {
            let (tenant_id, t, id) = row.map_err(sql)?;
            let object = ObjectRef {
                tenant_id,
                object_type: object_type("objects.object_type", &t)?,
                object_id: digest("objects.object_id", &id)?,
            };
            if let Err(e) = self.objects.get_bytes(&object) {
                report.objects.push(e.to_string());
            }
        }
        let ids: Vec<String> = self
            .conn
            .prepare("SELECT snapshot_id FROM snapshots")
            .map_err(sql)?
            .query_map([], |r| r.get(0))
            .map_err(sql)?
            .collect::<rusqlite::Result<_>>()
            .map_err(sql)?;
        for id in ids {
            let id = digest("snapshots.snapshot_id", &id)?;
            let result = self.snapshot(id).and_then(|e| {
                let rec = e.to_record()?;
                let s = rec.snapshot();
                let sum = &e.summary;
                let same = rec.snapshot_id() == id
                    && s.lineage_root_hash == sum.lineage_root_hash
                    && s.metrics.source_count == sum.source_count
                    && s.metrics.snapshot_size_bytes == sum.snapshot_size_bytes
                    && s.metrics.transform_count == sum.transform_count
                    && s.dataset_root_hash == sum.dataset_root_hash;
                Ok(same)
            });
            match result {
                Ok(true) => {}
                Ok(false) => report.snapshots.push(format!(
                    "snapshot {id}: rows do not recompute to its commitments"
                )),
                Err(e) => report.snapshots.push(format!("snapshot {id}: {e}")),
            }
        }
        Ok(report)
    }
}

fn object_row_exists(tx: &Transaction<'_>, o: &ObjectRef) -> Result<bool> {
    tx.prepare_cached(
        "SELECT 1 FROM objects WHERE tenant_id = ?1 AND object_type = ?2 AND object_id = ?3",
    )
    .and_then(|mut st| {
        st.query_row(
            params![o.tenant_id, o.object_type.as_str(), o.object_id.to_hex()],
            |_| Ok(()),
        )
        .optional()
    })
    .map(|r| r.is_some())
    .map_err(Error::sql("looking up an object"))
}

fn insert_object(
    tx: &Transaction<'_>,
    o: &LineageObject,
    size: u64,
    meta: &RetentionMeta,
    now: i64,
) -> Result<()> {
    check_tenant(&o.tenant_id)?;
    let id = o.object_id().to_hex();
    let t = o.object_type.as_str();
    let after = meta
        .gc_eligible_after_utc
        .map(|a| to_i64("gc_eligible_after_utc", a))
        .transpose()?;
    let inserted = tx
        .prepare_cached(
            "INSERT INTO objects (tenant_id, object_type, object_id, size_bytes, retention_class,
                                  gc_eligible_after_utc, created_utc)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
        )
        .and_then(|mut st| {
            st.execute(params![
                o.tenant_id,
                t,
                id,
                to_i64("size", size).unwrap_or(i64::MAX),
                meta.retention_class.as_str(),
                after,
                now
            ])
        })
        .map_err(Error::sql("recording an object"))?;
    if inserted == 0 {
        return Ok(()); // recorded before: its metadata and edges stay as first recorded
    }
    let mut refs = tx
        .prepare_cached(
            "INSERT INTO object_refs (tenant_id, from_type, from_id, to_type, to_id)
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
        )
        .map_err(Error::sql("recording references"))?;
    for r in &o.refs {
        refs.execute(params![
            o.tenant_id,
            t,
            id,
            r.object_type.as_str(),
            r.object_id.to_hex()
        ])
        .map_err(Error::sql("recording references"))?;
    }
    let mut pins = tx
        .prepare_cached(
            "INSERT INTO object_pin_refs (tenant_id, object_type, object_id, root_type, root_id)
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
        )
        .map_err(Error::sql("recording pin_root_refs"))?;
    for (rt, rid) in &meta.pin_root_refs {
        pins.execute(params![o.tenant_id, t, id, rt.as_str(), rid.to_hex()])
            .map_err(Error::sql("recording pin_root_refs"))?;
    }
    Ok(())
}

fn insert_snapshot_rows(tx: &Transaction<'_>, record: &SnapshotRecord, now: i64) -> Result<()> {
    let sql = |c| Error::sql("recording a snapshot")(c);
    let s = record.snapshot();
    let id = s.dataset_snapshot_id.to_hex();
    let meta = record.retention();
    tx.execute(
        "INSERT INTO snapshots (snapshot_id, tenant_id, dataset_name, version, created_utc, state,
             dataset_root_hash, split_hashes, transform_chain_hash, lineage_root_hash,
             source_count, transform_count, snapshot_size_bytes, retention_class,
             gc_eligible_after_utc)
         VALUES (?1, ?2, ?3, ?4, ?5, 'draft', ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        params![
            id,
            record.inputs().tenant_id,
            record.dataset_name(),
            record.inputs().version,
            now,
            s.dataset_root_hash.to_hex(),
            s.split_hashes.to_hex(),
            s.transform_chain_hash.to_hex(),
            s.lineage_root_hash.to_hex(),
            to_i64("source_count", s.metrics.source_count)?,
            to_i64("transform_count", s.metrics.transform_count)?,
            to_i64("snapshot_size_bytes", s.metrics.snapshot_size_bytes)?,
            meta.retention_class.as_str(),
            meta.gc_eligible_after_utc
                .map(|a| to_i64("gc_eligible_after_utc", a))
                .transpose()?,
        ],
    )
    .map_err(sql)?;
    let mut st = tx
        .prepare_cached(
            "INSERT INTO snapshot_sources (snapshot_id, path, size_bytes, content_hash)
             VALUES (?1, ?2, ?3, ?4)",
        )
        .map_err(sql)?;
    for f in record.sources() {
        st.execute(params![
            id,
            f.path.as_str(),
            to_i64("size_bytes", f.size_bytes)?,
            f.content_hash.to_hex()
        ])
        .map_err(sql)?;
    }
    let mut st = tx
        .prepare_cached(
            "INSERT INTO snapshot_splits (snapshot_id, split_name, split_fraction, split_seed,
                                          object_id)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .map_err(sql)?;
    for d in record.inputs().splits.entries() {
        let oid = lineage::hash::sha256_cbor(&d.to_cbor()).to_hex();
        st.execute(params![
            id,
            d.name,
            d.fraction,
            d.seed.map(|x| x.to_string()),
            oid
        ])
        .map_err(sql)?;
    }
    let mut st = tx
        .prepare_cached(
            "INSERT INTO snapshot_transforms (snapshot_id, position, seq, object_id)
             VALUES (?1, ?2, ?3, ?4)",
        )
        .map_err(sql)?;
    for (i, t) in record.inputs().transforms.transforms().iter().enumerate() {
        let oid = lineage::hash::sha256_cbor(&t.to_cbor()).to_hex();
        st.execute(params![
            id,
            to_i64("position", len_u64(i))?,
            t.seq().to_string(),
            oid
        ])
        .map_err(sql)?;
    }
    let mut st = tx
        .prepare_cached(
            "INSERT INTO snapshot_plans (snapshot_id, data_access_plan_hash) VALUES (?1, ?2)",
        )
        .map_err(sql)?;
    for p in record.plan_hashes() {
        st.execute(params![id, p.to_hex()]).map_err(sql)?;
    }
    Ok(())
}

/// Deletes a snapshot's rows (children first). The triggers refuse it for a published snapshot
/// unless a GC clock row says it has expired.
fn delete_snapshot_rows(tx: &Transaction<'_>, id: &str) -> Result<()> {
    for table in [
        "snapshot_sources",
        "snapshot_splits",
        "snapshot_transforms",
        "snapshot_plans",
        "snapshots",
    ] {
        tx.execute(&format!("DELETE FROM {table} WHERE snapshot_id = ?1"), [id])
            .map_err(Error::sql("deleting a snapshot's rows"))?;
    }
    Ok(())
}

/// One tenant's object graph as `plan_gc` takes it.
#[derive(Debug, Default)]
struct TenantGraph {
    objects: BTreeMap<ObjectKey, StoredObject>,
    sizes: BTreeMap<ObjectKey, u64>,
    active_roots: Vec<ObjectKey>,
    /// IDs of every snapshot (any state) of the tenant.
    snapshots: BTreeSet<Digest>,
}

fn load_graph(tx: &Transaction<'_>, now_utc: u64) -> Result<BTreeMap<String, TenantGraph>> {
    let sql = |c| Error::sql("reading the object graph")(c);
    let mut graph: BTreeMap<String, TenantGraph> = BTreeMap::new();
    let mut st = tx
        .prepare(
            "SELECT tenant_id, object_type, object_id, size_bytes, retention_class,
                    gc_eligible_after_utc FROM objects",
        )
        .map_err(sql)?;
    let mut rows = st.query([]).map_err(sql)?;
    while let Some(r) = rows.next().map_err(sql)? {
        let tenant: String = r.get(0).map_err(sql)?;
        let key = (
            object_type("objects.object_type", &r.get::<_, String>(1).map_err(sql)?)?,
            digest("objects.object_id", &r.get::<_, String>(2).map_err(sql)?)?,
        );
        let size = from_i64("objects.size_bytes", r.get(3).map_err(sql)?)?;
        let meta = RetentionMeta {
            retention_class: retention_class(
                "objects.retention_class",
                &r.get::<_, String>(4).map_err(sql)?,
            )?,
            pin_root_refs: vec![],
            gc_eligible_after_utc: r
                .get::<_, Option<i64>>(5)
                .map_err(sql)?
                .map(|a| from_i64("objects.gc_eligible_after_utc", a))
                .transpose()?,
        };
        let g = graph.entry(tenant).or_default();
        g.sizes.insert(key, size);
        g.objects.insert(key, StoredObject { meta, refs: vec![] });
    }
    drop(rows);
    let mut st = tx
        .prepare("SELECT tenant_id, from_type, from_id, to_type, to_id FROM object_refs")
        .map_err(sql)?;
    let mut rows = st.query([]).map_err(sql)?;
    while let Some(r) = rows.next().map_err(sql)? {
        let tenant: String = r.get(0).map_err(sql)?;
        let from = (
            object_type(
                "object_refs.from_type",
                &r.get::<_, String>(1).map_err(sql)?,
            )?,
            digest("object_refs.from_id", &r.get::<_, String>(2).map_err(sql)?)?,
        );
        let to = (
            object_type("object_refs.to_type", &r.get::<_, String>(3).map_err(sql)?)?,
            digest("object_refs.to_id", &r.get::<_, String>(4).map_err(sql)?)?,
        );
        if let Some(o) = graph
            .get_mut(&tenant)
            .and_then(|g| g.objects.get_mut(&from))
        {
            o.refs.push(to);
        }
    }
    drop(rows);
    let mut st = tx
        .prepare(
            "SELECT tenant_id, object_type, object_id, root_type, root_id FROM object_pin_refs",
        )
        .map_err(sql)?;
    let mut rows = st.query([]).map_err(sql)?;
    while let Some(r) = rows.next().map_err(sql)? {
        let tenant: String = r.get(0).map_err(sql)?;
        let from = (
            object_type(
                "object_pin_refs.object_type",
                &r.get::<_, String>(1).map_err(sql)?,
            )?,
            digest(
                "object_pin_refs.object_id",
                &r.get::<_, String>(2).map_err(sql)?,
            )?,
        );
        let root = (
            object_type(
                "object_pin_refs.root_type",
                &r.get::<_, String>(3).map_err(sql)?,
            )?,
            digest(
                "object_pin_refs.root_id",
                &r.get::<_, String>(4).map_err(sql)?,
            )?,
        );
        if let Some(o) = graph
            .get_mut(&tenant)
            .and_then(|g| g.objects.get_mut(&from))
        {
            o.meta.pin_root_refs.push(root);
        }
    }
    drop(rows);
    let mut st = tx
        .prepare("SELECT DISTINCT tenant_id, object_type, object_id FROM pins")
        .map_err(sql)?;
    let mut rows = st.query([]).map_err(sql)?;
    while let Some(r) = rows.next().map_err(sql)? {
        let tenant: String = r.get(0).map_err(sql)?;
        let key = (
            object_type("pins.object_type", &r.get::<_, String>(1).map_err(sql)?)?,
            digest("pins.object_id", &r.get::<_, String>(2).map_err(sql)?)?,
        );
        graph.entry(tenant).or_default().active_roots.push(key);
    }
    drop(rows);
    let mut st = tx
        .prepare(&format!("SELECT {SUMMARY_COLUMNS} FROM snapshots"))
        .map_err(sql)?;
    let rows = st.query_map([], raw_summary).map_err(sql)?;
    for r in rows {
        let s = summary(r.map_err(sql)?)?;
        let g = graph.entry(s.tenant_id.clone()).or_default();
        g.snapshots.insert(s.snapshot_id);
        if s.is_active(now_utc) {
            g.active_roots.push((ObjectType::Dataset, s.snapshot_id));
        }
    }
    Ok(graph)
}

#[cfg(test)]
mod tests;
