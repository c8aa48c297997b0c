//! Every validation rule of 002 §8 / §9 with a crafted file (`fail_` cases).

use fold::json::{Value, map_set};
use fold::{ChunkField, Compression, Ecc, Error, FoldReader, ReadOptions, Region, WriteOptions};

use super::{build, metadata, replace_index_text, rewrite_index};

fn sample(ecc: Ecc, compression: Compression) -> Vec<u8> {
    build(
        WriteOptions::new(compression, ecc),
        &[
            ("a", "JSON", b"{\"k\":[1,2,3]}"),
            ("b", "TSAV", &[5_u8; 300]),
        ],
        metadata(),
        1.0,
    )
}

fn open_err(bytes: &[u8]) -> Error {
    FoldReader::open(bytes).unwrap_err()
}

fn read_err(bytes: &[u8], name: &str) -> Error {
    FoldReader::open(bytes)
        .unwrap()
        .read_chunk(name)
        .unwrap_err()
}

fn chunk_offset(bytes: &[u8], name: &str) -> usize {
    usize::try_from(
        FoldReader::open(bytes)
            .unwrap()
            .index()
            .chunk(name)
            .unwrap()
            .offset,
    )
    .unwrap()
}

#[test]
fn fail_bad_magic_is_refused() {
    let mut b = sample(Ecc::None, Compression::None);
    b[5] = b'2';
    assert!(matches!(open_err(&b), Error::BadMagic { found } if &found[..6] == b"FOLDv2"));
}

#[test]
fn fail_header_len_other_than_28_is_refused() {
    let mut b = sample(Ecc::None, Compression::None);
    b[11] = 32;
    assert!(matches!(
        open_err(&b),
        Error::BadHeaderLen {
            found: 32,
            expected: 28
        }
    ));
}

#[test]
fn fail_index_off_inside_header_is_refused() {
    let mut b = sample(Ecc::None, Compression::None);
    b[12..20].copy_from_slice(&10_u64.to_be_bytes());
    assert!(matches!(
        open_err(&b),
        Error::IndexInsideHeader { index_off: 10, .. }
    ));
}

#[test]
fn fail_index_len_above_max_index_size_is_refused_before_reading() {
    let mut b = sample(Ecc::None, Compression::None);
    b[20..28].copy_from_slice(&(fold::MAX_INDEX_SIZE + 1).to_be_bytes());
    assert!(matches!(open_err(&b), Error::IndexTooLarge { .. }));
}

#[test]
fn fail_truncated_header_and_index_are_refused() {
    let b = sample(Ecc::None, Compression::None);
    assert!(matches!(
        open_err(&b[..20]),
        Error::Truncated {
            region: Region::GlobalHeader,
            ..
        }
    ));
    assert!(matches!(
        open_err(&b[..b.len() - 1]),
        Error::Truncated {
            region: Region::Index,
            ..
        }
    ));
    let mut huge = b.clone();
    huge[12..20].copy_from_slice(&u64::MAX.to_be_bytes());
    assert!(matches!(
        open_err(&huge),
        Error::Truncated {
            region: Region::Index,
            ..
        }
    ));
}

#[test]
fn fail_index_not_utf8_or_not_json_or_wrong_format_is_refused() {
    let b = sample(Ecc::None, Compression::None);
    assert!(matches!(
        open_err(&replace_index_text(&b, b"{\"a\":\"\xff\"}")),
        Error::IndexNotUtf8 { position: 6 }
    ));
    assert!(matches!(
        open_err(&replace_index_text(&b, b"{\"format\":")),
        Error::IndexJson { .. }
    ));
    assert!(matches!(
        open_err(&replace_index_text(
            &b,
            br#"{"format":"fold2","chunks":[]}"#
        )),
        Error::UnsupportedFormat { .. }
    ));
    assert!(matches!(
        open_err(&replace_index_text(
            &b,
            br#"{"format":"fold","chunks":[{"name":"a"}]}"#
        )),
        Error::IndexSchema {
            chunk: Some(0),
            problem: fold::SchemaProblem::Missing,
            ..
        }
    ));
}

#[test]
fn fail_duplicate_chunk_names_are_refused() {
    let b = rewrite_index(&sample(Ecc::None, Compression::None), |idx| {
        idx.chunks[1].name = "a".into()
    });
    assert!(matches!(open_err(&b), Error::DuplicateChunk { name } if name == "a"));
}

