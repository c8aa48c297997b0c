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

/// Whether the file at relative path `path` belongs to a set: an `.ald` file (lineage's
/// [`RecordFormat`] of the path). Every other file below the set's root is ignored.
#[must_use]
pub fn is_member(path: &str) -> bool {
    RecordFormat::of_path(path) == Some(RecordFormat::Ald)
}

/// Refuses the file at `path` (a member of a set, listed after the first one) when its schema
/// `found` is not the set's `expected` one.
///
/// # Errors
/// `SchemaMismatch` naming both schemas and the path.
pub fn check_member_schema(expected: &SchemaRef, found: &SchemaRef, path: &str) -> Result<()> {
    if expected != found {
        return Err(Error::SchemaMismatch {
            expected: expected.to_string(),
            found: format!("{found} in {path}"),
        });
    }
    Ok(())
}

/// The units of a set numbered across its files: the chunks of file 0, then those of file 1,
/// and so on (files in the set's canonical order). Local ([`TrainingSet`]) and remote sets
/// (`remote_file::RemoteTrainingSet`) number their units through this one type, so the same
/// files give the same unit numbers wherever they are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitIndex {
    /// `first_unit[f]` is the number of units before file `f`; the last entry is the total.
    first_unit: Vec<u64>,
}

impl Default for UnitIndex {
    fn default() -> Self {
        Self::new()
    }
}

impl UnitIndex {
    /// An index of no file.
    #[must_use]
    pub fn new() -> Self {
        Self {
            first_unit: vec![0],
        }
    }

    /// Appends the next file, of `chunks` units (a file without chunks has none and is passed
    /// over by [`UnitIndex::locate`]).
    pub fn push(&mut self, chunks: usize) {
        let units = self.num_units().saturating_add(chunks as u64);
        self.first_unit.push(units);
    }

    /// Files in the index.
    #[must_use]
    pub fn num_files(&self) -> usize {
        self.first_unit.len() - 1
    }

    /// Units in the index.
    #[must_use]
    pub fn num_units(&self) -> u64 {
        self.first_unit.last().copied().unwrap_or(0)
    }

    /// The number of the first unit of file `file` (the units before it).
    #[must_use]
    pub fn first_unit(&self, file: usize) -> Option<u64> {
        (file < self.num_files()).then(|| self.first_unit[file])
    }

    /// The file index and chunk of unit `unit`; `None` past the last unit.
    #[must_use]
    pub fn locate(&self, unit: u64) -> Option<(usize, usize)> {
        if unit >= self.num_units() {
            return None;
        }
        // The last file starting at or before `unit` (files without chunks start where the
        // next one does and are passed over).
        let file = self.first_unit.partition_point(|&first| first <= unit) - 1;
        Some((file, usize::try_from(unit - self.first_unit[file]).ok()?))
    }
}

/// The `.ald` files of a directory, opened and verified, with their chunks numbered.
#[derive(Debug)]
pub struct TrainingSet {
    root: PathBuf,
    files: Vec<(String, StreamingDataset<SharedMap>)>,
    units: UnitIndex,
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
        let mut units = UnitIndex::new();
        for path in tree.paths() {
            if !is_member(path.as_str()) {
                continue;
            }
            let dataset = StreamingDataset::open(root.join(path.as_str()), options)?;
            if let Some((_, first)) = files.first() {
                let first: &StreamingDataset<SharedMap> = first;
                check_member_schema(first.schema(), dataset.schema(), path.as_str())?;
            }
            units.push(dataset.num_chunks());
            files.push((path.as_str().to_owned(), dataset));
        }
        if files.is_empty() {
            return Err(Error::InvalidArgument("the directory holds no .ald file"));
        }
        Ok(Self {
            root: root.to_owned(),
            files,
            units,
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
        self.units.num_units()
    }

    /// The numbering of the set's units.
    #[must_use]
    pub fn units(&self) -> &UnitIndex {
        &self.units
    }

    /// Rows in the set.
    #[must_use]
    pub fn num_rows(&self) -> u64 {
        self.files.iter().map(|(_, d)| d.num_rows()).sum()
    }

    /// The file (relative path) and chunk of unit `unit`.
    #[must_use]
    pub fn unit(&self, unit: u64) -> Option<(&str, usize)> {
        let (file, chunk) = self.units.locate(unit)?;
        Some((self.files[file].0.as_str(), chunk))
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
        let (file, chunk) = self.set.units.locate(unit)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_number_chunks_across_files_and_pass_over_empty_files() {
        let mut index = UnitIndex::new();
        assert_eq!((index.num_files(), index.num_units()), (0, 0));
        assert_eq!(index.locate(0), None);
        for chunks in [2, 0, 3, 0, 1] {
            index.push(chunks);
        }
        assert_eq!((index.num_files(), index.num_units()), (5, 6));
        let located: Vec<_> = (0..6).map(|unit| index.locate(unit).unwrap()).collect();
        assert_eq!(located, [(0, 0), (0, 1), (2, 0), (2, 1), (2, 2), (4, 0)]);
        assert_eq!(index.locate(6), None);
        assert_eq!(index.locate(u64::MAX), None);
        let firsts: Vec<_> = (0..6).map(|file| index.first_unit(file)).collect();
        assert_eq!(firsts, [Some(0), Some(2), Some(2), Some(5), Some(5), None]);
    }

    #[test]
    fn members_are_ald_files_and_schemas_must_match() {
        assert!(is_member("a/b.ald"));
        assert!(!is_member("README.md"));
        assert!(!is_member("a.ald.tmp"));
        let one = std::sync::Arc::new(arrow_schema::Schema::new(vec![arrow_schema::Field::new(
            "x",
            arrow_schema::DataType::Int64,
            false,
        )]));
        let other = std::sync::Arc::new(arrow_schema::Schema::empty());
        assert!(check_member_schema(&one, &one.clone(), "a.ald").is_ok());
        let error = check_member_schema(&one, &other, "b/c.ald").unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::SchemaMismatch);
        assert!(error.to_string().contains("b/c.ald"), "{error}");
    }
}
