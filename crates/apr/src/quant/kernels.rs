//! The GGUF block quantizers Q8_0, Q4_0 and Q4_1, bit-exact with ggml's reference quantizers
//! (`quantize_row_q8_0_ref`, `quantize_row_q4_0_ref`, `quantize_row_q4_1_ref` in
//! `ggml-quants.c`) and with the Python `gguf` package's `gguf.quants` (the CI oracle).
//!
//! Every step is the reference's single-precision operation, in the same order, unfused (Rust
//! never contracts `a * b + c` into a fused multiply-add), so the bytes are the same:
//! - Q8_0: `d = amax / 127`, `id = d != 0 ? 1 / d : 0`, `q = roundf(x * id)` (half away from
//!   zero).
//! - Q4_0: `max` = the first value of largest magnitude, sign kept; `d = max / -8`,
//!   `q = min(15, trunc(x * id + 8.5))`; low nibble = value `j`, high nibble = value `j + 16`.
//! - Q4_1: `d = (max - min) / 15`, `q = min(15, trunc((x - min) * id + 0.5))`, `m = min`.
//!
//! Three corner cases are pinned down where the C reference relies on the platform or where
//! `gguf.quants` and ggml's C code disagree (this crate follows the C code) (see
//! `docs/apr.md`, "Quantization corner cases"): when `1 / d` overflows to infinity (a block whose
//! largest magnitude is below about `3.7e-37`), every quant is 0, as x86 builds of ggml and
//! `gguf.quants` produce; and when several zeros of different signs tie for Q4_1's minimum or
//! maximum, the first one wins, as in ggml (numpy's SIMD reduction picks by lane order); and a
//! Q4_0 block of zeros only has `d = -0`, as in ggml (numpy takes the first zero's sign).
//! Non-finite input is refused before any byte is written (the NaN policy).
//!
//! One block loop serves every kernel (`for_each_block`, over `as_chunks` of fixed-size arrays,
//! so that LLVM vectorizes the per-block code without bounds checks); Q4_0 and Q4_1 share the nibble packing, so each type's
//! code is only what it computes differently: its scale and the expression of each quant. The
//! magnitude maximum is taken on the IEEE bit patterns (`|x|` as u32 is monotonic in `|x|` for
//! finite values), an integer reduction that vectorizes.

use half::f16;

/// Values per block of every GGUF block type here (`QK8_0`, `QK4_0`, `QK4_1`).
pub const BLOCK_LEN: usize = 32;
/// Bytes of one Q8_0 block: f16 scale + 32 i8.
pub const Q8_0_BLOCK_BYTES: usize = 34;
/// Bytes of one Q4_0 block: f16 scale + 16 bytes of nibbles.
pub const Q4_0_BLOCK_BYTES: usize = 18;
/// Bytes of one Q4_1 block: f16 scale + f16 minimum + 16 bytes of nibbles.
pub const Q4_1_BLOCK_BYTES: usize = 20;

const ABS_MASK: u32 = 0x7fff_ffff;
/// Bit pattern of +infinity: any `|x|` pattern at or above it is infinite or NaN.
const INF_BITS: u32 = 0x7f80_0000;

/// Why a kernel refused its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KernelError {
    /// The input length is not a multiple of 32, or the output buffer has the wrong size.
    #[error("input length is not a multiple of 32, or the output buffer has the wrong size")]
    Length,
    /// A value is NaN or infinite (the NaN policy: refused, never quantized).
    #[error("a value is NaN or infinite (refused, never quantized)")]
    NonFinite,
}

/// The largest `|x|` of a block, as bits; `>= INF_BITS` when a value is not finite.
#[inline(always)]
fn max_abs_bits(block: &[f32; BLOCK_LEN]) -> u32 {
    // Eight lanes, then the lanes: a reduction in the shape of the vector registers.
    let mut max = [0u32; 8];
    for values in block.as_chunks::<8>().0 {
        for lane in 0..8 {
            max[lane] = max[lane].max(values[lane].to_bits() & ABS_MASK);
        }
    }
    max.into_iter().fold(0, u32::max)
}

/// `1 / d`, or 0 for a zero scale, as the reference computes it.
#[inline(always)]
fn inverse(d: f32) -> f32 {
    if d == 0.0 { 0.0 } else { 1.0 / d }
}

