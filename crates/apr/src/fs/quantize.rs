//! Streaming quantization of a model file (`apr quantize`): each tensor that a built-in block
//! kernel quantizes is read straight from its verified chunk (no copy of the tensor, no f32 copy,
//! no dequantized copy), quantized on every core, and its relative error measured in the same
//! pass while the values are in cache.
//!
//! The error must be the bit-exact value [`crate::quant::relative_error`] gives (it is stored in
//! the metadata, and the output must not depend on the machine), and its f64 sums are sequential:
//! they cannot be split across threads without changing their rounding. So one thread, the
//! *measuring* thread, walks the tensor in order, window by window, keeping the sums; the other
//! threads take windows ahead of it from a shared counter and only quantize them. When the
//! measuring thread reaches a window nobody took, it quantizes that window itself and measures
//! it in the same pass; when a helper took it, it waits for that window's blocks and measures
//! them. The sums' order is the tensor's element order whichever thread quantized what.
//!
//! Every other tensor (kept, plugin types, hooks that inspect results, TRUENO_NATIVE padding)
//! goes through [`QuantizationSession::quantize`] as before.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use super::TensorFileWriter;
use crate::codec::AprFile;
use crate::error::{Error, Result};
use crate::model::QuantizationSession;
use crate::quant::QuantType;
use crate::quant::kernels::{self, BLOCK_LEN, ErrorSums, KernelError};
use crate::tensor::{DType, MAX_DIMS, MAX_NAME_BYTES, Tensor};
use mapped_file::MappedFile;

/// Values per window: 16 KiB of f32, so a window's values, blocks and dequantized copy stay in
/// the L1/L2 cache between quantizing and measuring, and a thread's claim on the shared counter
/// is rare next to its work.
const WINDOW: usize = 4096;

/// Helpers quantize at most this many windows (16 MiB of f32) ahead of the measuring thread.
const AHEAD: usize = 1024;

/// The measuring thread releases the input's pages every this many windows (4 MiB of f32).
const RELEASE_WINDOWS: usize = 256;

/// The CRC-32C check releases the input's pages every this many bytes.
const RELEASE_BYTES: usize = 4 << 20;

/// What a helper's step did.
enum Help {
    /// Quantized a window.
    Done,
    /// Nothing now: the measuring thread is [`AHEAD`] windows behind.
    Wait,
    /// No window is left, or a value that is not finite stopped the work.
    Finished,
}

/// Tensors below this many values are quantized on the calling thread alone: starting threads
/// costs more than it saves.
const PARALLEL_MIN: usize = 1 << 18;

/// Quantizes every tensor of `file` through `session`, in order, pushing each result to `writer`
/// and calling `progress` with the count done. The output, the session's records and its
/// warnings are exactly those of calling [`AprFile::tensor_at`], [`QuantizationSession::quantize`]
/// and [`TensorFileWriter::push`] on each tensor (which is what this does for the tensors the fast
/// path does not take).
///
/// # Errors
/// As [`AprFile::tensor_at`] (a chunk whose CRC-32C fails is refused before any of its bytes is
/// used), [`QuantizationSession::quantize`] and [`TensorFileWriter::push`].
pub fn quantize_into(
    file: &AprFile<MappedFile>,
    session: &mut QuantizationSession<'_>,
    writer: &mut TensorFileWriter,
    mut progress: impl FnMut(usize),
) -> Result<()> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let count = file.metadata().tensors.len();
    for position in 0..count {
        if !quantize_fast(file, position, session, writer, threads)? {
            let tensor = file.tensor_at(position)?;
            writer.push_owned(session.quantize(&tensor)?)?;
        }
        progress(position + 1);
    }
    Ok(())
}

