//! The run/access-plan identity a snapshot run emits beside its snapshot ID (004 §II.F
//! "Run/access-plan identity", §6 step 4): the sampler configuration and its hash, and the
//! inputs of [`data_access_plan_hash`] as a run derives them when the caller names only some.
//!
//! The contract fixes the plan hash's preimage but not where its four hashes come from; this
//! implementation's rules (docs/lineage.md §6.1) are:
//!
//! - `sampler_config_hash = SHA-256(CBOR_CANONICAL(["sampler_config_v1", sampler_config]))`,
//!   where `sampler_config` is a map: a JSON object given by the caller, or the one built from
//!   the four sampler fields ([`SamplerConfig::from_fields`]);
//! - `kernel_replay_token` defaults to the run's replay token
//!   ([`replay_token`](crate::trace::replay_token) of the tenant and run ID);
//! - `manifest_hash` defaults to the `dataset_root_hash`, the Merkle commitment to the manifest
//!   of every file read;
//! - `dataset_key` is the `dataset_snapshot_id` of the snapshot the run reads.

use std::collections::BTreeMap;

use crate::cbor::Value;
use crate::error::Error;
use crate::hash::{Digest, sha256_cbor};
use crate::snapshot::{AccessPlanInputs, Snapshot, data_access_plan_hash};

/// Tag of the sampler-configuration preimage.
pub const SAMPLER_CONFIG_TAG: &str = "sampler_config_v1";

/// A sampler configuration: a map of the settings that decide which sample a rank reads at
/// which step (world size, batch size, shuffle seed, ...), committed to by its hash.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplerConfig(BTreeMap<String, Value>);

impl SamplerConfig {
    /// A configuration read from a JSON object (RFC 8259, read by the crate's strict reader:
    /// integers stay integers, duplicate keys are refused).
    ///
    /// # Errors
    /// [`Error::InvalidJson`], [`Error::NonFinite`], or [`Error::InvalidArgument`] when the
    /// document is not an object.
    ///
    /// # Examples
    /// ```
    /// use lineage::plan::SamplerConfig;
    /// let a = SamplerConfig::from_json(r#"{"world_size": 8, "batch_size": 32}"#)?;
    /// let b = SamplerConfig::from_json(r#"{"batch_size": 32, "world_size": 8}"#)?;
    /// assert_eq!(a.hash(), b.hash()); // key order does not matter
    /// # Ok::<(), lineage::Error>(())
    /// ```
    pub fn from_json(text: &str) -> Result<Self, Error> {
        match crate::json::parse(text)? {
            Value::Map(map) => Ok(Self(map)),
            _ => Err(Error::InvalidArgument {
                what: "sampler configuration",
                reason: "must be a JSON object",
                source: None,
            }),
        }
    }

    /// The configuration `{"world_size", "batch_size", "drop_last"}` plus `"shuffle_seed"` when
    /// one is given (no seed: samples are read in canonical order).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `world_size` or `batch_size` is zero.
    pub fn from_fields(
        world_size: u64,
        batch_size: u64,
        shuffle_seed: Option<u64>,
        drop_last: bool,
    ) -> Result<Self, Error> {
        for (what, value) in [("world_size", world_size), ("batch_size", batch_size)] {
            if value == 0 {
                return Err(Error::InvalidArgument {
                    what,
                    reason: "must be at least 1",
                    source: None,
                });
            }
        }
        Ok(Self(fields(
            world_size,
            batch_size,
            shuffle_seed,
            drop_last,
        )))
    }

    /// The configuration as a CBOR map.
    #[must_use]
    pub fn to_cbor(&self) -> Value {
        Value::Map(self.0.clone())
    }

    /// `sampler_config_hash = SHA-256(CBOR_CANONICAL(["sampler_config_v1", config]))`.
    #[must_use]
    pub fn hash(&self) -> Digest {
        sha256_cbor(&Value::Array(vec![
            Value::text(SAMPLER_CONFIG_TAG),
            self.to_cbor(),
        ]))
    }
}

impl Default for SamplerConfig {
    /// One rank, batches of one sample, no shuffling, nothing dropped.
    fn default() -> Self {
        Self(fields(1, 1, None, false))
    }
}

/// The map of [`SamplerConfig::from_fields`], unchecked.
fn fields(
    world_size: u64,
    batch_size: u64,
    shuffle_seed: Option<u64>,
    drop_last: bool,
) -> BTreeMap<String, Value> {
    let mut map = BTreeMap::from([
        ("world_size".to_owned(), Value::Unsigned(world_size)),
        ("batch_size".to_owned(), Value::Unsigned(batch_size)),
        ("drop_last".to_owned(), Value::Bool(drop_last)),
    ]);
    if let Some(seed) = shuffle_seed {
        map.insert("shuffle_seed".to_owned(), Value::Unsigned(seed));
    }
    map
}