/// C's `roundf` (half away from zero) of a finite value below 2^31 in magnitude, in steps that
/// vectorize (the `roundf` libm call does not): `x - trunc(x)` is exact for floats, and a
/// fraction of at least one half in magnitude moves the truncated value one step away from zero.
#[inline(always)]
#[allow(
    clippy::cast_possible_truncation,
    reason = "callers pass |v| <= 128: the conversions are exact"
)]
fn round_half_away(v: f32) -> i32 {
    let whole = v as i32;
    #[allow(clippy::cast_precision_loss, reason = "|whole| <= 128 is exact in f32")]
    let frac = v - whole as f32;
    whole + i32::from(frac >= 0.5) - i32::from(frac <= -0.5)
}

/// The block loop of every kernel: checks that `src` is whole blocks of `IN` items and `dst`
/// holds exactly one block of `OUT` items for each, then runs `block` on each pair, stopping at
/// the first error. Fixed-size arrays (`as_chunks`) let LLVM see the block sizes, so the
/// per-block code vectorizes without bounds checks.
#[inline(always)]
fn for_each_block<S, D, const IN: usize, const OUT: usize>(
    src: &[S],
    dst: &mut [D],
    mut block: impl FnMut(&[S; IN], &mut [D; OUT]) -> Result<(), KernelError>,
) -> Result<(), KernelError> {
    let (blocks, rest) = src.as_chunks::<IN>();
    let (slots, spare) = dst.as_chunks_mut::<OUT>();
    if !rest.is_empty() || !spare.is_empty() || slots.len() != blocks.len() {
        return Err(KernelError::Length);
    }
    for (src, dst) in blocks.iter().zip(slots) {
        block(src, dst)?;
    }
    Ok(())
}

/// A block's f16 scale (or minimum) at `at`.
#[inline(always)]
fn f16_at(block: &[u8], at: usize) -> f32 {
    f16::from_le_bytes([block[at], block[at + 1]]).to_f32()
}

/// Quantizes `values` (a multiple of 32) to Q8_0 blocks in `out` (34 bytes per block).
///
/// # Errors
/// [`KernelError::Length`] for a length that is not a multiple of 32 or an output of the wrong
/// size; [`KernelError::NonFinite`] if any value is NaN or infinite (`out` is then unspecified).
#[inline(always)]
pub fn quantize_q8_0(values: &[f32], out: &mut [u8]) -> Result<(), KernelError> {
    for_each_block::<_, _, BLOCK_LEN, Q8_0_BLOCK_BYTES>(values, out, q8_0_block)
}

/// One Q8_0 block.
#[inline(always)]
fn q8_0_block(
    block: &[f32; BLOCK_LEN],
    dst: &mut [u8; Q8_0_BLOCK_BYTES],
) -> Result<(), KernelError> {
    let amax_bits = max_abs_bits(block);
    if amax_bits >= INF_BITS {
        return Err(KernelError::NonFinite);
    }
    let d = f32::from_bits(amax_bits) / 127.0;
    let id = inverse(d);
    let (scale, quants) = dst.split_at_mut(2);
    scale.copy_from_slice(&f16::from_f32(d).to_le_bytes());
    if id.is_infinite() {
        // 1/d overflowed: x * id is ±inf or NaN, which the reference converts to 0.
        quants.fill(0);
        return Ok(());
    }
    for (q, &v) in quants.iter_mut().zip(block) {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "|v * id| <= 127: an i8 stored as its byte"
        )]
        {
            *q = round_half_away(v * id) as i8 as u8;
        }
    }
    Ok(())
}

/// Dequantizes Q8_0 blocks (34 bytes each) into `out` (32 values per block): `q * d`.
///
/// # Errors
/// [`KernelError::Length`] if `blocks` is not whole blocks or `out` has the wrong size.
#[inline(always)]
pub fn dequantize_q8_0(blocks: &[u8], out: &mut [f32]) -> Result<(), KernelError> {
    for_each_block::<_, _, Q8_0_BLOCK_BYTES, BLOCK_LEN>(
        blocks,
        out,
        #[inline(always)]
        |block, dst| {
            let d = f16_at(block, 0);
            // Indices into the block array, so the loop has no bounds checks and vectorizes.
            #[allow(clippy::cast_possible_wrap, reason = "the byte is an i8")]
            let quants: [i8; BLOCK_LEN] = core::array::from_fn(|k| block[2 + k] as i8);
            for (y, q) in dst.iter_mut().zip(quants) {
                *y = f32::from(q) * d;
            }
            Ok(())
        },
    )
}

