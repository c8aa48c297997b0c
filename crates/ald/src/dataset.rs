//! [`ArrowDataset`]: a table in memory, and how it becomes the parts of an `.ald` file.

use std::borrow::Cow;

use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use envelope_core::{CHECKSUM_LEN, Compression, EnvelopeParts, Format, Payload};

use crate::dataset_type::DatasetType;
use crate::ipc;
use crate::metadata::Metadata;
use crate::{Error, Result};

/// Rows per chunk of a STREAMING file unless the caller says otherwise.
pub const DEFAULT_CHUNK_ROWS: usize = 65_536;

/// An Arrow table: one schema and record batches that all have it.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrowDataset {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
}

impl ArrowDataset {
    /// A table of `batches`, all of schema `schema`.
    ///
    /// # Errors
    /// `SchemaMismatch` if a batch has another schema.
    pub fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> Result<Self> {
        for batch in &batches {
            check_schema(&schema, &batch.schema())?;
        }
        Ok(Self { schema, batches })
    }

    /// A table of one batch.
    #[must_use]
    pub fn from_batch(batch: RecordBatch) -> Self {
        Self {
            schema: batch.schema(),
            batches: vec![batch],
        }
    }

    /// The schema.
    #[must_use]
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The record batches.
    #[must_use]
    pub fn batches(&self) -> &[RecordBatch] {
        &self.batches
    }

    /// Gives the batches back.
    #[must_use]
    pub fn into_batches(self) -> Vec<RecordBatch> {
        self.batches
    }

    /// Total rows.
    #[must_use]
    pub fn num_rows(&self) -> u64 {
        self.batches
            .iter()
            .map(|batch| batch.num_rows() as u64)
            .sum()
    }

    /// All rows as one batch.
    ///
    /// # Errors
    /// `Usage` if the batches cannot be concatenated (they always can: one schema).
    pub fn to_batch(&self) -> Result<RecordBatch> {
        arrow_select::concat::concat_batches(&self.schema, &self.batches)
            .map_err(Error::unencodable("the batches cannot be concatenated"))
    }

