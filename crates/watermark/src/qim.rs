//! The cell grid of one slice: the step rule, where a value's cell is, which payload position and
//! dither the cell gets, how a value votes, and where the embedder moves it (docs/watermark.md §3-4).
//!
//! **Key design decision: the key of a value is its own cell.** A value `x` lies in cell
//! `j = floor(x / Δ)` of a power-of-two grid `Δ = 2^E`. The cell index alone, through a keyed PRF,
//! chooses the payload position the value carries and the dither of its two targets. Nothing
//! depends on the row, the column or the neighbours, so shuffling, sampling rows and dropping
//! columns leave every surviving value's vote intact, and the same value always votes the same way.
//! The embedder moves a value only to a target of a cell (its own or an adjacent one), so a marked
//! value is always read back in the cell whose target it sits on. `Δ` is a power of two so that
//! `x / Δ` and its fractional part are exact in binary floating point: any IEEE implementation
//! computes the same cell.

use crate::keys::{CellKey, PAYLOAD_BITS, PAYLOAD_LEN, SellerKey, payload_bit};
use crate::sample::Sample;

/// Targets are kept at least `2^PRECISION_MARGIN_BITS` units in the last place of the format
/// apart from the step: a value is marked (and read) only if `|x| < 2^(E + MANTISSA_BITS - 5)`,
/// so rounding a moved value to its format moves it by at most `Δ/64`.
pub const PRECISION_MARGIN_BITS: u32 = 5;

/// Distortion compensation κ: a moved value keeps `κ` of its offset from the target
/// (`x' = v + κ (x - v)`). Distinct values stay distinct and in order within a cell, and the
/// vote of an unattacked value is still at least `1 - 4κ = 0.5`.
pub const COMPENSATION: f64 = 0.125;

/// Targets sit at least this fraction of a cell from its edges: bit 0's target (the dither) is
/// `1/8 + U/2` for `U < 1/2` and `3/8 + U/2` otherwise, `U = (h >> 32) / 2^32`, so both targets lie
/// in [1/8, 3/8) ∪ [5/8, 7/8).
pub const EDGE_MARGIN: f64 = 0.125;

/// Slices with fewer finite values are neither marked nor read (no meaningful scale).
pub const MIN_SLICE_VALUES: usize = 16;

/// Cell exponents an extractor searches, relative to the slice's scale exponent `S`:
/// `S + SEARCH_EXPONENTS.0 ..= S + SEARCH_EXPONENTS.1`. Covers every strength in
/// [`crate::STRENGTH_RANGE`] with one exponent to spare on each side for a scale estimate moved
/// by sampling or noise.
pub const SEARCH_EXPONENTS: (i32, i32) = (-22, -2);

/// Values the extractor reads per candidate exponent to pick one (every value of smaller slices).
pub const SEARCH_SAMPLE: usize = 8192;

/// The robust scale of a slice: its interquartile range `v[⌊3(n-1)/4⌋] - v[⌊(n-1)/4⌋]` over the
/// sorted finite values, or `max - min` when that is zero. `None` with fewer than
/// [`MIN_SLICE_VALUES`] finite values or no spread.
pub(crate) fn scale<T: Sample>(values: &[T]) -> Option<f64> {
    let mut finite: Vec<f64> = values
        .iter()
        .map(|v| v.to_f64())
        .filter(|v| v.is_finite())
        .collect();
    let n = finite.len();
    if n < MIN_SLICE_VALUES {
        return None;
    }
    let (_, &mut high, _) = finite.select_nth_unstable_by(3 * (n - 1) / 4, f64::total_cmp);
    let (_, &mut low, _) = finite.select_nth_unstable_by((n - 1) / 4, f64::total_cmp);
    let iqr = high - low;
    let spread = if iqr > 0.0 {
        iqr
    } else {
        let (min, max) = finite
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        max - min
    };
    (spread > 0.0 && spread.is_finite()).then_some(spread)
}

/// `floor(log2(y))`, exactly, for a positive normal `y` (the biased exponent field minus 1023).
pub(crate) fn exponent_of(y: f64) -> Option<i32> {
    if !(y >= f64::MIN_POSITIVE && y.is_finite()) {
        return None;
    }
    let biased = i32::try_from((y.to_bits() >> 52) & 0x7ff).ok()?;
    Some(biased - 1023)
}

/// Exponents whose step is a normal f64 with room for the search window.
const EXPONENT_RANGE: core::ops::RangeInclusive<i32> = -1000..=1000;

/// `2^e` for `e` in [`EXPONENT_RANGE`].
fn pow2(e: i32) -> f64 {
    let biased = u64::try_from(e + 1023).unwrap_or_else(|_| unreachable!("e is in range"));
    f64::from_bits(biased << 52)
}

/// `floor(u)` as an integer, for `|u| < 2^53` (guarded by the precision rule).
#[allow(
    clippy::cast_possible_truncation,
    reason = "callers keep |u| below 2^47, where f64 -> i64 is exact"
)]
fn floor_i64(u: f64) -> i64 {
    u.floor() as i64
}

