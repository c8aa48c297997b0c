//! Streaming quantization of a model file (`apr quantize`): each tensor that a built-in block
//! kernel quantizes is read straight from its chunk in the mapped input (no copy of the tensor,
//! no f32 copy, no dequantized copy), checked, quantized and measured in one pass on every core.
//!
//! The tensor is cut into batches of [`BATCH_WINDOWS`] windows of [`ERROR_WINDOW`] values; each
//! thread takes the next batch from a shared counter and, while its bytes are in cache, computes
//! their CRC-32C, quantizes each window and measures the window's error
//! ([`WindowSums`]). The batches' CRCs are combined in order into the chunk's, and the windows'
//! sums are added in order into the tensor's ([`ErrorSums`]), so the result is the one
//! [`crate::quant::relative_error`] gives on one thread, to the bit, whatever thread did what.
//!
//! The check and the work share the pass (the input is mapped and read once), so the work is
//! done before the check's verdict is known: its result is used only if the CRC-32C holds, and a
//! mismatch goes to [`envelope_core::Envelope::decode_chunk`], which reports it. Nothing computed
//! from unchecked bytes leaves this module, and the kernels are total on any bytes (a value that
//! is not finite is an outcome, not a panic).
//!
//! Every other tensor (kept, plugin types, hooks that inspect results, TRUENO_NATIVE padding)
//! goes through [`QuantizationSession::quantize`] as before.
//!
//! When every tensor's output type follows from the metadata alone
//! ([`QuantizationSession::plan_tensor`]), the output is planned before the first pass and the
//! writer put in placed mode ([`TensorFileWriter::place`]): each thread writes the blocks of each
//! batch into the output file at their final offset as soon as it made them, computing their
//! CRC32 there too, and no tensor's blocks are held. The output's write-back then overlaps the
//! quantizing, and `finish` has only the prefix and the trailer left to write. The blocks written
//! before a CRC-32C mismatch is known go to the temporary file only, which the failure removes.
//! In placed mode the fast-path tensors are also taken in groups of up to [`GROUP_BYTES`] of
//! input, whose batches the threads claim pass after pass in one scope: no thread is started per
//! tensor and no thread waits at a tensor's end for the other's last batch. Each tensor's result
//! is then taken in order, as if its pass had run alone.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use output_file::PositionalWriter;

use super::TensorFileWriter;
use crate::card::{ModelMetadata, PayloadKind, TensorEntry};
use crate::codec::AprFile;
use crate::error::{Error, Result};
use crate::model::QuantizationSession;
use crate::quant::QuantType;
use crate::quant::kernels::{self, BLOCK_LEN, ERROR_WINDOW, ErrorSums, KernelError, WindowSums};
use crate::tensor::{DType, MAX_DIMS, MAX_NAME_BYTES, Tensor};
use mapped_file::MappedFile;

/// Windows per batch, a thread's unit of work: 1 MiB of f32, small enough to stay in the L2
/// cache between its check and its quantization, large enough that claims, page mapping and
/// release are rare next to the work.
const BATCH_WINDOWS: usize = 64;

/// Values per batch.
const BATCH_VALUES: usize = BATCH_WINDOWS * ERROR_WINDOW;

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
/// As [`AprFile::tensor_at`] (a chunk whose CRC-32C fails is refused, and nothing computed from
/// it is used), [`QuantizationSession::quantize`] and [`TensorFileWriter::push`].
pub fn quantize_into(
    file: &AprFile<MappedFile>,
    session: &mut QuantizationSession<'_>,
    writer: &mut TensorFileWriter,
    mut progress: impl FnMut(usize),
) -> Result<()> {
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let count = file.metadata().tensors.len();
    let sizes = plan_output(file, session, writer)?;
    let pages = Pages(Some(file.envelope().storage()));
    let mut position = 0;
    while position < count {
        let (end, mut ahead) = match &sizes {
            Some(sizes) if threads > 1 => {
                quantize_group(file, position, sizes, session, writer, &pages, threads)?
            }
            _ => (position + 1, Vec::new()),
        };
        for (at, position) in (position..end).enumerate() {
            let ahead = ahead.get_mut(at).and_then(Option::take);
            if !quantize_fast(file, position, session, writer, threads, ahead)? {
                let tensor = file.tensor_at(position)?;
                writer.push_owned(session.quantize(&tensor)?)?;
            }
            progress(position + 1);
        }
        position = end;
    }
    Ok(())
}

