//! Writes the reference leak (`watermark::synthetic::reference_leak`: a marked column, half its
//! rows kept, shuffled) as text for an independent extractor (docs/watermark.md §8), one value per
//! line in Rust's shortest round-trip formatting.
//!
//! ```text
//! cargo run -p watermark --example sample > leaked.txt
//! python3 tests/python/watermark/reference_extract.py leaked.txt
//! ```

#![allow(clippy::print_stdout, reason = "the sample is written to stdout")]

fn main() {
    for value in watermark::synthetic::reference_leak() {
        println!("{value}");
    }
}
