//! A single binary with its model inside (001 §1.1): the `.apr` file is compiled in with
//! `include_bytes!` and loaded with `load_from_bytes`, no filesystem, no setup. Run it and time
//! its cold start:
//!
//! ```bash
//! cargo build -p apr --release --example embedded
//! target/release/examples/embedded 5.1 3.5 1.4 0.2      # setosa
//! ```

#![allow(clippy::print_stdout, reason = "an example prints its prediction")]

use apr::ModelType;

#[path = "common/model.rs"]
mod embedded_model;

use embedded_model::LogisticRegression;

/// The model, verified (CRC32, header, model type) every time the binary starts.
const MODEL: &[u8] = include_bytes!("data/iris_logistic.apr");

fn main() -> Result<(), apr::Error> {
    let model: LogisticRegression = apr::load_from_bytes(MODEL, ModelType::LogisticRegression)?;
    let features: Vec<f32> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let x: [f32; 4] = features.try_into().unwrap_or([5.1, 3.5, 1.4, 0.2]);
    println!("{}", model.predict(&x));
    Ok(())
}