/// The grid of one exponent: step, precision limit and the keyed PRF of its cells.
pub(crate) struct Grid {
    exponent: i32,
    step: f64,
    /// `|x / Δ|` must be below this (`2^(MANTISSA_BITS - PRECISION_MARGIN_BITS)`).
    limit: f64,
    key: CellKey,
}

/// What the PRF says about one cell.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Cell {
    /// Payload position, `((h mod 2^32) * PAYLOAD_BITS) >> 32`.
    pub(crate) position: usize,
    /// The target of bit 0 within the cell, from `U = (h >> 32) / 2^32` (see [`EDGE_MARGIN`]).
    pub(crate) dither: f64,
}

impl Cell {
    /// The target of bit `bit` within the cell, in [0, 1): `dither + bit/2`, wrapped.
    pub(crate) fn target(self, bit: u8) -> f64 {
        let t = self.dither + 0.5 * f64::from(bit);
        if t >= 1.0 { t - 1.0 } else { t }
    }

    /// The soft vote of a value at fraction `f` of this cell: `2(|f - t1| - |f - t0|)` clamped
    /// to [-1, 1]; positive reads bit 0.
    pub(crate) fn vote(self, f: f64) -> f64 {
        (2.0 * ((f - self.target(1)).abs() - (f - self.target(0)).abs())).clamp(-1.0, 1.0)
    }
}

impl Grid {
    /// The grid `Δ = 2^exponent` for values of type `T`, or `None` if the exponent is out of range
    /// or below the type's [`Sample::MIN_EXPONENT`] (integers: a step under 32 units).
    pub(crate) fn new<T: Sample>(key: &SellerKey, exponent: i32) -> Option<Self> {
        if !EXPONENT_RANGE.contains(&exponent) || exponent < T::MIN_EXPONENT {
            return None;
        }
        let margin = i32::try_from(T::MANTISSA_BITS - PRECISION_MARGIN_BITS).ok()?;
        Some(Self {
            exponent,
            step: pow2(exponent),
            limit: pow2(margin),
            key: key.cell_key(exponent),
        })
    }

    /// The exponent a marker with `strength` uses for a slice of scale `scale`:
    /// `E = floor(log2(strength * scale))`.
    pub(crate) fn exponent_for(strength: f64, scale: f64) -> Option<i32> {
        exponent_of(strength * scale)
    }

    pub(crate) const fn exponent(&self) -> i32 {
        self.exponent
    }

    /// Cell index and fraction in [0, 1) of `x`, if `x` is finite and within the precision limit.
    pub(crate) fn locate(&self, x: f64) -> Option<(i64, f64)> {
        let u = x / self.step;
        // NaN and infinities fail this comparison too.
        if u.abs().partial_cmp(&self.limit) != Some(core::cmp::Ordering::Less) {
            return None;
        }
        let j = floor_i64(u);
        // Exact: u and j share the binade's grid.
        #[allow(clippy::cast_precision_loss, reason = "|j| < 2^47 converts exactly")]
        let f = u - j as f64;
        Some((j, f))
    }