/// Quantizes tensor `position` with a kernel straight from its chunk if the fast path applies
/// (`Ok(false)` if not: nothing was recorded or written).
fn quantize_fast(
    file: &AprFile<MappedFile>,
    position: usize,
    session: &mut QuantizationSession<'_>,
    writer: &mut TensorFileWriter,
    threads: usize,
) -> Result<bool> {
    let Some(entry) = file.metadata().tensors.get(position) else {
        return Ok(false);
    };
    // What `AprFile::tensor_at` would refuse is left to it, so the errors stay its own.
    let Ok(dtype) = DType::from_code(entry.dtype) else {
        return Ok(false);
    };
    if file.is_aligned()
        || entry.name.is_empty()
        || entry.name.len() > MAX_NAME_BYTES
        || entry.shape.len() > MAX_DIMS
    {
        return Ok(false);
    }
    let Some(quant) = session.block_type_for(&entry.name, dtype, &entry.shape) else {
        return Ok(false);
    };
    let Some(elements) = entry
        .shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .and_then(|n| usize::try_from(n).ok())
    else {
        return Ok(false);
    };
    // Verified (CRC-32C) before any byte of it is read; borrowed from the mapping when stored
    // uncompressed.
    let pages = Pages(Some(file.envelope().storage()));
    let chunk = match checked_chunk(file, position, threads, &pages) {
        Some(stored) => std::borrow::Cow::Borrowed(stored),
        None => file.envelope().decode_chunk(position)?,
    };
    if dtype.byte_len(elements as u64) != Some(chunk.len() as u64) {
        return Ok(false);
    }
    let threads = if elements < PARALLEL_MIN { 1 } else { threads };
    let (blocks, outcome) = quantize_values(quant, dtype, &chunk, elements, threads, &pages);
    pages.release(&chunk);
    drop(chunk);
    let error = match outcome {
        Outcome::Measured(sums) => sums.relative_error(),
        // The messages and order of `QuantizationSession::quantize`: a value that is not
        // finite anywhere is refused before a scale overflow is looked for.
        Outcome::NonFinite => {
            return Err(Error::corrupt(
                &entry.name,
                crate::quant::NON_FINITE_REFUSED,
            ));
        }
        Outcome::Overflow => {
            return Err(Error::corrupt(&entry.name, crate::quant::SCALE_OVERFLOW));
        }
    };
    let tensor = Tensor::new(
        entry.name.clone(),
        DType::Quantized(quant),
        entry.shape.clone(),
        blocks,
    )?;
    session.record_block(&entry.name, dtype, elements as u64, quant, error);
    writer.push_owned(tensor)?;
    Ok(true)
}

/// Chunk `position` of an uncompressed, unencrypted file opened lazily
/// ([`AprFile::unverified_stored_chunk`]), its CRC-32C checked on `threads` threads (the pieces'
/// CRCs combined), as [`envelope_core::Envelope::decode_chunk`] would check it on one. `None` when
/// that does not apply or the check fails: `decode_chunk` then does the work, and reports a
/// mismatch with its own error.
fn checked_chunk<'f>(
    file: &'f AprFile<MappedFile>,
    position: usize,
    threads: usize,
    pages: &Pages<'_>,
) -> Option<&'f [u8]> {
    let (stored, expected) = file.unverified_stored_chunk(position)?;
    (crc32c_parallel(stored, threads, pages) == expected).then_some(stored)
}

/// CRC-32C of `bytes` computed in `threads` pieces at once and combined, each piece's pages
/// released as soon as they are read.
fn crc32c_parallel(bytes: &[u8], threads: usize, pages: &Pages<'_>) -> u32 {
    let crc_of = |piece: &[u8]| {
        piece.chunks(RELEASE_BYTES).fold(0, |crc, part| {
            pages.populate(part);
            let crc = crc32c::crc32c_append(crc, part);
            pages.release(part);
            crc
        })
    };
    if threads < 2 || bytes.len() < PARALLEL_MIN {
        return crc_of(bytes);
    }
    let piece = bytes.len().div_ceil(threads);
    let crcs: Vec<(u32, usize)> = std::thread::scope(|scope| {
        let handles: Vec<_> = bytes
            .chunks(piece)
            .map(|piece| scope.spawn(move || (crc_of(piece), piece.len())))
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    });
    crcs.into_iter()
        .reduce(|(a, _), (b, len)| (crc32c::crc32c_combine(a, b, len), len))
        .map_or(0, |(crc, _)| crc)
}

