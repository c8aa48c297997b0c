//! Projected reads (docs/ald.md §6.2): a chunk decoded with only some columns equals the chunk
//! decoded whole and then projected, for random schemas (nested types, dictionaries at the top and
//! inside structs and lists, nulls, sliced input), every compression, encrypted or not, locally
//! and from ranges; projections past the schema or with repeats are `Usage` before the chunk is
//! read; and every flipped bit of a chunk is refused by its checksum (or AES-GCM) before anything
//! of it is parsed, whatever the projection.

use std::sync::Arc;

use ald::arrow_array::builder::{ListBuilder, StringDictionaryBuilder};
use ald::arrow_array::types::{Int16Type, Int32Type};
use ald::{ArrowDataset, LoadOptions, StreamingDataset};
use arrow_array::{
    ArrayRef, BooleanArray, DictionaryArray, Float64Array, Int64Array, LargeBinaryArray,
    RecordBatch, StringArray, StructArray,
};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, Field, Fields, Schema};
use envelope_core::{Compression, Signal};
use envelope_crypto::{DecryptionKey, EncryptOptions, EncryptTo, OsRng, RecipientSecretKey};
use proptest::prelude::*;

use super::ranged::{chunk_bytes, open_ranged};
use super::{dataset, options, signal};

/// The column kinds a random schema draws from.
const KINDS: usize = 9;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Whether a slot is null (about one in four).
    fn null(&mut self) -> bool {
        self.next().is_multiple_of(4)
    }

    fn word(&mut self) -> &'static str {
        ["zéro", "un", "deux", "", "quatre ✓"][(self.next() % 5) as usize]
    }
}

/// A column of kind `kind` with `rows` rows.
fn column(kind: usize, rows: usize, rng: &mut Rng) -> ArrayRef {
    match kind {
        0 => Arc::new(Int64Array::from_iter(
            (0..rows).map(|_| (!rng.null()).then(|| rng.next() as i64)),
        )),
        1 => Arc::new(StringArray::from_iter(
            (0..rows).map(|_| (!rng.null()).then(|| rng.word())),
        )),
        2 => Arc::new(Float64Array::from_iter(
            (0..rows).map(|_| (!rng.null()).then(|| (rng.next() >> 11) as f64)),
        )),
        3 => Arc::new(BooleanArray::from_iter(
            (0..rows).map(|_| (!rng.null()).then(|| rng.next().is_multiple_of(2))),
        )),
        4 => Arc::new(
            (0..rows)
                .map(|_| (!rng.null()).then(|| rng.word()))
                .collect::<DictionaryArray<Int32Type>>(),
        ),
        5 => Arc::new(
            (0..rows)
                .map(|_| (!rng.null()).then(|| rng.word()))
                .collect::<DictionaryArray<Int16Type>>(),
        ),
        6 => {
            let mut lists = ListBuilder::new(StringDictionaryBuilder::<Int32Type>::new());
            for _ in 0..rows {
                if rng.null() {
                    lists.append(false);
                    continue;
                }
                for _ in 0..rng.next() % 4 {
                    if rng.null() {
                        lists.values().append_null();
                    } else {
                        lists.values().append_value(rng.word());
                    }
                }
                lists.append(true);
            }
            Arc::new(lists.finish())
        }
        7 => {
            let ints = column(0, rows, rng);
            let words = column(4, rows, rng);
            let fields = Fields::from(vec![
                Field::new("a", ints.data_type().clone(), true),
                Field::new("w", words.data_type().clone(), true),
            ]);
            let nulls = NullBuffer::from_iter((0..rows).map(|_| !rng.null()));
            Arc::new(StructArray::try_new(fields, vec![ints, words], Some(nulls)).unwrap())
        }
        _ => Arc::new(LargeBinaryArray::from_iter(
            (0..rows).map(|_| (!rng.null()).then(|| rng.word().as_bytes().to_vec())),
        )),
    }
}