    /// The parts of an `.ald` file holding this table (unencrypted, unsigned, unlicensed: add
    /// those with `envelope-crypto`, `envelope-sign` or [`crate::commercial`]).
    ///
    /// # Errors
    /// `Usage` if the schema message exceeds 65,535 bytes, a section is too large, or compression
    /// support is not compiled in.
    pub fn to_parts(&self, options: &SaveOptions) -> Result<EnvelopeParts<'static>> {
        let schema = ipc::schema_message(&self.schema)?;
        let payload = match options.chunk_rows {
            None => {
                let mut encoded = Vec::new();
                ipc::encode_batches(&self.schema, &self.batches, &mut encoded)?;
                let uncompressed_size = encoded.len() as u64;
                let stored = if options.compression == Compression::None {
                    encoded
                } else {
                    envelope_core::compression::compress(options.compression, &encoded)?
                        .into_owned()
                };
                Payload::Whole {
                    stored: Cow::Owned(stored),
                    uncompressed_size,
                }
            }
            Some(chunk_rows) => {
                let mut chunks = Vec::new();
                for group in row_groups(&self.batches, chunk_rows)? {
                    let mut encoded = Vec::new();
                    ipc::encode_chunk(&self.schema, &group, &mut encoded)?;
                    let rows: usize = group.iter().map(RecordBatch::num_rows).sum();
                    chunks.push((rows as u64, encoded));
                }
                Payload::chunked(
                    options.compression,
                    chunks.iter().map(|(rows, data)| (*rows, data.as_slice())),
                )?
            }
        };
        let mut parts = EnvelopeParts::new(Format::Dataset, options.dataset_type.id());
        parts.compression = options.compression;
        parts.num_rows = self.num_rows();
        parts.schema = Cow::Owned(schema);
        parts.payload = payload;
        let prefix_len = parts.bytes_before_payload()?.len();
        parts.metadata = Cow::Owned(options.metadata.encode_aligned(prefix_len)?);
        Ok(parts)
    }

    /// The bytes of an `.ald` file holding this table.
    ///
    /// # Errors
    /// As [`ArrowDataset::to_parts`].
    pub fn to_bytes(&self, options: &SaveOptions) -> Result<Vec<u8>> {
        if options.compression == Compression::None && options.chunk_rows.is_none() {
            return self.to_bytes_in_place(options);
        }
        Ok(self.to_parts(options)?.to_bytes()?)
    }

    /// An uncompressed whole file, with the record batches encoded straight into the output
    /// buffer: the payload is copied once (as by Arrow's own file writer) instead of being
    /// assembled and then copied into the file. Everything before the payload comes from
    /// `EnvelopeParts`, so the bytes are exactly [`EnvelopeParts::to_bytes`]'s (a test checks).
    fn to_bytes_in_place(&self, options: &SaveOptions) -> Result<Vec<u8>> {
        let schema = ipc::schema_message(&self.schema)?;
        let mut parts = EnvelopeParts::new(Format::Dataset, options.dataset_type.id());
        parts.num_rows = self.num_rows();
        parts.schema = Cow::Owned(schema);
        // Nothing before the payload depends on the payload's size but the header's two size
        // fields, which are fixed-width: the prefix length is known now.
        let prefix_len = parts.bytes_before_payload()?.len();
        parts.metadata = Cow::Owned(options.metadata.encode_aligned(prefix_len)?);
        let prefix_len = parts.bytes_before_payload()?.len();
        let in_memory: usize = self
            .batches
            .iter()
            .map(RecordBatch::get_array_memory_size)
            .sum();
        let mut out = Vec::with_capacity(prefix_len + in_memory + CHECKSUM_LEN);
        out.resize(prefix_len, 0);
        // The payload's CRC32 is computed batch by batch as it is written (cache-hot), then
        // combined with the prefix's once the header is final.
        let mut payload_crc = crc32fast::Hasher::new();
        ipc::encode_batches_with(&self.schema, &self.batches, &mut out, |bytes| {
            payload_crc.update(bytes);
        })?;
        let payload_len = (out.len() - prefix_len) as u64;
        parts.payload = Payload::Whole {
            stored: Cow::Borrowed(&[]),
            uncompressed_size: payload_len,
        };
        // The header as `EnvelopeParts` computes it for a payload of this size.
        let mut prefix = {
            let sized = EnvelopeParts {
                payload: Payload::Whole {
                    stored: Cow::Borrowed(&out[prefix_len..]),
                    uncompressed_size: payload_len,
                },
                ..parts.clone()
            };
            sized.bytes_before_payload()?
        };
        if prefix.len() != prefix_len {
            return Err(Error::InvalidArgument("the file prefix changed size"));
        }
        out[..prefix_len].swap_with_slice(&mut prefix);
        let mut checksum = crc32fast::Hasher::new();
        checksum.update(&out[..prefix_len]);
        checksum.combine(&payload_crc);
        let checksum = checksum.finalize();
        out.extend_from_slice(&checksum.to_le_bytes());
        Ok(out)
    }
}

/// How to write a dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct SaveOptions {
    /// The header's `dataset_type`.
    pub dataset_type: DatasetType,
    /// Payload compression (each chunk separately for STREAMING files).
    pub compression: Compression,
    /// Card, column docs, compliance, query key.
    pub metadata: Metadata,
    /// `Some(n)`: a STREAMING file of chunks of `n` rows (the last may be shorter).
    pub chunk_rows: Option<usize>,
}

impl Default for SaveOptions {
    /// A TABULAR, uncompressed, non-STREAMING file with empty metadata.
    fn default() -> Self {
        Self::new(DatasetType::Tabular, Compression::None)
    }
}

impl SaveOptions {
    /// Options for a file of `dataset_type` with `compression`.
    #[must_use]
    pub fn new(dataset_type: DatasetType, compression: Compression) -> Self {
        Self {
            dataset_type,
            compression,
            metadata: Metadata::default(),
            chunk_rows: None,
        }
    }

    /// Makes the file STREAMING, with chunks of `chunk_rows` rows.
    #[must_use]
    pub fn streaming(mut self, chunk_rows: usize) -> Self {
        self.chunk_rows = Some(chunk_rows);
        self
    }
}

