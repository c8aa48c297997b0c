//! Integration tests of the `ald` crate through its public API: round trips through every
//! compression, whole and STREAMING; projected reads; every Andon signal of 000 §5.0; corruption
//! sweeps; interchange round trips.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    clippy::cast_sign_loss,
    reason = "test tables are small; sizes and offsets fit every type involved"
)]

mod fuzz_check;
mod fuzz_check_interchange;
mod fuzz_corpus;
mod projection;
mod ranged;
#[path = "../../../tests/complexity/scaling.rs"]
mod scaling;
mod train;
mod trueno;
mod verified_bytes;
mod watermarking;

use std::sync::Arc;

use ald::interchange::{FileKind, ReadOptions, Source};
use ald::{
    ArrowDataset, DatasetCard, DatasetType, LicenseBlock, LicenseFlags, LoadOptions, Metadata,
    SaveOptions, StreamingDataset,
};
use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int64Array, RecordBatch,
    StringArray, TimestampMillisecondArray,
};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use envelope_core::{Compression, Envelope, EnvelopeParts, Format, Signal};
use envelope_crypto::{
    Argon2Params, DecryptionKey, EncryptOptions, EncryptTo, OsRng, Password, RecipientSecretKey,
};
use envelope_sign::{Policy, SigningKey, SigningPublicKey, TrustedKeys};
use proptest::prelude::*;

const NOW: u64 = 1_800_000_000;

fn schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("score", DataType::Float64, true),
        Field::new("name", DataType::Utf8, true),
        Field::new("ok", DataType::Boolean, true),
        Field::new("day", DataType::Date32, true),
        Field::new(
            "at",
            DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into())),
            true,
        ),
        Field::new("price", DataType::Decimal128(12, 2), true),
    ]))
}

/// A rendered schema (every type of the sample table) parses back as `--schema` text; an entry
/// without `:` or with a type Arrow does not know is `Usage`.
#[test]
fn rendered_schemas_parse_back() {
    let text = ald::render_schema(&schema());
    assert_eq!(
        ald::interchange::parse_schema_text(&text).unwrap(),
        schema()
    );
    for wrong in ["a Int64", "a: NotAType"] {
        assert_eq!(
            signal(ald::interchange::parse_schema_text(wrong)),
            Signal::Usage
        );
    }
}

/// Where the stored bytes of STREAMING chunk `chunk` of the file `bytes` lie in it.
fn stored_chunk(bytes: &[u8], chunk: usize) -> std::ops::Range<usize> {
    let envelope = Envelope::parse(bytes, Format::Dataset).unwrap();
    let payload = envelope
        .layout()
        .span(envelope_core::Section::Payload)
        .unwrap();
    let entry = envelope.chunk_index().unwrap().entries()[chunk];
    let start = (payload.offset + entry.stored_offset) as usize;
    start..start + entry.stored_size as usize
}

/// Row `i` of the sample table; every seventh value is null.
fn table(start: i64, rows: usize) -> RecordBatch {
    let ids: Vec<i64> = (start..start + rows as i64).collect();
    let null = |i: &i64| i % 7 == 3;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ids.clone())),
        Arc::new(Float64Array::from_iter(
            ids.iter().map(|i| (!null(i)).then_some(*i as f64 * 0.25)),
        )),
        Arc::new(StringArray::from_iter(
            ids.iter()
                .map(|i| (!null(i)).then(|| format!("row {i} ünï"))),
        )),
        Arc::new(BooleanArray::from_iter(
            ids.iter().map(|i| (!null(i)).then_some(i % 2 == 0)),
        )),
        Arc::new(Date32Array::from_iter(
            ids.iter().map(|i| (!null(i)).then(|| 19_000 + *i as i32)),
        )),
        Arc::new(
            TimestampMillisecondArray::from_iter(
                ids.iter()
                    .map(|i| (!null(i)).then(|| 1_700_000_000_000 + i * 1000)),
            )
            .with_timezone("UTC"),
        ),
        Arc::new(
            Decimal128Array::from_iter(
                ids.iter().map(|i| (!null(i)).then(|| i128::from(*i) * 101)),
            )
            .with_precision_and_scale(12, 2)
            .unwrap(),
        ),
    ];
    RecordBatch::try_new(schema(), columns).unwrap()
}

fn dataset(rows: usize) -> ArrowDataset {
    ArrowDataset::new(
        schema(),
        vec![
            table(0, rows / 2),
            table((rows / 2) as i64, rows - rows / 2),
        ],
    )
    .unwrap()
}

fn options(compression: Compression, chunk_rows: Option<usize>) -> SaveOptions {
    let mut options = SaveOptions::new(DatasetType::TimeSeries, compression);
    options.chunk_rows = chunk_rows;
    options.metadata = Metadata {
        card: Some(DatasetCard {
            name: "sample".into(),
            version: "1.0.0".into(),
            ..DatasetCard::default()
        }),
        ..Metadata::default()
    };
    options
}

fn rows(dataset: &ArrowDataset) -> RecordBatch {
    dataset.to_batch().unwrap()
}

/// The Andon signal of a failure of `ald` or of the envelope below it (the tests of every module
/// check failures by their signal).
pub(crate) fn signal<T: std::fmt::Debug>(result: Result<T, impl Into<ald::Error>>) -> Signal {
    result.map_err(Into::into).unwrap_err().signal()
}

#[test]
fn every_compression_round_trips_whole_and_streaming() {
    let data = dataset(1000);
    for compression in Compression::ALL {
        for chunk_rows in [None, Some(1), Some(64), Some(1000), Some(5000)] {
            let bytes = data.to_bytes(&options(compression, chunk_rows)).unwrap();
            let loaded = ald::load_from_bytes_with(&bytes, &LoadOptions::default()).unwrap();
            assert_eq!(
                rows(&loaded.dataset),
                rows(&data),
                "{compression:?} {chunk_rows:?}"
            );
            assert_eq!(loaded.dataset_type, DatasetType::TimeSeries);
            assert_eq!(loaded.metadata.card.unwrap().name, "sample");
        }
    }
}

#[test]
fn streaming_chunks_and_rows_across_boundaries() {
    let data = dataset(1000);
    let all = rows(&data);
    for compression in [Compression::None, Compression::ZstdL3, Compression::Lz4] {
        let bytes = data.to_bytes(&options(compression, Some(64))).unwrap();
        let streaming = StreamingDataset::from_bytes(&bytes[..], &LoadOptions::default()).unwrap();
        assert_eq!(streaming.num_rows(), 1000);
        assert_eq!(streaming.num_chunks(), 16);
        assert_eq!(streaming.get_chunk(3).unwrap(), all.slice(192, 64));
        assert_eq!(streaming.get_chunk(15).unwrap(), all.slice(960, 40));
        for (start, count) in [
            (0, 0),
            (0, 1),
            (60, 10),
            (63, 130),
            (999, 1),
            (0, 1000),
            (500, 500),
        ] {
            assert_eq!(
                streaming.get_rows(start, count).unwrap(),
                all.slice(start as usize, count as usize),
                "{start}+{count}"
            );
        }
        let chunks: Vec<RecordBatch> = streaming.chunks().map(Result::unwrap).collect();
        assert_eq!(
            arrow_select::concat::concat_batches(&schema(), &chunks).unwrap(),
            all
        );
        assert_eq!(signal(streaming.get_rows(999, 2)), Signal::Usage);
        assert_eq!(signal(streaming.get_chunk(16)), Signal::InvalidFormat);
    }
}

