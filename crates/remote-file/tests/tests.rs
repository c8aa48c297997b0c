//! Integration tests of remote reading: local files through `object_store`'s local store (always
//! run), and a real S3 API on loopback, `moto` in server mode (`#[ignore]`d: they need
//! `$INTEROP_PYTHON` with `moto[server]`, which `.ci/run` provides), behind a TCP proxy that
//! counts requests and can cut a response body in the middle.

#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_possible_wrap,
    reason = "test tables are small; sizes and offsets fit every type involved"
)]

mod folds;
mod models;
mod proxy;
mod s3;
mod training;

use std::sync::Arc;

use ald::{ArrowDataset, DatasetType, LoadOptions, SaveOptions, StreamingDataset};
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use envelope_core::{Compression, Signal};
use envelope_crypto::{Argon2Params, DecryptionKey, EncryptOptions, EncryptTo, OsRng, Password};
use envelope_sign::{Policy, SigningKey, SigningPublicKey, TrustedKeys};
use remote_file::{BlockingDataset, ReadOptions};

/// `rows` rows of an id and a text of about `width` bytes.
fn table(rows: usize, width: usize) -> ArrowDataset {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("text", DataType::Utf8, true),
    ]));
    let ids: Vec<i64> = (0..rows as i64).collect();
    let text = StringArray::from_iter(
        ids.iter()
            .map(|i| (i % 11 != 5).then(|| format!("{i:08} ").repeat(width / 9 + 1))),
    );
    let columns: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(ids)), Arc::new(text)];
    ArrowDataset::new(
        schema.clone(),
        vec![RecordBatch::try_new(schema, columns).unwrap()],
    )
    .unwrap()
}

fn save_options(compression: Compression, chunk_rows: Option<usize>) -> SaveOptions {
    let mut options = SaveOptions::new(DatasetType::Tabular, compression);
    options.chunk_rows = chunk_rows;
    options
}

fn cheap_password() -> (Password, Argon2Params) {
    let params = Argon2Params {
        m_cost_kib: 1024,
        t_cost: 1,
        p_cost: 1,
    };
    (Password::new("remote secret"), params)
}

fn publisher() -> (SigningKey, TrustedKeys) {
    let key = SigningKey::from_bytes(&[7; 32]);
    let trusted = TrustedKeys::from_keys([SigningPublicKey::of(&key)]);
    (key, trusted)
}

/// The files every backend is tested with: name, bytes, and how to open them.
struct Sample {
    name: &'static str,
    bytes: Vec<u8>,
    kind: Kind,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Plain,
    Encrypted,
    Signed,
}

