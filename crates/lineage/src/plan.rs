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

    /// This configuration with `key` set to `value` (for example the `"unit"` a loader reads
    /// by, which then is part of what the plan commits to).
    #[must_use]
    pub fn with(mut self, key: &str, value: Value) -> Self {
        self.0.insert(key.to_owned(), value);
        self
    }

    /// The sampler fields the shard rules read ([`Sampler`]), when the configuration holds
    /// them as [`SamplerConfig::from_fields`] writes them.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the field that is missing, mistyped or zero.
    pub fn sampler(&self) -> Result<Sampler, Error> {
        let uint = |key: &'static str| match self.0.get(key) {
            Some(Value::Unsigned(n)) if *n > 0 => Ok(*n),
            _ => Err(Error::InvalidArgument {
                what: key,
                reason: "must be an integer of at least 1 in the sampler configuration",
                source: None,
            }),
        };
        let shuffle_seed = match self.0.get("shuffle_seed") {
            None => None,
            Some(Value::Unsigned(seed)) => Some(*seed),
            Some(_) => {
                return Err(Error::InvalidArgument {
                    what: "shuffle_seed",
                    reason: "must be an integer in [0, 2^64-1]",
                    source: None,
                });
            }
        };
        let drop_last = match self.0.get("drop_last") {
            Some(Value::Bool(b)) => *b,
            _ => {
                return Err(Error::InvalidArgument {
                    what: "drop_last",
                    reason: "must be true or false in the sampler configuration",
                    source: None,
                });
            }
        };
        Ok(Sampler {
            world_size: uint("world_size")?,
            batch_size: uint("batch_size")?,
            shuffle_seed,
            drop_last,
        })
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

/// Tag of the epoch-seed preimage (`epoch_seed_rule_v2`).
pub const EPOCH_SEED_TAG: &str = "epoch_seed_v2";

/// The four sampler fields the shard rules read (docs/lineage.md §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampler {
    /// Ranks (at least 1).
    pub world_size: u64,
    /// Units per batch and rank (at least 1).
    pub batch_size: u64,
    /// Seed of the per-epoch shuffle; `None` reads units in canonical order every epoch.
    pub shuffle_seed: Option<u64>,
    /// Whether every rank reads only whole batches, the same number each.
    pub drop_last: bool,
}

