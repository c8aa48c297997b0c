//! A Ballista scheduler and two executors on loopback run one `GROUP BY` over a directory of
//! STREAMING `.ald` files; prints the answer, the same query's answer from plain DataFusion, the
//! tasks each executor ran (by stage) and the wall times. `scripts/ballista-demo.sh` runs it;
//! BENCHMARKS.md has its output.
//!
//! ```text
//! ballista-demo [--files N] [--chunks N] [--rows N] [--executors N] [--vcores N]
//! ```
//!
//! The table is written to a temporary directory: `--files` files of `--chunks` chunks of
//! `--rows` rows each (defaults 4, 3, 20000).

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use ald::arrow_array::{ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray};
use ald::{ArrowDataset, DatasetType, SaveOptions};
use ald_ballista::local::{LocalCluster, remote_context};
use ald_datafusion::{AldOptions, AldTableOptions, register_ald, register_ald_format};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;
use envelope_core::Compression;

const CITIES: [&str; 5] = ["Berlin", "Lagos", "Lima", "Osaka", "Perth"];

const QUERY: &str = "SELECT city, COUNT(*) AS trips, SUM(qty) AS qty, SUM(fare) AS fare, \
                     MIN(id) AS first, MAX(id) AS last \
                     FROM trips GROUP BY city ORDER BY city NULLS FIRST";

type Failure = Box<dyn std::error::Error>;

fn rows(start: i64, count: i64) -> Result<RecordBatch, Failure> {
    let ids: Vec<i64> = (start..start + count).collect();
    let city =
        |i: i64| (i % 11 != 3).then(|| CITIES[usize::try_from((i * 7).rem_euclid(5)).unwrap_or(0)]);
    let fare = |i: i64| {
        (i % 13 != 5).then(|| f64::from(i32::try_from(i.rem_euclid(97)).unwrap_or(0)) * 0.25)
    };
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("id", Arc::new(Int64Array::from(ids.clone()))),
        (
            "city",
            Arc::new(StringArray::from_iter(ids.iter().map(|&i| city(i)))),
        ),
        (
            "fare",
            Arc::new(Float64Array::from_iter(ids.iter().map(|&i| fare(i)))),
        ),
        (
            "qty",
            Arc::new(Int32Array::from_iter_values(
                ids.iter()
                    .map(|&i| i32::try_from(i.rem_euclid(10)).unwrap_or(0)),
            )),
        ),
    ];
    Ok(RecordBatch::try_from_iter(columns)?)
}

struct Args {
    files: i64,
    chunks: i64,
    rows: i64,
    executors: usize,
    vcores: usize,
}

fn args() -> Result<Args, Failure> {
    let mut args = Args {
        files: 4,
        chunks: 3,
        rows: 20_000,
        executors: 2,
        vcores: 1,
    };
    let mut given = std::env::args().skip(1);
    while let Some(flag) = given.next() {
        let value = given
            .next()
            .ok_or_else(|| format!("Usage: {flag} needs a value"))?;
        let number: i64 = value
            .parse()
            .map_err(|_| format!("Usage: {flag} {value}: not a number"))?;
        if number < 1 {
            return Err(format!("Usage: {flag} must be at least 1").into());
        }
        let count = usize::try_from(number)?;
        match flag.as_str() {
            "--files" => args.files = number,
            "--chunks" => args.chunks = number,
            "--rows" => args.rows = number,
            "--executors" => args.executors = count,
            "--vcores" => args.vcores = count,
            _ => return Err(format!("Usage: unknown flag {flag}").into()),
        }
    }
    Ok(args)
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> Result<(), Failure> {
    let args = args()?;
    let mut out = std::io::stdout().lock();
    let dir = tempfile::tempdir()?;
    let per_file = args.chunks * args.rows;
    let options = SaveOptions::new(DatasetType::Tabular, Compression::ZstdL3)
        .streaming(usize::try_from(args.rows)?);
    for file in 0..args.files {
        let data = ArrowDataset::from_batch(rows(file * per_file, per_file)?);
        std::fs::write(
            dir.path().join(format!("part-{file}.ald")),
            data.to_bytes(&options)?,
        )?;
    }
    let location = dir
        .path()
        .to_str()
        .ok_or("Usage: temporary path not UTF-8")?;
    writeln!(
        out,
        "table: {} STREAMING files x {} chunks x {} rows (zstd) = {} rows, {} units of scan work",
        args.files,
        args.chunks,
        args.rows,
        args.files * per_file,
        args.files * args.chunks
    )?;

    let started = Instant::now();
    let cluster = LocalCluster::start(args.executors, args.vcores, AldOptions::new()).await?;
    writeln!(
        out,
        "cluster: scheduler at {}, {} executors of {} vcores, started in {:.3} s",
        cluster.scheduler_url(),
        args.executors,
        args.vcores,
        started.elapsed().as_secs_f64()
    )?;
    let ctx = remote_context(&cluster.scheduler_url(), AldOptions::new())?;
    register_ald(&ctx, "trips", location, AldTableOptions::default())?;
    writeln!(out, "query: {QUERY}")?;
    let started = Instant::now();
    let batches = ctx.sql(QUERY).await?.collect().await?;
    let distributed_time = started.elapsed();
    let distributed = pretty_format_batches(&batches)?.to_string();
    writeln!(out, "{distributed}")?;
    writeln!(
        out,
        "ballista wall time: {:.3} s",
        distributed_time.as_secs_f64()
    )?;
    for (index, executor) in cluster.tasks().iter().enumerate() {
        let stages = executor
            .by_stage
            .iter()
            .map(|(stage, tasks)| format!("stage {stage}: {tasks}"))
            .collect::<Vec<_>>()
            .join(", ");
        writeln!(
            out,
            "executor {index} ({}, flight {}): {} tasks ({stages})",
            executor.id,
            executor.address,
            executor.total()
        )?;
    }

    let local = SessionContext::new();
    register_ald_format(&local);
    register_ald(&local, "trips", location, AldTableOptions::default())?;
    let started = Instant::now();
    let batches = local.sql(QUERY).await?.collect().await?;
    let local_time = started.elapsed();
    let same = pretty_format_batches(&batches)?.to_string() == distributed;
    writeln!(
        out,
        "plain DataFusion wall time: {:.3} s; same answer: {}",
        local_time.as_secs_f64(),
        if same { "yes" } else { "NO" }
    )?;
    if !same {
        return Err("InvalidFormat: Ballista and DataFusion disagree".into());
    }
    Ok(())
}