/// The 4-bit tail of Q4_0 and Q4_1: each value's quant `nibble(level(v))`, packed GGUF-style (low
/// nibble = value `j`, high nibble = value `j + 16`); all zero when `1 / d` overflowed, as the
/// reference gives.
#[inline(always)]
fn pack_nibbles(block: &[f32; BLOCK_LEN], id: f32, nibbles: &mut [u8], level: impl Fn(f32) -> f32) {
    if id.is_infinite() {
        nibbles.fill(0);
        return;
    }
    let mut q = [0u8; BLOCK_LEN];
    for (q, &v) in q.iter_mut().zip(block) {
        *q = nibble(level(v));
    }
    for (j, byte) in nibbles.iter_mut().enumerate() {
        *byte = q[j] | (q[j + 16] << 4);
    }
}

/// The 4-bit head of Q4_0 and Q4_1 dequantization: value `j` from the low nibble of byte `j`,
/// value `j + 16` from its high nibble, each through `value`.
#[inline(always)]
fn unpack_nibbles(nibbles: &[u8], dst: &mut [f32; BLOCK_LEN], value: impl Fn(u8) -> f32) {
    let (low, high) = dst.split_at_mut(16);
    for ((lo, hi), &b) in low.iter_mut().zip(high.iter_mut()).zip(nibbles) {
        *lo = value(b & 0x0F);
        *hi = value(b >> 4);
    }
}

/// Quantizes `values` (a multiple of 32) to Q4_0 blocks in `out` (18 bytes per block).
///
/// # Errors
/// As [`quantize_q8_0`].
#[inline(always)]
pub fn quantize_q4_0(values: &[f32], out: &mut [u8]) -> Result<(), KernelError> {
    for_each_block::<_, _, BLOCK_LEN, Q4_0_BLOCK_BYTES>(values, out, q4_0_block)
}

/// One Q4_0 block.
#[inline(always)]
fn q4_0_block(
    block: &[f32; BLOCK_LEN],
    dst: &mut [u8; Q4_0_BLOCK_BYTES],
) -> Result<(), KernelError> {
    // The first value of largest magnitude, with its sign (ggml: `if (amax < fabsf(v))`). It is
    // the block's maximum or its minimum, whichever is larger in magnitude (one vectorized pass
    // for both); only a block holding both `a` and `-a` at the largest magnitude asks which came
    // first. In a block of zeros ggml never takes a value: `max` keeps its initial +0, whatever
    // the zeros' signs, so `d` is -0 (gguf.quants takes the first zero's sign instead).
    let (lo, hi) = key_range(block);
    let (lo_abs, hi_abs) = (lo.to_bits() & ABS_MASK, hi.to_bits() & ABS_MASK);
    // A NaN or an infinity is the maximum or the minimum key (NaNs sort beyond the infinities).
    let amax_bits = lo_abs.max(hi_abs);
    if amax_bits >= INF_BITS {
        return Err(KernelError::NonFinite);
    }
    let max = if amax_bits == 0 {
        0.0
    } else if hi_abs != lo_abs {
        if hi_abs > lo_abs { hi } else { lo }
    } else {
        block
            .iter()
            .copied()
            .find(
                #[inline(always)]
                |v| v.to_bits() & ABS_MASK == amax_bits,
            )
            .unwrap_or(0.0)
    };
    let d = max / -8.0;
    let id = inverse(d);
    let (scale, nibbles) = dst.split_at_mut(2);
    scale.copy_from_slice(&f16::from_f32(d).to_le_bytes());
    pack_nibbles(
        block,
        id,
        nibbles,
        #[inline(always)]
        |v| (v * id) + 8.5,
    );
    Ok(())
}

/// `min(15, (uint8) trunc(v))` for the reference's `v` in `[0, 16.5]`; NaN gives 0 as in the
/// reference (only reachable when Q4_1's range overflows). Through i32 because the f32 → i32
/// truncation vectorizes (`cvttps2dq`) where the saturating f32 → u8 one does not.
#[inline(always)]
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "v is in [0, 16.5] or NaN: truncation is the reference's, the clamp keeps 0..=15"
)]
fn nibble(v: f32) -> u8 {
    (v as i32).clamp(0, 15) as u8
}