/// What a caller may fix of a run's access plan; `None` takes the rule of the module docs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PlanOverrides {
    /// `kernel_replay_token` (default: the run's replay token).
    pub kernel_replay_token: Option<Digest>,
    /// `manifest_hash` (default: the `dataset_root_hash`).
    pub manifest_hash: Option<Digest>,
    /// `sampler_config_hash` (default: the hash of the sampler configuration given).
    pub sampler_config_hash: Option<Digest>,
}

/// The access plan of one run over one snapshot: its inputs and its hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccessPlan {
    /// The four hashes of the preimage.
    pub inputs: AccessPlanInputs,
    /// `data_access_plan_hash`.
    pub hash: Digest,
}

impl AccessPlan {
    /// The plan of run `run_id` of tenant `tenant_id` reading `snapshot` with `sampler`.
    ///
    /// # Examples
    /// ```
    /// use lineage::plan::{AccessPlan, PlanOverrides, SamplerConfig};
    /// use lineage::{SnapshotInputs, build_snapshot, dataset_root_hash};
    /// let data = dataset_root_hash([("a.txt", &b"hello"[..])])?;
    /// let inputs = SnapshotInputs::new("acme", "v1", Default::default(), Default::default())?;
    /// let snap = build_snapshot(&inputs, &data)?;
    /// let plan = AccessPlan::new(&snap, "acme", "run-1", &SamplerConfig::default(), PlanOverrides::default());
    /// assert_eq!(plan.inputs.dataset_key, snap.dataset_snapshot_id);
    /// assert_ne!(plan.hash, snap.dataset_snapshot_id); // distinct, never conflated (§II.F)
    /// # Ok::<(), lineage::Error>(())
    /// ```
    #[must_use]
    pub fn new(
        snapshot: &Snapshot,
        tenant_id: &str,
        run_id: &str,
        sampler: &SamplerConfig,
        overrides: PlanOverrides,
    ) -> Self {
        let inputs = AccessPlanInputs {
            kernel_replay_token: overrides
                .kernel_replay_token
                .unwrap_or_else(|| crate::trace::replay_token(tenant_id, run_id)),
            manifest_hash: overrides
                .manifest_hash
                .unwrap_or(snapshot.dataset_root_hash),
            dataset_key: snapshot.dataset_snapshot_id,
            sampler_config_hash: overrides
                .sampler_config_hash
                .unwrap_or_else(|| sampler.hash()),
        };
        Self {
            inputs,
            hash: data_access_plan_hash(&inputs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampler_hash_is_sha256_of_the_tagged_pair() {
        let config = SamplerConfig::from_json(r#"{"b": 1}"#).unwrap();
        // ["sampler_config_v1", {"b": 1}]
        let mut pre = vec![0x82, 0x71];
        pre.extend_from_slice(b"sampler_config_v1");
        pre.extend_from_slice(&[0xa1, 0x61, b'b', 0x01]);
        assert_eq!(config.hash(), crate::hash::sha256(&pre));
    }

    #[test]
    fn default_is_the_fields_of_one_rank_and_batches_of_one() {
        assert_eq!(
            SamplerConfig::default(),
            SamplerConfig::from_fields(1, 1, None, false).unwrap()
        );
        assert_eq!(
            SamplerConfig::default().hash(),
            SamplerConfig::from_json(r#"{"batch_size":1,"drop_last":false,"world_size":1}"#)
                .unwrap()
                .hash()
        );
    }

    #[test]
    fn non_objects_and_zero_sizes_are_refused() {
        for text in ["[]", "1", "null", "\"x\""] {
            assert!(matches!(
                SamplerConfig::from_json(text),
                Err(Error::InvalidArgument { .. })
            ));
        }
        assert!(SamplerConfig::from_json(r#"{"a":1,"a":2}"#).is_err());
        assert!(SamplerConfig::from_fields(0, 1, None, false).is_err());
        assert!(SamplerConfig::from_fields(1, 0, None, false).is_err());
    }

    #[test]
    fn the_seed_changes_the_hash() {
        let a = SamplerConfig::from_fields(8, 32, Some(1), false).unwrap();
        let b = SamplerConfig::from_fields(8, 32, Some(2), false).unwrap();
        let c = SamplerConfig::from_fields(8, 32, None, false).unwrap();
        assert_ne!(a.hash(), b.hash());
        assert_ne!(a.hash(), c.hash());
    }
}
