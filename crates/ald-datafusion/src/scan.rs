//! The physical scan: [`AldScanExec`], whose partitions are groups of units of scan work (one
//! STREAMING chunk, or a whole non-STREAMING file), each decoded through `ald` on a blocking
//! thread and handed to DataFusion through the C Data Interface bridge.
//!
//! What is pushed down and what is not:
//! - **Projection.** The columns asked for are passed down into `ald`'s chunk decode
//!   (`get_chunk_projected`, `get_rows_projected`): only their Arrow IPC buffers (and the
//!   dictionaries they use) are decoded and validated, and only they are bridged to DataFusion.
//!   The chunk's bytes are still read, checked (CRC-32C or AES-GCM tag), decrypted and
//!   decompressed whole: the checksum, the tag and the compression frame each cover the whole
//!   chunk, not a column (docs/ald.md §6.2). `EXPLAIN` says so (`read=whole chunks`,
//!   `decode=k of n columns`), and the `columns_bridged` metric counts the columns decoded and
//!   handed over.
//! - **Limit.** Units are planned only until they hold `limit` rows (exact row counts from the
//!   chunk index), each partition stops after `limit` rows, and a unit cut by the limit is read
//!   with `ald`'s `get_rows`, which stops decoding a plain file's chunk once the rows are there.
//!   A consumer that stops early (a `LIMIT` above a filter) stops the decoding thread: the next
//!   send fails and no further chunk is read.
//! - **Filters** are not pushed down (the file keeps no per-chunk column statistics to prune
//!   with); DataFusion applies them above the scan.
//!
//! Where the bytes come from: a local file is decoded from its memory map on a blocking thread;
//! an object on object storage is opened again through `remote_file::RemoteDataset` (the ETag and
//! size must be those planned from) and a partition fetches its chunks by range on the runtime,
//! a few ahead of its consumer, within the dataset's bound on bytes in flight. The metrics
//! `requests`, `bytes_fetched` (what the network carried: opens, signature checks and retries
//! included) and `bytes_needed` (the stored bytes of the chunks read) say what it cost.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{Statistics, internal_err};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchReceiverStream;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream, StatisticsArgs,
};

use futures::StreamExt as _;
use remote_file::RemoteDataset;

use crate::config::Keys;
use crate::source::{self, Dataset, FileInfo, RemoteObject};
use crate::{Error, bridge};

pub(crate) mod parts;
pub use parts::AldScanParts;

/// One unit of scan work: chunk `chunk` of file `file` (chunk 0 of a non-STREAMING file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unit {
    pub(crate) file: usize,
    pub(crate) chunk: usize,
    pub(crate) rows: u64,
    pub(crate) decoded_bytes: u64,
}

/// Every unit of `files` in order, stopping once `limit` rows are covered.
pub(crate) fn plan_units(files: &[FileInfo], limit: Option<usize>) -> Vec<Unit> {
    let limit = limit.map_or(u64::MAX, |limit| limit as u64);
    let mut units = Vec::new();
    let mut covered = 0u64;
    for (file, info) in files.iter().enumerate() {
        for (chunk, entry) in info.chunks.iter().enumerate() {
            if covered >= limit {
                return units;
            }
            if entry.item_count == 0 {
                continue;
            }
            covered = covered.saturating_add(entry.item_count);
            units.push(Unit {
                file,
                chunk,
                rows: entry.item_count,
                decoded_bytes: entry.uncompressed_size,
            });
        }
    }
    units
}

/// `units` in at most `target` contiguous groups of (nearly) equal unit counts, in order; one
/// empty group when there is no unit (DataFusion needs a partition).
pub(crate) fn split(units: &[Unit], target: usize) -> Vec<Vec<Unit>> {
    if units.is_empty() {
        return vec![Vec::new()];
    }
    let groups = target.clamp(1, units.len());
    let (base, extra) = (units.len() / groups, units.len() % groups);
    let mut out = Vec::with_capacity(groups);
    let mut start = 0;
    for group in 0..groups {
        let len = base + usize::from(group < extra);
        out.push(units[start..start + len].to_vec());
        start += len;
    }
    out
}

