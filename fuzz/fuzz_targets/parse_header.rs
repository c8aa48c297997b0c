//! Fuzzes `Header::parse`: any bytes either parse canonically or are refused, never a panic.
#![no_main]

#[path = "../../crates/envelope-core/tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::parse_header(data));
