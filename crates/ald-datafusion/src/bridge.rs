//! The zero-copy bridge from the format crates' arrow (60) to DataFusion's (59), through the Arrow
//! C Data Interface (<https://arrow.apache.org/docs/format/CDataInterface.html>).
//!
//! `ald` hands out verified `arrow_array` 60 record batches; DataFusion 55.2 is built on arrow 59.
//! The two are different crates with the same memory layout, and the C Data Interface is the ABI
//! both speak: arrow 60 exports an array as an `FFI_ArrowArray` (buffer pointers, offset, length,
//! children, dictionary, and a `release` callback that owns the arrow 60 buffers), the struct is
//! *moved* to arrow 59's `FFI_ArrowArray` (the same `#[repr(C)]` struct, moved as the interface
//! says: bitwise copy, source marked released), and arrow 59 imports it, wrapping the same buffers
//! without copying a byte. The buffers are freed when the last arrow 59 array using them is
//! dropped, by arrow 60's release callback. Schemas cross the same way (`FFI_ArrowSchema`), so a
//! field's type, nullability, metadata, dictionary and time zone are what the other side reads,
//! never a hand-written mapping.
//!
//! This module is the crate's only `unsafe` (the moves and the import). Its inputs are always
//! arrays that arrow-rs 60 built and validated (`ald` decodes with Arrow's validation on), which
//! is what the import's safety contract asks for; the imported arrays' layout is checked again by
//! arrow 59 (`ArrayData::validate`: buffer sizes against lengths and offsets, without rereading
//! the values).

use std::sync::Arc;

use arrow_array::ffi as from;
use datafusion::arrow::array::{
    ArrayRef, RecordBatch, RecordBatchOptions, make_array, new_empty_array,
};
use datafusion::arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::arrow::ffi as to;

use crate::{Error, Result};

// The move below reinterprets one crate's struct as the other's: both are the C Data Interface's
// `struct ArrowArray` / `struct ArrowSchema` declared `#[repr(C)]` with the same fields in the same
// order. Checked at compile time for size and alignment (a future arrow that changed either would
// fail to build rather than corrupt memory).
const _: () = {
    assert!(size_of::<from::FFI_ArrowArray>() == size_of::<to::FFI_ArrowArray>());
    assert!(align_of::<from::FFI_ArrowArray>() == align_of::<to::FFI_ArrowArray>());
    assert!(size_of::<from::FFI_ArrowSchema>() == size_of::<to::FFI_ArrowSchema>());
    assert!(align_of::<from::FFI_ArrowSchema>() == align_of::<to::FFI_ArrowSchema>());
};

/// Moves an exported array from arrow 60's struct into arrow 59's.
fn move_array(mut exported: from::FFI_ArrowArray) -> to::FFI_ArrowArray {
    // SAFETY: `exported` is a live, initialised, aligned `FFI_ArrowArray` (a local we own), and
    // arrow 59's `FFI_ArrowArray` is the same `#[repr(C)]` C Data Interface struct (size and
    // alignment checked above). `from_raw` moves the struct out (`ptr::replace`) and leaves an
    // empty one (`release` null) in its place, which is the interface's "move": the release
    // callback, and so the ownership of the arrow 60 buffers, now belongs to the returned value
    // only; dropping `exported` afterwards sees a null `release` and does nothing.
    unsafe { to::FFI_ArrowArray::from_raw((&raw mut exported).cast::<to::FFI_ArrowArray>()) }
}

/// Moves an exported schema from arrow 60's struct into arrow 59's.
fn move_schema(mut exported: from::FFI_ArrowSchema) -> to::FFI_ArrowSchema {
    // SAFETY: as in `move_array`, for the C Data Interface's `struct ArrowSchema`: a live local,
    // the same `#[repr(C)]` layout (checked above), moved out with the source left released.
    unsafe { to::FFI_ArrowSchema::from_raw((&raw mut exported).cast::<to::FFI_ArrowSchema>()) }
}

fn bridge_error(column: &str) -> impl FnOnce(Box<dyn std::error::Error + Send + Sync>) -> Error {
    let column = column.to_owned();
    move |cause| Error::Bridge { column, cause }
}

