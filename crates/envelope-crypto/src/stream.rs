//! The STREAM construction (Hoang, Reyhanitabar, Rogaway, Vizár 2015, as used by age): a payload
//! is cut into fixed-size plaintext segments, each sealed with AES-256-GCM under its own nonce
//! (docs/crypto.md §4).
//!
//! Nonce (12 bytes, big-endian): `chunk (4) || segment counter (7) || last flag (1)`. The chunk
//! ordinal separates the independently encrypted chunks of a STREAMING file, the counter orders
//! segments, and the last flag (0x01 on the final segment only) makes a truncation at a segment
//! boundary fail authentication. Each file has a fresh payload key, so these deterministic nonces
//! never repeat under one key. No segment comes near GCM's 2^36-byte per-nonce limit.

use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes256Gcm, Nonce, Tag};
use core::ops::Range;

use envelope_core::{DecryptionFailure, Error, Result};

/// Bytes of an AES-GCM tag.
pub const TAG_LEN: usize = 16;
/// Bytes of an AES-GCM nonce.
pub const NONCE_LEN: usize = 12;
/// Plaintext bytes per segment that writers use: 64 KiB, as age. Large enough that the per-segment
/// cost (one tag, one GHASH finalisation) is below 0.1 %, small enough to stay in L2 cache while
/// it is encrypted and to make random access to a chunk cheap.
pub const DEFAULT_SEGMENT_SIZE: u32 = 64 * 1024;
/// Smallest segment size a reader accepts (1 KiB).
pub const MIN_SEGMENT_SIZE: u32 = 1024;
/// Largest segment size a reader accepts (16 MiB): a reader may buffer one segment.
pub const MAX_SEGMENT_SIZE: u32 = 16 * 1024 * 1024;
/// Largest segment counter (7 bytes).
const MAX_COUNTER: u64 = (1 << 56) - 1;
/// Streams at least this long are sealed and opened on two threads (feature `parallel`): below
/// it, starting a thread costs more than it saves.
#[cfg(all(feature = "parallel", not(target_arch = "wasm32")))]
const PARALLEL_MIN: usize = 4 << 20;

fn failed() -> Error {
    Error::DecryptionFailed(DecryptionFailure::Failed)
}

/// Ciphertext bytes of a stream of `plaintext_len` bytes: one 16-byte tag per segment, and an
/// empty stream is one empty final segment. `None` on overflow.
#[must_use]
pub fn ciphertext_len(plaintext_len: u64, segment_size: u32) -> Option<u64> {
    let segments = plaintext_len.div_ceil(u64::from(segment_size)).max(1);
    plaintext_len.checked_add(segments.checked_mul(TAG_LEN as u64)?)
}

/// Plaintext bytes of a stream of `ciphertext_len` bytes, or `None` if no plaintext length
/// encrypts to exactly that many bytes.
#[must_use]
pub fn plaintext_len(sealed_len: u64, segment_size: u32) -> Option<u64> {
    let sealed = u64::from(segment_size) + TAG_LEN as u64;
    let segments = sealed_len.div_ceil(sealed).max(1);
    let plain = sealed_len.checked_sub(segments * TAG_LEN as u64)?;
    (ciphertext_len(plain, segment_size) == Some(sealed_len)).then_some(plain)
}

/// The nonce of segment `counter` of chunk `chunk`.
#[must_use]
pub fn nonce(chunk: u32, counter: u64, last: bool) -> [u8; NONCE_LEN] {
    let mut out = [0u8; NONCE_LEN];
    out[..4].copy_from_slice(&chunk.to_be_bytes());
    out[4..11].copy_from_slice(&counter.to_be_bytes()[1..]);
    out[11] = u8::from(last);
    out
}

/// One STREAM (the whole payload, or one chunk of a STREAMING file) under a key and AAD.
pub(crate) struct Stream<'a> {
    pub(crate) cipher: &'a Aes256Gcm,
    pub(crate) aad: &'a [u8],
    pub(crate) segment_size: u32,
    pub(crate) chunk: u32,
}

