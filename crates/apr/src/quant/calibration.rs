//! Quantization checked on real inputs (001 §6.2.9): calibration samples, the output error a
//! quantized tensor causes on them, and its record in the [`QuantizationInfo`].
//!
//! The built-in quantizers choose their ranges from the weights (min/max, as ggml does), so
//! calibration data does not change a byte of the output; it measures what quantization does to
//! each layer's output on the given samples and records it (over the tensor's type's
//! [`QuantType::warning_threshold`](super::QuantType::warning_threshold) is a warning in the
//! metadata: for a layer fed ordinary inputs the output error tracks the weights' relative error,
//! so a fixed 5% would warn on every layer of an ordinary 4-bit run, `docs/apr.md` §5.6). Samples come from a numeric CSV ([`Samples::parse_csv`], or [`Samples::read`] with
//! the `fs` feature).

use super::{ACCURACY_WARNING_THRESHOLD, QuantType, QuantizationInfo};
use crate::error::Result;
use crate::tensor::Tensor;

/// Most samples used per tensor (the check is a measurement, not training).
pub const MAX_SAMPLES: usize = 1024;

/// Why calibration samples were refused (the `Usage` signal, through [`crate::Error`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SamplesError {
    /// A row after the first has a value that is not a number.
    #[error("the calibration CSV has a non-numeric value after its header")]
    NonNumeric {
        /// The row's line number (1-based).
        line: usize,
    },
    /// A row has another number of values than the first numeric row.
    #[error("the calibration CSV's rows have different lengths")]
    RowLength {
        /// The row's line number (1-based).
        line: usize,
        /// Values per row of the first numeric row.
        expected: usize,
        /// Values in this row.
        found: usize,
    },
    /// The CSV has no numeric row at all.
    #[error("the calibration CSV has no numeric rows")]
    NoRows,
}

/// Calibration samples: `rows × cols` values, row-major, at most [`MAX_SAMPLES`] rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Samples {
    values: Vec<f32>,
    cols: usize,
}

impl Samples {
    /// Parses a numeric CSV (one row per sample, one column per input feature); a first line that
    /// does not parse is taken as the header, blank lines are skipped, rows past
    /// [`MAX_SAMPLES`] are checked but not kept.
    ///
    /// # Errors
    /// [`SamplesError`] for a non-numeric value after the header, rows of different lengths, or
    /// no numeric row.
    pub fn parse_csv(text: &str) -> Result<Self, SamplesError> {
        let mut values = Vec::new();
        let mut cols = 0;
        for (number, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let row: Result<Vec<f32>, _> =
                line.split(',').map(|f| f.trim().parse::<f32>()).collect();
            let Ok(row) = row else {
                if number == 0 {
                    continue;
                }
                return Err(SamplesError::NonNumeric { line: number + 1 });
            };
            if cols == 0 {
                cols = row.len();
            } else if row.len() != cols {
                return Err(SamplesError::RowLength {
                    line: number + 1,
                    expected: cols,
                    found: row.len(),
                });
            }
            if values.len() / cols.max(1) < MAX_SAMPLES {
                values.extend(row);
            }
        }
        if cols == 0 {
            return Err(SamplesError::NoRows);
        }
        Ok(Self { values, cols })
    }

    /// Reads and parses the CSV file at `path` ([`Samples::parse_csv`]).
    ///
    /// # Errors
    /// `Io` (`CalibrationRead`) if the file cannot be read; as [`Samples::parse_csv`].
    #[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
    pub fn read(path: &std::path::Path) -> Result<Self> {
        let text =
            std::fs::read_to_string(path).map_err(|source| crate::Error::CalibrationRead {
                path: path.to_owned(),
                source,
            })?;
        Ok(Self::parse_csv(&text)?)
    }

    /// Number of samples kept.
    #[must_use]
    pub fn rows(&self) -> usize {
        self.values.len().checked_div(self.cols).unwrap_or(0)
    }

    /// Values per sample (the input width a tensor must have to be checked).
    #[must_use]
    pub fn cols(&self) -> usize {
        self.cols
    }
}

/// One tensor's measured output error.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    /// The tensor's name.
    pub name: String,
    /// `||W x - W' x|| / ||W x||` over the samples (0 when every `W x` is zero).
    pub output_error: f32,
}