/// Input bytes of fast-path tensors quantized in one pass over all their batches (placed mode):
/// the threads go from one tensor's batches to the next without waiting at each tensor's end
/// and without a thread started per tensor (a model of 64 tensors of 4 MiB spent a tenth of its
/// time so), while progress is still reported every few tens of milliseconds.
const GROUP_BYTES: usize = 64 << 20;

/// What the fast path needs to quantize tensor `position` straight from its chunk: its entry's
/// dtype, block type and element count, or `None` where the fast path does not apply (nothing
/// is recorded).
struct FastTensor {
    dtype: DType,
    quant: QuantType,
    elements: usize,
}

impl FastTensor {
    fn of(
        file: &AprFile<MappedFile>,
        position: usize,
        session: &QuantizationSession<'_>,
    ) -> Option<Self> {
        let entry = file.metadata().tensors.get(position)?;
        // What `AprFile::tensor_at` would refuse is left to it, so the errors stay its own.
        let dtype = DType::from_code(entry.dtype).ok()?;
        if file.is_aligned()
            || entry.name.is_empty()
            || entry.name.len() > MAX_NAME_BYTES
            || entry.shape.len() > MAX_DIMS
        {
            return None;
        }
        let quant = session.block_type_for(&entry.name, dtype, &entry.shape)?;
        let elements = entry
            .shape
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d))
            .and_then(|n| usize::try_from(n).ok())?;
        Some(Self {
            dtype,
            quant,
            elements,
        })
    }

    /// Whether `bytes` are exactly the tensor's stored values.
    fn fits(&self, bytes: &[u8]) -> bool {
        self.dtype.byte_len(self.elements as u64) == Some(bytes.len() as u64)
    }
}

/// A pass run ahead for a tensor of a group: used if the tensor's chunk still goes where it was
/// written and its CRC-32C is the one the index expects.
struct Ahead {
    done: Done,
    /// Where its blocks were written.
    at: u64,
    /// The chunk's CRC-32C from the index.
    expected: u32,
}

/// In placed mode, quantizes the fast-path tensors of the group that starts at `start` (tensors
/// up to [`GROUP_BYTES`] of input, at least one) in one pass over all their batches, writing their
/// blocks where the plan's `sizes` put them. Returns the group's end and each tensor's [`Ahead`]
/// (`None` for a tensor the fast path leaves to the session).
fn quantize_group(
    file: &AprFile<MappedFile>,
    start: usize,
    sizes: &[u64],
    session: &QuantizationSession<'_>,
    writer: &TensorFileWriter,
    pages: &Pages<'_>,
    threads: usize,
) -> Result<(usize, Vec<Option<Ahead>>)> {
    let Some((out, first)) = writer.next_placed_chunk() else {
        return Ok((start + 1, Vec::new()));
    };
    let mut passes = Vec::new();
    let mut at = first;
    let mut input = 0usize;
    let mut end = start;
    while end < sizes.len() && (end == start || input < GROUP_BYTES) {
        let fast = FastTensor::of(file, end, session).and_then(|fast| {
            let (stored, expected) = file.unverified_stored_chunk(end)?;
            fast.fits(stored).then_some((fast, stored, expected))
        });
        if let Some((fast, stored, expected)) = fast {
            input += stored.len();
            let pass = Pass::new(
                (fast.quant, fast.dtype, fast.elements),
                stored,
                true,
                pages,
                Output::Placed { out, at },
            );
            passes.push((end - start, at, expected, pass));
        }
        at += sizes[end];
        end += 1;
    }
    run_all(
        &passes.iter().map(|(.., pass)| pass).collect::<Vec<_>>(),
        threads,
    );
    let mut ahead: Vec<Option<Ahead>> = (start..end).map(|_| None).collect();
    for (index, at, expected, pass) in passes {
        ahead[index] = Some(Ahead {
            done: pass.finish()?,
            at,
            expected,
        });
    }
    Ok((end, ahead))
}

