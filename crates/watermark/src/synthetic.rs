//! Seeded synthetic data and the attacks of the robustness table, shared by the tests, the
//! `robustness` example (which produces docs/watermark.md's figures) and, later, the format
//! crates' own watermark tests. Deterministic: nothing here reads OS randomness.

/// SplitMix64 (Steele, Lea and Flood 2014): small, seedable, good enough for test data.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    #[must_use]
    pub const fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub const fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// 32 random bytes (keys, buyer ids).
    pub fn bytes32(&mut self) -> [u8; 32] {
        let mut out = [0; 32];
        for chunk in out.chunks_mut(8) {
            chunk.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        out
    }

    /// Uniform in [0, 1).
    #[allow(clippy::cast_precision_loss, reason = "53 random bits convert exactly")]
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / 9_007_199_254_740_992.0
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u = 1.0 - self.uniform();
        let v = self.uniform();
        (-2.0 * u.ln()).sqrt() * (core::f64::consts::TAU * v).cos()
    }

    /// A uniform index below `n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        let n = u64::try_from(n).unwrap_or(u64::MAX);
        usize::try_from(
            u64::try_from((u128::from(self.next_u64()) * u128::from(n)) >> 64).unwrap_or(0),
        )
        .unwrap_or(0)
    }
}

/// Column distributions of the published figures: what real tables hold.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Dist {
    /// Normal (e.g. test scores).
    Normal {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        sd: f64,
    },
    /// Uniform on [lo, hi).
    Uniform {
        /// Lower bound.
        lo: f64,
        /// Upper bound.
        hi: f64,
    },
    /// Log-normal, heavy right tail (prices, incomes).
    LogNormal {
        /// Mean of the logarithm.
        mu: f64,
        /// Standard deviation of the logarithm.
        sigma: f64,
    },
    /// Student's t with 3 degrees of freedom, heavy tails both ways.
    StudentT3 {
        /// Location.
        loc: f64,
        /// Scale.
        scale: f64,
    },
    /// Rounded normal: integers stored as floats (counts, ages).
    Integers {
        /// Mean.
        mean: f64,
        /// Standard deviation.
        sd: f64,
    },
}

impl Dist {
    /// The four distributions of the published tables, with their names.
    pub const TABLE: [(&'static str, Self); 4] = [
        (
            "normal(50, 10)",
            Self::Normal {
                mean: 50.0,
                sd: 10.0,
            },
        ),
        ("uniform(0, 1)", Self::Uniform { lo: 0.0, hi: 1.0 }),
        (
            "log-normal(3, 1)",
            Self::LogNormal {
                mu: 3.0,
                sigma: 1.0,
            },
        ),
        (
            "integers round(N(1000, 300))",
            Self::Integers {
                mean: 1000.0,
                sd: 300.0,
            },
        ),
    ];

    /// The published tables' distributions plus Student's t3 (heavy tails both ways, located
    /// away from zero so that a relative change of the mean means something).
    pub const ALL: [(&'static str, Self); 5] = [
        Self::TABLE[0],
        Self::TABLE[1],
        Self::TABLE[2],
        Self::TABLE[3],
        (
            "Student t3(5, 1)",
            Self::StudentT3 {
                loc: 5.0,
                scale: 1.0,
            },
        ),
    ];

    /// One draw.
    pub fn sample(self, rng: &mut Rng) -> f64 {
        match self {
            Self::Normal { mean, sd } => mean + sd * rng.normal(),
            Self::Uniform { lo, hi } => lo + (hi - lo) * rng.uniform(),
            Self::LogNormal { mu, sigma } => (mu + sigma * rng.normal()).exp(),
            Self::StudentT3 { loc, scale } => {
                let chi2: f64 = (0..3).map(|_| rng.normal().powi(2)).sum();
                loc + scale * rng.normal() / (chi2 / 3.0).sqrt()
            }
            Self::Integers { mean, sd } => (mean + sd * rng.normal()).round(),
        }
    }

    /// `n` draws.
    pub fn column(self, rng: &mut Rng, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.sample(rng)).collect()
    }
}

/// The seller key of the reference sample: bytes 00 01 .. 1f.
#[must_use]
pub fn reference_key() -> crate::SellerKey {
    let mut secret = [0u8; 32];
    for (byte, value) in secret.iter_mut().zip(0u8..) {
        *byte = value;
    }
    crate::SellerKey::new(secret)
}

/// The leaked column an independent extractor is checked on (docs/watermark.md §8): 20,000
/// values of N(50, 10) from seed 42, marked for buyer id `buyer-42` under [`reference_key`] at
/// the default strength, then half the rows kept and shuffled.
///
/// # Panics
/// Never: 20,000 values always carry the mark.
#[must_use]
pub fn reference_leak() -> Vec<f64> {
    use crate::Watermarkable as _;
    let key = reference_key();
    let mark = crate::Watermark::for_buyer(&key, b"buyer-42");
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
        .unwrap_or_else(|error| unreachable!("20,000 values carry the mark: {error}"));
    Attack::SampleRows(0.5).apply(&mut table, &mut rng);
    Attack::ShuffleRows.apply(&mut table, &mut rng);
    table.swap_remove(0)
}

/// Mean and (population) standard deviation.
#[must_use]
#[allow(clippy::cast_precision_loss, reason = "a count as a divisor")]
pub fn mean_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len().max(1) as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// How much marking moved a column (000 §9.3.1 asks for less than 1e-4 relative).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Distortion {
    /// |Δmean| / |mean|.
    pub mean_relative: f64,
    /// |Δmean| / sd.
    pub mean_in_sd: f64,
    /// |Δsd| / sd.
    pub sd_relative: f64,
    /// The largest |Δx|, over sd.
    pub max_change_in_sd: f64,
    /// The 99th percentile of |Δx| / |x| over non-zero x.
    pub p99_relative_change: f64,
    /// Fraction of the values changed.
    pub changed: f64,
}