/// Dequantizes Q4_0 blocks (18 bytes each) into `out`: `(q - 8) * d`.
///
/// # Errors
/// [`KernelError::Length`] if `blocks` is not whole blocks or `out` has the wrong size.
#[inline(always)]
pub fn dequantize_q4_0(blocks: &[u8], out: &mut [f32]) -> Result<(), KernelError> {
    for_each_block::<_, _, Q4_0_BLOCK_BYTES, BLOCK_LEN>(
        blocks,
        out,
        #[inline(always)]
        |block, dst| {
            let d = f16_at(block, 0);
            unpack_nibbles(
                &block[2..],
                dst,
                #[inline(always)]
                |q| d * f32::from(i16::from(q) - 8),
            );
            Ok(())
        },
    )
}

/// The block's smallest and largest value in the order of [`key`] (-0 just below +0; a NaN
/// beyond the infinity of its sign), in one pass of eight lanes.
#[inline(always)]
fn key_range(block: &[f32; BLOCK_LEN]) -> (f32, f32) {
    // Eight lanes, then the lanes: a reduction in the shape of the vector registers.
    let mut lo = [i32::MAX; 8];
    let mut hi = [i32::MIN; 8];
    for values in block.as_chunks::<8>().0 {
        for lane in 0..8 {
            let k = key(values[lane]);
            lo[lane] = lo[lane].min(k);
            hi[lane] = hi[lane].max(k);
        }
    }
    let lo = lo.into_iter().fold(i32::MAX, i32::min);
    let hi = hi.into_iter().fold(i32::MIN, i32::max);
    (unkey(lo), unkey(hi))
}

/// An ordered key: a signed integer that sorts like the float, with -0 just below +0.
#[inline(always)]
fn key(v: f32) -> i32 {
    let bits = v.to_bits().cast_signed();
    bits ^ ((bits >> 31).cast_unsigned() >> 1).cast_signed()
}

/// The float of a [`key`].
#[inline(always)]
fn unkey(k: i32) -> f32 {
    f32::from_bits((k ^ ((k >> 31).cast_unsigned() >> 1).cast_signed()).cast_unsigned())
}

/// The block's minimum and maximum as ggml finds them (first wins among equal values, which only
/// matters for zeros of different signs). With a NaN or an infinity in the block, one of the two is
/// not finite.
#[inline(always)]
fn min_max(block: &[f32; BLOCK_LEN]) -> (f32, f32) {
    let (mut min, mut max) = key_range(block);
    if min == 0.0 {
        min = block.iter().copied().find(|&v| v == 0.0).unwrap_or(min);
    }
    if max == 0.0 {
        max = block.iter().copied().find(|&v| v == 0.0).unwrap_or(max);
    }
    (min, max)
}

/// Quantizes `values` (a multiple of 32) to Q4_1 blocks in `out` (20 bytes per block).
///
/// # Errors
/// As [`quantize_q8_0`].
#[inline(always)]
pub fn quantize_q4_1(values: &[f32], out: &mut [u8]) -> Result<(), KernelError> {
    for_each_block::<_, _, BLOCK_LEN, Q4_1_BLOCK_BYTES>(values, out, q4_1_block)
}

/// One Q4_1 block.
#[inline(always)]
fn q4_1_block(
    block: &[f32; BLOCK_LEN],
    dst: &mut [u8; Q4_1_BLOCK_BYTES],
) -> Result<(), KernelError> {
    let (min, max) = min_max(block);
    // A NaN sorts beyond ±infinity by its key, so a non-finite value shows in min or max.
    if !min.is_finite() || !max.is_finite() {
        return Err(KernelError::NonFinite);
    }
    let d = (max - min) / 15.0;
    let id = inverse(d);
    dst[0..2].copy_from_slice(&f16::from_f32(d).to_le_bytes());
    dst[2..4].copy_from_slice(&f16::from_f32(min).to_le_bytes());
    pack_nibbles(
        block,
        id,
        &mut dst[4..],
        #[inline(always)]
        |v| (v - min) * id + 0.5,
    );
    Ok(())
}