/// Puts `writer` in placed mode when the output can be planned now: every tensor's output type
/// follows from the metadata alone ([`QuantizationSession::plan_tensor`] on a copy of the session).
/// The planned metadata is the one `finish` will get from `apr quantize` (the input's card, the
/// session's records) but for the relative errors, which are encoded as wide as the real ones; an
/// accuracy warning, or another card, makes the real metadata longer and `finish` copy the
/// payload once. Returns the planned chunk sizes when placed mode is on.
fn plan_output(
    file: &AprFile<MappedFile>,
    session: &QuantizationSession<'_>,
    writer: &mut TensorFileWriter,
) -> Result<Option<Vec<u64>>> {
    let tensors = &file.metadata().tensors;
    if tensors.is_empty() || file.metadata().payload != PayloadKind::Tensors {
        return Ok(None);
    }
    let mut planning = session.planning_copy();
    let mut entries = Vec::with_capacity(tensors.len());
    let mut sizes = Vec::with_capacity(tensors.len());
    for entry in tensors {
        let Ok(dtype) = DType::from_code(entry.dtype) else {
            return Ok(None);
        };
        let Some(next) = planning.plan_tensor(&entry.name, dtype, &entry.shape) else {
            return Ok(None);
        };
        let Some(size) =
            crate::tensor::element_count(&entry.shape).and_then(|elements| next.byte_len(elements))
        else {
            return Ok(None);
        };
        sizes.push(size);
        entries.push(TensorEntry {
            dtype: next.code(),
            // A kept tensor keeps its entry; a block type has no plugin name.
            quantizer: if next == dtype {
                entry.quantizer.clone()
            } else {
                String::new()
            },
            ..entry.clone()
        });
    }
    let Ok(info) = planning.finish() else {
        return Ok(None);
    };
    let planned = ModelMetadata {
        model_card: file.metadata().model_card.clone(),
        payload: PayloadKind::Tensors,
        tensors: entries,
        quantization: Some(info),
    };
    Ok(writer.place(&planned, &sizes)?.then_some(sizes))
}

