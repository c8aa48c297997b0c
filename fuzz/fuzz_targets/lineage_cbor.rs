//! Fuzzes the CBOR inputs of lineage: the strict canonical decoder and checkpoint files (whatever
//! is accepted re-encodes to the same bytes).
#![no_main]

#[path = "../../crates/lineage/tests/fuzz_check/mod.rs"]
mod fuzz_check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_check::lineage_cbor(data));
