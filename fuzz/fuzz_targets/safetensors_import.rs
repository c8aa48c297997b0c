//! Fuzzes the SafeTensors importer of `apr` (`apr::safetensors::import`, behind `apr import`),
//! with and without sidecars, and the export of whatever imports.
#![no_main]

#[path = "../../crates/apr/tests/fuzz_check_safetensors/mod.rs"]
mod fuzz_check_safetensors;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_check_safetensors::safetensors_import(data));
