//! Extraction and verification: soft votes per payload position, summed over every slice read,
//! decoded with a Chase search that the payload tag checks (docs/watermark.md §5-6).

use crate::keys::{PAYLOAD_BITS, PAYLOAD_LEN, SellerKey, TagChecker, payload_bit};
use crate::qim::{Grid, SEARCH_EXPONENTS, SEARCH_SAMPLE, exponent_of, scale};
use crate::sample::Sample;

/// The decoder flips every pattern of the `CHASE_BITS` least reliable positions (2^16 = 65,536
/// candidates) before giving up; each candidate is one tag check, and each adds 2^-64 to the
/// false-match bound (2^-48 in all). Positions no value voted on come first, so up to 16 of them
/// (sparse columns, small samples) are filled in by the tag. Only data whose votes passed the
/// energy gate of [`Extractor::add`] reaches the search; a failing search costs tens of
/// milliseconds.
pub const CHASE_BITS: u32 = 16;

/// `verify` reports a match when the position-agreement p-value is at most this (2^-40).
pub const VERIFY_THRESHOLD: f64 = 1.0 / 1_099_511_627_776.0;

/// A slice whose best cell energy is below this adds no votes ([`Extractor::add`]). Without a
/// mark the energy is about 1 (a few tenths above at most, as the largest of 21 candidates).
pub const MIN_ENERGY: f64 = 1.5;

/// Probability that one candidate payload read from data that does not carry this key's mark
/// passes the tag check: `2^-(8 * TAG_LEN)` = 2^-64.
const TAG_FALSE_MATCH: f64 = 1.0 / 18_446_744_073_709_551_616.0;

/// Votes per payload position (also summed by `crate::blocks` for quantized blocks).
#[derive(Debug, Clone)]
pub(crate) struct Tally {
    /// Sum of soft votes (positive reads bit 0).
    sum: [f64; PAYLOAD_BITS],
    /// Sum of squared soft votes.
    square: [f64; PAYLOAD_BITS],
    /// Votes > 0 and < 0.
    zeros: [u64; PAYLOAD_BITS],
    ones: [u64; PAYLOAD_BITS],
}

impl Tally {
    pub(crate) const fn new() -> Self {
        Self {
            sum: [0.0; PAYLOAD_BITS],
            square: [0.0; PAYLOAD_BITS],
            zeros: [0; PAYLOAD_BITS],
            ones: [0; PAYLOAD_BITS],
        }
    }

    pub(crate) fn add(&mut self, position: usize, vote: f64) {
        self.sum[position] += vote;
        self.square[position] += vote * vote;
        if vote > 0.0 {
            self.zeros[position] += 1;
        } else if vote < 0.0 {
            self.ones[position] += 1;
        }
    }

    pub(crate) fn merge(&mut self, other: &Self) {
        for p in 0..PAYLOAD_BITS {
            self.sum[p] += other.sum[p];
            self.square[p] += other.square[p];
            self.zeros[p] += other.zeros[p];
            self.ones[p] += other.ones[p];
        }
    }

    /// Alignment of the votes: `Σ sum² / Σ square`. About 1 for votes of random sign, about the
    /// votes per position for a mark.
    pub(crate) fn energy(&self) -> f64 {
        let square: f64 = self.square.iter().sum();
        if square > 0.0 {
            self.sum.iter().map(|s| s * s).sum::<f64>() / square
        } else {
            0.0
        }
    }

    pub(crate) fn votes(&self) -> u64 {
        self.zeros.iter().chain(&self.ones).sum()
    }

    /// Hard votes that agree with `payload`.
    fn agreeing(&self, payload: &[u8; PAYLOAD_LEN]) -> u64 {
        (0..PAYLOAD_BITS)
            .map(|p| match payload_bit(payload, p) {
                0 => self.zeros[p],
                _ => self.ones[p],
            })
            .sum()
    }
}

