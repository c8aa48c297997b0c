//! TRUENO_NATIVE datasets (000 §10): every column stored uncompressed as one 64-byte-aligned
//! array, listed in a tensor index, so that `zerocopy_trueno::MappedDataset` hands columns out of
//! a memory map with no copy. The byte layout is `docs/zerocopy.md` (§10 for datasets); this
//! module maps Arrow columns onto it and back.
//!
//! The file stays an ordinary `.ald` file around the arrays: the metadata section is the usual
//! card map, the schema section the usual Arrow IPC schema message, and the header's `num_rows`
//! the row count. Only the payload differs: instead of Arrow IPC record batches it is the aligned
//! arrays, one per column in schema order, each named by its column, of shape `[num_rows]`.
//!
//! Key decisions:
//! - **Fixed-width columns without nulls only.** The `.ald` array types are f32, f64, i32, i64
//!   and u8 (000 §10.2), with no validity bitmap, so a column of any other Arrow type, or one
//!   holding a null, is refused with a `Usage` error naming it. A field declared nullable that
//!   holds no null is accepted: its values are stored, and it reads back as the same nullable
//!   field without a validity bitmap (which Arrow treats as equal).
//! - **STREAMING as one chunk.** A dataset's chunk items are rows, and every array holds every
//!   row, so a TRUENO_NATIVE dataset that is also STREAMING has exactly one chunk: all rows, the
//!   whole aligned payload, uncompressed (docs/zerocopy.md §10.1). Its only purpose is the
//!   large-file path: the chunk index's u64 sizes describe a payload the header's u32 fields
//!   cannot (4 GiB - 2 bytes and up, docs/envelope.md §4). [`trueno_parts`] writes that form when
//!   the payload needs it, and [`trueno_parts_with`] when asked; readers that go chunk by chunk
//!   see one chunk holding every row either way.
//! - **Checked against the schema.** A reader refuses (`InvalidFormat`) an index that does not
//!   list the schema's columns in order, with their types, one dimension of `num_rows` elements
//!   and stride 1, before touching the payload.
//! - **Verified once.** Arrays are checked by the whole-file CRC32 when the loader computed it
//!   (or by AES-GCM for an encrypted file); a lazily opened file has each array's CRC-32C checked
//!   instead. No byte is handed out unverified.
//! - **Zero-copy where the bytes are owned.** When the loader owns the file's buffer, the arrays
//!   are slices of it; otherwise each array is copied once into an aligned buffer.

use std::borrow::Cow;
use std::sync::Arc;

use arrow_array::cast::AsArray as _;
use arrow_array::types::{Float32Type, Float64Type, Int32Type, Int64Type, UInt8Type};
use arrow_array::{ArrayRef, ArrowPrimitiveType, PrimitiveArray, RecordBatch, RecordBatchOptions};
use arrow_buffer::{Buffer, ScalarBuffer, ToByteSlice as _};
use arrow_schema::{DataType, Field, SchemaRef};
use envelope_core::{EnvelopeParts, Error as EnvelopeError, Format, FormatError};
use zerocopy_trueno::{BackendHint, DType, TensorEntry, TensorIndex, aligned_parts};

use crate::dataset::ArrowDataset;
use crate::dataset_type::DatasetType;
use crate::ipc;
use crate::metadata::Metadata;
use crate::{Error, Result};

/// What the refusals of a column say zero-copy arrays can hold.
const ARRAY_TYPES: &str =
    "f32, f64, i32, i64 or u8 (the types of zero-copy .ald arrays, without nulls)";

/// The array type of an Arrow column type, if it has one.
#[must_use]
pub fn array_type(data_type: &DataType) -> Option<DType> {
    match data_type {
        DataType::Float32 => Some(DType::F32),
        DataType::Float64 => Some(DType::F64),
        DataType::Int32 => Some(DType::I32),
        DataType::Int64 => Some(DType::I64),
        DataType::UInt8 => Some(DType::U8),
        _ => None,
    }
}

/// The largest payload a non-STREAMING file can hold: the header's u32 `payload_size` holds sizes
/// up to `0xFFFFFFFE`, `0xFFFFFFFF` meaning "see the chunk index" (docs/envelope.md §4).
const LARGEST_WHOLE_PAYLOAD: u64 = u32::MAX as u64 - 1;

