//! TRUENO_NATIVE (zero-copy) `.ald` datasets (000 §10, docs/zerocopy.md §10) through the public
//! API: every array type with odd row counts round-trips through every loader and equals the
//! ordinary (Arrow IPC) path; arrays lie on 64-byte boundaries of the file; the memory-mapped
//! `MappedDataset` sees the same values; refusals of what cannot be stored, of indexes that
//! disagree with the schema, and of damaged arrays. Each holds for both forms: the ordinary one,
//! and the STREAMING one (one chunk of every row, docs/zerocopy.md §10.1), which must read the
//! same everywhere; malformed STREAMING forms are refused.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    reason = "test tables are small; values are generated from row numbers"
)]

use std::borrow::Cow;
use std::sync::Arc;

use ald::aligned::{TruenoOptions, save_trueno_to_bytes, trueno_parts, trueno_parts_with};
use ald::{ArrowDataset, DatasetCard, DatasetType, LoadOptions, Metadata, StreamingDataset};
use arrow_array::cast::AsArray as _;
use arrow_array::types::{
    ArrowPrimitiveType, Float32Type, Float64Type, Int32Type, Int64Type, UInt8Type,
};
use arrow_array::{
    ArrayRef, Float32Array, Float64Array, Int32Array, Int64Array, RecordBatch, UInt8Array,
};
use arrow_schema::{DataType, Field, Schema};
use envelope_core::{
    ChunkIndex, Compression, Envelope, EnvelopeParts, Flags, Format, Payload, Section, Signal,
};
use envelope_crypto::{Argon2Params, DecryptionKey, EncryptOptions, EncryptTo, OsRng, Password};
use proptest::prelude::*;
use zerocopy_trueno::{BackendHint, DType, MappedDataset, TensorIndex, aligned_parts};

use crate::signal;

/// Row counts around the edges: empty, one, either side of a 64-byte line of f64s, and a
/// thousand-odd.
const ROW_COUNTS: [usize; 5] = [0, 1, 63, 65, 1001];

/// A table with one column of every array type, plus a nullable-declared column holding no
/// null; values that differ from row to row and use the whole range of each type.
fn every_type(rows: usize) -> ArrowDataset {
    let schema = Arc::new(Schema::new(vec![
        Field::new("f32", DataType::Float32, false),
        Field::new("f64", DataType::Float64, false),
        Field::new("i32", DataType::Int32, false),
        Field::new("i64", DataType::Int64, false),
        Field::new("u8", DataType::UInt8, false),
        Field::new("maybe", DataType::Float64, true),
    ]));
    let n = rows as i64;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Float32Array::from_iter_values(
            (0..n).map(|i| i as f32 * 0.25 - 7.5),
        )),
        Arc::new(Float64Array::from_iter_values(
            (0..n).map(|i| (i as f64).sqrt() * -1e300_f64.sqrt()),
        )),
        Arc::new(Int32Array::from_iter_values(
            (0..n).map(|i| (i as i32).wrapping_mul(-2_654_435)),
        )),
        Arc::new(Int64Array::from_iter_values(
            (0..n).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as i64)),
        )),
        Arc::new(UInt8Array::from_iter_values((0..n).map(|i| (i * 37) as u8))),
        Arc::new(Float64Array::from_iter((0..n).map(|i| Some(i as f64)))),
    ];
    ArrowDataset::from_batch(RecordBatch::try_new(schema, columns).unwrap())
}

fn metadata() -> Metadata {
    Metadata {
        card: Some(DatasetCard {
            name: "zero-copy".to_owned(),
            version: "1.0.0".to_owned(),
            ..DatasetCard::default()
        }),
        ..Metadata::default()
    }
}

fn trueno(dataset: &ArrowDataset) -> Vec<u8> {
    save_trueno_to_bytes(
        dataset,
        DatasetType::Tabular,
        &metadata(),
        BackendHint::Avx2,
    )
    .unwrap()
}

/// The parts of the STREAMING form: one chunk holding every row.
fn streaming_parts(dataset: &ArrowDataset) -> EnvelopeParts<'static> {
    let options = TruenoOptions {
        backend: BackendHint::Avx2,
        streaming: true,
    };
    trueno_parts_with(dataset, DatasetType::Tabular, &metadata(), &options).unwrap()
}