#[test]
fn fail_overlapping_or_repeated_chunk_ranges_are_refused_at_open() {
    let s = sample(Ecc::None, Compression::None);
    let overlap = |b: &[u8]| match open_err(b) {
        Error::OverlappingChunks { first, second } => (first, second),
        other => panic!("expected OverlappingChunks, got {other}"),
    };
    // A second entry naming the same bytes: each would be hashed and decoded again.
    let b = rewrite_index(&s, |idx| {
        let mut twin = idx.chunks[1].clone();
        twin.name = "b-again".into();
        idx.chunks.push(twin);
    });
    let (first, second) = overlap(&b);
    assert!([first.as_str(), second.as_str()].contains(&"b-again"));
    // A chunk starting inside another one.
    let b = rewrite_index(&s, |idx| idx.chunks[1].offset = idx.chunks[0].offset + 8);
    assert_eq!(overlap(&b), ("a".to_owned(), "b".to_owned()));
    // A chunk reaching into the index.
    let b = rewrite_index(&s, |idx| {
        idx.chunks[1].comp_len += 1;
        idx.chunks[1].uncomp_len += 1;
    });
    assert_eq!(overlap(&b), ("b".to_owned(), "(index)".to_owned()));
    assert_eq!(open_err(&b).rule(), "§3 layout");
    // Back to back, as every writer lays them out, is fine.
    assert!(FoldReader::open(&s[..]).is_ok());
}

#[test]
fn fail_chunk_offset_inside_header_is_refused() {
    let b = rewrite_index(&sample(Ecc::None, Compression::None), |idx| {
        idx.chunks[0].offset = 4
    });
    assert!(matches!(
        read_err(&b, "a"),
        Error::ChunkInsideHeader { offset: 4, .. }
    ));
}

#[test]
fn fail_chunk_header_or_body_past_end_of_file_is_refused() {
    let s = sample(Ecc::None, Compression::None);
    let len = s.len() as u64;
    let b = rewrite_index(&s, |idx| idx.chunks[0].offset = len - 10);
    assert!(matches!(
        read_err(&b, "a"),
        Error::Truncated {
            region: Region::ChunkHeader,
            ..
        }
    ));
    let b = rewrite_index(&s, |idx| idx.chunks[1].comp_len = 1 << 30);
    assert!(matches!(
        read_err(&b, "b"),
        Error::Truncated {
            region: Region::ChunkBody,
            ..
        }
    ));
    let b = rewrite_index(&s, |idx| idx.chunks[1].offset = u64::MAX - 8);
    assert!(matches!(read_err(&b, "b"), Error::Truncated { .. }));
}

#[test]
fn fail_chunk_above_max_chunk_size_is_refused_and_the_limit_can_be_overridden() {
    let s = sample(Ecc::None, Compression::None);
    let b = rewrite_index(&s, |idx| {
        idx.chunks[1].uncomp_len = fold::MAX_CHUNK_SIZE + 1
    });
    assert!(matches!(
        read_err(&b, "b"),
        Error::ChunkTooLarge {
            field: ChunkField::UncompLen,
            ..
        }
    ));
    let small = ReadOptions {
        max_chunk_size: 100,
    };
    let r = FoldReader::open_with(&s[..], small).unwrap();
    assert!(matches!(
        r.read_chunk("b"),
        Err(Error::ChunkTooLarge {
            field: ChunkField::CompLen,
            value: 300,
            max: 100,
            ..
        })
    ));
    assert!(r.read_chunk("a").is_ok());
}

#[test]
fn fail_crc32c_mismatch_is_reported_with_chunk_and_offset() {
    let mut b = sample(Ecc::None, Compression::None);
    let off = chunk_offset(&b, "b");
    b[off + 32 + 7] ^= 1;
    assert!(
        matches!(read_err(&b, "b"), Error::CrcMismatch { chunk, offset, .. } if chunk == "b" && offset == off as u64)
    );
}

#[test]
fn fail_sha256_mismatch_against_the_index_is_refused() {
    let b = rewrite_index(&sample(Ecc::None, Compression::None), |idx| {
        idx.chunks[0].sha256[0] ^= 1
    });
    assert!(matches!(read_err(&b, "a"), Error::Sha256Mismatch { .. }));
}