/// How [`trueno_parts_with`] writes a TRUENO_NATIVE dataset.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TruenoOptions {
    /// The SIMD backend hint stored with each array.
    pub backend: BackendHint,
    /// Write the STREAMING form (one chunk holding every row) even when the payload would fit the
    /// header. Without it, the STREAMING form is written only for a payload of 4 GiB - 1 byte or
    /// more, which no other form can hold.
    pub streaming: bool,
}

/// The envelope parts of `dataset` as a TRUENO_NATIVE `.ald` file (uncompressed by nature): the
/// usual metadata and schema sections, a tensor index with one array per column, and the aligned
/// arrays as payload. STREAMING (one chunk of every row) only when the payload is too large for
/// the header's u32 sizes; see [`trueno_parts_with`].
///
/// # Errors
/// As [`trueno_parts_with`].
pub fn trueno_parts(
    dataset: &ArrowDataset,
    dataset_type: DatasetType,
    metadata: &Metadata,
    backend: BackendHint,
) -> Result<EnvelopeParts<'static>> {
    let options = TruenoOptions {
        backend,
        streaming: false,
    };
    trueno_parts_with(dataset, dataset_type, metadata, &options)
}

/// The envelope parts of `dataset` as a TRUENO_NATIVE `.ald` file written as `options` say. The
/// file is STREAMING when `options.streaming` is set or when the aligned payload exceeds
/// 4 GiB - 2 bytes (the largest size the header's u32 fields hold); a STREAMING TRUENO_NATIVE
/// dataset has exactly one chunk: first item 0, `num_rows` items, the whole payload stored
/// uncompressed (docs/zerocopy.md §10.1).
///
/// # Errors
/// `Usage` (`WrongType`) for a column whose type is not Float32, Float64, Int32, Int64 or UInt8;
/// `Usage` (`ColumnNotWritable`) for a column holding nulls; `Usage` for duplicate column names, a
/// schema message over 65,535 bytes, or a big-endian host.
pub fn trueno_parts_with(
    dataset: &ArrowDataset,
    dataset_type: DatasetType,
    metadata: &Metadata,
    options: &TruenoOptions,
) -> Result<EnvelopeParts<'static>> {
    parts_within(
        dataset,
        dataset_type,
        metadata,
        options,
        LARGEST_WHOLE_PAYLOAD,
    )
}

/// [`trueno_parts_with`] with `largest_whole` as the largest payload written without STREAMING (a
/// parameter so that tests exercise the large-file path without writing 4 GiB).
fn parts_within(
    dataset: &ArrowDataset,
    dataset_type: DatasetType,
    metadata: &Metadata,
    options: &TruenoOptions,
    largest_whole: u64,
) -> Result<EnvelopeParts<'static>> {
    refuse_big_endian()?;
    let schema = dataset.schema();
    let mut types = Vec::with_capacity(schema.fields().len());
    for (position, field) in schema.fields().iter().enumerate() {
        types.push(column_type(field)?);
        for batch in dataset.batches() {
            if batch.column(position).null_count() > 0 {
                return Err(Error::ColumnNotWritable {
                    format: "a zero-copy (TRUENO_NATIVE) .ald array",
                    column: field.name().clone(),
                    data_type: field.data_type().to_string(),
                    reason: "the column holds nulls; zero-copy arrays hold f32, f64, i32, i64 or u8 columns without nulls",
                });
            }
        }
    }
    let rows = dataset.num_rows();
    let shape = [rows];
    let index = TensorIndex::plan(
        schema
            .fields()
            .iter()
            .zip(&types)
            .map(|(field, dtype)| (field.name().as_str(), *dtype, &shape[..])),
        options.backend,
    )?;
    let streaming = options.streaming || index.payload_len() > largest_whole;
    let columns: Vec<Cow<'_, [u8]>> = (0..types.len())
        .map(|position| column_bytes(dataset, position))
        .collect();
    let mut parts = EnvelopeParts::new(Format::Dataset, dataset_type.id());
    parts.num_rows = rows;
    parts.schema = Cow::Owned(ipc::schema_message(schema)?);
    parts.metadata = Cow::Owned(metadata.encode()?);
    let slices: Vec<&[u8]> = columns.iter().map(AsRef::as_ref).collect();
    // `aligned_parts` pads the tensor index so that the payload starts on a 64-byte boundary, and
    // gives a dataset asked to chunk its one chunk of every row (any chunk size will do).
    Ok(aligned_parts(
        parts,
        index,
        &slices,
        streaming.then_some(u64::MAX),
    )?)
}

