//! Quantized blocks (GGUF Q8_0, Q4_0, Q4_1): a mark on the integer quants themselves
//! (docs/watermark.md §12).
//!
//! **Key design decision: keyed parity of sparse, position-keyed quants, moved by one quantum.**
//! A block's quants are far coarser than any QIM step of §3 (one Q8_0 quantum is about 1/55 of a
//! weight's standard deviation, one Q4 quantum about 1/4), so a value-level mark made before
//! quantization dies in it unless it is made very strong. Here the mark lives in what survives
//! every lossless handling of a quantized model (save/load, SafeTensors export and import, GGUF
//! export, dequantizing and re-quantizing to the same type): the parity of chosen quants. Element
//! `i` of a tensor (its index in value order) gets a keyed hash that fixes its payload position,
//! a dither bit, a preferred direction and a *level* `L` (`P(L >= k) = 2^-k`); a mark at level `k`
//! sets the parity of every carrier quant with `L >= k` to its payload bit, moving the quant by at
//! most one step. Quants that fix the block's scale (the largest magnitude of Q8_0, the ends of
//! Q4's range) are never read or moved, so the scale, and with it re-quantization, is unchanged.
//! The extractor does not know `k`: the sets are nested, so it tallies votes per level and takes
//! the level of largest cell energy over the whole reading (the §5 statistic), which is the
//! marked one. Positions are keyed by the element's index, not its value: a model's weights do
//! not move, and dequantized values would not survive as cell keys.

use crate::Watermark;
use crate::embed::{Skip, SliceReport};
use crate::error::Error;
use crate::extract::{MIN_ENERGY, Tally};
use crate::keys::{CellKey, PAYLOAD_BITS, PAYLOAD_LEN, SellerKey, payload_bit};

pub use crate::keys::LABEL_BLOCK;

/// Values per block of every block format here.
pub const BLOCK_VALUES: usize = 32;

/// The sparsest level: a mark reaches at most one quant in `2^MAX_LEVEL`.
pub const MAX_LEVEL: u32 = 24;

/// A GGUF block format whose quants can carry the mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BlockFormat {
    /// f16 scale `d`, then 32 `i8` quants; value `q d`.
    Q8_0,
    /// f16 scale `d`, then 16 bytes of nibbles; value `(q - 8) d`.
    Q4_0,
    /// f16 scale `d`, f16 minimum `m`, then 16 bytes of nibbles; value `q d + m`.
    Q4_1,
}

impl BlockFormat {
    /// Every format.
    pub const ALL: [Self; 3] = [Self::Q8_0, Self::Q4_0, Self::Q4_1];

    /// Bytes of one block (34, 18, 20).
    #[must_use]
    pub const fn block_bytes(self) -> usize {
        match self {
            Self::Q8_0 => 34,
            Self::Q4_0 => 18,
            Self::Q4_1 => 20,
        }
    }

    /// Position in [`BlockFormat::ALL`].
    pub(crate) const fn index(self) -> usize {
        match self {
            Self::Q8_0 => 0,
            Self::Q4_0 => 1,
            Self::Q4_1 => 2,
        }
    }

    /// Bytes before the quants: the f16 scale (and minimum).
    const fn head(self) -> usize {
        match self {
            Self::Q8_0 | Self::Q4_0 => 2,
            Self::Q4_1 => 4,
        }
    }

    /// Quant `j` (0..32, in value order) of `block`: the `i8` of Q8_0, the nibble of Q4 (value
    /// `j < 16` in the low nibble of quant byte `j`, value `j + 16` in its high nibble).
    fn quant(self, block: &[u8], j: usize) -> i32 {
        let head = self.head();
        match self {
            Self::Q8_0 => i32::from(i8::from_le_bytes([block[head + j]])),
            Self::Q4_0 | Self::Q4_1 if j < 16 => i32::from(block[head + j] & 0x0f),
            Self::Q4_0 | Self::Q4_1 => i32::from(block[head + j - 16] >> 4),
        }
    }