#[test]
fn fail_chunk_hashes_disagreeing_with_sha256_is_refused() {
    let b = rewrite_index(&sample(Ecc::None, Compression::None), |idx| {
        let Some((_, Value::Object(h))) =
            idx.metadata.iter_mut().find(|(k, _)| k == "chunk_hashes")
        else {
            panic!()
        };
        h[0].1 = Value::String("00".repeat(32));
        let m = fold::manifest_hash(&idx.metadata);
        map_set(
            &mut idx.metadata,
            "manifest_hash",
            Value::String(hex::encode(m)),
        );
    });
    let r = FoldReader::open(&b[..]).unwrap();
    r.index().check_manifest_hash().unwrap();
    assert!(matches!(r.read_chunk("a"), Err(Error::ChunkHashesMismatch { chunk }) if chunk == "a"));
    assert!(r.read_chunk("b").is_ok());
}

#[test]
fn fail_manifest_hash_mismatch_is_an_error_not_a_warning() {
    let b = rewrite_index(&sample(Ecc::None, Compression::None), |idx| {
        map_set(
            &mut idx.metadata,
            "model_type",
            Value::String("Forged".into()),
        );
    });
    let r = FoldReader::open(&b[..]).unwrap();
    assert!(matches!(
        r.read_chunk("a"),
        Err(Error::ManifestHashMismatch { .. })
    ));
    assert!(!r.verify_all(&|_| {}).is_ok());
}

#[test]
fn fail_chunk_header_disagreeing_with_the_index_is_refused() {
    let mut b = sample(Ecc::None, Compression::None);
    let off = chunk_offset(&b, "a");
    b[off + 15] ^= 1; // uncomp_len low byte
    assert!(matches!(
        read_err(&b, "a"),
        Error::HeaderIndexMismatch {
            field: ChunkField::UncompLen,
            ..
        }
    ));
    let mut b = sample(Ecc::None, Compression::None);
    b[off] = b'X';
    assert!(matches!(read_err(&b, "a"), Error::CtypeMismatch { .. }));
}

#[test]
fn fail_uncomp_len_other_than_decoded_length_is_refused() {
    for compression in [Compression::None, Compression::Zstd] {
        let s = sample(Ecc::None, compression);
        let off = chunk_offset(&s, "b");
        let mut b = rewrite_index(&s, |idx| idx.chunks[1].uncomp_len = 299);
        b[off + 8..off + 16].copy_from_slice(&299_u64.to_be_bytes());
        assert!(
            matches!(
                read_err(&b, "b"),
                Error::UncompLenMismatch { expected: 299, .. }
            ),
            "{compression:?}"
        );
        let r = FoldReader::open(&b[..]).unwrap();
        assert!(matches!(
            r.verify_chunk("b"),
            Err(Error::UncompLenMismatch { .. })
        ));
    }
}

#[test]
fn fail_unknown_flags_and_undecodable_zstd_are_refused() {
    let s = sample(Ecc::None, Compression::None);
    let off = chunk_offset(&s, "b");
    for (flag, want_decompress) in [(2_u32, false), (1, true)] {
        let mut b = rewrite_index(&s, |idx| idx.chunks[1].flags = u64::from(flag));
        b[off + 4..off + 8].copy_from_slice(&flag.to_be_bytes());
        let e = read_err(&b, "b");
        if want_decompress {
            assert!(matches!(e, Error::Decompress { .. }), "{e}");
        } else {
            assert!(matches!(e, Error::UnknownFlags { flags: 2, .. }), "{e}");
        }
    }
}

#[test]
fn fail_ecc_len_inconsistent_with_the_algorithm_is_refused() {
    let b = rewrite_index(&sample(Ecc::Rs(16), Compression::None), |idx| {
        idx.chunks[0].ecc = Ecc::Rs(8)
    });
    assert!(matches!(
        read_err(&b, "a"),
        Error::BadEccLen {
            expected: 8,
            found: 16,
            ..
        }
    ));
}

#[test]
fn fail_corruption_beyond_ecc_capacity_is_reported_not_returned() {
    let mut b = sample(Ecc::Rs(8), Compression::None);
    let off = chunk_offset(&b, "b");
    for k in 0..5 {
        b[off + 32 + k * 3] ^= 0x5A;
    }
    let e = read_err(&b, "b");
    assert!(
        matches!(
            e,
            Error::EccUncorrectable { codeword: 0, .. } | Error::CrcMismatch { .. }
        ),
        "{e}"
    );
}

#[test]
fn errors_name_their_rule() {
    let mut b = sample(Ecc::None, Compression::None);
    let off = chunk_offset(&b, "b");
    b[off + 40] ^= 1;
    let e = read_err(&b, "b");
    assert_eq!(e.rule(), "§8.3 crc32c");
    assert!(e.to_string().contains("\"b\""));
}
