//! Scan throughput of a whole query (`SELECT SUM(value) FROM t`) over an `.ald` set against the
//! same rows as Parquet, both through DataFusion. Not a criterion benchmark: each run writes its
//! set once (about 256 MiB of decoded Arrow data by default) and times whole queries.
//!
//! ```text
//! cargo bench -p ald-datafusion --bench scan            # 256 MiB, 4 files, 5 runs each
//! ALD_BENCH_MIB=64 ALD_BENCH_RUNS=3 cargo bench -p ald-datafusion --bench scan
//! ```
//!
//! Prints, per format, the median wall time of the query and the decoded bytes per second.

#![allow(
    clippy::print_stdout,
    reason = "a benchmark reports on standard output"
)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ald::arrow_array::{ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray};
use ald::{ArrowDataset, DatasetType, SaveOptions};
use ald_datafusion::{AldTableOptions, register_ald, register_ald_format};
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use envelope_core::Compression;

const CITIES: [&str; 8] = [
    "Berlin", "Lagos", "Lima", "Osaka", "Perth", "Quito", "Accra", "Hanoi",
];

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// Rows `start..start + count`: 8 + 8 + 4 + ~9 bytes a row (`id`, `value`, `qty`, `city`).
fn rows(start: i64, count: i64) -> RecordBatch {
    let ids: Vec<i64> = (start..start + count).collect();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("id", Arc::new(Int64Array::from(ids.clone()))),
        (
            "value",
            Arc::new(Float64Array::from_iter_values(
                ids.iter().map(|&i| (i % 1000) as f64 * 0.5),
            )),
        ),
        (
            "qty",
            Arc::new(Int32Array::from_iter_values(
                ids.iter().map(|&i| i32::try_from(i % 100).unwrap_or(0)),
            )),
        ),
        (
            "city",
            Arc::new(StringArray::from_iter_values(
                ids.iter()
                    .map(|&i| CITIES[usize::try_from(i % 8).unwrap_or(0)]),
            )),
        ),
    ];
    RecordBatch::try_from_iter(columns).expect("a valid batch")
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

async fn time_query(ctx: &SessionContext, runs: usize) -> Duration {
    let mut times = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let batches = ctx
            .sql("SELECT SUM(value) FROM t")
            .await
            .expect("planned")
            .collect()
            .await
            .expect("ran");
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 1);
        times.push(start.elapsed());
    }
    median(times)
}

fn report(label: &str, time: Duration, decoded: u64, on_disk: u64) {
    let mib = |bytes: u64| bytes as f64 / (1 << 20) as f64;
    println!(
        "{label:<28} {:>8.1} ms  {:>8.0} MiB/s decoded  ({:.0} MiB on disk)",
        time.as_secs_f64() * 1e3,
        mib(decoded) / time.as_secs_f64(),
        mib(on_disk),
    );
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.metadata().ok())
        .map(|metadata| metadata.len())
        .sum()
}

#[tokio::main]
async fn main() {
    let mib = env("ALD_BENCH_MIB", 256);
    let runs = env("ALD_BENCH_RUNS", 5).max(1);
    let files = 4;
    let bytes_per_row = 29;
    let rows_per_file = i64::try_from(mib * (1 << 20) / bytes_per_row / files).unwrap_or(i64::MAX);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let sets = [
        ("ald-none", Compression::None),
        ("ald-lz4", Compression::Lz4),
        ("ald-zstd", Compression::ZstdL3),
    ];
    for (name, _) in &sets {
        std::fs::create_dir(dir.path().join(name)).expect("a set directory");
    }
    std::fs::create_dir(dir.path().join("parquet")).expect("a set directory");
    for file in 0..files {
        let start = i64::try_from(file).unwrap_or(0) * rows_per_file;
        let data = ArrowDataset::from_batch(rows(start, rows_per_file));
        for (name, compression) in &sets {
            let options = SaveOptions::new(DatasetType::Tabular, *compression).streaming(1 << 20);
            let path = dir.path().join(name).join(format!("part-{file}.ald"));
            ald::fs::save(&path, &data, &options).expect("written");
        }
        let path = dir
            .path()
            .join("parquet")
            .join(format!("part-{file}.parquet"));
        ald::interchange::write_file(&path, &data).expect("written");
    }
    println!(
        "{} rows in {files} files, {runs} runs, {} cores",
        rows_per_file * i64::try_from(files).unwrap_or(0),
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
    );
    let mut decoded = 0;
    for (name, _) in &sets {
        let ctx = SessionContext::new();
        register_ald_format(&ctx);
        let set = dir.path().join(name);
        let table = register_ald(
            &ctx,
            "t",
            set.to_str().unwrap_or_default(),
            AldTableOptions::default(),
        )
        .expect("registered");
        decoded = table.files().iter().map(|file| file.decoded_bytes()).sum();
        report(name, time_query(&ctx, runs).await, decoded, dir_size(&set));
    }
    let ctx = SessionContext::new();
    let set = dir.path().join("parquet");
    ctx.register_parquet(
        "t",
        set.to_str().unwrap_or_default(),
        ParquetReadOptions::default(),
    )
    .await
    .expect("registered");
    report(
        "parquet (ald interchange)",
        time_query(&ctx, runs).await,
        decoded,
        dir_size(&set),
    );
}
