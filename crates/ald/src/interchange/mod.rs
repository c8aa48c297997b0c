//! Interchange files (000 §6.2), native only: CSV, JSONL, Parquet and Arrow IPC (file and
//! stream) in and out, through the Arrow project's own readers and writers (`arrow-csv`,
//! `arrow-json`, `parquet`, `arrow-ipc`), and `.ald` itself.
//!
//! Everything moves in record batches, so a conversion holds one batch (or, writing a STREAMING
//! `.ald`, one chunk) in memory at a time; outputs are written atomically (temporary file, fsync,
//! rename).
//!
//! **Foreign bytes are untrusted** (SECURITY.md): a malformed input, or a value that does not fit
//! its column, is `InvalidFormat` naming the file kind ([`crate::Error::Foreign`], the reader's own
//! error kept as its cause); `Io` is kept for the operating system's failures. Arrow IPC inputs
//! get the `.ald` payload's framing checks before Arrow's decoder sees a message
//! (`arrow_input.rs`), no reader allocates from a size the input cannot hold, and the panics Arrow
//! and parquet still raise on some bytes are caught and reported (`guard.rs`). `.ald` inputs fail
//! with their own Andon signal.
//!
//! **What is read as what** (docs/ald.md §9): CSV columns get pyarrow's inferred types from a
//! bounded sample (`csv.rs`); JSONL columns `arrow-json`'s, in the first object's key order;
//! Parquet and Arrow IPC carry their schema. Writing, CSV refuses nested columns up front (as
//! pyarrow and polars do), JSONL writes every type (`json_out.rs`), Parquet keeps second
//! resolutions, `Date64`, named time zones and dictionary order (`parquet_out.rs`).

mod arrow_input;
mod csv;
mod csv_values;
mod display;
mod guard;
mod input;
mod json_out;
mod jsonl;
mod parquet_dictionary;
mod parquet_out;
mod parquet_pages;
mod schema_text;

use std::fs::File;
use std::io::Write;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{ArrowError, SchemaRef};
use bytes::Bytes;
use envelope_core::fs::Destination;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::errors::ParquetError;

pub use self::csv::{CsvOptions, DEFAULT_INFER_BYTES};
pub use csv_values::PYARROW_NULL_VALUES;
pub use display::{MAX_CELL_CHARS, write_json_rows, write_text_table};
pub use input::{ByteProgress, ReadStage};
pub use schema_text::parse_schema_text;

use crate::dataset::{ArrowDataset, SaveOptions};
use crate::fs::StreamingWriter;
use crate::load::LoadOptions;
use crate::streaming::StreamingDataset;
use crate::{Error, Result};
use input::Origin;

/// Rows per batch when reading text and Parquet files.
pub const BATCH_ROWS: usize = 8192;

/// A file kind, chosen by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// `.csv`: delimited text ([`CsvOptions`]).
    Csv,
    /// `.jsonl` / `.ndjson`: one JSON object per line.
    Jsonl,
    /// `.parquet`.
    Parquet,
    /// `.arrow` / `.ipc` / `.feather`: the Arrow IPC *file* format.
    ArrowIpc,
    /// `.arrows`: the Arrow IPC *stream* format (Arrow's recommended extension for it).
    ArrowStream,
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
            "arrows" => Self::ArrowStream,
            "ald" => Self::Ald,
            _ => return Err(Error::UnknownExtension { extension }),
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
            Self::ArrowStream => "Arrow IPC stream",
            Self::Ald => ".ald",
        }
    }
}

/// How much of a CSV or JSONL input is read to infer its schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Inference {
    /// CSV: the first [`DEFAULT_INFER_BYTES`] (1 MiB, pyarrow's block) of data, rounded up to a
    /// whole batch of [`BATCH_ROWS`] rows. JSONL: every row (`arrow-json` would silently drop the
    /// keys a sample missed).
    #[default]
    Default,
    /// The first this many rows.
    Rows(usize),
    /// Every row (two passes over the input).
    All,
}

/// How to read an input.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions<'a> {
    /// The schema of a CSV or JSONL input; inferred from the data when `None`. CSV columns are
    /// matched by position.
    pub schema: Option<SchemaRef>,
    /// How much of a CSV or JSONL input is read to infer its schema.
    pub infer: Inference,
    /// How to split a CSV input into fields and which fields are null.
    pub csv: CsvOptions,
    /// Told the bytes consumed as the input is read (inference, then rows).
    pub progress: Option<ByteProgress>,
    /// How to open an `.ald` input.
    pub ald: LoadOptions<'a>,
}

