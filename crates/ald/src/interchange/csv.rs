//! CSV inputs: delimiter, header, skipped rows and null values as options, and column types
//! inferred as pyarrow infers them ([`super::csv_values`]) from a bounded sample.
//!
//! One reader serves inference and conversion: `arrow-csv`'s decoder splits records and fields
//! (quotes, escapes, line ends) and hands every column over as text; this module then infers
//! types from the first batches and converts each batch's text columns to the schema. Reading is
//! therefore one pass over the sample to infer and one pass over the file to convert (re-reading
//! the sample costs 1 MiB), never a whole-file pass before the first row is written, and the
//! bytes consumed are reported from the first one.
//!
//! The sample: by default the first [`DEFAULT_INFER_BYTES`] of data, pyarrow's default block
//! size (pyarrow infers from its first block and then fails on a value that does not fit, as this
//! reader does), rounded up to a whole batch of [`super::BATCH_ROWS`] rows. A later value that
//! does not fit its column is an error naming the row, the column and how to widen the sample.

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Arc;

use arrow_array::cast::AsArray as _;
use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, StringArray};
use arrow_buffer::NullBuffer;
use arrow_cast::CastOptions;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::csv_values::{self, Inferred, Kind, NullTokens};
use super::input::{self, ByteProgress, Origin, ReadStage};
use super::{BATCH_ROWS, FileKind, Inference, arrow_error, foreign};
use crate::Result;

/// Bytes of CSV data the default sample covers: pyarrow's default `block_size`, 1 MiB.
pub const DEFAULT_INFER_BYTES: u64 = 1 << 20;

/// How to read a CSV input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvOptions {
    /// The field delimiter (`b','`; `b'\t'` for TSV, `b';'`, ...).
    pub delimiter: u8,
    /// Whether the first record (after the skipped rows) names the columns. Without a header,
    /// columns are named `f0`, `f1`, ... (as pyarrow's `autogenerate_column_names`).
    pub header: bool,
    /// Lines skipped at the start of the file, before the header (counted by `\n`; a quoted
    /// field spanning lines is not recognized in them).
    pub skip_rows: u64,
    /// The field texts read as null. `None`: pyarrow's list ([`PYARROW_NULL_VALUES`]) in
    /// columns of every type but strings, where only the empty field is null (as polars and
    /// DuckDB read it). `Some(list)`: exactly these texts, in every column.
    ///
    /// [`PYARROW_NULL_VALUES`]: super::PYARROW_NULL_VALUES
    pub null_values: Option<Vec<String>>,
}

impl Default for CsvOptions {
    fn default() -> Self {
        Self {
            delimiter: b',',
            header: true,
            skip_rows: 0,
            null_values: None,
        }
    }
}

impl CsvOptions {
    fn null_tokens(&self) -> NullTokens {
        match &self.null_values {
            None => NullTokens::Default,
            Some(list) => NullTokens::Listed(list.iter().cloned().collect::<HashSet<_>>()),
        }
    }
}

/// How a CSV input's schema came about, for the message of a value that does not fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Provenance {
    /// Given by the caller.
    Given,
    /// Inferred from this many rows, which were not all of them.
    Sampled(u64),
    /// Inferred from every row.
    Everything,
}

/// The CSV decoder over one pass of the input, every column as text.
struct RawCsv {
    reader: Box<dyn std::io::BufRead + Send>,
    decoder: arrow_csv::reader::Decoder,
    /// Bytes of data (after skipped rows) handed to the decoder.
    consumed: u64,
}

impl RawCsv {
    fn open(
        origin: &Origin,
        options: &CsvOptions,
        columns: usize,
        stage: ReadStage,
        progress: Option<&ByteProgress>,
    ) -> Result<Self> {
        let mut reader = origin.reader(stage, progress)?;
        input::skip_bom(&mut reader)?;
        input::skip_lines(&mut reader, options.skip_rows)?;
        let reader = Box::new(input::Utf8Checked::new(reader));
        let text = Schema::new(
            (0..columns)
                .map(|column| Field::new(format!("f{column}"), DataType::Utf8, true))
                .collect::<Vec<_>>(),
        );
        // A record takes at least one byte: an input never holds more rows than bytes.
        let rows =
            batch_rows(columns).min(usize::try_from(origin.len()?).unwrap_or(usize::MAX).max(1));
        let decoder = arrow_csv::ReaderBuilder::new(Arc::new(text))
            .with_header(options.header)
            .with_delimiter(options.delimiter)
            .with_batch_size(rows)
            .build_decoder();
        Ok(Self {
            reader,
            decoder,
            consumed: 0,
        })
    }

