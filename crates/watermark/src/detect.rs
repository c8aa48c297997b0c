//! Keyless detection (000 §9.3.2-9.3.3): statistics of a slice's low mantissa bits that a naive
//! LSB watermark disturbs, computed without any key.
//!
//! These tests look for the fingerprint of LSB embedding: a biased or correlated last bit, or low
//! bits that are not uniform. The keyed QIM mark of this crate moves values by a fraction of a
//! step that is many units in the last place wide, and the low bits of a moved value are those of
//! an ordinary rounded f64, so **these tests do not see it** (docs/watermark.md publishes the
//! measured rates). What they do catch is naive LSB marking and data of unnatural precision.

use crate::sample::Sample;

/// §9.3.3: a last-bit Shannon entropy below this is suspicious (clean data: about 1.0).
pub const LSB_ENTROPY_THRESHOLD: f64 = 0.97;
/// §9.3.3: a Kolmogorov-Smirnov p-value below this is suspicious.
pub const KS_P_THRESHOLD: f64 = 0.05;
/// §9.3.3: a chi-square p-value below this is suspicious.
pub const CHI_SQUARE_P_THRESHOLD: f64 = 0.01;
/// §9.3.3: a bit correlation above this (in absolute value) is suspicious.
pub const BIT_CORRELATION_THRESHOLD: f64 = 0.05;
/// A slice is suspicious when at least this many of the four tests flag it.
pub const FLAGS_FOR_SUSPICION: u8 = 2;
/// Mantissa bits the KS test reads (or all of them, for f16).
const KS_BITS: u32 = 16;
/// Bins of the chi-square test: the low 8 mantissa bits.
const CHI_SQUARE_BINS: usize = 256;
/// The chi-square test needs about 5 expected values per bin.
const CHI_SQUARE_MIN_VALUES: usize = 5 * CHI_SQUARE_BINS;

/// The keyless statistics of one slice.
#[derive(Debug, Clone, PartialEq)]
pub struct SliceStatistics {
    /// Finite values analysed.
    pub values: usize,
    /// Shannon entropy (bits) of the last mantissa bit.
    pub lsb_entropy: f64,
    /// KS p-value of the low 16 mantissa bits, read as a fraction, against U(0, 1).
    pub ks_p_value: f64,
    /// Chi-square p-value of the low 8 mantissa bits against 256 equal bins (1.0 with fewer than
    /// 1280 values).
    pub chi_square_p_value: f64,
    /// Pearson correlation of the last and second-to-last mantissa bits.
    pub bit_correlation: f64,
    /// More than half of the values have their low 8 mantissa bits all zero (integers, short
    /// decimal fractions such as 0.25): the low bits carry no noise to test, so the slice is
    /// never flagged.
    pub low_precision: bool,
    /// How many of the four tests flag the slice.
    pub flags: u8,
}

impl SliceStatistics {
    /// At least [`FLAGS_FOR_SUSPICION`] tests flag it and its low bits are testable.
    #[must_use]
    pub const fn suspicious(&self) -> bool {
        !self.low_precision && self.flags >= FLAGS_FOR_SUSPICION
    }
}

/// The verdict over a dataset's or a model's slices.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectionResult {
    /// Some slice is suspicious.
    pub likely_watermarked: bool,
    /// Flags of the most suspicious slice over 4 (0.0 when none is suspicious).
    pub confidence: f64,
    /// Indices of the suspicious slices.
    pub suspicious_slices: Vec<usize>,
    /// Every slice's statistics, in order.
    pub slices: Vec<SliceStatistics>,
}

/// Combines per-slice statistics into a verdict.
#[must_use]
pub fn detect(slices: Vec<SliceStatistics>) -> DetectionResult {
    let suspicious_slices: Vec<usize> = slices
        .iter()
        .enumerate()
        .filter(|(_, s)| s.suspicious())
        .map(|(i, _)| i)
        .collect();
    let confidence = suspicious_slices
        .iter()
        .map(|&i| f64::from(slices[i].flags) / 4.0)
        .fold(0.0, f64::max);
    DetectionResult {
        likely_watermarked: !suspicious_slices.is_empty(),
        confidence,
        suspicious_slices,
        slices,
    }
}

