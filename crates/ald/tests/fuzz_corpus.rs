//! Replays the `ald_reader` fuzz corpus (fuzz/corpus/ald_reader) and the interchange readers' corpora
//! on stable, and writes the `ald_reader` seeds.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    reason = "test tables are small"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ald::{ArrowDataset, DatasetType, SaveOptions};
use arrow_array::{
    ArrayRef, DictionaryArray, Float64Array, Int64Array, RecordBatch, StringArray, types::Int32Type,
};
use arrow_schema::{DataType, Field, Schema};
use envelope_core::Compression;

mod fuzz_check;
mod fuzz_check_interchange;

/// A fuzz target's check.
type FuzzCheck = fn(&[u8]);

/// Replays the corpora of the interchange fuzz targets (`fuzz/corpus/<target>`): no input may
/// panic a reader, and what reads is consistent (`fuzz_check_interchange`).
#[test]
fn interchange_fuzz_corpora_replay_without_panic() {
    let targets: [(&str, FuzzCheck); 5] = [
        ("arrow_file", fuzz_check_interchange::arrow_file),
        ("arrow_stream", fuzz_check_interchange::arrow_stream),
        ("parquet_reader", fuzz_check_interchange::parquet_reader),
        ("csv_reader", fuzz_check_interchange::csv_reader),
        ("jsonl_reader", fuzz_check_interchange::jsonl_reader),
    ];
    for (target, check) in targets {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus")
            .join(target);
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            check(&std::fs::read(entry.unwrap().path()).unwrap());
            seen += 1;
        }
        assert!(seen > 0, "empty corpus at {}", dir.display());
    }
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/ald_reader")
}

/// No input of the corpus may panic a reader.
#[test]
fn fuzz_corpus_replays_without_panic() {
    let mut seen = 0;
    for entry in std::fs::read_dir(corpus()).unwrap() {
        fuzz_check::ald_reader(&std::fs::read(entry.unwrap().path()).unwrap());
        seen += 1;
    }
    assert!(seen > 0, "empty corpus at {}", corpus().display());
}

fn table(rows: usize) -> ArrowDataset {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, true),
        Field::new("label", DataType::Utf8, true),
        Field::new(
            "kind",
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            false,
        ),
    ]));
    let batch = |start: usize, rows: usize| {
        let ids: Int64Array = (start as i64..(start + rows) as i64).collect();
        let x: Float64Array = (0..rows)
            .map(|i| (i % 3 != 0).then_some(i as f64 * 0.5))
            .collect();
        let labels: StringArray = (0..rows)
            .map(|i| (i % 4 != 0).then(|| format!("row-{i}")))
            .collect();
        let kinds: DictionaryArray<Int32Type> =
            (0..rows).map(|i| ["a", "bb", "ccc"][i % 3]).collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(ids),
            Arc::new(x),
            Arc::new(labels),
            Arc::new(kinds),
        ];
        RecordBatch::try_new(Arc::clone(&schema), columns).unwrap()
    };
    let batches = if rows == 0 {
        vec![batch(0, 0)]
    } else {
        vec![
            batch(0, rows / 2),
            batch(0, 0),
            batch(rows / 2, rows - rows / 2),
        ]
    };
    ArrowDataset::new(Arc::clone(&schema), batches).unwrap()
}

/// Writes the seed files (`cargo test -p ald --test fuzz_corpus -- --ignored write_seeds`): small
/// tables with nulls, strings, a dictionary column and zero-row batches, whole and STREAMING,
/// through every compression.
#[test]
#[ignore = "writes the fuzz seeds into fuzz/corpus/ald_reader; run by hand"]
fn write_seeds() {
    for rows in [0, 5, 40] {
        for compression in Compression::ALL {
            for chunk_rows in [None, Some(7)] {
                let mut options = SaveOptions::new(DatasetType::Tabular, compression);
                if let Some(chunk_rows) = chunk_rows {
                    options = options.streaming(chunk_rows);
                }
                let bytes = table(rows).to_bytes(&options).unwrap();
                let name = format!(
                    "seed-{rows}-{compression}-{}.ald",
                    if chunk_rows.is_some() {
                        "streaming"
                    } else {
                        "whole"
                    }
                );
                std::fs::write(corpus().join(name), bytes).unwrap();
            }
        }
    }
}
