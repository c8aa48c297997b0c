//! Fuzzes the JSON inputs of a lineage snapshot: the strict JSON reader, split definitions and
//! transform chains (deterministic, and JSON -> canonical CBOR -> the same value).
#![no_main]

#[path = "../../crates/lineage/tests/fuzz_check/mod.rs"]
mod fuzz_check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_check::lineage_json(data));