impl Distortion {
    /// Compares a column before and after marking (same length, same order).
    #[must_use]
    #[allow(clippy::cast_precision_loss, reason = "counts as ratios")]
    pub fn measure(original: &[f64], marked: &[f64]) -> Self {
        let (m0, s0) = mean_sd(original);
        let (m1, s1) = mean_sd(marked);
        let pairs = || original.iter().zip(marked);
        let mut relative: Vec<f64> = pairs()
            .filter(|(a, _)| **a != 0.0)
            .map(|(a, b)| ((b - a) / a).abs())
            .collect();
        relative.sort_by(f64::total_cmp);
        Self {
            mean_relative: ((m1 - m0) / m0).abs(),
            mean_in_sd: (m1 - m0).abs() / s0,
            sd_relative: ((s1 - s0) / s0).abs(),
            max_change_in_sd: pairs().map(|(a, b)| (b - a).abs()).fold(0.0, f64::max) / s0,
            p99_relative_change: relative
                .get(relative.len() * 99 / 100)
                .copied()
                .unwrap_or(0.0),
            changed: pairs().filter(|(a, b)| a != b).count() as f64 / original.len().max(1) as f64,
        }
    }

    /// The worse of two measurements, figure by figure.
    #[must_use]
    pub const fn worst(self, other: Self) -> Self {
        Self {
            mean_relative: self.mean_relative.max(other.mean_relative),
            mean_in_sd: self.mean_in_sd.max(other.mean_in_sd),
            sd_relative: self.sd_relative.max(other.sd_relative),
            max_change_in_sd: self.max_change_in_sd.max(other.max_change_in_sd),
            p99_relative_change: self.p99_relative_change.max(other.p99_relative_change),
            changed: self.changed.max(other.changed),
        }
    }
}

/// An attack on a table (columns of equal length, rows across them).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum Attack {
    /// Nothing.
    None,
    /// Keep each row with this probability.
    SampleRows(f64),
    /// Permute the rows.
    ShuffleRows,
    /// Keep the first `n` columns.
    KeepColumns(usize),
    /// Print every value with Rust's shortest round-trip formatting (`{}`, what a CSV writer
    /// prints) and parse it back.
    CsvText,
    /// Round every value to this many significant decimal digits.
    RoundSignificant(usize),
    /// Add Gaussian noise with this standard deviation relative to the column's own.
    Noise(f64),
}

impl Attack {
    /// Applies the attack.
    pub fn apply(self, table: &mut Vec<Vec<f64>>, rng: &mut Rng) {
        match self {
            Self::None => {}
            Self::SampleRows(keep) => {
                let rows = table.first().map_or(0, Vec::len);
                let kept: Vec<usize> = (0..rows).filter(|_| rng.uniform() < keep).collect();
                for column in table.iter_mut() {
                    *column = kept.iter().map(|&r| column[r]).collect();
                }
            }
            Self::ShuffleRows => {
                let rows = table.first().map_or(0, Vec::len);
                let mut order: Vec<usize> = (0..rows).collect();
                for i in (1..rows).rev() {
                    order.swap(i, rng.below(i + 1));
                }
                for column in table.iter_mut() {
                    *column = order.iter().map(|&r| column[r]).collect();
                }
            }
            Self::KeepColumns(n) => table.truncate(n),
            Self::CsvText => {
                for value in table.iter_mut().flatten() {
                    *value = value.to_string().parse().unwrap_or(f64::NAN);
                }
            }
            Self::RoundSignificant(digits) => {
                let decimals = digits.saturating_sub(1);
                for value in table.iter_mut().flatten() {
                    *value = format!("{value:.decimals$e}").parse().unwrap_or(f64::NAN);
                }
            }
            Self::Noise(relative) => {
                for column in table.iter_mut() {
                    let (_, sd) = mean_sd(column);
                    for value in column.iter_mut() {
                        *value += relative * sd * rng.normal();
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attacks_do_what_they_say() {
        let mut rng = Rng::new(1);
        let mut table = vec![(0..1000).map(f64::from).collect::<Vec<_>>(); 3];
        Attack::ShuffleRows.apply(&mut table, &mut rng);
        assert_eq!(table[0], table[2]);
        let mut sorted = table[0].clone();
        sorted.sort_by(f64::total_cmp);
        assert_eq!(sorted, (0..1000).map(f64::from).collect::<Vec<_>>());
        Attack::SampleRows(0.5).apply(&mut table, &mut rng);
        assert!((400..600).contains(&table[0].len()));
        Attack::KeepColumns(1).apply(&mut table, &mut rng);
        assert_eq!(table.len(), 1);
        let mut table = vec![vec![123.456_789, 0.1 + 0.2]];
        Attack::RoundSignificant(4).apply(&mut table, &mut rng);
        assert_eq!(table[0], [123.5, 0.3]);
        let mut table = vec![vec![0.1 + 0.2]];
        Attack::CsvText.apply(&mut table, &mut rng);
        assert_eq!(table[0], [0.1 + 0.2]);
    }
}