/// A TRUENO_NATIVE `.ald` file as bytes.
///
/// # Errors
/// As [`trueno_parts`].
pub fn save_trueno_to_bytes(
    dataset: &ArrowDataset,
    dataset_type: DatasetType,
    metadata: &Metadata,
    backend: BackendHint,
) -> Result<Vec<u8>> {
    Ok(trueno_parts(dataset, dataset_type, metadata, backend)?.to_bytes()?)
}

fn column_type(field: &Field) -> Result<DType> {
    array_type(field.data_type()).ok_or_else(|| {
        EnvelopeError::WrongType {
            name: field.name().clone(),
            stored: type_name(field.data_type()),
            requested: ARRAY_TYPES,
        }
        .into()
    })
}

/// A short static name of an Arrow type, for refusals (parameterised types by their kind).
fn type_name(data_type: &DataType) -> &'static str {
    match data_type {
        DataType::Null => "Null",
        DataType::Boolean => "Boolean",
        DataType::Int8 => "Int8",
        DataType::Int16 => "Int16",
        DataType::UInt16 => "UInt16",
        DataType::UInt32 => "UInt32",
        DataType::UInt64 => "UInt64",
        DataType::Float16 => "Float16",
        DataType::Utf8 => "Utf8",
        DataType::LargeUtf8 => "LargeUtf8",
        DataType::Utf8View => "Utf8View",
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "Binary",
        DataType::FixedSizeBinary(_) => "FixedSizeBinary",
        DataType::Date32 | DataType::Date64 => "Date",
        DataType::Time32(_) | DataType::Time64(_) => "Time",
        DataType::Timestamp(..) => "Timestamp",
        DataType::Duration(_) => "Duration",
        DataType::Interval(_) => "Interval",
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => "Decimal",
        DataType::List(_)
        | DataType::LargeList(_)
        | DataType::ListView(_)
        | DataType::LargeListView(_)
        | DataType::FixedSizeList(..) => "List",
        DataType::Struct(_) => "Struct",
        DataType::Union(..) => "Union",
        DataType::Dictionary(..) => "Dictionary",
        DataType::Map(..) => "Map",
        DataType::RunEndEncoded(..) => "RunEndEncoded",
        _ => "another Arrow type",
    }
}

/// The little-endian bytes of column `position` over every batch: borrowed for a table of one
/// batch, concatenated otherwise. The type was checked by [`column_type`].
fn column_bytes(dataset: &ArrowDataset, position: usize) -> Cow<'_, [u8]> {
    fn values(array: &ArrayRef) -> &[u8] {
        match array.data_type() {
            DataType::Float32 => array.as_primitive::<Float32Type>().values().to_byte_slice(),
            DataType::Float64 => array.as_primitive::<Float64Type>().values().to_byte_slice(),
            DataType::Int32 => array.as_primitive::<Int32Type>().values().to_byte_slice(),
            DataType::Int64 => array.as_primitive::<Int64Type>().values().to_byte_slice(),
            DataType::UInt8 => array.as_primitive::<UInt8Type>().values().to_byte_slice(),
            _ => &[],
        }
    }
    match dataset.batches() {
        [batch] => Cow::Borrowed(values(batch.column(position))),
        batches => Cow::Owned(
            batches
                .iter()
                .flat_map(|batch| values(batch.column(position)).iter().copied())
                .collect(),
        ),
    }
}

fn refuse_big_endian() -> Result<()> {
    if cfg!(target_endian = "big") {
        return Err(Error::InvalidArgument(
            "zero-copy .ald arrays need a little-endian host",
        ));
    }
    Ok(())
}

fn inconsistent(reason: &'static str) -> Error {
    FormatError::Inconsistent { reason }.into()
}