/// Dequantizes Q4_1 blocks (20 bytes each) into `out`: `q * d + m`.
///
/// # Errors
/// [`KernelError::Length`] if `blocks` is not whole blocks or `out` has the wrong size.
#[inline(always)]
pub fn dequantize_q4_1(blocks: &[u8], out: &mut [f32]) -> Result<(), KernelError> {
    for_each_block::<_, _, Q4_1_BLOCK_BYTES, BLOCK_LEN>(
        blocks,
        out,
        #[inline(always)]
        |block, dst| {
            let d = f16_at(block, 0);
            let m = f16_at(block, 2);
            unpack_nibbles(
                &block[4..],
                dst,
                #[inline(always)]
                |q| d * f32::from(q) + m,
            );
            Ok(())
        },
    )
}

/// Bytes of one block of `quant`, `None` for the types that are not blocks of 32.
#[must_use]
pub const fn block_bytes(quant: super::QuantType) -> Option<usize> {
    match quant {
        super::QuantType::Q8_0 => Some(Q8_0_BLOCK_BYTES),
        super::QuantType::Q4_0 => Some(Q4_0_BLOCK_BYTES),
        super::QuantType::Q4_1 => Some(Q4_1_BLOCK_BYTES),
        super::QuantType::Q8Tensor | super::QuantType::Custom => None,
    }
}

/// Quantizes `values` with the kernel of the block type `quant` (see [`block_bytes`]).
///
/// # Errors
/// As [`quantize_q8_0`]; [`KernelError::Length`] for a type that is not a block type.
#[inline(always)]
pub fn quantize_blocks(
    quant: super::QuantType,
    values: &[f32],
    out: &mut [u8],
) -> Result<(), KernelError> {
    match quant {
        super::QuantType::Q8_0 => quantize_q8_0(values, out),
        super::QuantType::Q4_0 => quantize_q4_0(values, out),
        super::QuantType::Q4_1 => quantize_q4_1(values, out),
        super::QuantType::Q8Tensor | super::QuantType::Custom => Err(KernelError::Length),
    }
}

/// [`quantize_blocks`] of values stored as little-endian f32 bytes (`bytes.len()` a multiple of
/// 128), read in place: no aligned f32 copy of a mapped tensor is needed.
///
/// # Errors
/// As [`quantize_blocks`].
#[inline(always)]
pub fn quantize_blocks_le(
    quant: super::QuantType,
    bytes: &[u8],
    out: &mut [u8],
) -> Result<(), KernelError> {
    const IN: usize = BLOCK_LEN * 4;
    #[inline(always)]
    fn values(bytes: &[u8; IN]) -> [f32; BLOCK_LEN] {
        let (words, _) = bytes.as_chunks::<4>();
        core::array::from_fn(|i| f32::from_le_bytes(words[i]))
    }
    match quant {
        super::QuantType::Q8_0 => for_each_block::<_, _, IN, Q8_0_BLOCK_BYTES>(
            bytes,
            out,
            #[inline(always)]
            |b, dst| q8_0_block(&values(b), dst),
        ),
        super::QuantType::Q4_0 => for_each_block::<_, _, IN, Q4_0_BLOCK_BYTES>(
            bytes,
            out,
            #[inline(always)]
            |b, dst| q4_0_block(&values(b), dst),
        ),
        super::QuantType::Q4_1 => for_each_block::<_, _, IN, Q4_1_BLOCK_BYTES>(
            bytes,
            out,
            #[inline(always)]
            |b, dst| q4_1_block(&values(b), dst),
        ),
        super::QuantType::Q8Tensor | super::QuantType::Custom => Err(KernelError::Length),
    }
}

/// Dequantizes `blocks` with the kernel of the block type `quant`.
///
/// # Errors
/// As [`dequantize_q8_0`]; [`KernelError::Length`] for a type that is not a block type.
#[inline(always)]
pub fn dequantize_blocks(
    quant: super::QuantType,
    blocks: &[u8],
    out: &mut [f32],
) -> Result<(), KernelError> {
    match quant {
        super::QuantType::Q8_0 => dequantize_q8_0(blocks, out),
        super::QuantType::Q4_0 => dequantize_q4_0(blocks, out),
        super::QuantType::Q4_1 => dequantize_q4_1(blocks, out),
        super::QuantType::Q8Tensor | super::QuantType::Custom => Err(KernelError::Length),
    }
}

