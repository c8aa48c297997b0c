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
//! finite values), an integer reduction that vectorizes. The quants are computed as
//! integer-valued floats (`floor_small`, `round_half_away`) and turned into bytes by bit
//! arithmetic (`small_int`): the saturating `v as i32` that C's cast becomes in Rust does not
//! vectorize and was a scalar loop per value. The scales' f16 conversions are half's software
//! ones, inlined (a call per block spilled the vector registers).
//!
//! [`quantize_measure`] is the kernel and the error measurement of one window in one pass: each
//! block kernel hands the block's approximation, computed from the quants and scales it just
//! made with the dequantizer's operations, to the window's sums ([`WindowSums`]), instead of the
//! blocks being written, read back, dequantized into a buffer and measured from it.

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

/// 2^23: at and above it, every f32 is an integer.
const TWO_POW_23: f32 = 8_388_608.0;

/// `floor(v)` for `0 <= v < 2^22` (+0 for -0), in steps that vectorize on every target: the
/// conversions `v as i32` (saturating) and `f32::trunc` (std only, a libm call without SSE4.1)
/// do not, and were a scalar loop per value. `(v + 2^23) - 2^23` is `v` rounded to an integer
/// (exact: the sum's unit in the last place is 1), one less if that rounded up.
#[inline(always)]
fn floor_small(v: f32) -> f32 {
    let rounded = (v + TWO_POW_23) - TWO_POW_23;
    if rounded > v { rounded - 1.0 } else { rounded }
}

/// `trunc(v)` for `|v| < 2^22` (NaN stays NaN): [`floor_small`] of `|v|`, with `v`'s sign.
#[inline(always)]
fn trunc_small(v: f32) -> f32 {
    floor_small(v.abs()).copysign(v)
}

/// The integer `t` (an integer-valued f32, `|t| < 2^22`) as i32, without a float conversion:
/// `t + 1.5 · 2^23` is exact and holds `t` in its low mantissa bits.
#[inline(always)]
fn small_int(t: f32) -> i32 {
    const MAGIC: f32 = 12_582_912.0;
    (t + MAGIC).to_bits().cast_signed() - MAGIC.to_bits().cast_signed()
}

/// C's `roundf` (half away from zero) of a finite value below 2^22 in magnitude, as an
/// integer-valued f32, in steps that vectorize (the `roundf` libm call does not): `x - trunc(x)`
/// is exact for floats, and a fraction of at least one half in magnitude moves the truncated
/// value one step away from zero.
#[inline(always)]
fn round_half_away(v: f32) -> f32 {
    let whole = trunc_small(v);
    let frac = v - whole;
    let up = if frac >= 0.5 { 1.0 } else { 0.0 };
    let down = if frac <= -0.5 { 1.0 } else { 0.0 };
    whole + up - down
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
    q8_0_block_measured(block, dst, &mut ())
}

/// One Q8_0 block, its approximation (`q * d`, as [`dequantize_q8_0`] computes it) given to
/// `measure`.
#[inline(always)]
fn q8_0_block_measured(
    block: &[f32; BLOCK_LEN],
    dst: &mut [u8; Q8_0_BLOCK_BYTES],
    measure: &mut impl Measure,
) -> Result<(), KernelError> {
    let amax_bits = max_abs_bits(block);
    if amax_bits >= INF_BITS {
        return Err(KernelError::NonFinite);
    }
    let d = f32::from_bits(amax_bits) / 127.0;
    let id = inverse(d);
    let d16 = f16::from_f32_const(d);
    let (scale, quants) = dst.split_at_mut(2);
    scale.copy_from_slice(&d16.to_le_bytes());
    // 1/d overflowed: x * id is ±inf or NaN, which the reference converts to 0.
    // (Loops rather than `core::array::from_fn`, which LLVM may leave as a call, outside the
    // vector extensions `pulp` compiles the kernels for.)
    // The quants as integer-valued floats.
    let mut q = [0.0f32; BLOCK_LEN];
    if !id.is_infinite() {
        for (q, &v) in q.iter_mut().zip(block) {
            *q = round_half_away(v * id);
        }
    }
    for (byte, &q) in quants.iter_mut().zip(&q) {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "|q| <= 127: an i8 stored as its byte"
        )]
        {
            *byte = small_int(q) as i8 as u8;
        }
    }
    let d = d16.to_f32_const();
    measure.block(
        block,
        // `f32::from(q as i8) * d`, exactly.
        #[inline(always)]
        |k| q[k] * d,
        d.is_finite(),
    );
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
/// reference gives. Returns the quants, unpacked, as integer-valued floats (so that the
/// quantizing, packing and dequantizing loops all stay in vector registers of f32 lanes).
#[inline(always)]
fn pack_nibbles(
    block: &[f32; BLOCK_LEN],
    id: f32,
    nibbles: &mut [u8],
    level: impl Fn(f32) -> f32,
) -> [f32; BLOCK_LEN] {
    let mut q = [0.0f32; BLOCK_LEN];
    if !id.is_infinite() {
        for (q, &v) in q.iter_mut().zip(block) {
            *q = nibble(level(v));
        }
    }
    let (low, high) = q.split_at(16);
    for ((byte, &low), &high) in nibbles.iter_mut().zip(low).zip(high) {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "both quants are in 0..=15: a byte"
        )]
        {
            *byte = (small_int(low) | (small_int(high) << 4)) as u8;
        }
    }
    q
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
    q4_0_block_measured(block, dst, &mut ())
}

