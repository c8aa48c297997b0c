//! Watermarked datasets (000 §9.3, docs/watermark.md §11) through the public API: distortion of
//! every column's mean and standard deviation, the buyer recovered after row sampling, a column
//! subset, row shuffling and `.ald` round trips (whole, zstd, STREAMING), nobody found with a
//! wrong key, null slots untouched, integer columns only when selected (and then integers), a
//! tiny table refused, the `Watermarkable` trait, commercial packaging that sets WATERMARKED only
//! after a read-back embedding, and the independent numpy reader written from the docs.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    reason = "test tables are generated from small seeded draws"
)]

use std::sync::Arc;

use ald::watermark::synthetic::{Rng, mean_sd};
use ald::watermark::{SellerKey, Traceability, Watermark, Watermarkable as _, detect};
use ald::{ArrowDataset, DatasetType, LicenseFlags, SaveOptions};
use arrow_array::cast::AsArray as _;
use arrow_array::types::{Float32Type, Float64Type, Int64Type, TimestampMillisecondType};
use arrow_array::{
    Array as _, ArrayRef, Float32Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray, TimestampMillisecondArray, UInt32Array,
};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use envelope_core::{Compression, Signal};
use envelope_crypto::{EncryptOptions, OsRng};

use crate::signal;

/// Null slots of `price` hold this, which no valid value is near: were it read, the column's
/// scale would change; were it written, the test would see it.
const NULL_SLOT: f64 = -999.0;

fn seller() -> SellerKey {
    SellerKey::new([0x5e; 32])
}

fn mark() -> Watermark {
    Watermark::for_buyer(&seller(), b"buyer@example.com")
}

fn table_schema() -> Arc<Schema> {
    let mut at = Field::new(
        "at",
        DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
        false,
    );
    at.set_metadata(std::collections::HashMap::from([(
        "unit".to_owned(),
        "event time".to_owned(),
    )]));
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("price", DataType::Float64, true),
        Field::new("income", DataType::Float64, false),
        Field::new("ratio", DataType::Float32, false),
        at,
        Field::new("cents", DataType::Int64, false),
        Field::new("code", DataType::Int32, false),
        Field::new("name", DataType::Utf8, false),
    ]))
}

/// One batch of `rows` rows from `start`: a customer table of the kind that is sold. `price`
/// has every 13th slot null.
fn batch(rng: &mut Rng, start: usize, rows: usize) -> RecordBatch {
    let ids: Vec<i64> = (start..start + rows).map(|i| i as i64).collect();
    let prices: Vec<f64> = (0..rows)
        .map(|i| {
            if (start + i) % 13 == 5 {
                NULL_SLOT
            } else {
                50.0 + 10.0 * rng.normal()
            }
        })
        .collect();
    let nulls = NullBuffer::from_iter((start..start + rows).map(|i| i % 13 != 5));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ids.clone())),
        Arc::new(Float64Array::new(prices.into(), Some(nulls))),
        Arc::new(Float64Array::from_iter_values(
            (0..rows).map(|_| (10.0 + 0.5 * rng.normal()).exp()),
        )),
        Arc::new(Float32Array::from_iter_values(
            (0..rows).map(|_| 0.1 + 0.8 * rng.uniform() as f32),
        )),
        Arc::new(
            TimestampMillisecondArray::from_iter_values(
                (0..rows).map(|_| 1_750_000_000_000 + (rng.uniform() * 86_400_000.0) as i64),
            )
            .with_timezone("UTC"),
        ),
        Arc::new(Int64Array::from_iter_values((0..rows).map(|_| {
            (1_000_000.0 + 200_000.0 * rng.normal()).round() as i64
        }))),
        Arc::new(Int32Array::from_iter_values(
            ids.iter().map(|i| (i % 10) as i32),
        )),
        Arc::new(StringArray::from_iter_values(
            ids.iter().map(|i| format!("customer {i}")),
        )),
    ];
    RecordBatch::try_new(table_schema(), columns).unwrap()
}

/// 30,000 rows in three batches of uneven sizes.
fn table() -> ArrowDataset {
    let mut rng = Rng::new(2026);
    let batches = vec![
        batch(&mut rng, 0, 10_000),
        batch(&mut rng, 10_000, 12_000),
        batch(&mut rng, 22_000, 8_000),
    ];
    ArrowDataset::new(table_schema(), batches).unwrap()
}

