//! Range requests against one object: the first pair in parallel, each later one pinned to the
//! version the first saw (`If-Match` on its ETag, and the ETag and size of every response
//! compared), retried with exponential backoff and full jitter on transient failures, a body
//! cut short included (its length is compared with the range, and the caller's own check can ask
//! for another try).

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use object_store::{GetOptions, GetRange, GetResult, ObjectMeta};

use crate::location::Location;
use crate::{Error, Result};

/// How failed ranges are retried: `attempts` tries in all, the n-th retry after a delay drawn
/// uniformly from `0..min(max_delay, base_delay * 2^n)` ("full jitter").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    /// Tries per range, the first included (at least 1).
    pub attempts: u32,
    /// The first retry's delay bound.
    pub base_delay: Duration,
    /// The largest delay bound.
    pub max_delay: Duration,
}

impl Default for Retry {
    /// 5 tries, delays bounded by 100 ms, 200 ms, 400 ms, 800 ms.
    fn default() -> Self {
        Self {
            attempts: 5,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(5),
        }
    }
}

impl Retry {
    /// The delay before retry `retry` (1 for the first retry), jittered by `random`.
    pub(crate) fn delay(&self, retry: u32, random: u64) -> Duration {
        let bound = self
            .base_delay
            .saturating_mul(1u32 << retry.saturating_sub(1).min(20))
            .min(self.max_delay);
        let nanos = u64::try_from(bound.as_nanos()).unwrap_or(u64::MAX);
        Duration::from_nanos(random.checked_rem(nanos.saturating_add(1)).unwrap_or(0))
    }
}

/// One object being read: its size and version as first seen, and counts of the requests sent
/// and the bytes they brought back (relaxed atomics: a count costs one uncontended add).
#[derive(Debug)]
pub struct RemoteFile {
    location: Location,
    size: u64,
    e_tag: Option<String>,
    version: Option<String>,
    retry: Retry,
    requests: AtomicU64,
    bytes: AtomicU64,
    jitter: AtomicU64,
}

impl RemoteFile {
    /// Fetches the first `head` and the last `tail` bytes in parallel (two requests): the file
    /// as first seen, and both parts (the whole file when it is shorter than either).
    ///
    /// # Errors
    /// `Store` (not found, denied, ...), `ObjectChanged` if the two answers disagree on the
    /// object's ETag or size, `RetriesExhausted`.
    pub async fn open(
        location: Location,
        head: u64,
        tail: u64,
        retry: Retry,
    ) -> Result<(Self, Bytes, Bytes)> {
        let seed = jitter_seed();
        let mut file = Self {
            location,
            size: 0,
            e_tag: None,
            version: None,
            retry,
            requests: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            jitter: AtomicU64::new(seed),
        };
        let (first, last) = futures::future::join(
            file.with_retries(0..head, || file.request(GetRange::Bounded(0..head.max(1)))),
            file.with_retries(0..tail, || file.request(GetRange::Suffix(tail.max(1)))),
        )
        .await;
        let ((first_meta, first), (last_meta, last)) = (first?, last?);
        if first_meta.size != last_meta.size || first_meta.e_tag != last_meta.e_tag {
            return Err(Error::ObjectChanged {
                location: file.location.display.clone(),
                expected: first_meta.e_tag.or(Some(first_meta.size.to_string())),
                found: last_meta.e_tag.or(Some(last_meta.size.to_string())),
            });
        }
        file.size = first_meta.size;
        file.e_tag = first_meta.e_tag;
        file.version = first_meta.version;
        Ok((file, first, last))
    }

    /// The object as a listing saw it (size, ETag, version), without a request: every later
    /// request is pinned to that version, as after [`RemoteFile::open`].
    #[must_use]
    pub fn listed(
        location: Location,
        size: u64,
        e_tag: Option<String>,
        version: Option<String>,
        retry: Retry,
    ) -> Self {
        Self {
            location,
            size,
            e_tag,
            version,
            retry,
            requests: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            jitter: AtomicU64::new(jitter_seed()),
        }
    }

    /// The object's size.
    #[must_use]
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The object's ETag as first seen, if the store gives one.
    #[must_use]
    pub fn e_tag(&self) -> Option<&str> {
        self.e_tag.as_deref()
    }