    /// The next batch of records (every column `Utf8`, an empty field null).
    fn next(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            let buffer = self.reader.fill_buf().map_err(|error| {
                if error.kind() == std::io::ErrorKind::InvalidData {
                    foreign(FileKind::Csv, error.to_string())
                } else {
                    error.into()
                }
            })?;
            let decoded = self
                .decoder
                .decode(buffer)
                .map_err(|error| arrow_error(FileKind::Csv, error))?;
            self.reader.consume(decoded);
            self.consumed += decoded as u64;
            if decoded == 0 || self.decoder.capacity() == 0 {
                break;
            }
        }
        self.decoder
            .flush()
            .map_err(|error| arrow_error(FileKind::Csv, error))
    }
}

/// Fields per batch at most. arrow-csv's decoder reserves offsets (8 bytes) and text (8 bytes) for
/// every field of a batch before reading it, so a 10 KB header of 10,000 empty names with
/// [`BATCH_ROWS`]-row batches would reserve 1.3 GB: batches of wide files get fewer rows, and the
/// reservation stays within 16 MiB (or one row).
const MAX_BATCH_FIELDS: usize = 1 << 20;

/// Rows per decoded batch for `columns` columns.
fn batch_rows(columns: usize) -> usize {
    (MAX_BATCH_FIELDS / columns.max(1)).clamp(1, BATCH_ROWS)
}

/// The column names: the header's, or `f0`, `f1`, ... for as many fields as the first record.
fn column_names(origin: &Origin, options: &CsvOptions) -> Result<Vec<String>> {
    let mut reader = origin.reader(ReadStage::Inferring, None)?;
    input::skip_bom(&mut reader)?;
    input::skip_lines(&mut reader, options.skip_rows)?;
    let format = arrow_csv::reader::Format::default()
        .with_header(options.header)
        .with_delimiter(options.delimiter);
    let records = usize::from(!options.header);
    let (schema, _) = format
        .infer_schema(reader, Some(records))
        .map_err(|error| arrow_error(FileKind::Csv, error))?;
    if schema.fields().is_empty() {
        return Err(foreign(
            FileKind::Csv,
            "the file has no columns (it is empty)",
        ));
    }
    Ok(if options.header {
        schema.fields().iter().map(|f| f.name().clone()).collect()
    } else {
        (0..schema.fields().len())
            .map(|i| format!("f{i}"))
            .collect()
    })
}

/// The schema of a CSV input, from `sample` of its rows (all nullable, as a sample cannot prove
/// a column has no null).
///
/// # Errors
/// `InvalidFormat` for a malformed file (fields per record differ, invalid UTF-8); `Io`.
pub(crate) fn infer_schema(
    origin: &Origin,
    options: &CsvOptions,
    sample: Inference,
    progress: Option<&ByteProgress>,
) -> Result<(SchemaRef, Provenance)> {
    let names = column_names(origin, options)?;
    let nulls = options.null_tokens();
    let mut columns = vec![Inferred::default(); names.len()];
    let mut raw = RawCsv::open(origin, options, names.len(), ReadStage::Inferring, progress)?;
    let mut rows = 0u64;
    let mut complete = true;
    while let Some(batch) = raw.next()? {
        let take = match sample {
            Inference::Rows(limit) => (limit as u64 - rows).min(batch.num_rows() as u64),
            Inference::Default | Inference::All => batch.num_rows() as u64,
        };
        let take_rows = usize::try_from(take).unwrap_or(usize::MAX);
        for (column, inferred) in batch.columns().iter().zip(&mut columns) {
            let texts = column.as_string::<i32>();
            for text in texts.iter().take(take_rows) {
                inferred.update(text.unwrap_or_default(), &nulls);
            }
        }
        rows += take;
        let enough = match sample {
            Inference::Default => raw.consumed >= DEFAULT_INFER_BYTES,
            Inference::Rows(limit) => rows >= limit as u64,
            Inference::All => false,
        };
        if enough {
            // Whether rows remain (then the sample was not everything).
            complete = raw.next()?.is_none();
            break;
        }
    }
    let fields: Vec<Field> = names
        .iter()
        .zip(&columns)
        .map(|(name, inferred)| Field::new(name, inferred.data_type(), true))
        .collect();
    let provenance = if complete {
        Provenance::Everything
    } else {
        Provenance::Sampled(rows)
    };
    Ok((Arc::new(Schema::new(fields)), provenance))
}