    /// Stores quant `j` (the caller keeps it in the carrier range).
    fn set_quant(self, block: &mut [u8], j: usize, q: i32) {
        let head = self.head();
        match self {
            Self::Q8_0 => {
                let byte = i8::try_from(q).unwrap_or_else(|_| unreachable!("|q| < 127"));
                block[head + j] = byte.to_le_bytes()[0];
            }
            Self::Q4_0 | Self::Q4_1 => {
                let nibble = u8::try_from(q).unwrap_or_else(|_| unreachable!("q in 1..=15"));
                let (at, shift, keep) = if j < 16 {
                    (head + j, 0, 0xf0)
                } else {
                    (head + j - 16, 4, 0x0f)
                };
                block[at] = (block[at] & keep) | (nibble << shift);
            }
        }
    }

    /// The quants of `block` that carry a mark: `lo..=hi`, or `None` for a block that carries
    /// none (a zero or non-finite scale, or too few levels). Q8_0: `|q| < max |q|` of the block,
    /// so its largest magnitude, hence its scale, stays; Q4_0: `1..=15` (quant 0 holds the value
    /// of largest magnitude, which sets the scale); Q4_1: `1..=14` (0 and 15 hold the minimum and
    /// maximum).
    fn carriers(self, block: &[u8]) -> Option<(i32, i32)> {
        let scale = u16::from_le_bytes([block[0], block[1]]);
        // An f16 of exponent field 31 is infinite or NaN; magnitude bits 0 is a zero scale.
        if scale & 0x7fff == 0 || scale & 0x7c00 == 0x7c00 {
            return None;
        }
        match self {
            Self::Q8_0 => {
                let max = (0..BLOCK_VALUES)
                    .map(|j| self.quant(block, j).abs())
                    .max()
                    .unwrap_or(0);
                (max >= 2).then_some((1 - max, max - 1))
            }
            Self::Q4_0 => Some((1, 15)),
            Self::Q4_1 => Some((1, 14)),
        }
    }
}

/// What the key says about element `i` of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Element {
    /// Payload position, `((h mod 2^32) * 320) >> 32`.
    position: usize,
    /// `min(MAX_LEVEL, leading zeros of (h >> 32) as u32)`.
    level: u32,
    /// Bit 32 of `h`: the parity that reads as payload bit 0.
    dither: i32,
    /// Bit 33 of `h`: a quant that must change moves up (1) or down (0), if it can.
    up: bool,
}

impl Element {
    fn of(key: &CellKey, index: u64) -> Self {
        let h = key.hash(i64::from_le_bytes(index.to_le_bytes()));
        let low = h & 0xffff_ffff;
        let high = u32::try_from(h >> 32).unwrap_or_else(|_| unreachable!("32 bits"));
        Self {
            position: usize::try_from((low * PAYLOAD_BITS as u64) >> 32)
                .unwrap_or_else(|_| unreachable!("below PAYLOAD_BITS")),
            level: high.leading_zeros().min(MAX_LEVEL),
            dither: i32::from(high & 1 == 1),
            up: high & 2 == 2,
        }
    }

    /// The payload bit quant `q` reads as: `(q mod 2) XOR dither`.
    const fn bit(self, q: i32) -> i32 {
        (q & 1) ^ self.dither
    }
}

/// The level a mark of `redundancy` uses: the smallest `k >= 0` with `2^-k <= redundancy`, at
/// most [`MAX_LEVEL`] (1.0 marks every carrier quant, 0.5 half of them, 0.01 one in 128).
#[must_use]
pub fn level_of(redundancy: f32) -> u32 {
    let mut level = 0;
    let mut fraction = 1.0_f64;
    while fraction > f64::from(redundancy) && level < MAX_LEVEL {
        level += 1;
        fraction *= 0.5;
    }
    level
}

