//! Fuzzes opening a password-protected private key file: never a panic, malformed files refused
//! before any key derivation.
#![no_main]

#[path = "../../crates/envelope-sign/tests/fuzz_checks/mod.rs"]
mod fuzz_checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_checks::key_file(data));
