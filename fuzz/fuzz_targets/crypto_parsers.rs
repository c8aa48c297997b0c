//! Fuzzes the encryption block, signature block and public key file parsers: a parsed block must
//! encode back to the same bytes.
#![no_main]

#[path = "../../crates/envelope-sign/tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::crypto_parsers(data));