/// Values per window of [`super::relative_error`]'s sums: the error's summation order is
/// defined window by window, so that windows can be measured on any thread, in any order, and
/// the result is the same to the bit (docs/apr.md §3.3, "relative_error").
pub const ERROR_WINDOW: usize = 4096;

/// Interleaved f64 accumulators per window sum: element `i` of a window adds to lane `i % 8`.
/// Eight independent chains keep the adder busy (one sequential chain waits for each add's
/// latency) and vectorize on every target.
const ERROR_LANES: usize = 8;

/// The sums of one window of at most [`ERROR_WINDOW`] values ([`WindowSums::measure`]); a
/// tensor's are its windows' added in order ([`ErrorSums::add_window`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WindowSums {
    err: f64,
    norm: f64,
    non_finite: bool,
}

/// The lanes of a window's sums (see [`WindowSums::measure`]).
#[derive(Default)]
struct LaneSums {
    err: [f64; ERROR_LANES],
    norm: [f64; ERROR_LANES],
    /// The largest |approximation| per lane as bits (monotonic for finite values): at or above
    /// infinity's bits when one is not finite. An integer maximum vectorizes.
    approx_bits: [u32; ERROR_LANES],
}

impl LaneSums {
    /// Adds one block of 32 values: value `j` goes to lane `j % 8`; each lane's four terms are
    /// first summed in f32 (in order, `((t0 + t1) + t2) + t3`, from `(a - b)` and `a` computed in
    /// f32), and that partial sum, widened, is added to the lane's f64 sum.
    #[inline(always)]
    fn add_block(&mut self, a: &[f32; BLOCK_LEN], b: &[f32; BLOCK_LEN]) {
        let mut err = [0.0f32; ERROR_LANES];
        let mut norm = [0.0f32; ERROR_LANES];
        for (a, b) in a
            .as_chunks::<ERROR_LANES>()
            .0
            .iter()
            .zip(b.as_chunks::<ERROR_LANES>().0)
        {
            for lane in 0..ERROR_LANES {
                let diff = a[lane] - b[lane];
                err[lane] += diff * diff;
                norm[lane] += a[lane] * a[lane];
                self.approx_bits[lane] = self.approx_bits[lane].max(b[lane].to_bits() & ABS_MASK);
            }
        }
        for lane in 0..ERROR_LANES {
            self.err[lane] += f64::from(err[lane]);
            self.norm[lane] += f64::from(norm[lane]);
        }
    }
}

impl WindowSums {
    /// The sums of one window: `original` and its approximation `approx` (same length, at most
    /// [`ERROR_WINDOW`]), block by block (value `j` of a block to lane
    /// `j % 8`, summed in f32 within the block, in f64 across blocks); the lanes are then added
    /// pairwise, `((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))` (docs/apr.md §3.3).
    #[must_use]
    #[inline(always)]
    pub fn measure(original: &[f32], approx: &[f32]) -> Self {
        Self::measure_with(
            original,
            approx,
            #[inline(always)]
            |&a| a,
        )
    }

    /// [`WindowSums::measure`] of original values stored as little-endian f32 bytes.
    #[must_use]
    #[inline(always)]
    pub fn measure_le(original: &[u8], approx: &[f32]) -> Self {
        Self::measure_with(
            original.as_chunks::<4>().0,
            approx,
            #[inline(always)]
            |a| f32::from_le_bytes(*a),
        )
    }

    #[inline(always)]
    fn measure_with<T>(original: &[T], approx: &[f32], value: impl Fn(&T) -> f32) -> Self {
        let n = original.len().min(approx.len());
        let (original, original_rest) = original[..n].as_chunks::<BLOCK_LEN>();
        let (approx, approx_rest) = approx[..n].as_chunks::<BLOCK_LEN>();
        let mut sums = LaneSums::default();
        for (a, b) in original.iter().zip(approx) {
            sums.add_block(&core::array::from_fn(|k| value(&a[k])), b);
        }
        // The last values (a window that is not whole blocks), padded with zeros, which add 0.
        if !approx_rest.is_empty() {
            let mut a = [0.0f32; BLOCK_LEN];
            let mut b = [0.0f32; BLOCK_LEN];
            for (k, (x, &y)) in original_rest.iter().zip(approx_rest).enumerate() {
                a[k] = value(x);
                b[k] = y;
            }
            sums.add_block(&a, &b);
        }
        let LaneSums {
            err,
            norm,
            approx_bits,
        } = sums;
        let fold = |l: [f64; ERROR_LANES]| {
            ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
        };
        Self {
            err: fold(err),
            norm: fold(norm),
            non_finite: approx_bits.iter().any(|&bits| bits >= INF_BITS),
        }
    }