/// One Q4_0 block, its approximation (`(q - 8) * d`, as [`dequantize_q4_0`] computes it) given
/// to `measure`.
#[inline(always)]
fn q4_0_block_measured(
    block: &[f32; BLOCK_LEN],
    dst: &mut [u8; Q4_0_BLOCK_BYTES],
    measure: &mut impl Measure,
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
    let d16 = f16::from_f32_const(d);
    let (scale, nibbles) = dst.split_at_mut(2);
    scale.copy_from_slice(&d16.to_le_bytes());
    let q = pack_nibbles(
        block,
        id,
        nibbles,
        #[inline(always)]
        |v| (v * id) + 8.5,
    );
    let d = d16.to_f32_const();
    measure.block(
        block,
        // `f32::from(i16::from(q) - 8)` of the byte, exactly.
        #[inline(always)]
        |k| d * (q[k] - 8.0),
        d.is_finite(),
    );
    Ok(())
}

/// `min(15, (uint8) trunc(v))` for the reference's `v` in `[0, 16.5]`, as an integer-valued
/// float; NaN gives 0 as in the reference (only reachable when Q4_1's range overflows), and so
/// does anything below 0 (unreachable). In float steps, which vectorize where the saturating
/// `v as i32` does not (see [`trunc_small`]).
#[inline(always)]
fn nibble(v: f32) -> f32 {
    if v >= 15.0 {
        15.0
    } else if v >= 0.0 {
        floor_small(v)
    } else {
        0.0
    }
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
    q4_1_block_measured(block, dst, &mut ())
}