/// Measures a quantized 2-D tensor `[out, in]` whose `in` equals the sample width; `None` for a
/// tensor that is not quantized or does not fit the samples.
///
/// # Errors
/// As [`Tensor::to_f32`] for either tensor.
pub fn check(original: &Tensor, quantized: &Tensor, samples: &Samples) -> Result<Option<Check>> {
    let fits = quantized.dtype.is_quantized()
        && original.shape.len() == 2
        && usize::try_from(original.shape[1]).is_ok_and(|inputs| inputs == samples.cols);
    if !fits {
        return Ok(None);
    }
    let w = original.to_f32()?;
    let q = quantized.to_f32()?;
    let (mut err, mut norm) = (0.0f64, 0.0f64);
    for x in samples.values.chunks_exact(samples.cols) {
        for (row, qrow) in w
            .chunks_exact(samples.cols)
            .zip(q.chunks_exact(samples.cols))
        {
            let (mut y, mut yq) = (0.0f64, 0.0f64);
            for ((a, b), xi) in row.iter().zip(qrow).zip(x) {
                y += f64::from(*a) * f64::from(*xi);
                yq += f64::from(*b) * f64::from(*xi);
            }
            err += (y - yq) * (y - yq);
            norm += y * y;
        }
    }
    #[allow(clippy::cast_possible_truncation, reason = "a ratio, reported in f32")]
    let output_error = if norm == 0.0 {
        0.0
    } else {
        (err / norm).sqrt() as f32
    };
    Ok(Some(Check {
        name: original.name.clone(),
        output_error,
    }))
}

/// Records the checks in `info`: each tensor's `output_error`, and a warning for each over its
/// type's threshold (5% for a type the record does not name).
pub fn record(info: &mut QuantizationInfo, checks: &[Check]) {
    for check in checks {
        let record = info.tensors.iter_mut().find(|t| t.name == check.name);
        let threshold = record
            .as_ref()
            .and_then(|r| r.quant_type)
            .and_then(|id| QuantType::from_id(id).ok())
            .map_or(ACCURACY_WARNING_THRESHOLD, QuantType::warning_threshold);
        if let Some(record) = record {
            record.output_error = Some(check.output_error);
        }
        if check.output_error > threshold {
            info.warnings.push(format!(
                "tensor {:?}: output error {:.2}% on the calibration data exceeds {:.1}%",
                check.name,
                check.output_error * 100.0,
                threshold * 100.0
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{QuantType, TensorModel};

    #[test]
    fn a_header_line_is_skipped_and_rows_are_kept_in_order() {
        let samples = Samples::parse_csv("a,b\n1,2\n\n3, 4\n").unwrap();
        assert_eq!((samples.rows(), samples.cols()), (2, 2));
        assert_eq!(samples.values, [1.0, 2.0, 3.0, 4.0]);
    }

    #[test]
    fn malformed_csvs_are_refused_with_their_reason() {
        assert_eq!(
            Samples::parse_csv("1,2\n3,x\n"),
            Err(SamplesError::NonNumeric { line: 2 })
        );
        assert_eq!(
            Samples::parse_csv("1,2\n3\n"),
            Err(SamplesError::RowLength {
                line: 2,
                expected: 2,
                found: 1
            })
        );
        assert_eq!(Samples::parse_csv("a,b\n\n"), Err(SamplesError::NoRows));
        let error = crate::Error::from(SamplesError::NoRows);
        assert_eq!(error.signal(), envelope_core::Signal::Usage);
        assert_eq!(
            error.to_string(),
            "Usage: the calibration CSV has no numeric rows"
        );
    }

    #[test]
    fn at_most_max_samples_rows_are_kept() {
        let text = "1\n".repeat(MAX_SAMPLES + 10);
        assert_eq!(Samples::parse_csv(&text).unwrap().rows(), MAX_SAMPLES);
    }

    #[test]
    fn quantized_layers_of_the_sample_width_are_measured_and_recorded() {
        let values: Vec<f32> = (0..128).map(|i| (i as f32 * 0.37).sin()).collect();
        let model = TensorModel::new(vec![
            Tensor::from_f32("w", vec![4, 32], &values).unwrap(),
            Tensor::from_f32("other", vec![2, 64], &values).unwrap(),
        ])
        .unwrap();
        let quantized = model.quantize(QuantType::Q4_0).unwrap();
        let row: Vec<String> = (0..32).map(|i| format!("{}", (i as f32).cos())).collect();
        let samples = Samples::parse_csv(&row.join(",")).unwrap();
        let checks: Vec<Check> = model
            .tensors
            .iter()
            .zip(&quantized.tensors)
            .filter_map(|(t, q)| check(t, q, &samples).unwrap())
            .collect();
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].name, "w");
        assert!(checks[0].output_error > 0.0 && checks[0].output_error < 0.5);
        // Not quantized: not measured.
        assert_eq!(
            check(&model.tensors[0], &model.tensors[0], &samples).unwrap(),
            None
        );

        let mut info = quantized.quantization.unwrap();
        let warnings = info.warnings.len();
        let mut loud = checks.clone();
        loud[0].output_error = 0.25;
        record(&mut info, &loud);
        assert_eq!(info.tensors[0].output_error, Some(0.25));
        assert_eq!(info.tensors[1].output_error, None);
        assert_eq!(info.warnings.len(), warnings + 1);
        // An ordinary 4-bit output error (10%) is under Q4_0's threshold: no warning.
        loud[0].output_error = 0.10;
        record(&mut info, &loud);
        assert_eq!(info.warnings.len(), warnings + 1);
        assert!(
            info.warnings
                .last()
                .unwrap()
                .contains("output error 25.00%"),
            "{:?}",
            info.warnings
        );
    }
}
