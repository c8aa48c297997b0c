//! Writes the seeds of the `ald_reader` fuzz target (run through `cargo xtask fuzz-seeds
//! ald_reader`, which passes fuzz/corpus/ald_reader). A generator, not a test: `cargo test` only
//! replays the corpus (tests/fuzz_corpus.rs).

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    reason = "a maintenance tool over small fixed tables"
)]

use std::path::PathBuf;
use std::sync::Arc;

use ald::{ArrowDataset, DatasetType, SaveOptions};
use arrow_array::{
    ArrayRef, DictionaryArray, Float64Array, Int64Array, RecordBatch, StringArray, types::Int32Type,
};
use arrow_schema::{DataType, Field, Schema};
use envelope_core::Compression;

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

/// Writes the seed files into the directory given as the only argument: small tables with nulls,
/// strings, a dictionary column and zero-row batches, whole and STREAMING, through every
/// compression.
fn main() {
    let corpus = PathBuf::from(
        std::env::args_os()
            .nth(1)
            .expect("usage: write_fuzz_seeds CORPUS_DIR"),
    );
    std::fs::create_dir_all(&corpus).unwrap();
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
                std::fs::write(corpus.join(name), bytes).unwrap();
            }
        }
    }
}