/// Both forms of the file, named: without STREAMING and with it (one chunk of every row).
fn forms(dataset: &ArrowDataset) -> [(&'static str, Vec<u8>); 2] {
    [
        ("whole", trueno(dataset)),
        ("streaming", streaming_parts(dataset).to_bytes().unwrap()),
    ]
}

/// The table through the ordinary (Arrow IPC) path.
fn ordinary(dataset: &ArrowDataset) -> ArrowDataset {
    let bytes = dataset
        .to_bytes(&ald::SaveOptions::new(
            DatasetType::Tabular,
            Compression::None,
        ))
        .unwrap();
    ald::load_from_bytes(&bytes).unwrap()
}

fn one_batch(dataset: &ArrowDataset) -> RecordBatch {
    dataset.to_batch().unwrap()
}

#[test]
fn every_type_round_trips_through_every_loader_and_equals_the_ordinary_path() {
    let dir = tempfile::tempdir().unwrap();
    for rows in ROW_COUNTS {
        let data = every_type(rows);
        let expected = one_batch(&ordinary(&data));
        assert_eq!(expected, one_batch(&data));
        for (form, bytes) in forms(&data) {
            round_trip(&form_path(&dir, form, rows), &bytes, &data, &expected);
        }
    }
}

fn form_path(dir: &tempfile::TempDir, form: &str, rows: usize) -> std::path::PathBuf {
    dir.path().join(format!("{form}-{rows}.ald"))
}

/// `bytes` (a TRUENO_NATIVE file of `data`, either form) load as `data` through every loader.
fn round_trip(path: &std::path::Path, bytes: &[u8], data: &ArrowDataset, expected: &RecordBatch) {
    let rows = data.num_rows() as usize;
    let loaded = ald::load_from_bytes_with(bytes, &LoadOptions::default()).unwrap();
    assert_eq!(loaded.dataset, *data, "{rows} rows, in memory");
    assert_eq!(one_batch(&loaded.dataset), *expected);
    assert_eq!(loaded.metadata, metadata());
    assert_eq!(loaded.dataset_type, DatasetType::Tabular);

    // From a file: the memory map, given to the in-memory loader.
    std::fs::write(path, bytes).unwrap();
    let from_file = ald::fs::load(path, &LoadOptions::default()).unwrap();
    assert_eq!(from_file.dataset, *data, "{rows} rows, ald::fs::load");

    // Chunk by chunk: one chunk holding every row, opened lazily, arrays checked by CRC-32C.
    for streaming in [
        StreamingDataset::from_bytes(bytes, &LoadOptions::default())
            .unwrap()
            .get_chunk(0)
            .unwrap(),
        StreamingDataset::open(path, &LoadOptions::default())
            .unwrap()
            .get_chunk(0)
            .unwrap(),
    ] {
        assert_eq!(streaming, *expected, "{rows} rows, StreamingDataset");
    }
    let opened = StreamingDataset::open(path, &LoadOptions::default()).unwrap();
    assert_eq!(opened.num_chunks(), 1);
    assert_eq!(opened.num_rows(), rows as u64);
    let entry = opened.chunk_entry(0).unwrap();
    assert_eq!((entry.first_item, entry.item_count), (0, rows as u64));
    assert!(opened.file().is_trueno_native());
    let head = opened.get_rows(0, (rows as u64).min(10)).unwrap();
    assert_eq!(head, expected.slice(0, rows.min(10)));
    let tail = opened
        .get_rows(rows as u64 / 2, rows as u64 - rows as u64 / 2)
        .unwrap();
    assert_eq!(tail, expected.slice(rows / 2, rows - rows / 2));
    assert_eq!(
        signal(opened.get_chunk(1)),
        Signal::InvalidFormat,
        "no second chunk"
    );
    assert_eq!(ald::read_schema(bytes).unwrap(), *data.schema());
    let mapped = MappedDataset::open(path).unwrap();
    assert_eq!(mapped.num_rows(), rows as u64);
    assert_eq!(
        mapped.get("i64").unwrap().as_slice::<i64>().unwrap(),
        expected
            .column_by_name("i64")
            .unwrap()
            .as_primitive::<Int64Type>()
            .values()
            .as_ref()
    );
}

#[test]
fn a_table_of_several_sliced_batches_is_stored_as_one_array_per_column() {
    let whole = one_batch(&every_type(1001));
    let batches = vec![
        whole.slice(0, 3),
        whole.slice(3, 500),
        whole.slice(503, 498),
    ];
    let data = ArrowDataset::new(whole.schema(), batches).unwrap();
    let loaded = ald::load_from_bytes(&trueno(&data)).unwrap();
    assert_eq!(loaded.batches().len(), 1);
    assert_eq!(one_batch(&loaded), whole);
}

#[test]
fn every_array_and_the_payload_start_on_64_byte_boundaries_of_the_file() {
    for rows in ROW_COUNTS {
        let [(_, whole), (_, streaming)] = forms(&every_type(rows));
        let whole_payload = Envelope::parse(&whole[..], Format::Dataset)
            .unwrap()
            .payload()
            .to_vec();
        for bytes in [whole, streaming] {
            check_layout(&bytes, rows, &whole_payload);
        }
    }
}

/// The layout of either form of a TRUENO_NATIVE file of `every_type(rows)`: its payload (the
/// same bytes in both forms) and every array on 64-byte boundaries of the file; a STREAMING file
/// has one chunk holding every row and the whole payload.
fn check_layout(bytes: &[u8], rows: usize, whole_payload: &[u8]) {
    let envelope = Envelope::parse(bytes, Format::Dataset).unwrap();
    assert!(
        envelope
            .header()
            .flags()
            .contains(envelope_core::Flags::TRUENO_NATIVE)
    );
    assert_eq!(envelope.header().compression(), Compression::None);
    assert_eq!(envelope.header().num_rows(), rows as u64);
    assert_eq!(
        envelope.payload(),
        whole_payload,
        "{rows} rows: the same payload"
    );
    if let Some(chunks) = envelope.chunk_index() {
        assert!(envelope.header().flags().contains(Flags::STREAMING));
        let [chunk] = chunks.entries() else {
            panic!("{rows} rows: {} chunks", chunks.len())
        };
        assert_eq!((chunk.first_item, chunk.item_count), (0, rows as u64));
        assert_eq!(chunk.stored_offset, 0);
        assert_eq!(chunk.stored_size, envelope.payload().len() as u64);
        assert_eq!(chunk.uncompressed_size, chunk.stored_size);
        assert_eq!(chunk.stored_crc32c, crc32c::crc32c(envelope.payload()));
    }
    let payload = envelope.layout().span(Section::Payload).unwrap();
    assert_eq!(payload.offset % 64, 0, "{rows} rows: payload offset");
    let index = TensorIndex::parse(
        Format::Dataset,
        envelope.section(Section::TensorIndex).unwrap(),
    )
    .unwrap();
    let names: Vec<&str> = index.entries().iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["f32", "f64", "i32", "i64", "u8", "maybe"]);
    let types: Vec<DType> = index.entries().iter().map(|e| e.dtype).collect();
    assert_eq!(
        types,
        [
            DType::F32,
            DType::F64,
            DType::I32,
            DType::I64,
            DType::U8,
            DType::F64
        ]
    );
    for entry in index.entries() {
        assert_eq!((payload.offset + entry.offset) % 64, 0, "{}", entry.name);
        assert_eq!(entry.shape, [rows as u64]);
        assert_eq!(entry.strides, [1]);
        assert_eq!(entry.backend, BackendHint::Avx2);
        assert_eq!(entry.size_bytes, rows as u64 * entry.dtype.size() as u64);
    }
    // The metadata and schema sections are the ordinary ones.
    assert_eq!(Metadata::decode(envelope.metadata()).unwrap(), metadata());
}

