//! Corruption sweeps: every bit flipped and every truncation of a small file gives a typed error
//! or the right data, never a panic and never wrong data; byte errors up to the ECC capacity are
//! repaired.

use fold::{Compression, Ecc, FoldReader, WriteOptions};
use proptest::prelude::*;

use super::{build, metadata, read_all};

fn small(ecc: Ecc, compression: Compression) -> (Vec<u8>, Vec<(String, Vec<u8>)>) {
    let bytes = build(
        WriteOptions::new(compression, ecc),
        &[
            ("a", "JSON", b"{\"k\":1}"),
            ("b", "TSAV", &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
        ],
        metadata(),
        1.0,
    );
    let expect = read_all(&bytes).unwrap();
    (bytes, expect)
}

/// Every chunk that reads successfully must equal the original.
fn never_wrong(bytes: &[u8], expect: &[(String, Vec<u8>)]) {
    let Ok(r) = FoldReader::open(bytes) else {
        return;
    };
    for (name, payload) in expect {
        if let Ok(got) = r.read_chunk(name) {
            assert_eq!(&got, payload, "chunk {name} returned wrong data");
        }
    }
    let _ = r.verify_all(&|_| {});
}

#[test]
fn every_single_bit_flip_gives_an_error_or_the_original_data() {
    for (ecc, compression) in [
        (Ecc::None, Compression::None),
        (Ecc::None, Compression::Zstd),
        (Ecc::Rs(4), Compression::Zstd),
    ] {
        let (bytes, expect) = small(ecc, compression);
        for i in 0..bytes.len() * 8 {
            let mut b = bytes.clone();
            b[i / 8] ^= 1 << (i % 8);
            never_wrong(&b, &expect);
        }
    }
}

#[test]
fn every_truncation_is_refused_with_a_typed_error() {
    let (bytes, _) = small(Ecc::Rs(4), Compression::Zstd);
    for len in 0..bytes.len() {
        let cut = &bytes[..len];
        let ok = FoldReader::open(cut).is_ok_and(|r| r.verify_all(&|_| {}).is_ok());
        assert!(!ok, "truncated at {len} verified");
    }
}

#[test]
fn flipped_payload_bits_in_chunks_without_ecc_are_always_caught() {
    let (bytes, _) = small(Ecc::None, Compression::None);
    let r = FoldReader::open(&bytes[..]).unwrap();
    let e = r.index().chunk("b").unwrap().clone();
    for i in 0..usize::try_from(e.comp_len).unwrap() * 8 {
        let mut b = bytes.clone();
        b[usize::try_from(e.offset).unwrap() + 32 + i / 8] ^= 1 << (i % 8);
        let r = FoldReader::open(&b[..]).unwrap();
        assert!(matches!(
            r.read_chunk("b"),
            Err(fold::Error::CrcMismatch { .. })
        ));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn byte_errors_up_to_capacity_in_every_chunk_are_repaired(
        nsym in prop::sample::select(vec![2_u8, 8, 16, 32, 64]),
        len in 0_usize..2000,
        seed in any::<u64>(),
    ) {
        let payload: Vec<u8> = (0..len).map(|i| (seed.rotate_left(u32::try_from(i % 64).unwrap()) ^ i as u64).to_le_bytes()[0]).collect();
        let bytes = build(
            WriteOptions::new(Compression::None, Ecc::Rs(nsym)),
            &[("x", "TSAV", &payload), ("y", "JSON", b"[]")],
            metadata(),
            1.0,
        );
        let r = FoldReader::open(&bytes[..]).unwrap();
        let mut corrupted = bytes.clone();
        let mut state = seed | 1;
        let mut next = || { state ^= state << 13; state ^= state >> 7; state ^= state << 17; state };
        for e in &r.index().chunks {
            let body = usize::try_from(e.offset).unwrap() + 32;
            let k = 255 - usize::from(nsym);
            let comp = usize::try_from(e.comp_len).unwrap();
            for cw in 0..comp.div_ceil(k) {
                let data_len = k.min(comp - cw * k);
                let n = data_len + usize::from(nsym);
                // Up to nsym/2 errors at distinct positions of this codeword (data or parity).
                let errs = usize::try_from(next() % (u64::from(nsym / 2) + 1)).unwrap();
                let mut pos: Vec<usize> = Vec::new();
                while pos.len() < errs {
                    let p = usize::try_from(next() % n as u64).unwrap();
                    if !pos.contains(&p) { pos.push(p); }
                }
                for p in pos {
                    let at = if p < data_len { body + cw * k + p } else { body + comp + cw * usize::from(nsym) + (p - data_len) };
                    corrupted[at] ^= u8::try_from(next() % 255 + 1).unwrap();
                }
            }
        }
        let r2 = FoldReader::open(&corrupted[..]).unwrap();
        prop_assert_eq!(r2.read_chunk("x").unwrap(), payload);
        let mut repaired = Vec::new();
        r2.repair_into(&mut repaired).unwrap();
        prop_assert_eq!(repaired, bytes);
    }
}

#[test]
fn damage_confined_to_ecc_bytes_is_found_by_damaged_parity_and_undone_by_repair() {
    let payload = vec![0xAB_u8; 600]; // three rs(32) codewords
    let bytes = build(
        WriteOptions::new(Compression::None, Ecc::Rs(32)),
        &[("x", "TSAV", &payload)],
        metadata(),
        1.0,
    );
    let mut bad = bytes.clone();
    bad[28 + 32 + 600 + 32 + 5] ^= 1; // parity of codeword 1
    let r = FoldReader::open(&bad[..]).unwrap();
    assert_eq!(
        r.verify_chunk("x").unwrap(),
        0,
        "data is intact, CRC matches"
    );
    assert_eq!(r.damaged_parity("x").unwrap(), [1]);
    let mut fixed = Vec::new();
    r.repair_into(&mut fixed).unwrap();
    assert_eq!(fixed, bytes);
}
