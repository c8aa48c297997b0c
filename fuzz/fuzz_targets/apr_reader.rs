//! Fuzzes the `.apr` reader (envelope, metadata, tensor directory, tensors, serde payloads, GGUF
//! export of whatever loads) and the SafeTensors importer.
#![no_main]

#[path = "../../crates/apr/tests/fuzz_check/mod.rs"]
mod fuzz_check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_check::apr_reader(data));
