//! What was verified is what is used (issue 14 §4): under a signature policy a dataset opened by
//! path is held still (a snapshot) before its signature is checked, so a program that rewrites the
//! file in place afterwards (fixing every checksum) changes nothing that is read from it.

use std::io::{Seek as _, SeekFrom, Write as _};
use std::sync::Arc;

use ald::{ArrowDataset, DatasetType, LoadOptions, SaveOptions, StreamingDataset};
use arrow_array::{Array as _, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use envelope_core::{Compression, Format};
use envelope_sign::{Policy, SigningKey, TrustedKeys};

/// A STREAMING, uncompressed dataset of `value` repeated, signed by `key`; and the same file with
/// its first chunk holding `other` instead (the last value's bytes chosen so that the chunk's
/// CRC-32C still matches the index, and the file's CRC32 fixed): what an attacker can write
/// without the key. Both have the same length and the same header and index.
fn signed_pair(key: &SigningKey, value: i64, other: i64) -> (Vec<u8>, Vec<u8>) {
    let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]));
    let table = |v: i64| {
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(Int64Array::from(vec![v; 256]))],
        )
        .unwrap();
        ArrowDataset::new(Arc::clone(&schema), vec![batch])
            .unwrap()
            .to_bytes(&SaveOptions::new(DatasetType::Tabular, Compression::None).streaming(64))
            .unwrap()
    };
    let good = envelope_sign::sign(&table(value), key).unwrap();
    let other = test_support::stored_chunk(&table(other), Format::Dataset, 0);
    let evil = test_support::forge_chunk(&good, Format::Dataset, 0, &other);
    (good, evil)
}

fn rewrite_in_place(path: &std::path::Path, bytes: &[u8]) {
    let mut file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    file.seek(SeekFrom::Start(0)).unwrap();
    file.write_all(bytes).unwrap();
    file.flush().unwrap();
}

fn first_value(dataset: &StreamingDataset<ald::fs::SharedMap>) -> i64 {
    let batch = dataset.get_rows(0, 1).unwrap();
    let column = batch
        .column(0)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    assert_eq!(column.len(), 1);
    column.value(0)
}

#[test]
fn a_file_rewritten_after_its_signature_was_checked_is_read_as_it_was_checked() {
    let key = SigningKey::from_bytes(&[7; 32]);
    let trusted = TrustedKeys::from_keys([envelope_sign::SigningPublicKey::of(&key)]);
    let (good, evil) = signed_pair(&key, 1, 2);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.ald");
    std::fs::write(&path, &good).unwrap();

    // Under the policy: verified, then the file is rewritten in place; reads see what was verified.
    let options = LoadOptions {
        signature: Some(Policy::RequireSignature { trusted: &trusted }),
        ..LoadOptions::default()
    };
    let verified = StreamingDataset::open(&path, &options).unwrap();
    rewrite_in_place(&path, &evil);
    assert_eq!(first_value(&verified), 1, "the verified bytes are used");
    // The rewritten file itself no longer passes the policy.
    rewrite_in_place(&path, &evil);
    assert!(StreamingDataset::open(&path, &options).is_err());

    // What the snapshot prevents: without a policy the file is simply mapped, and a rewrite whose
    // chunk checksums still match shows through (the documented limit of mapped reads, which
    // trust no signature).
    rewrite_in_place(&path, &good);
    let mapped = StreamingDataset::open(&path, &LoadOptions::default()).unwrap();
    rewrite_in_place(&path, &evil);
    assert_eq!(first_value(&mapped), 2);
}