#[test]
fn mapped_dataset_borrows_the_same_values_as_the_arrow_columns() {
    let dir = tempfile::tempdir().unwrap();
    for rows in ROW_COUNTS {
        let data = every_type(rows);
        let batch = one_batch(&data);
        for (form, bytes) in forms(&data) {
            let path = form_path(&dir, form, rows);
            std::fs::write(&path, bytes).unwrap();
            check_mapped(&path, rows, &batch);
        }
    }
}

/// `mapped`'s array `name`, borrowed as a slice of `T`'s values, holds the column `name` of
/// `batch`.
fn borrows_in_place<T: ArrowPrimitiveType>(mapped: &MappedDataset, batch: &RecordBatch, name: &str)
where
    T::Native: zerocopy_trueno::Element,
{
    assert_eq!(
        mapped.get(name).unwrap().as_slice::<T::Native>().unwrap(),
        batch
            .column_by_name(name)
            .unwrap()
            .as_primitive::<T>()
            .values()
            .as_ref(),
        "{name}"
    );
}

/// The memory-mapped file at `path` (either form) hands out the columns of `batch` in place.
fn check_mapped(path: &std::path::Path, rows: usize, batch: &RecordBatch) {
    let mapped = MappedDataset::open(path).unwrap();
    assert_eq!(mapped.num_rows(), rows as u64);
    assert_eq!(mapped.dataset_type(), DatasetType::Tabular.id());
    assert!(mapped.tensors().is_zero_copy());
    let column = |name: &str| batch.column_by_name(name).unwrap().clone();
    assert_eq!(
        mapped.get_f32("f32").unwrap(),
        column("f32")
            .as_primitive::<Float32Type>()
            .values()
            .as_ref()
    );
    borrows_in_place::<Float64Type>(&mapped, batch, "f64");
    borrows_in_place::<Int32Type>(&mapped, batch, "i32");
    borrows_in_place::<Int64Type>(&mapped, batch, "i64");
    assert_eq!(
        mapped.get("u8").unwrap().to_vec::<u8>().unwrap(),
        column("u8").as_primitive::<UInt8Type>().values().to_vec()
    );
    if rows > 0 {
        let last = (rows - 1) as u64;
        assert_eq!(
            mapped.get("i32").unwrap().get_f32(&[last]).unwrap(),
            column("i32").as_primitive::<Int32Type>().value(rows - 1) as f32
        );
    }
    assert_eq!(
        Metadata::decode(mapped.metadata()).unwrap(),
        metadata(),
        "the ordinary metadata section"
    );
}