/// Checks the chunk index of a STREAMING TRUENO_NATIVE dataset: exactly one chunk, holding every
/// row (`first_item` 0, `item_count` = `num_rows`) and the whole payload, stored uncompressed.
/// The envelope's own rules already imply all but the chunk count (contiguity, item and byte
/// totals, TRUENO_NATIVE meaning compression none); they are checked again here so that this
/// function alone states the form.
///
/// # Errors
/// `InvalidFormat` naming the rule that fails.
pub(crate) fn check_one_chunk(
    chunks: &envelope_core::ChunkIndex,
    header: &envelope_core::Header,
) -> Result<()> {
    let [chunk] = chunks.entries() else {
        return Err(inconsistent(
            "a STREAMING TRUENO_NATIVE dataset has exactly one chunk, holding every row",
        ));
    };
    if chunk.first_item != 0 || chunk.item_count != header.num_rows() {
        return Err(inconsistent(
            "the one chunk of a STREAMING TRUENO_NATIVE dataset holds every row of the header",
        ));
    }
    if chunk.stored_offset != 0 || chunk.stored_size != chunks.payload_size() {
        return Err(inconsistent(
            "the one chunk of a STREAMING TRUENO_NATIVE dataset covers the whole payload",
        ));
    }
    if header.compression() != envelope_core::Compression::None {
        return Err(inconsistent(
            "the one chunk of a STREAMING TRUENO_NATIVE dataset is stored uncompressed",
        ));
    }
    Ok(())
}

/// Parses the tensor index of a TRUENO_NATIVE dataset and checks it against the schema section
/// and the header: one array per column, same names in the same order, each of the column's
/// array type, one dimension of `num_rows` elements, stride 1.
///
/// # Errors
/// `InvalidFormat` naming the rule that fails.
pub(crate) fn parse_index(body: &[u8], schema: &SchemaRef, num_rows: u64) -> Result<TensorIndex> {
    let index = TensorIndex::parse(Format::Dataset, body)?;
    if index.len() != schema.fields().len() {
        return Err(inconsistent(
            "the tensor index does not list one array per column of the schema",
        ));
    }
    for (entry, field) in index.entries().iter().zip(schema.fields()) {
        if entry.name != *field.name() {
            return Err(inconsistent(
                "the tensor index and the schema name the columns differently or in another order",
            ));
        }
        match array_type(field.data_type()) {
            None => {
                return Err(inconsistent(
                    "a column's Arrow type has no zero-copy array type (f32, f64, i32, i64, u8)",
                ));
            }
            Some(dtype) if dtype != entry.dtype => {
                return Err(inconsistent(
                    "an array's type in the tensor index differs from its column's Arrow type",
                ));
            }
            Some(_) => {}
        }
        if entry.shape != [num_rows] {
            return Err(inconsistent(
                "an array is not one-dimensional with the header's num_rows elements",
            ));
        }
        if entry.strides != [1] {
            return Err(inconsistent("an array's stride is not 1"));
        }
    }
    Ok(index)
}

/// The payload of a TRUENO_NATIVE dataset, as the loader holds it.
#[derive(Debug)]
pub(crate) enum ArrayBytes<'a> {
    /// A buffer the arrays may share: they become slices of it, with no copy.
    Owned(Buffer),
    /// Borrowed bytes (a memory map, a caller's slice): each array is copied once.
    Borrowed(&'a [u8]),
}

impl ArrayBytes<'_> {
    fn as_slice(&self) -> &[u8] {
        match self {
            Self::Owned(buffer) => buffer.as_slice(),
            Self::Borrowed(bytes) => bytes,
        }
    }
}