/// Chunks a partition of a remote table fetches ahead of its consumer (each held until sent).
const REMOTE_PREFETCH: usize = 4;

/// What every partition of one scan shares.
struct Shared {
    files: Arc<[FileInfo]>,
    /// For each file, the object it is (`None`: a local file).
    origins: Arc<[Option<RemoteObject>]>,
    /// Each object, opened and verified once per scan, by the first partition that needs it.
    remote: Vec<tokio::sync::OnceCell<Arc<RemoteDataset>>>,
    /// Each object's requests and bytes fetched already added to the metrics.
    reported: Vec<[AtomicU64; 2]>,
    /// The table's schema in `ald`'s arrow, which every file must still have.
    file_schema: arrow_schema::SchemaRef,
    /// Each file, opened and verified once per scan, by the first partition that needs it.
    opened: Vec<Mutex<Option<Arc<Dataset>>>>,
    projection: Vec<usize>,
    projected_schema: SchemaRef,
    limit: Option<usize>,
    keys: Keys,
}

impl fmt::Debug for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shared")
            .field("files", &self.files.len())
            .field("projection", &self.projection)
            .field("limit", &self.limit)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

/// The per-partition counters of what was read.
struct Counters {
    chunks: Count,
    rows: Count,
    bytes: Count,
    columns: Count,
    output_rows: Count,
    /// Requests sent to object storage (opens and retries included; 0 for local files).
    requests: Count,
    /// Response bytes received from object storage.
    bytes_fetched: Count,
    /// The stored (compressed, encrypted) bytes of the chunks read.
    bytes_needed: Count,
}

impl Counters {
    fn new(metrics: &ExecutionPlanMetricsSet, partition: usize) -> Self {
        let counter = |name: &'static str| MetricBuilder::new(metrics).counter(name, partition);
        Self {
            chunks: counter("chunks_decoded"),
            rows: counter("rows_decoded"),
            bytes: counter("bytes_decoded"),
            columns: counter("columns_bridged"),
            output_rows: MetricBuilder::new(metrics).output_rows(partition),
            requests: counter("requests"),
            bytes_fetched: counter("bytes_fetched"),
            bytes_needed: counter("bytes_needed"),
        }
    }
}

impl Shared {
    /// File `file`, opened (and verified under the session's policy) at most once per scan, and
    /// checked to be the file the table was planned from.
    fn dataset(&self, file: usize) -> Result<Arc<Dataset>, Error> {
        let info = &self.files[file];
        let mut slot = self.opened[file]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(dataset) = slot.as_ref() {
            return Ok(Arc::clone(dataset));
        }
        let dataset = source::open(&info.path, &self.keys)?;
        if ald::check_schema(&self.file_schema, dataset.schema()).is_err() {
            return Err(Error::Changed {
                path: info.path.clone(),
                what: "its schema",
            });
        }
        info.check_unchanged(&dataset)?;
        let dataset = Arc::new(dataset);
        *slot = Some(Arc::clone(&dataset));
        Ok(dataset)
    }

