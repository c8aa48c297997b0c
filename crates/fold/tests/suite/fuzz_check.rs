//! The body of the `fold_reader` fuzz target, shared with the stable corpus replay
//! (`fuzz/fuzz_targets/fold_reader.rs` includes this file by path).

/// Feeds `data` to the reader as a whole file and to the index parser as index text.
///
/// - As a file: open, read and verify every chunk, repair. Nothing may panic. When every chunk
///   verifies untouched, repair keeps every payload and only recomputes ECC bytes (a damaged parity
///   byte does not affect the CRC, so verification alone does not see it): the repaired file must
///   verify untouched, and repairing it again must give the same bytes.
/// - As an index: whatever parses must serialize to text that parses to the same index, and that
///   text must be a fixed point (parse -> serialize -> parse gives the same bytes).
pub(crate) fn fold_reader(data: &[u8]) {
    if let Ok(r) = fold::FoldReader::open(data) {
        for c in &r.index().chunks {
            let _ = r.read_chunk(&c.name);
        }
        let untouched = |r: &fold::FoldReader<&[u8]>| {
            let report = r.verify_all(&|_| {});
            report.manifest.is_ok() && report.chunks.iter().all(|c| matches!(c.result, Ok(0)))
        };
        let mut out = Vec::new();
        if r.repair_into(&mut out).is_ok() && untouched(&r) {
            let r2 = fold::FoldReader::open(&out[..]).expect("repaired file opens");
            assert!(untouched(&r2), "repaired file verifies untouched");
            for c in &r.index().chunks {
                assert_eq!(r.read_chunk(&c.name).ok(), r2.read_chunk(&c.name).ok());
            }
            let mut again = Vec::new();
            r2.repair_into(&mut again).expect("repaired file repairs");
            assert_eq!(again, out, "repair is idempotent");
        }
    }
    if let Ok(index) = fold::parse_index(data) {
        let text = index.to_bytes();
        let again = fold::parse_index(&text).expect("serialized index parses");
        assert_eq!(
            again.to_bytes(),
            text,
            "index serialization is a fixed point"
        );
    }
}