/// `InvalidFormat`: a foreign file of `kind` whose bytes break `reason`.
fn foreign(kind: FileKind, reason: impl Into<std::borrow::Cow<'static, str>>) -> Error {
    Error::foreign(kind.name(), reason)
}

/// An Arrow reader's error: `Io` if the operating system failed, else `InvalidFormat` keeping
/// Arrow's error as the cause.
fn arrow_error(kind: FileKind, error: ArrowError) -> Error {
    match error {
        ArrowError::IoError(_, io) => io.into(),
        other => Error::foreign_reader(kind.name(), other),
    }
}

/// A parquet reader's error: `Io` if the operating system failed, else `InvalidFormat` keeping
/// parquet's error as the cause.
fn parquet_error(error: ParquetError) -> Error {
    match error {
        ParquetError::External(external) => match external.downcast::<std::io::Error>() {
            Ok(io) => (*io).into(),
            // The message stays the external error's own, as before; parquet's wrapper is the
            // cause.
            Err(other) => Error::Foreign {
                format: FileKind::Parquet.name(),
                reason: other.to_string().into(),
                cause: Some(ParquetError::External(other).into()),
            },
        },
        // Arrow's error inside parquet, already flattened to its text by parquet.
        ParquetError::ArrowError(message) => foreign(FileKind::Parquet, message),
        other => Error::foreign_reader(FileKind::Parquet.name(), other),
    }
}

/// An input file, its kind and its schema (inferred if needed), ready to be read batch by batch.
#[derive(Debug, Clone)]
pub struct Source<'a> {
    origin: Origin,
    kind: FileKind,
    schema: SchemaRef,
    csv_provenance: csv::Provenance,
    options: ReadOptions<'a>,
}

impl<'a> Source<'a> {
    /// Opens `path` and determines its schema (for CSV, reading a sample; for JSONL, every row
    /// unless `options.infer` bounds it).
    ///
    /// # Errors
    /// `Usage` for an unknown extension; `InvalidFormat` for a malformed file; `Io`; the Andon
    /// signal of an `.ald` input.
    pub fn open(path: impl AsRef<Path>, options: ReadOptions<'a>) -> Result<Self> {
        let path = path.as_ref();
        let kind = FileKind::of(path)?;
        if kind == FileKind::Ald {
            let schema = Arc::clone(StreamingDataset::open(path, &options.ald)?.schema());
            return Ok(Self {
                origin: Origin::File(path.to_path_buf()),
                kind,
                schema,
                csv_provenance: csv::Provenance::Given,
                options,
            });
        }
        Self::from_origin(Origin::File(path.to_path_buf()), kind, options)
    }

    /// A foreign input held in memory (for fuzzing and for bytes that never were a file).
    ///
    /// # Errors
    /// `Usage` for `FileKind::Ald` (load those with [`crate::load_from_bytes`]); otherwise as
    /// [`Source::open`].
    pub fn from_bytes(kind: FileKind, bytes: Vec<u8>, options: ReadOptions<'a>) -> Result<Self> {
        if kind == FileKind::Ald {
            return Err(Error::InvalidArgument(
                "an .ald in memory is read by load_from_bytes",
            ));
        }
        Self::from_origin(Origin::Memory(Bytes::from(bytes)), kind, options)
    }