/// Rebuilds the table of a TRUENO_NATIVE dataset from its payload: one record batch of
/// `num_rows` rows whose columns are the arrays of `index` (already checked against `schema` by
/// [`parse_index`]), all of them or those of a checked `projection`. With `verified` false, each
/// array used has its CRC-32C checked before it is used; the arrays a projection leaves out are
/// neither checked nor copied (each array has a checksum of its own, docs/ald.md §6.2).
///
/// # Errors
/// `InvalidFormat` if the payload is not exactly the arrays and the zero padding between them;
/// `ChecksumMismatch` for an array whose bytes do not match their CRC-32C; `Usage` on a
/// big-endian host.
pub(crate) fn decode_arrays(
    index: &TensorIndex,
    schema: &SchemaRef,
    num_rows: u64,
    payload: &ArrayBytes<'_>,
    verified: bool,
    projection: Option<&[usize]>,
) -> Result<RecordBatch> {
    refuse_big_endian()?;
    let bytes = payload.as_slice();
    // Exactly the arrays and the zero padding between them (docs/zerocopy.md §2, §10): a byte
    // outside every array is zero, or the file is refused.
    index.check_payload(bytes)?;
    let rows = EnvelopeError::fit_in_memory("the number of rows", num_rows)?;
    let all: Vec<usize>;
    let (projection, schema) = match projection {
        Some(projection) => (
            projection,
            crate::streaming::projected_schema(schema, projection)?,
        ),
        None => {
            all = (0..index.len()).collect();
            (&all[..], Arc::clone(schema))
        }
    };
    let mut columns = Vec::with_capacity(projection.len());
    for &column in projection {
        let entry = index
            .entries()
            .get(column)
            .ok_or_else(|| inconsistent("the tensor index lists fewer arrays than the schema"))?;
        // Both fit: the range lies within `bytes` (checked above).
        let start = usize::try_from(entry.offset).unwrap_or(usize::MAX);
        let len = usize::try_from(entry.size_bytes).unwrap_or(usize::MAX);
        let slice = bytes
            .get(start..start.saturating_add(len))
            .ok_or_else(|| inconsistent("an array lies beyond the payload"))?;
        if !verified {
            let computed = crc32c::crc32c(slice);
            if computed != entry.crc32c {
                return Err(EnvelopeError::ChecksumMismatch {
                    stored: entry.crc32c,
                    computed,
                }
                .into());
            }
        }
        let size = entry.dtype.size();
        let buffer = match payload {
            // Shared with the file's buffer when its address suits the type (it does whenever
            // the buffer starts on an 8-byte boundary: arrays lie at multiples of 64).
            ArrayBytes::Owned(owned) if (slice.as_ptr() as usize).is_multiple_of(size) => {
                owned.slice_with_length(start, len)
            }
            // One copy, into Arrow's 64-byte-aligned allocation.
            _ => Buffer::from(slice),
        };
        columns.push(array(entry, buffer, rows)?);
    }
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(schema, columns, &options).map_err(|error| {
        Error::Undecodable {
            rule: FormatError::Inconsistent {
                reason: "the aligned arrays do not form a table of the schema",
            },
            cause: error.into(),
        }
    })
}

