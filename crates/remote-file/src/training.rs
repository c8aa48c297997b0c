//! A sharded `.ald` training set read straight from object storage (`s3://bucket/prefix/`, ...):
//! the remote twin of `ald::train::TrainingSet`, with the same files, the same unit numbers and
//! the same per-rank order, so a distributed run reads the data its `data_access_plan_hash`
//! names whether the set is on a local disk or in a bucket (docs/remote.md, "Training from
//! object storage").
//!
//! The prefix is listed once ([`Location::list`], the listing `lineage snapshot s3://` hashes);
//! every key is validated as a lineage `RelPath` and the keys are put in lineage's canonical path
//! order by lineage's own `sort_paths`, the order a local walk gives a copy of the tree. The
//! `.ald` objects (`ald::train::is_member`) are opened from their head and tail
//! ([`RemoteDataset`]), a bounded number at once, each pinned to the version the listing saw;
//! their chunks are numbered by `ald::train::UnitIndex`, the numbering `TrainingSet` uses. A rank
//! then streams the chunks `lineage::plan::Sampler::rank_units` names, a bounded number fetched
//! ahead on the runtime's worker threads, each checked (CRC-32C or AES-GCM) before it is decoded.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use ald::LoadOptions;
use ald::train::{TrainingSet, UnitIndex, check_member_schema, is_member};
use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use futures::{Stream, StreamExt as _, TryStreamExt as _};
use lineage::RelPath;
use lineage::plan::{Sampler, SamplerConfig};

use crate::dataset::RemoteDataset;
use crate::listing::{AbortOnDrop, Listed};
use crate::location::Location;
use crate::ranged::{InFlight, ReadOptions};
use crate::{Error, Result};

/// The `.ald` objects under a prefix, opened and verified, with their chunks numbered as
/// `ald::train::TrainingSet` numbers a local copy's.
pub struct RemoteTrainingSet {
    prefix: Location,
    /// The members' keys relative to the prefix, in canonical order.
    paths: Vec<String>,
    /// The members, in the same order (shared with the tasks of a rank stream).
    datasets: Arc<[RemoteDataset]>,
    units: Arc<UnitIndex>,
    options: ReadOptions,
    /// Whether the set was opened without a key (an encrypted member then refuses to stream).
    without_key: bool,
}

