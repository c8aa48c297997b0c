//! Interchange files (000 §6.2), native only: CSV, JSONL, Parquet and Arrow IPC files in and
//! out, through the Arrow project's own readers and writers (`arrow-csv`, `arrow-json`,
//! `parquet`, `arrow-ipc`), and `.ald` itself.
//!
//! Everything moves in record batches, so a conversion holds one batch (or, writing a STREAMING
//! `.ald`, one chunk) in memory at a time; outputs are written atomically (temporary file, fsync,
//! rename). Reading failures of foreign files are `Io` errors (`InvalidData`) that quote the
//! reader's message; `.ald` inputs fail with their Andon signal.

mod display;
mod json_order;
mod schema_text;

use std::fs::File;
use std::io::{BufRead as _, BufReader, Write};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{ArrowError, DataType, SchemaRef, TimeUnit};
use envelope_core::fs::Destination;
use envelope_core::{Error, Result};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression as ParquetCompression, ZstdLevel};
use parquet::file::properties::WriterProperties;

pub use display::{MAX_CELL_CHARS, write_json_rows, write_text_table};
pub use schema_text::parse_schema_text;

use crate::dataset::{ArrowDataset, SaveOptions};
use crate::fs::StreamingWriter;
use crate::load::LoadOptions;
use crate::streaming::StreamingDataset;

/// Rows per batch when reading text and Parquet files.
pub const BATCH_ROWS: usize = 8192;

/// A file kind, chosen by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// `.csv`: comma-separated, with a header row.
    Csv,
    /// `.jsonl` / `.ndjson`: one JSON object per line.
    Jsonl,
    /// `.parquet`.
    Parquet,
    /// `.arrow` / `.ipc` / `.feather`: the Arrow IPC *file* format.
    ArrowIpc,
    /// `.ald`.
    Ald,
}

impl FileKind {
    /// The kind of `path` by its extension (case-insensitive).
    ///
    /// # Errors
    /// `Usage` for an unknown extension.
    pub fn of(path: &Path) -> Result<Self> {
        let extension = path
            .extension()
            .and_then(|ext| ext.to_str())
            .map(str::to_ascii_lowercase)
            .unwrap_or_default();
        Ok(match extension.as_str() {
            "csv" => Self::Csv,
            "jsonl" | "ndjson" => Self::Jsonl,
            "parquet" | "pq" => Self::Parquet,
            "arrow" | "ipc" | "feather" => Self::ArrowIpc,
            "ald" => Self::Ald,
            _ => {
                return Err(Error::InvalidArgument(
                    "unknown file extension: use .csv, .jsonl, .parquet, .arrow or .ald",
                ));
            }
        })
    }

    /// Short name for messages.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Csv => "CSV",
            Self::Jsonl => "JSONL",
            Self::Parquet => "Parquet",
            Self::ArrowIpc => "Arrow IPC",
            Self::Ald => ".ald",
        }
    }
}

/// How to read an input.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions<'a> {
    /// The schema of a CSV or JSONL input; inferred from the data when `None`.
    pub schema: Option<SchemaRef>,
    /// Rows read to infer a schema (`None`: all of them).
    pub infer_rows: Option<usize>,
    /// How to open an `.ald` input.
    pub ald: LoadOptions<'a>,
}

/// An `Io` error quoting a foreign file reader's message.
fn foreign(kind: FileKind, error: impl std::fmt::Display) -> Error {
    Error::Io(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("{}: {error}", kind.name()),
    ))
}

fn parquet_error(error: parquet::errors::ParquetError) -> Error {
    foreign(FileKind::Parquet, error)
}

/// An input file, its kind and its schema (inferred if needed), ready to be read batch by batch.
#[derive(Debug, Clone)]
pub struct Source<'a> {
    path: std::path::PathBuf,
    kind: FileKind,
    schema: SchemaRef,
    options: ReadOptions<'a>,
}

