//! Complexity checks (issue 14 §2): an index scaled 4x must cost at most about 4x to open, verify
//! and read, whatever it scales (metadata keys, chunk names, `chunk_hashes` entries).
//!
//! These measure time, so they are `#[ignore]`d in a plain `cargo test` and run by `.ci/run`
//! (`--include-ignored`). They assert a *ratio*, never a duration: each input is timed at `n` and
//! `4n` (best of three runs), and the ratio must stay below [`MAX_RATIO`]. `n` is chosen so that
//! the quadratic code these replace spent most of its time in the quadratic part already at `n`
//! (a 4x input then costs about 16x), while linear code costs about 4x; 8 leaves room for
//! `n log n` parts (sorting keys for `manifest_hash`) and for noise on a shared machine.

use std::time::{Duration, Instant};

use fold::json::{Map, Value};
use fold::{Compression, Ecc, FoldReader, WriteOptions};

use super::build;

/// Largest accepted `time(4n) / time(n)`.
const MAX_RATIO: f64 = 8.0;

fn best_of_three(run: &dyn Fn()) -> Duration {
    (0..3)
        .map(|_| {
            let start = Instant::now();
            run();
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

/// Times `run` on `make(n)` and `make(4 * n)` and checks the ratio.
fn assert_scales_linearly<T>(what: &str, n: usize, make: impl Fn(usize) -> T, run: impl Fn(&T)) {
    let small = make(n);
    let large = make(4 * n);
    let t1 = best_of_three(&|| run(&small));
    let t4 = best_of_three(&|| run(&large));
    let ratio = t4.as_secs_f64() / t1.as_secs_f64().max(1e-9);
    // The figures, for the log of a `--nocapture` run.
    #[allow(clippy::print_stderr, reason = "reports the measured ratio")]
    {
        eprintln!("{what}: n = {n}: {t1:?}, 4n: {t4:?}, ratio {ratio:.2}");
    }
    assert!(
        ratio < MAX_RATIO,
        "{what}: 4x the input took {ratio:.1}x the time ({t1:?} -> {t4:?}); expected about 4x"
    );
}

fn options() -> WriteOptions {
    WriteOptions {
        compression: Compression::None,
        ecc: Ecc::None,
        ..WriteOptions::default()
    }
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
