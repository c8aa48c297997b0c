//! Training data over a sharded `.ald` set: every `.ald` file below a directory, read by many
//! ranks at once, each rank taking exactly the chunks the run's lineage access plan names.
//!
//! The unit of reading is the chunk (a STREAMING file's row group; a file without chunks is one).
//! Units are numbered in the set's canonical order: files in lineage's canonical path order
//! (docs/lineage.md §2.1, the order the set's `dataset_snapshot_id` commits to), chunks in file
//! order. A run's sampler configuration ([`TrainingSet::sampler_config`]) holds the sampler fields
//! and `"unit": "ald_chunk_v1"`; its hash is the `sampler_config_hash` of the run's
//! `data_access_plan_hash` (docs/lineage.md §6.1). Rank `r` of epoch `e` reads the units
//! [`lineage::plan::Sampler::rank_units`] gives (`rank_contiguous_shard_v1` over the
//! `epoch_seed_rule_v2` order, §6.3), so the data order of a distributed run is the one its
//! plan hash names, and two runs with the same plan read the same rows in the same order.
//!
//! Every chunk is read through [`StreamingDataset`]: its CRC-32C (or AES-GCM tag) is checked
//! before it is decoded, exactly as for one local file.

use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use lineage::cbor::Value;
use lineage::plan::{Sampler, SamplerConfig};
use lineage::records::RecordFormat;

use crate::fs::SharedMap;
use crate::streaming::{ChunkReader, StreamingDataset};
use crate::{Error, LoadOptions, Result};

/// The `"unit"` of a sampler configuration that reads `.ald` sets chunk by chunk.
pub const CHUNK_UNIT: &str = "ald_chunk_v1";

/// The `.ald` files of a directory, opened and verified, with their chunks numbered.
#[derive(Debug)]
pub struct TrainingSet {
    root: PathBuf,
    files: Vec<(String, StreamingDataset<SharedMap>)>,
    /// `first_unit[f]` is the number of units before file `f`; the last entry is the total.
    first_unit: Vec<u64>,
}

impl TrainingSet {
    /// Opens every `.ald` file below `root` (lineage's walk: symlinks refused, paths in
    /// canonical order) with `options` and checks that they share one schema.
    ///
    /// # Errors
    /// `Io` and `Usage` for the walk (no `.ald` file at all is `Usage` too), a file's own
    /// failure as [`StreamingDataset::open`] reports it, `SchemaMismatch` for a file whose schema
    /// differs from the first one's.
    pub fn open(root: impl AsRef<Path>, options: &LoadOptions<'_>) -> Result<Self> {
        let root = root.as_ref();
        let tree =
            lineage::fs::walk(root, lineage::fs::SymlinkPolicy::Refuse).map_err(Error::Lineage)?;
        let mut files = Vec::new();
        let mut first_unit = vec![0u64];
        for path in tree.paths() {
            if RecordFormat::of_path(path.as_str()) != Some(RecordFormat::Ald) {
                continue;
            }
            let dataset = StreamingDataset::open(root.join(path.as_str()), options)?;
            if let Some((_, first)) = files.first() {
                let first: &StreamingDataset<SharedMap> = first;
                if first.schema() != dataset.schema() {
                    return Err(Error::SchemaMismatch {
                        expected: first.schema().to_string(),
                        found: format!("{} in {}", dataset.schema(), path.as_str()),
                    });
                }
            }
            let units = first_unit.last().copied().unwrap_or(0) + dataset.num_chunks() as u64;
            first_unit.push(units);
            files.push((path.as_str().to_owned(), dataset));
        }
        if files.is_empty() {
            return Err(Error::InvalidArgument("the directory holds no .ald file"));
        }
        Ok(Self {
            root: root.to_owned(),
            files,
            first_unit,
        })
    }

    /// The directory the set was opened from.
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The schema every file shares.
    #[must_use]
    pub fn schema(&self) -> &SchemaRef {
        self.files[0].1.schema()
    }

