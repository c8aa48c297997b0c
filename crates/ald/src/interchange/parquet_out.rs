//! Parquet output: Arrow types Parquet has no logical type for are stored as the nearest lossless
//! one, and the Arrow schema embedded in the file (`ARROW:schema`, which arrow-rs and pyarrow
//! read) says what they were.
//!
//! - `Timestamp(Second, tz)` and `Time32(Second)` are stored in milliseconds, as pyarrow does:
//!   Parquet's TIMESTAMP and TIME have no second unit.
//! - `Date64` (milliseconds, whole days by Arrow's definition) is stored as Parquet's DATE
//!   (days), refused if a value is not a whole day; the embedded schema keeps `Date64`, so arrow-rs
//!   (and therefore `alimentar`) reads `Date64` back, while pyarrow and DuckDB read a date (pyarrow
//!   reads its own `date64` columns back as `date32` too). Left to arrow-rs's default, `Date64`
//!   would be a bare INT64 that every other reader takes for a number.
//! - Unions have no Parquet form: refused up front, naming the column.
//! - Dictionary columns keep their dictionary's order and unused values
//!   ([`parquet_dictionary`]): pandas categories come back in their order.

use std::io::Write;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};
use parquet::arrow::arrow_writer::ArrowWriterOptions;
use parquet::arrow::{ArrowWriter, add_encoded_arrow_schema_to_metadata};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use super::{FileKind, arrow_error, parquet_dictionary, parquet_error};
use crate::{Error, Result};

/// `data_type` as stored in Parquet (`keep_date64`: as described in the embedded Arrow schema).
fn stored_type(data_type: &DataType, keep_date64: bool) -> DataType {
    let field = |field: &Arc<Field>| {
        Arc::new(
            field
                .as_ref()
                .clone()
                .with_data_type(stored_type(field.data_type(), keep_date64)),
        )
    };
    match data_type {
        DataType::Timestamp(TimeUnit::Second, zone) => {
            DataType::Timestamp(TimeUnit::Millisecond, zone.clone())
        }
        DataType::Time32(TimeUnit::Second) => DataType::Time32(TimeUnit::Millisecond),
        DataType::Date64 if !keep_date64 => DataType::Date32,
        DataType::List(item) => DataType::List(field(item)),
        DataType::LargeList(item) => DataType::LargeList(field(item)),
        DataType::FixedSizeList(item, size) => DataType::FixedSizeList(field(item), *size),
        DataType::Struct(fields) => DataType::Struct(fields.iter().map(field).collect::<Fields>()),
        DataType::Map(entries, sorted) => DataType::Map(field(entries), *sorted),
        DataType::Dictionary(key, value) => {
            DataType::Dictionary(key.clone(), Box::new(stored_type(value, keep_date64)))
        }
        other => other.clone(),
    }
}

fn contains(data_type: &DataType, wanted: &dyn Fn(&DataType) -> bool) -> bool {
    wanted(data_type)
        || match data_type {
            DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
                contains(item.data_type(), wanted)
            }
            DataType::Map(entries, _) => contains(entries.data_type(), wanted),
            DataType::Struct(fields) => fields.iter().any(|f| contains(f.data_type(), wanted)),
            DataType::Union(fields, _) => {
                fields.iter().any(|(_, f)| contains(f.data_type(), wanted))
            }
            DataType::Dictionary(_, value) => contains(value, wanted),
            _ => false,
        }
}

