//! The body of the `ald_reader` fuzz target, shared with the stable corpus replay in
//! `fuzz_corpus.rs` (the target includes this file by path, so an input that once found a bug
//! keeps being checked by `cargo test`).

use ald::load::Opened;
use ald::{LoadOptions, StreamingDataset};

/// Any bytes: every `.ald` reader either refuses them with a typed error or reads them without a
/// panic. The same runs with the CRC32 trailer recomputed, so the fuzzer reaches the metadata,
/// schema and Arrow IPC checks behind the checksum (the full-verification paths; the lazy ones
/// stop at the prefix CRC-32C, which the fuzzer rarely matches).
pub(crate) fn ald_reader(data: &[u8]) {
    check(data);
    if data.len() >= envelope_core::CHECKSUM_LEN {
        let mut fixed = data.to_vec();
        envelope_core::codec::rewrite_trailer(&mut fixed);
        check(&fixed);
    }
}

fn check(data: &[u8]) {
    let options = LoadOptions::default();
    if let Ok(loaded) = ald::load_from_bytes(data) {
        assert_eq!(
            loaded.num_rows() as usize,
            loaded.batches().iter().map(|b| b.num_rows()).sum::<usize>()
        );
    }
    let _ = ald::read_schema(data);
    if let Ok(opened) = Opened::open(data, &options) {
        let _ = opened.read_dataset(&options);
    }
    if let Ok(streaming) = StreamingDataset::from_bytes(data, &options) {
        for chunk in 0..streaming.num_chunks().min(16) {
            let _ = streaming.get_chunk(chunk);
        }
        let rows = streaming.num_rows();
        let _ = streaming.get_rows(rows / 2, 3);
    }
}