    /// Decodes `units` in order and sends their rows to `send`, until they are done, the limit is
    /// reached, or `send` says the consumer is gone.
    fn run(
        &self,
        units: &[Unit],
        batch_size: usize,
        counters: &Counters,
        send: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<(), Error> {
        let mut remaining = self.limit.map_or(u64::MAX, |limit| limit as u64);
        let mut start = 0;
        while start < units.len() && remaining > 0 {
            let file = units[start].file;
            let end = units[start..]
                .iter()
                .position(|unit| unit.file != file)
                .map_or(units.len(), |offset| start + offset);
            let dataset = self.dataset(file)?;
            let path = &self.files[file].path;
            let reader = self.reader(&dataset, path)?;
            for unit in &units[start..end] {
                if remaining == 0 {
                    break;
                }
                let entry = &self.files[file].chunks[unit.chunk];
                // Only the projected columns are decoded (docs/ald.md §6.2).
                let batch = if remaining < unit.rows {
                    reader.get_rows_projected(entry.first_item, remaining, &self.projection)
                } else {
                    reader.get_chunk_projected(unit.chunk, &self.projection)
                }
                .map_err(Error::file(path))?;
                let (bridged, take) = self.account(*unit, &batch, remaining, counters)?;
                remaining -= take as u64;
                let mut offset = 0;
                while offset < take {
                    let len = batch_size.min(take - offset);
                    counters.output_rows.add(len);
                    if !send(bridged.slice(offset, len)) {
                        return Ok(());
                    }
                    offset += len;
                }
            }
            start = end;
        }
        Ok(())
    }

    /// Counts decoded unit `unit` (its `batch`, the projected columns in order) in `counters` and
    /// hands it to DataFusion's arrow: the batch and how many of its rows the scan still takes
    /// (at most `remaining`). One step for local and remote scans alike.
    fn account(
        &self,
        unit: Unit,
        batch: &arrow_array::RecordBatch,
        remaining: u64,
        counters: &Counters,
    ) -> Result<(RecordBatch, usize), Error> {
        let entry = &self.files[unit.file].chunks[unit.chunk];
        counters.chunks.add(1);
        counters.bytes_needed.add(stored_bytes(entry));
        counters.rows.add(batch.num_rows());
        counters
            .bytes
            .add(usize::try_from(unit.decoded_bytes).unwrap_or(usize::MAX));
        let take = batch
            .num_rows()
            .min(usize::try_from(remaining).unwrap_or(usize::MAX));
        let columns: Vec<usize> = (0..batch.num_columns()).collect();
        let bridged = bridge::batch(batch, &columns, Arc::clone(&self.projected_schema))?;
        counters.columns.add(self.projection.len());
        Ok((bridged, take))
    }

    /// Object `file`, opened again (under the session's keys and policy) at most once per scan,
    /// and checked to be the version the table was planned from (ETag, size, schema, chunks).
    /// `runtime` is the running session's: its store reads an object whose table was rebuilt
    /// from a plan.
    async fn remote_dataset(
        &self,
        file: usize,
        runtime: &RuntimeEnv,
    ) -> Result<Arc<RemoteDataset>, Error> {
        let info = &self.files[file];
        let Some(object) = self.origins.get(file).and_then(Option::as_ref) else {
            return Err(Error::Location {
                location: info.path.display().to_string(),
                reason: "a local file in a scan of objects",
            });
        };
        let dataset = self.remote[file]
            .get_or_try_init(|| async {
                let dataset = source::open_remote(object, &self.keys, true, Some(runtime)).await?;
                info.check_unchanged_remote(object, &dataset)?;
                if ald::check_schema(&self.file_schema, dataset.schema()).is_err() {
                    return Err(Error::Changed {
                        path: info.path.clone(),
                        what: "its schema",
                    });
                }
                Ok(Arc::new(dataset))
            })
            .await?;
        Ok(Arc::clone(dataset))
    }

    /// Adds to `counters` what object `file` cost since the last report (by any partition):
    /// every request and byte is reported once, by the partition that sees it first.
    fn report(&self, file: usize, dataset: &RemoteDataset, counters: &Counters) {
        let [requests, bytes] = &self.reported[file];
        let add = |reported: &AtomicU64, now: u64, count: &Count| {
            let before = reported.fetch_max(now, Ordering::Relaxed);
            if now > before {
                count.add(usize::try_from(now - before).unwrap_or(usize::MAX));
            }
        };
        add(requests, dataset.file().requests(), &counters.requests);
        add(
            bytes,
            dataset.file().bytes_fetched(),
            &counters.bytes_fetched,
        );
    }

    /// As [`Shared::run`] for a table of objects: each file's chunks fetched by range,
    /// [`REMOTE_PREFETCH`] ahead of the consumer, within the dataset's bound on bytes in flight;
    /// each checked (CRC-32C or AES-GCM) before it is decoded.
    async fn run_remote(
        &self,
        runtime: &RuntimeEnv,
        units: &[Unit],
        batch_size: usize,
        counters: &Counters,
        tx: &tokio::sync::mpsc::Sender<DfResult<RecordBatch>>,
    ) -> Result<(), Error> {
        let mut remaining = self.limit.map_or(u64::MAX, |limit| limit as u64);
        let mut start = 0;
        while start < units.len() && remaining > 0 {
            let file = units[start].file;
            let end = units[start..]
                .iter()
                .position(|unit| unit.file != file)
                .map_or(units.len(), |offset| start + offset);
            let dataset = self.remote_dataset(file, runtime).await?;
            let url = self.files[file].path.display().to_string();
            let reader: &RemoteDataset = &dataset;
            // Owned units and a shared dataset per fetch: the stream stays `Send` + `'static`
            // in what it borrows.
            let mut chunks = futures::stream::iter(units[start..end].to_vec())
                .map(|unit| {
                    let dataset = Arc::clone(&dataset);
                    let projection = self.projection.clone();
                    async move {
                        // Only the projected columns are decoded (docs/ald.md §6.2).
                        let batch = dataset.chunk_projected(unit.chunk, &projection).await;
                        (unit, batch)
                    }
                })
                .buffered(REMOTE_PREFETCH);
            let mut consumer_gone = false;
            while let Some((unit, batch)) = chunks.next().await {
                self.report(file, reader, counters);
                if remaining == 0 {
                    break;
                }
                let batch = batch.map_err(Error::remote(&url))?;
                let (bridged, take) = self.account(unit, &batch, remaining, counters)?;
                remaining -= take as u64;
                let mut offset = 0;
                while offset < take {
                    let len = batch_size.min(take - offset);
                    counters.output_rows.add(len);
                    if tx.send(Ok(bridged.slice(offset, len))).await.is_err() {
                        consumer_gone = true;
                        break;
                    }
                    offset += len;
                }
                if consumer_gone {
                    break;
                }
            }
            drop(chunks);
            self.report(file, reader, counters);
            if consumer_gone {
                return Ok(());
            }
            start = end;
        }
        Ok(())
    }

    /// A chunk reader of `dataset`: with the first of the session's keys that opens it if the file
    /// is encrypted (without any, reading a chunk is `DecryptionFailed`, `ald`'s own refusal).
    fn reader<'d>(
        &self,
        dataset: &'d Dataset,
        path: &std::path::Path,
    ) -> Result<ald::ChunkReader<'d, ald::fs::SharedMap>, Error> {
        if !dataset.file().is_encrypted() {
            return Ok(dataset.reader());
        }
        let mut last = None;
        for key in self.keys.decryption_keys() {
            match dataset.with_key(key) {
                Ok(reader) => return Ok(reader),
                Err(error) => last = Some(error),
            }
        }
        match last {
            Some(error) => Err(Error::file(path)(error)),
            None => Ok(dataset.reader()),
        }
    }
}