/// The whole blocks of `data`, or [`Error::NotWholeBlocks`].
fn blocks(format: BlockFormat, len: usize) -> Result<usize, Error> {
    let size = format.block_bytes();
    if len.is_multiple_of(size) {
        Ok(len / size)
    } else {
        Err(Error::NotWholeBlocks {
            bytes: u64::try_from(len).unwrap_or(u64::MAX),
            block_bytes: u64::try_from(size).unwrap_or(u64::MAX),
        })
    }
}

/// Embeds one payload into block tensors (used by [`crate::Marking`]).
#[derive(Debug)]
pub(crate) struct BlockEmbedder {
    key: CellKey,
    payload: [u8; PAYLOAD_LEN],
    level: u32,
}

impl BlockEmbedder {
    /// For a validated `watermark`; the strength does not apply (a quant moves by one step).
    pub(crate) fn new(seller_key: &SellerKey, watermark: &Watermark) -> Self {
        Self {
            key: seller_key.block_key(),
            payload: seller_key.payload(&watermark.buyer_hash),
            level: level_of(watermark.redundancy),
        }
    }

    /// Marks the blocks in `data` in place. `marked` counts the carrier quants at the mark's
    /// level (each now reads its payload bit, about half of them were moved).
    pub(crate) fn embed(&self, format: BlockFormat, data: &mut [u8]) -> Result<SliceReport, Error> {
        let count = blocks(format, data.len())?;
        let mut report = SliceReport {
            values: count * BLOCK_VALUES,
            marked: 0,
            exponent: None,
            skipped: None,
        };
        let mut index = 0u64;
        for block in data.chunks_exact_mut(format.block_bytes()) {
            let carriers = format.carriers(block);
            for j in 0..BLOCK_VALUES {
                let element = Element::of(&self.key, index);
                index += 1;
                let Some((lo, hi)) = carriers else { continue };
                let q = format.quant(block, j);
                if element.level < self.level || !(lo..=hi).contains(&q) {
                    continue;
                }
                report.marked += 1;
                let want = i32::from(payload_bit(&self.payload, element.position));
                if element.bit(q) == want {
                    continue;
                }
                let step = if element.up { 1 } else { -1 };
                let moved = if (lo..=hi).contains(&(q + step)) {
                    q + step
                } else {
                    q - step
                };
                format.set_quant(block, j, moved);
            }
        }
        if report.marked == 0 {
            report.skipped = Some(Skip::NoSpread);
        }
        Ok(report)
    }
}

/// Votes of block tensors per level, for the level search of a whole reading.
#[derive(Debug, Clone)]
pub(crate) struct LevelTally {
    /// `levels[L]`: votes of carrier quants of level exactly `L`.
    levels: Vec<Tally>,
}

impl LevelTally {
    pub(crate) fn new() -> Self {
        Self {
            levels: vec![Tally::new(); MAX_LEVEL as usize + 1],
        }
    }

    /// Reads every carrier quant of `data`: vote `+1` for payload bit 0, `-1` for 1.
    pub(crate) fn read(key: &CellKey, format: BlockFormat, data: &[u8]) -> Result<Self, Error> {
        blocks(format, data.len())?;
        let mut tally = Self::new();
        let mut index = 0u64;
        for block in data.chunks_exact(format.block_bytes()) {
            let carriers = format.carriers(block);
            for j in 0..BLOCK_VALUES {
                let element = Element::of(key, index);
                index += 1;
                let Some((lo, hi)) = carriers else { continue };
                let q = format.quant(block, j);
                if (lo..=hi).contains(&q) {
                    let vote = if element.bit(q) == 0 { 1.0 } else { -1.0 };
                    tally.levels[element.level as usize].add(element.position, vote);
                }
            }
        }
        Ok(tally)
    }

    pub(crate) fn merge(&mut self, other: &Self) {
        for (mine, theirs) in self.levels.iter_mut().zip(&other.levels) {
            mine.merge(theirs);
        }
    }

