//! The tensor layout of linear and logistic regression (003 §7.1: "coefficients, intercept"), so a
//! serde model of those types exports to GGUF like a tensor model (`docs/apr.md` §6, "Serde models").
//!
//! A serde payload is the caller's own type; what this reads is the shape such models have in
//! practice (aprender's `LinearRegression`, scikit-learn's `coef_`/`intercept_` saved as a
//! struct): a map holding `coefficients` (an array of numbers, or one array per class) and
//! `intercept` (a number, or one per class; `intercepts` is accepted too). Anything else is
//! refused with `ExportFailed` naming the field, never guessed. Values become F32, the precision
//! ggml computes in; a value outside F32's range is refused rather than written as infinity.

use serde_json::Value;

use crate::codec::AprFile;
use crate::error::{Error, Result};
use crate::model::TensorModel;
use crate::model_type::ModelType;
use crate::tensor::Tensor;

const TARGET: &str = "GGUF";

fn refused(field: &str, reason: &'static str) -> Error {
    Error::ExportFailed {
        target: TARGET,
        tensor: field.to_owned(),
        reason,
    }
}

/// The regression model of a serde `.apr` file as the tensors `coefficients` (`[features]` or
/// `[classes, features]`) and `intercept` (`[1]` or `[classes]`).
///
/// # Errors
/// `ExportFailed` for a model type without a tensor layout (only LINEAR_REGRESSION and
/// LOGISTIC_REGRESSION have one) or a payload without numeric `coefficients` and `intercept`
/// (naming the field); the payload's decode errors.
pub fn regression_tensors<B: AsRef<[u8]>>(file: &AprFile<B>) -> Result<TensorModel> {
    match file.model_type() {
        Some(ModelType::LinearRegression | ModelType::LogisticRegression) => {}
        _ => {
            return Err(refused(
                "(serde payload)",
                "only LINEAR_REGRESSION and LOGISTIC_REGRESSION serde models have a GGUF tensor \
                 layout (003 §7.1); save other models as named tensors to export them",
            ));
        }
    }
    from_value(&file.model::<Value>()?)
}

fn from_value(value: &Value) -> Result<TensorModel> {
    let Value::Object(fields) = value else {
        return Err(refused(
            "(serde payload)",
            "the payload is not a map with `coefficients` and `intercept`",
        ));
    };
    let coefficients = fields
        .get("coefficients")
        .ok_or_else(|| refused("coefficients", "the payload has no `coefficients` field"))?;
    let intercept = fields
        .get("intercept")
        .or_else(|| fields.get("intercepts"))
        .ok_or_else(|| refused("intercept", "the payload has no `intercept` field"))?;

    let (shape, values) = match coefficients {
        Value::Array(rows) if rows.iter().all(Value::is_array) && !rows.is_empty() => {
            let mut values = Vec::new();
            let mut width = None;
            for row in rows {
                let row = numbers("coefficients", row)?;
                if *width.get_or_insert(row.len()) != row.len() {
                    return Err(refused(
                        "coefficients",
                        "the per-class coefficient rows differ in length",
                    ));
                }
                values.extend(row);
            }
            (vec![rows.len() as u64, width.unwrap_or(0) as u64], values)
        }
        other => {
            let values = numbers("coefficients", other)?;
            (vec![values.len() as u64], values)
        }
    };
    if values.is_empty() {
        return Err(refused(
            "coefficients",
            "the model has no coefficients (not fitted?)",
        ));
    }
    let intercept = match intercept {
        Value::Array(_) => numbers("intercept", intercept)?,
        single => numbers("intercept", &Value::Array(vec![single.clone()]))?,
    };
    if shape.len() == 2 && intercept.len() as u64 != shape[0] {
        return Err(refused(
            "intercept",
            "there is not one intercept per class row of `coefficients`",
        ));
    }
    TensorModel::new(vec![
        Tensor::from_f32("coefficients", shape, &values)?,
        Tensor::from_f32("intercept", vec![intercept.len() as u64], &intercept)?,
    ])
}

/// The numbers of a flat array, as F32.
fn numbers(field: &'static str, value: &Value) -> Result<Vec<f32>> {
    let Value::Array(items) = value else {
        return Err(refused(field, "not a number or an array of numbers"));
    };
    items
        .iter()
        .map(|item| {
            let number = item
                .as_f64()
                .ok_or_else(|| refused(field, "not a number or an array of numbers"))?;
            #[allow(
                clippy::cast_possible_truncation,
                reason = "rounding to F32 is the point"
            )]
            let single = number as f32;
            if single.is_finite() {
                Ok(single)
            } else {
                Err(refused(field, "a value is not finite in F32"))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn coefficients_and_intercept_become_tensors() {
        let model = from_value(&json!({"coefficients": [1.5, -2.0], "intercept": 0.25})).unwrap();
        assert_eq!(model.tensors[0].name, "coefficients");
        assert_eq!(model.tensors[0].shape, vec![2]);
        assert_eq!(model.tensors[0].to_f32().unwrap(), vec![1.5, -2.0]);
        assert_eq!(model.tensors[1].shape, vec![1]);
        assert_eq!(model.tensors[1].to_f32().unwrap(), vec![0.25]);

        let classes = from_value(&json!({
            "coefficients": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]],
            "intercepts": [0.1, 0.2, 0.3],
        }))
        .unwrap();
        assert_eq!(classes.tensors[0].shape, vec![3, 2]);
        assert_eq!(classes.tensors[1].shape, vec![3]);
    }

    #[test]
    fn anything_else_is_refused_naming_the_field() {
        for (value, field) in [
            (json!([1.0]), "(serde payload)"),
            (json!({"intercept": 1.0}), "coefficients"),
            (json!({"coefficients": [1.0]}), "intercept"),
            (
                json!({"coefficients": ["a"], "intercept": 1.0}),
                "coefficients",
            ),
            (
                json!({"coefficients": [], "intercept": 1.0}),
                "coefficients",
            ),
            (
                json!({"coefficients": [1e300], "intercept": 1.0}),
                "coefficients",
            ),
            (
                json!({"coefficients": [[1.0], [1.0, 2.0]], "intercept": [1.0, 2.0]}),
                "coefficients",
            ),
            (
                json!({"coefficients": [[1.0], [2.0]], "intercept": [1.0]}),
                "intercept",
            ),
        ] {
            let error = from_value(&value).unwrap_err();
            assert!(
                matches!(&error, Error::ExportFailed { tensor, .. } if tensor == field),
                "{value}: {error}"
            );
        }
    }
}
