//! The object storage benchmark of issue 20 (`scripts/bench-datafusion-s3.sh` drives it): the same
//! rows as an `.ald` set and as Parquet, both on an S3 endpoint, queried through DataFusion.
//!
//! ```text
//! s3_scan generate DIR FILES ROWS_PER_FILE CHUNK_ROWS   # DIR/ald/*.ald, DIR/parquet/*.parquet
//!                                                        # (.ald: $ALD_COMPRESSION, zstd by default)
//! s3_scan upload DIR                                     # to s3://$BENCH_BUCKET/{ald,parquet}/
//! s3_scan query DIR ald|parquet full|column|filter RUNS  # best of RUNS, one result line
//! ```
//!
//! The store comes from the environment (`AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`, ...). `query`
//! registers it wrapped in a counter of requests and response bytes (the object-store level, the
//! same for both formats: DataFusion's Parquet reader and the `.ald` table share the registered
//! store) and prints `format query wall_s logical_MB/s requests bytes_fetched bytes_needed rows`
//! for the fastest run, where `bytes_needed` is, for `.ald`, the stored bytes of the chunks the
//! scan read (the scan's metric) and, for Parquet, the compressed bytes of the column chunks of
//! the columns the query uses (from the files' footers). Logical bytes are the Arrow bytes of the
//! columns the query uses (written by `generate` to `DIR/logical.txt`).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a benchmark reports on standard output"
)]

use std::fmt;
use std::ops::Range;
use std::path::Path as FsPath;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ald::arrow_array::{
    Array, ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use ald::{ArrowDataset, DatasetType, SaveOptions};
use ald_datafusion::{AldScanExec, AldTableOptions, register_ald_async, register_ald_format};
use async_trait::async_trait;
use datafusion::physical_plan::{ExecutionPlan, collect};
use datafusion::prelude::{SessionConfig, SessionContext};
use envelope_core::Compression;
use futures::stream::BoxStream;
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt as _, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

type Failure = Box<dyn std::error::Error + Send + Sync>;

const COLUMNS: [&str; 7] = ["id", "user_id", "value", "amount", "qty", "city", "comment"];
const CITIES: [&str; 8] = [
    "Berlin", "Lagos", "Lima", "Osaka", "Perth", "Quito", "Accra", "Hanoi",
];
const WORDS: [&str; 8] = [
    "late", "paid", "refund", "split", "cash", "card", "tip", "promo",
];

/// The queries, and the columns each uses.
fn query(name: &str) -> Result<(&'static str, &'static [&'static str]), Failure> {
    Ok(match name {
        "full" => (
            "SELECT COUNT(*), SUM(id), SUM(user_id), SUM(value), SUM(amount), SUM(qty), \
             COUNT(DISTINCT city), MAX(comment) FROM t",
            &COLUMNS,
        ),
        "column" => ("SELECT SUM(value) FROM t", &["value"]),
        "filter" => (
            "SELECT id, city, amount FROM t WHERE user_id = 4242 ORDER BY id",
            &["id", "city", "amount", "user_id"],
        ),
        other => return Err(format!("unknown query {other:?} (full, column, filter)").into()),
    })
}

/// Rows `start..start + count`: ~70 bytes of Arrow data a row over 7 columns.
fn rows(start: i64, count: i64) -> Result<RecordBatch, Failure> {
    let ids: Vec<i64> = (start..start + count).collect();
    let pick = |i: i64, m: usize| usize::try_from(i).unwrap_or(0) % m;
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("id", Arc::new(Int64Array::from(ids.clone()))),
        (
            "user_id",
            Arc::new(Int64Array::from_iter_values(
                ids.iter().map(|&i| i.wrapping_mul(7919) % 1_000_003),
            )),
        ),
        (
            "value",
            Arc::new(Float64Array::from_iter_values(
                ids.iter().map(|&i| (i % 10_000) as f64 * 0.25),
            )),
        ),
        (
            "amount",
            Arc::new(Float64Array::from_iter_values(ids.iter().map(|&i| {
                ((i.wrapping_mul(2_654_435_761) >> 7) % 100_000) as f64 / 100.0
            }))),
        ),
        (
            "qty",
            Arc::new(Int32Array::from_iter_values(
                ids.iter().map(|&i| i32::try_from(i % 50).unwrap_or(0)),
            )),
        ),
        (
            "city",
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|&i| CITIES[pick(i / 3, 8)]),
            )),
        ),
        (
            "comment",
            Arc::new(StringArray::from_iter_values(ids.iter().map(|&i| {
                format!(
                    "{} {} #{}",
                    WORDS[pick(i, 8)],
                    WORDS[pick(i / 8, 8)],
                    i % 100_000
                )
            }))),
        ),
    ];
    Ok(RecordBatch::try_from_iter(columns)?)
}