#[test]
fn a_whole_file_opens_as_one_chunk() {
    let data = dataset(100);
    let bytes = data.to_bytes(&options(Compression::ZstdL3, None)).unwrap();
    let streaming = StreamingDataset::from_bytes(&bytes[..], &LoadOptions::default()).unwrap();
    assert_eq!(streaming.num_chunks(), 1);
    assert_eq!(
        streaming.get_rows(10, 20).unwrap(),
        rows(&data).slice(10, 20)
    );
}

#[test]
fn empty_tables_round_trip() {
    let no_batch = ArrowDataset::new(schema(), vec![]).unwrap();
    // A batch of zero rows has an empty body, which Arrow's decoder completes only when more bytes
    // arrive: alone, first, between others and last.
    let zero = table(0, 0);
    let zero_rows = ArrowDataset::new(schema(), vec![zero.clone()]).unwrap();
    let between = ArrowDataset::new(
        schema(),
        vec![zero.clone(), table(0, 3), zero.clone(), table(3, 2), zero],
    )
    .unwrap();
    for dataset in [&no_batch, &zero_rows, &between] {
        for chunk_rows in [None, Some(10)] {
            for compression in [Compression::None, Compression::ZstdL3] {
                let bytes = dataset.to_bytes(&options(compression, chunk_rows)).unwrap();
                let loaded = ald::load_from_bytes(&bytes).unwrap();
                assert_eq!(loaded.num_rows(), dataset.num_rows());
                assert_eq!(**loaded.schema(), *schema());
                assert_eq!(rows(&loaded), rows(dataset));
            }
        }
    }
}

fn cheap_password() -> (Password, Argon2Params) {
    let params = Argon2Params {
        m_cost_kib: 1024,
        t_cost: 1,
        p_cost: 1,
    };
    (Password::new("correct horse"), params)
}

#[test]
fn encrypted_files_load_whole_and_chunk_by_chunk() {
    let data = dataset(500);
    let all = rows(&data);
    let alice = RecipientSecretKey::generate(&mut OsRng);
    let (password, params) = cheap_password();
    for chunk_rows in [None, Some(50)] {
        for to in [
            EncryptTo::Recipient(&alice.public_key()),
            EncryptTo::Password {
                password: &password,
                params,
            },
        ] {
            let parts = data
                .to_parts(&options(Compression::ZstdL3, chunk_rows))
                .unwrap();
            let sealed =
                envelope_crypto::encrypt(&parts, to, EncryptOptions::default(), &mut OsRng)
                    .unwrap()
                    .to_bytes()
                    .unwrap();
            let key = match to {
                EncryptTo::Recipient(_) => DecryptionKey::Recipient(&alice),
                _ => DecryptionKey::Password(&password),
            };
            // Without a key: DecryptionFailed, after every other check passed.
            assert_eq!(
                signal(ald::load_from_bytes(&sealed)),
                Signal::DecryptionFailed
            );
            let with_key = LoadOptions {
                key: Some(key),
                ..LoadOptions::default()
            };
            let loaded = ald::load_from_bytes_with(&sealed, &with_key).unwrap();
            assert_eq!(rows(&loaded.dataset), all);

            let streaming =
                StreamingDataset::from_bytes(&sealed[..], &LoadOptions::default()).unwrap();
            assert_eq!(signal(streaming.get_chunk(0)), Signal::DecryptionFailed);
            let reader = streaming.with_key(key).unwrap();
            assert_eq!(reader.get_rows(45, 10).unwrap(), all.slice(45, 10));

            let wrong = RecipientSecretKey::generate(&mut OsRng);
            let wrong_password = Password::new("wrong");
            let wrong_key = match to {
                EncryptTo::Recipient(_) => DecryptionKey::Recipient(&wrong),
                _ => DecryptionKey::Password(&wrong_password),
            };
            let wrong_options = LoadOptions {
                key: Some(wrong_key),
                ..LoadOptions::default()
            };
            assert_eq!(
                signal(ald::load_from_bytes_with(&sealed, &wrong_options)),
                Signal::DecryptionFailed
            );
        }
    }
}

fn publisher() -> (SigningKey, TrustedKeys) {
    let key = SigningKey::from_bytes(&[9; 32]);
    let trusted = TrustedKeys::from_keys([SigningPublicKey::of(&key)]);
    (key, trusted)
}

#[test]
fn signature_policy_is_checked_before_the_payload() {
    let (key, trusted) = publisher();
    let bytes = dataset(50)
        .to_bytes(&options(Compression::Lz4, None))
        .unwrap();
    let signed = envelope_sign::sign(&bytes, &key).unwrap();
    let require = LoadOptions {
        signature: Some(Policy::RequireSignature { trusted: &trusted }),
        ..LoadOptions::default()
    };
    let loaded = ald::load_from_bytes_with(&signed, &require).unwrap();
    assert_eq!(loaded.signer, Some(SigningPublicKey::of(&key)));
    // Unsigned, or signed by someone else: SignatureInvalid.
    assert_eq!(
        signal(ald::load_from_bytes_with(&bytes, &require)),
        Signal::SignatureInvalid
    );
    let stranger = envelope_sign::sign(&bytes, &SigningKey::from_bytes(&[1; 32])).unwrap();
    assert_eq!(
        signal(ald::load_from_bytes_with(&stranger, &require)),
        Signal::SignatureInvalid
    );
    // A changed payload byte with a recomputed CRC: the signature catches it.
    let mut forged = signed.clone();
    let envelope = Envelope::parse(&signed[..], Format::Dataset).unwrap();
    let payload = envelope
        .layout()
        .span(envelope_core::Section::Payload)
        .unwrap();
    forged[payload.offset as usize + 3] ^= 0x40;
    test_support::fix_crc32_trailer(&mut forged);
    assert_eq!(
        signal(ald::load_from_bytes_with(&forged, &require)),
        Signal::SignatureInvalid
    );
}

fn license(expires_at: u64) -> LicenseBlock {
    let mut block = LicenseBlock::new([5; 16], "Acme Corp", NOW - 1000, expires_at);
    block.flags = LicenseFlags::EXPIRATION_ENFORCED;
    block
}