/// The valid values of float column `name`, as f64, over all batches.
fn floats(dataset: &ArrowDataset, name: &str) -> Vec<f64> {
    let index = dataset.schema().index_of(name).unwrap();
    let mut out = Vec::new();
    for batch in dataset.batches() {
        let array = batch.column(index);
        for i in 0..array.len() {
            if array.is_valid(i) {
                out.push(match array.data_type() {
                    DataType::Float64 => array.as_primitive::<Float64Type>().value(i),
                    DataType::Float32 => f64::from(array.as_primitive::<Float32Type>().value(i)),
                    other => panic!("{other}"),
                });
            }
        }
    }
    out
}

fn marked() -> (ArrowDataset, ArrowDataset) {
    let original = table();
    let (marked, report) = original.watermarked(&mark(), &seller()).unwrap();
    assert_eq!(report.traceability, Traceability::Extractable);
    let names: Vec<&str> = report.slices.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["price", "income", "ratio"],
        "floats only, by default"
    );
    (original, marked)
}

fn finds_the_buyer(dataset: &ArrowDataset) -> bool {
    dataset
        .extract_watermark(&seller())
        .is_some_and(|found| found.buyer_hash == mark().buyer_hash)
}

/// 000 §9.3.1: "< 0.01 % error" in every column's mean and standard deviation. With
/// `--nocapture` it prints the figures of docs/watermark.md §11.1.
#[test]
#[allow(
    clippy::print_stderr,
    reason = "the published figures, shown with --nocapture"
)]
fn marking_moves_no_columns_mean_or_sd_by_a_hundredth_of_a_percent() {
    let (original, marked) = marked();
    eprintln!(
        "| column | values | changed | \\|Δmean\\| / \\|mean\\| | \\|Δsd\\| / sd | max \\|Δx\\| / sd |"
    );
    eprintln!("|---|---|---|---|---|---|");
    for name in ["price", "income", "ratio"] {
        let (before, after) = (floats(&original, name), floats(&marked, name));
        assert_eq!(before.len(), after.len());
        let changed = before.iter().zip(&after).filter(|(a, b)| a != b).count();
        assert!(changed > before.len() * 9 / 10, "{name}: {changed} changed");
        let ((m0, s0), (m1, s1)) = (mean_sd(&before), mean_sd(&after));
        let mean = ((m1 - m0) / m0).abs();
        let sd = ((s1 - s0) / s0).abs();
        let max = before
            .iter()
            .zip(&after)
            .map(|(a, b)| (a - b).abs() / s0)
            .fold(0.0, f64::max);
        eprintln!(
            "| {name} | {} | {:.1} % | {mean:.1e} | {sd:.1e} | {max:.1e} |",
            before.len(),
            100.0 * changed as f64 / before.len() as f64
        );
        assert!(
            mean < 1e-4 && sd < 1e-4,
            "{name}: mean {mean:.1e}, sd {sd:.1e}"
        );
    }
    // Every other column is untouched, batch by batch.
    for (a, b) in original.batches().iter().zip(marked.batches()) {
        assert_eq!(a.num_rows(), b.num_rows());
        for name in ["id", "at", "cents", "code", "name"] {
            assert_eq!(a.column_by_name(name), b.column_by_name(name), "{name}");
        }
    }
    assert_eq!(marked.schema(), original.schema());
}

#[test]
fn the_buyer_survives_sampling_subsets_and_shuffling_but_not_a_wrong_key() {
    let (original, marked) = marked();
    assert!(finds_the_buyer(&marked));
    assert!(marked.verify_watermark(&mark().buyer_hash, &seller()));
    assert!(original.extract_watermark(&seller()).is_none(), "clean");
    let wrong = SellerKey::new([0x5f; 32]);
    assert!(marked.extract_watermark(&wrong).is_none());
    assert!(!marked.verify_watermark(&mark().buyer_hash, &wrong));
    let other = Watermark::for_buyer(&seller(), b"someone else").buyer_hash;
    assert!(!marked.verify_watermark(&other, &seller()));

    let whole = marked.to_batch().unwrap();
    let mut rng = Rng::new(7);
    // Row sampling to 50 %, in a random order (a shuffled half).
    let mut rows: Vec<u32> = (0..whole.num_rows() as u32).collect();
    for i in (1..rows.len()).rev() {
        rows.swap(i, rng.below(i + 1));
    }
    let take = |rows: &[u32]| {
        let indices = UInt32Array::from(rows.to_vec());
        arrow_select::take::take_record_batch(&whole, &indices).unwrap()
    };
    let shuffled = ArrowDataset::from_batch(take(&rows));
    assert!(finds_the_buyer(&shuffled), "shuffled");
    let half = ArrowDataset::from_batch(take(&rows[..rows.len() / 2]));
    assert!(finds_the_buyer(&half), "50 % of the rows");
    // A column subset: one float column alone, with the untouched ones.
    for column in ["price", "income", "ratio"] {
        let keep: Vec<usize> = ["id", column, "name"]
            .iter()
            .map(|name| whole.schema().index_of(name).unwrap())
            .collect();
        let subset = ArrowDataset::from_batch(whole.project(&keep).unwrap());
        assert!(finds_the_buyer(&subset), "only {column}");
    }
}