impl<'a> Source<'a> {
    /// Opens `path` and determines its schema (reading the file once more for CSV/JSONL
    /// inference).
    ///
    /// # Errors
    /// `Usage` for an unknown extension; `Io` for an unreadable or malformed file; the Andon
    /// signal of an `.ald` input.
    pub fn open(path: impl AsRef<Path>, options: ReadOptions<'a>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let kind = FileKind::of(&path)?;
        let schema = match (&options.schema, kind) {
            (Some(schema), FileKind::Csv | FileKind::Jsonl) => Arc::clone(schema),
            (_, FileKind::Csv) => {
                let format = arrow_csv::reader::Format::default().with_header(true);
                let (schema, _) = format
                    .infer_schema(File::open(&path)?, options.infer_rows)
                    .map_err(|error| foreign(kind, error))?;
                Arc::new(schema)
            }
            (_, FileKind::Jsonl) => {
                let mut reader = BufReader::new(File::open(&path)?);
                let (schema, _) = arrow_json::reader::infer_json_schema_from_seekable(
                    &mut reader,
                    options.infer_rows,
                )
                .map_err(|error| foreign(kind, error))?;
                let mut first = String::new();
                while first.trim().is_empty() && reader.read_line(&mut first)? > 0 {}
                json_order::in_key_order(&schema, &json_order::top_level_keys(&first))
            }
            (_, FileKind::Parquet) => {
                let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(&path)?)
                    .map_err(parquet_error)?;
                Arc::clone(builder.schema())
            }
            (_, FileKind::ArrowIpc) => {
                let reader = arrow_ipc::reader::FileReader::try_new(File::open(&path)?, None)
                    .map_err(|error| foreign(kind, error))?;
                reader.schema()
            }
            (_, FileKind::Ald) => Arc::clone(StreamingDataset::open(&path, &options.ald)?.schema()),
        };
        Ok(Self {
            path,
            kind,
            schema,
            options,
        })
    }

    /// The input's kind.
    #[must_use]
    pub fn kind(&self) -> FileKind {
        self.kind
    }

    /// The input's schema.
    #[must_use]
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Size of the input file, for progress reports.
    #[must_use]
    pub fn file_len(&self) -> u64 {
        std::fs::metadata(&self.path).map_or(0, |meta| meta.len())
    }

    /// Calls `each` with every batch in order, holding one at a time.
    ///
    /// # Errors
    /// The first error of the reader or of `each`.
    pub fn for_each(&self, mut each: impl FnMut(RecordBatch) -> Result<()>) -> Result<()> {
        self.visit(|batch| each(batch).map(|()| ControlFlow::Continue(())))
    }

    /// The first `rows` rows (fewer if the input is shorter), reading no further than needed.
    ///
    /// # Errors
    /// As [`Source::for_each`].
    pub fn head(&self, rows: u64) -> Result<RecordBatch> {
        let mut remaining = rows;
        let mut taken = Vec::new();
        self.visit(|batch| {
            let take = remaining.min(batch.num_rows() as u64);
            let take_rows = usize::try_from(take).unwrap_or(usize::MAX);
            taken.push(batch.slice(0, take_rows));
            remaining -= take;
            Ok(if remaining == 0 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            })
        })?;
        arrow_select::concat::concat_batches(&self.schema, &taken)
            .map_err(|_| Error::InvalidArgument("the batches cannot be concatenated"))
    }

    fn visit(&self, mut each: impl FnMut(RecordBatch) -> Result<ControlFlow<()>>) -> Result<()> {
        macro_rules! each {
            ($batch:expr) => {
                if each($batch)?.is_break() {
                    return Ok(());
                }
            };
        }
        let kind = self.kind;
        let wrap = |error: ArrowError| foreign(kind, error);
        match kind {
            FileKind::Csv => {
                let reader = arrow_csv::ReaderBuilder::new(Arc::clone(&self.schema))
                    .with_header(true)
                    .with_batch_size(BATCH_ROWS)
                    .build(File::open(&self.path)?)
                    .map_err(wrap)?;
                for batch in reader {
                    each!(batch.map_err(wrap)?);
                }
            }
            FileKind::Jsonl => {
                let reader = arrow_json::ReaderBuilder::new(Arc::clone(&self.schema))
                    .with_batch_size(BATCH_ROWS)
                    .build(BufReader::new(File::open(&self.path)?))
                    .map_err(wrap)?;
                for batch in reader {
                    each!(batch.map_err(wrap)?);
                }
            }
            FileKind::Parquet => {
                let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&self.path)?)
                    .map_err(parquet_error)?
                    .with_batch_size(BATCH_ROWS)
                    .build()
                    .map_err(parquet_error)?;
                for batch in reader {
                    each!(batch.map_err(wrap)?);
                }
            }
            FileKind::ArrowIpc => {
                let reader = arrow_ipc::reader::FileReader::try_new(File::open(&self.path)?, None)
                    .map_err(wrap)?;
                for batch in reader {
                    each!(batch.map_err(wrap)?);
                }
            }
            FileKind::Ald => {
                let dataset = StreamingDataset::open(&self.path, &self.options.ald)?;
                #[cfg(feature = "format-encryption")]
                let reader = match self.options.ald.key {
                    Some(key) if dataset.file().is_encrypted() => dataset.with_key(key)?,
                    _ => dataset.reader(),
                };
                #[cfg(not(feature = "format-encryption"))]
                let reader = dataset.reader();
                for chunk in 0..dataset.num_chunks() {
                    each!(reader.get_chunk(chunk)?);
                }
            }
        }
        Ok(())
    }

    /// Reads every batch into memory.
    ///
    /// # Errors
    /// As [`Source::for_each`].
    pub fn read_all(&self) -> Result<ArrowDataset> {
        let mut batches = Vec::new();
        self.for_each(|batch| {
            batches.push(batch);
            Ok(())
        })?;
        ArrowDataset::new(Arc::clone(&self.schema), batches)
    }
}