#[test]
fn commercial_packages_open_until_they_expire() {
    let (key, trusted) = publisher();
    let alice = RecipientSecretKey::generate(&mut OsRng);
    let data = dataset(300);
    for chunk_rows in [None, Some(100)] {
        let package = ald::commercial::CommercialPackage {
            license: license(NOW + 10),
            signer: &key,
            encrypt_to: Some(EncryptTo::Recipient(&alice.public_key())),
            options: EncryptOptions::default(),
        };
        let bytes = ald::commercial::package_commercial(
            &data,
            &options(Compression::ZstdL3, chunk_rows),
            &package,
            None,
            &mut OsRng,
        )
        .unwrap();
        let key_of_alice = Some(DecryptionKey::Recipient(&alice));
        let loaded =
            ald::commercial::load_commercial(&bytes, &trusted, key_of_alice, NOW, None).unwrap();
        assert_eq!(rows(&loaded.dataset), rows(&data));
        assert!(loaded.license.unwrap().is_for("Acme Corp"));
        assert_eq!(
            signal(ald::commercial::load_commercial(
                &bytes,
                &trusted,
                key_of_alice,
                NOW + 10,
                None
            )),
            Signal::LicenseExpired
        );
        assert_eq!(
            signal(ald::commercial::load_commercial(
                &bytes, &trusted, None, NOW, None
            )),
            Signal::DecryptionFailed
        );
        let other = Schema::new(vec![Field::new("id", DataType::Int32, false)]);
        assert_eq!(
            signal(ald::commercial::load_commercial(
                &bytes,
                &trusted,
                key_of_alice,
                NOW,
                Some(&other)
            )),
            Signal::SchemaMismatch
        );
        assert_eq!(
            signal(ald::commercial::load_commercial(
                &bytes,
                &TrustedKeys::new(),
                key_of_alice,
                NOW,
                None
            )),
            Signal::SignatureInvalid
        );
        // The general loader enforces the license too.
        let expired = LoadOptions {
            now_unix: Some(NOW + 10),
            key: key_of_alice,
            ..LoadOptions::default()
        };
        assert_eq!(
            signal(ald::load_from_bytes_with(&bytes, &expired)),
            Signal::LicenseExpired
        );
        assert_eq!(
            signal(ald::load_from_bytes_with(&bytes, &LoadOptions::default())),
            Signal::Usage
        );
    }
}

/// The flag is a claim about the content: without a watermark to embed, it is refused.
#[test]
fn a_watermarked_license_without_a_watermark_is_refused() {
    let (key, _) = publisher();
    let mut block = license(NOW + 10);
    block.flags = block.flags.with(LicenseFlags::WATERMARKED);
    let package = ald::commercial::CommercialPackage {
        license: block,
        signer: &key,
        encrypt_to: None,
        options: EncryptOptions::default(),
    };
    let result = ald::commercial::package_commercial(
        &dataset(10),
        &SaveOptions::default(),
        &package,
        None,
        &mut OsRng,
    );
    assert_eq!(signal(result), Signal::Usage);
}