/// The Arrow bytes of each column's values (buffers, not capacity).
fn logical_bytes(batch: &RecordBatch) -> Vec<u64> {
    batch
        .columns()
        .iter()
        .map(|column| {
            let data = column.to_data();
            data.buffers().iter().map(|b| b.len() as u64).sum::<u64>()
                + data.nulls().map_or(0, |n| n.buffer().len() as u64)
        })
        .collect()
}

fn generate(
    dir: &FsPath,
    files: usize,
    rows_per_file: i64,
    chunk_rows: usize,
) -> Result<(), Failure> {
    std::fs::create_dir_all(dir.join("ald"))?;
    std::fs::create_dir_all(dir.join("parquet"))?;
    let mut logical = vec![0u64; COLUMNS.len()];
    // The `.ald` files' compression: `ALD_COMPRESSION` = zstd (the CLI's default), lz4 or none.
    let compression = match std::env::var("ALD_COMPRESSION").as_deref() {
        Ok("zstd") | Err(_) => Compression::ZstdL3,
        Ok("lz4") => Compression::Lz4,
        Ok("none") => Compression::None,
        Ok(other) => return Err(format!("ALD_COMPRESSION={other}: zstd, lz4 or none").into()),
    };
    let options = SaveOptions::new(DatasetType::Tabular, compression).streaming(chunk_rows);
    for file in 0..files {
        let start = i64::try_from(file)? * rows_per_file;
        let batch = rows(start, rows_per_file)?;
        for (total, bytes) in logical.iter_mut().zip(logical_bytes(&batch)) {
            *total += bytes;
        }
        let data = ArrowDataset::from_batch(batch);
        std::fs::write(
            dir.join(format!("ald/part-{file}.ald")),
            data.to_bytes(&options)?,
        )?;
        ald::interchange::write_file(dir.join(format!("parquet/part-{file}.parquet")), &data)?;
        eprintln!("generated part {file}");
    }
    let text: String = COLUMNS
        .iter()
        .zip(&logical)
        .map(|(name, bytes)| format!("{name} {bytes}\n"))
        .collect();
    std::fs::write(dir.join("logical.txt"), text)?;
    Ok(())
}

fn bucket() -> String {
    std::env::var("BENCH_BUCKET").unwrap_or_else(|_| "bench".to_owned())
}

fn s3() -> Result<Arc<dyn ObjectStore>, Failure> {
    Ok(Arc::new(
        AmazonS3Builder::from_env()
            .with_bucket_name(bucket())
            .build()?,
    ))
}

async fn upload(dir: &FsPath) -> Result<(), Failure> {
    let store = s3()?;
    for format in ["ald", "parquet"] {
        let mut names: Vec<_> = std::fs::read_dir(dir.join(format))?
            .map(|entry| entry.map(|entry| entry.file_name()))
            .collect::<Result<_, _>>()?;
        names.sort();
        for name in names {
            let name = name.to_string_lossy().into_owned();
            let bytes = std::fs::read(dir.join(format).join(&name))?;
            store
                .put(&Path::from(format!("{format}/{name}")), bytes.into())
                .await?;
        }
    }
    Ok(())
}

/// An object store that counts the requests sent through it and the bytes of the ranges they
/// returned.
#[derive(Debug)]
struct Counting {
    inner: Arc<dyn ObjectStore>,
    requests: AtomicU64,
    bytes: AtomicU64,
}

impl Counting {
    fn take(&self) -> (u64, u64) {
        (
            self.requests.swap(0, Ordering::Relaxed),
            self.bytes.swap(0, Ordering::Relaxed),
        )
    }
}