/// One Q4_1 block, its approximation (`q * d + m`, as [`dequantize_q4_1`] computes it) given to
/// `measure`.
#[inline(always)]
fn q4_1_block_measured(
    block: &[f32; BLOCK_LEN],
    dst: &mut [u8; Q4_1_BLOCK_BYTES],
    measure: &mut impl Measure,
) -> Result<(), KernelError> {
    let (min, max) = min_max(block);
    // A NaN sorts beyond ±infinity by its key, so a non-finite value shows in min or max.
    if !min.is_finite() || !max.is_finite() {
        return Err(KernelError::NonFinite);
    }
    let d = (max - min) / 15.0;
    let id = inverse(d);
    let (d16, m16) = (f16::from_f32_const(d), f16::from_f32_const(min));
    dst[0..2].copy_from_slice(&d16.to_le_bytes());
    dst[2..4].copy_from_slice(&m16.to_le_bytes());
    let q = pack_nibbles(
        block,
        id,
        &mut dst[4..],
        #[inline(always)]
        |v| (v - min) * id + 0.5,
    );
    let (d, m) = (d16.to_f32_const(), m16.to_f32_const());
    measure.block(
        block,
        #[inline(always)]
        |k| d * q[k] + m,
        d.is_finite() && m.is_finite(),
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

/// Bytes of one block of little-endian f32 values.
const LE_BLOCK_BYTES: usize = BLOCK_LEN * 4;

/// A block of little-endian f32 values, read.
#[inline(always)]
fn le_block(bytes: &[u8; LE_BLOCK_BYTES]) -> [f32; BLOCK_LEN] {
    let (words, _) = bytes.as_chunks::<4>();
    core::array::from_fn(|i| f32::from_le_bytes(words[i]))
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
    const IN: usize = LE_BLOCK_BYTES;
    match quant {
        super::QuantType::Q8_0 => for_each_block::<_, _, IN, Q8_0_BLOCK_BYTES>(
            bytes,
            out,
            #[inline(always)]
            |b, dst| q8_0_block(&le_block(b), dst),
        ),
        super::QuantType::Q4_0 => for_each_block::<_, _, IN, Q4_0_BLOCK_BYTES>(
            bytes,
            out,
            #[inline(always)]
            |b, dst| q4_0_block(&le_block(b), dst),
        ),
        super::QuantType::Q4_1 => for_each_block::<_, _, IN, Q4_1_BLOCK_BYTES>(
            bytes,
            out,
            #[inline(always)]
            |b, dst| q4_1_block(&le_block(b), dst),
        ),
        super::QuantType::Q8Tensor | super::QuantType::Custom => Err(KernelError::Length),
    }
}

/// Quantizes one window of `values` (whole blocks, at most [`ERROR_WINDOW`]) to `quant` blocks
/// in `out` and measures it, in one pass: the blocks of [`quantize_blocks`] and the sums of
/// [`WindowSums::measure_blocks`], to the bit. Each block's approximation is computed from the
/// quants and the scales just made (the operations of the dequantizer, in its order), while the
/// block is in registers, instead of being read back from the bytes written.
///
/// # Errors
/// As [`quantize_blocks`].
#[inline(always)]
pub fn quantize_measure(
    quant: super::QuantType,
    values: &[f32],
    out: &mut [u8],
) -> Result<WindowSums, KernelError> {
    quantize_measure_with::<_, BLOCK_LEN>(
        quant,
        values,
        out,
        #[inline(always)]
        |b| *b,
    )
}

/// [`quantize_measure`] of values stored as little-endian f32 bytes (`bytes.len()` a multiple of
/// 128), read in place.
///
/// # Errors
/// As [`quantize_blocks`].
#[inline(always)]
pub fn quantize_measure_le(
    quant: super::QuantType,
    bytes: &[u8],
    out: &mut [u8],
) -> Result<WindowSums, KernelError> {
    quantize_measure_with::<_, LE_BLOCK_BYTES>(quant, bytes, out, le_block)
}

#[inline(always)]
fn quantize_measure_with<S, const IN: usize>(
    quant: super::QuantType,
    src: &[S],
    out: &mut [u8],
    block: impl Fn(&[S; IN]) -> [f32; BLOCK_LEN],
) -> Result<WindowSums, KernelError> {
    let mut sums = LaneSums::default();
    match quant {
        super::QuantType::Q8_0 => for_each_block::<_, _, IN, Q8_0_BLOCK_BYTES>(
            src,
            out,
            #[inline(always)]
            |b, dst| q8_0_block_measured(&block(b), dst, &mut sums),
        ),
        super::QuantType::Q4_0 => for_each_block::<_, _, IN, Q4_0_BLOCK_BYTES>(
            src,
            out,
            #[inline(always)]
            |b, dst| q4_0_block_measured(&block(b), dst, &mut sums),
        ),
        super::QuantType::Q4_1 => for_each_block::<_, _, IN, Q4_1_BLOCK_BYTES>(
            src,
            out,
            #[inline(always)]
            |b, dst| q4_1_block_measured(&block(b), dst, &mut sums),
        ),
        super::QuantType::Q8Tensor | super::QuantType::Custom => Err(KernelError::Length),
    }?;
    Ok(sums.window())
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
    /// Whether a block's approximation was said not to be finite (by a kernel's
    /// [`Measure::block`], from its scales).
    non_finite: bool,
}

impl LaneSums {
    /// Adds one block of 32 values: value `j` goes to lane `j % 8`; each lane's four terms are
    /// first summed in f32 (in order, `((t0 + t1) + t2) + t3`, from `(a - b)` and `a` computed in
    /// f32), and that partial sum, widened, is added to the lane's f64 sum.
    #[inline(always)]
    fn add_block(&mut self, a: &[f32; BLOCK_LEN], b: &[f32; BLOCK_LEN]) {
        self.add_terms(a, b);
        for b in b.as_chunks::<ERROR_LANES>().0 {
            for (bits, value) in self.approx_bits.iter_mut().zip(b) {
                *bits = (*bits).max(value.to_bits() & ABS_MASK);
            }
        }
    }

    /// The sums of [`LaneSums::add_block`], without looking for approximations that are not
    /// finite.
    #[inline(always)]
    fn add_terms(&mut self, a: &[f32; BLOCK_LEN], b: &[f32; BLOCK_LEN]) {
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
            }
        }
        for lane in 0..ERROR_LANES {
            self.err[lane] += f64::from(err[lane]);
            self.norm[lane] += f64::from(norm[lane]);
        }
    }

    /// The window's sums: the lanes added pairwise,
    /// `((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7))`.
    #[inline(always)]
    fn window(self) -> WindowSums {
        let fold = |l: [f64; ERROR_LANES]| {
            ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
        };
        WindowSums {
            err: fold(self.err),
            norm: fold(self.norm),
            non_finite: self.non_finite || self.approx_bits.iter().any(|&bits| bits >= INF_BITS),
        }
    }
}