#[test]
fn expected_schema_is_checked_before_the_payload() {
    let bytes = dataset(20)
        .to_bytes(&options(Compression::ZstdL3, None))
        .unwrap();
    let same = LoadOptions {
        expected_schema: Some(&schema()),
        ..LoadOptions::default()
    };
    let expected = schema();
    let same = LoadOptions {
        expected_schema: Some(&expected),
        ..same
    };
    assert!(ald::load_from_bytes_with(&bytes, &same).is_ok());
    let other = Schema::new(vec![Field::new("id", DataType::Int64, true)]);
    let error = ald::load_from_bytes_with(
        &bytes,
        &LoadOptions {
            expected_schema: Some(&other),
            ..LoadOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(error.signal(), Signal::SchemaMismatch);
    assert!(
        error
            .to_string()
            .contains("expected {id: Int64}, found {id: Int64 not null")
    );
}

#[test]
fn header_signals_invalid_magic_version_and_checksum() {
    let bytes = dataset(20)
        .to_bytes(&options(Compression::None, None))
        .unwrap();
    let mut magic = bytes.clone();
    magic[0] = b'X';
    assert_eq!(signal(ald::load_from_bytes(&magic)), Signal::InvalidFormat);
    let mut version = bytes.clone();
    version[4] = 9;
    assert_eq!(
        signal(ald::load_from_bytes(&version)),
        Signal::UnsupportedVersion
    );
    let mut flipped = bytes.clone();
    let at = flipped.len() / 2;
    flipped[at] ^= 1;
    assert_eq!(
        signal(ald::load_from_bytes(&flipped)),
        Signal::ChecksumMismatch
    );
    // A .apr file is not a dataset.
    let model = EnvelopeParts::new(Format::Model, 1).to_bytes().unwrap();
    assert_eq!(signal(ald::load_from_bytes(&model)), Signal::InvalidFormat);
}

/// Header fields that pass the envelope's checks but not the dataset's (an undefined dataset
/// type; a `num_rows` the payload disagrees with) are `InvalidFormat`.
#[test]
fn header_fields_the_dataset_disagrees_with_are_invalid_format() {
    type Change = fn(&mut EnvelopeParts<'_>);
    let changes: [(&str, Change); 2] = [
        ("undefined dataset type", |parts| parts.type_id = 0x0005),
        ("num_rows", |parts| parts.num_rows = 6),
    ];
    for (what, change) in changes {
        let mut parts = dataset(5).to_parts(&SaveOptions::default()).unwrap();
        change(&mut parts);
        let bytes = parts.to_bytes().unwrap();
        assert_eq!(
            signal(ald::load_from_bytes(&bytes)),
            Signal::InvalidFormat,
            "{what}"
        );
    }
}

/// Payloads that pass the checksum (rewritten with it) but break a rule of docs/ald.md §5: each
/// is refused with `InvalidFormat` naming the rule, stored and compressed alike.
#[test]
fn malformed_payload_messages_are_refused_by_name() {
    let good = dataset(5).to_parts(&SaveOptions::default()).unwrap();
    let payload = match &good.payload {
        envelope_core::Payload::Whole { stored, .. } => stored.to_vec(),
        envelope_core::Payload::Chunked { .. } => unreachable!("saved whole"),
    };
    let with = |tail: &[u8]| [payload.as_slice(), tail].concat();
    let mut not_a_flatbuffer = vec![0xFF, 0xFF, 0xFF, 0xFF, 8, 0, 0, 0];
    not_a_flatbuffer.extend_from_slice(&[0xEE; 8]);
    let cases: [(&str, Vec<u8>); 5] = [
        ("continuation marker", with(&[1, 2, 3, 4, 5, 6, 7, 8])),
        (
            "end-of-stream marker inside",
            with(&[0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0]),
        ),
        ("runs past the end", payload[..payload.len() - 10].to_vec()),
        ("runs past the end", with(&[0xFF, 0xFF])),
        ("not a Message flatbuffer", with(&not_a_flatbuffer)),
    ];
    for compression in [Compression::None, Compression::ZstdL3, Compression::Lz4] {
        for (rule, bad) in &cases {
            let mut parts = good.clone();
            parts.compression = compression;
            parts.payload = envelope_core::Payload::compressed(compression, bad).unwrap();
            let bytes = parts.to_bytes().unwrap();
            let error = ald::load_from_bytes(&bytes).unwrap_err();
            assert_eq!(
                error.signal(),
                Signal::InvalidFormat,
                "{compression} {rule}: {error}"
            );
            assert!(
                error.to_string().contains(rule),
                "{compression} {rule}: {error}"
            );
        }
    }
}

/// Every damaged byte is refused, with one documented exception: a STREAMING file loads in one
/// pass (docs/envelope.md §4.1), every byte it uses checked by a CRC-32C, so its CRC32 trailer is
/// not read; damage there still loads, and must load the very same rows.
#[test]
fn every_single_byte_corruption_is_refused() {
    for chunk_rows in [None, Some(3)] {
        let data = dataset(8);
        let bytes = data
            .to_bytes(&options(Compression::ZstdL3, chunk_rows))
            .unwrap();
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 0xA5;
            let in_trailer = at >= bytes.len() - 4;
            match ald::load_from_bytes(&bad) {
                Ok(loaded) if chunk_rows.is_some() && in_trailer => {
                    assert_eq!(rows(&loaded), rows(&data));
                }
                loaded => assert!(loaded.is_err(), "byte {at} of {}", bytes.len()),
            }
            let mut cut = bytes.clone();
            cut.truncate(at);
            assert!(ald::load_from_bytes(&cut).is_err());
        }
    }
}

fn any_batch() -> impl Strategy<Value = RecordBatch> {
    (0usize..60, any::<u64>()).prop_map(|(rows, seed)| {
        let mut state = seed | 1;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let ints: Int64Array = (0..rows)
            .map(|_| (next() % 5 != 0).then(|| next() as i64))
            .collect();
        let floats: Float64Array = (0..rows)
            .map(|_| (next() % 4 != 0).then(|| f64::from_bits(next() >> 2)))
            .collect();
        let strings: StringArray = (0..rows)
            .map(|_| (next() % 3 != 0).then(|| "é✓x".repeat((next() % 5) as usize)))
            .collect();
        let bools: BooleanArray = (0..rows)
            .map(|_| (next() % 3 != 0).then(|| next() % 2 == 0))
            .collect();
        let stamps = TimestampMillisecondArray::from_iter(
            (0..rows).map(|_| (next() % 3 != 0).then(|| (next() >> 20) as i64)),
        );
        let decimals = Decimal128Array::from_iter(
            (0..rows).map(|_| (next() % 3 != 0).then(|| i128::from(next() as i32))),
        )
        .with_precision_and_scale(20, 3)
        .unwrap();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(ints),
            Arc::new(floats),
            Arc::new(strings),
            Arc::new(bools),
            Arc::new(stamps),
            Arc::new(decimals),
        ];
        let fields: Vec<Field> = ["i", "f", "s", "b", "t", "d"]
            .iter()
            .zip(&columns)
            .map(|(name, column)| Field::new(*name, column.data_type().clone(), true))
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).unwrap()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn random_batches_round_trip_through_every_compression(
        batches in proptest::collection::vec(any_batch(), 1..4),
        compression in proptest::sample::select(Compression::ALL.to_vec()),
        chunk_rows in proptest::option::of(1usize..40),
    ) {
        let schema = batches[0].schema();
        let data = ArrowDataset::new(schema, batches).unwrap();
        let bytes = data.to_bytes(&options(compression, chunk_rows)).unwrap();
        let loaded = ald::load_from_bytes(&bytes).unwrap();
        prop_assert_eq!(loaded.to_batch().unwrap(), data.to_batch().unwrap());
        let streaming = StreamingDataset::from_bytes(&bytes[..], &LoadOptions::default()).unwrap();
        let total = data.num_rows();
        let start = total / 3;
        prop_assert_eq!(
            streaming.get_rows(start, total - start).unwrap(),
            data.to_batch().unwrap().slice(start as usize, (total - start) as usize)
        );
    }

    #[test]
    fn random_bytes_never_panic_the_loader(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = ald::load_from_bytes(&bytes);
    }
}

// ---- native files and interchange ----

#[test]
fn files_save_load_and_stream_from_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data.ald");
    let data = dataset(1000);
    ald::fs::save(&path, &data, &options(Compression::ZstdL3, Some(100))).unwrap();
    let loaded = ald::fs::load(&path, &LoadOptions::default()).unwrap();
    assert_eq!(rows(&loaded.dataset), rows(&data));
    let streaming = StreamingDataset::open(&path, &LoadOptions::default()).unwrap();
    streaming.prefetch(4);
    streaming.prefetch(400);
    assert_eq!(
        streaming.get_rows(450, 100).unwrap(),
        rows(&data).slice(450, 100)
    );
    let info = ald::fs::inspect(&path).unwrap();
    assert_eq!((info.num_rows, info.num_chunks), (1000, 10));
    assert_eq!(info.dataset_type, "TIME_SERIES");
    assert_eq!(info.columns[0], "id: Int64 not null");
}

/// `ald::fs::load` decodes a large STREAMING file's chunks on several threads: same table as the
/// in-memory loader, and a damaged chunk (checked lazily, by its CRC-32C) is still refused.
#[test]
fn large_streaming_files_load_in_parallel_with_the_same_verdicts() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, false),
    ]));
    let count = 1_200_000i64; // 19 MB decoded: past the threshold for threads
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(Int64Array::from_iter_values(0..count)),
            Arc::new(Float64Array::from_iter_values(
                (0..count).map(|i| i as f64 * 0.25),
            )),
        ],
    )
    .unwrap();
    let data = ArrowDataset::new(schema, vec![batch.clone()]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for compression in [Compression::None, Compression::Lz4, Compression::ZstdL3] {
        let path = dir.path().join(format!("large-{compression}.ald"));
        ald::fs::save(&path, &data, &options(compression, Some(100_000))).unwrap();
        let loaded = ald::fs::load(&path, &LoadOptions::default()).unwrap();
        assert_eq!(loaded.dataset.batches().len(), 12);
        assert_eq!(rows(&loaded.dataset), batch);
        let good = std::fs::read(&path).unwrap();
        assert_eq!(
            rows(&ald::load_from_bytes(&good).unwrap()),
            batch,
            "{compression}: the one-thread path"
        );

        // A flipped byte in a chunk of either thread's run, or in the header's metadata size
        // (which the lazy walk finds out of bounds before any CRC): refused with the whole-file
        // verdict, `ChecksumMismatch`, by both the parallel and the in-memory loader. (The CRC32
        // trailer itself is not read: the lazy rules cover every other byte, docs/envelope.md
        // §4.1.)
        let second = stored_chunk(&good, 2);
        let seventh = stored_chunk(&good, 7);
        for at in [second.start + 5, seventh.start + seventh.len() / 2, 8] {
            let mut bytes = good.clone();
            bytes[at] ^= 0x10;
            std::fs::write(&path, &bytes).unwrap();
            let error = ald::fs::load(&path, &LoadOptions::default()).unwrap_err();
            assert_eq!(
                error.signal(),
                Signal::ChecksumMismatch,
                "{compression}, byte {at}: {error}"
            );
            let error = ald::load_from_bytes(&bytes).unwrap_err();
            assert_eq!(
                error.signal(),
                Signal::ChecksumMismatch,
                "{compression}, byte {at}, in memory: {error}"
            );
        }
    }
}

