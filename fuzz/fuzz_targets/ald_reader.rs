//! Fuzzes the `.ald` readers: whole loads (the Arrow IPC message framing and decoding of every
//! compression), the schema section, and STREAMING chunk and row reads.
#![no_main]

#[path = "../../crates/ald/tests/fuzz_check/mod.rs"]
mod fuzz_check;

libfuzzer_sys::fuzz_target!(
    init: {
        // `ald` catches the panics arrow-rs's decoder still raises on some malformed input and
        // returns InvalidFormat (ipc::decode_guarded). libfuzzer's panic hook would abort on them
        // before the catch: restore the default hook, so only a panic that escapes a reader (one
        // libfuzzer's own catch sees) counts as a crash.
        let _ = std::panic::take_hook();
    },
    |data: &[u8]| fuzz_check::ald_reader(data)
);