/// The four §9.3.3 statistics of one slice's finite values.
#[must_use]
pub fn analyze<T: Sample>(values: &[T]) -> SliceStatistics {
    let ks_bits = KS_BITS.min(T::MANTISSA_BITS);
    let mut low: Vec<u64> = values
        .iter()
        .filter(|v| v.to_f64().is_finite())
        .map(|v| v.bits() & ((1 << ks_bits) - 1))
        .collect();
    let n = low.len();
    let mut ones = 0usize;
    let mut second = 0usize;
    let mut both = 0usize;
    let mut zero_low_bytes = 0usize;
    let mut bins = [0usize; CHI_SQUARE_BINS];
    for &bits in &low {
        let (b0, b1) = (bits & 1 == 1, bits & 2 == 2);
        ones += usize::from(b0);
        second += usize::from(b1);
        both += usize::from(b0 && b1);
        zero_low_bytes += usize::from(bits & 0xff == 0);
        bins[usize::try_from(bits & 0xff).unwrap_or_default()] += 1;
    }
    let ratio = |a: usize| ratio(a, n);
    let lsb_entropy = binary_entropy(ratio(ones));
    let bit_correlation = {
        let (p0, p1, p01) = (ratio(ones), ratio(second), ratio(both));
        let denominator = (p0 * (1.0 - p0) * p1 * (1.0 - p1)).sqrt();
        if denominator > 0.0 {
            (p01 - p0 * p1) / denominator
        } else {
            0.0
        }
    };
    let chi_square_p_value = if n >= CHI_SQUARE_MIN_VALUES {
        let expected = n as f64 / CHI_SQUARE_BINS as f64;
        let statistic: f64 = bins
            .iter()
            .map(|&observed| (observed as f64 - expected).powi(2) / expected)
            .sum();
        chi_square_sf(statistic, CHI_SQUARE_BINS as f64 - 1.0)
    } else {
        1.0
    };
    low.sort_unstable();
    let scale = (1u64 << ks_bits) as f64;
    let d = low
        .iter()
        .enumerate()
        .map(|(i, &bits)| {
            let x = bits as f64 / scale;
            let (below, above) = (i as f64 / n as f64, (i + 1) as f64 / n as f64);
            (x - below).abs().max((above - x).abs())
        })
        .fold(0.0, f64::max);
    let ks_p_value = if n > 0 {
        kolmogorov_sf(d, n as f64)
    } else {
        1.0
    };
    let low_precision = n > 0 && 2 * zero_low_bytes > n;
    let flags = u8::from(lsb_entropy < LSB_ENTROPY_THRESHOLD)
        + u8::from(ks_p_value < KS_P_THRESHOLD)
        + u8::from(chi_square_p_value < CHI_SQUARE_P_THRESHOLD)
        + u8::from(bit_correlation.abs() > BIT_CORRELATION_THRESHOLD);
    SliceStatistics {
        values: n,
        lsb_entropy,
        ks_p_value,
        chi_square_p_value,
        bit_correlation,
        low_precision,
        flags,
    }
}

#[allow(clippy::cast_precision_loss, reason = "a ratio of counts")]
fn ratio(a: usize, n: usize) -> f64 {
    if n == 0 { 0.0 } else { a as f64 / n as f64 }
}

/// `H(p)` in bits.
fn binary_entropy(p: f64) -> f64 {
    let term = |q: f64| if q > 0.0 { -q * q.log2() } else { 0.0 };
    term(p) + term(1.0 - p)
}

/// `P(Z > z)` for a standard normal, through erfc (Numerical Recipes' Chebyshev fit, relative
/// error below 1.2e-7: enough for thresholds at 0.05 and 0.01).
fn normal_sf(z: f64) -> f64 {
    let x = z / core::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * x.abs());
    let poly = -x * x - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    0.5 * if x >= 0.0 { erfc } else { 2.0 - erfc }
}

/// Chi-square survival function, Wilson-Hilferty normal approximation (good for 255 degrees of
/// freedom).
fn chi_square_sf(statistic: f64, df: f64) -> f64 {
    let v = 2.0 / (9.0 * df);
    normal_sf(((statistic / df).cbrt() - (1.0 - v)) / v.sqrt())
}

/// Kolmogorov distribution survival function at `d` for `n` values (Stephens' small-sample
/// correction of λ).
fn kolmogorov_sf(d: f64, n: f64) -> f64 {
    let lambda = (n.sqrt() + 0.12 + 0.11 / n.sqrt()) * d;
    if lambda < 0.2 {
        return 1.0;
    }
    let mut sum = 0.0;
    let mut sign = 1.0;
    for k in 1..=100 {
        let k = f64::from(k);
        let term = (-2.0 * k * k * lambda * lambda).exp();
        sum += sign * term;
        if term < 1e-12 {
            break;
        }
        sign = -sign;
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_value_helpers_match_tables() {
        assert!((normal_sf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_sf(1.959_964) - 0.025).abs() < 1e-6);
        assert!((normal_sf(-1.644_854) - 0.95).abs() < 1e-6);
        // chi2(255) upper 1 % point is 310.46.
        assert!((chi_square_sf(310.46, 255.0) - 0.01).abs() < 2e-4);
        // Kolmogorov: P(K > 1.358) = 0.05.
        assert!((kolmogorov_sf(1.358 / 1e4f64.sqrt(), 1e4) - 0.05).abs() < 2e-3);
        assert_eq!(binary_entropy(0.5), 1.0);
        assert_eq!(binary_entropy(0.0), 0.0);
    }

    #[test]
    fn forced_lsbs_are_flagged_and_integers_are_not() {
        let clean = crate::synthetic::Dist::TABLE[0]
            .1
            .column(&mut crate::synthetic::Rng::new(3), 5000);
        let forced: Vec<f64> = clean
            .iter()
            .map(|v| f64::from_bits(v.to_bits() | 1))
            .collect();
        let integers: Vec<f64> = (0..5000).map(f64::from).collect();
        assert!(!analyze(&clean).suspicious(), "{:?}", analyze(&clean));
        assert!(analyze(&forced).suspicious(), "{:?}", analyze(&forced));
        let statistics = analyze(&integers);
        assert!(statistics.low_precision && !statistics.suspicious());
        let verdict = detect(vec![analyze(&clean), analyze(&forced)]);
        assert!(verdict.likely_watermarked);
        assert_eq!(verdict.suspicious_slices, [1]);
    }
}