/// The mapped input file, whose pages a streaming pass releases once it has read them: resident
/// memory then holds a bounded stretch of the input, not all of it (pages of a mapping count in a
/// process's RSS).
pub(crate) struct Pages<'f>(pub(crate) Option<&'f MappedFile>);

impl Pages<'_> {
    /// Releases the pages of `part`, a piece of the file's bytes (anything else is ignored).
    fn release(&self, part: &[u8]) {
        if let Some((file, range)) = self.range(part) {
            file.release(range);
        }
    }

    /// Maps the pages of `part` now, in one system call rather than a page fault per few pages.
    fn populate(&self, part: &[u8]) {
        if let Some((file, range)) = self.range(part) {
            file.populate(range);
        }
    }

    fn range(&self, part: &[u8]) -> Option<(&MappedFile, std::ops::Range<usize>)> {
        let file = self.0?;
        let start = part.as_ptr().addr().wrapping_sub(file.as_ptr().addr());
        (start <= file.len()).then_some((file, start..start + part.len()))
    }
}

/// What quantizing a tensor found.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    /// Its relative error's sums (compared in full by the tests: the f64 sums show a change of
    /// summation order that the f32 error would almost always hide).
    Measured(ErrorSums),
    /// A value is NaN or infinite.
    NonFinite,
    /// A scale overflowed (a dequantized value is not finite).
    Overflow,
}

/// Reads values `start..start + dst.len()` of a float tensor stored as `dtype` in `bytes`, as
/// [`Tensor::to_f32`] converts them.
fn load_values(dtype: DType, bytes: &[u8], start: usize, dst: &mut [f32]) {
    match dtype {
        DType::F16 | DType::BF16 => {
            let src = &bytes[start * 2..(start + dst.len()) * 2];
            for (v, b) in dst.iter_mut().zip(src.as_chunks::<2>().0) {
                *v = if dtype == DType::F16 {
                    half::f16::from_le_bytes(*b).to_f32()
                } else {
                    half::bf16::from_le_bytes(*b).to_f32()
                };
            }
        }
        _ => {
            let src = &bytes[start * 4..(start + dst.len()) * 4];
            for (v, b) in dst.iter_mut().zip(src.as_chunks::<4>().0) {
                *v = f32::from_le_bytes(*b);
            }
        }
    }
}

/// Quantizes values `range` of a `dtype` tensor stored in `bytes` into `dst`: f32 straight from
/// the bytes, f16 and bf16 through `values` (a window's room).
fn quantize_window(
    quant: QuantType,
    dtype: DType,
    bytes: &[u8],
    range: std::ops::Range<usize>,
    values: &mut [f32],
    dst: &mut [u8],
) -> std::result::Result<(), KernelError> {
    if dtype == DType::F32 {
        kernels::quantize_blocks_le(quant, &bytes[range.start * 4..range.end * 4], dst)
    } else {
        let values = &mut values[..range.len()];
        load_values(dtype, bytes, range.start, values);
        kernels::quantize_blocks(quant, values, dst)
    }
}

/// Quantizes the `elements` values of a `dtype` tensor stored in `bytes` to `quant` blocks on
/// `threads` threads, measuring the relative error in element order (see the module's comment).
fn quantize_values(
    quant: QuantType,
    dtype: DType,
    bytes: &[u8],
    elements: usize,
    threads: usize,
    pages: &Pages<'_>,
) -> (Vec<u8>, Outcome) {
    let block_bytes = kernels::block_bytes(quant).unwrap_or(0);
    let mut out = vec![0u8; elements / BLOCK_LEN * block_bytes];
    let window_bytes = (WINDOW / BLOCK_LEN * block_bytes).max(1);
    let outcome = {
        let work = Work {
            quant,
            dtype,
            bytes,
            elements,
            slots: out
                .chunks_mut(window_bytes)
                .map(|slot| Mutex::new(Some(slot)))
                .collect(),
            done: (0..elements.div_ceil(WINDOW))
                .map(|_| OnceLock::new())
                .collect(),
            next: AtomicUsize::new(0),
            measured: AtomicUsize::new(0),
            non_finite: AtomicBool::new(false),
            pages,
        };
        std::thread::scope(|scope| {
            for _ in 1..threads {
                scope.spawn(|| {
                    let mut values = vec![0.0f32; WINDOW];
                    loop {
                        match work.help(&mut values) {
                            Help::Done => {}
                            Help::Wait => std::thread::yield_now(),
                            Help::Finished => break,
                        }
                    }
                });
            }
            work.measure()
        })
    };
    (out, outcome)
}

