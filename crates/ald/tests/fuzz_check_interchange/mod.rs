//! The bodies of the interchange fuzz targets (`arrow_file`, `arrow_stream`, `parquet_reader`,
//! `csv_reader`, `jsonl_reader`), shared with the stable corpus replay in `fuzz_corpus.rs` (each
//! target includes this file by path, so an input that once found a bug keeps being checked by
//! `cargo test`).
//!
//! Property for every reader: any bytes are read or refused with a typed error (`InvalidFormat`
//! or `Io`), never a panic, and what is read is consistent: every batch has the source's schema,
//! `head(n)` is the first `n` rows of the whole table. Arrow IPC inputs that read also re-encode
//! (Arrow's own writer, in memory) into bytes that read back to the same table.

#![allow(dead_code, reason = "each fuzz target uses one of these checks")]

use ald::arrow_array::RecordBatch;
use ald::arrow_schema::{ArrowError, Schema};
use ald::interchange::{CsvOptions, FileKind, Inference, ReadOptions, Source};
use envelope_core::Signal;

/// Reads `data` as `kind` and checks the table's consistency; returns the batches read.
fn read(kind: FileKind, data: &[u8], options: ReadOptions<'static>) -> Option<Vec<RecordBatch>> {
    let source = match Source::from_bytes(kind, data.to_vec(), options) {
        Ok(source) => source,
        Err(error) => {
            refused(&error);
            return None;
        }
    };
    let mut batches = Vec::new();
    let outcome = source.for_each(|batch| {
        assert_eq!(batch.schema().fields(), source.schema().fields());
        batches.push(batch);
        Ok(())
    });
    if let Err(error) = outcome {
        refused(&error);
        return None;
    }
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    if let Ok(head) = source.head(3) {
        assert_eq!(head.num_rows(), rows.min(3));
        if let Some(first) = batches.iter().find(|batch| batch.num_rows() > 0) {
            let take = head.num_rows().min(first.num_rows());
            // Columns only: `head` carries the source's schema-level metadata, which a reader's
            // batches need not (parquet's carry none).
            assert_eq!(
                head.slice(0, take).columns(),
                first.slice(0, take).columns()
            );
        }
    }
    Some(batches)
}

fn refused(error: &ald::Error) {
    assert!(
        matches!(error.signal(), Signal::InvalidFormat | Signal::Io),
        "refused with the wrong signal: {error}"
    );
}

/// Arrow IPC file bytes.
pub(crate) fn arrow_file(data: &[u8]) {
    arrow_ipc_round_trip(FileKind::ArrowIpc, data, |bytes, schema, batches| {
        let mut writer = arrow_ipc::writer::FileWriter::try_new(bytes, schema)?;
        batches.iter().try_for_each(|batch| writer.write(batch))?;
        writer.finish()
    });
}

/// Arrow IPC stream bytes.
pub(crate) fn arrow_stream(data: &[u8]) {
    arrow_ipc_round_trip(FileKind::ArrowStream, data, |bytes, schema, batches| {
        let mut writer = arrow_ipc::writer::StreamWriter::try_new(bytes, schema)?;
        batches.iter().try_for_each(|batch| writer.write(batch))?;
        writer.finish()
    });
}

/// Reads `data` as `kind`; what reads is written again by `write` (Arrow's own writer) and must
/// read back to the same batches.
fn arrow_ipc_round_trip(
    kind: FileKind,
    data: &[u8],
    write: impl FnOnce(&mut Vec<u8>, &Schema, &[RecordBatch]) -> Result<(), ArrowError>,
) {
    let Some(batches) = read(kind, data, ReadOptions::default()) else {
        return;
    };
    let Some(schema) = batches.first().map(RecordBatch::schema) else {
        return;
    };
    let mut bytes = Vec::new();
    if write(&mut bytes, &schema, &batches).is_ok() {
        let again =
            read(kind, &bytes, ReadOptions::default()).expect("re-encoded input reads back");
        assert_eq!(again, batches);
    }
}

/// Parquet bytes.
pub(crate) fn parquet_reader(data: &[u8]) {
    read(FileKind::Parquet, data, ReadOptions::default());
}

/// CSV bytes; the first byte picks the options (delimiter, header, sample, null values), the
/// rest is the file.
pub(crate) fn csv_reader(data: &[u8]) {
    read_with_options_byte(FileKind::Csv, data, |choice| ReadOptions {
        csv: CsvOptions {
            delimiter: [b',', b';', b'\t', b'|'][usize::from(choice & 3)],
            header: choice & 4 == 0,
            skip_rows: u64::from(choice >> 6),
            null_values: (choice & 8 != 0).then(|| vec![String::new(), "NA".to_owned()]),
        },
        infer: sample(choice & 16 != 0, 2),
        ..ReadOptions::default()
    });
}

/// JSONL bytes; the first byte picks the sample (all rows or the first one).
pub(crate) fn jsonl_reader(data: &[u8]) {
    read_with_options_byte(FileKind::Jsonl, data, |choice| ReadOptions {
        infer: sample(choice & 1 != 0, 1),
        ..ReadOptions::default()
    });
}

/// [`read`] of the text after the first byte, with the options `options` makes of that byte.
fn read_with_options_byte(
    kind: FileKind,
    data: &[u8],
    options: impl FnOnce(u8) -> ReadOptions<'static>,
) {
    if let Some((&choice, text)) = data.split_first() {
        read(kind, text, options(choice));
    }
}

/// The default sample, or (when `bounded`) the first `rows` rows.
fn sample(bounded: bool, rows: usize) -> Inference {
    if bounded {
        Inference::Rows(rows)
    } else {
        Inference::Default
    }
}
