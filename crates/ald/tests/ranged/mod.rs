//! `RangedDataset` (a STREAMING file opened from its head and tail, chunks fetched by the caller)
//! against the local `StreamingDataset`: same rows for compressed, encrypted and signed files; the
//! signature checked over the streamed payload before anything is decoded; changed chunk bytes
//! refused.

use ald::{LoadOptions, RangedDataset, RangedOpening, StreamingDataset};
use envelope_core::{Compression, Format, Opening, RangedEnvelope, Signal};
use envelope_crypto::{DecryptionKey, EncryptOptions, EncryptTo, OsRng};
use envelope_sign::{Policy, SigningPublicKey};

use super::{cheap_password, dataset, options, publisher, rows, signal};

/// Opens `bytes` from ranges as a remote reader does (first and last `first` bytes, then what the
/// open asks for), streams the payload through the signature check when the policy asks.
pub(crate) fn open_ranged<'o>(
    bytes: &[u8],
    first: usize,
    load: &LoadOptions<'o>,
) -> ald::Result<RangedDataset<Vec<u8>>> {
    let len = bytes.len();
    let first = first.min(len);
    let (mut head, mut tail) = (bytes[..first].to_vec(), bytes[len - first..].to_vec());
    let envelope = loop {
        match RangedEnvelope::open(head, tail, len as u64, Format::Dataset)? {
            Opening::Ready(envelope) => break *envelope,
            Opening::NeedBytes {
                head: h,
                tail: t,
                missing,
            } => {
                let range = missing.start as usize..missing.end as usize;
                (head, tail) = (h, t);
                if range.start == head.len() {
                    head.extend_from_slice(&bytes[range]);
                } else {
                    let mut grown = bytes[range].to_vec();
                    grown.extend_from_slice(&tail);
                    tail = grown;
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    };
    let mut opening = RangedOpening::begin(envelope, load)?;
    if let Some(range) = opening.signed_payload() {
        for piece in bytes[range.start as usize..range.end as usize].chunks(1000) {
            opening.update(piece)?;
        }
    }
    opening.finish()
}

pub(crate) fn chunk_bytes<'b>(
    dataset: &RangedDataset<Vec<u8>>,
    bytes: &'b [u8],
    chunk: usize,
) -> &'b [u8] {
    let range = dataset.chunk_range(chunk).unwrap();
    &bytes[range.start as usize..range.end as usize]
}

#[test]
fn ranged_reads_equal_local_reads_for_every_compression() {
    let data = dataset(700);
    let all = rows(&data);
    for compression in [Compression::None, Compression::Lz4, Compression::ZstdL3] {
        let bytes = data.to_bytes(&options(compression, Some(64))).unwrap();
        let local = StreamingDataset::from_bytes(&bytes[..], &LoadOptions::default()).unwrap();
        for first in [100, 65536] {
            let ranged = open_ranged(&bytes, first, &LoadOptions::default()).unwrap();
            assert_eq!(ranged.num_chunks(), local.num_chunks());
            assert_eq!(ranged.schema(), local.schema());
            assert_eq!(ranged.metadata(), local.file().metadata());
            for chunk in 0..ranged.num_chunks() {
                let batch = ranged
                    .decode_chunk(chunk, chunk_bytes(&ranged, &bytes, chunk))
                    .unwrap();
                assert_eq!(batch, local.get_chunk(chunk).unwrap());
            }
            let chunks = ranged.chunks_of_rows(60, 200).unwrap();
            assert_eq!(chunks, 0..5);
            let entry = ranged.chunk_entry(chunks.start).unwrap();
            assert_eq!(
                ranged
                    .decode_chunk(0, chunk_bytes(&ranged, &bytes, 0))
                    .unwrap(),
                all.slice(0, entry.item_count as usize)
            );
        }
    }
}

#[test]
fn changed_chunk_bytes_are_refused() {
    let bytes = dataset(300)
        .to_bytes(&options(Compression::Lz4, Some(100)))
        .unwrap();
    let ranged = open_ranged(&bytes, 65536, &LoadOptions::default()).unwrap();
    let mut changed = chunk_bytes(&ranged, &bytes, 1).to_vec();
    changed[7] ^= 0x10;
    assert_eq!(
        signal(ranged.decode_chunk(1, &changed)),
        Signal::ChecksumMismatch
    );
    // Another chunk's bytes, or a cut one.
    assert!(
        ranged
            .decode_chunk(1, chunk_bytes(&ranged, &bytes, 0))
            .is_err()
    );
    let good = chunk_bytes(&ranged, &bytes, 1);
    assert!(ranged.decode_chunk(1, &good[..good.len() - 1]).is_err());
}

#[test]
fn encrypted_files_decrypt_chunk_by_chunk_from_ranges() {
    let data = dataset(400);
    let all = rows(&data);
    let (password, params) = cheap_password();
    let parts = data
        .to_parts(&options(Compression::ZstdL3, Some(50)))
        .unwrap();
    let sealed = envelope_crypto::encrypt(
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
    let without = open_ranged(&sealed, 65536, &LoadOptions::default()).unwrap();
    assert_eq!(
        signal(without.decode_chunk(0, chunk_bytes(&without, &sealed, 0))),
        Signal::DecryptionFailed
    );
    let with_key = LoadOptions {
        key: Some(DecryptionKey::Password(&password)),
        ..LoadOptions::default()
    };
    let ranged = open_ranged(&sealed, 65536, &with_key).unwrap();
    for chunk in 0..ranged.num_chunks() {
        let batch = ranged
            .decode_chunk(chunk, chunk_bytes(&ranged, &sealed, chunk))
            .unwrap();
        assert_eq!(batch, all.slice(chunk * 50, 50));
    }
    // Another chunk's sealed bytes are refused (by length, or by AES-GCM); a flipped byte fails
    // authentication.
    assert!(matches!(
        signal(ranged.decode_chunk(1, chunk_bytes(&ranged, &sealed, 2))),
        Signal::InvalidFormat | Signal::DecryptionFailed
    ));
    let mut flipped = chunk_bytes(&ranged, &sealed, 1).to_vec();
    flipped[3] ^= 1;
    assert_eq!(
        signal(ranged.decode_chunk(1, &flipped)),
        Signal::DecryptionFailed
    );
}

#[test]
fn the_signature_is_checked_over_the_streamed_payload_first() {
    let (key, trusted) = publisher();
    let bytes = dataset(300)
        .to_bytes(&options(Compression::Lz4, Some(40)))
        .unwrap();
    let signed = envelope_sign::sign(&bytes, &key).unwrap();
    let require = LoadOptions {
        signature: Some(Policy::RequireSignature { trusted: &trusted }),
        ..LoadOptions::default()
    };
    let ranged = open_ranged(&signed, 200, &require).unwrap();
    assert_eq!(ranged.signer(), Some(&SigningPublicKey::of(&key)));
    // Unsigned: refused before any payload byte is asked for.
    let unsigned = open_ranged(&bytes, 65536, &LoadOptions::default()).unwrap();
    let envelope = unsigned.envelope().clone();
    assert_eq!(
        signal(RangedOpening::begin(envelope, &require)),
        Signal::SignatureInvalid
    );
    // A changed payload byte (its chunk CRC-32C fixed up too): the signature catches it.
    let mut forged = signed.clone();
    let chunk = ranged.chunk_range(2).unwrap();
    forged[chunk.start as usize + 5] ^= 0x40;
    assert_eq!(
        signal(open_ranged(&forged, 65536, &require)),
        Signal::SignatureInvalid
    );
    // Feeding less than the payload is a usage error, not a pass.
    let envelope = open_ranged(&signed, 65536, &LoadOptions::default())
        .unwrap()
        .envelope()
        .clone();
    let opening = RangedOpening::begin(envelope, &require).unwrap();
    assert_eq!(signal(opening.finish()), Signal::Usage);
}
