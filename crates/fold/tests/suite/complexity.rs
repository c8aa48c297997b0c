//! Complexity checks (issue 14 §2): an index scaled 4x must cost at most about 4x to open, verify
//! and read, whatever it scales (metadata keys, chunk names, `chunk_hashes` entries).
//!
//! These measure time, so they are `#[ignore]`d in a plain `cargo test` and run by `.ci/run`
//! (`--include-ignored`). They assert a ratio, never a duration (`tests/complexity/scaling.rs`).
//! With the `n` chosen here the quadratic code they replace measured 10-18x; linear code 4.0x.

use fold::json::{Map, Value};
use fold::{Compression, Ecc, FoldReader, WriteOptions};

use super::build;

#[path = "../../../../tests/complexity/scaling.rs"]
mod scaling;
use scaling::assert_scales_linearly;

fn options() -> WriteOptions {
    WriteOptions::new(Compression::None, Ecc::None)
}

/// Opening parses the index: duplicate-key checks over one object of `n` metadata keys.
#[test]
#[ignore = "complexity: run by .ci/run"]
fn index_with_many_metadata_keys_opens_in_linear_time() {
    assert_scales_linearly(
        "metadata keys",
        20_000,
        |n| {
            let metadata: Map = (0..n)
                .map(|i| (format!("key-{i:08}"), Value::from_u64(i as u64)))
                .collect();
            build(options(), &[("a", "JSON", b"{}")], metadata, 1.0)
        },
        |bytes| {
            let r = FoldReader::open(&bytes[..]).unwrap();
            assert!(r.verify_all(&|_| {}).is_ok());
        },
    );
}

/// `n` chunks: the duplicate-name check at open, `chunk_hashes` lookups while verifying, and a
/// lookup by name for every chunk read.
#[test]
#[ignore = "complexity: run by .ci/run"]
fn index_with_many_chunks_opens_verifies_and_reads_in_linear_time() {
    assert_scales_linearly(
        "chunks",
        5_000,
        |n| {
            let names: Vec<String> = (0..n).map(|i| format!("chunk-{i:08}")).collect();
            let specs: Vec<(&str, &str, &[u8])> = names
                .iter()
                .map(|name| (name.as_str(), "JSON", &b"{}"[..]))
                .collect();
            (build(options(), &specs, Vec::new(), 1.0), names)
        },
        |(bytes, names)| {
            let r = FoldReader::open(&bytes[..]).unwrap();
            assert!(r.verify_all(&|_| {}).is_ok());
            for name in names {
                r.read_chunk(name).unwrap();
            }
        },
    );
}

/// Writing `n` chunks checks each new name against the ones already added.
#[test]
#[ignore = "complexity: run by .ci/run"]
fn writing_many_chunks_takes_linear_time() {
    assert_scales_linearly(
        "writer chunks",
        5_000,
        |n| (0..n).map(|i| format!("chunk-{i:08}")).collect::<Vec<_>>(),
        |names| {
            let specs: Vec<(&str, &str, &[u8])> = names
                .iter()
                .map(|name| (name.as_str(), "JSON", &b"{}"[..]))
                .collect();
            build(options(), &specs, Vec::new(), 1.0);
        },
    );
}
