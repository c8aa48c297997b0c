//! Loading a STREAMING file in one pass over its bytes, its chunks decoded on several threads
//! when the caller allows them.
//!
//! A whole file has its CRC32 checked over every byte before the payload is touched, then the
//! payload is read again to decode it: two passes. A STREAMING file can do with one: the lazy rules
//! of docs/envelope.md §4.1 check the header and indexes by the chunk index's prefix CRC-32C and
//! each chunk by its own CRC-32C, just before the chunk is decoded, while its bytes are still in
//! the processor's cache. Chunks decode independently (docs/ald.md §6), so they can also be split
//! among threads. The lazy rules do not cover the frames after the payload (signature, license);
//! a file that has them gets its whole-file CRC32 checked first, as a whole file does.

use std::sync::Arc;

use arrow_array::RecordBatch;
use envelope_core::{Envelope, Flags, Format, HEADER_LEN, Header, Section};

use crate::dataset::ArrowDataset;
use crate::ipc;
use crate::load::{LoadOptions, Loaded, Opened, check_rows};
use crate::{Error, Result};

/// Below this many decoded bytes a file is decoded on the calling thread alone: starting a thread
/// (tens of microseconds) would cost more than it saves. At 4 MiB a second thread already saves
/// a millisecond or more of decoding, and `alimentar convert` writes STREAMING files of every size.
const PARALLEL_MIN_BYTES: u64 = 4 << 20;

/// Whether the header says STREAMING and neither ENCRYPTED nor TRUENO_NATIVE: the files
/// [`load_streaming`] reads. Only a routing hint: every path verifies the header itself.
pub(crate) fn is_plain_streaming(bytes: &[u8]) -> bool {
    bytes
        .first_chunk::<HEADER_LEN>()
        .and_then(|head| Header::parse(head).ok())
        .is_some_and(|header| {
            let flags = header.flags();
            flags.contains(Flags::STREAMING)
                && !flags.contains(Flags::ENCRYPTED)
                && !flags.contains(Flags::TRUENO_NATIVE)
        })
}

/// Loads a plain STREAMING file (see [`is_plain_streaming`]) in one pass, decoding its chunks on
/// up to `threads` threads (1: the calling thread only, the only choice on wasm32).
///
/// A file this path refuses is refused with the signal a whole-file verification gives it: if
/// its whole-file CRC32 fails, the error is `ChecksumMismatch` for the CRC32 (computed only then),
/// whichever byte is damaged. Without this, a flipped size field in the header would be found
/// out of bounds by the lazy walk (`InvalidFormat`) before the prefix CRC-32C could be checked.
///
/// # Errors
/// As [`crate::load_from_bytes_with`]; a damaged file is `ChecksumMismatch`.
pub(crate) fn load_streaming(
    bytes: &[u8],
    options: &LoadOptions<'_>,
    threads: usize,
) -> Result<Loaded> {
    load_lazily(bytes, options, threads).map_err(|error| {
        match Envelope::parse(bytes, Format::Dataset) {
            Err(whole) => whole.into(),
            Ok(_) => error,
        }
    })
}

/// [`load_streaming`] without the whole-file verdict on refused files.
fn load_lazily(bytes: &[u8], options: &LoadOptions<'_>, threads: usize) -> Result<Loaded> {
    let envelope = Envelope::parse_lazy(bytes, Format::Dataset)?.with_limits(options.limits);
    let layout = envelope.layout();
    let has_trailing_frames =
        layout.span(Section::License).is_some() || layout.span(Section::Signature).is_some();
    if !envelope.is_fully_verified() && has_trailing_frames {
        // The lazy checks do not reach past the payload (a signature policy would, but the
        // policy may accept an unsigned file).
        envelope.verify_checksum()?;
    }
    let opened = Opened::verify(envelope, options)?;
    let batches = decode_chunks(opened.envelope(), threads)?;
    check_rows(&batches, opened.num_rows())?;
    let dataset = ArrowDataset::new(Arc::clone(opened.schema()), batches)?;
    Ok(opened.into_loaded_with(dataset))
}

/// The record batches of every chunk, in order: the chunks split into one contiguous run per
/// thread, each chunk checked, decompressed (or copied) into buffers of its own and decoded. The
/// first failure in chunk order is the one reported.
fn decode_chunks(envelope: &Envelope<&[u8]>, threads: usize) -> Result<Vec<RecordBatch>> {
    let Some(index) = envelope.chunk_index() else {
        return ipc::decode_from_reader(envelope.schema(), envelope.payload_reader()?);
    };
    let chunks = index.len();
    let decoded = index.entries().iter().fold(0u64, |sum, entry| {
        sum.saturating_add(entry.uncompressed_size)
    });
    // No threads on wasm32 (the library core's rule), whatever the caller asked.
    let threads = if decoded < PARALLEL_MIN_BYTES || cfg!(target_arch = "wasm32") {
        1
    } else {
        threads.min(chunks).max(1)
    };
    let schema = envelope.schema();
    let decode_run = |run: core::ops::Range<usize>| -> Result<Vec<RecordBatch>> {
        let mut batches = Vec::with_capacity(run.len());
        for chunk in run {
            batches.extend(ipc::decode_from_reader(
                schema,
                envelope.chunk_reader(chunk)?,
            )?);
        }
        Ok(batches)
    };
    if threads == 1 {
        return decode_run(0..chunks);
    }
    let per_thread = chunks.div_ceil(threads);
    let runs: Vec<Result<Vec<RecordBatch>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|thread| {
                let run = thread * per_thread..((thread + 1) * per_thread).min(chunks);
                scope.spawn(move || decode_run(run))
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle.join().unwrap_or(Err(Error::InvalidArgument(
                    "a thread decoding chunks stopped unexpectedly",
                )))
            })
            .collect()
    });
    let mut batches = Vec::with_capacity(chunks);
    for run in runs {
        batches.extend(run?);
    }
    Ok(batches)
}