/// Writes batches of one schema to an interchange file atomically; created by [`convert`] and
/// [`write_file`].
fn write_foreign(
    destination: Destination,
    kind: FileKind,
    schema: &SchemaRef,
    feed: impl FnOnce(&mut dyn FnMut(&RecordBatch) -> Result<()>) -> Result<()>,
) -> Result<()> {
    let wrap = |error: ArrowError| foreign(kind, error);
    envelope_core::fs::write_atomic(destination, |file: &mut envelope_core::fs::Writer| {
        let mut sink = KindKeeping {
            inner: file,
            failed: None,
        };
        let written = (|| -> Result<()> {
            let out = &mut sink;
            match kind {
                FileKind::Csv => {
                    let mut wrote_batch = false;
                    {
                        let mut writer = arrow_csv::WriterBuilder::new()
                            .with_header(true)
                            .build(&mut *out);
                        feed(&mut |batch| {
                            wrote_batch = true;
                            writer.write(batch).map_err(wrap)
                        })?;
                    }
                    if !wrote_batch {
                        // arrow-csv writes the header with the first batch; an empty table still
                        // gets its header line.
                        let names: Vec<&str> =
                            schema.fields().iter().map(|f| f.name().as_str()).collect();
                        writeln!(out, "{}", names.join(","))?;
                    }
                }
                FileKind::Jsonl => {
                    let mut writer = arrow_json::LineDelimitedWriter::new(&mut *out);
                    feed(&mut |batch| writer.write(batch).map_err(wrap))?;
                    writer.finish().map_err(wrap)?;
                }
                FileKind::Parquet => {
                    let properties = WriterProperties::builder()
                        .set_compression(ParquetCompression::ZSTD(ZstdLevel::default()))
                        .build();
                    let stored = parquet_schema(schema);
                    let mut writer =
                        ArrowWriter::try_new(&mut *out, Arc::clone(&stored), Some(properties))
                            .map_err(parquet_error)?;
                    feed(&mut |batch| {
                        let batch = to_parquet_types(batch, &stored)?;
                        writer.write(&batch).map_err(parquet_error)
                    })?;
                    writer.close().map_err(parquet_error)?;
                }
                FileKind::ArrowIpc => {
                    let mut writer =
                        arrow_ipc::writer::FileWriter::try_new(&mut *out, schema).map_err(wrap)?;
                    feed(&mut |batch| writer.write(batch).map_err(wrap))?;
                    writer.finish().map_err(wrap)?;
                }
                FileKind::Ald => {
                    return Err(Error::InvalidArgument(
                        "an .ald output is written by save or StreamingWriter",
                    ));
                }
            }
            out.flush()?;
            Ok(())
        })();
        // The Arrow writers report I/O failures as text; a closed pipe must stay one, so that a
        // reader that stopped early (`convert -o - | head`) ends the command quietly.
        match (written, sink.failed) {
            (Err(_), Some(std::io::ErrorKind::BrokenPipe)) => Err(Error::Io(std::io::Error::from(
                std::io::ErrorKind::BrokenPipe,
            ))),
            (written, _) => written,
        }
    })
}

/// A writer that remembers the kind of its last failed write.
struct KindKeeping<'w, W: Write> {
    inner: &'w mut W,
    failed: Option<std::io::ErrorKind>,
}

impl<W: Write> Write for KindKeeping<'_, W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.inner
            .write(bytes)
            .inspect_err(|error| self.failed = Some(error.kind()))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner
            .flush()
            .inspect_err(|error| self.failed = Some(error.kind()))
    }
}

