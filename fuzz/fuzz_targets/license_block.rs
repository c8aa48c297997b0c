//! Fuzzes the license block parser, alone and framed in an envelope (whatever is accepted
//! re-encodes to the same bytes).
#![no_main]

#[path = "../../crates/envelope-license/tests/fuzz_check/mod.rs"]
mod fuzz_check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_check::license_block(data));