/// A table of random columns of `kinds`, in batches cut from larger ones (so the writer sees
/// sliced arrays with offsets).
fn table(kinds: &[usize], rows: usize, seed: u64) -> ArrowDataset {
    let mut rng = Rng(seed | 1);
    let schema = Arc::new(Schema::new(
        kinds
            .iter()
            .enumerate()
            .map(|(i, &kind)| {
                Field::new(
                    format!("c{i}"),
                    column(kind, 0, &mut rng).data_type().clone(),
                    true,
                )
            })
            .collect::<Vec<_>>(),
    ));
    let mut batches = Vec::new();
    let mut left = rows;
    while left > 0 || batches.is_empty() {
        let take = left.min(1 + (rng.next() % 25) as usize);
        let skip = (rng.next() % 5) as usize;
        let columns: Vec<ArrayRef> = kinds
            .iter()
            .map(|&kind| column(kind, skip + take + 2, &mut rng).slice(skip, take))
            .collect();
        batches.push(RecordBatch::try_new(Arc::clone(&schema), columns).unwrap());
        left -= take;
    }
    ArrowDataset::new(schema, batches).unwrap()
}

/// A projection of `columns` columns from `seed`: a random selection, in a random order.
fn projection(columns: usize, seed: u64) -> Vec<usize> {
    let mut rng = Rng(seed | 1);
    let mut all: Vec<usize> = (0..columns).collect();
    for i in (1..all.len()).rev() {
        all.swap(i, (rng.next() % (i as u64 + 1)) as usize);
    }
    all.truncate((rng.next() % (columns as u64 + 1)) as usize);
    all
}

/// `data` written with `save`, encrypted to `to`.
fn sealed(data: &ArrowDataset, save: &ald::SaveOptions, to: &RecipientSecretKey) -> Vec<u8> {
    envelope_crypto::encrypt(
        &data.to_parts(save).unwrap(),
        EncryptTo::Recipient(&to.public_key()),
        EncryptOptions::default(),
        &mut OsRng,
    )
    .unwrap()
    .to_bytes()
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn projected_reads_equal_full_reads_then_projected(
        kinds in proptest::collection::vec(0..KINDS, 1..7),
        rows in 0usize..70,
        seed in any::<u64>(),
        compression in proptest::sample::select(Compression::ALL.to_vec()),
        chunk_rows in proptest::option::of(1usize..30),
        encrypted in any::<bool>(),
    ) {
        let data = table(&kinds, rows, seed);
        let wanted = projection(kinds.len(), seed.rotate_left(17));
        let save = options(compression, chunk_rows);
        let alice = RecipientSecretKey::generate(&mut OsRng);
        let bytes = if encrypted {
            sealed(&data, &save, &alice)
        } else {
            data.to_bytes(&save).unwrap()
        };
        let key = DecryptionKey::Recipient(&alice);
        let local = StreamingDataset::from_bytes(&bytes[..], &LoadOptions::default()).unwrap();
        let reader = if encrypted { local.with_key(key).unwrap() } else { local.reader() };
        for chunk in 0..local.num_chunks() {
            let whole = reader.get_chunk(chunk).unwrap();
            let projected = reader.get_chunk_projected(chunk, &wanted).unwrap();
            prop_assert_eq!(projected.num_rows(), whole.num_rows());
            prop_assert_eq!(&projected, &whole.project(&wanted).unwrap());
        }
        let total = local.num_rows();
        let start = total / 3;
        let count = (total - start).min(total / 2 + 1);
        prop_assert_eq!(
            reader.get_rows_projected(start, count, &wanted).unwrap(),
            reader.get_rows(start, count).unwrap().project(&wanted).unwrap()
        );
        if chunk_rows.is_some() {
            let load = LoadOptions { key: encrypted.then_some(key), ..LoadOptions::default() };
            let ranged = open_ranged(&bytes, 65536, &load).unwrap();
            for chunk in 0..ranged.num_chunks() {
                let stored = chunk_bytes(&ranged, &bytes, chunk);
                prop_assert_eq!(
                    ranged.decode_chunk_projected(chunk, stored, &wanted).unwrap(),
                    ranged.decode_chunk(chunk, stored).unwrap().project(&wanted).unwrap()
                );
            }
        }
    }
}

