//! `fs::extract_chunk`, the path of `fold cat -o`: for a stored chunk of a source held in memory it
//! writes the temporary file while the chunk is hashed and renames it only after the verdict. It
//! must write exactly what `read_chunk` returns, refuse exactly what `read_chunk` refuses (with the
//! same error), and leave nothing behind when it refuses: no output, no temporary file.

use std::io::Cursor;
use std::path::Path;

use fold::{Compression, Ecc, FoldReader, SeekSource, Source, WriteOptions};
use output_file::{Destination, Existing};
use proptest::prelude::*;

use super::{build, metadata, rewrite_index};

/// The names of the files in `dir`, sorted.
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A container of a text chunk and a `len`-byte binary chunk `w`.
fn container(compression: Compression, ecc: Ecc, len: usize) -> (Vec<u8>, Vec<u8>) {
    let payload: Vec<u8> = (0..len).map(|i| (i * 31 % 251).to_le_bytes()[0]).collect();
    let bytes = build(
        WriteOptions::new(compression, ecc),
        &[("notes", "JSON", b"{\"a\":1}"), ("w", "TSAV", &payload)],
        metadata(),
        1.0,
    );
    (bytes, payload)
}

/// The offset of chunk `name`'s first payload byte.
fn payload_offset(bytes: &[u8], name: &str) -> usize {
    let r = FoldReader::open(bytes).unwrap();
    let e = r.index().chunk(name).unwrap();
    usize::try_from(e.offset).unwrap() + 32
}

/// Extracts `name` into a fresh directory; returns the result, the output's bytes if it exists,
/// and the directory's files afterwards.
fn extract<S: Source>(
    r: &FoldReader<S>,
    name: &str,
) -> (fold::Result<u64>, Option<Vec<u8>>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.bin");
    let result = fold::fs::extract_chunk(r, name, &out);
    let written = std::fs::read(&out).ok();
    (result, written, files_in(dir.path()))
}

#[test]
fn extract_chunk_writes_what_read_chunk_returns_for_every_layout_and_source() {
    for compression in [Compression::None, Compression::Zstd] {
        for ecc in [Ecc::None, Ecc::Rs(16)] {
            let (bytes, payload) = container(compression, ecc, 300_000);
            // In memory (the fast path for stored chunks) and through Read + Seek (the other path).
            let mapped = FoldReader::open(bytes.clone()).unwrap();
            let seek = FoldReader::open(SeekSource::new(Cursor::new(bytes)).unwrap()).unwrap();
            for name in ["notes", "w"] {
                let expect = mapped.read_chunk(name).unwrap();
                let (result, written, files) = extract(&mapped, name);
                assert_eq!(result.unwrap(), expect.len() as u64);
                assert_eq!(written.as_deref(), Some(&expect[..]));
                assert_eq!(files, ["out.bin"], "only the output is left");
                let (result, written, _) = extract(&seek, name);
                assert_eq!(result.unwrap(), expect.len() as u64);
                assert_eq!(written.as_deref(), Some(&expect[..]));
            }
            assert_eq!(mapped.read_chunk("w").unwrap(), payload);
        }
    }
}

#[test]
fn a_corrupted_stored_chunk_is_refused_with_read_chunks_error_and_nothing_is_written() {
    let (mut bytes, _) = container(Compression::None, Ecc::None, 300_000);
    let at = payload_offset(&bytes, "w") + 123_456;
    bytes[at] ^= 0x20;
    let r = FoldReader::open(bytes).unwrap();
    let expected = r.read_chunk("w").unwrap_err();
    assert!(matches!(expected, fold::Error::CrcMismatch { .. }));
    let (result, written, files) = extract(&r, "w");
    assert_eq!(
        format!("{:?}", result.unwrap_err()),
        format!("{expected:?}")
    );
    assert_eq!(written, None, "no output");
    assert!(files.is_empty(), "no temporary file left: {files:?}");
}