/// Quantizes tensor `position` with a kernel straight from its chunk if the fast path applies
/// (`Ok(false)` if not: nothing was recorded or written).
fn quantize_fast(
    file: &AprFile<MappedFile>,
    position: usize,
    session: &mut QuantizationSession<'_>,
    writer: &mut TensorFileWriter,
    threads: usize,
    ahead: Option<Ahead>,
) -> Result<bool> {
    let Some(entry) = file.metadata().tensors.get(position) else {
        return Ok(false);
    };
    let Some(fast) = FastTensor::of(file, position, session) else {
        return Ok(false);
    };
    let FastTensor {
        dtype,
        quant,
        elements,
    } = fast;
    let threads = if elements < PARALLEL_MIN { 1 } else { threads };
    let pages = Pages(Some(file.envelope().storage()));
    let placed = writer.next_placed_chunk();
    // Stored as is and not verified yet: checked in the quantizing pass, its result used only if
    // the CRC-32C holds (in placed mode its blocks are in the temporary file, overwritten by a
    // second pass or removed with it). A pass run ahead with its group counts if its blocks went
    // where this chunk goes.
    let checked = match ahead.filter(|ahead| placed.is_some_and(|(_, at)| at == ahead.at)) {
        Some(ahead) => (ahead.done.crc == ahead.expected).then_some(ahead.done),
        None => match file
            .unverified_stored_chunk(position)
            .filter(|(stored, _)| fast.fits(stored))
        {
            Some((stored, expected)) => {
                let pass = run_pass(
                    quant, dtype, stored, elements, true, &pages, threads, placed,
                )?;
                (pass.crc == expected).then_some(pass)
            }
            None => None,
        },
    };
    let pass = match checked {
        Some(pass) => pass,
        None => {
            // Compressed, encrypted, already verified, or the check failed: `decode_chunk`
            // checks (and reports a mismatch with its own error) and decodes.
            let chunk: Cow<'_, [u8]> = file.envelope().decode_chunk(position)?;
            if !fast.fits(&chunk) {
                return Ok(false);
            }
            run_pass(
                quant, dtype, &chunk, elements, false, &pages, threads, placed,
            )?
        }
    };
    let error = match pass.outcome {
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
    session.record_block(&entry.name, dtype, elements as u64, quant, error);
    if writer.next_placed_chunk().is_some() {
        writer.push_placed(
            &entry.name,
            (DType::Quantized(quant), &entry.shape),
            pass.blocks_len,
            (pass.blocks_crc, &pass.blocks_crc32),
        )?;
    } else {
        let tensor = Tensor::new(
            entry.name.clone(),
            DType::Quantized(quant),
            entry.shape.clone(),
            pass.blocks,
        )?;
        writer.push_owned_with_crc32c(tensor, pass.blocks_crc)?;
    }
    Ok(true)
}

/// The mapped input file, whose pages a streaming pass maps ahead of its reads and releases
/// once it has read them: resident memory then holds a bounded stretch of the input, not all of
/// it (pages of a mapping count in a process's RSS).
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

/// The result of a [`Pass`].
struct Done {
    /// The quantized blocks (meaningful for [`Outcome::Measured`] and [`Outcome::Overflow`]);
    /// empty when the pass wrote them to the output.
    blocks: Vec<u8>,
    /// Their length.
    blocks_len: u64,
    /// Their CRC-32C (for [`Outcome::Measured`]).
    blocks_crc: u32,
    /// Their CRC32 (IEEE), when the pass wrote them to the output.
    blocks_crc32: crc32fast::Hasher,
    outcome: Outcome,
    /// The CRC-32C of the bytes read (0 when the pass did not check).
    crc: u32,
}

/// What one batch found, or `None` if a value is not finite.
struct BatchResult {
    /// The CRC-32C of the batch's input bytes (0 when the pass does not check).
    input_crc: u32,
    /// The CRC-32C of its blocks.
    blocks_crc: u32,
    /// Its blocks' length.
    blocks_len: usize,
    /// The CRC32 (IEEE) of its blocks, when they were written to the output.
    blocks_crc32: Option<crc32fast::Hasher>,
    /// Each window's sums, in order.
    windows: Vec<WindowSums>,
}

/// One tensor's quantizing pass, shared by its threads.
struct Pass<'s, 'o> {
    quant: QuantType,
    dtype: DType,
    bytes: &'s [u8],
    elements: usize,
    /// Whether each batch's CRC-32C is computed.
    check: bool,
    /// Output bytes per block.
    block_bytes: usize,
    /// Output bytes per window.
    window_bytes: usize,
    /// The CPU's vector extensions, detected once.
    arch: pulp::Arch,
    /// Where each batch's blocks go.
    output: Output<'o>,
    /// Output bytes of a whole batch.
    batch_bytes: usize,
    /// What each batch found.
    results: Vec<OnceLock<Option<BatchResult>>>,
    /// The first batch nobody has claimed.
    next: AtomicUsize,
    /// Set when a value that is not finite was found or a write failed: the threads stop
    /// claiming.
    stop: AtomicBool,
    /// The first write that failed.
    write_error: Mutex<Option<std::io::Error>>,
    pages: &'s Pages<'s>,
}

/// Where a [`Pass`] puts the blocks.
enum Output<'o> {
    /// Each batch's slot of one buffer for the tensor, taken by the thread that claims the batch.
    Held(Vec<Mutex<Option<&'o mut [u8]>>>),
    /// The output file, the tensor's blocks starting at `at`: each thread quantizes a batch into
    /// its own buffer and writes it there.
    Placed { out: &'o PositionalWriter, at: u64 },
}

/// Checks (if `check`), quantizes and measures the `elements` values of a `dtype` tensor stored
/// in `bytes` (its length checked by the caller) to `quant` blocks on `threads` threads. The blocks
/// are returned, or with `placed` written to the output at the offset given.
///
/// # Errors
/// `Io` if a write to the output fails.
#[allow(
    clippy::too_many_arguments,
    reason = "one pass's inputs; each caller names them all"
)]
fn run_pass(
    quant: QuantType,
    dtype: DType,
    bytes: &[u8],
    elements: usize,
    check: bool,
    pages: &Pages<'_>,
    threads: usize,
    placed: Option<(&PositionalWriter, u64)>,
) -> Result<Done> {
    let mut blocks = if placed.is_some() {
        Vec::new()
    } else {
        vec![0u8; Pass::blocks_len(quant, elements)]
    };
    // Before the first write: a page fault per 2 MiB rather than per 4 KiB as the threads fill
    // it, and a quick release when the file is written.
    mapped_file::advise_huge_pages(&mut blocks);
    let output = match placed {
        Some((out, at)) => Output::Placed { out, at },
        None => Output::Held(
            blocks
                .chunks_mut(Pass::batch_bytes(quant))
                .map(|slot| Mutex::new(Some(slot)))
                .collect(),
        ),
    };
    let pass = Pass::new((quant, dtype, elements), bytes, check, pages, output);
    run_all(&[&pass], threads);
    let done = pass.finish()?;
    Ok(Done { blocks, ..done })
}

/// Runs the batches of every pass on `threads` threads. Each thread claims batches pass after
/// pass, so a thread that finds a pass claimed out goes on to the next one instead of waiting at
/// its end; the threads meet once, after the last.
fn run_all(passes: &[&Pass<'_, '_>], threads: usize) {
    let work = || {
        let mut buffers = Buffers::default();
        for pass in passes {
            pass.work(&mut buffers);
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(work);
        }
        work();
    });
}