impl std::fmt::Debug for RemoteTrainingSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteTrainingSet")
            .field("prefix", &self.prefix.as_str())
            .field("paths", &self.paths)
            .field("units", &self.units.num_units())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl RemoteTrainingSet {
    /// Opens every `.ald` object under `location` (a prefix URL such as `s3://bucket/shards/`,
    /// or a local directory, see [`Location::parse`]) with `load`, and checks that they share
    /// one schema.
    ///
    /// # Errors
    /// As [`RemoteTrainingSet::open_location`]; `Location`.
    pub async fn open(
        location: &str,
        load: &LoadOptions<'_>,
        options: ReadOptions,
    ) -> Result<Self> {
        Self::open_location(Location::parse(location)?, load, options).await
    }

    /// Opens the set under `prefix`: one listing, then each `.ald` object opened as
    /// [`RemoteDataset::open_location`] opens it (two requests for a STREAMING file), at most
    /// [`ReadOptions::max_requests`] objects at once. An object whose size or ETag differs from
    /// the listing's is refused: the set is the tree listed.
    ///
    /// # Errors
    /// `Store` for a listing the store refuses; `InvalidKey` for a key that is not a lineage
    /// path; `EmptySet` when no `.ald` object is under the prefix; an object's own failure as
    /// [`RemoteDataset::open`] reports it; `ObjectChanged` for an object replaced since the
    /// listing; `Dataset` (`SchemaMismatch`) for a member whose schema differs from the first
    /// one's.
    pub async fn open_location(
        prefix: Location,
        load: &LoadOptions<'_>,
        options: ReadOptions,
    ) -> Result<Self> {
        let listed = prefix.list().await?;
        let members = members_in_canonical_order(&prefix, listed)?;
        if members.is_empty() {
            return Err(Error::EmptySet {
                location: prefix.as_str().to_owned(),
            });
        }
        let datasets: Vec<RemoteDataset> = futures::stream::iter(
            members
                .iter()
                .map(|(_, object)| open_member(object, load, options)),
        )
        .buffered(options.max_requests.max(1))
        .try_collect()
        .await?;
        let mut units = UnitIndex::new();
        for ((path, _), dataset) in members.iter().zip(&datasets) {
            check_member_schema(datasets[0].schema(), dataset.schema(), path)?;
            units.push(dataset.num_chunks());
        }
        #[cfg(feature = "format-encryption")]
        let without_key = load.key.is_none();
        #[cfg(not(feature = "format-encryption"))]
        let without_key = false;
        Ok(Self {
            prefix,
            paths: members.into_iter().map(|(path, _)| path).collect(),
            datasets: datasets.into(),
            units: Arc::new(units),
            options,
            without_key,
        })
    }

    /// The prefix the set was opened from.
    #[must_use]
    pub fn location(&self) -> &Location {
        &self.prefix
    }

    /// The schema every member shares.
    #[must_use]
    pub fn schema(&self) -> &SchemaRef {
        self.datasets[0].schema()
    }

    /// The members' keys relative to the prefix, in canonical order (the paths
    /// `TrainingSet::paths` gives for a local copy of the tree).
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.paths.iter().map(String::as_str)
    }

    /// The members, in canonical order (schema, chunk index, the requests each has cost).
    #[must_use]
    pub fn datasets(&self) -> &[RemoteDataset] {
        &self.datasets
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
        self.datasets.iter().map(RemoteDataset::num_rows).sum()
    }

    /// The member (key relative to the prefix) and chunk of unit `unit`.
    #[must_use]
    pub fn unit(&self, unit: u64) -> Option<(&str, usize)> {
        let (file, chunk) = self.units.locate(unit)?;
        Some((self.paths[file].as_str(), chunk))
    }

    /// Requests sent for the members so far (opens and chunks, retries included; the listing
    /// is not counted).
    #[must_use]
    pub fn requests(&self) -> u64 {
        self.datasets
            .iter()
            .map(|dataset| dataset.file().requests())
            .sum()
    }

    /// The sampler configuration of a run over this set: `TrainingSet::sampler_config`'s, the
    /// same for a local and a remote set.
    ///
    /// # Errors
    /// `Usage` when `world_size` or `batch_size` is zero.
    pub fn sampler_config(
        world_size: u64,
        batch_size: u64,
        shuffle_seed: Option<u64>,
        drop_last: bool,
    ) -> Result<SamplerConfig> {
        Ok(TrainingSet::sampler_config(
            world_size,
            batch_size,
            shuffle_seed,
            drop_last,
        )?)
    }

    /// The chunks rank `rank` reads in epoch `epoch` under `sampler`, in order, each as
    /// `(unit, record batch)`: the sequence `TrainingSet::rank_batches` gives for a local copy.
    /// Up to [`ReadOptions::max_requests`] chunks are fetched ahead of the consumer, as tasks
    /// on the current tokio runtime (so they progress on its worker threads while the consumer
    /// works), with at most [`ReadOptions::max_in_flight`] bytes fetched and not yet decoded;
    /// dropping the stream cancels them. Each chunk's bytes are checked (CRC-32C, or AES-GCM)
    /// before they are decoded, and a failed chunk is an `Err` item in its place.
    ///
    /// # Errors
    /// `Usage` for a rank outside `0..world_size`; `DecryptionFailed` (`KeyRequired`) when a
    /// member is encrypted and the set was opened without a key; `Runtime` when called outside
    /// a tokio runtime.
    pub fn rank_batches(
        &self,
        sampler: &Sampler,
        rank: u64,
        epoch: u64,
    ) -> Result<RemoteRankBatches> {
        if rank >= sampler.world_size {
            return Err(ald::Error::InvalidArgument("the rank is not below world_size").into());
        }
        if self.without_key && self.datasets.iter().any(RemoteDataset::is_encrypted) {
            return Err(envelope_core::Error::DecryptionFailed(
                envelope_core::DecryptionFailure::KeyRequired,
            )
            .into());
        }
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|error| Error::Runtime(std::io::Error::other(error)))?;
        let units = sampler.rank_units(self.num_units(), rank, epoch);
        let remaining = units.len();
        let datasets = Arc::clone(&self.datasets);
        let index = Arc::clone(&self.units);
        let in_flight = InFlight::new(self.options.max_in_flight);
        let stream = futures::stream::iter(units)
            .map(move |unit| {
                // Spawned when the stream takes the unit up: at most `max_requests` at once.
                let task = index.locate(unit).map(|(file, chunk)| {
                    let datasets = Arc::clone(&datasets);
                    let in_flight = in_flight.clone();
                    AbortOnDrop(runtime.spawn(async move {
                        let dataset = &datasets[file];
                        let mut batches = dataset
                            .chunks_within(&in_flight, 1, chunk..chunk + 1)
                            .await?;
                        batches
                            .pop()
                            .ok_or(ald::Error::InvalidArgument("a chunk read returned nothing"))
                            .map_err(Error::from)
                    }))
                });
                async move {
                    // `rank_units` names units below `num_units` only.
                    let mut task =
                        task.ok_or(ald::Error::InvalidArgument("the plan names no such unit"))?;
                    let batch = (&mut task.0)
                        .await
                        .map_err(|join| Error::Task(join.to_string()))??;
                    Ok((unit, batch))
                }
            })
            .buffered(self.options.max_requests.max(1));
        Ok(RemoteRankBatches {
            inner: Box::pin(stream),
            remaining,
        })
    }
}