/// `array` (arrow 60) as a DataFusion array (arrow 59), sharing its buffers. `name` is for errors.
///
/// # Errors
/// `Usage` ([`Error::Bridge`]) for a type either side of the interface cannot express.
pub(crate) fn array(array: &dyn arrow_array::Array, name: &str) -> Result<ArrayRef> {
    if array.is_empty() {
        // An empty slice of a variable-size array keeps its offset (say 12) while the importer
        // sizes the values of an empty array as 0 bytes, which Arrow's layout check rightly
        // refuses. An empty array carries nothing but its type: only the type crosses.
        let exported = arrow_schema::ffi::FFI_ArrowSchema::try_from(array.data_type())
            .map_err(|e| bridge_error(name)(e.into()))?;
        let data_type =
            DataType::try_from(&move_schema(exported)).map_err(|e| bridge_error(name)(e.into()))?;
        return Ok(new_empty_array(&data_type));
    }
    let (exported, schema) =
        from::to_ffi(&array.to_data()).map_err(|e| bridge_error(name)(e.into()))?;
    let (exported, schema) = (move_array(exported), move_schema(schema));
    // SAFETY: `exported`/`schema` were produced by arrow-rs 60's exporter from an `ArrayData`
    // arrow-rs built and validated (every array `ald` hands out was decoded with Arrow's
    // validation), so they follow the C Data Interface: buffers live until `release`, lengths,
    // offsets and the type string agree. The import takes ownership of `exported` (its release
    // callback keeps the arrow 60 buffers alive for as long as the arrow 59 array does).
    let data =
        unsafe { to::from_ffi(exported, &schema) }.map_err(|e| bridge_error(name)(e.into()))?;
    data.validate().map_err(|e| bridge_error(name)(e.into()))?;
    Ok(make_array(data))
}

/// `schema` (arrow 60) as DataFusion's (arrow 59), through the same interface: fields, types,
/// nullability, field and schema metadata as the other side reads them.
///
/// # Errors
/// `Usage` ([`Error::Bridge`]) for a type either side cannot express.
pub(crate) fn schema(schema: &arrow_schema::Schema) -> Result<Schema> {
    let exported = arrow_schema::ffi::FFI_ArrowSchema::try_from(schema)
        .map_err(|e| bridge_error("(schema)")(e.into()))?;
    Schema::try_from(&move_schema(exported)).map_err(|e| bridge_error("(schema)")(e.into()))
}