    /// Dequantizes `blocks` (of type `quant`) into `scratch` and measures them against
    /// `original`, one window (its length is the window's).
    ///
    /// # Errors
    /// As [`dequantize_blocks`] (`scratch` must hold `original.len()` values).
    #[inline(always)]
    pub fn measure_blocks(
        quant: super::QuantType,
        original: &[f32],
        blocks: &[u8],
        scratch: &mut [f32],
    ) -> Result<Self, KernelError> {
        let scratch = scratch
            .get_mut(..original.len())
            .ok_or(KernelError::Length)?;
        dequantize_blocks(quant, blocks, scratch)?;
        Ok(Self::measure(original, scratch))
    }

    /// [`WindowSums::measure_blocks`] of original values stored as little-endian f32 bytes.
    ///
    /// # Errors
    /// As [`WindowSums::measure_blocks`].
    #[inline(always)]
    pub fn measure_blocks_le(
        quant: super::QuantType,
        original: &[u8],
        blocks: &[u8],
        scratch: &mut [f32],
    ) -> Result<Self, KernelError> {
        let scratch = scratch
            .get_mut(..original.len() / 4)
            .ok_or(KernelError::Length)?;
        dequantize_blocks(quant, blocks, scratch)?;
        Ok(Self::measure_le(original, scratch))
    }
}

/// The sums of [`super::relative_error`]: the windows' sums ([`WindowSums`]) added in window
/// order. Each window is measured on its own (any thread, any time) and only this last addition
/// is sequential, so a tensor is measured on every core with the result of the one-thread
/// function, to the bit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ErrorSums {
    /// The windows added so far, summed as one.
    total: WindowSums,
}

impl ErrorSums {
    /// Adds the next window's sums (windows of [`ERROR_WINDOW`] values from the tensor's start,
    /// in order).
    #[inline]
    pub fn add_window(&mut self, window: WindowSums) {
        self.total.err += window.err;
        self.total.norm += window.norm;
        self.total.non_finite |= window.non_finite;
    }

    /// Measures and adds `original` against `approx` (same length), a whole number of windows
    /// from the tensor's start or its last values.
    pub fn add(&mut self, original: &[f32], approx: &[f32]) {
        for (a, b) in original
            .chunks(ERROR_WINDOW)
            .zip(approx.chunks(ERROR_WINDOW))
        {
            self.add_window(WindowSums::measure(a, b));
        }
    }

    /// Whether an approximation was NaN or infinite (a scale that overflowed its f16).
    #[must_use]
    pub fn saw_non_finite(&self) -> bool {
        self.total.non_finite
    }

