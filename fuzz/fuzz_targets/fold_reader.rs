//! Fuzzes the `.fold` reader (header, index, chunk bounds, ECC, integrity, decompression, repair)
//! and the index parser / serializer round trip.
#![no_main]

#[path = "../../crates/fold/tests/suite/fuzz_check.rs"]
mod fuzz_check;

libfuzzer_sys::fuzz_target!(|data: &[u8]| fuzz_check::fold_reader(data));
