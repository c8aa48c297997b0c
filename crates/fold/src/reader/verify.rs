//! Verification and repair of a whole file (002 §8, §7.8): every chunk by every rule, the
//! manifest hash, the ECC parity itself, and a repaired copy. The read path these build on
//! (bounds, ECC, digests, decompression) is the parent module's.

use super::*;

/// The outcome of verifying one chunk.
#[derive(Debug)]
pub struct ChunkReport {
    /// Chunk name.
    pub name: String,
    /// `Ok(bytes corrected by ECC)` or the first rule that failed.
    pub result: Result<usize>,
}

/// The outcome of verifying a whole file.
#[derive(Debug)]
pub struct VerifyReport {
    /// `manifest_hash` check (002 §6).
    pub manifest: Result<()>,
    /// One report per chunk, in index order.
    pub chunks: Vec<ChunkReport>,
}

impl VerifyReport {
    /// True when every rule held.
    #[must_use]
    pub fn is_ok(&self) -> bool {
        self.manifest.is_ok() && self.chunks.iter().all(|c| c.result.is_ok())
    }
}

impl<S: Source> FoldReader<S> {
    /// Checks a chunk's ECC bytes themselves: the indices of codewords whose stored parity does not
    /// match their (read, uncorrected) data. Damage confined to ECC bytes leaves the CRC32C intact,
    /// so [`FoldReader::verify_chunk`] does not see it, but it lowers the protection left;
    /// `fold repair` rewrites the parity. Empty for intact chunks and chunks without ECC.
    ///
    /// # Errors
    /// The checks that precede reading (limits, bounds, header agreement, `ecc_len`).
    pub fn damaged_parity(&self, name: &str) -> Result<Vec<u64>> {
        let (_, e) = self.entry(name)?;
        if e.ecc == Ecc::None {
            return Ok(Vec::new());
        }
        let mut buf = Vec::new();
        let (n, comp_len, _, _, _) = self.load_into(&self.src, e, &mut buf, false, true)?;
        let (comp, ecc) = buf[..n].split_at(comp_len);
        Ok(e.ecc.damaged_codewords(comp, ecc))
    }

    /// Verifies one chunk by every rule, keeping no output; returns the bytes ECC corrected.
    ///
    /// # Errors
    /// The first failed rule for this chunk.
    pub fn verify_chunk(&self, name: &str) -> Result<usize> {
        let (i, _) = self.entry(name)?;
        self.verify_entry(i, &mut Vec::new(), true)
    }

    fn verify_entry(&self, i: usize, buf: &mut Vec<u8>, pipelined: bool) -> Result<usize> {
        let (_, comp_len, corrected, filled) =
            self.stored_into(&self.src, i, buf, pipelined, false)?;
        let e = &self.index.chunks[i];
        let comp = if filled {
            &buf[..comp_len]
        } else {
            &Self::body_of(&self.src, e).unwrap_or_default()[..comp_len]
        };
        Self::check_decoded_len(e, comp)?;
        Ok(corrected)
    }