#[test]
fn the_streaming_writer_matches_the_in_memory_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("streamed.ald");
    let data = dataset(777);
    let save = options(Compression::Lz4, Some(100));
    let mut writer = ald::fs::StreamingWriter::create(&path, schema(), save.clone()).unwrap();
    for start in (0..777).step_by(50) {
        writer
            .write(&table(start, 50.min(777 - start as usize)))
            .unwrap();
    }
    assert_eq!(writer.finish().unwrap(), 777);
    let written = std::fs::read(&path).unwrap();
    // Same rows, same chunking (the bytes may differ in the unused bits of validity bitmaps,
    // which depend on how the input was batched).
    let expected = data.to_bytes(&save).unwrap();
    let (a, b) = (
        Envelope::parse(&written[..], Format::Dataset).unwrap(),
        Envelope::parse(&expected[..], Format::Dataset).unwrap(),
    );
    let items = |envelope: &Envelope<&[u8]>| {
        envelope
            .chunk_index()
            .unwrap()
            .entries()
            .iter()
            .map(|entry| entry.item_count)
            .collect::<Vec<_>>()
    };
    assert_eq!(items(&a), items(&b));
    assert_eq!(rows(&ald::load_from_bytes(&written).unwrap()), rows(&data));
    // No spill file is left behind.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    let other =
        RecordBatch::try_from_iter([("x", Arc::new(Int64Array::from(vec![1])) as ArrayRef)])
            .unwrap();
    let mut writer = ald::fs::StreamingWriter::create(&path, schema(), save).unwrap();
    assert_eq!(signal(writer.write(&other)), Signal::SchemaMismatch);
}

fn interchange_table() -> ArrowDataset {
    // The types every interchange format carries with the same Arrow type on reading back
    // (CSV inference: Int64, Float64, Utf8, Boolean, Date32, Timestamp).
    let ids: Vec<i64> = (0..300).collect();
    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(Int64Array::from(ids.clone())) as ArrayRef),
        (
            "score",
            Arc::new(Float64Array::from_iter(
                ids.iter().map(|i| (i % 5 != 1).then(|| *i as f64 / 8.0)),
            )) as ArrayRef,
        ),
        (
            "name",
            Arc::new(StringArray::from_iter(
                ids.iter()
                    .map(|i| (i % 6 != 2).then(|| format!("n{i}, \"q\""))),
            )) as ArrayRef,
        ),
        (
            "ok",
            Arc::new(BooleanArray::from_iter(
                ids.iter().map(|i| (i % 4 != 0).then_some(i % 3 == 0)),
            )) as ArrayRef,
        ),
    ])
    .unwrap();
    ArrowDataset::from_batch(batch)
}

#[test]
fn interchange_files_survive_a_trip_through_ald() {
    let dir = tempfile::tempdir().unwrap();
    let data = interchange_table();
    for extension in ["csv", "jsonl", "parquet", "arrow"] {
        let original = dir.path().join(format!("in.{extension}"));
        ald::interchange::write_file(&original, &data).unwrap();
        let source = Source::open(&original, ReadOptions::default()).unwrap();
        let read = source.read_all().unwrap();
        for chunk_rows in [None, Some(64)] {
            let ald_path = dir.path().join(format!("{extension}-{chunk_rows:?}.ald"));
            let mut nothing = |_| {};
            ald::interchange::convert(
                &source,
                &ald_path,
                &options(Compression::ZstdL3, chunk_rows),
                &mut nothing,
            )
            .unwrap();
            let back = dir.path().join(format!("back-{chunk_rows:?}.{extension}"));
            let ald_source = Source::open(&ald_path, ReadOptions::default()).unwrap();
            ald::interchange::convert(&ald_source, &back, &SaveOptions::default(), &mut nothing)
                .unwrap();
            let again = Source::open(&back, ReadOptions::default())
                .unwrap()
                .read_all()
                .unwrap();
            assert_eq!(
                again.to_batch().unwrap(),
                read.to_batch().unwrap(),
                "{extension}"
            );
            if extension == "csv" || extension == "jsonl" {
                assert_eq!(
                    std::fs::read(&back).unwrap(),
                    std::fs::read(&original).unwrap()
                );
            }
        }
        // Parquet and Arrow IPC carry the schema itself (nullability included); text formats
        // are read back with an inferred, all-nullable schema.
        if extension == "parquet" || extension == "arrow" {
            assert_eq!(
                read.to_batch().unwrap(),
                data.to_batch().unwrap(),
                "{extension}"
            );
        }
        assert!(!FileKind::of(&original).unwrap().name().is_empty());
    }
}

#[test]
fn csv_takes_an_explicit_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("typed.csv");
    std::fs::write(&path, "a,b\n1,x\n2,\n").unwrap();
    let schema = ald::interchange::parse_schema_text("a: Int32 not null, b: Utf8").unwrap();
    let source = Source::open(
        &path,
        ReadOptions {
            schema: Some(schema.clone()),
            ..ReadOptions::default()
        },
    )
    .unwrap();
    let read = source.read_all().unwrap();
    assert_eq!(read.schema(), &schema);
    assert_eq!(read.num_rows(), 2);
    let inferred = Source::open(&path, ReadOptions::default()).unwrap();
    assert_eq!(inferred.schema().field(0).data_type(), &DataType::Int64);
    std::fs::write(&path, "a,b\nnot a number,x\n").unwrap();
    let bad = Source::open(
        &path,
        ReadOptions {
            schema: Some(schema),
            ..ReadOptions::default()
        },
    )
    .unwrap();
    // A value that does not fit its column is a malformed input, named as such.
    let error = bad.read_all().unwrap_err();
    assert_eq!(error.signal(), Signal::InvalidFormat);
    assert!(
        error
            .to_string()
            .starts_with("InvalidFormat: CSV: row 1, column \"a\": \"not a number\""),
        "{error}"
    );
}

#[test]
fn a_streaming_file_opens_lazily_and_checks_each_chunk_as_it_is_read() {
    let data = dataset(1000);
    let bytes = data
        .to_bytes(&options(Compression::Lz4, Some(100)))
        .unwrap();
    let mut damaged = bytes.clone();
    damaged[stored_chunk(&bytes, 5).start + 2] ^= 0x01;
    // The whole-file load refuses it; the lazy open does not read chunk 5 until asked.
    assert_eq!(
        signal(ald::load_from_bytes(&damaged)),
        Signal::ChecksumMismatch
    );
    let streaming = StreamingDataset::from_bytes(&damaged[..], &LoadOptions::default()).unwrap();
    assert_eq!(streaming.get_chunk(4).unwrap(), rows(&data).slice(400, 100));
    assert_eq!(signal(streaming.get_chunk(5)), Signal::ChecksumMismatch);
    assert_eq!(
        signal(streaming.get_rows(450, 100)),
        Signal::ChecksumMismatch
    );
    // Damage before the payload is caught at open, by the index's prefix CRC-32C.
    let mut header = bytes.clone();
    header[40] ^= 0x01;
    assert_eq!(
        signal(StreamingDataset::from_bytes(
            &header[..],
            &LoadOptions::default()
        )),
        Signal::ChecksumMismatch
    );
}

