//! Writes `examples/data/iris_logistic.apr`, the model `embedded.rs` compiles into its binary.
//!
//! ```bash
//! cargo run -p apr --example make_embedded_model
//! ```

#![allow(clippy::print_stdout, reason = "an example reports what it wrote")]

use apr::{ModelCard, ModelType, SaveOptions};
use envelope_core::Compression;

#[path = "common/model.rs"]
mod embedded_model;

fn main() -> Result<(), apr::Error> {
    let model = embedded_model::LogisticRegression {
        classes: vec!["setosa".into(), "versicolor".into(), "virginica".into()],
        // One-vs-rest weights over (sepal length, sepal width, petal length, petal width).
        weights: vec![
            [0.41, 1.46, -2.26, -1.03],
            [0.42, -1.61, 0.58, -1.39],
            [-1.70, -1.53, 2.40, 2.55],
        ],
        intercepts: vec![0.26, 1.09, -1.12],
    };
    let options = SaveOptions {
        card: ModelCard {
            name: "iris-logistic".into(),
            version: "1.0.0".into(),
            license: Some("MIT".into()),
            domain: Some("Tabular".into()),
            created_at: "2026-11-22T00:00:00Z".into(),
            ..ModelCard::default()
        },
        compression: Compression::ZstdL19,
    };
    let bytes = apr::save_to_bytes(&model, ModelType::LogisticRegression, &options)?;
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/data/iris_logistic.apr"
    );
    std::fs::write(path, &bytes)?;
    println!("{path}: {} bytes", bytes.len());
    Ok(())
}