fn samples() -> Vec<Sample> {
    let data = table(1000, 40);
    let streaming_zstd = data
        .to_bytes(&save_options(Compression::ZstdL3, Some(64)))
        .unwrap();
    let streaming_plain = data
        .to_bytes(&save_options(Compression::None, Some(100)))
        .unwrap();
    let whole = data
        .to_bytes(&save_options(Compression::Lz4, None))
        .unwrap();
    let (password, params) = cheap_password();
    let parts = data
        .to_parts(&save_options(Compression::Lz4, Some(128)))
        .unwrap();
    let encrypted = envelope_crypto::encrypt(
        &parts,
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
    let (key, _) = publisher();
    let signed = envelope_sign::sign(&streaming_zstd, &key).unwrap();
    vec![
        Sample {
            name: "streaming_zstd.ald",
            bytes: streaming_zstd,
            kind: Kind::Plain,
        },
        Sample {
            name: "streaming_plain.ald",
            bytes: streaming_plain,
            kind: Kind::Plain,
        },
        Sample {
            name: "whole_lz4.ald",
            bytes: whole,
            kind: Kind::Plain,
        },
        Sample {
            name: "streaming_encrypted.ald",
            bytes: encrypted,
            kind: Kind::Encrypted,
        },
        Sample {
            name: "streaming_signed.ald",
            bytes: signed,
            kind: Kind::Signed,
        },
    ]
}

/// Opens `location` as `sample` needs and checks it reads exactly the rows the local reader
/// reads, whole and by row range.
fn check_against_local(dataset: &BlockingDataset, sample: &Sample, load: &LoadOptions<'_>) {
    let local = StreamingDataset::from_bytes(&sample.bytes[..], load).unwrap();
    assert_eq!(dataset.schema(), local.schema(), "{}", sample.name);
    assert_eq!(dataset.dataset().num_rows(), local.num_rows());
    assert_eq!(dataset.dataset().num_chunks(), local.num_chunks());
    let reader = match load.key {
        Some(key) => local.with_key(key).unwrap(),
        None => local.reader(),
    };
    let all = reader.get_rows(0, local.num_rows()).unwrap();
    let chunks = dataset.chunks(0..dataset.dataset().num_chunks()).unwrap();
    let remote_all = arrow_select::concat::concat_batches(dataset.schema(), &chunks).unwrap();
    assert_eq!(remote_all, all, "{}", sample.name);
    // Projected reads: the last column and the first, in that order, and no column at all.
    let columns = all.num_columns();
    for (chunk, batch) in chunks.iter().enumerate() {
        for projection in [vec![columns - 1, 0], vec![]] {
            let projected = dataset.chunk_projected(chunk, &projection).unwrap();
            assert_eq!(
                projected,
                batch.project(&projection).unwrap(),
                "{}",
                sample.name
            );
        }
    }
    let error = dataset.chunk_projected(0, &[columns]).unwrap_err();
    assert_eq!(error.signal(), envelope_core::Signal::Usage, "{error}");
    assert_eq!(
        dataset.rows(130, 300).unwrap(),
        all.slice(130, 300),
        "{}",
        sample.name
    );
}

/// Runs `check` with the load options `kind` needs.
fn with_load(kind: Kind, check: impl FnOnce(&LoadOptions<'_>)) {
    let (password, _) = cheap_password();
    let (_, trusted) = publisher();
    let load = match kind {
        Kind::Plain => LoadOptions::default(),
        Kind::Encrypted => LoadOptions {
            key: Some(DecryptionKey::Password(&password)),
            ..LoadOptions::default()
        },
        Kind::Signed => LoadOptions {
            signature: Some(Policy::RequireSignature { trusted: &trusted }),
            ..LoadOptions::default()
        },
    };
    check(&load);
}

#[test]
fn local_paths_and_file_urls_read_as_the_local_reader_reads() {
    let dir = tempfile::tempdir().unwrap();
    for sample in samples() {
        let path = dir.path().join(sample.name);
        std::fs::write(&path, &sample.bytes).unwrap();
        let url = format!("file://{}", path.display());
        for location in [path.to_str().unwrap(), url.as_str()] {
            with_load(sample.kind, |load| {
                let dataset = BlockingDataset::open(location, load, ReadOptions::default())
                    .unwrap_or_else(|error| panic!("{location}: {error}"));
                check_against_local(&dataset, &sample, load);
            });
        }
    }
}

#[test]
fn a_streaming_file_opens_in_two_requests_and_a_chunk_costs_one() {
    let dir = tempfile::tempdir().unwrap();
    let sample = samples().remove(0);
    let path = dir.path().join(sample.name);
    std::fs::write(&path, &sample.bytes).unwrap();
    let dataset = BlockingDataset::open(
        path.to_str().unwrap(),
        &LoadOptions::default(),
        ReadOptions::default(),
    )
    .unwrap();
    assert_eq!(dataset.dataset().file().requests(), 2);
    // The first 64 KiB and the last 64 KiB, each cut to the file's size.
    let size = sample.bytes.len() as u64;
    let opened = dataset.dataset().file().bytes_fetched();
    assert_eq!(opened, 2 * size.min(64 * 1024));
    dataset.chunk(3).unwrap();
    assert_eq!(dataset.dataset().file().requests(), 3);
    // One chunk: exactly its stored bytes.
    let stored = dataset.dataset().chunk_entry(3).unwrap().stored_size;
    assert_eq!(dataset.dataset().file().bytes_fetched(), opened + stored);
    // Sections larger than the first read: one more request (the read ahead covers the rest).
    let small = ReadOptions {
        first_read: 200,
        ..ReadOptions::default()
    };
    let dataset =
        BlockingDataset::open(path.to_str().unwrap(), &LoadOptions::default(), small).unwrap();
    assert!(dataset.dataset().file().requests() <= 4);
    assert_eq!(dataset.chunk(0).unwrap().num_rows(), 64);
}

#[test]
fn refusals_keep_their_signal() {
    let dir = tempfile::tempdir().unwrap();
    let sample = samples().remove(0);
    // Cut short: the trailer and chunk index no longer line up.
    let path = dir.path().join("cut.ald");
    std::fs::write(&path, &sample.bytes[..sample.bytes.len() - 100]).unwrap();
    let error = BlockingDataset::open(
        path.to_str().unwrap(),
        &LoadOptions::default(),
        ReadOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(
            error.signal(),
            Signal::InvalidFormat | Signal::ChecksumMismatch
        ),
        "{error}"
    );
    // A flipped chunk byte: refused on every try, with the checksum's signal.
    let mut flipped = sample.bytes.clone();
    let at = flipped.len() / 2;
    flipped[at] ^= 0x20;
    let path = dir.path().join("flipped.ald");
    std::fs::write(&path, &flipped).unwrap();
    let options = ReadOptions {
        retry: remote_file::Retry {
            attempts: 2,
            base_delay: std::time::Duration::from_millis(1),
            max_delay: std::time::Duration::from_millis(2),
        },
        ..ReadOptions::default()
    };
    let dataset =
        BlockingDataset::open(path.to_str().unwrap(), &LoadOptions::default(), options).unwrap();
    let error = dataset
        .chunks(0..dataset.dataset().num_chunks())
        .unwrap_err();
    assert_eq!(error.signal(), Signal::ChecksumMismatch, "{error}");
    assert!(matches!(
        error,
        remote_file::Error::RetriesExhausted { attempts: 2, .. }
    ));
    // Unsigned under RequireSignature.
    let (_, trusted) = publisher();
    let require = LoadOptions {
        signature: Some(Policy::RequireSignature { trusted: &trusted }),
        ..LoadOptions::default()
    };
    let path = dir.path().join("unsigned.ald");
    std::fs::write(&path, &sample.bytes).unwrap();
    let error = BlockingDataset::open(path.to_str().unwrap(), &require, ReadOptions::default())
        .unwrap_err();
    assert_eq!(error.signal(), Signal::SignatureInvalid);
}

/// A file replaced between the open and a chunk read is refused, not mixed.
#[test]
fn a_replaced_local_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let sample = samples().remove(0);
    let path = dir.path().join("x.ald");
    std::fs::write(&path, &sample.bytes).unwrap();
    let dataset = BlockingDataset::open(
        path.to_str().unwrap(),
        &LoadOptions::default(),
        ReadOptions::default(),
    )
    .unwrap();
    let other = table(1000, 60)
        .to_bytes(&save_options(Compression::ZstdL3, Some(64)))
        .unwrap();
    // Written beside and renamed over, as every writer of the workspace does.
    let next = dir.path().join("next.ald");
    std::fs::write(&next, &other).unwrap();
    std::fs::rename(&next, &path).unwrap();
    let error = dataset.chunk(1).unwrap_err();
    assert!(
        matches!(error, remote_file::Error::ObjectChanged { .. }),
        "{error}"
    );
}