#[test]
fn the_streaming_writer_encrypts_chunk_by_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sealed.ald");
    let alice = RecipientSecretKey::generate(&mut OsRng);
    let save = options(Compression::ZstdL3, Some(100));
    let mut writer = ald::fs::StreamingWriter::create(&path, schema(), save).unwrap();
    writer.write(&table(0, 450)).unwrap();
    let encryptor = envelope_crypto::ChunkEncryptor::new(
        Format::Dataset,
        EncryptTo::Recipient(&alice.public_key()),
        EncryptOptions::default(),
        &mut OsRng,
    )
    .unwrap();
    assert_eq!(writer.finish_encrypted(&encryptor).unwrap(), 450);
    let streaming = StreamingDataset::open(&path, &LoadOptions::default()).unwrap();
    assert!(streaming.file().is_encrypted());
    assert_eq!(signal(streaming.get_chunk(1)), Signal::DecryptionFailed);
    let reader = streaming
        .with_key(DecryptionKey::Recipient(&alice))
        .unwrap();
    assert_eq!(
        reader.get_rows(95, 300).unwrap(),
        table(0, 450).slice(95, 300)
    );
    let key = LoadOptions {
        key: Some(DecryptionKey::Recipient(&alice)),
        ..LoadOptions::default()
    };
    assert_eq!(
        rows(&ald::fs::load(&path, &key).unwrap().dataset),
        table(0, 450)
    );
}

#[test]
fn writers_start_the_payload_on_a_64_byte_boundary() {
    let data = dataset(300);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.ald");
    let mut writer =
        ald::fs::StreamingWriter::create(&path, schema(), options(Compression::None, Some(7)))
            .unwrap();
    writer.write(&table(0, 300)).unwrap();
    writer.finish().unwrap();
    let streamed = std::fs::read(&path).unwrap();
    for chunk_rows in [None, Some(7), Some(1000)] {
        for compression in Compression::ALL {
            let bytes = data.to_bytes(&options(compression, chunk_rows)).unwrap();
            for file in [&bytes, &streamed] {
                let envelope = Envelope::parse(&file[..], Format::Dataset).unwrap();
                let payload = envelope
                    .layout()
                    .span(envelope_core::Section::Payload)
                    .unwrap();
                assert_eq!(payload.offset % ald::PAYLOAD_ALIGNMENT as u64, 0);
            }
        }
    }
}

#[test]
fn parquet_outputs_widen_second_timestamps_to_milliseconds() {
    use arrow_array::TimestampSecondArray;
    let dir = tempfile::tempdir().unwrap();
    let seconds = TimestampSecondArray::from(vec![Some(1_700_000_000), None]).with_timezone("UTC");
    let batch = RecordBatch::try_from_iter([("at", Arc::new(seconds) as ArrayRef)]).unwrap();
    let path = dir.path().join("t.parquet");
    ald::interchange::write_file(&path, &ArrowDataset::from_batch(batch)).unwrap();
    let read = Source::open(&path, ReadOptions::default())
        .unwrap()
        .read_all()
        .unwrap();
    let expected =
        TimestampMillisecondArray::from(vec![Some(1_700_000_000_000), None]).with_timezone("UTC");
    assert_eq!(
        read.to_batch().unwrap().column(0).as_ref(),
        &expected as &dyn arrow_array::Array
    );
}

#[test]
fn head_reads_only_as_far_as_needed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("h.jsonl");
    ald::interchange::write_file(&path, &interchange_table()).unwrap();
    let source = Source::open(&path, ReadOptions::default()).unwrap();
    assert_eq!(source.head(5).unwrap().num_rows(), 5);
    assert_eq!(source.head(10_000).unwrap().num_rows(), 300);
    assert_eq!(source.head(0).unwrap().num_rows(), 0);
}

#[test]
fn worked_example_is_reproduced_byte_for_byte() {
    let expected = include_bytes!("data/worked_example.ald");
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int32, false),
        Field::new("name", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(arrow_array::Int32Array::from(vec![1, 2])),
            Arc::new(StringArray::from(vec![Some("a"), None])),
        ],
    )
    .unwrap();
    let bytes = ArrowDataset::from_batch(batch.clone())
        .to_bytes(&SaveOptions::default())
        .unwrap();
    assert_eq!(hex::encode(&bytes), hex::encode(expected));
    assert_eq!(
        ald::load_from_bytes(expected).unwrap().to_batch().unwrap(),
        batch
    );
}

#[test]
fn the_in_place_writer_matches_the_envelope_writer() {
    for rows in [0, 1, 100, 5000] {
        let data = if rows == 0 {
            ArrowDataset::new(schema(), vec![]).unwrap()
        } else {
            dataset(rows)
        };
        let save = options(Compression::None, None);
        let fast = data.to_bytes(&save).unwrap();
        let reference = data.to_parts(&save).unwrap().to_bytes().unwrap();
        assert_eq!(fast, reference, "{rows}");
    }
}

// ---- interchange fidelity (issue 13 §4) and foreign inputs that must not panic (issue 14 §3) ----

/// Reads an interchange file back as one batch.
fn read_back(path: &std::path::Path) -> RecordBatch {
    Source::open(path, ReadOptions::default())
        .unwrap()
        .read_all()
        .unwrap()
        .to_batch()
        .unwrap()
}

/// The names of a schema's fields.
fn field_names(schema: &Schema) -> Vec<String> {
    schema.fields().iter().map(|f| f.name().clone()).collect()
}

/// One timestamp column per zone the issue names: `UTC` (every pandas `datetime64[ns, UTC]`),
/// a named zone, and a fixed offset.
fn zoned_table() -> ArrowDataset {
    use arrow_array::TimestampNanosecondArray;
    let instants = [Some(1_711_845_000_000_000_000), None, Some(0)];
    let columns: Vec<(&str, ArrayRef)> = ["UTC", "Europe/Berlin", "+02:00"]
        .into_iter()
        .map(|zone| {
            let array = TimestampNanosecondArray::from(instants.to_vec()).with_timezone(zone);
            (zone, Arc::new(array) as ArrayRef)
        })
        .collect();
    ArrowDataset::from_batch(RecordBatch::try_from_iter(columns).unwrap())
}

