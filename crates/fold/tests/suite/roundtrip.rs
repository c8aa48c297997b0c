//! Write -> read identity and the partial-read property.

use std::sync::Mutex;

use fold::{Compression, Ecc, FoldReader, Source, WriteOptions};

use super::{Spec, build, metadata, read_all};

/// A container with default options and the shared [`metadata`].
fn build_default(chunks: &[Spec<'_>], created_at: f64) -> Vec<u8> {
    build(WriteOptions::default(), chunks, metadata(), created_at)
}

#[test]
fn written_chunks_read_back_identical_for_every_compression_and_ecc() {
    let big: Vec<u8> = (0..5000_u32).map(|i| (i % 251).to_le_bytes()[0]).collect();
    for compression in [Compression::None, Compression::Zstd] {
        for ecc in [
            Ecc::None,
            Ecc::Rs(1),
            Ecc::Rs(16),
            Ecc::Rs(64),
            Ecc::Rs(254),
        ] {
            let opts = WriteOptions::new(compression, ecc);
            let chunks = [
                ("a", "JSON", &b"{}"[..]),
                ("empty", "NPZ0", &[][..]),
                ("big", "TSAV", &big[..]),
            ];
            let bytes = build(opts, &chunks, metadata(), 1.5);
            let got = read_all(&bytes).unwrap();
            for ((n, _, p), (gn, gp)) in chunks.iter().zip(&got) {
                assert_eq!(
                    (*n, *p),
                    (gn.as_str(), gp.as_slice()),
                    "{compression:?} {ecc}"
                );
            }
            let r = FoldReader::open(&bytes[..]).unwrap();
            assert!(r.verify_all(&|_| {}).is_ok());
        }
    }
}

#[test]
fn index_records_pyfolds_fields_and_hashes() {
    let bytes = build_default(&[("a", "JSON", b"{}")], 2.0);
    let r = FoldReader::open(&bytes[..]).unwrap();
    let idx = r.index();
    assert_eq!(idx.version, "1.2.0");
    let keys: Vec<&str> = idx.metadata.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "model_type",
            "tags",
            "x",
            "y",
            "z",
            "chunk_hashes",
            "manifest_hash"
        ]
    );
    idx.check_manifest_hash().unwrap();
    let text =
        std::str::from_utf8(&bytes[usize::try_from(r.header().index_off).unwrap()..]).unwrap();
    assert!(text.starts_with(r#"{"format":"fold","version":"1.2.0","created_at_unix":2.0,"metadata":{"model_type":"Tiny","tags":{"owner":"Zoë""#));
    assert!(text.contains(
        r#""chunks":[{"name":"a","ctype":"JSON","flags":1,"offset":28,"header_len":32,"#
    ));
}

/// A source that records every range read.
struct Recording<'a> {
    bytes: &'a [u8],
    reads: Mutex<Vec<(u64, u64)>>,
}

impl Source for Recording<'_> {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> std::io::Result<()> {
        self.reads.lock().unwrap().push((offset, buf.len() as u64));
        self.bytes.read_exact_at(offset, buf)
    }
}

#[test]
fn opening_reads_header_and_index_only_and_a_chunk_read_touches_only_its_range() {
    let payload = vec![9_u8; 10_000];
    let bytes = build_default(
        &[
            ("a", "TSAV", &payload),
            ("b", "TSAV", &payload),
            ("c", "JSON", b"{}"),
        ],
        3.0,
    );
    let src = Recording {
        bytes: &bytes,
        reads: Mutex::new(Vec::new()),
    };
    let r = FoldReader::open(src).unwrap();
    let h = r.header();
    assert_eq!(
        *r.source().reads.lock().unwrap(),
        [(0, 28), (h.index_off, h.index_len)]
    );
    r.source().reads.lock().unwrap().clear();
    assert_eq!(r.read_chunk("b").unwrap(), payload);
    let e = r.index().chunk("b").unwrap().clone();
    let reads = r.source().reads.lock().unwrap().clone();
    for (off, len) in reads {
        assert!(
            off >= e.offset && off + len <= e.end().unwrap(),
            "read {off}+{len} outside chunk b"
        );
    }
}

#[test]
fn seek_source_reads_like_a_slice() {
    let bytes = build_default(&[("a", "JSON", b"[1]")], 3.0);
    let src = fold::SeekSource::new(std::io::Cursor::new(bytes)).unwrap();
    assert_eq!(
        FoldReader::open(src).unwrap().read_chunk("a").unwrap(),
        b"[1]"
    );
}