impl Stream<'_> {
    fn segment(&self) -> usize {
        usize::try_from(self.segment_size).unwrap_or(usize::MAX)
    }

    /// Encrypts `plaintext` into `out`, which must be exactly `ciphertext_len` bytes. Segments are
    /// independent, so with the `parallel` feature (native only) a large stream is sealed on two
    /// threads, each writing its own half of `out`; the bytes are the same either way.
    pub(crate) fn seal_into(&self, plaintext: &[u8], out: &mut [u8]) -> Result<()> {
        let expected = ciphertext_len(plaintext.len() as u64, self.segment_size);
        if expected != Some(out.len() as u64) {
            return Err(Error::ArgumentMismatch {
                what: "STREAM output buffer length",
                expected: expected.unwrap_or(u64::MAX),
                found: out.len() as u64,
            });
        }
        let count = plaintext.len().div_ceil(self.segment()).max(1);
        if count as u64 > MAX_COUNTER + 1 {
            return Err(Error::TooLarge {
                what: "segments of one STREAM",
                size: count as u64,
                max: MAX_COUNTER + 1,
            });
        }
        let segment = self.segment();
        let seal = |out: &mut [u8], range: Range<usize>| -> Result<()> {
            let mut rest = out;
            for index in range {
                let start = (index * segment).min(plaintext.len());
                let piece = &plaintext[start..(start + segment).min(plaintext.len())];
                let (slot, tail) = rest.split_at_mut(piece.len() + TAG_LEN);
                rest = tail;
                let (body, tag_slot) = slot.split_at_mut(piece.len());
                body.copy_from_slice(piece);
                let nonce = nonce(self.chunk, index as u64, index + 1 == count);
                let tag = self
                    .cipher
                    .encrypt_in_place_detached(Nonce::from_slice(&nonce), self.aad, body)
                    .map_err(|_| Error::InvalidArgument("AES-GCM refused a segment"))?;
                tag_slot.copy_from_slice(&tag);
            }
            Ok(())
        };
        let (first, second) = in_halves(out, count, segment + TAG_LEN, seal);
        first.and(second.ok_or(Error::InvalidArgument("a sealing thread panicked"))?)
    }

    /// Decrypts a whole stream, each segment in place in the output (one copy of the bytes); on
    /// two threads for a large stream with the `parallel` feature, like [`Stream::seal_into`].
    ///
    /// # Errors
    /// `DecryptionFailed` (`Failed`) if the length is impossible or any segment fails
    /// authentication (wrong key, tampering, truncation, reordering).
    pub(crate) fn open(&self, ciphertext: &[u8]) -> Result<Vec<u8>> {
        let plain = plaintext_len(ciphertext.len() as u64, self.segment_size).ok_or_else(failed)?;
        let mut out = vec![0u8; usize::try_from(plain).map_err(|_| failed())?];
        let sealed = self.segment() + TAG_LEN;
        let count = ciphertext.len().div_ceil(sealed).max(1);
        // Whether every segment of `range` authenticated.
        let open = |out: &mut [u8], range: Range<usize>| -> bool {
            let mut rest = out;
            for index in range {
                let start = index * sealed;
                let slot = &ciphertext[start..(start + sealed).min(ciphertext.len())];
                let (body, tag) = slot.split_at(slot.len() - TAG_LEN);
                let (target, tail) = rest.split_at_mut(body.len());
                rest = tail;
                target.copy_from_slice(body);
                let nonce = nonce(self.chunk, index as u64, index + 1 == count);
                let opened = self.cipher.decrypt_in_place_detached(
                    Nonce::from_slice(&nonce),
                    self.aad,
                    target,
                    Tag::from_slice(tag),
                );
                if opened.is_err() {
                    return false;
                }
            }
            true
        };
        let (first, second) = in_halves(&mut out, count, self.segment(), open);
        if !(first && second.unwrap_or(false)) {
            // Nothing of a stream that failed anywhere is handed out.
            zeroize::Zeroize::zeroize(&mut out);
            return Err(failed());
        }
        Ok(out)
    }

    /// Decrypts segment by segment, handing each authenticated plaintext segment to `sink` in
    /// order; memory use is one segment.
    pub(crate) fn open_each(
        &self,
        ciphertext: &[u8],
        mut sink: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        plaintext_len(ciphertext.len() as u64, self.segment_size).ok_or_else(failed)?;
        let sealed = self.segment() + TAG_LEN;
        let count = ciphertext.len().div_ceil(sealed).max(1);
        let mut buffer =
            zeroize::Zeroizing::new(Vec::with_capacity(self.segment().min(ciphertext.len())));
        for (index, counter) in (0..count).zip(0u64..) {
            let start = index * sealed;
            let slot = &ciphertext[start..(start + sealed).min(ciphertext.len())];
            let (body, tag) = slot.split_at(slot.len() - TAG_LEN);
            buffer.clear();
            buffer.extend_from_slice(body);
            let nonce = nonce(self.chunk, counter, index + 1 == count);
            self.cipher
                .decrypt_in_place_detached(
                    Nonce::from_slice(&nonce),
                    self.aad,
                    &mut buffer[..],
                    Tag::from_slice(tag),
                )
                .map_err(|_| failed())?;
            sink(&buffer)?;
        }
        Ok(())
    }
}