    /// Verifies every chunk and the manifest hash, on two threads with the `parallel` feature
    /// (chunks are handed out one at a time, so sizes may differ). `progress` is called with the
    /// stored size of each chunk as it completes.
    #[must_use]
    pub fn verify_all(&self, progress: &(dyn Fn(u64) + Sync)) -> VerifyReport {
        let n = self.index.chunks.len();
        // Each worker reuses one buffer; chunks are already spread over both cores, so the
        // per-chunk read / hash pipeline is off here.
        let run = |i: usize, buf: &mut Vec<u8>| {
            let e = &self.index.chunks[i];
            let result = self.verify_entry(i, buf, false);
            progress(e.comp_len.saturating_add(e.ecc_len));
            result
        };
        let results: Vec<Result<usize>> = {
            #[cfg(all(feature = "parallel", not(target_arch = "wasm32")))]
            {
                use std::sync::Mutex;
                use std::sync::atomic::{AtomicUsize, Ordering};
                let next = AtomicUsize::new(0);
                let slots: Mutex<Vec<Option<Result<usize>>>> =
                    Mutex::new((0..n).map(|_| None).collect());
                let worker = || {
                    let mut buf = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break;
                        }
                        let r = run(i, &mut buf);
                        if let Ok(mut s) = slots.lock() {
                            s[i] = Some(r);
                        }
                    }
                };
                std::thread::scope(|s| {
                    s.spawn(worker);
                    worker();
                });
                slots
                    .into_inner()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .into_iter()
                    .map(|r| {
                        r.unwrap_or_else(|| {
                            Err(Error::Io(std::io::Error::other(
                                "verification thread failed",
                            )))
                        })
                    })
                    .collect()
            }
            #[cfg(not(all(feature = "parallel", not(target_arch = "wasm32"))))]
            {
                let mut buf = Vec::new();
                (0..n).map(|i| run(i, &mut buf)).collect()
            }
        };
        VerifyReport {
            manifest: self.check_manifest(),
            chunks: self
                .index
                .chunks
                .iter()
                .zip(results)
                .map(|(e, result)| ChunkReport {
                    name: e.name.clone(),
                    result,
                })
                .collect(),
        }
    }

    /// Writes a repaired copy: every byte of the file in order, with each chunk's payload replaced
    /// by its ECC-corrected, verified bytes and its ECC bytes recomputed. Gaps between regions and
    /// the index are copied unchanged, so a file whose damage was all correctable comes out
    /// byte-identical to the original. Returns the bytes corrected.
    ///
    /// # Errors
    /// The first chunk that fails verification after ECC, overlapping chunks, or I/O.
    pub fn repair_into<W: std::io::Write>(&self, out: &mut W) -> Result<usize> {
        let mut order: Vec<usize> = (0..self.index.chunks.len()).collect();
        order.sort_by_key(|&i| self.index.chunks[i].offset);
        let mut pos: u64 = 0;
        let mut fixed = 0;
        let copy = |from: u64, to: u64, out: &mut W| -> Result<()> {
            let mut at = from;
            while at < to {
                let n = (to - at).min(1 << 22);
                let buf = read_range(&self.src, self.file_len, Region::Index, None, at, n)?;
                out.write_all(&buf)?;
                at += n;
            }
            Ok(())
        };
        let mut prev: Option<&ChunkEntry> = None;
        let index_start = self.header.index_off;
        let index_end = index_start.saturating_add(self.header.index_len);
        for i in order {
            let e = &self.index.chunks[i];
            // Rewriting ECC bytes that overlap the index would corrupt the index in the copy.
            let end = e.end().unwrap_or(u64::MAX);
            if e.offset < index_end && end > index_start {
                return Err(Error::OverlappingChunks {
                    first: e.name.clone(),
                    second: "(index)".to_owned(),
                });
            }
            if e.offset < pos {
                return Err(Error::OverlappingChunks {
                    first: prev.map(|p| p.name.clone()).unwrap_or_default(),
                    second: e.name.clone(),
                });
            }
            let stored = self.stored(&self.src, i)?;
            Self::check_decoded_len(e, &stored.comp)?;
            fixed += stored.corrected;
            copy(pos, e.offset, out)?;
            let hdr_end = e.offset + u64::from(CHUNK_HEADER_LEN);
            copy(e.offset, hdr_end, out)?;
            out.write_all(&stored.comp)?;
            out.write_all(&e.ecc.encode(&stored.comp))?;
            pos = e.end().unwrap_or(u64::MAX);
            prev = Some(e);
        }
        copy(pos, self.file_len, out)?;
        out.flush()?;
        Ok(fixed)
    }

    #[cfg(feature = "signature")]
    /// Verifies pyfolds' Ed25519 `metadata.signature` under `public_key_pem`.
    ///
    /// # Errors
    /// [`Error::Signature`].
    pub fn verify_signature(&self, public_key_pem: &str) -> Result<()> {
        crate::signature::verify(&self.index.metadata, public_key_pem)
    }
}