#[test]
fn an_encrypted_trueno_file_loads_with_its_key_through_the_in_memory_path() {
    let data = every_type(65);
    for parts in [
        trueno_parts(
            &data,
            DatasetType::Tabular,
            &Metadata::default(),
            BackendHint::Auto,
        )
        .unwrap(),
        streaming_parts(&data),
    ] {
        check_encrypted(&parts, &data);
    }
}

/// `parts` (either form of `data`) encrypted with a password: refused without the key, loaded
/// with it in memory and chunk by chunk.
fn check_encrypted(parts: &EnvelopeParts<'_>, data: &ArrowDataset) {
    let password = Password::new("correct horse");
    let params = Argon2Params {
        m_cost_kib: 1024,
        t_cost: 1,
        p_cost: 1,
    };
    let sealed = envelope_crypto::encrypt(
        parts,
        EncryptTo::Password {
            password: &password,
            params,
        },
        EncryptOptions::default(),
        &mut OsRng,
    )
    .unwrap()
    .to_bytes()
    .unwrap();
    assert_eq!(
        signal(ald::load_from_bytes(&sealed)),
        Signal::DecryptionFailed
    );
    let options = LoadOptions {
        key: Some(DecryptionKey::Password(&password)),
        ..LoadOptions::default()
    };
    let loaded = ald::load_from_bytes_with(&sealed, &options).unwrap();
    assert_eq!(loaded.dataset, *data);
    let streaming = StreamingDataset::from_bytes(&sealed[..], &options).unwrap();
    assert_eq!(
        signal(streaming.get_chunk(0)),
        Signal::DecryptionFailed,
        "no key, no rows"
    );
    let reader = streaming
        .with_key(DecryptionKey::Password(&password))
        .unwrap();
    assert_eq!(reader.get_chunk(0).unwrap(), one_batch(data));
    assert_eq!(
        reader.get_rows(60, 5).unwrap(),
        one_batch(data).slice(60, 5)
    );
    let chunked = Envelope::parse(&sealed[..], Format::Dataset)
        .unwrap()
        .chunk_index()
        .map(ChunkIndex::len);
    let expected = match &parts.payload {
        Payload::Chunked { index, .. } => Some(index.len()),
        Payload::Whole { .. } => None,
    };
    assert_eq!(chunked, expected, "the same form, encrypted");
}