/// Runs `work` over the segments `0..count` of a stream whose output `out` holds `per_segment`
/// bytes per segment (the last may hold fewer). Segments are independent, so with the `parallel`
/// feature (native only) an output of at least `PARALLEL_MIN` bytes is filled on two threads, each
/// with its own half; the bytes are the same either way. Returns the first half's result and the
/// second's, `None` if its thread panicked (on one thread, the second half is the empty range).
fn in_halves<R: Send>(
    out: &mut [u8],
    count: usize,
    per_segment: usize,
    work: impl Fn(&mut [u8], Range<usize>) -> R + Sync,
) -> (R, Option<R>) {
    #[cfg(all(feature = "parallel", not(target_arch = "wasm32")))]
    if out.len() >= PARALLEL_MIN {
        let half = count / 2;
        let (first, second) = out.split_at_mut(half * per_segment);
        return std::thread::scope(|scope| {
            let other = scope.spawn(|| work(second, half..count));
            (work(first, 0..half), other.join().ok())
        });
    }
    // Only the two-thread path splits by it.
    #[cfg(not(all(feature = "parallel", not(target_arch = "wasm32"))))]
    let _ = per_segment;
    let end = out.len();
    let (all, none) = out.split_at_mut(end);
    (work(all, 0..count), Some(work(none, count..count)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aes_gcm::KeyInit;
    use proptest::prelude::*;

    /// The stream of chunk `chunk` under `cipher`, with the associated data `b"aad"`.
    fn test_stream(cipher: &Aes256Gcm, segment_size: u32, chunk: u32) -> Stream<'_> {
        Stream {
            cipher,
            aad: b"aad",
            segment_size,
            chunk,
        }
    }

    /// Streams above `PARALLEL_MIN` are sealed and opened on two threads: the bytes must be
    /// exactly those of the one-thread path, and a tampered segment in either half must fail the
    /// whole stream.
    #[test]
    fn large_streams_seal_and_open_identically_on_two_threads() {
        let cipher = Aes256Gcm::new(&[9u8; 32].into());
        let stream = test_stream(&cipher, DEFAULT_SEGMENT_SIZE, 3);
        for len in [(4usize << 20) + 17, 5 << 20] {
            let plaintext: Vec<u8> = (0..len).map(|i| u8::try_from(i % 251).unwrap()).collect();
            let sealed_len =
                usize::try_from(ciphertext_len(len as u64, DEFAULT_SEGMENT_SIZE).unwrap()).unwrap();
            let mut two_threads = vec![0u8; sealed_len];
            stream.seal_into(&plaintext, &mut two_threads).unwrap();
            // The one-thread reference: each segment sealed on its own, in order.
            let mut one_thread = Vec::with_capacity(sealed_len);
            let segment = usize::try_from(DEFAULT_SEGMENT_SIZE).unwrap();
            let count = len.div_ceil(segment);
            for (index, piece) in plaintext.chunks(segment).enumerate() {
                let mut body = piece.to_vec();
                let nonce = nonce(3, index as u64, index + 1 == count);
                let tag = cipher
                    .encrypt_in_place_detached(Nonce::from_slice(&nonce), b"aad", &mut body)
                    .unwrap();
                one_thread.extend_from_slice(&body);
                one_thread.extend_from_slice(&tag);
            }
            assert!(
                two_threads == one_thread,
                "sealed bytes differ at length {len}"
            );
            assert!(stream.open(&two_threads).unwrap() == plaintext);
            for at in [100, sealed_len - 100] {
                let mut tampered = two_threads.clone();
                tampered[at] ^= 1;
                assert!(stream.open(&tampered).is_err(), "tamper at {at} of {len}");
            }
        }
    }

    #[test]
    fn lengths_match_the_documented_formula() {
        assert_eq!(ciphertext_len(0, 1024), Some(16));
        assert_eq!(ciphertext_len(1, 1024), Some(17));
        assert_eq!(ciphertext_len(1024, 1024), Some(1040));
        assert_eq!(ciphertext_len(1025, 1024), Some(1057));
        for impossible in [0, 15, 1040 + 1, 1040 + 15] {
            assert_eq!(plaintext_len(impossible, 1024), None, "{impossible}");
        }
        assert_eq!(plaintext_len(1040, 1024), Some(1024));
        // A full segment followed by an empty one is not how 1024 bytes are encoded.
        assert_eq!(plaintext_len(1040 + 16, 1024), None);
    }

    #[test]
    fn nonce_layout_is_chunk_counter_last() {
        assert_eq!(
            nonce(0x0102_0304, 0x0005_0607_0809_0a0b, true),
            [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1]
        );
    }

    proptest! {
        #[test]
        fn lengths_invert(plain in 0u64..1_000_000, segment in 1024u32..5000) {
            let sealed = ciphertext_len(plain, segment).unwrap();
            prop_assert_eq!(plaintext_len(sealed, segment), Some(plain));
        }

        #[test]
        fn seal_then_open_is_identity(len in prop_oneof![0usize..3100, Just(1023), Just(1024), Just(1025), Just(2047), Just(2048), Just(2049)], chunk: u32) {
            let cipher = Aes256Gcm::new(&[7u8; 32].into());
            let stream = test_stream(&cipher, 1024, chunk);
            let plaintext: Vec<u8> = (0..len).map(|i| u8::try_from(i % 251).unwrap()).collect();
            let mut sealed = vec![0u8; usize::try_from(ciphertext_len(len as u64, 1024).unwrap()).unwrap()];
            stream.seal_into(&plaintext, &mut sealed).unwrap();
            prop_assert_eq!(stream.open(&sealed).unwrap(), plaintext);
        }
    }

    #[test]
    fn truncation_reordering_and_chunk_swaps_fail() {
        let cipher = Aes256Gcm::new(&[7u8; 32].into());
        let stream = test_stream(&cipher, 1024, 0);
        let plaintext = vec![0x42u8; 3 * 1024];
        let mut sealed = vec![0u8; 3 * 1040];
        stream.seal_into(&plaintext, &mut sealed).unwrap();
        // Dropping the final segment leaves a valid length whose last segment is not marked last.
        assert!(stream.open(&sealed[..2 * 1040]).is_err());
        let mut swapped = sealed.clone();
        swapped[..1040].copy_from_slice(&sealed[1040..2080]);
        swapped[1040..2080].copy_from_slice(&sealed[..1040]);
        assert!(stream.open(&swapped).is_err());
        let other_chunk = Stream { chunk: 1, ..stream };
        assert!(other_chunk.open(&sealed).is_err());
        let other_aad = Stream {
            aad: b"aae",
            ..other_chunk
        };
        assert!(other_aad.open(&sealed).is_err());
    }
}