/// A thread's buffers, kept from batch to batch and from pass to pass.
#[derive(Default)]
struct Buffers {
    /// One window's values as f32 (tensors stored as f16 or bf16).
    values: Vec<f32>,
    /// One batch's blocks in placed mode (stays in cache from batch to batch).
    own: Vec<u8>,
}

impl<'s, 'o> Pass<'s, 'o> {
    /// A pass that checks (if `check`), quantizes and measures the `elements` values of a `dtype`
    /// tensor stored in `bytes` (its length checked by the caller) to `quant` blocks, put into
    /// `output`.
    fn new(
        (quant, dtype, elements): (QuantType, DType, usize),
        bytes: &'s [u8],
        check: bool,
        pages: &'s Pages<'s>,
        output: Output<'o>,
    ) -> Self {
        let block_bytes = Self::block_bytes(quant);
        Pass {
            quant,
            dtype,
            bytes,
            elements,
            check,
            block_bytes,
            window_bytes: ERROR_WINDOW / BLOCK_LEN * block_bytes,
            arch: pulp::Arch::new(),
            output,
            batch_bytes: Self::batch_bytes(quant),
            results: (0..elements.div_ceil(BATCH_VALUES))
                .map(|_| OnceLock::new())
                .collect(),
            next: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            write_error: Mutex::new(None),
            pages,
        }
    }

    /// Output bytes per block; at least 1 (`chunks_mut` refuses 0, and the kernels refuse a type
    /// that is not a block type).
    fn block_bytes(quant: QuantType) -> usize {
        kernels::block_bytes(quant).unwrap_or(0).max(1)
    }

    /// Output bytes of a whole batch.
    fn batch_bytes(quant: QuantType) -> usize {
        BATCH_VALUES / BLOCK_LEN * Self::block_bytes(quant)
    }

    /// Output bytes of `elements` values.
    fn blocks_len(quant: QuantType, elements: usize) -> usize {
        elements / BLOCK_LEN * Self::block_bytes(quant)
    }

    /// The pass's result once every thread is done with it (`blocks` empty: held blocks are the
    /// caller's buffer).
    ///
    /// # Errors
    /// `Io`: the first write to the output that failed.
    fn finish(self) -> Result<Done> {
        let (outcome, crc, blocks_crc, blocks_crc32) = self.combine();
        let write_error = self
            .write_error
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(error) = write_error {
            return Err(error.into());
        }
        Ok(Done {
            blocks: Vec::new(),
            blocks_len: Self::blocks_len(self.quant, self.elements) as u64,
            blocks_crc,
            blocks_crc32,
            outcome,
            crc,
        })
    }

    /// The bytes of values `values`.
    fn stored(&self, values: std::ops::Range<usize>) -> &[u8] {
        let bytes_per_value = self.bytes.len() / self.elements.max(1);
        &self.bytes[values.start * bytes_per_value..values.end * bytes_per_value]
    }

    /// The values of batch `batch`.
    fn span(&self, batch: usize) -> std::ops::Range<usize> {
        batch * BATCH_VALUES..((batch + 1) * BATCH_VALUES).min(self.elements)
    }

    /// A thread's loop: claims batches until none is left or a value that is not finite was
    /// found.
    fn work(&self, buffers: &mut Buffers) {
        let Buffers { values, own } = buffers;
        values.resize(ERROR_WINDOW, 0.0);
        while !self.stop.load(Ordering::Relaxed) {
            let batch = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(result) = self.results.get(batch) else {
                return;
            };
            let dst: &mut [u8] = match &self.output {
                Output::Held(slots) => {
                    let Some(dst) = slots[batch]
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .take()
                    else {
                        return;
                    };
                    dst
                }
                Output::Placed { .. } => {
                    own.resize(self.batch_bytes, 0);
                    &mut own[..self.span(batch).len() / BLOCK_LEN * self.block_bytes]
                }
            };
            let mut found = self.batch(batch, dst, values);
            match (&mut found, &self.output) {
                (None, _) => self.stop.store(true, Ordering::Relaxed),
                (Some(found), Output::Placed { out, at }) => {
                    // Hashed while in cache, then written from the same buffer.
                    let mut crc32 = crc32fast::Hasher::new();
                    crc32.update(dst);
                    found.blocks_crc32 = Some(crc32);
                    let offset = at + (batch * self.batch_bytes) as u64;
                    if let Err(error) = out.write_all_at(dst, offset) {
                        self.write_error
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .get_or_insert(error);
                        self.stop.store(true, Ordering::Relaxed);
                    }
                }
                (Some(_), Output::Held(_)) => {}
            }
            let _ = result.set(found);
        }
    }