    /// The votes of the level `k` whose nested set (every level `>= k`) has the largest cell
    /// energy (ties: the smaller `k`), with that energy; `None` when no quant voted.
    pub(crate) fn best(&self) -> Option<(u32, f64, Tally)> {
        let mut cumulative = Tally::new();
        let mut best: Option<(u32, f64, Tally)> = None;
        for level in (0..=MAX_LEVEL).rev() {
            cumulative.merge(&self.levels[level as usize]);
            if cumulative.votes() == 0 {
                continue;
            }
            let energy = cumulative.energy();
            if best.as_ref().is_none_or(|(_, e, _)| energy >= *e) {
                best = Some((level, energy, cumulative.clone()));
            }
        }
        best
    }

    /// The votes a reading adds: those of [`LevelTally::best`], if its energy is at least
    /// [`MIN_ENERGY`] (the §5 gate: without a mark the energy is about 1).
    pub(crate) fn votes(&self) -> Option<Tally> {
        self.best()
            .filter(|(_, energy, _)| *energy >= MIN_ENERGY)
            .map(|(_, _, tally)| tally)
    }

    /// Carrier quants read, at every level.
    pub(crate) fn carriers(&self) -> u64 {
        self.levels.iter().map(Tally::votes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::Rng;

    /// Q8_0 blocks of pseudo-random quants with one ±127 per block (the reference quantizer
    /// always has one) and scale 0.01.
    fn q8_blocks(rng: &mut Rng, count: usize) -> Vec<u8> {
        let mut data = Vec::with_capacity(count * 34);
        for _ in 0..count {
            data.extend_from_slice(&0x211f_u16.to_le_bytes());
            for j in 0..BLOCK_VALUES {
                let q: i8 = if j == 5 {
                    127
                } else {
                    i8::try_from(rng.below(200)).unwrap_or(0) - 100
                };
                data.push(q.to_le_bytes()[0]);
            }
        }
        data
    }

    #[test]
    fn levels_follow_the_redundancy() {
        assert_eq!(level_of(1.0), 0);
        assert_eq!(level_of(0.5), 1);
        assert_eq!(level_of(0.3), 2);
        assert_eq!(level_of(0.01), 7);
        assert_eq!(level_of(1e-12), MAX_LEVEL);
    }

    #[test]
    fn quants_round_trip_in_every_format() {
        for format in BlockFormat::ALL {
            let mut block = vec![0x3c; format.block_bytes()];
            for j in 0..BLOCK_VALUES {
                let q = i32::try_from(j % 14).unwrap() + 1;
                format.set_quant(&mut block, j, q);
                assert_eq!(format.quant(&block, j), q, "{format:?} {j}");
            }
            for j in 0..BLOCK_VALUES {
                let q = i32::try_from(j % 14).unwrap() + 1;
                assert_eq!(format.quant(&block, j), q, "{format:?} {j}");
            }
        }
    }

    #[test]
    fn a_marked_tensor_keeps_its_scales_and_extremes_and_reads_its_bits() {
        let seller = SellerKey::new([9; 32]);
        let mark = Watermark::for_buyer(&seller, b"b");
        let mut rng = Rng::new(4);
        let clean = q8_blocks(&mut rng, 200);
        let mut data = clean.clone();
        let report = BlockEmbedder::new(&seller, &mark)
            .embed(BlockFormat::Q8_0, &mut data)
            .unwrap();
        assert_eq!(report.values, 6400);
        assert!(report.marked > 6000, "{report:?}");
        let payload = seller.payload(&mark.buyer_hash);
        let key = seller.block_key();
        for (b, (old, new)) in clean.chunks(34).zip(data.chunks(34)).enumerate() {
            assert_eq!(old[..2], new[..2]);
            assert_eq!(new[2 + 5], 127);
            for j in 0..BLOCK_VALUES {
                let (q0, q1) = (
                    BlockFormat::Q8_0.quant(old, j),
                    BlockFormat::Q8_0.quant(new, j),
                );
                assert!((q0 - q1).abs() <= 1);
                let element = Element::of(&key, (b * BLOCK_VALUES + j) as u64);
                if j != 5 {
                    let bit = i32::from(payload_bit(&payload, element.position));
                    assert_eq!(element.bit(q1), bit);
                }
            }
        }
        let tally = LevelTally::read(&key, BlockFormat::Q8_0, &data).unwrap();
        let (level, energy, _) = tally.best().unwrap();
        assert_eq!(level, 0);
        assert!(energy > 10.0);
        let clean_tally = LevelTally::read(&key, BlockFormat::Q8_0, &clean).unwrap();
        assert!(clean_tally.votes().is_none_or(|t| t.votes() < 100));
    }

    #[test]
    fn a_sparse_mark_is_found_at_its_level_by_a_whole_reading_and_only_with_the_key() {
        let seller = SellerKey::new([9; 32]);
        let mut mark = Watermark::for_buyer(&seller, b"b");
        mark.redundancy = 1.0 / 16.0;
        let mut rng = Rng::new(5);
        let clean: Vec<Vec<u8>> = (0..3).map(|_| q8_blocks(&mut rng, 1000)).collect();
        let mut marking = crate::Marking::new(&seller, &mark).unwrap();
        let mut tensors = clean.clone();
        for (i, data) in tensors.iter_mut().enumerate() {
            let report = marking
                .embed_blocks(&format!("t{i}"), BlockFormat::Q8_0, data)
                .unwrap();
            assert!((1700..2300).contains(&report.marked), "{report:?}");
        }
        let report = marking.finish().unwrap();
        assert_eq!(report.traceability, crate::Traceability::Extractable);
        let changed: usize = clean
            .iter()
            .flatten()
            .zip(tensors.iter().flatten())
            .filter(|(a, b)| a != b)
            .count();
        assert!((2500..3500).contains(&changed), "{changed}");

        let mut reading = crate::Reading::new(&seller);
        for (i, data) in tensors.iter().enumerate() {
            reading
                .add_blocks(&format!("t{i}"), BlockFormat::Q8_0, data)
                .unwrap();
        }
        assert_eq!(reading.extract().unwrap().buyer_hash, mark.buyer_hash);
        assert!(reading.verify(&mark.buyer_hash).matched);
        let mut wrong = crate::Reading::new(&SellerKey::new([10; 32]));
        let mut unmarked = crate::Reading::new(&seller);
        for data in &tensors {
            wrong.add_blocks("t", BlockFormat::Q8_0, data).unwrap();
        }
        for data in &clean {
            unmarked.add_blocks("t", BlockFormat::Q8_0, data).unwrap();
        }
        assert!(wrong.extract().is_none());
        assert!(!wrong.verify(&mark.buyer_hash).matched);
        assert!(unmarked.extract().is_none());
    }

    #[test]
    fn the_block_key_matches_its_known_answer() {
        let seller = SellerKey::new(core::array::from_fn(|i| u8::try_from(i).unwrap()));
        // docs/watermark.md §12; also computed by the Python reader's SipHash and HMAC.
        let h = seller.block_key().hash(1234);
        assert_eq!(format!("{h:016x}"), "b0408ddd58336c7b");
        assert_eq!(
            Element::of(&seller.block_key(), 1234),
            Element {
                position: 110,
                level: 0,
                dither: 1,
                up: false
            }
        );
        let sparse = (0..u64::MAX)
            .map(|i| (i, Element::of(&seller.block_key(), i)))
            .find(|(_, e)| e.level >= 8)
            .unwrap();
        assert_eq!(sparse.0, 546);
    }

    #[test]
    fn partial_blocks_are_refused() {
        let seller = SellerKey::new([9; 32]);
        let mark = Watermark::for_buyer(&seller, b"b");
        let mut data = vec![0; 35];
        assert!(matches!(
            BlockEmbedder::new(&seller, &mark).embed(BlockFormat::Q8_0, &mut data),
            Err(Error::NotWholeBlocks {
                bytes: 35,
                block_bytes: 34
            })
        ));
    }
}
