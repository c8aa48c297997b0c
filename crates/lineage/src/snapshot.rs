//! `dataset_snapshot_id`, the snapshot's lineage objects and `lineage_root_hash`, metrics, and
//! `data_access_plan_hash` (004 §II.F run/access-plan identity). The operators of §5 are
//! [`validate_snapshot`] (ValidateSnapshot_v1) and [`build_snapshot`] (ComputeLineageHash_v1 +
//! BuildSnapshot_v1 over an already hashed dataset).

use std::collections::BTreeMap;

use crate::cbor::Value;
use crate::dataset::{DatasetDigest, RelPath, sort_paths};
use crate::error::Error;
use crate::hash::{Digest, sha256_cbor};
use crate::object::{LineageObject, ObjectType, lineage_root_hash};
use crate::split::SplitDefs;
use crate::transform::TransformChain;

/// Fixed by the contract: `world_size_policy`.
pub const WORLD_SIZE_POLICY: &str = "rank_contiguous_shard_v1";
/// Fixed by the contract: `epoch_seed_rule`.
pub const EPOCH_SEED_RULE: &str = "epoch_seed_rule_v2";
/// Operator names (004 §0.G), as carried in error records.
pub const OP_VALIDATE: &str = "UML_OS.Data.ValidateSnapshot_v1";
/// See [`OP_VALIDATE`].
pub const OP_COMPUTE_LINEAGE: &str = "UML_OS.Data.ComputeLineageHash_v1";
/// See [`OP_VALIDATE`].
pub const OP_BUILD: &str = "UML_OS.Data.BuildSnapshot_v1";

/// Checks that a tenant ID or version tag is usable: non-empty, no NUL.
fn check_name(what: &'static str, s: &str) -> Result<(), Error> {
    if s.is_empty() {
        return Err(Error::InvalidArgument {
            what,
            reason: "must not be empty",
            source: None,
        });
    }
    if s.contains('\0') {
        return Err(Error::InvalidArgument {
            what,
            reason: "must not contain NUL",
            source: None,
        });
    }
    Ok(())
}

/// The non-dataset inputs of a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotInputs {
    /// `tenant_id` (non-empty).
    pub tenant_id: String,
    /// `dataset_version_or_tag` (non-empty).
    pub version: String,
    /// Split definitions (default: one split `all`).
    pub splits: SplitDefs,
    /// Transform chain (default: empty).
    pub transforms: TransformChain,
}

impl SnapshotInputs {
    /// Checks `tenant_id` and `version` (non-empty, no NUL) and bundles the inputs.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`].
    pub fn new(
        tenant_id: &str,
        version: &str,
        splits: SplitDefs,
        transforms: TransformChain,
    ) -> Result<Self, Error> {
        check_name("tenant_id", tenant_id)?;
        check_name("dataset_version_or_tag", version)?;
        Ok(Self {
            tenant_id: tenant_id.to_owned(),
            version: version.to_owned(),
            splits,
            transforms,
        })
    }
}

/// What [`validate_snapshot`] checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValidationReport {
    /// Number of sources (files).
    pub source_count: u64,
    /// Number of splits.
    pub split_count: u64,
    /// Number of transforms.
    pub transform_count: u64,
}

/// `UML_OS.Data.ValidateSnapshot_v1`: namespace, path, split and transform checks before any
/// byte is hashed. Splits and transforms are validated when they are constructed
/// ([`SplitDefs::new`], [`TransformChain::new`]); this adds tenant/version and the path list.
///
/// # Errors
/// [`Error::InvalidArgument`], [`Error::EmptyDataset`], [`Error::DuplicatePath`].
pub fn validate_snapshot(
    inputs: &SnapshotInputs,
    paths: &[RelPath],
) -> Result<ValidationReport, Error> {
    check_name("tenant_id", &inputs.tenant_id)?;
    check_name("dataset_version_or_tag", &inputs.version)?;
    let sorted = sort_paths(paths.to_vec())?;
    Ok(ValidationReport {
        source_count: count(sorted.len()),
        split_count: count(inputs.splits.entries().len()),
        transform_count: count(inputs.transforms.transforms().len()),
    })
}

fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// `dataset_snapshot_id = SHA-256(CBOR_CANONICAL([tenant_id, dataset_root_hash, split_hashes, transform_chain_hash, dataset_version_or_tag]))`.
#[must_use]
pub fn dataset_snapshot_id(
    tenant_id: &str,
    dataset_root_hash: Digest,
    split_hashes: Digest,
    transform_chain_hash: Digest,
    version: &str,
) -> Digest {
    sha256_cbor(&snapshot_preimage(
        tenant_id,
        dataset_root_hash,
        split_hashes,
        transform_chain_hash,
        version,
    ))
}