/// The schema a Parquet output gets: Parquet has no logical type for second-resolution
/// timestamps and times, so, as pyarrow does, those columns are widened (losslessly) to
/// milliseconds; every Parquet reader then sees a timestamp rather than a bare integer.
fn parquet_schema(schema: &SchemaRef) -> SchemaRef {
    let fields: Vec<arrow_schema::Field> = schema
        .fields()
        .iter()
        .map(|field| {
            let widened = match field.data_type() {
                DataType::Timestamp(TimeUnit::Second, zone) => {
                    DataType::Timestamp(TimeUnit::Millisecond, zone.clone())
                }
                DataType::Time32(TimeUnit::Second) => DataType::Time32(TimeUnit::Millisecond),
                other => other.clone(),
            };
            field.as_ref().clone().with_data_type(widened)
        })
        .collect();
    Arc::new(arrow_schema::Schema::new_with_metadata(
        fields,
        schema.metadata().clone(),
    ))
}

fn to_parquet_types(batch: &RecordBatch, stored: &SchemaRef) -> Result<RecordBatch> {
    if batch.schema().fields() == stored.fields() {
        return Ok(batch.clone());
    }
    let columns = batch
        .columns()
        .iter()
        .zip(stored.fields())
        .map(|(column, field)| arrow_cast::cast(column, field.data_type()))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|error| foreign(FileKind::Parquet, error))?;
    RecordBatch::try_new(Arc::clone(stored), columns)
        .map_err(|error| foreign(FileKind::Parquet, error))
}

/// Writes `dataset` to the interchange file `destination` (kind by extension), atomically.
///
/// # Errors
/// `Usage` for an unknown extension; `Io`.
pub fn write_file(destination: impl Into<Destination>, dataset: &ArrowDataset) -> Result<()> {
    let destination = destination.into();
    let kind = FileKind::of(destination.path())?;
    if kind == FileKind::Ald {
        return crate::fs::save(destination, dataset, &SaveOptions::default());
    }
    write_foreign(destination, kind, dataset.schema(), |write| {
        dataset.batches().iter().try_for_each(write)
    })
}

/// What [`convert`] reports after each batch: rows so far.
pub type Progress<'p> = &'p mut dyn FnMut(u64);

/// Converts `source` to `output` (kind by extension), batch by batch. An `.ald` output uses
/// `save`: STREAMING outputs (`save.chunk_rows` set) hold one chunk at a time; a whole-payload
/// output holds the table, since its payload is compressed as one unit.
///
/// # Errors
/// As [`Source::for_each`], plus `Io` writing.
pub fn convert(
    source: &Source<'_>,
    output: impl Into<Destination>,
    save: &SaveOptions,
    progress: Progress<'_>,
) -> Result<u64> {
    let output = output.into();
    let kind = FileKind::of(output.path())?;
    convert_as(source, output, kind, save, progress)
}

/// [`convert`] to an output of the given `kind`, whatever its name says (standard output, a FIFO).
///
/// # Errors
/// As [`convert`].
pub fn convert_as(
    source: &Source<'_>,
    output: impl Into<Destination>,
    kind: FileKind,
    save: &SaveOptions,
    progress: Progress<'_>,
) -> Result<u64> {
    let output = output.into();
    // Refuse an output that may not be written before reading a single row.
    output.check()?;
    let mut rows = 0u64;
    match kind {
        FileKind::Ald if save.chunk_rows.is_some() => {
            let mut writer =
                StreamingWriter::create(output, Arc::clone(source.schema()), save.clone())?;
            source.for_each(|batch| {
                writer.write(&batch)?;
                rows += batch.num_rows() as u64;
                progress(rows);
                Ok(())
            })?;
            writer.finish()?;
        }
        FileKind::Ald => {
            let mut batches = Vec::new();
            source.for_each(|batch| {
                rows += batch.num_rows() as u64;
                progress(rows);
                batches.push(batch);
                Ok(())
            })?;
            let dataset = ArrowDataset::new(Arc::clone(source.schema()), batches)?;
            crate::fs::save(output, &dataset, save)?;
        }
        _ => {
            write_foreign(output, kind, source.schema(), |write| {
                source.for_each(|batch| {
                    write(&batch)?;
                    rows += batch.num_rows() as u64;
                    progress(rows);
                    Ok(())
                })
            })?;
        }
    }
    Ok(rows)
}