/// Every kind of column at once, each projected alone and all together in reverse, through a
/// STREAMING zstd file: the deterministic companion of the property above.
#[test]
fn each_column_alone_and_all_in_reverse_equal_the_full_read() {
    let kinds: Vec<usize> = (0..KINDS).collect();
    let data = table(&kinds, 200, 42);
    let bytes = data
        .to_bytes(&options(Compression::ZstdL3, Some(64)))
        .unwrap();
    let local = StreamingDataset::from_bytes(&bytes[..], &LoadOptions::default()).unwrap();
    let mut projections: Vec<Vec<usize>> = (0..KINDS).map(|c| vec![c]).collect();
    projections.push((0..KINDS).rev().collect());
    projections.push(Vec::new());
    for wanted in &projections {
        for chunk in 0..local.num_chunks() {
            let whole = local.get_chunk(chunk).unwrap();
            assert_eq!(
                local.get_chunk_projected(chunk, wanted).unwrap(),
                whole.project(wanted).unwrap(),
                "{wanted:?}"
            );
        }
    }
    // COUNT(*): rows, no columns.
    let empty = local.get_chunk_projected(1, &[]).unwrap();
    assert_eq!((empty.num_rows(), empty.num_columns()), (64, 0));
    let empty = local.get_rows_projected(10, 100, &[]).unwrap();
    assert_eq!((empty.num_rows(), empty.num_columns()), (100, 0));
}

#[test]
fn projections_past_the_schema_or_with_repeats_are_usage_before_the_chunk_is_read() {
    let data = dataset(300);
    let columns = data.schema().fields().len();
    let bytes = data
        .to_bytes(&options(Compression::Lz4, Some(100)))
        .unwrap();
    // Chunk 1 is damaged: a bad projection is refused before its bytes are looked at.
    let mut damaged = bytes.clone();
    damaged[super::stored_chunk(&bytes, 1).start + 3] ^= 0x40;
    let local = StreamingDataset::from_bytes(&damaged[..], &LoadOptions::default()).unwrap();
    let ranged = open_ranged(&damaged, 65536, &LoadOptions::default()).unwrap();
    let stored = chunk_bytes(&ranged, &damaged, 1);
    for (bad, expected) in [
        (
            vec![columns],
            ald::Error::NoSuchColumn {
                index: columns,
                columns,
            },
        ),
        (vec![1, 0, 1], ald::Error::DuplicateColumn { index: 1 }),
    ] {
        for error in [
            local.get_chunk_projected(1, &bad).unwrap_err(),
            local.get_rows_projected(150, 10, &bad).unwrap_err(),
            local.reader().get_chunk_projected(1, &bad).unwrap_err(),
            ranged.decode_chunk_projected(1, stored, &bad).unwrap_err(),
        ] {
            assert_eq!(error.signal(), Signal::Usage);
            assert_eq!(error.to_string(), expected.to_string());
        }
    }
    assert_eq!(
        signal(local.get_chunk_projected(1, &[0])),
        Signal::ChecksumMismatch
    );
}