/// How one column's text becomes its type.
enum Conversion {
    Kind(Kind),
    Null,
    /// Types outside the inferred ones (an explicit schema's `Int32`, `Decimal128(10, 2)`, ...),
    /// through `arrow-cast`.
    Cast(DataType),
}

/// Reads every record as `schema`, calling `each` with every batch until it breaks.
///
/// # Errors
/// `InvalidFormat` for a malformed file or a value that does not fit its column (naming row,
/// column and value); `Io`; the first error of `each`.
pub(crate) fn read(
    origin: &Origin,
    options: &CsvOptions,
    schema: &SchemaRef,
    provenance: Provenance,
    progress: Option<&ByteProgress>,
    mut each: impl FnMut(RecordBatch) -> Result<ControlFlow<()>>,
) -> Result<()> {
    let nulls = options.null_tokens();
    let plan: Vec<Conversion> = schema
        .fields()
        .iter()
        .map(
            |field| match (Kind::of(field.data_type()), field.data_type()) {
                (Some(kind), _) => Conversion::Kind(kind),
                (None, DataType::Null) => Conversion::Null,
                (None, other) => Conversion::Cast(other.clone()),
            },
        )
        .collect();
    let mut raw = RawCsv::open(origin, options, plan.len(), ReadStage::Reading, progress)?;
    let mut rows_before = 0u64;
    while let Some(batch) = raw.next()? {
        let columns = batch
            .columns()
            .iter()
            .zip(&plan)
            .zip(schema.fields())
            .map(|((column, conversion), field)| {
                let text = column.as_string::<i32>();
                convert(text, conversion, &nulls)
                    .map_err(|failure| failure.into_error(field, rows_before, provenance))
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        let count = batch.num_rows();
        let typed = RecordBatch::try_new_with_options(
            Arc::clone(schema),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(count)),
        )
        .map_err(|error| arrow_error(FileKind::Csv, error))?;
        rows_before += count as u64;
        if each(typed)?.is_break() {
            break;
        }
    }
    Ok(())
}

/// Why a column could not be converted.
enum Failure {
    /// A field that is not a value of the column's type (which is named).
    Misfit(csv_values::Misfit, String),
    Cast(arrow_schema::ArrowError),
}

impl Failure {
    fn into_error(self, field: &Field, rows_before: u64, provenance: Provenance) -> crate::Error {
        let hint = match provenance {
            Provenance::Sampled(rows) => format!(
                " (the types were inferred from the first {rows} rows: infer them from more rows or all, or give the schema)"
            ),
            Provenance::Given | Provenance::Everything => String::new(),
        };
        match self {
            Self::Misfit(misfit, expected) => foreign(
                FileKind::Csv,
                format!(
                    "row {}, column {:?}: {:?} is not {expected}{hint}",
                    rows_before + misfit.row as u64 + 1,
                    field.name(),
                    misfit.text
                ),
            ),
            Self::Cast(error) => crate::Error::Foreign {
                format: FileKind::Csv.name(),
                reason: format!("column {:?}: {error}{hint}", field.name()).into(),
                cause: Some(error.into()),
            },
        }
    }
}

fn convert(
    text: &StringArray,
    conversion: &Conversion,
    nulls: &NullTokens,
) -> std::result::Result<ArrayRef, Failure> {
    match conversion {
        Conversion::Kind(kind) => csv_values::convert(text, *kind, nulls)
            .map_err(|misfit| Failure::Misfit(misfit, kind_name(*kind).to_owned())),
        Conversion::Null => csv_values::convert_null(text, nulls)
            .map_err(|misfit| Failure::Misfit(misfit, "null (every sampled value was)".to_owned())),
        Conversion::Cast(target) => {
            let strings = if matches!(
                target,
                DataType::LargeUtf8 | DataType::Utf8View | DataType::Dictionary(_, _)
            ) {
                csv_values::string_column(text, nulls)
            } else {
                let valid: NullBuffer = text
                    .iter()
                    .map(|value| !nulls.is_null(value.unwrap_or_default()))
                    .collect();
                let (offsets, values, _) = text.clone().into_parts();
                StringArray::new(offsets, values, Some(valid))
            };
            let options = CastOptions {
                safe: false,
                ..CastOptions::default()
            };
            arrow_cast::cast_with_options(&strings, target, &options)
                .map_err(|error| first_misfit(&strings, target).unwrap_or(Failure::Cast(error)))
        }
    }
}

/// The first field a cast to `target` turns into null (the one a strict cast refused).
fn first_misfit(strings: &StringArray, target: &DataType) -> Option<Failure> {
    let lenient = arrow_cast::cast(strings, target).ok()?;
    let row = (0..strings.len()).find(|&row| strings.is_valid(row) && lenient.is_null(row))?;
    let misfit = csv_values::Misfit {
        row,
        text: strings.value(row).to_owned(),
    };
    Some(Failure::Misfit(misfit, format!("a value of type {target}")))
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Int64 => "an Int64",
        Kind::Boolean => "a Boolean",
        Kind::Date32 => "a date (YYYY-MM-DD)",
        Kind::Time32 => "a time (HH:MM[:SS])",
        Kind::Timestamp => "a timestamp without zone or fraction",
        Kind::TimestampNs => "a timestamp without zone",
        Kind::TimestampZoned => "a timestamp with zone, without fraction",
        Kind::TimestampZonedNs => "a timestamp with zone",
        Kind::Float64 => "a Float64",
        Kind::Utf8 => "text",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn origin(text: &str) -> Origin {
        Origin::Memory(Bytes::from(text.to_owned()))
    }

    fn rows(origin: &Origin, options: &CsvOptions, sample: Inference) -> Result<Vec<RecordBatch>> {
        let (schema, provenance) = infer_schema(origin, options, sample, None)?;
        let mut batches = Vec::new();
        read(origin, options, &schema, provenance, None, |batch| {
            batches.push(batch);
            Ok(ControlFlow::Continue(()))
        })?;
        Ok(batches)
    }

    #[test]
    fn options_delimiter_header_skip_rows_and_nulls() {
        let input = origin("# exported by a tool\n# on a day\n1;x;-\n2;NA;5\n");
        let options = CsvOptions {
            delimiter: b';',
            header: false,
            skip_rows: 2,
            null_values: Some(vec!["-".to_owned(), "NA".to_owned()]),
        };
        let batches = rows(&input, &options, Inference::Default).unwrap();
        let batch = &batches[0];
        let expected = [
            ("f0", DataType::Int64),
            ("f1", DataType::Utf8),
            ("f2", DataType::Int64),
        ];
        for (field, (name, data_type)) in batch.schema().fields().iter().zip(expected) {
            assert_eq!(
                (field.name().as_str(), field.data_type()),
                (name, &data_type)
            );
        }
        assert_eq!(batch.num_columns(), 3);
        assert!(batch.column(1).is_null(1));
        assert!(batch.column(2).is_null(0));
    }

    #[test]
    fn a_value_past_the_sample_that_does_not_fit_names_row_column_and_value() {
        let mut text = String::from("n\n");
        for i in 0..3 * BATCH_ROWS {
            text.push_str(&format!("{i}\n"));
        }
        text.push_str("oops\n");
        let input = origin(&text);
        let sampled = Inference::Rows(10);
        let error = rows(&input, &CsvOptions::default(), sampled).unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with("InvalidFormat: CSV: row 24577, column \"n\": \"oops\""),
            "{message}"
        );
        assert!(message.contains("first 10 rows"), "{message}");
        let all = rows(&input, &CsvOptions::default(), Inference::All).unwrap();
        assert_eq!(all[0].column(0).data_type(), &DataType::Utf8);
    }

    #[test]
    fn wide_files_are_decoded_in_batches_of_bounded_fields() {
        assert_eq!(batch_rows(7), BATCH_ROWS);
        assert_eq!(batch_rows(10_000), 104);
        assert_eq!(batch_rows(5_000_000), 1);
        let mut text = ",".repeat(9_999);
        text.push('\n');
        text.push_str(&",".repeat(9_999));
        text.push('\n');
        let batches = rows(&origin(&text), &CsvOptions::default(), Inference::Default).unwrap();
        assert_eq!(
            (batches[0].num_columns(), batches[0].num_rows()),
            (10_000, 1)
        );
    }

    #[test]
    fn an_empty_file_and_ragged_records_are_invalid_format() {
        for text in ["", "a,b\n1,2\n3\n"] {
            let error =
                rows(&origin(text), &CsvOptions::default(), Inference::Default).unwrap_err();
            assert_eq!(
                error.signal(),
                envelope_core::Signal::InvalidFormat,
                "{text:?}: {error}"
            );
        }
    }
}