/// Splits `batches` into groups of exactly `chunk_rows` rows (the last may be shorter), slicing
/// batches (zero-copy) where a group boundary falls inside one.
///
/// # Errors
/// `Usage` if `chunk_rows` is zero.
pub(crate) fn row_groups(
    batches: &[RecordBatch],
    chunk_rows: usize,
) -> Result<Vec<Vec<RecordBatch>>> {
    if chunk_rows == 0 {
        return Err(Error::InvalidArgument("chunk_rows must be at least 1"));
    }
    let mut groups = Vec::new();
    let mut current: Vec<RecordBatch> = Vec::new();
    let mut filled = 0usize;
    for batch in batches {
        let mut offset = 0;
        while offset < batch.num_rows() {
            let take = (chunk_rows - filled).min(batch.num_rows() - offset);
            current.push(batch.slice(offset, take));
            offset += take;
            filled += take;
            if filled == chunk_rows {
                groups.push(std::mem::take(&mut current));
                filled = 0;
            }
        }
    }
    if !current.is_empty() {
        groups.push(current);
    }
    Ok(groups)
}

/// `SchemaMismatch` unless `found` has the fields (names, types, nullability) of `expected`.
/// Schema-level key/value metadata is not compared: it is documentation, not shape.
///
/// # Errors
/// `SchemaMismatch` with both schemas rendered.
pub fn check_schema(expected: &Schema, found: &Schema) -> Result<()> {
    if expected.fields() == found.fields() {
        return Ok(());
    }
    Err(Error::SchemaMismatch {
        expected: render_schema(expected),
        found: render_schema(found),
    })
}

/// One field of a schema as tools show it to programs: its name, its Arrow type (as Arrow
/// displays it) and whether it may be null. `alimentar schema --json` prints these, and the
/// JavaScript `AldDataset.schema` hands them over.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FieldSummary {
    /// The field's name.
    pub name: String,
    /// Its Arrow type, as `DataType`'s `Display` writes it.
    #[serde(rename = "type")]
    pub data_type: String,
    /// Whether it may hold nulls.
    pub nullable: bool,
}

impl FieldSummary {
    /// Every field of `schema`, in order.
    #[must_use]
    pub fn of_schema(schema: &Schema) -> Vec<Self> {
        schema
            .fields()
            .iter()
            .map(|field| Self {
                name: field.name().clone(),
                data_type: field.data_type().to_string(),
                nullable: field.is_nullable(),
            })
            .collect()
    }
}

/// A schema as one line: `name: Type [not null], ...`.
#[must_use]
pub fn render_schema(schema: &Schema) -> String {
    let fields: Vec<String> = schema
        .fields()
        .iter()
        .map(|field| {
            let null = if field.is_nullable() { "" } else { " not null" };
            format!("{}: {}{null}", field.name(), field.data_type())
        })
        .collect();
    format!("{{{}}}", fields.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Int64Array;
    use arrow_schema::{DataType, Field};
    use std::sync::Arc;

    fn batch(start: i64, len: i64) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
        let values: Int64Array = (start..start + len).collect();
        RecordBatch::try_new(schema, vec![Arc::new(values)]).unwrap()
    }

    #[test]
    fn row_groups_cut_across_batches_at_exact_sizes() {
        let batches = [batch(0, 5), batch(5, 2), batch(7, 6)];
        let groups = row_groups(&batches, 4).unwrap();
        let sizes: Vec<usize> = groups
            .iter()
            .map(|group| group.iter().map(RecordBatch::num_rows).sum())
            .collect();
        assert_eq!(sizes, [4, 4, 4, 1]);
        assert!(row_groups(&batches, 0).is_err());
    }

    #[test]
    fn schema_mismatch_names_both_schemas() {
        let a = Schema::new(vec![Field::new("n", DataType::Int64, false)]);
        let b = Schema::new(vec![Field::new("n", DataType::Int64, true)]);
        let error = check_schema(&a, &b).unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::SchemaMismatch);
        assert_eq!(
            error.to_string(),
            "SchemaMismatch: expected {n: Int64 not null}, found {n: Int64}"
        );
    }
}
