//! The model type shared by `embedded.rs` and `make_embedded_model.rs`.

#![allow(dead_code, reason = "each example uses part of it")]

use serde::{Deserialize, Serialize};

/// Multinomial logistic regression, one-vs-rest.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct LogisticRegression {
    /// Class names.
    pub(crate) classes: Vec<String>,
    /// One weight row per class.
    pub(crate) weights: Vec<[f32; 4]>,
    /// One intercept per class.
    pub(crate) intercepts: Vec<f32>,
}

impl LogisticRegression {
    /// The most likely class of `x`.
    #[must_use]
    pub(crate) fn predict(&self, x: &[f32; 4]) -> &str {
        let score = |w: &[f32; 4], b: f32| w.iter().zip(x).map(|(w, x)| w * x).sum::<f32>() + b;
        let best = self
            .weights
            .iter()
            .zip(&self.intercepts)
            .map(|(w, b)| score(w, *b))
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map_or(0, |(i, _)| i);
        self.classes.get(best).map_or("?", String::as_str)
    }
}
