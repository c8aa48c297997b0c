//! Writes a marked, then leaked, column as text for an independent extractor (docs/watermark.md
//! §8): seller key 00 01 .. 1f, buyer id `buyer-42`, 20,000 values of N(50, 10), strength 1e-3,
//! then every other row kept, shuffled and printed with Rust's shortest round-trip formatting,
//! one value per line.
//!
//! ```text
//! cargo run -p watermark --example sample > leaked.txt
//! python3 crates/watermark/tests/data/reference_extract.py leaked.txt
//! ```

#![allow(clippy::print_stdout, reason = "the sample is written to stdout")]

use watermark::synthetic::{Attack, Dist, Rng};
use watermark::{SellerKey, Watermark, Watermarkable};

fn main() {
    let mut secret = [0u8; 32];
    for (byte, value) in secret.iter_mut().zip(0u8..) {
        *byte = value;
    }
    let key = SellerKey::new(secret);
    let mark = Watermark::for_buyer(&key, b"buyer-42");
    let mut rng = Rng::new(42);
    let mut table = vec![
        Dist::Normal {
            mean: 50.0,
            sd: 10.0,
        }
        .column(&mut rng, 20_000),
    ];
    table[0]
        .embed_watermark(&mark, &key)
        .expect("20,000 values carry the mark");
    Attack::SampleRows(0.5).apply(&mut table, &mut rng);
    Attack::ShuffleRows.apply(&mut table, &mut rng);
    for value in &table[0] {
        println!("{value}");
    }
}