impl fmt::Display for Counting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Counting({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for Counting {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let head = options.head;
        let result = self.inner.get_opts(location, options).await?;
        if !head {
            let Range { start, end } = result.range;
            self.bytes.fetch_add(end - start, Ordering::Relaxed);
        }
        Ok(result)
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

fn find_scan(plan: &Arc<dyn ExecutionPlan>) -> Option<&AldScanExec> {
    if let Some(scan) = plan.downcast_ref::<AldScanExec>() {
        return Some(scan);
    }
    plan.children().into_iter().find_map(find_scan)
}

/// The compressed bytes of the column chunks of `columns` in the Parquet files of `dir`.
fn parquet_needed(dir: &FsPath, columns: &[&str]) -> Result<u64, Failure> {
    use datafusion::parquet::file::reader::{FileReader as _, SerializedFileReader};
    let mut needed = 0;
    for entry in std::fs::read_dir(dir.join("parquet"))? {
        let reader = SerializedFileReader::new(std::fs::File::open(entry?.path())?)?;
        for group in reader.metadata().row_groups() {
            for chunk in group.columns() {
                if columns.contains(&chunk.column_path().string().as_str()) {
                    needed += u64::try_from(chunk.compressed_size())?;
                }
            }
        }
    }
    Ok(needed)
}

fn logical(dir: &FsPath, columns: &[&str]) -> Result<u64, Failure> {
    let text = std::fs::read_to_string(dir.join("logical.txt"))?;
    let mut total = 0;
    for line in text.lines() {
        if let Some((name, bytes)) = line.split_once(' ')
            && columns.contains(&name)
        {
            total += bytes.parse::<u64>()?;
        }
    }
    Ok(total)
}

async fn run_query(dir: &FsPath, format: &str, name: &str, runs: usize) -> Result<(), Failure> {
    let (sql, columns) = query(name)?;
    let counting = Arc::new(Counting {
        inner: s3()?,
        requests: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
    });
    let ctx = SessionContext::new_with_config(SessionConfig::new());
    register_ald_format(&ctx);
    let bucket = bucket();
    ctx.register_object_store(
        &url::Url::parse(&format!("s3://{bucket}"))?,
        Arc::clone(&counting) as Arc<dyn ObjectStore>,
    );
    match format {
        "ald" => {
            register_ald_async(
                &ctx,
                "t",
                &format!("s3://{bucket}/ald/"),
                AldTableOptions::default(),
            )
            .await?;
        }
        "parquet" => {
            ctx.sql(&format!(
                "CREATE EXTERNAL TABLE t STORED AS PARQUET LOCATION 's3://{bucket}/parquet/'"
            ))
            .await?;
        }
        other => return Err(format!("unknown format {other:?} (ald, parquet)").into()),
    }
    let (plan_requests, _) = counting.take();
    let mut best: Option<(Duration, u64, u64, u64, usize)> = None;
    for _ in 0..runs.max(1) {
        counting.take();
        let start = Instant::now();
        let plan = ctx.sql(sql).await?.create_physical_plan().await?;
        let batches = collect(Arc::clone(&plan), ctx.task_ctx()).await?;
        let wall = start.elapsed();
        let (requests, fetched) = counting.take();
        let rows = batches
            .iter()
            .map(datafusion::arrow::array::RecordBatch::num_rows)
            .sum::<usize>();
        let needed = match find_scan(&plan) {
            Some(scan) => scan
                .metrics()
                .and_then(|metrics| metrics.sum_by_name("bytes_needed"))
                .map_or(0, |value| value.as_usize() as u64),
            None => parquet_needed(dir, columns)?,
        };
        if best.is_none_or(|(fastest, ..)| wall < fastest) {
            best = Some((wall, requests, fetched, needed, rows));
        }
    }
    let Some((wall, requests, fetched, needed, rows)) = best else {
        return Err("no run".into());
    };
    let logical = logical(dir, columns)?;
    println!(
        "{format} {name} {:.3} {:.0} {requests} {fetched} {needed} {rows} {plan_requests}",
        wall.as_secs_f64(),
        logical as f64 / 1e6 / wall.as_secs_f64(),
    );
    Ok(())
}

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |index: usize| -> Result<&str, Failure> {
        args.get(index)
            .map(String::as_str)
            .ok_or_else(|| "usage: s3_scan generate|upload|query DIR ...".into())
    };
    let dir = FsPath::new(arg(1)?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match arg(0)? {
        "generate" => generate(dir, arg(2)?.parse()?, arg(3)?.parse()?, arg(4)?.parse()?),
        "upload" => runtime.block_on(upload(dir)),
        "query" => runtime.block_on(run_query(dir, arg(2)?, arg(3)?, arg(4)?.parse()?)),
        other => Err(format!("unknown command {other:?}").into()),
    }
}