/// Every bit of a chunk, flipped, is refused by the chunk's CRC-32C (`ChecksumMismatch`, not a
/// decoder's `InvalidFormat`: nothing was parsed or decompressed first) under every projection,
/// locally and from ranges; encrypted, every flipped byte fails AES-GCM.
#[test]
fn every_flipped_chunk_bit_is_refused_before_any_parse_under_a_projection() {
    let data = dataset(90);
    for compression in [Compression::None, Compression::Lz4, Compression::ZstdL3] {
        let bytes = data.to_bytes(&options(compression, Some(30))).unwrap();
        let range = super::stored_chunk(&bytes, 1);
        let ranged = open_ranged(&bytes, 65536, &LoadOptions::default()).unwrap();
        for at in range.clone() {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[at] ^= 1 << bit;
                let local =
                    StreamingDataset::from_bytes(&bad[..], &LoadOptions::default()).unwrap();
                for wanted in [&[][..], &[2], &[6, 0]] {
                    assert_eq!(
                        signal(local.get_chunk_projected(1, wanted)),
                        Signal::ChecksumMismatch,
                        "{compression:?} byte {at} bit {bit} {wanted:?}"
                    );
                }
                assert_eq!(
                    signal(local.get_rows_projected(40, 5, &[1])),
                    Signal::ChecksumMismatch
                );
                assert_eq!(
                    signal(ranged.decode_chunk_projected(1, &bad[range.clone()], &[2])),
                    Signal::ChecksumMismatch
                );
            }
        }
    }
    let alice = RecipientSecretKey::generate(&mut OsRng);
    let bytes = sealed(&data, &options(Compression::ZstdL3, Some(30)), &alice);
    let key = DecryptionKey::Recipient(&alice);
    let range = super::stored_chunk(&bytes, 1);
    let load = LoadOptions {
        key: Some(key),
        ..LoadOptions::default()
    };
    let ranged = open_ranged(&bytes, 65536, &load).unwrap();
    for at in range.clone() {
        let mut bad = bytes.clone();
        bad[at] ^= 0x08;
        let local = StreamingDataset::from_bytes(&bad[..], &LoadOptions::default()).unwrap();
        let reader = local.with_key(key).unwrap();
        assert_eq!(
            signal(reader.get_chunk_projected(1, &[2])),
            Signal::DecryptionFailed,
            "byte {at}"
        );
        assert_eq!(
            signal(ranged.decode_chunk_projected(1, &bad[range.clone()], &[])),
            Signal::DecryptionFailed
        );
    }
}

/// A TRUENO_NATIVE file (one checksummed array per column): a projection checks and rebuilds
/// only its arrays, so damage in another array does not stop it, and damage in a projected one
/// does.
#[test]
fn trueno_native_projections_check_and_rebuild_only_their_arrays() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, false),
        Field::new("b", DataType::Float64, false),
    ]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(Int64Array::from_iter_values(0..500)),
            Arc::new(Float64Array::from_iter_values(
                (0..500).map(|i| f64::from(i) / 4.0),
            )),
        ],
    )
    .unwrap();
    let data = ArrowDataset::from_batch(batch.clone());
    let options = ald::aligned::TruenoOptions {
        backend: zerocopy_trueno::BackendHint::Avx2,
        streaming: true,
    };
    let bytes = ald::aligned::trueno_parts_with(
        &data,
        ald::DatasetType::Tabular,
        &ald::Metadata::default(),
        &options,
    )
    .unwrap()
    .to_bytes()
    .unwrap();
    let local = StreamingDataset::from_bytes(&bytes[..], &LoadOptions::default()).unwrap();
    for wanted in [&[][..], &[1], &[1, 0]] {
        assert_eq!(
            local.get_chunk_projected(0, wanted).unwrap(),
            batch.project(wanted).unwrap()
        );
    }
    // Damage the last byte of array "b" (the payload's last array).
    let index = local.file().arrays().unwrap();
    let b = &index.entries()[1];
    let payload = local.chunk_file_range(0).unwrap();
    let at = (payload.start + b.offset + b.size_bytes - 1) as usize;
    let mut damaged = bytes.clone();
    damaged[at] ^= 0x01;
    let local = StreamingDataset::from_bytes(&damaged[..], &LoadOptions::default()).unwrap();
    assert_eq!(
        local.get_chunk_projected(0, &[0]).unwrap(),
        batch.project(&[0]).unwrap()
    );
    assert_eq!(
        signal(local.get_chunk_projected(0, &[1])),
        Signal::ChecksumMismatch
    );
    assert_eq!(signal(local.get_chunk(0)), Signal::ChecksumMismatch);
}
