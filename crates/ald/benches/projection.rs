//! Full against projected decoding of one wide chunk (issue 20): 32 columns (16 Int64, 8 Float64,
//! 8 Utf8, a null in every tenth slot) of 65,536 rows, one STREAMING chunk, uncompressed and
//! zstd-l3. "full" is what the DataFusion scan did before (decode every column, then project);
//! "projected" decodes only the columns asked for (`get_chunk_projected`). The `ipc` group
//! isolates the Arrow IPC decoding of the already decompressed chunk (`ipc::decode_batches` and
//! `ipc::decode_batches_projected`), which is the part a projection can save.
//!
//! ```text
//! cargo bench -p ald --bench projection
//! ```

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_precision_loss,
    clippy::cast_sign_loss,
    missing_docs,
    reason = "a benchmark harness: sizes are small and known"
)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use ald::{ArrowDataset, DatasetType, LoadOptions, SaveOptions, StreamingDataset};
use arrow_array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_buffer::Buffer;
use arrow_schema::{DataType, Field, Schema};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use envelope_core::Compression;

const ROWS: usize = 65_536;

/// The wide table: columns 0-15 Int64, 16-23 Float64, 24-31 Utf8 (8-24 characters).
fn wide() -> RecordBatch {
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for c in 0..32usize {
        let null = move |i: usize| (i + c).is_multiple_of(10);
        let (data_type, column): (DataType, ArrayRef) = match c {
            0..16 => (
                DataType::Int64,
                Arc::new(Int64Array::from_iter((0..ROWS).map(|i| {
                    (!null(i)).then(|| (i as i64).wrapping_mul(0x9E37_79B9) ^ c as i64)
                }))),
            ),
            16..24 => (
                DataType::Float64,
                Arc::new(Float64Array::from_iter(
                    (0..ROWS).map(|i| (!null(i)).then_some(i as f64 * 0.5 + c as f64)),
                )),
            ),
            _ => (
                DataType::Utf8,
                Arc::new(StringArray::from_iter((0..ROWS).map(|i| {
                    (!null(i)).then(|| format!("label-{c}-{}", "x".repeat((i * 7 + c) % 17)))
                }))),
            ),
        };
        fields.push(Field::new(format!("c{c}"), data_type, true));
        columns.push(column);
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
}

fn bench(c: &mut Criterion) {
    let batch = wide();
    let data = ArrowDataset::from_batch(batch);
    let projections: [(&str, Vec<usize>); 4] = [
        ("1 Int64", vec![0]),
        ("1 Utf8", vec![24]),
        ("none (COUNT)", vec![]),
        ("all 32", (0..32).collect()),
    ];
    for compression in [Compression::None, Compression::ZstdL3] {
        let options = SaveOptions::new(DatasetType::Tabular, compression).streaming(ROWS);
        let bytes = data.to_bytes(&options).unwrap();
        let dataset = StreamingDataset::from_bytes(&bytes[..], &LoadOptions::default()).unwrap();
        let decoded = dataset.chunk_entry(0).unwrap().uncompressed_size;
        let mut group = c.benchmark_group(format!("chunk/{compression:?}"));
        group.throughput(Throughput::Bytes(decoded));
        group.measurement_time(Duration::from_secs(4));
        for (name, projection) in &projections {
            group.bench_function(format!("full then project {name}"), |b| {
                b.iter(|| black_box(dataset.get_chunk(0).unwrap().project(projection).unwrap()));
            });
            group.bench_function(format!("projected {name}"), |b| {
                b.iter(|| black_box(dataset.get_chunk_projected(0, projection).unwrap()));
            });
        }
        group.finish();
    }

    // The Arrow IPC decoding alone, from the decoded chunk in memory.
    let whole = data
        .to_bytes(&SaveOptions::new(DatasetType::Tabular, Compression::None))
        .unwrap();
    let opened = ald::Opened::open(&whole[..], &LoadOptions::default()).unwrap();
    let section = opened.envelope().schema().to_vec();
    let payload = Buffer::from(opened.envelope().payload());
    let mut group = c.benchmark_group("ipc");
    group.throughput(Throughput::Bytes(payload.len() as u64));
    group.measurement_time(Duration::from_secs(4));
    group.bench_function("decode_batches (all 32)", |b| {
        b.iter(|| black_box(ald::ipc::decode_batches(&section, payload.clone()).unwrap()));
    });
    for (name, projection) in &projections {
        group.bench_function(format!("decode_batches_projected {name}"), |b| {
            b.iter(|| {
                black_box(
                    ald::ipc::decode_batches_projected(&section, payload.clone(), projection)
                        .unwrap(),
                )
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