/// One array of `rows` elements over `buffer` (exactly its bytes, aligned for its type).
fn array(entry: &TensorEntry, buffer: Buffer, rows: usize) -> Result<ArrayRef> {
    fn typed<T: ArrowPrimitiveType>(buffer: Buffer, rows: usize) -> ArrayRef {
        Arc::new(PrimitiveArray::<T>::new(
            ScalarBuffer::new(buffer, 0, rows),
            None,
        ))
    }
    if buffer.len() != rows.saturating_mul(entry.dtype.size()) {
        return Err(inconsistent(
            "an array's size differs from num_rows elements of its type",
        ));
    }
    Ok(match entry.dtype {
        DType::F32 => typed::<Float32Type>(buffer, rows),
        DType::F64 => typed::<Float64Type>(buffer, rows),
        DType::I32 => typed::<Int32Type>(buffer, rows),
        DType::I64 => typed::<Int64Type>(buffer, rows),
        DType::U8 => typed::<UInt8Type>(buffer, rows),
        // The index was parsed as a dataset's: its table has no other type.
        DType::F16 | DType::Bf16 | DType::I8 => {
            return Err(inconsistent("an array type that .ald files do not have"));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Float32Array, Int64Array, StringArray};
    use arrow_schema::Schema;

    fn dataset(columns: Vec<(&str, ArrayRef, bool)>) -> ArrowDataset {
        let schema = Arc::new(Schema::new(
            columns
                .iter()
                .map(|(name, array, nullable)| {
                    Field::new(*name, array.data_type().clone(), *nullable)
                })
                .collect::<Vec<_>>(),
        ));
        let arrays = columns.into_iter().map(|(_, array, _)| array).collect();
        ArrowDataset::from_batch(RecordBatch::try_new(schema, arrays).unwrap())
    }

    #[test]
    fn the_streaming_threshold_is_the_headers_largest_size() {
        use envelope_core::DeclaredSize;
        assert_eq!(
            DeclaredSize::for_size(LARGEST_WHOLE_PAYLOAD),
            DeclaredSize::Exact(u32::MAX - 1)
        );
        assert_eq!(
            DeclaredSize::for_size(LARGEST_WHOLE_PAYLOAD + 1),
            DeclaredSize::InChunkIndex
        );
    }

    /// The large-file path without writing 4 GiB: with a small limit, a payload one byte over it
    /// is written STREAMING (one chunk of every row, the header's sizes exact because the payload
    /// is small) and one at the limit is not; both load to the same table.
    #[test]
    fn a_payload_over_the_limit_is_written_streaming() {
        let table = dataset(vec![
            ("x", Arc::new(Float32Array::from(vec![1.5; 100])), false),
            ("n", Arc::new(Int64Array::from_iter_values(0..100)), false),
        ]);
        let options = TruenoOptions::default();
        let within = |limit| {
            parts_within(
                &table,
                DatasetType::Tabular,
                &Metadata::default(),
                &options,
                limit,
            )
            .unwrap()
        };
        let plain = within(LARGEST_WHOLE_PAYLOAD);
        let payload_len = plain.payload.stored().len() as u64;
        assert_eq!(
            payload_len, 1248,
            "x at 0 (400 bytes), n at 448 (800 bytes)"
        );
        for (limit, streaming) in [(payload_len, false), (payload_len - 1, true), (0, true)] {
            let bytes = within(limit).to_bytes().unwrap();
            let envelope = envelope_core::Envelope::parse(&bytes[..], Format::Dataset).unwrap();
            let chunks = envelope.chunk_index().map(|index| index.entries().to_vec());
            if streaming {
                let chunks = chunks.unwrap();
                assert_eq!(chunks.len(), 1, "limit {limit}");
                assert_eq!((chunks[0].first_item, chunks[0].item_count), (0, 100));
                assert_eq!(chunks[0].stored_size, payload_len);
            } else {
                assert_eq!(chunks, None, "limit {limit}");
            }
            assert_eq!(envelope.payload(), plain.payload.stored());
            assert_eq!(crate::load_from_bytes(&bytes).unwrap(), table);
        }
    }

    /// A TRUENO_NATIVE file of `table`, with the default card and backend.
    fn trueno(table: &ArrowDataset) -> Result<EnvelopeParts<'static>> {
        trueno_parts(
            table,
            DatasetType::Tabular,
            &Metadata::default(),
            BackendHint::Auto,
        )
    }

    /// Columns arrays cannot hold (a type other than f32, f64, i32, i64, u8; a null) are refused
    /// with `Usage`, naming the column and why.
    #[test]
    fn columns_that_arrays_cannot_hold_are_refused_by_name() {
        let strings = dataset(vec![
            ("x", Arc::new(Float32Array::from(vec![1.0, 2.0])), false),
            ("label", Arc::new(StringArray::from(vec!["a", "b"])), false),
        ]);
        let with_null = dataset(vec![(
            "n",
            Arc::new(Int64Array::from(vec![Some(1), None])),
            true,
        )]);
        let cases = [
            (
                strings,
                format!("Usage: \"label\" holds Utf8, not {ARRAY_TYPES}"),
            ),
            (
                with_null,
                "Usage: column \"n\" (Int64) cannot be written as a zero-copy \
                 (TRUENO_NATIVE) .ald array: the column holds nulls; zero-copy arrays hold f32, \
                 f64, i32, i64 or u8 columns without nulls"
                    .to_owned(),
            ),
        ];
        for (table, expected) in cases {
            let error = trueno(&table).unwrap_err();
            assert_eq!(error.signal(), envelope_core::Signal::Usage, "{error}");
            assert_eq!(error.to_string(), expected);
        }
        // A nullable field without nulls is an array like any other.
        let without = dataset(vec![(
            "n",
            Arc::new(Int64Array::from(vec![Some(1), Some(2)])),
            true,
        )]);
        let bytes = trueno(&without).unwrap().to_bytes().unwrap();
        assert_eq!(crate::load_from_bytes(&bytes).unwrap(), without);
    }
}