/// What reading one slice found.
#[derive(Debug, Clone, PartialEq)]
pub struct SliceEvidence {
    /// Values in the slice.
    pub values: usize,
    /// The cell exponent read, if the slice added votes.
    pub exponent: Option<i32>,
    /// Values that voted.
    pub votes: u64,
    /// Cell energy at the best exponent: about 1 without a mark, about the cells per position with
    /// one. Below [`MIN_ENERGY`] the slice adds no votes.
    pub energy: f64,
}

/// A buyer recovered from marked data.
#[derive(Debug, Clone, PartialEq)]
pub struct Extracted {
    /// The buyer hash whose tag verified.
    pub buyer_hash: [u8; 32],
    /// `1 - false_match_bound`.
    pub confidence: f64,
    /// Upper bound on the probability that data without this key's mark for this buyer yields
    /// this result: `2^CHASE_BITS` candidates times 2^-64 per tag check = 2^-48.
    pub false_match_bound: f64,
    /// Fraction of the hard votes that agree with the recovered payload (1.0 for an untouched
    /// copy, 0.5 for noise): how damaged the copy is.
    pub agreement: f64,
    /// Values that voted.
    pub votes: u64,
    /// Payload bits the Chase search flipped against the majority.
    pub corrected_bits: u32,
}

/// The answer of [`Extractor::verify`]: do these values carry this buyer's mark?
#[derive(Debug, Clone, PartialEq)]
pub struct Verification {
    /// `p_value <= VERIFY_THRESHOLD`.
    pub matched: bool,
    /// `P(Binomial(positions_voted, 1/2) >= positions_agreeing)`: the chance that data without
    /// this buyer's mark (clean, or another buyer's) agrees this well.
    pub p_value: f64,
    /// `1 - p_value`.
    pub confidence: f64,
    /// Positions whose vote sum has the sign of the buyer's payload bit.
    pub positions_agreeing: u32,
    /// Positions with a non-zero vote sum.
    pub positions_voted: u32,
    /// Fraction of the hard votes that agree with the buyer's payload.
    pub agreement: f64,
}

/// Reads any number of slices under one seller key, then extracts or verifies.
#[derive(Debug, Clone)]
pub struct Extractor {
    key: SellerKey,
    tally: Tally,
}

impl Extractor {
    /// An extractor for marks made with `seller_key` (any strength or redundancy).
    #[must_use]
    pub fn new(seller_key: &SellerKey) -> Self {
        Self {
            key: seller_key.clone(),
            tally: Tally::new(),
        }
    }

    /// Reads one slice: finds its cell exponent, then adds every value's vote.
    ///
    /// The exponent is the candidate `S + SEARCH_EXPONENTS.0 ..= S + SEARCH_EXPONENTS.1` (S the
    /// scale exponent) with the largest cell energy over an evenly strided sample of at most
    /// [`SEARCH_SAMPLE`] values (ties to the smaller exponent). A slice whose best energy is
    /// below [`MIN_ENERGY`] carries no mark this key can see and adds no votes: an unmarked
    /// column of repeated values would otherwise add loud correlated noise.
    pub fn add<T: Sample>(&mut self, values: &[T]) -> SliceEvidence {
        let mut evidence = SliceEvidence {
            values: values.len(),
            exponent: None,
            votes: 0,
            energy: 0.0,
        };
        let Some(scale_exponent) = scale(values).and_then(exponent_of) else {
            return evidence;
        };
        let stride = values.len().div_ceil(SEARCH_SAMPLE).max(1);
        let mut sample: Vec<f64> = values
            .iter()
            .step_by(stride)
            .map(|v| v.to_f64())
            .filter(|v| v.is_finite())
            .collect();
        sample.sort_by(f64::total_cmp);
        let mut best: Option<(f64, Grid)> = None;
        for offset in SEARCH_EXPONENTS.0..=SEARCH_EXPONENTS.1 {
            let Some(grid) = Grid::new::<T>(&self.key, scale_exponent + offset) else {
                continue;
            };
            let energy = cell_energy(&grid, &sample);
            if best.as_ref().is_none_or(|(e, _)| energy > *e) {
                best = Some((energy, grid));
            }
        }
        let Some((energy, grid)) = best else {
            return evidence;
        };
        evidence.energy = energy;
        if energy < MIN_ENERGY {
            return evidence;
        }
        let mut tally = Tally::new();
        for value in values {
            if let Some((position, vote)) = grid.vote(value.to_f64()) {
                tally.add(position, vote);
            }
        }
        evidence.exponent = Some(grid.exponent());
        evidence.votes = tally.votes();
        self.tally.merge(&tally);
        evidence
    }

