//! Q8_TENSOR: one scale and zero point for the whole tensor (001 §6.2.1, the affine scheme of
//! Jacob et al. 2018: `r = S * (q - Z)`), the SafeTensors-style 8-bit type.
//!
//! Calibration is min/max over the tensor with zero included in the range, so that 0.0 is exact:
//! `lo = min(0, min x)`, `hi = max(0, max x)`, `S = (hi - lo) / 255` (1.0 when the range is
//! empty), `Z = clamp(roundf(-128 - lo / S), -128, 127)`, `q = clamp(roundf(x / S) + Z, -128,
//! 127)`. Stored bytes: `S` (f32 LE), `Z` (i32 LE), then one i8 per value.

use alloc::vec::Vec;

/// Bytes before the quantized values: f32 scale and i32 zero point.
pub const Q8_TENSOR_HEADER_BYTES: usize = 8;

/// The affine parameters of one tensor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AffineParams {
    /// `S` in `r = S * (q - Z)`.
    pub scale: f32,
    /// `Z` in `r = S * (q - Z)`.
    pub zero_point: i32,
}

#[allow(
    clippy::cast_possible_truncation,
    reason = "inputs are clamped to the i8 range before conversion"
)]
#[cfg(feature = "std")]
fn round_clamp(v: f32) -> i32 {
    v.round().clamp(-128.0, 127.0) as i32
}

/// Min/max calibration of `values`. `None` if a value or the range is not finite.
#[must_use]
#[cfg(feature = "std")]
pub fn calibrate(values: &[f32]) -> Option<AffineParams> {
    let (mut lo, mut hi) = (0.0f32, 0.0f32);
    for &v in values {
        if !v.is_finite() {
            return None;
        }
        lo = lo.min(v);
        hi = hi.max(v);
    }
    let range = hi - lo;
    if !range.is_finite() {
        return None;
    }
    let scale = if range == 0.0 { 1.0 } else { range / 255.0 };
    Some(AffineParams {
        scale,
        zero_point: round_clamp(-128.0 - lo / scale),
    })
}

/// Quantizes `values` with `params`, appending the header and one byte per value to `out`.
#[cfg(feature = "std")]
pub fn quantize(values: &[f32], params: AffineParams, out: &mut Vec<u8>) {
    out.reserve(Q8_TENSOR_HEADER_BYTES + values.len());
    out.extend_from_slice(&params.scale.to_le_bytes());
    out.extend_from_slice(&params.zero_point.to_le_bytes());
    #[allow(clippy::cast_precision_loss, reason = "|Z| <= 128 is exact")]
    let zero = params.zero_point as f32;
    out.extend(values.iter().map(|&v| {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "clamped to the i8 range, stored as its byte"
        )]
        let q = round_clamp((v / params.scale).round() + zero) as i8 as u8;
        q
    }));
}

/// Splits stored Q8_TENSOR bytes into parameters and quantized values.
#[must_use]
pub fn split(bytes: &[u8]) -> Option<(AffineParams, &[u8])> {
    let (head, values) = bytes.split_at_checked(Q8_TENSOR_HEADER_BYTES)?;
    let scale = f32::from_le_bytes(head[0..4].try_into().ok()?);
    let zero_point = i32::from_le_bytes(head[4..8].try_into().ok()?);
    Some((AffineParams { scale, zero_point }, values))
}

/// Dequantizes values: `S * (q - Z)`.
pub fn dequantize(params: AffineParams, values: &[u8], out: &mut Vec<f32>) {
    #[allow(clippy::cast_precision_loss, reason = "|Z| <= 128 is exact")]
    let zero = params.zero_point as f32;
    out.extend(values.iter().map(|&q| {
        #[allow(clippy::cast_possible_wrap, reason = "the byte is an i8")]
        let q = f32::from(q as i8);
        params.scale * (q - zero)
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_exact_and_range_is_covered() {
        let values = [-1.0f32, 0.0, 0.5, 3.0];
        let params = calibrate(&values).unwrap();
        let mut bytes = Vec::new();
        quantize(&values, params, &mut bytes);
        let (back_params, quants) = split(&bytes).unwrap();
        assert_eq!(back_params, params);
        let mut out = Vec::new();
        dequantize(params, quants, &mut out);
        assert_eq!(out[1], 0.0);
        for (a, b) in values.iter().zip(&out) {
            assert!((a - b).abs() <= params.scale, "{a} vs {b}");
        }
    }

    #[test]
    fn non_finite_input_has_no_calibration() {
        assert_eq!(calibrate(&[1.0, f32::NAN]), None);
        assert_eq!(calibrate(&[f32::MAX, -f32::MAX]), None);
        assert_eq!(calibrate(&[0.0, 0.0]).unwrap().scale, 1.0);
    }
}