/// The keys of `listed` validated as lineage paths, put in lineage's canonical order by
/// lineage's `sort_paths` (the order of a local walk of a copy of the tree), with the members of
/// a set (`.ald` objects) kept.
fn members_in_canonical_order(
    prefix: &Location,
    listed: Vec<Listed>,
) -> Result<Vec<(String, Listed)>> {
    let invalid = |source| Error::InvalidKey {
        location: prefix.as_str().to_owned(),
        source,
    };
    if listed.is_empty() {
        return Ok(Vec::new());
    }
    let mut paths = Vec::with_capacity(listed.len());
    let mut objects = HashMap::with_capacity(listed.len());
    for object in listed {
        paths.push(RelPath::new(&object.relative).map_err(invalid)?);
        objects.insert(object.relative.clone(), object);
    }
    let paths = lineage::dataset::sort_paths(paths).map_err(invalid)?;
    Ok(paths
        .into_iter()
        .filter(|path| is_member(path.as_str()))
        .filter_map(|path| {
            let object = objects.remove(path.as_str())?;
            Some((path.as_str().to_owned(), object))
        })
        .collect())
}

/// Opens one member and checks it is the version the listing saw.
async fn open_member(
    object: &Listed,
    load: &LoadOptions<'_>,
    options: ReadOptions,
) -> Result<RemoteDataset> {
    let dataset = RemoteDataset::open_location(object.location().clone(), load, options).await?;
    let file = dataset.file();
    let tag_differs = matches!(
        (object.e_tag.as_deref(), file.e_tag()),
        (Some(listed), Some(opened)) if listed != opened
    );
    if file.size() != object.size || tag_differs {
        return Err(Error::ObjectChanged {
            location: object.location().as_str().to_owned(),
            expected: object.e_tag.clone().or(Some(object.size.to_string())),
            found: file
                .e_tag()
                .map(str::to_owned)
                .or(Some(file.size().to_string())),
        });
    }
    Ok(dataset)
}

/// The stream behind [`RemoteRankBatches`].
type Units = Pin<Box<dyn Stream<Item = Result<(u64, RecordBatch)>> + Send>>;

/// The chunks of one rank in one epoch ([`RemoteTrainingSet::rank_batches`]): a stream of
/// `(unit, record batch)` in the rank's order.
pub struct RemoteRankBatches {
    inner: Units,
    remaining: usize,
}

impl std::fmt::Debug for RemoteRankBatches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteRankBatches")
            .field("remaining", &self.remaining)
            .finish_non_exhaustive()
    }
}

impl Stream for RemoteRankBatches {
    type Item = Result<(u64, RecordBatch)>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = self.inner.as_mut().poll_next(cx);
        if let Poll::Ready(Some(_)) = polled {
            self.remaining = self.remaining.saturating_sub(1);
        }
        polled
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(prefix: &Location, keys: &[&str]) -> Vec<Listed> {
        keys.iter()
            .map(|key| Listed::for_test(prefix, key))
            .collect()
    }

    #[test]
    fn members_are_the_ald_keys_in_lineage_order() {
        let prefix = Location::parse("file:///tmp/set").unwrap();
        // Listed in an order unlike the canonical one; `-`, `.` and `/` sort bytewise.
        let keys = [
            "b/part-1.ald",
            "a/z.ald",
            "README.md",
            "a.ald",
            "a-b.ALD",
            "B.ald",
            "a0.ald",
            "\u{e9}t\u{e9}.ald",
        ];
        let members = members_in_canonical_order(&prefix, listing(&prefix, &keys)).unwrap();
        let paths: Vec<&str> = members.iter().map(|(path, _)| path.as_str()).collect();
        let mut expected: Vec<RelPath> = keys
            .iter()
            .filter(|key| is_member(key))
            .map(|key| RelPath::new(key).unwrap())
            .collect();
        expected.sort();
        let expected: Vec<&str> = expected.iter().map(RelPath::as_str).collect();
        assert_eq!(paths, expected);
        assert_eq!(
            paths,
            [
                "B.ald",
                "a-b.ALD",
                "a.ald",
                "a/z.ald",
                "a0.ald",
                "b/part-1.ald",
                "\u{e9}t\u{e9}.ald"
            ]
        );
        for (path, object) in &members {
            assert_eq!(path, &object.relative);
        }
    }

    #[test]
    fn keys_that_are_not_lineage_paths_are_refused_and_no_member_is_empty() {
        let prefix = Location::parse("file:///tmp/set").unwrap();
        let error = members_in_canonical_order(&prefix, listing(&prefix, &["a.ald", "b/./c.ald"]))
            .unwrap_err();
        assert!(matches!(error, Error::InvalidKey { .. }), "{error}");
        assert_eq!(error.signal(), envelope_core::Signal::Usage);
        assert!(error.to_string().starts_with("Usage: "), "{error}");
        let none = members_in_canonical_order(&prefix, listing(&prefix, &["notes.txt"])).unwrap();
        assert!(none.is_empty());
        assert!(
            members_in_canonical_order(&prefix, Vec::new())
                .unwrap()
                .is_empty()
        );
    }
}