/// The parts of a valid file with one thing changed; `to_bytes` recomputes every checksum, so
/// only the rule under test can refuse the result.
fn tampered(edit: impl FnOnce(&mut EnvelopeParts<'static>)) -> Vec<u8> {
    let mut parts = trueno_parts(
        &every_type(65),
        DatasetType::Tabular,
        &Metadata::default(),
        BackendHint::Auto,
    )
    .unwrap();
    edit(&mut parts);
    parts.to_bytes().unwrap()
}

fn schema_section(fields: Vec<Field>) -> Cow<'static, [u8]> {
    Cow::Owned(ald::ipc::schema_message(&Schema::new(fields)).unwrap())
}

/// The valid file with the field at `position` of its schema section replaced by `replacement`,
/// then the fields changed by `change`.
fn with_fields(position: usize, replacement: Field, change: fn(&mut Vec<Field>)) -> Vec<u8> {
    tampered(|parts| {
        let mut fields: Vec<Field> = every_type(0)
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields[position] = replacement;
        change(&mut fields);
        parts.schema = schema_section(fields);
    })
}

#[test]
fn an_index_that_disagrees_with_the_schema_or_header_is_refused_before_the_payload() {
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "a column renamed in the schema",
            with_fields(0, Field::new("g32", DataType::Float32, false), |_| {}),
        ),
        (
            "two columns swapped in the schema",
            with_fields(0, Field::new("f32", DataType::Float32, false), |fields| {
                fields.swap(0, 1);
            }),
        ),
        (
            "an f64 array under a Float32 column",
            with_fields(1, Field::new("f64", DataType::Float32, false), |_| {}),
        ),
        (
            "a u8 array under a Utf8 column",
            with_fields(4, Field::new("u8", DataType::Utf8, false), |_| {}),
        ),
        (
            "one column fewer in the schema",
            with_fields(0, Field::new("f32", DataType::Float32, false), |fields| {
                fields.pop();
            }),
        ),
        (
            "num_rows one more than the arrays hold",
            tampered(|parts| parts.num_rows += 1),
        ),
        ("num_rows zero", tampered(|parts| parts.num_rows = 0)),
    ];
    for (what, bytes) in &cases {
        assert_refused_whole_and_lazily(what, bytes);
    }

    // Arrays of the wrong shape: 2-D, and of the wrong length.
    for shape in [[8u64, 1].as_slice(), [4, 2].as_slice(), [7].as_slice()] {
        let elements: u64 = shape.iter().product();
        let values: Vec<u8> = (0..elements * 8).map(|i| i as u8).collect();
        let index = TensorIndex::plan([("n", DType::I64, shape)], BackendHint::Auto).unwrap();
        let mut parts = EnvelopeParts::new(Format::Dataset, DatasetType::Tabular.id());
        parts.num_rows = 8;
        parts.schema = schema_section(vec![Field::new("n", DataType::Int64, false)]);
        let bytes = aligned_parts(parts, index, &[&values], None)
            .unwrap()
            .to_bytes()
            .unwrap();
        assert_eq!(
            signal(ald::load_from_bytes(&bytes)),
            Signal::InvalidFormat,
            "shape {shape:?}"
        );
    }
}

/// `bytes` are refused with `InvalidFormat` by the whole-file load and by the lazy open.
fn assert_refused_whole_and_lazily(what: &str, bytes: &[u8]) {
    assert_eq!(
        signal(ald::load_from_bytes(bytes)),
        Signal::InvalidFormat,
        "{what}"
    );
    assert_eq!(
        signal(StreamingDataset::from_bytes(bytes, &LoadOptions::default())),
        Signal::InvalidFormat,
        "{what}, lazily"
    );
}