/// Where a block kernel puts what it knows of the block's approximation `deq(q(x))`: nowhere
/// (`()`, the plain kernels), or into a window's sums ([`LaneSums`], [`quantize_measure`]).
trait Measure {
    /// Takes one block: its values, value `k`'s approximation `approx(k)`, and whether every
    /// approximation is finite. Each kernel knows the last from its scales alone: an
    /// approximation is a quant (at most 127 in magnitude) times the f16 scale, plus Q4_1's f16
    /// minimum, so it is finite exactly when they are (a non-finite scale makes every value of
    /// the block infinite or NaN, `inf * 0` included).
    fn block(&mut self, original: &[f32; BLOCK_LEN], approx: impl Fn(usize) -> f32, finite: bool);
}

impl Measure for () {
    #[inline(always)]
    fn block(&mut self, _: &[f32; BLOCK_LEN], _: impl Fn(usize) -> f32, _: bool) {}
}

impl Measure for LaneSums {
    #[inline(always)]
    fn block(&mut self, original: &[f32; BLOCK_LEN], approx: impl Fn(usize) -> f32, finite: bool) {
        let mut values = [0.0f32; BLOCK_LEN];
        for (k, value) in values.iter_mut().enumerate() {
            *value = approx(k);
        }
        self.add_terms(original, &values);
        self.non_finite |= !finite;
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
        sums.window()
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

    /// The fused pass gives the blocks of the kernels and the sums of dequantizing and then
    /// measuring, to the bit, on blocks that reach every corner: zeros of both signs, ties of
    /// `a` and `-a`, scales whose inverse overflows, scales that overflow f16 (an approximation
    /// that is not finite), a NaN (refused), and ordinary noise, in windows of several lengths.
    #[test]
    fn quantize_measure_is_quantize_then_measure() {
        let mut state = 0x2545_f491_u32;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            f32::from_bits(0x3f80_0000 | (state >> 9)) - 1.5
        };
        let mut blocks: Vec<[f32; BLOCK_LEN]> = Vec::new();
        for scale in [1.0e-38f32, 1.0e-30, 1.0e-6, 0.02, 1.0, 3.0e4, 1.0e6, 1.0e37] {
            for _ in 0..3 {
                blocks.push(core::array::from_fn(|_| next() * scale));
            }
        }
        let mut signed_zeros = [0.0f32; BLOCK_LEN];
        signed_zeros[3] = -0.0;
        blocks.extend([[0.0; BLOCK_LEN], [-0.0; BLOCK_LEN], signed_zeros]);
        let mut tie: [f32; BLOCK_LEN] = core::array::from_fn(|_| next() * 0.1);
        tie[5] = -2.0;
        tie[9] = 2.0;
        blocks.push(tie);
        tie[5] = 2.0;
        tie[9] = -2.0;
        blocks.push(tie);
        let mut nan: [f32; BLOCK_LEN] = core::array::from_fn(|_| next());
        nan[17] = f32::NAN;
        let values: Vec<f32> = blocks.iter().flatten().copied().collect();
        let nan: Vec<f32> = values.iter().copied().chain(nan).collect();
        let sums = |w: WindowSums| {
            if w.non_finite {
                (0, 0, true)
            } else {
                (w.err.to_bits(), w.norm.to_bits(), false)
            }
        };
        for quant in [
            super::super::QuantType::Q8_0,
            super::super::QuantType::Q4_0,
            super::super::QuantType::Q4_1,
        ] {
            let block_bytes = block_bytes(quant).unwrap();
            // Each block alone, every block in one window, and a window of a NaN at the end.
            let windows = blocks
                .iter()
                .map(<[f32; BLOCK_LEN]>::as_slice)
                .chain([values.as_slice(), nan.as_slice()]);
            for window in windows {
                let mut separate = vec![0u8; window.len() / BLOCK_LEN * block_bytes];
                let mut scratch = vec![0.0f32; window.len()];
                let expected = quantize_blocks(quant, window, &mut separate).and_then(|()| {
                    WindowSums::measure_blocks(quant, window, &separate, &mut scratch)
                });
                let le: Vec<u8> = window.iter().flat_map(|v| v.to_le_bytes()).collect();
                for from_bytes in [false, true] {
                    let mut out = vec![0u8; separate.len()];
                    let got = if from_bytes {
                        quantize_measure_le(quant, &le, &mut out)
                    } else {
                        quantize_measure(quant, window, &mut out)
                    };
                    match (&expected, got) {
                        (Ok(expected), Ok(got)) => {
                            assert_eq!(sums(*expected), sums(got), "{quant:?}");
                            assert_eq!(out, separate, "{quant:?}");
                        }
                        (Err(expected), Err(got)) => assert_eq!(*expected, got),
                        (expected, got) => panic!("{quant:?}: {expected:?} against {got:?}"),
                    }
                }
            }
        }
        // Scales beyond f16 did make approximations that are not finite, which were compared.
        let mut out = vec![0u8; Q4_0_BLOCK_BYTES];
        let huge = [1.0e37f32; BLOCK_LEN];
        let window = quantize_measure(super::super::QuantType::Q4_0, &huge, &mut out).unwrap();
        assert!(window.non_finite);
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
            assert_eq!(round_half_away(v), v.round(), "{v}");
        }
    }

    /// Values around every integer and half-integer of the kernels' ranges (Q8_0's ±128, the
    /// nibbles' 0..16.5), each with its neighbours one unit in the last place away, plus a grid
    /// of fractions.
    fn small_values() -> Vec<f32> {
        let mut values = Vec::new();
        for k in -300i16..=300 {
            let v = f32::from(k) / 2.0;
            values.extend([v, v.next_up(), v.next_down()]);
        }
        values.extend((-40_000i32..=40_000).map(|k| k as f32 / 256.0));
        values.extend([0.0, -0.0, 1.0e-30, -1.0e-30, f32::MIN_POSITIVE]);
        values
    }

    #[test]
    fn vectorizable_steps_match_the_conversions() {
        for v in small_values() {
            assert_eq!(trunc_small(v).to_bits(), v.trunc().to_bits(), "{v}");
            if v >= 0.0 {
                assert_eq!(floor_small(v).to_bits(), (v.floor() + 0.0).to_bits(), "{v}");
            }
            assert_eq!(round_half_away(v), v.round(), "{v}");
            #[allow(clippy::cast_possible_truncation, reason = "integers of |v| <= 150")]
            let whole = v.trunc() as i32;
            assert_eq!(small_int(v.trunc()), whole, "{v}");
            // The nibble of the reference: `min(15, (uint8) trunc(v))`, NaN and below 0 giving 0.
            #[allow(clippy::cast_precision_loss, reason = "0..=15")]
            let expected = whole.clamp(0, 15) as f32;
            assert_eq!(nibble(v).to_bits(), expected.to_bits(), "{v}");
        }
        assert!(trunc_small(f32::NAN).is_nan());
        assert_eq!(nibble(f32::NAN).to_bits(), 0);
        assert_eq!(nibble(f32::INFINITY), 15.0);
        assert_eq!(nibble(f32::NEG_INFINITY).to_bits(), 0);
    }

    /// The scales' f16 conversions are half's software ones (inlined, no call per block): the
    /// same bits as its hardware ones on every f16, and on f32 values around every f16 and
    /// halfway between two.
    #[test]
    fn const_f16_conversions_match() {
        for bits in 0..=u16::MAX {
            let h = f16::from_bits(bits);
            let (a, b) = (h.to_f32_const(), h.to_f32());
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "{bits:#x}"
            );
            if a.is_finite() {
                let next = f16::from_bits(bits.wrapping_add(1)).to_f32();
                let mid = f64::from(a).midpoint(f64::from(next));
                #[allow(clippy::cast_possible_truncation, reason = "near f16 values")]
                let mid = mid as f32;
                for v in [
                    a,
                    a.next_up(),
                    a.next_down(),
                    mid,
                    mid.next_up(),
                    mid.next_down(),
                ] {
                    assert_eq!(
                        f16::from_f32_const(v).to_bits(),
                        f16::from_f32(v).to_bits(),
                        "{v}"
                    );
                }
            }
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