    /// `||x - approx|| / ||x||`: 0 when both sums are 0, infinity for an all-zero `x` with a
    /// non-zero error. (`std`: the square root; quantizing is not part of the no_std build.)
    #[cfg(feature = "std")]
    #[must_use]
    pub fn relative_error(&self) -> f32 {
        let WindowSums { err, norm, .. } = self.total;
        if norm == 0.0 {
            return if err == 0.0 { 0.0 } else { f32::INFINITY };
        }
        #[allow(clippy::cast_possible_truncation, reason = "a ratio, reported in f32")]
        let ratio = (err / norm).sqrt() as f32;
        ratio
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The error's sums follow docs/apr.md §3.3 step by step, written here as plainly as the
    /// document says them (no lanes arrays, no windows struct): the same bits, on lengths that
    /// end mid-block, mid-window and on a window.
    #[test]
    fn error_sums_follow_the_documented_order() {
        fn documented(x: &[f32], y: &[f32]) -> f32 {
            let (mut err, mut norm) = (0.0f64, 0.0f64);
            for (xw, yw) in x.chunks(4096).zip(y.chunks(4096)) {
                let (mut lane_err, mut lane_norm) = ([0.0f64; 8], [0.0f64; 8]);
                for (xb, yb) in xw.chunks(32).zip(yw.chunks(32)) {
                    for lane in 0..8 {
                        let (mut e, mut n) = (0.0f32, 0.0f32);
                        for k in (lane..32).step_by(8) {
                            let (a, b) = (*xb.get(k).unwrap_or(&0.0), *yb.get(k).unwrap_or(&0.0));
                            e += (a - b) * (a - b);
                            n += a * a;
                        }
                        lane_err[lane] += f64::from(e);
                        lane_norm[lane] += f64::from(n);
                    }
                }
                let fold =
                    |l: [f64; 8]| ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
                err += fold(lane_err);
                norm += fold(lane_norm);
            }
            #[allow(
                clippy::cast_possible_truncation,
                reason = "the error is reported in f32"
            )]
            let error = (err / norm).sqrt() as f32;
            error
        }
        let mut state = 0x9e37_79b9_u32;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            f32::from_bits(0x3f80_0000 | (state >> 9)) - 1.5
        };
        for len in [1, 31, 33, 4095, 4096, 4097, 10_000] {
            let x: Vec<f32> = (0..len).map(|_| next()).collect();
            let y: Vec<f32> = x.iter().map(|&v| v + next() * 1.0e-3).collect();
            assert_eq!(
                super::super::relative_error(&x, &y).to_bits(),
                documented(&x, &y).to_bits(),
                "{len}"
            );
        }
    }

    fn q8(values: &[f32]) -> Vec<u8> {
        let mut out = vec![0; values.len() / 32 * Q8_0_BLOCK_BYTES];
        quantize_q8_0(values, &mut out).unwrap();
        out
    }

    #[test]
    fn round_half_away_matches_roundf() {
        for v in [
            0.5f32, 1.5, 2.5, -0.5, -2.5, 0.49999997, 126.5, -127.0, 0.0, -0.0,
        ] {
            #[allow(clippy::cast_possible_truncation, reason = "test values are small")]
            let expected = v.round() as i32;
            assert_eq!(round_half_away(v), expected, "{v}");
        }
    }

    #[test]
    fn all_zero_block_has_zero_scale_and_quants() {
        assert_eq!(q8(&[0.0; 32]), vec![0; 34]);
    }

    #[test]
    fn non_finite_values_are_refused() {
        let mut values = [1.0f32; 32];
        values[7] = f32::NAN;
        let mut out = vec![0; 34];
        assert_eq!(
            quantize_q8_0(&values, &mut out),
            Err(KernelError::NonFinite)
        );
        let mut out = vec![0; 18];
        values[7] = f32::INFINITY;
        assert_eq!(
            quantize_q4_0(&values, &mut out),
            Err(KernelError::NonFinite)
        );
        let mut out = vec![0; 20];
        assert_eq!(
            quantize_q4_1(&values, &mut out),
            Err(KernelError::NonFinite)
        );
    }

    #[test]
    fn lengths_that_are_not_whole_blocks_are_refused() {
        let mut out = vec![0; 34];
        assert_eq!(
            quantize_q8_0(&[0.0; 31], &mut out),
            Err(KernelError::Length)
        );
        let mut out = vec![0.0; 32];
        assert_eq!(
            dequantize_q4_0(&[0; 17], &mut out),
            Err(KernelError::Length)
        );
    }

    #[test]
    fn q4_0_nibble_order_is_first_half_low() {
        let mut values = [0.0f32; 32];
        values[0] = -8.0; // max magnitude, negative: d = 1, q = x + 8
        values[16] = 7.0;
        let mut out = vec![0; 18];
        quantize_q4_0(&values, &mut out).unwrap();
        assert_eq!(f16::from_le_bytes([out[0], out[1]]).to_f32(), 1.0);
        assert_eq!(out[2], 0x0F << 4); // value 0 -> q 0 (low), value 16 -> q 15 (high)
        assert_eq!(out[3], 0x88);
    }

    #[test]
    fn q4_1_zero_ties_take_the_first_zero() {
        let mut values = [1.0f32; 32];
        values[3] = -0.0;
        values[9] = 0.0;
        let (min, _) = min_max(&values);
        assert!(min.is_sign_negative());
        values[3] = 0.0;
        values[9] = -0.0;
        let (min, _) = min_max(&values);
        assert!(min.is_sign_positive());
    }
}