/// The STREAMING form of `every_type(65)` with its chunk index replaced by chunks of the given
/// `(stored_size, item_count)`, stored uncompressed; `to_bytes` recomputes every checksum.
fn rechunked(chunks: &[(u64, u64)], edit: impl FnOnce(&mut EnvelopeParts<'static>)) -> Vec<u8> {
    let mut parts = streaming_parts(&every_type(65));
    let stored = parts.payload.stored().to_vec();
    let index = ChunkIndex::from_sizes(chunks.iter().map(|&(size, items)| (size, size, items)));
    parts.payload = Payload::Chunked {
        index: index.unwrap(),
        stored: Cow::Owned(stored),
    };
    edit(&mut parts);
    parts.to_bytes().unwrap()
}

/// `bytes` (an unsigned file) with `edit` applied to them, then every checksum recomputed in
/// file order: the `prefix_crc32c` ending the tensor index and the chunk index (CRC-32C of every
/// byte before the field, docs/envelope.md §4) and the CRC32 trailer. For forms the writer
/// refuses to produce.
fn resealed(bytes: &[u8], edit: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let envelope = Envelope::parse(bytes, Format::Dataset).unwrap();
    let mut out = bytes.to_vec();
    edit(&mut out);
    for section in [Section::TensorIndex, Section::ChunkIndex] {
        let span = envelope.layout().span(section).unwrap();
        let field = (span.offset + span.len) as usize - 4;
        let crc = crc32c::crc32c(&out[..field]);
        out[field..field + 4].copy_from_slice(&crc.to_le_bytes());
    }
    let end = out.len() - envelope_core::CHECKSUM_LEN;
    let crc = crc32fast::hash(&out[..end]);
    out[end..].copy_from_slice(&crc.to_le_bytes());
    out
}

/// A STREAMING TRUENO_NATIVE dataset is exactly one chunk of every row: any other chunking is
/// refused by every loader, before the payload; so is a compressed one. The writer refuses to
/// write a chunk index whose rows differ from the header's, or compression with TRUENO_NATIVE;
/// such files are made by editing the bytes of a valid one.
#[test]
fn malformed_streaming_forms_are_refused_by_every_loader() {
    let payload_len = streaming_parts(&every_type(65)).payload.stored().len() as u64;
    // The second array starts at 320 (65 f32 values, padded to 64 bytes).
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "two chunks split at an array start",
            rechunked(&[(320, 30), (payload_len - 320, 35)], |_| {}),
            "exactly one chunk",
        ),
        (
            "every row in the first of two chunks",
            rechunked(&[(320, 65), (payload_len - 320, 0)], |_| {}),
            "exactly one chunk",
        ),
        (
            "an empty chunk before the one holding everything",
            rechunked(&[(0, 0), (payload_len, 65)], |_| {}),
            "exactly one chunk",
        ),
        (
            "one chunk of one row more than the header's",
            // Written with 66 rows everywhere, then the header says 65.
            resealed(
                &rechunked(&[(payload_len, 66)], |parts| parts.num_rows = 66),
                |bytes| bytes[24..32].copy_from_slice(&65u64.to_le_bytes()),
            ),
            "num_rows",
        ),
        (
            "one chunk and a header of one row more than the arrays hold",
            rechunked(&[(payload_len, 66)], |parts| parts.num_rows = 66),
            "num_rows",
        ),
        (
            "compressed",
            resealed(&rechunked(&[(payload_len, 65)], |_| {}), |bytes| {
                bytes[20] = Compression::ZstdL3.id();
            }),
            "compression none",
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (what, bytes, reason) in &cases {
        let error = ald::load_from_bytes(bytes).unwrap_err();
        assert_eq!(error.signal(), Signal::InvalidFormat, "{what}: {error}");
        assert!(error.to_string().contains(reason), "{what}: {error}");
        assert_eq!(
            signal(ald::read_schema(bytes)),
            Signal::InvalidFormat,
            "{what}"
        );
        assert_refused_whole_and_lazily(what, bytes);
        let path = dir.path().join("malformed.ald");
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(
            signal(ald::fs::load(&path, &LoadOptions::default())),
            Signal::InvalidFormat,
            "{what}, from a file"
        );
        // The zero-copy reader knows no schema: it checks the chunking, not the arrays' shapes
        // against num_rows (as for the ordinary form).
        if !what.contains("header of one row more") {
            let error = MappedDataset::open(&path).unwrap_err();
            assert_eq!(error.signal(), Signal::InvalidFormat, "{what}, mapped");
        }
    }
}

/// Padding between arrays must be zero: a file whose padding holds data, with every checksum
/// valid (the writer recomputes them), is refused by every loader, in both forms.
#[test]
fn non_zero_padding_between_arrays_is_refused_by_every_loader() {
    let dir = tempfile::tempdir().unwrap();
    // The first array (65 f32 values, 260 bytes) is followed by 60 bytes of padding.
    let pad = |parts: &mut EnvelopeParts<'static>| {
        let mut stored = parts.payload.stored().to_vec();
        assert_eq!(stored[260..320], [0; 60]);
        stored[300] = 0x5a;
        match &mut parts.payload {
            Payload::Whole { stored: s, .. } | Payload::Chunked { stored: s, .. } => {
                *s = Cow::Owned(stored);
            }
        }
    };
    let mut streaming = streaming_parts(&every_type(65));
    pad(&mut streaming);
    for (form, bytes) in [
        ("whole", tampered(pad)),
        ("streaming", streaming.to_bytes().unwrap()),
    ] {
        Envelope::parse(&bytes[..], Format::Dataset).expect("every checksum holds");
        let padding = |error: ald::Error| {
            assert_eq!(error.signal(), Signal::InvalidFormat, "{form}: {error}");
            assert!(error.to_string().contains("padding"), "{form}: {error}");
        };
        padding(ald::load_from_bytes(&bytes).unwrap_err());
        let path = form_path(&dir, form, 65);
        std::fs::write(&path, &bytes).unwrap();
        padding(ald::fs::load(&path, &LoadOptions::default()).unwrap_err());
        let lazy = StreamingDataset::from_bytes(&bytes[..], &LoadOptions::default());
        padding(lazy.and_then(|lazy| lazy.get_chunk(0)).unwrap_err());
        padding(MappedDataset::open(&path).unwrap_err().into());
    }
}