    /// The files' relative paths, in canonical order.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|(path, _)| path.as_str())
    }

    /// Units (chunks) in the set.
    #[must_use]
    pub fn num_units(&self) -> u64 {
        self.first_unit.last().copied().unwrap_or(0)
    }

    /// Rows in the set.
    #[must_use]
    pub fn num_rows(&self) -> u64 {
        self.files.iter().map(|(_, d)| d.num_rows()).sum()
    }

    /// The file (relative path) and chunk of unit `unit`.
    #[must_use]
    pub fn unit(&self, unit: u64) -> Option<(&str, usize)> {
        let (file, chunk) = self.locate(unit)?;
        Some((self.files[file].0.as_str(), chunk))
    }

    /// The file index and chunk of unit `unit`.
    fn locate(&self, unit: u64) -> Option<(usize, usize)> {
        if unit >= self.num_units() {
            return None;
        }
        // The last file starting at or before `unit` (files without chunks start where the
        // next one does and are passed over).
        let file = self.first_unit.partition_point(|&first| first <= unit) - 1;
        Some((file, usize::try_from(unit - self.first_unit[file]).ok()?))
    }

    /// The sampler configuration of a run over this set: the sampler fields and `"unit":
    /// "ald_chunk_v1"`. Its hash is the run's `sampler_config_hash`.
    ///
    /// # Errors
    /// `Usage` when `world_size` or `batch_size` is zero.
    pub fn sampler_config(
        world_size: u64,
        batch_size: u64,
        shuffle_seed: Option<u64>,
        drop_last: bool,
    ) -> Result<SamplerConfig> {
        SamplerConfig::from_fields(world_size, batch_size, shuffle_seed, drop_last)
            .map(|config| config.with("unit", Value::text(CHUNK_UNIT)))
            .map_err(|_| Error::InvalidArgument("world_size and batch_size must be at least 1"))
    }

    /// The chunks rank `rank` reads in epoch `epoch` under `sampler`, in order, each as
    /// `(unit, record batch)`. Encrypted files are decrypted with `options.key` (each file's key
    /// derived once, here).
    ///
    /// # Errors
    /// `Usage` for a rank outside `0..world_size`; `DecryptionFailed` when a file's key does
    /// not open it.
    pub fn rank_batches(
        &self,
        sampler: &Sampler,
        rank: u64,
        epoch: u64,
        options: &LoadOptions<'_>,
    ) -> Result<RankBatches<'_>> {
        if rank >= sampler.world_size {
            return Err(Error::InvalidArgument("the rank is not below world_size"));
        }
        let readers = self
            .files
            .iter()
            .map(|(_, dataset)| reader_of(dataset, options))
            .collect::<Result<Vec<_>>>()?;
        Ok(RankBatches {
            set: self,
            readers,
            units: sampler
                .rank_units(self.num_units(), rank, epoch)
                .into_iter(),
        })
    }
}

fn reader_of<'a>(
    dataset: &'a StreamingDataset<SharedMap>,
    options: &LoadOptions<'_>,
) -> Result<ChunkReader<'a, SharedMap>> {
    #[cfg(feature = "format-encryption")]
    if dataset.file().is_encrypted() {
        let key = options
            .key
            .ok_or(Error::InvalidArgument("an encrypted file needs a key"))?;
        return dataset.with_key(key);
    }
    let _ = options;
    Ok(dataset.reader())
}

/// The chunks of one rank in one epoch ([`TrainingSet::rank_batches`]).
pub struct RankBatches<'a> {
    set: &'a TrainingSet,
    readers: Vec<ChunkReader<'a, SharedMap>>,
    units: std::vec::IntoIter<u64>,
}

impl core::fmt::Debug for RankBatches<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RankBatches")
            .field("remaining", &self.units.len())
            .finish_non_exhaustive()
    }
}

impl Iterator for RankBatches<'_> {
    type Item = Result<(u64, RecordBatch)>;

    fn next(&mut self) -> Option<Self::Item> {
        let unit = self.units.next()?;
        let (file, chunk) = self.set.locate(unit)?;
        Some(
            self.readers[file]
                .get_chunk(chunk)
                .map(|batch| (unit, batch)),
        )
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.units.size_hint()
    }
}