#[test]
fn named_time_zones_display_and_export_as_text() {
    let data = zoned_table();
    let batch = data.to_batch().unwrap();
    let mut table = Vec::new();
    ald::interchange::write_text_table(&batch, &mut table, &|cell: &str| {
        std::borrow::Cow::Borrowed(cell)
    })
    .unwrap();
    let table = String::from_utf8(table).unwrap();
    // 2024-03-31T00:30:00Z: summer time began at 01:00 UTC that night, so Berlin was still on
    // CET (01:30+01:00); 02:30 at +02:00.
    assert!(table.contains("2024-03-31T00:30:00Z"), "{table}");
    assert!(table.contains("2024-03-31T01:30:00+01:00"), "{table}");
    assert!(table.contains("2024-03-31T02:30:00+02:00"), "{table}");
    let mut json = Vec::new();
    ald::interchange::write_json_rows(&batch, &mut json).unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(rows[0]["Europe/Berlin"], "2024-03-31T01:30:00+01:00");
    assert_eq!(rows[2]["UTC"], "1970-01-01T00:00:00Z");
    let dir = tempfile::tempdir().unwrap();
    for extension in ["csv", "jsonl"] {
        let path = dir.path().join(format!("zones.{extension}"));
        ald::interchange::write_file(&path, &data).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.contains("2024-03-31T01:30:00+01:00"),
            "{extension}: {text}"
        );
        // The text holds the instant: read back (as UTC), the values are the same.
        let back = read_back(&path);
        for column in 0..3 {
            let read = arrow_cast::cast(
                back.column(column),
                &DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            )
            .unwrap();
            let original = arrow_cast::cast(
                batch.column(column),
                &DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            )
            .unwrap();
            assert_eq!(
                read.as_ref(),
                original.as_ref(),
                "{extension} column {column}"
            );
        }
    }
}

#[test]
fn csv_timestamps_keep_their_zone() {
    use arrow_array::TimestampSecondArray;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("zones.csv");
    std::fs::write(
        &path,
        "z,offset,naive\n2024-01-01T00:00:00Z,2024-01-01T02:00:00+0200,2024-01-01 10:00:00\n\
         2024-01-02T00:00:00Z,2024-01-01T00:00:00-01:00,2024-01-01 10:00:01\n",
    )
    .unwrap();
    let source = Source::open(&path, ReadOptions::default()).unwrap();
    let utc = DataType::Timestamp(TimeUnit::Second, Some("UTC".into()));
    let types: Vec<_> = source
        .schema()
        .fields()
        .iter()
        .map(|f| f.data_type().clone())
        .collect();
    assert_eq!(
        types,
        [
            utc.clone(),
            utc,
            DataType::Timestamp(TimeUnit::Second, None)
        ]
    );
    let batch = source.read_all().unwrap().to_batch().unwrap();
    let offset = batch
        .column(1)
        .as_any()
        .downcast_ref::<TimestampSecondArray>()
        .unwrap();
    assert_eq!(offset.values(), &[1_704_067_200, 1_704_070_800]);
}

#[test]
fn csv_options_and_progress_from_the_first_byte() {
    use ald::interchange::{ByteProgress, CsvOptions, Inference, ReadStage};
    use std::sync::Mutex;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("semi.csv");
    let mut text = String::from("exported 2024\n\n");
    for i in 0..20_000 {
        text.push_str(&format!(
            "{i};{};{}\n",
            i % 3,
            if i % 5 == 0 { "-" } else { "x" }
        ));
    }
    std::fs::write(&path, &text).unwrap();
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&reports);
    let options = ReadOptions {
        csv: CsvOptions {
            delimiter: b';',
            header: false,
            skip_rows: 2,
            null_values: Some(vec!["-".to_owned()]),
        },
        infer: Inference::Rows(100),
        progress: Some(ByteProgress::new(move |stage, bytes| {
            sink.lock().unwrap().push((stage, bytes));
        })),
        ..ReadOptions::default()
    };
    let source = Source::open(&path, options).unwrap();
    assert_eq!(field_names(source.schema()), ["f0", "f1", "f2"]);
    assert_eq!(source.schema().field(0).data_type(), &DataType::Int64);
    let batch = source.read_all().unwrap().to_batch().unwrap();
    assert_eq!(batch.num_rows(), 20_000);
    assert_eq!(batch.column(2).null_count(), 4_000);
    let reports = reports.lock().unwrap();
    // Inference reported from 0 and stopped early; reading reported from 0 to the file's size.
    assert_eq!(reports[0], (ReadStage::Inferring, 0));
    let reading: Vec<u64> = reports
        .iter()
        .filter(|(stage, _)| *stage == ReadStage::Reading)
        .map(|(_, bytes)| *bytes)
        .collect();
    assert_eq!(reading.first(), Some(&0));
    assert_eq!(reading.last(), Some(&(text.len() as u64)));
    assert!(reading.windows(2).all(|pair| pair[0] <= pair[1]));
    assert_eq!(source.len(), text.len() as u64);
}

#[test]
fn csv_refuses_nested_columns_by_name_and_jsonl_writes_them() {
    use arrow_array::builder::{Int32Builder, ListBuilder, MapBuilder, StringBuilder};
    use arrow_array::{StructArray, UnionArray};
    use arrow_buffer::ScalarBuffer;
    let mut list = ListBuilder::new(Int32Builder::new());
    list.append_value([Some(1), None]);
    list.append_null();
    let mut map = MapBuilder::new(None, Int32Builder::new(), StringBuilder::new());
    map.keys().append_value(7);
    map.values().append_value("seven");
    map.append(true).unwrap();
    map.append(true).unwrap();
    let point = StructArray::from(vec![(
        Arc::new(Field::new("x", DataType::Float64, true)),
        Arc::new(Float64Array::from(vec![0.5, 1.5])) as ArrayRef,
    )]);
    let union = UnionArray::try_new(
        [
            (0, Arc::new(Field::new("n", DataType::Int64, true))),
            (1, Arc::new(Field::new("s", DataType::Utf8, true))),
        ]
        .into_iter()
        .collect(),
        ScalarBuffer::from(vec![0i8, 1]),
        None,
        vec![
            Arc::new(Int64Array::from(vec![Some(42), None])) as ArrayRef,
            Arc::new(StringArray::from(vec![None, Some("text")])),
        ],
    )
    .unwrap();
    let batch = RecordBatch::try_from_iter([
        ("id", Arc::new(Int64Array::from(vec![1, 2])) as ArrayRef),
        ("tags", Arc::new(list.finish())),
        ("point", Arc::new(point)),
        ("lookup", Arc::new(map.finish())),
        ("either", Arc::new(union)),
    ])
    .unwrap();
    let data = ArrowDataset::from_batch(batch);
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("nested.csv");
    let error = ald::interchange::write_file(&csv, &data).unwrap_err();
    assert_eq!(error.signal(), Signal::Usage);
    assert!(error.to_string().contains("column \"tags\""), "{error}");
    assert!(!csv.exists());
    let jsonl = dir.path().join("nested.jsonl");
    ald::interchange::write_file(&jsonl, &data).unwrap();
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&jsonl)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(
        lines[0],
        serde_json::json!({"id": 1, "tags": [1, null], "point": {"x": 0.5},
            "lookup": [{"key": 7, "value": "seven"}], "either": 42})
    );
    assert_eq!(
        lines[1],
        serde_json::json!({"id": 2, "tags": null, "point": {"x": 1.5}, "lookup": [], "either": "text"})
    );
    let parquet = dir.path().join("nested.parquet");
    let error = ald::interchange::write_file(&parquet, &data).unwrap_err();
    assert!(error.to_string().contains("column \"either\""), "{error}");
}