    /// The location read.
    #[must_use]
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// Requests sent so far (retries included).
    #[must_use]
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Response body bytes received so far (retries and bodies cut short included): what the
    /// reads cost on the network, to compare with the bytes they needed.
    #[must_use]
    pub fn bytes_fetched(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Bytes `range` of the object, of exactly that length, from the version first seen,
    /// retried as [`Retry`] says. `check` judges the bytes (a CRC, say): a transient refusal
    /// (a checksum mismatch) asks for another try, any other refusal is returned at once.
    ///
    /// # Errors
    /// `ObjectChanged`; `Store` for a non-transient store error; `RetriesExhausted`; what
    /// `check` returns.
    pub async fn range(
        &self,
        range: Range<u64>,
        check: impl Fn(&[u8]) -> Result<()>,
    ) -> Result<Bytes> {
        if range.is_empty() {
            check(&[])?;
            return Ok(Bytes::new());
        }
        self.with_retries(range.clone(), || async {
            let (meta, bytes) = self.request(GetRange::Bounded(range.clone())).await?;
            self.same_version(&meta)?;
            check(&bytes)?;
            Ok(bytes)
        })
        .await
    }

    /// Streams bytes `range` to `sink` piece by piece as they arrive (bounded memory); a body cut
    /// mid-stream is resumed from the first byte not yet delivered.
    ///
    /// # Errors
    /// As [`RemoteFile::range`]; what `sink` returns.
    pub async fn stream(
        &self,
        range: Range<u64>,
        mut sink: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let mut at = range.start;
        let mut attempt = 0u32;
        while at < range.end {
            attempt += 1;
            let failure = match self.get(GetRange::Bounded(at..range.end)).await {
                Ok(result) => match self.same_version(&result.meta) {
                    Ok(()) => {
                        let mut body = result.into_stream();
                        let mut failure = None;
                        while let Some(piece) = body.next().await {
                            match piece {
                                Ok(piece) => {
                                    self.bytes.fetch_add(piece.len() as u64, Ordering::Relaxed);
                                    let room = range.end - at;
                                    let take = piece
                                        .len()
                                        .min(usize::try_from(room).unwrap_or(usize::MAX));
                                    sink(&piece[..take])?;
                                    at += take as u64;
                                }
                                Err(source) => {
                                    failure = Some(self.store_error(source));
                                    break;
                                }
                            }
                        }
                        match failure {
                            Some(failure) => failure,
                            None if at < range.end => self.short(at..range.end, 0),
                            None => return Ok(()),
                        }
                    }
                    Err(changed) => return Err(changed),
                },
                Err(failure) => failure,
            };
            if !failure.is_transient() {
                return Err(failure);
            }
            if attempt >= self.retry.attempts.max(1) {
                return Err(self.exhausted(range, attempt, failure));
            }
            tokio::time::sleep(self.retry.delay(attempt, self.random())).await;
        }
        Ok(())
    }

    /// Runs `request` until it succeeds, fails for good, or the retry budget is spent.
    async fn with_retries<T, F, Fut>(&self, range: Range<u64>, request: F) -> Result<T>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let attempts = self.retry.attempts.max(1);
        let mut attempt = 0;
        loop {
            attempt += 1;
            match request().await {
                Ok(value) => return Ok(value),
                Err(failure) if failure.is_transient() && attempt < attempts => {
                    tokio::time::sleep(self.retry.delay(attempt, self.random())).await;
                }
                Err(failure) if failure.is_transient() => {
                    return Err(self.exhausted(range, attempt, failure));
                }
                Err(failure) => return Err(failure),
            }
        }
    }

    /// One GET of `range`, pinned to the version first seen; the body read whole and its length
    /// compared with what the response says it holds.
    async fn request(&self, range: GetRange) -> Result<(ObjectMeta, Bytes)> {
        let result = self.get(range).await?;
        let meta = result.meta.clone();
        let expected = result.range.clone();
        let bytes = result
            .bytes()
            .await
            .map_err(|source| self.store_error(source))?;
        self.bytes.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if bytes.len() as u64 != expected.end - expected.start {
            return Err(self.short(expected, bytes.len() as u64));
        }
        Ok((meta, bytes))
    }

    async fn get(&self, range: GetRange) -> Result<GetResult> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let options = GetOptions {
            range: Some(range),
            if_match: self.e_tag.clone(),
            version: self.version.clone(),
            ..GetOptions::default()
        };
        self.location
            .store
            .get_opts(&self.location.path, options)
            .await
            .map_err(|source| match source {
                object_store::Error::Precondition { .. } => Error::ObjectChanged {
                    location: self.location.display.clone(),
                    expected: self.e_tag.clone(),
                    found: None,
                },
                source => self.store_error(source),
            })
    }

    /// `ObjectChanged` unless `meta` is the object first seen (same size, same ETag).
    fn same_version(&self, meta: &ObjectMeta) -> Result<()> {
        if meta.size != self.size || (self.e_tag.is_some() && meta.e_tag != self.e_tag) {
            return Err(Error::ObjectChanged {
                location: self.location.display.clone(),
                expected: self.e_tag.clone().or(Some(self.size.to_string())),
                found: meta.e_tag.clone().or(Some(meta.size.to_string())),
            });
        }
        Ok(())
    }

    fn store_error(&self, source: object_store::Error) -> Error {
        Error::Store {
            location: self.location.display.clone(),
            source,
        }
    }

    fn short(&self, range: Range<u64>, received: u64) -> Error {
        Error::ShortBody {
            location: self.location.display.clone(),
            start: range.start,
            end: range.end,
            received,
        }
    }

    fn exhausted(&self, range: Range<u64>, attempts: u32, last: Error) -> Error {
        Error::RetriesExhausted {
            location: self.location.display.clone(),
            start: range.start,
            end: range.end,
            attempts,
            last: Box::new(last),
        }
    }

    /// A xorshift step for jitter (not for anything secret).
    fn random(&self) -> u64 {
        let mut x = self.jitter.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.jitter.store(x, Ordering::Relaxed);
        x
    }
}

/// A nonzero seed for the backoff jitter, from the clock (not for anything secret).
fn jitter_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0x9e37_79b9, |elapsed| {
            u64::from(elapsed.subsec_nanos()) ^ elapsed.as_secs()
        })
        | 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_to_its_bound_and_jitter_stays_below_it() {
        let retry = Retry::default();
        for (retry_number, bound_ms) in [(1, 100), (2, 200), (3, 400), (4, 800), (10, 5000)] {
            for random in [0, 1, 12_345, u64::MAX] {
                let delay = retry.delay(retry_number, random);
                assert!(delay <= Duration::from_millis(bound_ms), "{delay:?}");
            }
        }
        assert_eq!(retry.delay(40, 0), Duration::ZERO);
    }
}