    fn from_origin(origin: Origin, kind: FileKind, options: ReadOptions<'a>) -> Result<Self> {
        let progress = options.progress.as_ref();
        let mut csv_provenance = csv::Provenance::Given;
        let schema = match (&options.schema, kind) {
            (Some(schema), FileKind::Csv | FileKind::Jsonl) => Arc::clone(schema),
            (_, FileKind::Csv) => {
                let (schema, provenance) =
                    csv::infer_schema(&origin, &options.csv, options.infer, progress)?;
                csv_provenance = provenance;
                schema
            }
            (_, FileKind::Jsonl) => jsonl::infer_schema(&origin, options.infer, progress)?,
            (_, FileKind::Parquet) => {
                let input = parquet_input(&origin, None)?;
                input.check_footer()?;
                guard::guarded(kind.name(), || {
                    ParquetRecordBatchReaderBuilder::try_new(input)
                        .map(|builder| Arc::clone(builder.schema()))
                        .map_err(parquet_error)
                })?
            }
            (_, FileKind::ArrowIpc) => {
                Arc::clone(arrow_input::IpcFile::open(&origin, None)?.schema())
            }
            (_, FileKind::ArrowStream) => {
                Arc::clone(arrow_input::IpcStream::open(&origin, None)?.schema())
            }
            (_, FileKind::Ald) => {
                return Err(Error::InvalidArgument(
                    "an .ald in memory is read by load_from_bytes",
                ));
            }
        };
        guard::check_schema(kind.name(), &schema)?;
        Ok(Self {
            origin,
            kind,
            schema,
            csv_provenance,
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

    /// Size of the input in bytes: the total of [`ReadOptions::progress`]'s reports.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.origin.len().unwrap_or(0)
    }

    /// Whether the input is empty.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
        if remaining > 0 {
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
        }
        arrow_select::concat::concat_batches(&self.schema, &taken)
            .map_err(|error| arrow_error(self.kind, error))
    }

    fn visit(&self, each: impl FnMut(RecordBatch) -> Result<ControlFlow<()>>) -> Result<()> {
        let kind = self.kind;
        let progress = self.options.progress.as_ref();
        match kind {
            FileKind::Csv => csv::read(
                &self.origin,
                &self.options.csv,
                &self.schema,
                self.csv_provenance,
                progress,
                each,
            ),
            FileKind::Jsonl => jsonl::read(&self.origin, &self.schema, progress, each),
            FileKind::Parquet => {
                let input = parquet_input(&self.origin, progress)?;
                input.check_footer()?;
                let builder = guard::guarded(kind.name(), || {
                    ParquetRecordBatchReaderBuilder::try_new(input).map_err(parquet_error)
                })?;
                let checked = parquet_input(&self.origin, None)?;
                parquet_pages::check_chunks(builder.metadata(), checked.len, |start, len| {
                    checked.bytes(start, len)
                })?;
                let mut reader = guard::guarded(kind.name(), || {
                    builder
                        .with_batch_size(BATCH_ROWS)
                        .build()
                        .map_err(parquet_error)
                })?;
                drain(
                    || {
                        guard::guarded(kind.name(), || {
                            reader
                                .next()
                                .transpose()
                                .map_err(|error| arrow_error(kind, error))
                        })
                    },
                    each,
                )
            }
            FileKind::ArrowIpc => {
                let mut file = arrow_input::IpcFile::open(&self.origin, progress)?;
                drain(|| file.next_batch(), each)
            }
            FileKind::ArrowStream => {
                let mut stream = arrow_input::IpcStream::open(&self.origin, progress)?;
                drain(|| stream.next_batch(), each)
            }
            FileKind::Ald => self.visit_ald(each),
        }
    }

    fn visit_ald(
        &self,
        mut each: impl FnMut(RecordBatch) -> Result<ControlFlow<()>>,
    ) -> Result<()> {
        let Origin::File(path) = &self.origin else {
            return Err(Error::InvalidArgument(
                "an .ald in memory is read by load_from_bytes",
            ));
        };
        let dataset = StreamingDataset::open(path, &self.options.ald)?;
        #[cfg(feature = "format-encryption")]
        let reader = match self.options.ald.key {
            Some(key) if dataset.file().is_encrypted() => dataset.with_key(key)?,
            _ => dataset.reader(),
        };
        #[cfg(not(feature = "format-encryption"))]
        let reader = dataset.reader();
        let progress = self.options.progress.as_ref();
        if let Some(progress) = progress {
            progress.report(ReadStage::Reading, 0);
        }
        for chunk in 0..dataset.num_chunks() {
            let batch = reader.get_chunk(chunk)?;
            if let Some(progress) = progress {
                let done = dataset
                    .chunk_file_range(chunk)
                    .map_or_else(|| self.len(), |range| range.end);
                progress.report(ReadStage::Reading, done);
            }
            if each(batch)?.is_break() {
                break;
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

/// Hands every batch `next` returns to `each`, until either is done.
fn drain(
    mut next: impl FnMut() -> Result<Option<RecordBatch>>,
    mut each: impl FnMut(RecordBatch) -> Result<ControlFlow<()>>,
) -> Result<()> {
    while let Some(batch) = next()? {
        if each(batch)?.is_break() {
            break;
        }
    }
    Ok(())
}

/// A Parquet input as parquet's reader wants it: ranges read on demand, each checked to lie in
/// the input (parquet's own `File` reader allocates whatever length the metadata declares before
/// reading), the furthest byte read reported as progress.
struct ParquetInput {
    origin: ParquetBytes,
    len: u64,
    progress: Option<ByteProgress>,
}

enum ParquetBytes {
    File(File),
    Memory(Bytes),
}

fn parquet_input(origin: &Origin, progress: Option<&ByteProgress>) -> Result<ParquetInput> {
    let len = origin.len()?;
    let origin = match origin {
        Origin::File(path) => ParquetBytes::File(File::open(path)?),
        Origin::Memory(bytes) => ParquetBytes::Memory(bytes.clone()),
    };
    if let Some(progress) = progress {
        progress.report(ReadStage::Reading, 0);
    }
    Ok(ParquetInput {
        origin,
        len,
        progress: progress.cloned(),
    })
}

impl ParquetInput {
    /// `len` bytes at `start`, within the input.
    fn bytes(&self, start: u64, len: usize) -> Result<Bytes> {
        use parquet::file::reader::ChunkReader as _;
        self.get_bytes(start, len).map_err(parquet_error)
    }

    /// [`parquet_pages::check_footer`] of this input.
    fn check_footer(&self) -> Result<()> {
        parquet_pages::check_footer(self.len, |start, len| self.bytes(start, len))
    }
}

impl parquet::file::reader::Length for ParquetInput {
    fn len(&self) -> u64 {
        self.len
    }
}

impl parquet::file::reader::ChunkReader for ParquetInput {
    type T = Box<dyn std::io::Read + Send>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        if start > self.len {
            return Err(ParquetError::EOF(format!(
                "a read at offset {start} of a {}-byte file",
                self.len
            )));
        }
        Ok(match &self.origin {
            ParquetBytes::File(file) => Box::new(file.get_read(start)?),
            ParquetBytes::Memory(bytes) => Box::new(bytes.get_read(start)?),
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let end = start
            .checked_add(length as u64)
            .filter(|end| *end <= self.len);
        let Some(end) = end else {
            return Err(ParquetError::EOF(format!(
                "{length} bytes at offset {start} of a {}-byte file",
                self.len
            )));
        };
        let bytes = match &self.origin {
            ParquetBytes::File(file) => file.get_bytes(start, length)?,
            ParquetBytes::Memory(bytes) => bytes.get_bytes(start, length)?,
        };
        if let Some(progress) = &self.progress {
            progress.report(ReadStage::Reading, end);
        }
        Ok(bytes)
    }
}

/// Writes batches of one schema to an interchange file atomically; created by [`convert`] and
/// [`write_file`].
///
/// # Errors
/// `Usage` for a schema the format cannot hold (nested columns in CSV), before anything is
/// written; the writer's errors; `Io` (a closed pipe stays `BrokenPipe`).
fn write_foreign(
    destination: Destination,
    kind: FileKind,
    schema: &SchemaRef,
    feed: impl FnOnce(&mut dyn FnMut(&RecordBatch) -> Result<()>) -> Result<()>,
) -> Result<()> {
    let wrap = |error: ArrowError| arrow_error(kind, error);
    if kind == FileKind::Csv {
        check_flat(schema)?;
    }
    output_file::write(destination, |file: &mut output_file::Writer| {
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
                    let mut writer = arrow_json::WriterBuilder::new()
                        .with_explicit_nulls(true)
                        .with_encoder_factory(json_out::factory())
                        .build::<_, arrow_json::writer::LineDelimited>(&mut *out);
                    feed(&mut |batch| writer.write(batch).map_err(wrap))?;
                    writer.finish().map_err(wrap)?;
                }
                FileKind::Parquet => parquet_out::write(&mut *out, schema, feed)?,
                FileKind::ArrowIpc => {
                    let mut writer =
                        arrow_ipc::writer::FileWriter::try_new(&mut *out, schema).map_err(wrap)?;
                    feed(&mut |batch| writer.write(batch).map_err(wrap))?;
                    writer.finish().map_err(wrap)?;
                }
                FileKind::ArrowStream => {
                    let mut writer = arrow_ipc::writer::StreamWriter::try_new(&mut *out, schema)
                        .map_err(wrap)?;
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
            (Err(_), Some(std::io::ErrorKind::BrokenPipe)) => {
                Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe).into())
            }
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

/// `Usage` naming the first nested column: CSV holds one flat value per field (pyarrow's and
/// polars' CSV writers refuse them too).
fn check_flat(schema: &SchemaRef) -> Result<()> {
    match schema
        .fields()
        .iter()
        .find(|field| field.data_type().is_nested())
    {
        Some(field) => Err(Error::ColumnNotWritable {
            format: "CSV",
            column: field.name().clone(),
            data_type: field.data_type().to_string(),
            reason: "CSV holds one flat value per field; write JSONL (which holds lists, structs, maps and unions) or Parquet",
        }),
        None => Ok(()),
    }
}

/// Writes `dataset` to the interchange file `destination` (kind by extension), atomically.
///
/// # Errors
/// `Usage` for an unknown extension or a schema the format cannot hold; `Io`.
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
/// As [`Source::for_each`], plus `Usage` for an output that cannot hold the schema and `Io`
/// writing.
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