    /// Adds votes read elsewhere in the crate (quantized blocks, `crate::blocks`).
    pub(crate) fn merge_tally(&mut self, tally: &Tally) {
        self.tally.merge(tally);
    }

    /// The buyer whose payload the votes decode to, if its tag verifies.
    ///
    /// Each position's bit is the sign of its vote sum (0 when positive). If the tag does not
    /// verify, the decoder flips every subset of the [`CHASE_BITS`] positions with the smallest
    /// `|sum|` (patterns in increasing binary order, bit k of the pattern flipping the k-th least
    /// reliable position, ties by position) and takes the first payload that verifies.
    #[must_use]
    pub fn extract(&self) -> Option<Extracted> {
        if self.tally.votes() == 0 {
            return None;
        }
        let checker = TagChecker::new(&self.key);
        let mut payload = [0u8; PAYLOAD_LEN];
        for p in 0..PAYLOAD_BITS {
            if self.tally.sum[p] < 0.0 {
                payload[p / 8] |= 0x80 >> (p % 8);
            }
        }
        let mut order: Vec<usize> = (0..PAYLOAD_BITS).collect();
        order.sort_by(|&a, &b| {
            self.tally.sum[a]
                .abs()
                .total_cmp(&self.tally.sum[b].abs())
                .then(a.cmp(&b))
        });
        for pattern in 0u32..1 << CHASE_BITS {
            let mut candidate = payload;
            for (k, &p) in order.iter().take(CHASE_BITS as usize).enumerate() {
                if pattern >> k & 1 == 1 {
                    candidate[p / 8] ^= 0x80 >> (p % 8);
                }
            }
            if checker.verifies(&candidate) {
                let mut buyer_hash = [0; 32];
                buyer_hash.copy_from_slice(&candidate[..32]);
                let bound = f64::from(1u32 << CHASE_BITS) * TAG_FALSE_MATCH;
                return Some(Extracted {
                    buyer_hash,
                    confidence: 1.0 - bound,
                    false_match_bound: bound,
                    agreement: self.agreement(&candidate),
                    votes: self.tally.votes(),
                    corrected_bits: pattern.count_ones(),
                });
            }
        }
        None
    }

    /// Whether the votes agree with `buyer_hash`'s payload beyond chance, position by position.
    #[must_use]
    pub fn verify(&self, buyer_hash: &[u8; 32]) -> Verification {
        let payload = self.key.payload(buyer_hash);
        let mut voted = 0u32;
        let mut agreeing = 0u32;
        for (p, &sum) in self.tally.sum.iter().enumerate() {
            if sum != 0.0 {
                voted += 1;
                if (sum < 0.0) == (payload_bit(&payload, p) == 1) {
                    agreeing += 1;
                }
            }
        }
        let p_value = binomial_tail(voted, agreeing);
        Verification {
            matched: p_value <= VERIFY_THRESHOLD,
            p_value,
            confidence: 1.0 - p_value,
            positions_agreeing: agreeing,
            positions_voted: voted,
            agreement: self.agreement(&payload),
        }
    }

