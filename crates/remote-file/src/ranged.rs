//! What every remote reader shares, whatever the file's format: how a file is read
//! ([`ReadOptions`]), the open of an envelope from its head and tail (the first two requests,
//! extended as `RangedEnvelope::open` asks), and fetching a run of chunks in parallel with a
//! bound on the bytes in flight. `RemoteDataset` (`.ald`) and `RemoteModel` (`.apr`) are these
//! with their format's checks.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use envelope_core::{Format, Opening, RangedEnvelope};
use futures::StreamExt as _;
use futures::TryStreamExt as _;
use tokio::sync::Semaphore;

use crate::fetch::{RemoteFile, Retry};
use crate::location::Location;
use crate::{Error, Result};

/// How a remote file is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// Bytes fetched from each end of the file when it is opened (the two first requests).
    pub first_read: u64,
    /// The most bytes of chunks requested and not yet decoded at any time (a chunk larger than
    /// this is fetched alone).
    pub max_in_flight: u64,
    /// The most chunk requests in flight at once.
    pub max_requests: usize,
    /// The most bytes before the payload (header to encryption block) and after it the open
    /// fetches: a bound on what a file can make the reader hold before any check has passed.
    pub max_head: u64,
    /// Retries of failed ranges.
    pub retry: Retry,
}

impl Default for ReadOptions {
    /// 64 KiB from each end, 64 MiB and 8 requests in flight, 256 MiB of sections, 5 tries.
    fn default() -> Self {
        Self {
            first_read: 64 * 1024,
            max_in_flight: 64 * 1024 * 1024,
            max_requests: 8,
            max_head: 256 * 1024 * 1024,
            retry: Retry::default(),
        }
    }
}

/// The rounds of extra requests an open may make after the first two (each reads further into
/// the file; the walk needs at most one per frame before the payload and one for the tail).
const MAX_OPEN_ROUNDS: usize = 8;

/// An envelope file (`.ald`, `.apr`) over object storage, opened from its head and tail: the
/// object as first seen, and its head and tail verified as a lazy local open verifies them (or
/// the word that only the whole file verifies it). [`RemoteDataset`](crate::RemoteDataset) and
/// [`RemoteModel`](crate::RemoteModel) start here; a tool that reports on the envelope before
/// the format's own checks (`apr inspect`) starts here too.
#[derive(Debug)]
pub struct RemoteEnvelope {
    file: RemoteFile,
    envelope: Option<RangedEnvelope<Vec<u8>>>,
}

impl RemoteEnvelope {
    /// Opens `location` (a URL or a local path, see [`Location::parse`]) as a file of `format`.
    ///
    /// # Errors
    /// As [`RemoteEnvelope::open_location`]; `Location`.
    pub async fn open(location: &str, format: Format, options: ReadOptions) -> Result<Self> {
        Self::open_location(Location::parse(location)?, format, options).await
    }

    /// Opens `location` as a file of `format`: the first and last [`ReadOptions::first_read`]
    /// bytes in parallel, then the ranges the walk asks for (magic, version, the last index's
    /// prefix CRC-32C, header rules, section bounds, as `Envelope::parse_lazy`).
    ///
    /// # Errors
    /// What [`RemoteFile`] returns; `HeadTooLarge`; the envelope's errors.
    pub async fn open_location(
        location: Location,
        format: Format,
        options: ReadOptions,
    ) -> Result<Self> {
        let (file, envelope) = open_envelope(location, format, &options).await?;
        Ok(Self { file, envelope })
    }

    /// The object read (size, ETag, requests sent).
    #[must_use]
    pub fn file(&self) -> &RemoteFile {
        &self.file
    }

    /// The verified head and tail; `None` for a file only its whole-file CRC32 verifies
    /// (neither STREAMING nor TRUENO_NATIVE), which is read whole ([`RemoteEnvelope::fetch_whole`]).
    #[must_use]
    pub fn envelope(&self) -> Option<&RangedEnvelope<Vec<u8>>> {
        self.envelope.as_ref()
    }

    /// Every byte of the object, from the version opened (one request, more on retries): for a
    /// file read whole, or a check that reads every byte.
    ///
    /// # Errors
    /// As [`RemoteFile::range`].
    pub async fn fetch_whole(&self) -> Result<Bytes> {
        self.file.range(0..self.file.size(), |_| Ok(())).await
    }

    /// The object and the envelope, taken apart.
    #[must_use]
    pub fn into_parts(self) -> (RemoteFile, Option<RangedEnvelope<Vec<u8>>>) {
        (self.file, self.envelope)
    }
}

