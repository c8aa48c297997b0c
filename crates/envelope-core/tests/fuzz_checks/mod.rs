//! The properties the fuzz targets check, shared with the stable corpus replay in `tests.rs`.
//! The fuzz targets include this file by path (`fuzz/fuzz_targets/*.rs`), so a corpus entry that
//! once found a bug keeps being checked by `cargo test` without nightly.

use envelope_core::{Envelope, HEADER_LEN, Header};

/// `parse_header`: any bytes either parse into a header that re-encodes to exactly those 32 bytes,
/// or are refused with a typed error. Never a panic.
pub(crate) fn parse_header(data: &[u8]) {
    if let Ok(header) = Header::parse(data) {
        assert_eq!(
            &header.encode()[..],
            &data[..HEADER_LEN],
            "header re-encodes to the same bytes"
        );
        let again = Header::parse(&header.encode()).expect("re-encoded header parses");
        assert_eq!(again, header);
    }
}

/// `envelope_reader`: any bytes either verify as an envelope whose parts write back to exactly the
/// same bytes (so no byte of a verified file is ignored), or are refused with a typed error.
/// The same check runs with the CRC trailer recomputed, so the fuzzer reaches the section walk
/// behind the checksum.
pub(crate) fn envelope_reader(data: &[u8]) {
    check_round_trip(data);
    check_lazy(data);
    if data.len() >= envelope_core::CHECKSUM_LEN {
        let mut fixed = data.to_vec();
        envelope_core::codec::rewrite_trailer(&mut fixed);
        check_round_trip(&fixed);
        check_lazy(&fixed);
    }
}

/// The lazy reader never panics, and wherever it and the full reader both accept a file they
/// agree on its layout, its chunks and its payload.
fn check_lazy(data: &[u8]) {
    let Some(format) = envelope_core::identify(data).ok().map(|(format, _)| format) else {
        return;
    };
    let Ok(lazy) = Envelope::parse_lazy(data, format) else {
        return;
    };
    let full = Envelope::parse(data, format).ok();
    if let Some(full) = &full {
        assert_eq!(lazy.layout(), full.layout(), "lazy and full walks agree");
    }
    let lazy_payload = lazy.decode_payload();
    if let (Ok(lazy_payload), Some(Ok(full_payload))) =
        (&lazy_payload, full.as_ref().map(Envelope::decode_payload))
    {
        assert_eq!(lazy_payload, &full_payload, "lazy and full payloads agree");
    }
    if let Some(index) = lazy.chunk_index() {
        for chunk in 0..index.len() {
            let _ = lazy.decode_chunk(chunk);
        }
    }
    let _ = lazy.verify_checksum();
}

fn check_round_trip(data: &[u8]) {
    let Ok(envelope) = Envelope::parse_any(data) else {
        return;
    };
    let written = envelope
        .to_parts()
        .to_bytes()
        .expect("a verified file's parts are writable");
    assert_eq!(written, data, "parse -> write gives back the same bytes");
    // Decoding may fail (corrupt compressed stream, encrypted payload), but never panic, and on
    // success yields exactly the declared size.
    if let Ok(payload) = envelope.decode_payload() {
        assert_eq!(payload.len() as u64, envelope.uncompressed_size());
    }
    if let Some(index) = envelope.chunk_index() {
        for chunk in 0..index.len() {
            let stored = envelope.chunk(chunk).expect("indexed chunks are in bounds");
            assert_eq!(stored.len() as u64, index.entries()[chunk].stored_size);
            let _ = envelope.decode_chunk(chunk);
        }
    }
}