#[test]
fn marked_files_read_back_the_buyer_whole_compressed_and_streaming() {
    let (_, marked) = marked();
    let dir = tempfile::tempdir().unwrap();
    for (compression, chunk_rows) in [
        (Compression::None, None),
        (Compression::ZstdL3, None),
        (Compression::None, Some(4_096)),
        (Compression::ZstdL3, Some(7_000)),
    ] {
        let mut options = SaveOptions::new(DatasetType::Tabular, compression);
        options.chunk_rows = chunk_rows;
        let bytes = marked.to_bytes(&options).unwrap();
        let loaded = ald::load_from_bytes(&bytes).unwrap();
        assert_eq!(loaded.to_batch().unwrap(), marked.to_batch().unwrap());
        assert!(finds_the_buyer(&loaded), "{compression:?} {chunk_rows:?}");
        // Through the disk (STREAMING files load on several threads there).
        let path = dir
            .path()
            .join(format!("{compression:?}-{chunk_rows:?}.ald"));
        ald::fs::save(path.as_path(), &marked, &options).unwrap();
        let loaded = ald::fs::load(&path, &ald::LoadOptions::default()).unwrap();
        assert!(finds_the_buyer(&loaded.dataset), "{}", path.display());
    }
}

#[test]
fn null_slots_are_neither_read_nor_changed() {
    let (original, marked) = marked();
    let index = original.schema().index_of("price").unwrap();
    for (a, b) in original.batches().iter().zip(marked.batches()) {
        let (a, b) = (
            a.column(index).as_primitive::<Float64Type>(),
            b.column(index).as_primitive::<Float64Type>(),
        );
        assert_eq!(a.nulls(), b.nulls());
        assert!(a.null_count() > 0);
        for i in 0..a.len() {
            if a.is_null(i) {
                assert_eq!(b.values()[i], NULL_SLOT);
            } else {
                assert_ne!(b.values()[i], NULL_SLOT);
            }
        }
    }
    // Had the null slots been read, -999 would be in the column's statistics.
    let statistics = marked.watermark_statistics();
    let names: Vec<&str> = statistics.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["price", "income", "ratio"]);
    assert_eq!(statistics[0].1.values, floats(&original, "price").len());
    let verdict = detect::detect(statistics.into_iter().map(|(_, s)| s).collect());
    assert_eq!(verdict.slices.len(), 3);
}

