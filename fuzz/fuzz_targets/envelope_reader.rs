//! Fuzzes the whole envelope reader (section walk, chunk index, decompression), with and without
//! a recomputed CRC trailer: a verified file must write back to the same bytes.
#![no_main]

#[path = "../../crates/envelope-core/tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::envelope_reader(data));