#[test]
fn a_wrong_sha256_with_an_intact_crc32c_is_refused_and_nothing_is_written() {
    let (bytes, _) = container(Compression::None, Ecc::None, 300_000);
    // The index's SHA-256 of `w` no longer matches its (intact) bytes; CRC32C still does.
    let bytes = rewrite_index(&bytes, |idx| {
        let e = idx.chunks.iter_mut().find(|c| c.name == "w").unwrap();
        e.sha256[0] ^= 1;
    });
    let r = FoldReader::open(bytes).unwrap();
    let expected = r.read_chunk("w").unwrap_err();
    assert!(matches!(expected, fold::Error::Sha256Mismatch { .. }));
    let (result, written, files) = extract(&r, "w");
    assert_eq!(
        format!("{:?}", result.unwrap_err()),
        format!("{expected:?}")
    );
    assert_eq!(written, None);
    assert!(files.is_empty(), "{files:?}");
}

#[test]
fn a_refused_chunk_leaves_an_existing_output_as_it_was() {
    let (mut bytes, _) = container(Compression::None, Ecc::None, 300_000);
    let at = payload_offset(&bytes, "w");
    bytes[at] ^= 1;
    let r = FoldReader::open(bytes).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.bin");
    std::fs::write(&out, b"previous").unwrap();
    let destination = Destination::new(&out).existing(Existing::Replace);
    let error = fold::fs::extract_chunk(&r, "w", destination).unwrap_err();
    assert!(matches!(error, fold::Error::CrcMismatch { .. }));
    assert_eq!(std::fs::read(&out).unwrap(), b"previous");
    assert_eq!(files_in(dir.path()), ["out.bin"]);
    // Under Existing::Keep the existing file is refused before anything is read.
    let keep = Destination::new(&out).existing(Existing::Keep);
    let error = fold::fs::extract_chunk(&r, "notes", keep).unwrap_err();
    assert!(
        matches!(&error, fold::Error::Io(e) if e.kind() == std::io::ErrorKind::AlreadyExists),
        "{error:?}"
    );
}

#[test]
fn a_stored_chunk_needing_ecc_is_written_corrected() {
    let (mut bytes, payload) = container(Compression::None, Ecc::Rs(16), 300_000);
    let at = payload_offset(&bytes, "w") + 1000;
    bytes[at] ^= 0xFF;
    let r = FoldReader::open(bytes).unwrap();
    let (result, written, files) = extract(&r, "w");
    assert_eq!(result.unwrap(), payload.len() as u64);
    assert_eq!(
        written.unwrap(),
        payload,
        "the corrected bytes, not the damaged ones"
    );
    assert_eq!(files, ["out.bin"]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Same bytes as `read_chunk` when it succeeds, same error when it fails, nothing written
    /// then, whatever byte of the file is damaged.
    #[test]
    fn extract_chunk_agrees_with_read_chunk_under_damage(
        len in 0_usize..5000,
        ecc in prop_oneof![Just(Ecc::None), Just(Ecc::Rs(4))],
        zstd in any::<bool>(),
        flip in any::<prop::sample::Index>(),
        mask in 1_u8..,
    ) {
        let compression = if zstd { Compression::Zstd } else { Compression::None };
        let (mut bytes, _) = container(compression, ecc, len);
        let at = flip.index(bytes.len());
        bytes[at] ^= mask;
        let Ok(r) = FoldReader::open(bytes) else { return Ok(()) };
        let (result, written, files) = extract(&r, "w");
        match r.read_chunk("w") {
            Ok(expect) => {
                prop_assert_eq!(result.unwrap(), expect.len() as u64);
                prop_assert_eq!(written.unwrap(), expect);
            }
            Err(expected) => {
                prop_assert_eq!(format!("{:?}", result.unwrap_err()), format!("{expected:?}"));
                prop_assert_eq!(written, None);
                prop_assert!(files.is_empty(), "{:?}", files);
            }
        }
    }
}