/// Opens `location` as a file of `format`: the first and last [`ReadOptions::first_read`] bytes
/// in parallel, then the ranges the walk asks for. The envelope, or `None` for a file only its
/// whole-file CRC32 verifies (neither STREAMING nor TRUENO_NATIVE), which the caller fetches
/// whole.
///
/// # Errors
/// What [`RemoteFile`] returns; `HeadTooLarge`; the envelope's errors (magic, version, prefix
/// CRC-32C, header rules, section bounds).
async fn open_envelope(
    location: Location,
    format: Format,
    options: &ReadOptions,
) -> Result<(RemoteFile, Option<RangedEnvelope<Vec<u8>>>)> {
    let first = options.first_read.max(1);
    let (file, head, tail) = RemoteFile::open(location, first, first, options.retry).await?;
    let size = file.size();
    let mut head = head.to_vec();
    let mut tail = tail.to_vec();
    let mut rounds = 0;
    let envelope = loop {
        match RangedEnvelope::open(head, tail, size, format)? {
            Opening::Ready(envelope) => break Some(*envelope),
            Opening::NeedWholeFile { .. } => break None,
            Opening::NeedBytes {
                head: h,
                tail: t,
                missing,
            } => {
                rounds += 1;
                let held = h.len() as u64 + t.len() as u64;
                let needed = held + (missing.end - missing.start);
                if needed > options.max_head || rounds > MAX_OPEN_ROUNDS {
                    return Err(Error::HeadTooLarge {
                        location: file.location().as_str().to_owned(),
                        needed,
                        max: options.max_head,
                    });
                }
                // Read ahead a little: the next frame's length prefix usually follows.
                let start = missing.start;
                let extends_head = start == h.len() as u64;
                let range = if extends_head {
                    start
                        ..(missing.end + first)
                            .min(size - t.len() as u64)
                            .max(missing.end)
                } else {
                    missing
                        .start
                        .saturating_sub(first)
                        .max(h.len() as u64)
                        .min(start)..missing.end
                };
                let bytes = file.range(range.clone(), |_| Ok(())).await?;
                (head, tail) = (h, t);
                if extends_head {
                    head.extend_from_slice(&bytes);
                } else {
                    let mut grown = bytes.to_vec();
                    grown.extend_from_slice(&tail);
                    tail = grown;
                }
            }
        }
    };
    Ok((file, envelope))
}

/// The bound on bytes fetched and not yet decoded: a semaphore counted in bytes.
#[derive(Debug, Clone)]
pub(crate) struct InFlight {
    semaphore: Arc<Semaphore>,
    budget: u64,
}

impl InFlight {
    /// A bound of `max_in_flight` bytes (at least 1, at most `u32::MAX`).
    pub(crate) fn new(max_in_flight: u64) -> Self {
        let budget = max_in_flight.clamp(1, u64::from(u32::MAX));
        let permits = usize::try_from(budget).unwrap_or(u32::MAX as usize);
        Self {
            semaphore: Arc::new(Semaphore::new(permits)),
            budget,
        }
    }

    /// Fetches chunks `chunks` of `file`, in order, in parallel: at most `max_requests` requests
    /// and this bound's bytes fetched and not yet decoded at once. `range` names each chunk's
    /// bytes, `check` judges them (a mismatch asks for another try, within the retry budget),
    /// `decode` turns them into what the caller wants while the chunk's share of the bound is
    /// still held (one chunk larger than the bound runs alone).
    ///
    /// # Errors
    /// The first failure of `range`, the fetch (`ObjectChanged`, `RetriesExhausted`, ...),
    /// `check` or `decode`.
    pub(crate) async fn fetch_chunks<T>(
        &self,
        file: &RemoteFile,
        max_requests: usize,
        chunks: impl Iterator<Item = usize>,
        range: impl Fn(usize) -> Result<Range<u64>>,
        check: impl Fn(usize, &[u8]) -> Result<()>,
        decode: impl Fn(usize, Bytes) -> Result<T>,
    ) -> Result<Vec<T>> {
        let (range, check, decode) = (&range, &check, &decode);
        futures::stream::iter(chunks)
            .map(|chunk| async move {
                let range = range(chunk)?;
                let cost = u32::try_from((range.end - range.start).clamp(1, self.budget))
                    .unwrap_or(u32::MAX);
                // Held until the chunk is decoded: the bytes fetched and not yet decoded never
                // exceed the budget (one oversized chunk runs alone).
                let _permit =
                    self.semaphore.acquire_many(cost).await.map_err(|_| {
                        Error::Runtime(std::io::Error::other("the semaphore closed"))
                    })?;
                let stored = file.range(range, |bytes| check(chunk, bytes)).await?;
                decode(chunk, stored)
            })
            .buffered(max_requests.max(1))
            .try_collect()
            .await
    }
}