fn snapshot_preimage(
    tenant_id: &str,
    dataset_root_hash: Digest,
    split_hashes: Digest,
    transform_chain_hash: Digest,
    version: &str,
) -> Value {
    Value::Array(vec![
        Value::text(tenant_id),
        dataset_root_hash.to_cbor(),
        split_hashes.to_cbor(),
        transform_chain_hash.to_cbor(),
        Value::text(version),
    ])
}

/// The metrics of 004 §0.I.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metrics {
    /// Files in the dataset.
    pub source_count: u64,
    /// Transforms in the chain.
    pub transform_count: u64,
    /// Sum of the file sizes.
    pub snapshot_size_bytes: u64,
}

/// Every commitment of a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// Merkle root over the files.
    pub dataset_root_hash: Digest,
    /// Commitment to the split definitions.
    pub split_hashes: Digest,
    /// Commitment to the transform chain.
    pub transform_chain_hash: Digest,
    /// The snapshot ID.
    pub dataset_snapshot_id: Digest,
    /// Root over the snapshot's lineage objects (see [`snapshot_lineage_objects`]).
    pub lineage_root_hash: Digest,
    /// Metrics.
    pub metrics: Metrics,
}

/// `ComputeLineageHash_v1` + `BuildSnapshot_v1` over a hashed dataset.
///
/// # Errors
/// Those of [`validate_snapshot`] and [`lineage_root_hash`].
///
/// # Examples
/// ```
/// use lineage::{SnapshotInputs, build_snapshot, dataset_root_hash};
/// let data = dataset_root_hash([("a.txt", &b"hello"[..])])?;
/// let inputs = SnapshotInputs {
///     tenant_id: "acme".into(),
///     version: "v1".into(),
///     splits: Default::default(),
///     transforms: Default::default(),
/// };
/// let s = build_snapshot(&inputs, &data)?;
/// assert_eq!(s.metrics.source_count, 1);
/// # Ok::<(), lineage::Error>(())
/// ```
pub fn build_snapshot(inputs: &SnapshotInputs, data: &DatasetDigest) -> Result<Snapshot, Error> {
    let report = validate_snapshot(inputs, &data.paths)?;
    let split_hashes = inputs.splits.split_hashes();
    let transform_chain_hash = inputs.transforms.transform_chain_hash();
    let dataset_snapshot_id = dataset_snapshot_id(
        &inputs.tenant_id,
        data.root_hash,
        split_hashes,
        transform_chain_hash,
        &inputs.version,
    );
    let objects = snapshot_lineage_objects(inputs, data.root_hash);
    let lineage_root_hash = lineage_root_hash(&inputs.tenant_id, &objects)?;
    Ok(Snapshot {
        dataset_root_hash: data.root_hash,
        split_hashes,
        transform_chain_hash,
        dataset_snapshot_id,
        lineage_root_hash,
        metrics: Metrics {
            source_count: report.source_count,
            transform_count: report.transform_count,
            snapshot_size_bytes: data.size_bytes,
        },
    })
}

/// The lineage objects a snapshot commits (this implementation's choice, see
/// `docs/lineage.md`): one `split` object per split entry (payload: the entry map), one
/// `transform` object per transform (payload: its map), and one `dataset` object whose payload is
/// the `dataset_snapshot_id` preimage array, so its `object_id` *is* the snapshot ID; the dataset
/// object references every split and transform object.
#[must_use]
pub fn snapshot_lineage_objects(
    inputs: &SnapshotInputs,
    dataset_root_hash: Digest,
) -> Vec<LineageObject> {
    let tenant = &inputs.tenant_id;
    let mut objects: Vec<LineageObject> = inputs
        .splits
        .entries()
        .iter()
        .map(|s| LineageObject {
            tenant_id: tenant.clone(),
            object_type: ObjectType::Split,
            payload: s.to_cbor(),
            refs: vec![],
        })
        .chain(
            inputs
                .transforms
                .transforms()
                .iter()
                .map(|t| LineageObject {
                    tenant_id: tenant.clone(),
                    object_type: ObjectType::Transform,
                    payload: t.to_cbor(),
                    refs: vec![],
                }),
        )
        .collect();
    let refs = objects.iter().map(LineageObject::as_ref_to).collect();
    objects.push(LineageObject {
        tenant_id: tenant.clone(),
        object_type: ObjectType::Dataset,
        payload: snapshot_preimage(
            tenant,
            dataset_root_hash,
            inputs.splits.split_hashes(),
            inputs.transforms.transform_chain_hash(),
            &inputs.version,
        ),
        refs,
    });
    objects
}