impl Sampler {
    /// `epoch_seed_rule_v2`: the seed of epoch `epoch`, the first eight bytes (big-endian) of
    /// `SHA-256(CBOR_CANONICAL(["epoch_seed_v2", shuffle_seed, epoch]))`; `None` without a
    /// shuffle seed.
    #[must_use]
    pub fn epoch_seed(&self, epoch: u64) -> Option<u64> {
        let seed = self.shuffle_seed?;
        let digest = sha256_cbor(&Value::Array(vec![
            Value::text(EPOCH_SEED_TAG),
            Value::Unsigned(seed),
            Value::Unsigned(epoch),
        ]));
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest.0[..8]);
        Some(u64::from_be_bytes(first))
    }

    /// The order in which epoch `epoch` reads `units` units: canonical order without a shuffle
    /// seed, else sorted by `SHA-256(CBOR_CANONICAL([epoch_seed, i]))` (the split shuffle's key,
    /// docs/lineage.md §3.4, under the epoch's seed).
    #[must_use]
    pub fn epoch_order(&self, units: u64, epoch: u64) -> Vec<u64> {
        crate::split::shuffled_order(units, self.epoch_seed(epoch))
    }

    /// `rank_contiguous_shard_v1`: the positions of the epoch order that rank `rank` reads, a
    /// contiguous range in rank order. With `drop_last` every rank reads
    /// `floor(units / (world_size * batch_size)) * batch_size` units; without it the first
    /// `units mod world_size` ranks read `floor(units / world_size) + 1` units and the others
    /// `floor(units / world_size)`, so every unit is read exactly once. `None` for a rank
    /// outside `0..world_size`.
    #[must_use]
    pub fn rank_range(&self, units: u64, rank: u64) -> Option<core::ops::Range<u64>> {
        if rank >= self.world_size {
            return None;
        }
        if self.drop_last {
            let per = units / self.world_size.saturating_mul(self.batch_size) * self.batch_size;
            return Some(rank * per..(rank + 1) * per);
        }
        let (base, extra) = (units / self.world_size, units % self.world_size);
        let start = rank * base + rank.min(extra);
        Some(start..start + base + u64::from(rank < extra))
    }

    /// The units rank `rank` reads in epoch `epoch`, in reading order (its batches are
    /// consecutive runs of `batch_size`, the last one shorter unless `drop_last`).
    #[must_use]
    pub fn rank_units(&self, units: u64, rank: u64, epoch: u64) -> Vec<u64> {
        let Some(range) = self.rank_range(units, rank) else {
            return Vec::new();
        };
        let order = self.epoch_order(units, epoch);
        let (start, end) = (
            usize::try_from(range.start).unwrap_or(usize::MAX),
            usize::try_from(range.end).unwrap_or(usize::MAX),
        );
        order
            .get(start..end)
            .map(<[u64]>::to_vec)
            .unwrap_or_default()
    }
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

    fn sampler(world_size: u64, batch_size: u64, seed: Option<u64>, drop_last: bool) -> Sampler {
        SamplerConfig::from_fields(world_size, batch_size, seed, drop_last)
            .unwrap()
            .sampler()
            .unwrap()
    }

    #[test]
    fn ranks_read_every_unit_once_without_drop_last() {
        for units in 0..40 {
            for world in 1..6 {
                let s = sampler(world, 3, Some(units), false);
                let mut all: Vec<u64> = (0..world)
                    .flat_map(|rank| s.rank_units(units, rank, 2))
                    .collect();
                all.sort_unstable();
                assert_eq!(
                    all,
                    (0..units).collect::<Vec<_>>(),
                    "{units} units, {world} ranks"
                );
                let sizes: Vec<u64> = (0..world)
                    .map(|r| s.rank_range(units, r).unwrap())
                    .map(|r| r.end - r.start)
                    .collect();
                assert!(sizes.windows(2).all(|w| w[0] >= w[1] && w[0] - w[1] <= 1));
            }
        }
    }

    #[test]
    fn drop_last_gives_every_rank_the_same_whole_batches() {
        let s = sampler(3, 4, None, true);
        // 29 units: floor(29 / 12) = 2 batches of 4 per rank, 24 read, 5 dropped.
        let ranges: Vec<_> = (0..3).map(|r| s.rank_range(29, r).unwrap()).collect();
        assert_eq!(ranges, [0..8, 8..16, 16..24]);
        assert_eq!(s.rank_range(29, 3), None);
        assert_eq!(s.rank_units(29, 1, 0), (8..16).collect::<Vec<_>>());
    }

    #[test]
    fn epochs_reshuffle_only_with_a_seed() {
        let seeded = sampler(1, 1, Some(7), false);
        assert_ne!(seeded.epoch_order(50, 0), seeded.epoch_order(50, 1));
        assert_eq!(seeded.epoch_order(50, 1), seeded.epoch_order(50, 1));
        let plain = sampler(1, 1, None, false);
        assert_eq!(plain.epoch_order(5, 3), [0, 1, 2, 3, 4]);
        // epoch_seed_rule_v2's preimage: ["epoch_seed_v2", 7, 1].
        let mut pre = vec![0x83, 0x6d];
        pre.extend_from_slice(b"epoch_seed_v2");
        pre.extend_from_slice(&[0x07, 0x01]);
        let digest = crate::hash::sha256(&pre);
        let want = u64::from_be_bytes(digest.0[..8].try_into().unwrap());
        assert_eq!(seeded.epoch_seed(1), Some(want));
    }

    #[test]
    fn sampler_fields_are_read_back_and_checked() {
        let config = SamplerConfig::from_fields(8, 32, Some(1), true)
            .unwrap()
            .with("unit", Value::text("ald_chunk"));
        assert_eq!(
            config.sampler().unwrap(),
            Sampler {
                world_size: 8,
                batch_size: 32,
                shuffle_seed: Some(1),
                drop_last: true
            }
        );
        assert!(
            SamplerConfig::from_json(r#"{"world_size": 2}"#)
                .unwrap()
                .sampler()
                .is_err()
        );
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
