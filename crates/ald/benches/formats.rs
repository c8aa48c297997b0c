//! Save and load of one numeric + string table as `.ald` (none, zstd-l3, lz4) against the same
//! table as a plain Arrow IPC file and as Parquet (zstd) through the arrow crates, in one run;
//! and `get_rows` at random offsets of STREAMING files of two sizes.
//!
//! ```text
//! ALD_BENCH_MIB=32,1024 cargo bench -p ald --bench formats
//! ```
//!
//! Saving is measured into memory (no disk, no fsync: the formats' own cost); loading is measured
//! from files in the page cache (each reader opens the file itself and keeps the whole table). Sizes come from
//! `ALD_BENCH_MIB` (table sizes in memory, comma-separated, default 256) and `ALD_BENCH_ROWS_MIB`
//! (the two STREAMING file sizes, default `100,1024`). `alimentar convert` writes the
//! "ald-zstd-l3-streaming" form by default.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::print_stderr,
    missing_docs,
    reason = "a benchmark harness: sizes are small and known, and it reports on stderr"
)]

use std::fs::File;
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ald::{ArrowDataset, DatasetType, LoadOptions, SaveOptions, StreamingDataset};
use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use envelope_core::Compression;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression as ParquetCompression, ZstdLevel};
use parquet::file::properties::WriterProperties;

const ROWS_PER_BATCH: usize = 65_536;

fn env_mib(name: &str, default: &str) -> Vec<usize> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_owned())
        .split(',')
        .map(|text| text.trim().parse().expect("a size in MiB"))
        .collect()
}

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, true),
        Field::new("y", DataType::Float64, false),
        Field::new("label", DataType::Utf8, true),
    ]))
}