    /// The PRF's answer for cell `j`.
    pub(crate) fn cell(&self, j: i64) -> Cell {
        let h = self.key.hash(j);
        let low = h & 0xffff_ffff;
        let position = usize::try_from((low * PAYLOAD_BITS as u64) >> 32)
            .unwrap_or_else(|_| unreachable!("below PAYLOAD_BITS"));
        #[allow(
            clippy::cast_precision_loss,
            reason = "a 32-bit integer converts exactly"
        )]
        let u = (h >> 32) as f64 / 4_294_967_296.0;
        // Both targets at least EDGE_MARGIN from the cell's edges: noise that small can neither
        // flip the bit nor carry the value into a neighbouring cell (another key).
        let dither = EDGE_MARGIN + 0.5 * u + if u >= 0.5 { 0.25 } else { 0.0 };
        Cell { position, dither }
    }

    /// Position and soft vote of value `x`, if it is readable.
    pub(crate) fn vote(&self, x: f64) -> Option<(usize, f64)> {
        let (j, f) = self.locate(x)?;
        let cell = self.cell(j);
        Some((cell.position, cell.vote(f)))
    }

    /// Where the embedder moves `x` (in f64, before rounding to the slice's format), if its cell
    /// `j` is selected: to `Δ (c + t_c) + κ (x - Δ (c + t_c))`, for the selected cell `c` among
    /// `j-1, j, j+1` whose
    /// target `c + t_c` (for the payload bit at its position) is nearest to `x / Δ`; the
    /// compensation is dropped when it would leave cell `c`. `None`: leave `x` as it is.
    pub(crate) fn embed(
        &self,
        x: f64,
        payload: &[u8; PAYLOAD_LEN],
        select: Option<u64>,
    ) -> Option<(i64, f64)> {
        let (j, f) = self.locate(x)?;
        let u = x / self.step;
        let selected =
            |c: i64| select.is_none_or(|threshold| self.key.selection_hash(c) >> 32 < threshold);
        // A value in an unselected cell stays where it is (redundancy leaves those untouched).
        if !selected(j) {
            return None;
        }
        let mut best: Option<(f64, i64, f64)> = None;
        for c in [j - 1, j, j + 1] {
            if !selected(c) {
                continue;
            }
            let cell = self.cell(c);
            let t = cell.target(payload_bit(payload, cell.position));
            let offset = t + f64::from(i32::try_from(c - j).ok()?) - f;
            if best.is_none_or(|(distance, _, _)| offset.abs() < distance) {
                best = Some((offset.abs(), c, t));
            }
        }
        let (_, c, t) = best?;
        #[allow(clippy::cast_precision_loss, reason = "|c| < 2^47 converts exactly")]
        let target = c as f64 + t;
        let compensated = target + COMPENSATION * (u - target);
        let within = if floor_i64(compensated) == c {
            compensated
        } else {
            target
        };
        Some((c, within * self.step))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> Grid {
        Grid::new::<f64>(&SellerKey::new([7; 32]), -10).unwrap()
    }

    #[test]
    fn exponent_is_floor_log2() {
        assert_eq!(exponent_of(1.0), Some(0));
        assert_eq!(exponent_of(1.999), Some(0));
        assert_eq!(exponent_of(2.0), Some(1));
        assert_eq!(exponent_of(0.001), Some(-10));
        assert_eq!(exponent_of(0.0), None);
        assert_eq!(exponent_of(-1.0), None);
        assert_eq!(exponent_of(f64::NAN), None);
        assert_eq!(pow2(-10), 1.0 / 1024.0);
    }

    #[test]
    fn scale_is_the_interquartile_range_or_the_range() {
        let values: Vec<f64> = (0..101).map(f64::from).collect();
        assert_eq!(scale(&values), Some(50.0));
        let mut flat = vec![3.0; 100];
        flat[0] = 1.0;
        assert_eq!(scale(&flat), Some(2.0));
        assert_eq!(scale(&[5.0; 100]), None);
        assert_eq!(scale(&[1.0, 2.0]), None);
    }

    #[test]
    fn targets_are_half_a_cell_apart_and_vote_fully() {
        let cell = Cell {
            position: 0,
            dither: 0.8,
        };
        assert_eq!(cell.target(0), 0.8);
        assert!((cell.target(1) - 0.3).abs() < 1e-15);
        assert_eq!(cell.vote(0.8), 1.0);
        assert_eq!(cell.vote(cell.target(1)), -1.0);
        assert_eq!(cell.vote(0.55), 0.0);
        let grid = grid();
        for j in -500..500 {
            let cell = grid.cell(j);
            for bit in [0, 1] {
                let t = cell.target(bit);
                assert!((EDGE_MARGIN..1.0 - EDGE_MARGIN).contains(&t), "{j}: {t}");
            }
        }
    }

    #[test]
    fn an_embedded_value_reads_back_its_bit_in_the_cell_it_moved_to() {
        let grid = grid();
        let payload = [0b1010_1010; PAYLOAD_LEN];
        for i in 0..2000 {
            let x = f64::from(i) * 0.000_37 - 0.3;
            let (c, moved) = grid.embed(x, &payload, None).unwrap();
            let (j, f) = grid.locate(moved).unwrap();
            assert_eq!(j, c);
            let cell = grid.cell(j);
            let vote = cell.vote(f);
            let bit = payload_bit(&payload, cell.position);
            assert!(
                if bit == 0 { vote >= 0.5 } else { vote <= -0.5 },
                "{x} -> {moved}: {vote}"
            );
            assert!((moved - x).abs() <= grid.step * 1.5);
        }
    }

    #[test]
    fn integer_grids_start_at_a_step_of_32_units() {
        let key = SellerKey::new([7; 32]);
        assert!(Grid::new::<i64>(&key, 4).is_none());
        assert!(Grid::new::<u16>(&key, 5).is_some());
        assert!(Grid::new::<f32>(&key, -20).is_some());
        // A value moved on a step of 32 and rounded to an integer stays on its target's side.
        let grid = Grid::new::<i64>(&key, 5).unwrap();
        let payload = [0b0110_1001; PAYLOAD_LEN];
        for x in -3000_i64..3000 {
            let (c, moved) = grid.embed(x as f64, &payload, None).unwrap();
            let rounded = i64::from_f64(moved);
            let (j, f) = grid.locate(rounded.to_f64()).unwrap();
            if j != c {
                continue;
            }
            let cell = grid.cell(j);
            let vote = cell.vote(f);
            let bit = payload_bit(&payload, cell.position);
            assert!(
                if bit == 0 { vote > 0.4 } else { vote < -0.4 },
                "{x} -> {rounded}: {vote}"
            );
        }
    }

    #[test]
    fn values_beyond_the_precision_limit_are_left_alone() {
        let grid = Grid::new::<f32>(&SellerKey::new([7; 32]), -10).unwrap();
        // 2^(23-5) steps of 2^-10 is 256.
        assert!(grid.locate(255.0).is_some());
        assert!(grid.locate(256.0).is_none());
        assert!(grid.locate(f64::NAN).is_none());
        assert!(grid.locate(f64::INFINITY).is_none());
    }
}