/// The columns `projection` of `batch` (arrow 60) as a DataFusion record batch of `schema`
/// (already projected), sharing the buffers. An empty projection keeps the row count (what
/// `COUNT(*)` reads).
///
/// # Errors
/// As [`array`]; `Usage` if the bridged columns do not have `schema`'s types.
pub(crate) fn batch(
    batch: &arrow_array::RecordBatch,
    projection: &[usize],
    schema: SchemaRef,
) -> Result<RecordBatch> {
    let source = batch.schema();
    let columns = projection
        .iter()
        .map(|&index| array(batch.column(index).as_ref(), source.field(index).name()))
        .collect::<Result<Vec<_>>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(Arc::clone(&schema), columns, &options)
        .map_err(|e| bridge_error("(batch)")(e.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    use arrow_array::builder::{
        FixedSizeListBuilder, Int32Builder, LargeListBuilder, ListBuilder, StringDictionaryBuilder,
    };
    use arrow_array::types::{Int8Type, Int32Type};
    use arrow_array::{
        Array, ArrayRef as ArrayRef60, BinaryArray, BinaryViewArray, BooleanArray, Date32Array,
        Date64Array, Decimal128Array, Decimal256Array, DictionaryArray, DurationNanosecondArray,
        FixedSizeBinaryArray, Float32Array, Float64Array, Int8Array, Int16Array, Int32Array,
        Int64Array, LargeBinaryArray, LargeStringArray, NullArray, RecordBatch as Batch60,
        StringArray, StringViewArray, StructArray, Time64MicrosecondArray,
        TimestampNanosecondArray, TimestampSecondArray, UInt8Array, UInt16Array, UInt32Array,
        UInt64Array,
    };
    use arrow_schema::{DataType, Field};
    use proptest::prelude::*;

    /// The array back in arrow 60, through the same interface the other way (test only).
    fn back(array: &dyn datafusion::arrow::array::Array) -> ArrayRef60 {
        let (exported, schema) = to::to_ffi(&array.to_data()).unwrap();
        let mut exported = std::mem::ManuallyDrop::new(exported);
        let mut schema = std::mem::ManuallyDrop::new(schema);
        // SAFETY: as `move_array`/`move_schema`, the other way: live locals of the same
        // `#[repr(C)]` structs, moved out (the `ManuallyDrop` originals are left released and
        // never dropped), then imported from arrow-rs 59's own export.
        let data = unsafe {
            let exported =
                from::FFI_ArrowArray::from_raw((&raw mut *exported).cast::<from::FFI_ArrowArray>());
            let schema =
                from::FFI_ArrowSchema::from_raw((&raw mut *schema).cast::<from::FFI_ArrowSchema>());
            from::from_ffi(exported, &schema).unwrap()
        };
        arrow_array::make_array(data)
    }

    /// One column of every type `ald` writes (docs/ald.md: any Arrow type the IPC format holds),
    /// each with nulls where the type has a validity bitmap.
    fn every_type() -> Batch60 {
        let n = 7;
        let ints = Int32Array::from(vec![
            Some(1),
            None,
            Some(3),
            Some(-4),
            None,
            Some(6),
            Some(7),
        ]);
        let strings = StringArray::from(vec![
            Some("a"),
            None,
            Some("ccc"),
            Some(""),
            Some("é日本"),
            None,
            Some("long enough to be stored out of line in a view"),
        ]);
        let mut list = ListBuilder::new(Int32Builder::new());
        let mut large_list = LargeListBuilder::new(Int32Builder::new());
        let mut fixed_list = FixedSizeListBuilder::new(Int32Builder::new(), 2);
        for row in 0..n {
            for value in 0..(row % 3) {
                list.values()
                    .append_value(i32::try_from(row * 10 + value).unwrap());
                large_list
                    .values()
                    .append_value(i32::try_from(value).unwrap());
            }
            list.append(row != 2);
            large_list.append(row != 4);
            fixed_list
                .values()
                .append_value(i32::try_from(row).unwrap());
            fixed_list.values().append_null();
            fixed_list.append(row != 1);
        }
        let mut dictionary = StringDictionaryBuilder::<Int32Type>::new();
        for value in ["x", "y", "x", "z", "y", "x", "w"] {
            dictionary.append_value(value);
        }
        let small_dictionary = DictionaryArray::<Int8Type>::try_new(
            Int8Array::from(vec![
                Some(0),
                Some(1),
                None,
                Some(0),
                Some(1),
                Some(1),
                Some(0),
            ]),
            Arc::new(Int64Array::from(vec![100, -100])),
        )
        .unwrap();
        let structs = StructArray::from(vec![
            (
                Arc::new(Field::new("i", DataType::Int32, true)),
                Arc::new(ints.clone()) as ArrayRef60,
            ),
            (
                Arc::new(Field::new("s", DataType::Utf8, true)),
                Arc::new(strings.clone()) as ArrayRef60,
            ),
        ]);
        let columns: Vec<(&str, ArrayRef60)> = vec![
            (
                "i8",
                Arc::new(Int8Array::from(vec![
                    Some(-1),
                    None,
                    Some(2),
                    Some(3),
                    Some(4),
                    Some(5),
                    Some(6),
                ])),
            ),
            (
                "i16",
                Arc::new(Int16Array::from(vec![1, 2, 3, 4, 5, 6, i16::MIN])),
            ),
            ("i32", Arc::new(ints)),
            (
                "i64",
                Arc::new(Int64Array::from(vec![
                    Some(i64::MAX),
                    None,
                    Some(0),
                    Some(1),
                    Some(2),
                    Some(3),
                    Some(i64::MIN),
                ])),
            ),
            (
                "u8",
                Arc::new(UInt8Array::from(vec![0, 1, 2, 3, 4, 5, u8::MAX])),
            ),
            (
                "u16",
                Arc::new(UInt16Array::from(vec![0, 1, 2, 3, 4, 5, u16::MAX])),
            ),
            (
                "u32",
                Arc::new(UInt32Array::from(vec![
                    Some(0),
                    None,
                    Some(2),
                    Some(3),
                    Some(4),
                    Some(5),
                    Some(u32::MAX),
                ])),
            ),
            (
                "u64",
                Arc::new(UInt64Array::from(vec![0, 1, 2, 3, 4, 5, u64::MAX])),
            ),
            (
                "f32",
                Arc::new(Float32Array::from(vec![
                    Some(0.5),
                    None,
                    Some(f32::NAN),
                    Some(-0.0),
                    Some(1e30),
                    Some(f32::INFINITY),
                    Some(3.25),
                ])),
            ),
            (
                "f64",
                Arc::new(Float64Array::from(vec![
                    Some(0.1),
                    Some(0.2),
                    None,
                    Some(f64::MIN_POSITIVE),
                    Some(-1.5),
                    Some(f64::NEG_INFINITY),
                    Some(1e300),
                ])),
            ),
            ("utf8", Arc::new(strings.clone())),
            (
                "large_utf8",
                Arc::new(LargeStringArray::from_iter(strings.iter())),
            ),
            (
                "utf8_view",
                Arc::new(StringViewArray::from_iter(strings.iter())),
            ),
            (
                "binary",
                Arc::new(BinaryArray::from_iter(
                    strings.iter().map(|s| s.map(str::as_bytes)),
                )),
            ),
            (
                "large_binary",
                Arc::new(LargeBinaryArray::from_iter(
                    strings.iter().map(|s| s.map(str::as_bytes)),
                )),
            ),
            (
                "binary_view",
                Arc::new(BinaryViewArray::from_iter(
                    strings.iter().map(|s| s.map(str::as_bytes)),
                )),
            ),
            (
                "fixed_binary",
                Arc::new(
                    FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                        (0..n).map(|i| (i != 3).then(|| [u8::try_from(i).unwrap(); 3])),
                        3,
                    )
                    .unwrap(),
                ),
            ),
            (
                "bool",
                Arc::new(BooleanArray::from(vec![
                    Some(true),
                    None,
                    Some(false),
                    Some(true),
                    Some(true),
                    Some(false),
                    None,
                ])),
            ),
            (
                "date32",
                Arc::new(Date32Array::from(vec![
                    Some(0),
                    Some(19_000),
                    None,
                    Some(-1),
                    Some(1),
                    Some(2),
                    Some(3),
                ])),
            ),
            (
                "date64",
                Arc::new(Date64Array::from(vec![0, 86_400_000, 2, 3, 4, 5, 6])),
            ),
            (
                "time64",
                Arc::new(Time64MicrosecondArray::from(vec![
                    0,
                    1,
                    2,
                    3,
                    4,
                    5,
                    86_399_999_999,
                ])),
            ),
            (
                "ts_berlin",
                Arc::new(
                    TimestampNanosecondArray::from(vec![
                        Some(0),
                        None,
                        Some(1_700_000_000_000_000_000),
                        Some(2),
                        Some(3),
                        Some(4),
                        Some(5),
                    ])
                    .with_timezone("Europe/Berlin"),
                ),
            ),
            (
                "ts_utc",
                Arc::new(
                    TimestampSecondArray::from(vec![0, 1, 2, 3, 4, 5, 6]).with_timezone("+00:00"),
                ),
            ),
            (
                "ts_naive",
                Arc::new(TimestampSecondArray::from(vec![0, 1, 2, 3, 4, 5, 6])),
            ),
            (
                "duration",
                Arc::new(DurationNanosecondArray::from(vec![0, 1, 2, 3, 4, 5, -6])),
            ),
            (
                "decimal128",
                Arc::new(
                    Decimal128Array::from(vec![
                        Some(12_345),
                        None,
                        Some(-1),
                        Some(0),
                        Some(99_999_999_999),
                        Some(1),
                        Some(2),
                    ])
                    .with_precision_and_scale(12, 2)
                    .unwrap(),
                ),
            ),
            (
                "decimal256",
                Arc::new(
                    Decimal256Array::from(vec![
                        arrow_buffer_i256(1),
                        arrow_buffer_i256(-2),
                        arrow_buffer_i256(3),
                        arrow_buffer_i256(4),
                        arrow_buffer_i256(5),
                        arrow_buffer_i256(6),
                        arrow_buffer_i256(7),
                    ])
                    .with_precision_and_scale(40, 5)
                    .unwrap(),
                ),
            ),
            ("list", Arc::new(list.finish())),
            ("large_list", Arc::new(large_list.finish())),
            ("fixed_list", Arc::new(fixed_list.finish())),
            ("struct", Arc::new(structs)),
            ("dictionary", Arc::new(dictionary.finish())),
            ("dictionary_i8_i64", Arc::new(small_dictionary)),
            ("null", Arc::new(NullArray::new(n))),
        ];
        Batch60::try_from_iter(columns).unwrap()
    }

    fn arrow_buffer_i256(value: i64) -> arrow_buffer::i256 {
        arrow_buffer::i256::from_i128(i128::from(value) * 1_000_000_000_000_000_000)
    }

    /// Every column crosses and comes back equal, sharing the source's value buffers.
    fn check_batch(batch: &Batch60) {
        let schema = Arc::new(schema(&batch.schema()).unwrap());
        let all: Vec<usize> = (0..batch.num_columns()).collect();
        let bridged = super::batch(batch, &all, Arc::clone(&schema)).unwrap();
        assert_eq!(bridged.num_rows(), batch.num_rows());
        for (index, column) in batch.columns().iter().enumerate() {
            let crossed = bridged.column(index);
            let name = batch.schema().field(index).name().clone();
            assert_eq!(crossed.len(), column.len(), "{name}");
            assert_eq!(crossed.null_count(), column.null_count(), "{name}");
            assert_eq!(
                format!("{:?}", crossed.data_type()),
                format!("{:?}", column.data_type()),
                "{name}"
            );
            crossed.to_data().validate_full().unwrap();
            let returned = back(crossed.as_ref());
            assert_eq!(returned.to_data(), column.to_data(), "{name}");
            // Zero copy: the first buffer (values or offsets) is the same memory. (An empty
            // array references no memory: the importer gives it a dangling buffer.)
            let (source, bridged) = (column.to_data(), crossed.to_data());
            if let (Some(a), Some(b), false) = (
                source.buffers().first(),
                bridged.buffers().first(),
                column.is_empty(),
            ) {
                assert_eq!(a.as_ptr(), b.as_ptr(), "{name} was copied");
            }
        }
    }

    #[test]
    fn every_type_ald_writes_crosses_unchanged_and_without_a_copy() {
        let batch = every_type();
        check_batch(&batch);
        // Field metadata and nullability cross with the schema.
        let mut metadata = std::collections::HashMap::new();
        metadata.insert("unit".to_owned(), "EUR".to_owned());
        let annotated = arrow_schema::Schema::new(vec![
            Field::new("price", DataType::Decimal128(12, 2), false).with_metadata(metadata.clone()),
        ])
        .with_metadata(metadata.clone());
        let crossed = schema(&annotated).unwrap();
        assert_eq!(crossed.field(0).metadata(), &metadata);
        assert!(!crossed.field(0).is_nullable());
        assert_eq!(crossed.metadata(), &metadata);
    }

    #[test]
    fn an_empty_projection_keeps_the_row_count() {
        let batch = every_type();
        let schema = Arc::new(Schema::empty());
        let bridged = super::batch(&batch, &[], schema).unwrap();
        assert_eq!((bridged.num_rows(), bridged.num_columns()), (7, 0));
    }

    #[test]
    fn a_projection_crosses_only_its_columns_in_its_order() {
        let batch = every_type();
        let full = schema(&batch.schema()).unwrap();
        let projected = Arc::new(full.project(&[10, 2]).unwrap());
        let bridged = super::batch(&batch, &[10, 2], projected).unwrap();
        assert_eq!(bridged.schema().field(0).name(), "utf8");
        assert_eq!(
            back(bridged.column(1).as_ref()).to_data(),
            batch.column(2).to_data()
        );
    }

    proptest! {
        #[test]
        fn sliced_arrays_cross_unchanged(offset in 0usize..7, len in 0usize..8) {
            let batch = every_type();
            let len = len.min(7 - offset);
            check_batch(&batch.slice(offset, len));
        }
    }
}