/// A batch of `rows` rows from `start`: ids, two float columns (one with nulls), and labels of
/// 8-24 characters from a small vocabulary (compressible like real categorical text).
fn batch(start: usize, rows: usize) -> RecordBatch {
    let mut state = (start as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let ids: Int64Array = (start as i64..(start + rows) as i64).collect();
    let x: Float64Array = (0..rows)
        .map(|_| {
            let value = next();
            (value % 10 != 0).then(|| (value >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect();
    let y: Float64Array = (0..rows).map(|i| (start + i) as f64 * 0.5).collect();
    let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
    ];
    let labels: StringArray = (0..rows)
        .map(|_| {
            let value = next();
            (value % 20 != 0).then(|| {
                format!(
                    "{}-{}-{}",
                    words[(value % 8) as usize],
                    words[(value >> 8) as usize % 8],
                    value % 1000
                )
            })
        })
        .collect();
    let columns: Vec<ArrayRef> = vec![Arc::new(ids), Arc::new(x), Arc::new(y), Arc::new(labels)];
    RecordBatch::try_new(schema(), columns).unwrap()
}

fn table(mib: usize) -> ArrowDataset {
    let mut batches = Vec::new();
    let mut bytes = 0;
    let mut start = 0;
    while bytes < mib << 20 {
        let next = batch(start, ROWS_PER_BATCH);
        bytes += next.get_array_memory_size();
        start += ROWS_PER_BATCH;
        batches.push(next);
    }
    ArrowDataset::new(schema(), batches).unwrap()
}

fn ipc_bytes(data: &ArrowDataset) -> Vec<u8> {
    let mut out = Vec::new();
    let mut writer = arrow_ipc::writer::FileWriter::try_new(&mut out, data.schema()).unwrap();
    for batch in data.batches() {
        writer.write(batch).unwrap();
    }
    writer.finish().unwrap();
    drop(writer);
    out
}

fn parquet_bytes(data: &ArrowDataset) -> Vec<u8> {
    let properties = WriterProperties::builder()
        .set_compression(ParquetCompression::ZSTD(ZstdLevel::try_new(3).unwrap()))
        .build();
    let mut out = Vec::new();
    let mut writer =
        ArrowWriter::try_new(&mut out, Arc::clone(data.schema()), Some(properties)).unwrap();
    for batch in data.batches() {
        writer.write(batch).unwrap();
    }
    writer.close().unwrap();
    out
}

/// Every reader keeps the whole table, as loading a dataset does (dropping each batch after use
/// would let the allocator recycle one batch's memory and measure something else).
fn load_ipc(path: &Path) -> Vec<RecordBatch> {
    let reader = arrow_ipc::reader::FileReader::try_new(File::open(path).unwrap(), None).unwrap();
    reader.map(Result::unwrap).collect()
}

fn load_parquet(path: &Path) -> Vec<RecordBatch> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
        .unwrap()
        .with_batch_size(ROWS_PER_BATCH)
        .build()
        .unwrap();
    reader.map(Result::unwrap).collect()
}

fn rows_of(batches: &[RecordBatch]) -> usize {
    batches.iter().map(RecordBatch::num_rows).sum()
}

const ALD: [(&str, Compression); 3] = [
    ("ald-none", Compression::None),
    ("ald-zstd-l3", Compression::ZstdL3),
    ("ald-lz4", Compression::Lz4),
];

fn save_and_load(c: &mut Criterion) {
    for mib in env_mib("ALD_BENCH_MIB", "256") {
        save_and_load_size(c, mib);
    }
}

fn save_and_load_size(c: &mut Criterion, mib: usize) {
    let data = table(mib);
    let in_memory: u64 = data
        .batches()
        .iter()
        .map(|batch| batch.get_array_memory_size() as u64)
        .sum();
    let dir = tempfile::tempdir().unwrap();

    let mut save = c.benchmark_group(format!("save {mib} MiB"));
    save.sample_size(10)
        .measurement_time(Duration::from_secs(20))
        .throughput(Throughput::Bytes(in_memory));
    for (name, compression) in ALD {
        let options = SaveOptions::new(DatasetType::Tabular, compression);
        let bytes = data.to_bytes(&options).unwrap();
        eprintln!("{name}: {} bytes", bytes.len());
        std::fs::write(dir.path().join(format!("{name}.ald")), &bytes).unwrap();
        save.bench_function(name, |b| {
            b.iter(|| black_box(data.to_bytes(&options).unwrap()))
        });
    }
    // The same table as STREAMING files (65,536-row chunks): loaded with one verification pass,
    // each chunk checked just before it is decoded (`ald::fs::load`).
    for (name, compression) in ALD {
        let options = SaveOptions::new(DatasetType::Tabular, compression).streaming(ROWS_PER_BATCH);
        let bytes = data.to_bytes(&options).unwrap();
        eprintln!("{name}-streaming: {} bytes", bytes.len());
        std::fs::write(dir.path().join(format!("{name}-streaming.ald")), &bytes).unwrap();
    }
    let ipc = ipc_bytes(&data);
    eprintln!("arrow-ipc: {} bytes", ipc.len());
    std::fs::write(dir.path().join("table.arrow"), &ipc).unwrap();
    save.bench_function("arrow-ipc-file", |b| b.iter(|| black_box(ipc_bytes(&data))));
    let parquet = parquet_bytes(&data);
    eprintln!("parquet-zstd: {} bytes", parquet.len());
    std::fs::write(dir.path().join("table.parquet"), &parquet).unwrap();
    save.bench_function("parquet-zstd", |b| {
        b.iter(|| black_box(parquet_bytes(&data)))
    });
    save.finish();
    drop((ipc, parquet));

    let mut load = c.benchmark_group(format!("load {mib} MiB"));
    load.sample_size(10)
        .measurement_time(Duration::from_secs(15))
        .throughput(Throughput::Bytes(in_memory));
    let rows = data.num_rows() as usize;
    let names = ALD
        .iter()
        .flat_map(|(name, _)| [name.to_string(), format!("{name}-streaming")]);
    for name in names {
        let path = dir.path().join(format!("{name}.ald"));
        load.bench_function(&name, |b| {
            b.iter(|| {
                let loaded = ald::fs::load(&path, &LoadOptions::default()).unwrap();
                assert_eq!(loaded.dataset.num_rows() as usize, rows);
                black_box(loaded)
            });
        });
    }
    let path = dir.path().join("table.arrow");
    load.bench_function("arrow-ipc-file", |b| {
        b.iter(|| assert_eq!(rows_of(&black_box(load_ipc(&path))), rows));
    });
    let path = dir.path().join("table.parquet");
    load.bench_function("parquet-zstd", |b| {
        b.iter(|| assert_eq!(rows_of(&black_box(load_parquet(&path))), rows));
    });
    load.finish();
}

fn get_rows(c: &mut Criterion) {
    let sizes = env_mib("ALD_BENCH_ROWS_MIB", "100,1024");
    let dir = tempfile::tempdir().unwrap();
    let mut group = c.benchmark_group("get_rows 100 rows at a random offset");
    group.sample_size(50);
    for mib in sizes {
        let path = dir.path().join(format!("{mib}.ald"));
        let options =
            SaveOptions::new(DatasetType::Tabular, Compression::ZstdL3).streaming(ROWS_PER_BATCH);
        let mut writer = ald::fs::StreamingWriter::create(&path, schema(), options).unwrap();
        let mut bytes = 0usize;
        let mut start = 0;
        while bytes < mib << 20 {
            let next = batch(start, ROWS_PER_BATCH);
            bytes += next.get_array_memory_size();
            start += ROWS_PER_BATCH;
            writer.write(&next).unwrap();
        }
        let rows = writer.finish().unwrap();
        eprintln!(
            "{mib} MiB table: {} rows, file {} bytes",
            rows,
            std::fs::metadata(&path).unwrap().len()
        );
        let dataset = StreamingDataset::open(&path, &LoadOptions::default()).unwrap();
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        group.bench_with_input(
            BenchmarkId::new("open + get_rows", format!("{mib} MiB")),
            &path,
            |b, path| {
                b.iter(|| {
                    let dataset = StreamingDataset::open(path, &LoadOptions::default()).unwrap();
                    black_box(
                        dataset
                            .get_rows(random_start(&mut state, rows), 100)
                            .unwrap(),
                    )
                });
            },
        );
        group.bench_with_input(
            BenchmarkId::new("get_rows", format!("{mib} MiB")),
            &rows,
            |b, rows| {
                b.iter(|| {
                    black_box(
                        dataset
                            .get_rows(random_start(&mut state, *rows), 100)
                            .unwrap(),
                    )
                });
            },
        );
    }
    group.finish();
}

/// The first row of a random 100-row read among `rows` (xorshift64, so runs are repeatable).
fn random_start(state: &mut u64, rows: u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state % (rows - 100)
}

criterion_group!(benches, save_and_load, get_rows);
criterion_main!(benches);