/// One tensor's work, shared by its threads.
struct Work<'s, 'o> {
    quant: QuantType,
    dtype: DType,
    bytes: &'s [u8],
    elements: usize,
    /// Each window's output, taken by the thread that claims the window.
    slots: Vec<Mutex<Option<&'o mut [u8]>>>,
    /// The blocks of each window a helper quantized, published for the measuring thread.
    done: Vec<OnceLock<&'o [u8]>>,
    /// The first window nobody has claimed.
    next: AtomicUsize,
    /// The windows measured so far: helpers stay within [`AHEAD`] windows of it, so that the
    /// input pages read and not yet released stay bounded.
    measured: AtomicUsize,
    /// The input's pages, released behind the measuring thread.
    pages: &'s Pages<'s>,
    /// Set when a value that is not finite was found: everyone stops.
    non_finite: AtomicBool,
}

impl<'o> Work<'_, 'o> {
    fn windows(&self) -> usize {
        self.done.len()
    }

    /// The stored bytes of values `values`.
    fn stored(&self, values: std::ops::Range<usize>) -> &[u8] {
        let bytes_per_value = self.bytes.len() / self.elements.max(1);
        &self.bytes[values.start * bytes_per_value..values.end * bytes_per_value]
    }

    /// The values of window `w`.
    fn span(&self, w: usize) -> std::ops::Range<usize> {
        w * WINDOW..((w + 1) * WINDOW).min(self.elements)
    }

    /// Window `w`'s output (once: `None` if it was taken).
    fn take(&self, w: usize) -> Option<&'o mut [u8]> {
        self.slots
            .get(w)?
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// A helper's step: claims the next window nobody took, quantizes it and publishes its
    /// blocks.
    fn help(&self, values: &mut [f32]) -> Help {
        if self.non_finite.load(Ordering::Relaxed) {
            return Help::Finished;
        }
        if self.next.load(Ordering::Relaxed) >= self.measured.load(Ordering::Relaxed) + AHEAD {
            return Help::Wait;
        }
        let w = self.next.fetch_add(1, Ordering::Relaxed);
        let Some(dst) = (w < self.windows()).then(|| self.take(w)).flatten() else {
            return Help::Finished;
        };
        let range = self.span(w);
        if w.is_multiple_of(RELEASE_WINDOWS) {
            // The first window of a stretch the measuring thread releases as one: map its pages.
            let end = (range.start + RELEASE_WINDOWS * WINDOW).min(self.elements);
            self.pages.populate(self.stored(range.start..end));
        }
        if quantize_window(self.quant, self.dtype, self.bytes, range, values, dst).is_err() {
            self.non_finite.store(true, Ordering::Relaxed);
        }
        let _ = self.done[w].set(dst);
        Help::Done
    }

    /// The measuring thread's walk over the windows, in order.
    fn measure(&self) -> Outcome {
        let mut values = vec![0.0f32; WINDOW];
        let mut scratch = vec![0.0f32; WINDOW];
        let mut sums = ErrorSums::default();
        let mut measured = true;
        for w in 0..self.windows() {
            if self.non_finite.load(Ordering::Relaxed) {
                return Outcome::NonFinite;
            }
            let range = self.span(w);
            let blocks: &[u8] = if self
                .next
                .compare_exchange(w, w + 1, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                // Nobody took this window: quantize it here, then measure it while it is in
                // cache.
                let Some(dst) = self.take(w) else {
                    return Outcome::NonFinite;
                };
                let quantized = quantize_window(
                    self.quant,
                    self.dtype,
                    self.bytes,
                    range.clone(),
                    &mut values,
                    dst,
                );
                if quantized.is_err() {
                    self.non_finite.store(true, Ordering::Relaxed);
                    return Outcome::NonFinite;
                }
                dst
            } else {
                let Some(blocks) = self.wait(w, &mut values) else {
                    return Outcome::NonFinite;
                };
                blocks
            };
            // After a scale overflowed the error no longer matters, but the rest of the tensor
            // is still quantized: a value that is not finite further on must win, as it does in
            // `QuantizationSession::quantize`.
            if measured {
                let added = if self.dtype == DType::F32 {
                    let original = &self.bytes[range.start * 4..range.end * 4];
                    sums.add_blocks_le(self.quant, original, blocks, &mut scratch)
                } else {
                    let values = &mut values[..range.len()];
                    load_values(self.dtype, self.bytes, range.start, values);
                    sums.add_blocks(self.quant, values, blocks, &mut scratch)
                };
                measured = added.is_ok() && !sums.saw_non_finite();
            }
            // Every thread is done with the windows up to this one: their pages can go.
            self.measured.store(w + 1, Ordering::Relaxed);
            if (w + 1).is_multiple_of(RELEASE_WINDOWS) {
                self.pages
                    .release(self.stored((w + 1 - RELEASE_WINDOWS) * WINDOW..range.end));
            }
        }
        if self.non_finite.load(Ordering::Relaxed) {
            Outcome::NonFinite
        } else if measured {
            Outcome::Measured(sums)
        } else {
            Outcome::Overflow
        }
    }

    /// The blocks of window `w`, which a helper claimed, once it has published them; meanwhile
    /// the measuring thread works as a helper on windows further on rather than idle. `None` once
    /// a value that is not finite was found (the helpers then stop, and `w` may never be filled).
    fn wait(&self, w: usize, values: &mut [f32]) -> Option<&'o [u8]> {
        let mut spins = 0u32;
        loop {
            if let Some(&blocks) = self.done[w].get() {
                return Some(blocks);
            }
            if self.non_finite.load(Ordering::Relaxed) {
                return None;
            }
            if !matches!(self.help(values), Help::Done) {
                spins += 1;
                if spins < 64 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::card::ModelCard;
    use crate::codec::SaveOptions;
    use crate::model::TensorModel;
    use crate::model_type::ModelType;
    use crate::quant::tests::Noise;
    use crate::quant::{
        MixedPrecisionHooks, QuantizationHooks, QuantizerRegistry, UniformQuantization,
    };
    use proptest::prelude::*;
    use std::path::Path;

    fn f16_tensor(name: &str, shape: Vec<u64>, values: &[f32]) -> Tensor {
        let data = values
            .iter()
            .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
            .collect();
        Tensor::new(name, DType::F16, shape, data).unwrap()
    }

    fn bf16_tensor(name: &str, shape: Vec<u64>, values: &[f32]) -> Tensor {
        let data = values
            .iter()
            .flat_map(|&v| half::bf16::from_f32(v).to_le_bytes())
            .collect();
        Tensor::new(name, DType::BF16, shape, data).unwrap()
    }

    /// A model with every kind of tensor the command meets: a large f32 matrix (several windows,
    /// so every thread takes some), f16 and bf16 matrices, an embedding and an output layer (for
    /// mixed precision), a norm and a matrix that is not whole blocks (kept), and a matrix whose
    /// outliers make Q4 warn.
    fn model() -> TensorModel {
        let mut noise = Noise(11);
        let mut values = |n: usize| -> Vec<f32> { (0..n).map(|_| noise.normal() * 0.02).collect() };
        let big = values(PARALLEL_MIN * 3 + WINDOW / 2);
        let spiky: Vec<f32> = (0..64 * 64)
            .map(|i| if i % 32 == 0 { 100.0 } else { 5.0 })
            .collect();
        TensorModel::new(vec![
            Tensor::from_f32("token_embd.weight", vec![64, 128], &values(64 * 128)).unwrap(),
            Tensor::from_f32(
                "blk.0.ffn_up.weight",
                vec![(big.len() / 32) as u64, 32],
                &big,
            )
            .unwrap(),
            f16_tensor("blk.0.attn_q.weight", vec![96, 64], &values(96 * 64)),
            bf16_tensor("blk.0.attn_k.weight", vec![32, 96], &values(32 * 96)),
            Tensor::from_f32("blk.0.attn_norm.weight", vec![64], &values(64)).unwrap(),
            Tensor::from_f32("blk.0.odd.weight", vec![8, 40], &values(8 * 40)).unwrap(),
            Tensor::from_f32("blk.0.spiky.weight", vec![64, 64], &spiky).unwrap(),
            Tensor::from_f32("output.weight", vec![64, 128], &values(64 * 128)).unwrap(),
        ])
        .unwrap()
    }

    fn save(path: &Path, model: &TensorModel) {
        let options = SaveOptions {
            card: ModelCard::default(),
            compression: envelope_core::Compression::None,
        };
        super::super::save_tensors(path, model, ModelType::NeuralCustom, &options).unwrap();
    }

    /// `apr quantize` before the streaming path: every tensor read, quantized by the session and
    /// spilled by the writer.
    fn reference(input: &Path, output: &Path, hooks: &dyn QuantizationHooks) -> Result<()> {
        let file = super::super::open(input)?;
        let registry = QuantizerRegistry::default();
        let mut session = QuantizationSession::new(hooks, &registry);
        let mut writer = TensorFileWriter::new(output, envelope_core::Compression::None)?;
        for position in 0..file.metadata().tensors.len() {
            let tensor = file.tensor_at(position)?;
            writer.push(&session.quantize(&tensor)?)?;
        }
        writer.finish(
            ModelType::NeuralCustom,
            &ModelCard::default(),
            Some(session.finish()?),
        )
    }

    fn streamed(input: &Path, output: &Path, hooks: &dyn QuantizationHooks) -> Result<()> {
        let file = super::super::open(input)?;
        let registry = QuantizerRegistry::default();
        let mut session = QuantizationSession::new(hooks, &registry);
        let mut writer = TensorFileWriter::with_memory_budget(
            output,
            envelope_core::Compression::None,
            super::super::QUANTIZE_MEMORY_BUDGET,
        )?;
        let mut seen = 0;
        quantize_into(&file, &mut session, &mut writer, |done| seen = done)?;
        assert_eq!(seen, file.metadata().tensors.len());
        writer.finish(
            ModelType::NeuralCustom,
            &ModelCard::default(),
            Some(session.finish()?),
        )
    }

    #[test]
    fn streaming_writes_the_bytes_the_session_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.apr");
        save(&input, &model());
        let mixed = MixedPrecisionHooks {
            default_type: QuantType::Q4_1,
            embedding_type: QuantType::Q8_0,
            output_type: QuantType::Q4_0,
        };
        let mut hooks: Vec<Box<dyn QuantizationHooks>> = [
            QuantType::Q8_0,
            QuantType::Q4_0,
            QuantType::Q4_1,
            QuantType::Q8Tensor,
        ]
        .into_iter()
        .map(|quant_type| Box::new(UniformQuantization { quant_type }) as _)
        .collect();
        hooks.push(Box::new(mixed));
        for hooks in &hooks {
            let (old, new) = (dir.path().join("old.apr"), dir.path().join("new.apr"));
            reference(&input, &old, hooks.as_ref()).unwrap();
            streamed(&input, &new, hooks.as_ref()).unwrap();
            let (old, new) = (std::fs::read(old).unwrap(), std::fs::read(new).unwrap());
            assert!(old == new, "the streamed output differs");
            // The outliers did make a warning, which the comparison covered.
            let info = super::super::open(dir.path().join("new.apr"))
                .unwrap()
                .metadata()
                .quantization
                .clone()
                .unwrap();
            assert_eq!(info.tensors.len(), 8);
        }
    }

    /// The first value that is not finite is refused with the session's error, wherever it is
    /// (a helper's window or the measuring thread's), and before a scale overflow earlier on.
    #[test]
    fn values_that_cannot_be_quantized_are_refused_as_before() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.apr");
        let hooks = UniformQuantization {
            quant_type: QuantType::Q8_0,
        };
        let n = PARALLEL_MIN * 2;
        for (at, value, overflow_at) in [
            (n - 1, f32::NAN, None),
            (5, f32::INFINITY, None),
            (n - 40, f32::NAN, Some(3)),
            (n / 2, 1.0e9, None),
        ] {
            let mut values = vec![0.5f32; n];
            values[at] = value;
            if let Some(o) = overflow_at {
                values[o] = 1.0e9;
            }
            let model = TensorModel::new(vec![
                Tensor::from_f32("blk.0.weight", vec![(n / 64) as u64, 64], &values).unwrap(),
            ])
            .unwrap();
            save(&input, &model);
            let old = reference(&input, &dir.path().join("old.apr"), &hooks).unwrap_err();
            let new = streamed(&input, &dir.path().join("new.apr"), &hooks).unwrap_err();
            assert_eq!(old.to_string(), new.to_string());
            assert_eq!(old.signal(), new.signal());
            assert!(!dir.path().join("new.apr").exists());
        }
    }

    /// A corrupted chunk is refused before any of it is quantized, with the signal of the
    /// session path, and nothing is written.
    #[test]
    fn a_corrupted_chunk_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.apr");
        save(&input, &model());
        let mut bytes = std::fs::read(&input).unwrap();
        let file = super::super::open(&input).unwrap();
        // Chunks are checked as they are read (the path `checked_chunk` takes), not at open.
        assert!(!file.envelope().is_fully_verified());
        let at = file.envelope().bytes_before_payload().len() + 64 * 128 * 4 + 1000;
        drop(file);
        bytes[at] ^= 0x10;
        std::fs::write(&input, &bytes).unwrap();
        let hooks = UniformQuantization {
            quant_type: QuantType::Q8_0,
        };
        let (old, new) = (dir.path().join("old.apr"), dir.path().join("new.apr"));
        let old_error = reference(&input, &old, &hooks).unwrap_err();
        let new_error = streamed(&input, &new, &hooks).unwrap_err();
        assert_eq!(old_error.signal(), envelope_core::Signal::ChecksumMismatch);
        assert_eq!(new_error.signal(), old_error.signal());
        assert!(!new.exists());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Every thread count gives the kernel's blocks and the one-pass relative error, to the
        /// bit, for every block type and stored float type.
        #[test]
        fn quantize_values_matches_kernel_and_relative_error(
            blocks in 1usize..600,
            seed in 1u64..u64::MAX,
            scale in prop::sample::select(vec![1.0e-30f32, 1.0e-3, 1.0, 1.0e4]),
            quant in prop::sample::select(vec![QuantType::Q8_0, QuantType::Q4_0, QuantType::Q4_1]),
            dtype in prop::sample::select(vec![DType::F32, DType::F16, DType::BF16]),
        ) {
            let mut noise = Noise(seed);
            let n = blocks * BLOCK_LEN;
            let tensor = {
                let values: Vec<f32> = (0..n).map(|_| noise.laplace() * scale).collect();
                match dtype {
                    DType::F16 => f16_tensor("t", vec![n as u64], &values),
                    DType::BF16 => bf16_tensor("t", vec![n as u64], &values),
                    _ => Tensor::from_f32("t", vec![n as u64], &values).unwrap(),
                }
            };
            let values = tensor.to_f32().unwrap();
            let mut expected = vec![0u8; blocks * kernels::block_bytes(quant).unwrap()];
            let quantized = kernels::quantize_blocks(quant, &values, &mut expected);
            let mut back = vec![0.0f32; n];
            kernels::dequantize_blocks(quant, &expected, &mut back).unwrap();
            // f16 storage overflows to infinity for the largest scale: refused.
            let outcome = if quantized.is_err() {
                Outcome::NonFinite
            } else if back.iter().all(|v| v.is_finite()) {
                let mut sums = ErrorSums::default();
                sums.add(&values, &back);
                prop_assert_eq!(
                    sums.relative_error().to_bits(),
                    crate::quant::relative_error(&values, &back).to_bits()
                );
                Outcome::Measured(sums)
            } else {
                Outcome::Overflow
            };
            let pages = Pages(None);
            for threads in [1, 2, 3] {
                let (blocks, found) = quantize_values(quant, dtype, tensor.data(), n, threads, &pages);
                prop_assert!(outcome == Outcome::NonFinite || blocks == expected);
                prop_assert_eq!(found, outcome);
            }
        }
    }
}