fn schema_with(schema: &Schema, keep_date64: bool) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|field| {
            field
                .as_ref()
                .clone()
                .with_data_type(stored_type(field.data_type(), keep_date64))
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// Writes the batches `feed` hands over as a Parquet file to `out` (zstd).
///
/// # Errors
/// `Usage` naming a union column (before anything is written) or a `Date64` column holding a value
/// that is not a whole day; the writer's errors.
pub(crate) fn write<W: Write + Send>(
    out: W,
    schema: &SchemaRef,
    feed: impl FnOnce(&mut dyn FnMut(&RecordBatch) -> Result<()>) -> Result<()>,
) -> Result<()> {
    if let Some(field) = schema
        .fields()
        .iter()
        .find(|field| contains(field.data_type(), &|t| matches!(t, DataType::Union(..))))
    {
        return Err(Error::ColumnNotWritable {
            format: "Parquet",
            column: field.name().clone(),
            data_type: field.data_type().to_string(),
            reason: "Parquet has no union type; write Arrow IPC or JSONL",
        });
    }
    let stored = schema_with(schema, false);
    let described = schema_with(schema, true);
    let mut properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .build();
    add_encoded_arrow_schema_to_metadata(&described, &mut properties);
    let options = ArrowWriterOptions::new()
        .with_properties(properties)
        .with_skip_arrow_metadata(true);
    let writer = ArrowWriter::try_new_with_options(out, Arc::clone(&stored), options)
        .map_err(parquet_error)?;
    if stored
        .fields()
        .iter()
        .any(|field| parquet_dictionary::keeps_order(field.data_type()))
    {
        let mut writer = parquet_dictionary::OrderedWriter::new(writer, Arc::clone(&stored))
            .map_err(parquet_error)?;
        feed(&mut |batch| {
            let batch = to_stored(batch, &stored)?;
            writer.write(&batch).map_err(parquet_error)
        })?;
        writer.close().map_err(parquet_error)?;
    } else {
        let mut writer = writer;
        feed(&mut |batch| {
            let batch = to_stored(batch, &stored)?;
            writer.write(&batch).map_err(parquet_error)
        })?;
        writer.close().map_err(parquet_error)?;
    }
    Ok(())
}

fn to_stored(batch: &RecordBatch, stored: &SchemaRef) -> Result<RecordBatch> {
    if batch.schema().fields() == stored.fields() {
        return Ok(batch.clone());
    }
    let columns = batch
        .columns()
        .iter()
        .zip(stored.fields())
        .zip(batch.schema().fields())
        .map(|((column, stored), original)| store_column(column, stored, original))
        .collect::<Result<Vec<_>>>()?;
    RecordBatch::try_new(Arc::clone(stored), columns)
        .map_err(|error| arrow_error(FileKind::Parquet, error))
}

fn store_column(column: &ArrayRef, stored: &Field, original: &Field) -> Result<ArrayRef> {
    if stored.data_type() == original.data_type() {
        return Ok(Arc::clone(column));
    }
    let cast = arrow_cast::cast(column, stored.data_type())
        .map_err(|error| arrow_error(FileKind::Parquet, error))?;
    if contains(original.data_type(), &|t| *t == DataType::Date64) {
        // Days lose the milliseconds of a Date64 that is not a whole day: refuse rather than
        // write another date.
        let back = arrow_cast::cast(&cast, original.data_type())
            .map_err(|error| arrow_error(FileKind::Parquet, error))?;
        if back.to_data() != column.to_data() {
            return Err(Error::ColumnNotWritable {
                format: "Parquet",
                column: original.name().clone(),
                data_type: original.data_type().to_string(),
                reason: "a Date64 value that is not a whole day (Arrow requires whole days; Parquet's DATE counts days)",
            });
        }
    }
    Ok(cast)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_without_a_parquet_form_are_stored_losslessly_and_described() {
        let date64 = DataType::List(Arc::new(Field::new("item", DataType::Date64, true)));
        assert_eq!(
            stored_type(&date64, false),
            DataType::List(Arc::new(Field::new("item", DataType::Date32, true)))
        );
        assert_eq!(stored_type(&date64, true), date64);
        let seconds = DataType::Timestamp(TimeUnit::Second, Some("Europe/Berlin".into()));
        assert_eq!(
            stored_type(&seconds, true),
            DataType::Timestamp(TimeUnit::Millisecond, Some("Europe/Berlin".into()))
        );
    }
}