    /// Checks, quantizes and measures batch `batch` into `dst`.
    fn batch(&self, batch: usize, dst: &mut [u8], values: &mut [f32]) -> Option<BatchResult> {
        let span = self.span(batch);
        let stored = self.stored(span.clone());
        self.pages.populate(stored);
        let crc = if self.check {
            crc32c::crc32c(stored)
        } else {
            0
        };
        let mut sums = Vec::with_capacity(BATCH_WINDOWS);
        self.arch.dispatch(Windows {
            pass: self,
            span: span.clone(),
            dst: &mut *dst,
            values,
            sums: &mut sums,
        });
        self.pages.release(stored);
        // A window that failed left the batch short.
        (sums.len() == span.len().div_ceil(ERROR_WINDOW)).then(|| BatchResult {
            input_crc: crc,
            blocks_crc: crc32c::crc32c(dst),
            blocks_len: dst.len(),
            blocks_crc32: None,
            windows: sums,
        })
    }

    /// Quantizes values `range` (one window) into `dst` and measures them.
    #[inline(always)]
    fn window(
        &self,
        range: std::ops::Range<usize>,
        dst: &mut [u8],
        values: &mut [f32],
    ) -> std::result::Result<WindowSums, KernelError> {
        if self.dtype == DType::F32 {
            kernels::quantize_measure_le(self.quant, self.stored(range), dst)
        } else {
            let values = &mut values[..range.len()];
            load_values(self.dtype, self.bytes, range.start, values);
            kernels::quantize_measure(self.quant, values, dst)
        }
    }

    /// The tensor's outcome and the bytes' CRC-32C, from the batches' results in order: a value
    /// that is not finite anywhere wins over a scale overflow anywhere.
    fn combine(&self) -> (Outcome, u32, u32, crc32fast::Hasher) {
        let mut sums = ErrorSums::default();
        let (mut input_crc, mut blocks_crc) = (0u32, 0u32);
        let mut blocks_crc32 = crc32fast::Hasher::new();
        for (batch, result) in self.results.iter().enumerate() {
            let Some(Some(result)) = result.get() else {
                return (Outcome::NonFinite, input_crc, blocks_crc, blocks_crc32);
            };
            let input_len = self.stored(self.span(batch)).len();
            input_crc = crc32c_combine(input_crc, result.input_crc, input_len as u64);
            blocks_crc = crc32c_combine(blocks_crc, result.blocks_crc, result.blocks_len as u64);
            if let Some(crc32) = &result.blocks_crc32 {
                blocks_crc32.combine(crc32);
            }
            for &window in &result.windows {
                sums.add_window(window);
            }
        }
        let outcome = if sums.saw_non_finite() {
            Outcome::Overflow
        } else {
            Outcome::Measured(sums)
        };
        (outcome, input_crc, blocks_crc, blocks_crc32)
    }
}

/// The CRC-32C polynomial, reflected (bit 31 is the coefficient of x^0).
const CASTAGNOLI: u32 = 0x82F6_3B78;

/// `crc32c::crc32c_combine`: the CRC-32C of `a ‖ b` from `a`'s, `b`'s and `b`'s length, as
/// zlib's `crc32_combine` computes it, `a`'s CRC times x^(8·len) modulo the polynomial. The
/// crate's version squares 32×32 bit matrices for each call (microseconds; it was 2 % of a
/// quantizing run's cycles, serial at the end of each tensor); this is a few hundred word
/// operations.
fn crc32c_combine(a: u32, b: u32, len: u64) -> u32 {
    multiply_mod_castagnoli(x_to_the_8n(len), a) ^ b
}

/// `a · b` modulo the CRC-32C polynomial, both in the reflected representation.
fn multiply_mod_castagnoli(a: u32, mut b: u32) -> u32 {
    let mut product = 0;
    for bit in (0..32).rev() {
        if a & (1 << bit) != 0 {
            product ^= b;
        }
        // b · x
        b = if b & 1 != 0 {
            (b >> 1) ^ CASTAGNOLI
        } else {
            b >> 1
        };
    }
    product
}