/// Recomputes and compares a snapshot ID (`verify`; 004 §0.K: abort on mismatch).
///
/// # Errors
/// [`Error::SnapshotHashMismatch`].
pub fn verify_snapshot_id(expected: Digest, snapshot: &Snapshot) -> Result<(), Error> {
    if snapshot.dataset_snapshot_id == expected {
        Ok(())
    } else {
        Err(Error::SnapshotHashMismatch {
            expected,
            found: snapshot.dataset_snapshot_id,
        })
    }
}

/// The inputs of `data_access_plan_hash`; the two policies are the contract's constants.
/// Each is a 32-byte hash (a CBOR byte string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessPlanInputs {
    /// `kernel_replay_token`.
    pub kernel_replay_token: Digest,
    /// `manifest_hash`.
    pub manifest_hash: Digest,
    /// `dataset_key`: normally the `dataset_snapshot_id` of the snapshot read.
    pub dataset_key: Digest,
    /// `sampler_config_hash`.
    pub sampler_config_hash: Digest,
}

/// `data_access_plan_hash = SHA-256(CBOR_CANONICAL([kernel_replay_token, manifest_hash, dataset_key, sampler_config_hash, world_size_policy, epoch_seed_rule]))`.
#[must_use]
pub fn data_access_plan_hash(p: &AccessPlanInputs) -> Digest {
    sha256_cbor(&Value::Array(vec![
        p.kernel_replay_token.to_cbor(),
        p.manifest_hash.to_cbor(),
        p.dataset_key.to_cbor(),
        p.sampler_config_hash.to_cbor(),
        Value::text(WORLD_SIZE_POLICY),
        Value::text(EPOCH_SEED_RULE),
    ]))
}

/// A text-keyed CBOR map from pairs (helper for records).
pub(crate) fn map<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Map(
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect::<BTreeMap<_, _>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_id_preimage_is_the_five_element_array() {
        let (r, s, t) = (Digest([1; 32]), Digest([2; 32]), Digest([3; 32]));
        let mut pre = vec![0x85, 0x61, b'T'];
        for b in [1u8, 2, 3] {
            pre.extend_from_slice(&[0x58, 0x20]);
            pre.extend_from_slice(&[b; 32]);
        }
        pre.extend_from_slice(&[0x62, b'v', b'1']);
        assert_eq!(
            dataset_snapshot_id("T", r, s, t, "v1"),
            crate::hash::sha256(&pre)
        );
    }

    #[test]
    fn dataset_object_id_is_the_snapshot_id() -> Result<(), Error> {
        let data = crate::dataset_root_hash([("a", &b"x"[..])])?;
        let inputs = SnapshotInputs {
            tenant_id: "t".into(),
            version: "v".into(),
            splits: SplitDefs::default(),
            transforms: TransformChain::default(),
        };
        let s = build_snapshot(&inputs, &data)?;
        let objs = snapshot_lineage_objects(&inputs, data.root_hash);
        let ds = objs.iter().find(|o| o.object_type == ObjectType::Dataset);
        assert_eq!(
            ds.map(LineageObject::object_id),
            Some(s.dataset_snapshot_id)
        );
        Ok(())
    }

    #[test]
    fn empty_tenant_is_refused() -> Result<(), Error> {
        let data = crate::dataset_root_hash([("a", &b"x"[..])])?;
        let inputs = SnapshotInputs {
            tenant_id: String::new(),
            version: "v".into(),
            splits: SplitDefs::default(),
            transforms: TransformChain::default(),
        };
        assert!(matches!(
            build_snapshot(&inputs, &data),
            Err(Error::InvalidArgument { .. })
        ));
        Ok(())
    }

    /// Plan inputs whose four hashes are 32 bytes of 0, 1, 2 and 3.
    fn plan_inputs() -> AccessPlanInputs {
        AccessPlanInputs {
            kernel_replay_token: Digest([0; 32]),
            manifest_hash: Digest([1; 32]),
            dataset_key: Digest([2; 32]),
            sampler_config_hash: Digest([3; 32]),
        }
    }

    #[test]
    fn plan_hash_is_sha256_of_the_six_element_array() {
        let p = plan_inputs();
        let mut pre = vec![0x86];
        for b in [0u8, 1, 2, 3] {
            pre.extend_from_slice(&[0x58, 0x20]);
            pre.extend_from_slice(&[b; 32]);
        }
        pre.extend_from_slice(&[0x78, 0x18]);
        pre.extend_from_slice(b"rank_contiguous_shard_v1");
        pre.push(0x72);
        pre.extend_from_slice(b"epoch_seed_rule_v2");
        assert_eq!(data_access_plan_hash(&p), crate::hash::sha256(&pre));
    }

    #[test]
    fn plan_hash_differs_from_snapshot_id_for_the_same_hashes() {
        let p = plan_inputs();
        let mut q = p;
        q.sampler_config_hash = Digest([4; 32]);
        assert_ne!(data_access_plan_hash(&p), data_access_plan_hash(&q));
    }
}
