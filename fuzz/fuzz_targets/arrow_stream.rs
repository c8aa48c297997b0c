//! Fuzzes the Arrow IPC stream reader of `ald::interchange` (`.arrows` inputs): message framing,
//! schema, dictionaries and record batches, and the re-encoding of what reads.
#![no_main]

#[path = "../../crates/ald/tests/fuzz_check_interchange/mod.rs"]
mod fuzz_check_interchange;

libfuzzer_sys::fuzz_target!(
    init: {
        // The interchange readers catch the panics arrow and parquet still raise on some inputs
        // (and silence their message with a panic hook of their own). libfuzzer's hook would abort
        // on them before the catch: restore the default hook, so only a panic that escapes a reader
        // (one libfuzzer's own catch sees) counts as a crash.
        let _ = std::panic::take_hook();
    },
    |data: &[u8]| fuzz_check_interchange::arrow_stream(data)
);