/// x^(8·n) modulo the CRC-32C polynomial, reflected: square and multiply over the bits of 8·n.
fn x_to_the_8n(n: u64) -> u32 {
    // x^1, then x^2, x^4, ... as the bits are walked.
    let mut power = 1u32 << 30;
    // x^0
    let mut result = 1u32 << 31;
    // The bits of 8·n (n < 2^61 for any length in memory).
    let mut exponent = u128::from(n) * 8;
    while exponent != 0 {
        if exponent & 1 != 0 {
            result = multiply_mod_castagnoli(result, power);
        }
        power = multiply_mod_castagnoli(power, power);
        exponent >>= 1;
    }
    result
}

/// The windows of one batch, quantized and measured by kernels inlined into
/// [`pulp::WithSimd::with_simd`], which `pulp` compiles for each set of vector extensions it
/// knows (AVX2 with F16C and FMA on x86-64, and the baseline) and calls for the best one this CPU
/// has. The same Rust code on every path: the kernels are bit-exact whichever runs.
struct Windows<'p, 's, 'o, 'w> {
    pass: &'p Pass<'s, 'o>,
    span: std::ops::Range<usize>,
    dst: &'w mut [u8],
    values: &'w mut [f32],
    /// Each window's sums, in order; short if a window failed.
    sums: &'w mut Vec<WindowSums>,
}