    /// Which of a seller's known buyers the votes match, if any: [`Extractor::verify`] against
    /// each, with the threshold divided by the number of candidates (Bonferroni), and the
    /// smallest p-value wins. This traces copies too damaged, or marks too coarse, for
    /// [`Extractor::extract`] to decode all 320 bits.
    #[must_use]
    pub fn identify(&self, buyers: &[[u8; 32]]) -> Option<(usize, Verification)> {
        #[allow(clippy::cast_precision_loss, reason = "a count as a divisor")]
        let threshold = VERIFY_THRESHOLD / buyers.len().max(1) as f64;
        buyers
            .iter()
            .map(|buyer| self.verify(buyer))
            .enumerate()
            .filter(|(_, v)| v.p_value <= threshold)
            .min_by(|(_, a), (_, b)| a.p_value.total_cmp(&b.p_value))
    }

    fn agreement(&self, payload: &[u8; PAYLOAD_LEN]) -> f64 {
        let votes = self.tally.votes();
        if votes == 0 {
            return 0.0;
        }
        #[allow(clippy::cast_precision_loss, reason = "a ratio of counts")]
        let ratio = self.tally.agreeing(payload) as f64 / votes as f64;
        ratio
    }
}

/// Cell energy of sorted values on `grid`: each cell casts one vote, the mean of its values'
/// votes, and the energy is `Σ_p (Σ cell votes)² / Σ_p Σ (cell vote)²` over positions `p`. Cells
/// vote independently without a mark (energy about 1) and in the payload's direction with one
/// (energy about the cells per position). Averaging within cells first matters: values of one
/// cell vote alike even without a mark, so per-value votes would favour coarse grids.
fn cell_energy(grid: &Grid, sorted: &[f64]) -> f64 {
    let mut tally = Tally::new();
    let mut current: Option<(i64, usize, f64, f64)> = None;
    let flush = |cell: Option<(i64, usize, f64, f64)>, tally: &mut Tally| {
        if let Some((_, position, sum, count)) = cell {
            tally.add(position, sum / count);
        }
    };
    for &x in sorted {
        let Some((j, f)) = grid.locate(x) else {
            continue;
        };
        match &mut current {
            Some((cell, _, sum, count)) if *cell == j => {
                *sum += grid.cell(j).vote(f);
                *count += 1.0;
            }
            _ => {
                flush(current.take(), &mut tally);
                let cell = grid.cell(j);
                current = Some((j, cell.position, cell.vote(f), 1.0));
            }
        }
    }
    flush(current, &mut tally);
    tally.energy()
}

/// `P(X >= k)` for `X ~ Binomial(m, 1/2)`, summed exactly term by term in f64 (m <= 320 keeps
/// `2^-m` a normal number).
#[must_use]
pub fn binomial_tail(m: u32, k: u32) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > m {
        return 0.0;
    }
    let mut term = 0.5f64.powi(i32::try_from(m).unwrap_or(i32::MAX));
    let mut sum = 0.0;
    let mut i = m;
    loop {
        sum += term;
        if i == k {
            break;
        }
        term *= f64::from(i) / f64::from(m - i + 1);
        i -= 1;
    }
    sum.min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binomial_tail_matches_small_cases() {
        assert_eq!(binomial_tail(4, 0), 1.0);
        assert_eq!(binomial_tail(4, 5), 0.0);
        assert!((binomial_tail(4, 4) - 1.0 / 16.0).abs() < 1e-15);
        assert!((binomial_tail(4, 3) - 5.0 / 16.0).abs() < 1e-15);
        assert!((binomial_tail(2, 1) - 0.75).abs() < 1e-15);
        assert!((binomial_tail(320, 160) - 0.522_284).abs() < 1e-5);
        // The verify threshold on 320 positions: 223 agreeing positions are needed.
        assert!(binomial_tail(320, 223) <= VERIFY_THRESHOLD);
        assert!(binomial_tail(320, 222) > VERIFY_THRESHOLD);
    }
}
