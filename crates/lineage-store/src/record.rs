//! What the catalog records about a snapshot: the inputs, the files, the commitments (always
//! recomputed here from the inputs and the file hashes, never taken on trust), plan hashes and
//! retention.

use lineage::object::LineageObject;
use lineage::retention::RetentionMeta;
use lineage::snapshot::snapshot_lineage_objects;
use lineage::{DatasetBuilder, Digest, RelPath, Snapshot, SnapshotInputs, build_snapshot};

use crate::cas::check_tenant;
use crate::error::{Error, Result};

/// One file of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    /// Its normalized relative path.
    pub path: RelPath,
    /// Its size in bytes.
    pub size_bytes: u64,
    /// SHA-256 of its bytes.
    pub content_hash: Digest,
}

/// A snapshot as the catalog records it. Built by [`SnapshotRecord::new`], which computes every
/// commitment with `lineage` (so a record's `dataset_snapshot_id` always matches its content).
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotRecord {
    dataset_name: String,
    inputs: SnapshotInputs,
    sources: Vec<SourceFile>,
    plan_hashes: Vec<Digest>,
    retention: RetentionMeta,
    snapshot: Snapshot,
}

impl SnapshotRecord {
    /// Computes the snapshot of `sources` (any order; sorted here) under `inputs`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] (empty dataset name, tenant the store cannot hold), and
    /// `lineage`'s validation errors (`EMPTY_DATASET`, `DUPLICATE_PATH`, tenant/version rules).
    pub fn new(
        dataset_name: &str,
        inputs: SnapshotInputs,
        mut sources: Vec<SourceFile>,
        mut plan_hashes: Vec<Digest>,
        retention: RetentionMeta,
    ) -> Result<Self> {
        if dataset_name.is_empty() || dataset_name.contains('\0') {
            return Err(Error::InvalidArgument {
                what: "dataset name",
                reason: "must be non-empty, without NUL",
            });
        }
        check_tenant(&inputs.tenant_id)?;
        sources.sort_by(|a, b| a.path.cmp(&b.path));
        let mut builder = DatasetBuilder::new(sources.iter().map(|s| s.path.clone()).collect())?;
        for s in &sources {
            builder.push(s.content_hash, s.size_bytes);
        }
        let digest = builder.finish()?;
        let snapshot = build_snapshot(&inputs, &digest)?;
        plan_hashes.sort();
        plan_hashes.dedup();
        Ok(Self {
            dataset_name: dataset_name.to_owned(),
            inputs,
            sources,
            plan_hashes,
            retention,
            snapshot,
        })
    }

    /// The dataset's name in the catalog (what `lineage log` lists by).
    #[must_use]
    pub fn dataset_name(&self) -> &str {
        &self.dataset_name
    }

    /// Tenant, version, splits and transforms.
    #[must_use]
    pub const fn inputs(&self) -> &SnapshotInputs {
        &self.inputs
    }

    /// The files, in canonical (path) order.
    #[must_use]
    pub fn sources(&self) -> &[SourceFile] {
        &self.sources
    }

    /// `data_access_plan_hash` values recorded with it (sorted, unique).
    #[must_use]
    pub fn plan_hashes(&self) -> &[Digest] {
        &self.plan_hashes
    }

    /// Retention metadata of the snapshot (and of the objects it stores first).
    #[must_use]
    pub const fn retention(&self) -> &RetentionMeta {
        &self.retention
    }

    /// Every commitment.
    #[must_use]
    pub const fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// `dataset_snapshot_id`.
    #[must_use]
    pub const fn snapshot_id(&self) -> Digest {
        self.snapshot.dataset_snapshot_id
    }

    /// The lineage objects it commits (`lineage::snapshot::snapshot_lineage_objects`): splits,
    /// transforms, and the dataset object (last) whose ID is the snapshot ID.
    #[must_use]
    pub fn lineage_objects(&self) -> Vec<LineageObject> {
        snapshot_lineage_objects(&self.inputs, self.snapshot.dataset_root_hash)
    }
}