#[test]
fn a_bit_flip_in_an_array_is_a_checksum_mismatch_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    for (form, bytes) in forms(&every_type(65)) {
        check_bit_flip(&bytes, &form_path(&dir, form, 65));
    }
}

/// One bit of an array flipped in `bytes` (either form) is refused by every loader.
fn check_bit_flip(bytes: &[u8], path: &std::path::Path) {
    let envelope = Envelope::parse(bytes, Format::Dataset).unwrap();
    let payload = envelope.layout().span(Section::Payload).unwrap();
    let index = TensorIndex::parse(
        Format::Dataset,
        envelope.section(Section::TensorIndex).unwrap(),
    )
    .unwrap();
    let entry = index.get("i64").unwrap();
    let at = (payload.offset + entry.offset + 17) as usize;
    let mut flipped = bytes.to_vec();
    flipped[at] ^= 0x04;
    // The whole-file CRC32 refuses it when the loader computes it.
    assert_eq!(
        signal(ald::load_from_bytes(&flipped)),
        Signal::ChecksumMismatch
    );
    assert_eq!(signal(ald::read_schema(&flipped)), Signal::ChecksumMismatch);
    std::fs::write(path, &flipped).unwrap();
    assert_eq!(
        signal(ald::fs::load(path, &LoadOptions::default())),
        Signal::ChecksumMismatch
    );
    // So does the chunk's CRC-32C, for a lazily opened STREAMING file.
    let lazy = Envelope::parse_lazy(&flipped[..], Format::Dataset).unwrap();
    if lazy.chunk_index().is_some() {
        assert_eq!(signal(lazy.chunk(0)), Signal::ChecksumMismatch);
    }
    // With the trailer recomputed, a lazily opened file still never hands the array out: its
    // CRC-32C in the index no longer matches.
    let end = flipped.len() - envelope_core::CHECKSUM_LEN;
    let crc = crc32fast::hash(&flipped[..end]);
    flipped[end..].copy_from_slice(&crc.to_le_bytes());
    let lazy = StreamingDataset::from_bytes(&flipped[..], &LoadOptions::default()).unwrap();
    assert_eq!(signal(lazy.get_chunk(0)), Signal::ChecksumMismatch);
    assert_eq!(signal(lazy.get_rows(0, 1)), Signal::ChecksumMismatch);
    std::fs::write(path, &flipped).unwrap();
    assert_eq!(
        signal(MappedDataset::open(path).unwrap().get("i64")),
        Signal::ChecksumMismatch
    );
}

#[test]
fn every_single_byte_change_is_refused() {
    let data = every_type(9);
    let expected = one_batch(&data);
    for (_, bytes) in forms(&data) {
        check_byte_changes(&bytes, &expected);
    }
}