/// A scan of an `.ald` table: see the module documentation for what it pushes down.
pub struct AldScanExec {
    shared: Arc<Shared>,
    partitions: Arc<[Vec<Unit>]>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl fmt::Debug for AldScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AldScanExec")
            .field("shared", &self.shared)
            .field("partitions", &self.partitions.len())
            .finish_non_exhaustive()
    }
}

/// The stored bytes of a chunk, as a metric value.
fn stored_bytes(entry: &envelope_core::ChunkEntry) -> usize {
    usize::try_from(entry.stored_size).unwrap_or(usize::MAX)
}

impl AldScanExec {
    /// Whether the scan reads objects on object storage.
    #[must_use]
    pub fn is_remote(&self) -> bool {
        self.shared.origins.iter().any(Option::is_some)
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        files: Arc<[FileInfo]>,
        origins: Arc<[Option<RemoteObject>]>,
        file_schema: arrow_schema::SchemaRef,
        table_schema: &SchemaRef,
        projection: Option<&[usize]>,
        limit: Option<usize>,
        keys: Keys,
        target_partitions: usize,
    ) -> DfResult<Self> {
        let projection: Vec<usize> = match projection {
            Some(projection) => projection.to_vec(),
            None => (0..table_schema.fields().len()).collect(),
        };
        let projected_schema = Arc::new(table_schema.project(&projection)?);
        let units = plan_units(&files, limit);
        let partitions: Arc<[Vec<Unit>]> = split(&units, target_partitions).into();
        let properties = PlanProperties::new(
            EquivalenceProperties::new(Arc::clone(&projected_schema)),
            Partitioning::UnknownPartitioning(partitions.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(Self {
            shared: Arc::new(Shared {
                opened: files.iter().map(|_| Mutex::new(None)).collect(),
                remote: files.iter().map(|_| tokio::sync::OnceCell::new()).collect(),
                reported: files
                    .iter()
                    .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
                    .collect(),
                origins,
                files,
                file_schema,
                projection,
                projected_schema,
                limit,
                keys,
            }),
            partitions,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// The units of scan work of each partition, as `(file index, chunk)`.
    #[must_use]
    pub fn partition_units(&self) -> Vec<Vec<(usize, usize)>> {
        self.partitions
            .iter()
            .map(|units| units.iter().map(|unit| (unit.file, unit.chunk)).collect())
            .collect()
    }

    /// The columns of the table this scan hands to DataFusion.
    #[must_use]
    pub fn projection(&self) -> &[usize] {
        &self.shared.projection
    }

    /// Exact statistics of `units` (all partitions when `None`).
    fn statistics_of(&self, partition: Option<usize>) -> Statistics {
        let per_partition = |units: &[Unit]| -> (u64, u64) {
            let rows: u64 = units.iter().map(|unit| unit.rows).sum();
            let bytes: u64 = units.iter().map(|unit| unit.decoded_bytes).sum();
            let limit = self.shared.limit.map_or(u64::MAX, |limit| limit as u64);
            (rows.min(limit), bytes)
        };
        let (rows, bytes) = match partition {
            Some(partition) => per_partition(&self.partitions[partition]),
            None => self
                .partitions
                .iter()
                .map(|units| per_partition(units))
                .fold((0, 0), |(r, b), (pr, pb)| (r + pr, b + pb)),
        };
        let all_columns = self.shared.projection.len() == self.shared.file_schema.fields().len()
            && self.shared.limit.is_none();
        let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        Statistics::new_unknown(&self.shared.projected_schema)
            .with_num_rows(Precision::Exact(
                usize::try_from(rows).unwrap_or(usize::MAX),
            ))
            .with_total_byte_size(if all_columns {
                // Every column, every row: the decoded Arrow IPC bytes the arrays are views of.
                Precision::Exact(bytes)
            } else {
                // A projection or a limit keeps part of them; how much depends on the columns.
                Precision::Inexact(bytes)
            })
    }
}

impl DisplayAs for AldScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let units: usize = self.partitions.iter().map(Vec::len).sum();
        let columns = self
            .shared
            .projection
            .iter()
            .map(|&index| self.shared.file_schema.field(index).name().as_str())
            .collect::<Vec<_>>()
            .join(", ");
        // What a unit costs: its bytes are read, checked, decrypted and decompressed whole (the
        // CRC-32C, the AES-GCM tag and the compression frame cover the chunk); only the projected
        // columns' Arrow IPC buffers are decoded (docs/ald.md §6.2).
        let decoded = self.shared.projection.len();
        let all = self.shared.file_schema.fields().len();
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => write!(
                f,
                "AldScanExec: files={}, units={units}, partitions={}, projection=[{columns}], limit={:?}, read=whole chunks (checksum, decryption, decompression), decode={decoded} of {all} columns",
                self.shared.files.len(),
                self.partitions.len(),
                self.shared.limit,
            ),
            DisplayFormatType::TreeRender => {
                writeln!(f, "files={}", self.shared.files.len())?;
                writeln!(f, "units={units}")?;
                writeln!(f, "projection=[{columns}]")?;
                write!(f, "decode={decoded} of {all} columns")
            }
        }
    }
}

impl ExecutionPlan for AldScanExec {
    fn name(&self) -> &'static str {
        "AldScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            internal_err!("AldScanExec has no children")
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let Some(units) = self.partitions.get(partition).cloned() else {
            return internal_err!(
                "AldScanExec has {} partitions, not {}",
                self.partitions.len(),
                partition + 1
            );
        };
        let batch_size = context.session_config().batch_size().max(1);
        let counters = Counters::new(&self.metrics, partition);
        let shared = Arc::clone(&self.shared);
        // Two batches in flight per partition: decoding runs ahead of the consumer by one.
        let mut builder =
            RecordBatchReceiverStream::builder(Arc::clone(&self.shared.projected_schema), 2);
        let tx = builder.tx();
        if self.shared.origins.iter().any(Option::is_some) {
            // Objects: requests are awaited on the runtime; each chunk is checked and decoded as
            // it arrives (remote-file decodes on the task that fetched it).
            let runtime = context.runtime_env();
            builder.spawn(async move {
                shared
                    .run_remote(&runtime, &units, batch_size, &counters, &tx)
                    .await
                    .map_err(DataFusionError::from)
            });
            return Ok(builder.build());
        }
        // Decoding (page faults on the map, decompression, decryption, Arrow's validation) is
        // blocking work: it runs on the runtime's blocking threads, not its workers.
        builder.spawn_blocking(move || {
            let mut send = |batch| tx.blocking_send(Ok(batch)).is_ok();
            shared
                .run(&units, batch_size, &counters, &mut send)
                .map_err(DataFusionError::from)
        });
        Ok(builder.build())
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> DfResult<Arc<Statistics>> {
        if let Some(partition) = args.partition()
            && partition >= self.partitions.len()
        {
            return internal_err!(
                "AldScanExec has {} partitions, not {}",
                self.partitions.len(),
                partition + 1
            );
        }
        Ok(Arc::new(self.statistics_of(args.partition())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use envelope_core::ChunkEntry;

    fn file(rows: &[u64]) -> FileInfo {
        let mut first = 0;
        FileInfo {
            path: "f.ald".into(),
            file_size: 0,
            chunks: rows
                .iter()
                .map(|&count| {
                    let entry = ChunkEntry {
                        stored_offset: 0,
                        stored_size: count,
                        uncompressed_size: 10 * count,
                        first_item: first,
                        item_count: count,
                        stored_crc32c: 0,
                    };
                    first += count;
                    entry
                })
                .collect(),
            num_rows: rows.iter().sum(),
            streaming: rows.len() > 1,
            encrypted: false,
            object: None,
        }
    }

    #[test]
    fn units_are_every_non_empty_chunk_until_the_limit() {
        let files = [file(&[10, 10, 5]), file(&[0]), file(&[7])];
        let all = plan_units(&files, None);
        assert_eq!(
            all.iter().map(|u| (u.file, u.chunk)).collect::<Vec<_>>(),
            [(0, 0), (0, 1), (0, 2), (2, 0)]
        );
        assert_eq!(plan_units(&files, Some(0)).len(), 0);
        assert_eq!(plan_units(&files, Some(10)).len(), 1);
        assert_eq!(plan_units(&files, Some(11)).len(), 2);
        assert_eq!(plan_units(&files, Some(1000)).len(), 4);
    }

    #[test]
    fn partitions_are_contiguous_balanced_and_never_empty() {
        let units = plan_units(&[file(&[1; 7])], None);
        for target in 1..10 {
            let groups = split(&units, target);
            assert_eq!(groups.len(), target.min(7));
            assert!(groups.iter().all(|g| !g.is_empty()));
            let flat: Vec<Unit> = groups.concat();
            assert_eq!(flat, units);
            let (min, max) = (
                groups.iter().map(Vec::len).min().unwrap(),
                groups.iter().map(Vec::len).max().unwrap(),
            );
            assert!(max - min <= 1);
        }
        assert_eq!(split(&[], 4), vec![Vec::new()]);
    }
}