/// With `--nocapture` it prints the integer rows of docs/watermark.md §11.1.
#[test]
#[allow(
    clippy::print_stderr,
    reason = "the published figures, shown with --nocapture"
)]
fn integer_columns_are_marked_only_when_selected_and_stay_integers() {
    let original = table();
    let schema = original.schema().clone();
    let [at, cents, code, name, id] =
        ["at", "cents", "code", "name", "id"].map(|n| schema.index_of(n).unwrap());
    let mut selected = mark();
    selected.column_indices = vec![at, cents];
    let (marked, report) = original.watermarked(&selected, &seller()).unwrap();
    assert_eq!(report.traceability, Traceability::Extractable);
    // Steps of at least 32 units: 2^16 ms for the timestamps, 2^8 cents for the amounts.
    for slice in &report.slices {
        assert!(slice.report.exponent.unwrap() >= 5, "{slice:?}");
    }
    assert_eq!(
        marked.schema(),
        &schema,
        "type, time zone and field metadata kept"
    );
    let values = |d: &ArrowDataset, i: usize| -> Vec<i64> {
        d.batches()
            .iter()
            .flat_map(|b| {
                let c = b.column(i);
                if let DataType::Timestamp(..) = c.data_type() {
                    c.as_primitive::<TimestampMillisecondType>()
                        .values()
                        .to_vec()
                } else {
                    c.as_primitive::<Int64Type>().values().to_vec()
                }
            })
            .collect()
    };
    for column in [at, cents] {
        let (before, after) = (values(&original, column), values(&marked, column));
        let changed = before.iter().zip(&after).filter(|(a, b)| a != b).count();
        assert!(changed > before.len() / 2, "{column}: {changed}");
        let as_f64 = |v: &[i64]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
        let ((m0, s0), (m1, s1)) = (mean_sd(&as_f64(&before)), mean_sd(&as_f64(&after)));
        let (mean, sd) = (((m1 - m0) / m0).abs(), ((s1 - s0) / s0).abs());
        let max = before
            .iter()
            .zip(&after)
            .map(|(a, b)| (a - b).abs() as f64 / s0)
            .fold(0.0, f64::max);
        eprintln!(
            "| {} (selected) | {} | {:.1} % | {mean:.1e} | {sd:.1e} | {max:.1e} |",
            schema.field(column).name(),
            before.len(),
            100.0 * changed as f64 / before.len() as f64
        );
        assert!(mean < 1e-4 && sd < 1e-4);
    }
    let floats_untouched = original.batches()[0].column_by_name("price");
    assert_eq!(
        marked.batches()[0].column_by_name("price"),
        floats_untouched
    );
    assert!(finds_the_buyer(&marked));
    let alone = ArrowDataset::from_batch(marked.to_batch().unwrap().project(&[at]).unwrap());
    assert!(finds_the_buyer(&alone), "the timestamps alone carry it");

    // Ids are 0..30,000: at strength 1e-3 the step would be 8 units, too fine for integers.
    selected.column_indices = vec![id];
    let error = original.watermarked(&selected, &seller()).unwrap_err();
    assert!(
        matches!(&error, ald::Error::ColumnNotWatermarkable { column, .. } if column == "id"),
        "{error}"
    );
    assert!(
        error.to_string().contains("strength of at least"),
        "{error}"
    );
    assert!(error.is_operation_failure());
    // Codes 0..9: no step of 32 units fits.
    selected.column_indices = vec![code];
    let error = original.watermarked(&selected, &seller()).unwrap_err();
    assert!(
        error.to_string().contains("leave the column out"),
        "{error}"
    );
    assert!(!error.to_string().contains("at least 8"), "{error}");
    // Text cannot carry a mark; an index past the schema is named.
    selected.column_indices = vec![name];
    let error = original.watermarked(&selected, &seller()).unwrap_err();
    assert!(error.to_string().contains("Utf8"), "{error}");
    selected.column_indices = vec![99];
    assert!(matches!(
        original.watermarked(&selected, &seller()),
        Err(ald::Error::NoSuchColumn {
            index: 99,
            columns: 8
        })
    ));
}

#[test]
fn a_table_too_small_to_carry_the_mark_is_refused() {
    let mut rng = Rng::new(3);
    let tiny = ArrowDataset::new(table_schema(), vec![batch(&mut rng, 0, 12)]).unwrap();
    let error = tiny.watermarked(&mark(), &seller()).unwrap_err();
    assert!(
        matches!(
            error,
            ald::Error::Watermark(ald::watermark::Error::NotTraceable { .. })
        ),
        "{error}"
    );
    assert_eq!(error.signal(), Signal::Usage);
    assert!(error.is_operation_failure());
    let mut copy = tiny.clone();
    assert!(copy.embed_watermark(&mark(), &seller()).is_err());
    assert_eq!(copy, tiny, "nothing changed");
    let mut weak = mark();
    weak.strength = 0.5;
    assert_eq!(signal(table().watermarked(&weak, &seller())), Signal::Usage);
}

#[test]
fn a_dataset_is_watermarkable_in_place() {
    let mut data = table();
    let traceability = data.embed_watermark(&mark(), &seller()).unwrap();
    assert_eq!(traceability, Traceability::Extractable);
    let found = data.extract_watermark(&seller()).unwrap();
    assert_eq!(found.buyer_hash, mark().buyer_hash);
    assert!(found.confidence > 0.999_999);
    assert!(data.verify_watermark(&mark().buyer_hash, &seller()));
    let reading = data.watermark_reading(&seller());
    let names: Vec<&str> = reading.slices.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["id", "price", "income", "ratio", "at", "cents", "code"]
    );
    assert!(reading.slices[1].evidence.votes > 20_000);
}

