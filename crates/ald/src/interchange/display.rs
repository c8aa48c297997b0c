//! Rows for people and for programs: an aligned text table and JSON objects (one per row), for
//! `alimentar head`.

use std::io::Write;

use arrow_array::RecordBatch;
use arrow_cast::display::{ArrayFormatter, FormatOptions};

use crate::{Error, Result};

/// Longest cell shown in a text table before it is cut with `…`.
pub const MAX_CELL_CHARS: usize = 48;

/// `Usage` naming the column Arrow cannot format (every type can since named time zones are
/// enabled; kept for types Arrow may add).
fn not_displayable(field: &arrow_schema::Field, format: &'static str) -> Error {
    Error::ColumnNotWritable {
        format,
        column: field.name().clone(),
        data_type: field.data_type().to_string(),
        reason: "Arrow cannot format values of this type",
    }
}

/// Writes `batch` as an aligned text table with a header line; nulls print as `null`. Every
/// column name and cell goes through `escape` first: a table printed on a terminal must not let a
/// value drive it (the CLI passes its terminal escaper); newlines are always shown as `\n`.
///
/// # Errors
/// `Io` from `out`.
pub fn write_text_table(
    batch: &RecordBatch,
    out: &mut impl Write,
    escape: &dyn Fn(&str) -> std::borrow::Cow<'_, str>,
) -> Result<()> {
    let options = FormatOptions::default().with_null("null");
    let schema = batch.schema();
    let formatters = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(column, field)| {
            // Arrow's error says no more than the type, which the message names.
            ArrayFormatter::try_new(column.as_ref(), &options)
                .map_err(|_| not_displayable(field, "a text table"))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut rows: Vec<Vec<String>> = vec![
        batch
            .schema()
            .fields()
            .iter()
            .map(|field| escape(field.name()).into_owned())
            .collect(),
    ];
    for row in 0..batch.num_rows() {
        rows.push(
            formatters
                .iter()
                .map(|formatter| cut(&escape(&formatter.value(row).to_string())))
                .collect(),
        );
    }
    let widths: Vec<usize> = (0..batch.num_columns())
        .map(|column| {
            rows.iter()
                .map(|row| row[column].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    Ok(())
}

fn cut(cell: &str) -> String {
    let mut cell = cell.to_owned();
    if let Some((at, _)) = cell.char_indices().nth(MAX_CELL_CHARS) {
        cell.truncate(at);
        cell.push('…');
    }
    cell.replace('\n', "\\n")
}

/// Writes `batch` as a JSON array of row objects (nulls written as `null`, as polars and pandas
/// write them; every type, nested ones included, as JSONL output writes it).
///
/// # Errors
/// `Io` from `out`.
pub fn write_json_rows(batch: &RecordBatch, out: &mut impl Write) -> Result<()> {
    let json_error = |error: arrow_schema::ArrowError| match error {
        arrow_schema::ArrowError::IoError(_, io) => io.into(),
        other => Error::unencodable("the rows cannot be written as JSON")(other),
    };
    let mut writer = arrow_json::WriterBuilder::new()
        .with_explicit_nulls(true)
        .with_encoder_factory(super::json_out::factory())
        .build::<_, arrow_json::writer::JsonArray>(out);
    writer.write(batch).map_err(json_error)?;
    writer.finish().map_err(json_error)?;
    Ok(())
}