/// Every single-byte change of `bytes` (either form of a file of `expected`).
fn check_byte_changes(bytes: &[u8], expected: &RecordBatch) {
    for at in 0..bytes.len() {
        let mut damaged = bytes.to_vec();
        damaged[at] ^= 0x01;
        // Whole-file CRC32: always refused.
        assert!(ald::load_from_bytes(&damaged).is_err(), "byte {at}");
        // Lazily, with the trailer recomputed (only per-array and index checksums protect the
        // file): still refused. A byte outside every array is padding, which must be zero, so
        // no byte of the file goes unchecked (docs/zerocopy.md §2).
        let end = damaged.len() - envelope_core::CHECKSUM_LEN;
        if at >= end {
            continue;
        }
        let crc = crc32fast::hash(&damaged[..end]);
        damaged[end..].copy_from_slice(&crc.to_le_bytes());
        if let Ok(lazy) = StreamingDataset::from_bytes(&damaged[..], &LoadOptions::default())
            && let Ok(batch) = lazy.get_chunk(0)
        {
            panic!(
                "byte {at} changed and was not refused (rows equal: {})",
                batch == *expected
            );
        }
    }
}

/// A random numeric table: any number of columns of any array type, any row count.
fn numeric_table() -> impl Strategy<Value = ArrowDataset> {
    let column = (0u8..5, any::<u64>());
    (prop::collection::vec(column, 1..6), 0usize..300).prop_map(|(columns, rows)| {
        let mut fields = Vec::new();
        let mut arrays: Vec<ArrayRef> = Vec::new();
        for (position, (kind, seed)) in columns.into_iter().enumerate() {
            let value = |row: usize| seed.wrapping_mul(row as u64 + 1).rotate_left(row as u32);
            let (data_type, array): (DataType, ArrayRef) = match kind {
                0 => (
                    DataType::Float32,
                    Arc::new(Float32Array::from_iter_values(
                        (0..rows).map(|r| f32::from_bits(value(r) as u32)),
                    )),
                ),
                1 => (
                    DataType::Float64,
                    Arc::new(Float64Array::from_iter_values(
                        (0..rows).map(|r| f64::from_bits(value(r))),
                    )),
                ),
                2 => (
                    DataType::Int32,
                    Arc::new(Int32Array::from_iter_values(
                        (0..rows).map(|r| value(r) as i32),
                    )),
                ),
                3 => (
                    DataType::Int64,
                    Arc::new(Int64Array::from_iter_values(
                        (0..rows).map(|r| value(r) as i64),
                    )),
                ),
                _ => (
                    DataType::UInt8,
                    Arc::new(UInt8Array::from_iter_values(
                        (0..rows).map(|r| value(r) as u8),
                    )),
                ),
            };
            fields.push(Field::new(
                format!("c{position}"),
                data_type,
                position % 2 == 0,
            ));
            arrays.push(array);
        }
        let schema = Arc::new(Schema::new(fields));
        ArrowDataset::from_batch(RecordBatch::try_new(schema, arrays).unwrap())
    })
}

/// Bitwise comparison (NaN payloads included), through the Arrow IPC path's table.
fn same_bits(a: &RecordBatch, b: &RecordBatch) -> bool {
    a.schema() == b.schema()
        && a.num_rows() == b.num_rows()
        && a.columns().iter().zip(b.columns()).all(|(x, y)| {
            x.to_data().buffers()[0].as_slice() == y.to_data().buffers()[0].as_slice()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_numeric_tables_round_trip_bit_for_bit(data in numeric_table()) {
        let loaded = ald::load_from_bytes(&trueno(&data)).unwrap();
        let expected = one_batch(&ordinary(&data));
        prop_assert!(same_bits(&one_batch(&loaded), &expected));
        prop_assert!(same_bits(&one_batch(&loaded), &one_batch(&data)));
    }
}

#[test]
fn loaded_columns_own_aligned_memory() {
    // `ald::fs::load` maps the file and copies each array once out of the mapping (the table
    // must not refer to a mapping once loaded); `load_from_bytes` copies from the caller's bytes.
    // Either way every column lands in Arrow's 64-byte-aligned memory, equal to the original.
    let data = every_type(1001);
    let bytes = trueno(&data);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("owned.ald");
    std::fs::write(&path, &bytes).unwrap();
    let from_file = ald::fs::load(&path, &LoadOptions::default())
        .unwrap()
        .dataset;
    let from_bytes = ald::load_from_bytes(&bytes).unwrap();
    for loaded in [&from_file, &from_bytes] {
        for column in loaded.batches()[0].columns() {
            assert_eq!(column.to_data().buffers()[0].as_ptr() as usize % 64, 0);
        }
        assert!(same_bits(&one_batch(loaded), &one_batch(&data)));
    }
}