#[test]
fn commercial_packages_are_flagged_watermarked_only_with_an_embedded_mark() {
    let (key, trusted) = crate::publisher();
    let package = ald::commercial::CommercialPackage {
        license: crate::license(crate::NOW + 10),
        signer: &key,
        encrypt_to: None,
        options: EncryptOptions::default(),
    };
    let options = SaveOptions::new(DatasetType::Tabular, Compression::ZstdL3).streaming(5_000);
    let bytes = ald::commercial::package_commercial(
        &table(),
        &options,
        &package,
        Some((&mark(), &seller())),
        &mut OsRng,
    )
    .unwrap();
    let loaded =
        ald::commercial::load_commercial(&bytes, &trusted, None, crate::NOW, None).unwrap();
    assert!(
        loaded
            .license
            .unwrap()
            .flags
            .contains(LicenseFlags::WATERMARKED)
    );
    assert!(finds_the_buyer(&loaded.dataset));

    let plain = ald::commercial::package_commercial(&table(), &options, &package, None, &mut OsRng)
        .unwrap();
    let loaded =
        ald::commercial::load_commercial(&plain, &trusted, None, crate::NOW, None).unwrap();
    assert!(
        !loaded
            .license
            .unwrap()
            .flags
            .contains(LicenseFlags::WATERMARKED)
    );
    assert!(loaded.dataset.extract_watermark(&seller()).is_none());

    // A table that cannot carry the mark is not packaged at all.
    let mut rng = Rng::new(3);
    let tiny = ArrowDataset::new(table_schema(), vec![batch(&mut rng, 0, 12)]).unwrap();
    let refused = ald::commercial::package_commercial(
        &tiny,
        &options,
        &package,
        Some((&mark(), &seller())),
        &mut OsRng,
    );
    assert!(refused.unwrap_err().is_operation_failure());
}

/// The numpy reader written from docs/watermark.md alone (with the independent `.ald` reader of
/// tests/python/ald) finds the buyer in a marked file, whole or STREAMING and zstd, and nobody
/// with a wrong key or in the clean file.
#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn the_numpy_reader_written_from_the_docs_finds_the_buyer_in_an_ald_file() {
    let dir = tempfile::tempdir().unwrap();
    let (original, marked) = marked();
    let mut selected = mark();
    selected.column_indices = vec![4];
    let (timestamps, _) = original.watermarked(&selected, &seller()).unwrap();
    let key_hex = hex::encode([0x5e; 32]);
    let wrong_hex = hex::encode([0x5f; 32]);
    let expected = hex::encode(mark().buyer_hash);
    let files = [
        ("marked.ald", &marked, SaveOptions::default()),
        (
            "streaming.ald",
            &marked,
            SaveOptions::new(DatasetType::Tabular, Compression::ZstdL3).streaming(4_096),
        ),
        ("timestamps.ald", &timestamps, SaveOptions::default()),
        ("clean.ald", &original, SaveOptions::default()),
    ];
    for (name, data, options) in &files {
        let path = dir.path().join(name);
        std::fs::write(&path, data.to_bytes(options).unwrap()).unwrap();
        let run = |key: &str| {
            let args = [path.as_os_str(), key.as_ref()];
            test_support::python("watermark/numpy_extract.py", &args)
        };
        let right = run(&key_hex);
        let stdout = String::from_utf8_lossy(&right.stdout);
        if *name == "clean.ald" {
            assert_eq!(right.status.code(), Some(1), "{stdout}");
            assert!(
                right.stderr.is_empty(),
                "{}",
                String::from_utf8_lossy(&right.stderr)
            );
            assert!(stdout.contains("no buyer"), "{stdout}");
        } else {
            assert!(
                right.status.success(),
                "{name}: {stdout}{}",
                String::from_utf8_lossy(&right.stderr)
            );
            assert!(stdout.contains(&format!("buyer {expected}")), "{stdout}");
            // The columns that carry the mark are the ones read (the integer path for the
            // timestamps).
            let carrier = if *name == "timestamps.ald" {
                "at: exponent 15"
            } else {
                "price: exponent"
            };
            assert!(stdout.contains(carrier), "{stdout}");
        }
        let wrong = run(&wrong_hex);
        assert_eq!(wrong.status.code(), Some(1), "{name} with a wrong key");
        assert!(String::from_utf8_lossy(&wrong.stdout).contains("no buyer"));
    }
}
