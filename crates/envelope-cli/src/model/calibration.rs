//! `apr quantize --calibration data.csv`: quantization checked on real inputs. The built-in
//! quantizers choose their ranges from the weights (min/max, as ggml does), so calibration data
//! does not change a byte of the output; it measures what quantization does to each layer's
//! output on the given samples and records it (001 §6.2.9: over 5% is a warning in metadata).

use std::path::Path;

use apr::{QuantizationInfo, Tensor};

/// Most samples used per tensor (the check is a measurement, not training).
const MAX_SAMPLES: usize = 1024;

/// Samples read from the CSV: `rows × cols`, row-major.
#[derive(Debug)]
pub(super) struct Samples {
    values: Vec<f32>,
    cols: usize,
}

impl Samples {
    pub(super) fn rows(&self) -> usize {
        self.values.len().checked_div(self.cols).unwrap_or(0)
    }
}

fn usage(reason: &'static str) -> anyhow::Error {
    envelope_core::Error::InvalidArgument(reason).into()
}

/// Reads a numeric CSV; a first line that does not parse is taken as the header.
pub(super) fn read_samples(path: &Path) -> anyhow::Result<Samples> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        anyhow::anyhow!(
            "Io: reading the calibration data {}: {error}",
            path.display()
        )
    })?;
    let mut values = Vec::new();
    let mut cols = 0;
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let row: Result<Vec<f32>, _> = line.split(',').map(|f| f.trim().parse::<f32>()).collect();
        let Ok(row) = row else {
            if number == 0 {
                continue;
            }
            return Err(usage(
                "the calibration CSV has a non-numeric value after its header",
            ));
        };
        if cols == 0 {
            cols = row.len();
        } else if row.len() != cols {
            return Err(usage("the calibration CSV's rows have different lengths"));
        }
        if values.len() / cols.max(1) < MAX_SAMPLES {
            values.extend(row);
        }
    }
    if cols == 0 {
        return Err(usage("the calibration CSV has no numeric rows"));
    }
    Ok(Samples { values, cols })
}

/// One tensor's measured output error.
#[derive(Debug)]
pub(super) struct Check {
    name: String,
    output_error: f32,
}

/// Measures a quantized 2-D tensor `[out, in]` whose `in` equals the sample width.
pub(super) fn check(
    original: &Tensor,
    quantized: &Tensor,
    samples: &Samples,
) -> anyhow::Result<Option<Check>> {
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

/// Records the checks in `info` (and a warning for each over 5%).
pub(super) fn record(info: &mut QuantizationInfo, checks: &[Check]) {
    for check in checks {
        if let Some(record) = info.tensors.iter_mut().find(|t| t.name == check.name) {
            record.output_error = Some(check.output_error);
        }
        if check.output_error > apr::quant::ACCURACY_WARNING_THRESHOLD {
            info.warnings.push(format!(
                "tensor {:?}: output error {:.2}% on the calibration data exceeds 5%",
                check.name,
                check.output_error * 100.0
            ));
        }
    }
}