impl pulp::WithSimd for Windows<'_, '_, '_, '_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) -> Self::Output {
        let Self {
            pass,
            span,
            dst,
            values,
            sums,
        } = self;
        for (start, dst) in span
            .clone()
            .step_by(ERROR_WINDOW)
            .zip(dst.chunks_mut(pass.window_bytes))
        {
            let end = (start + ERROR_WINDOW).min(span.end);
            match pass.window(start..end, dst, values) {
                Ok(window) => sums.push(window),
                Err(_) => break,
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
        let big = values(PARALLEL_MIN * 3 + ERROR_WINDOW / 2);
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
        streamed_with_card(input, output, hooks, None).map(drop)
    }

    /// `apr quantize` as the command runs it, saying how the output was written; `card` replaces
    /// the input's card in the output.
    fn streamed_with_card(
        input: &Path,
        output: &Path,
        hooks: &dyn QuantizationHooks,
        card: Option<&ModelCard>,
    ) -> Result<super::super::Written> {
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
        writer.finish_telling(
            ModelType::NeuralCustom,
            card.unwrap_or(&file.metadata().model_card),
            Some(session.finish()?),
        )
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
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
        let mut ways = Vec::new();
        for hooks in &hooks {
            let (old, new) = (dir.path().join("old.apr"), dir.path().join("new.apr"));
            reference(&input, &old, hooks.as_ref()).unwrap();
            ways.push(streamed_with_card(&input, &new, hooks.as_ref(), None).unwrap());
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
        // The blocks are placed as planned (kept tensors included), but Q4_0's outlier warning
        // lengthens the metadata, so the payload is copied after it; Q8_TENSOR is not planned.
        use super::super::Written;
        assert_eq!(
            ways,
            [
                Written::InPlace,
                Written::Copied,
                Written::InPlace,
                Written::Streamed,
                Written::InPlace
            ]
        );
        assert_eq!(entries(dir.path()), ["in.apr", "new.apr", "old.apr"]);
    }

    /// A model without warnings is written in place, and as the session path writes it; a card
    /// other than the input's (another metadata length) makes the payload be copied, to the same
    /// bytes. No temporary file is left either way.
    #[test]
    fn placed_output_is_the_session_output_in_place_or_copied() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.apr");
        let mut noise = Noise(5);
        let mut values = |n: usize| -> Vec<f32> { (0..n).map(|_| noise.normal() * 0.02).collect() };
        let big = values(PARALLEL_MIN * 2 + 3 * BLOCK_LEN);
        let model = TensorModel::new(vec![
            Tensor::from_f32("blk.0.attn_norm.weight", vec![64], &values(64)).unwrap(),
            Tensor::from_f32(
                "blk.0.ffn_up.weight",
                vec![(big.len() / 32) as u64, 32],
                &big,
            )
            .unwrap(),
            f16_tensor("blk.0.attn_q.weight", vec![96, 64], &values(96 * 64)),
            Tensor::from_f32("blk.0.odd.weight", vec![8, 40], &values(8 * 40)).unwrap(),
        ])
        .unwrap();
        save(&input, &model);
        let other = ModelCard {
            name: "a card the input does not have".to_owned(),
            ..ModelCard::default()
        };
        for quant_type in [QuantType::Q8_0, QuantType::Q4_0, QuantType::Q4_1] {
            let hooks = UniformQuantization { quant_type };
            let old = dir.path().join("old.apr");
            reference(&input, &old, &hooks).unwrap();
            let new = dir.path().join("new.apr");
            let written = streamed_with_card(&input, &new, &hooks, None).unwrap();
            assert_eq!(written, super::super::Written::InPlace, "{quant_type:?}");
            assert!(std::fs::read(&old).unwrap() == std::fs::read(&new).unwrap());

            let written = streamed_with_card(&input, &new, &hooks, Some(&other)).unwrap();
            assert_eq!(written, super::super::Written::Copied, "{quant_type:?}");
            let file = super::super::open(&input).unwrap();
            let registry = QuantizerRegistry::default();
            let mut session = QuantizationSession::new(&hooks, &registry);
            let mut writer = TensorFileWriter::new(&old, envelope_core::Compression::None).unwrap();
            for position in 0..file.metadata().tensors.len() {
                writer
                    .push(
                        &session
                            .quantize(&file.tensor_at(position).unwrap())
                            .unwrap(),
                    )
                    .unwrap();
            }
            writer
                .finish(
                    ModelType::NeuralCustom,
                    &other,
                    Some(session.finish().unwrap()),
                )
                .unwrap();
            assert!(std::fs::read(&old).unwrap() == std::fs::read(&new).unwrap());
            assert_eq!(entries(dir.path()), ["in.apr", "new.apr", "old.apr"]);
        }
    }

    /// The first value that is not finite is refused with the session's error, wherever it is
    /// (any batch, on any thread), and before a scale overflow earlier on.
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
        let clean = std::fs::read(&input).unwrap();
        let file = super::super::open(&input).unwrap();
        // Chunks are checked as they are read (in the quantizing pass), not at open.
        assert!(!file.envelope().is_fully_verified());
        // In the large tensor, which every thread works on.
        let at = file.envelope().bytes_before_payload().len() + 64 * 128 * 4 + 1000 * 4;
        drop(file);
        // A flipped bit, and a value made NaN: the damage is reported as such, not as the NaN
        // the pass also found, and nothing computed from the damaged bytes is written.
        for make_nan in [false, true] {
            let mut bytes = clean.clone();
            if make_nan {
                bytes[at..at + 4].copy_from_slice(&f32::NAN.to_le_bytes());
            } else {
                bytes[at + 1] ^= 0x10;
            }
            std::fs::write(&input, &bytes).unwrap();
            let hooks = UniformQuantization {
                quant_type: QuantType::Q8_0,
            };
            let (old, new) = (dir.path().join("old.apr"), dir.path().join("new.apr"));
            let old_error = reference(&input, &old, &hooks).unwrap_err();
            let new_error = streamed(&input, &new, &hooks).unwrap_err();
            assert_eq!(old_error.signal(), envelope_core::Signal::ChecksumMismatch);
            assert_eq!(new_error.signal(), old_error.signal());
            assert_eq!(new_error.to_string(), old_error.to_string());
            assert!(!new.exists());
            // Nor the temporary file the placed blocks went to.
            assert_eq!(entries(dir.path()), ["in.apr"]);
        }
    }

    proptest! {
        /// The combine is the crate's, and gives the CRC-32C of the concatenation.
        #[test]
        fn crc32c_combine_is_the_crates(
            a in proptest::collection::vec(any::<u8>(), 0..300),
            b in proptest::collection::vec(any::<u8>(), 0..300),
            crc1 in any::<u32>(),
            crc2 in any::<u32>(),
            len in 0u64..(1 << 40),
        ) {
            let joined = [a.as_slice(), b.as_slice()].concat();
            prop_assert_eq!(
                crc32c_combine(crc32c::crc32c(&a), crc32c::crc32c(&b), b.len() as u64),
                crc32c::crc32c(&joined)
            );
            prop_assert_eq!(
                crc32c_combine(crc1, crc2, len),
                crc32c::crc32c_combine(crc1, crc2, usize::try_from(len).unwrap())
            );
        }
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
                let done = run_pass(quant, dtype, tensor.data(), n, true, &pages, threads, None).unwrap();
                prop_assert!(outcome == Outcome::NonFinite || done.blocks == expected);
                prop_assert_eq!(done.outcome, outcome);
                if outcome != Outcome::NonFinite {
                    prop_assert_eq!(done.crc, crc32c::crc32c(tensor.data()));
                }
            }
        }
    }
}