#[test]
fn parquet_keeps_date64_for_arrow_readers_and_refuses_partial_days() {
    use arrow_array::Date64Array;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dates.parquet");
    let days = Date64Array::from(vec![Some(19_000 * 86_400_000), None, Some(-86_400_000)]);
    let data = ArrowDataset::from_batch(
        RecordBatch::try_from_iter([("d", Arc::new(days) as ArrayRef)]).unwrap(),
    );
    ald::interchange::write_file(&path, &data).unwrap();
    // Parquet's own type is DATE (other readers see a date), the embedded Arrow schema Date64.
    let file = std::fs::File::open(&path).unwrap();
    let reader = parquet::file::reader::SerializedFileReader::new(file).unwrap();
    use parquet::file::reader::FileReader as _;
    let column = reader.metadata().file_metadata().schema_descr().column(0);
    assert_eq!(
        column.logical_type_ref(),
        Some(&parquet::basic::LogicalType::Date)
    );
    let back = Source::open(&path, ReadOptions::default())
        .unwrap()
        .read_all()
        .unwrap();
    assert_eq!(back.to_batch().unwrap(), data.to_batch().unwrap());
    let partial = Date64Array::from(vec![86_400_000 + 1]);
    let bad = ArrowDataset::from_batch(
        RecordBatch::try_from_iter([("d", Arc::new(partial) as ArrayRef)]).unwrap(),
    );
    let error = ald::interchange::write_file(dir.path().join("bad.parquet"), &bad).unwrap_err();
    assert_eq!(error.signal(), Signal::Usage);
    assert!(error.to_string().contains("whole day"), "{error}");
}

#[test]
fn arrow_stream_files_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.arrows");
    let data = dataset(300);
    ald::interchange::write_file(&path, &data).unwrap();
    let source = Source::open(&path, ReadOptions::default()).unwrap();
    assert_eq!(source.kind(), FileKind::ArrowStream);
    assert_eq!(source.read_all().unwrap().to_batch().unwrap(), rows(&data));
}

/// Every single-byte change of small Arrow IPC (file and stream), Parquet, CSV and JSONL inputs is
/// read or refused with a typed error, never a panic (issue 14 §3: 52 of 426 mutations of an
/// `.arrow` file made arrow panic).
#[test]
fn single_byte_changes_of_foreign_inputs_never_panic() {
    let data = ArrowDataset::from_batch(
        RecordBatch::try_from_iter([
            (
                "n",
                Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])) as ArrayRef,
            ),
            (
                "s",
                Arc::new(StringArray::from(vec![Some("a"), None, Some("ccc")])),
            ),
        ])
        .unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    for kind in ["arrow", "arrows", "parquet", "csv", "jsonl"] {
        let path = dir.path().join(format!("m.{kind}"));
        ald::interchange::write_file(&path, &data).unwrap();
        let original = std::fs::read(&path).unwrap();
        let file_kind = FileKind::of(&path).unwrap();
        let step = (original.len() / 400).max(1);
        for at in (0..original.len()).step_by(step) {
            for change in [0x01u8, 0x80, 0xFF] {
                let mut bytes = original.clone();
                bytes[at] ^= change;
                let read = Source::from_bytes(file_kind, bytes, ReadOptions::default())
                    .and_then(|source| source.read_all());
                if let Err(error) = read {
                    assert!(
                        matches!(error.signal(), Signal::InvalidFormat | Signal::Io),
                        "{kind} byte {at} ^ {change:#x}: {error}"
                    );
                }
            }
        }
    }
}

/// One JSON line of `keys` keys, read as JSONL: the work must grow linearly (issue 14 §2: 100k
/// keys took 108 s before key order went through serde_json).
#[test]
#[ignore = "complexity: run by .ci/run"]
fn jsonl_with_many_keys_scales_linearly() {
    scaling::assert_scales_linearly(
        "JSONL keys",
        25_000,
        |keys| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("keys.jsonl");
            let mut line = String::from("{");
            for key in 0..keys {
                if key > 0 {
                    line.push(',');
                }
                line.push_str(&format!("\"k{key}\":{key}"));
            }
            line.push_str("}\n");
            std::fs::write(&path, line.repeat(3)).unwrap();
            (dir, path, keys)
        },
        |(_dir, path, keys)| {
            let read = Source::open(path, ReadOptions::default())
                .unwrap()
                .read_all()
                .unwrap();
            assert_eq!(read.schema().fields().len(), *keys);
        },
    );
}

#[test]
fn parquet_keeps_dictionary_order_and_unused_values() {
    use arrow_array::types::{Int8Type, Int32Type};
    use arrow_array::{DictionaryArray, Int8Array};
    let levels = StringArray::from(vec!["low", "mid", "high", "unused"]);
    let first = DictionaryArray::<Int8Type>::try_new(
        Int8Array::from(vec![Some(2), Some(0), None, Some(2), Some(1)]),
        Arc::new(levels),
    )
    .unwrap();
    let second = DictionaryArray::<Int8Type>::try_new(
        Int8Array::from(vec![Some(1), Some(0)]),
        Arc::new(StringArray::from(vec!["high", "extra"])),
    )
    .unwrap();
    let codes = |keys: Vec<i32>| {
        DictionaryArray::<Int32Type>::try_new(
            keys.into(),
            Arc::new(Int64Array::from(vec![30, 10, 20])),
        )
        .unwrap()
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new(
            "level",
            DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8)),
            true,
        ),
        Field::new(
            "code",
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Int64)),
            false,
        ),
    ]));
    let batch = |level: DictionaryArray<Int8Type>, code| {
        RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(level) as ArrayRef, Arc::new(code) as ArrayRef],
        )
        .unwrap()
    };
    let data = ArrowDataset::new(
        Arc::clone(&schema),
        vec![
            batch(first, codes(vec![2, 2, 0, 1, 2])),
            batch(second, codes(vec![0, 0])),
        ],
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cat.parquet");
    ald::interchange::write_file(&path, &data).unwrap();
    let back = read_back(&path);
    // The dictionary page is the first batch's dictionary in order (the unused value included),
    // then the values later batches add.
    let level = back
        .column(0)
        .as_any()
        .downcast_ref::<DictionaryArray<Int8Type>>()
        .unwrap();
    let values: Vec<_> = level
        .values()
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap()
        .iter()
        .flatten()
        .collect();
    assert_eq!(values, ["low", "mid", "high", "unused", "extra"]);
    // The rows are the same (a numeric dictionary is rebuilt by the reader in the order rows use
    // its values: readers take only string and binary dictionaries from the page).
    let original = data.to_batch().unwrap();
    for column in 0..2 {
        let logical = |array: &ArrayRef| {
            let target = match array.data_type() {
                DataType::Dictionary(_, value) => value.as_ref().clone(),
                other => other.clone(),
            };
            arrow_cast::cast(array, &target).unwrap()
        };
        assert_eq!(
            logical(back.column(column)).as_ref(),
            logical(original.column(column)).as_ref()
        );
    }
}