#[test]
fn atomic_save_replaces_only_on_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.mind");
    let mut f = fold::fs::AtomicFoldFile::create(&path, WriteOptions::default()).unwrap();
    f.writer().add_chunk("a", "JSON", b"{}").unwrap();
    drop(f);
    assert!(!path.exists(), "an uncommitted write must not appear");
    let mut f = fold::fs::AtomicFoldFile::create(&path, WriteOptions::default()).unwrap();
    f.writer().add_chunk("a", "JSON", b"{}").unwrap();
    f.commit(metadata(), 4.0).unwrap();
    assert_eq!(
        fold::fs::open(&path).unwrap().read_chunk("a").unwrap(),
        b"{}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary file left"
    );
}

#[test]
fn signature_written_by_rust_verifies_and_tampering_is_detected() {
    let key = std::fs::read_to_string(super::data_path("pyfolds_signed.key.pem")).unwrap();
    let public = std::fs::read_to_string(super::data_path("pyfolds_signed.pub.pem")).unwrap();
    let mut md = metadata();
    fold::signature::sign(&mut md, &key, "k1").unwrap();
    let bytes = build(WriteOptions::default(), &[("a", "JSON", b"{}")], md, 5.0);
    let r = FoldReader::open(&bytes[..]).unwrap();
    r.verify_signature(&public).unwrap();
    let tampered = super::rewrite_index(&bytes, |idx| {
        fold::json::map_set(
            &mut idx.metadata,
            "model_type",
            fold::json::Value::String("Other".into()),
        );
    });
    let r = FoldReader::open(&tampered[..]).unwrap();
    assert!(matches!(
        r.verify_signature(&public),
        Err(fold::Error::Signature(
            fold::SignatureProblem::PayloadMismatch
        ))
    ));
}

/// What one reader says about one chunk: its bytes, the bytes ECC corrected, whether the whole
/// file verifies.
type Probe = (Vec<u8>, usize, bool);

/// The four kinds of source take different paths through the reader: a slice or a memory map is
/// hashed in place (and copied only for `read_chunk` of a stored chunk or for ECC), a positional
/// file and a `Read + Seek` are read into a buffer first. Chunks of 1 MiB and more use the
/// two-thread pipelines. Every path gives the same bytes, the same verdicts and the same
/// corrections, intact and damaged within the ECC capacity.
#[test]
fn every_kind_of_source_reads_the_same() {
    // Incompressible (xorshift), so the zstd chunk is as large as the stored one.
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let big: Vec<u8> = (0..5 << 18)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    for compression in [Compression::None, Compression::Zstd] {
        let opts = WriteOptions::new(compression, Ecc::Rs(16));
        let chunks = [
            ("small", "JSON", &b"{\"k\":1}"[..]),
            ("big", "TSAV", &big[..]),
        ];
        let intact = build(opts, &chunks, metadata(), 3.0);
        let mut damaged = intact.clone();
        let r = FoldReader::open(&intact[..]).unwrap();
        let body = usize::try_from(r.index().chunk("big").unwrap().offset).unwrap() + 32;
        for codeword in [0, 7, 1000] {
            damaged[body + codeword * 239 + 5] ^= 0xA5;
        }
        for (label, bytes) in [("intact", &intact), ("damaged", &damaged)] {
            let path = dir.path().join(format!("{label}-{compression:?}.fold"));
            std::fs::write(&path, bytes).unwrap();
            let expect_fixed = if label == "intact" { 0 } else { 3 };
            let check = |kind: &str, r: &dyn Fn(&str) -> Probe| {
                let (data, fixed, all_ok) = r("big");
                assert!(data == big, "{kind} {label} {compression:?}: data differs");
                assert_eq!(fixed, expect_fixed, "{kind} {label} {compression:?}");
                assert!(all_ok, "{kind} {label} {compression:?}");
                assert_eq!(r("small").0, b"{\"k\":1}", "{kind}");
            };
            fn probe<S: Source>(r: &FoldReader<S>, name: &str) -> Probe {
                (
                    r.read_chunk(name).unwrap(),
                    r.verify_chunk(name).unwrap(),
                    r.verify_all(&|_| {}).is_ok(),
                )
            }
            let slice = FoldReader::open(&bytes[..]).unwrap();
            check("slice", &|name| probe(&slice, name));
            let mapped = fold::fs::open(&path).unwrap();
            check("mapped", &|name| probe(&mapped, name));
            let pread = FoldReader::open(fold::FileSource::open(&path).unwrap()).unwrap();
            check("pread", &|name| probe(&pread, name));
            let seek = FoldReader::open(
                fold::SeekSource::new(std::io::Cursor::new(bytes.clone())).unwrap(),
            )
            .unwrap();
            check("seek", &|name| probe(&seek, name));
        }
    }
}
