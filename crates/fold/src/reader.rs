//! The read algorithm of 002 §7 and the validation rules of §8 / §9.
//!
//! Order for one chunk, each step a typed error: size limits (§9.2) → bounds (§8.2) → chunk header
//! equal to the index entry → `ecc_len` consistent with `ecc_algo` → read → ECC (§7.8) → CRC32C
//! against the chunk header and SHA-256 against the index (§8.3) → `chunk_hashes` and
//! `manifest_hash` → bounded decompression → exact `uncomp_len` (§8.4).
//!
//! ECC decoding runs only when the bytes do not already match their CRC32C: a Reed-Solomon decode
//! of an intact codeword is the identity, so the result is the same as §7's unconditional order,
//! the syndrome pass is saved, and pyfolds' multi-codeword files (whose ECC layout is broken) still
//! read when intact. Whatever ECC returns is always checked by CRC32C and SHA-256 before use.

use sha2::{Digest, Sha256};

use crate::compress::{self, DecompressError};
use crate::ecc::Ecc;
use crate::error::{ChunkField, Error, Region, Result};
use crate::format::{
    CHUNK_HEADER_LEN, ChunkHeader, Compression, GLOBAL_HEADER_LEN, GlobalHeader, MAX_CHUNK_SIZE,
};
use crate::index::{ChunkEntry, Index, parse_index};
use crate::source::Source;
use strict_json::NameTable;

mod verify;
pub use verify::{ChunkReport, VerifyReport};

/// Limits applied while reading (002 §9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// Largest `comp_len`, `uncomp_len` or `ecc_len` accepted; [`MAX_CHUNK_SIZE`] by default.
    /// Raising it is the explicit override of 002 §9.2.
    pub max_chunk_size: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        Self {
            max_chunk_size: MAX_CHUNK_SIZE,
        }
    }
}

/// A chunk's stored bytes after ECC and integrity checks (before decompression).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredChunk {
    /// The verified stored payload (`comp_len` bytes).
    pub comp: Vec<u8>,
    /// Bytes ECC corrected (0 when the payload was intact).
    pub corrected: usize,
}

/// A `.fold` / `.mind` file opened for reading: header and index parsed, no chunk read yet.
#[derive(Debug)]
pub struct FoldReader<S> {
    src: S,
    file_len: u64,
    header: GlobalHeader,
    index: Index,
    opts: ReadOptions,
    /// `(expected, computed)` when `manifest_hash` does not hold; computed once at open.
    manifest_mismatch: Option<(String, [u8; 32])>,
    /// Positions of the index's chunks by name (O(1) lookups; issue 14 §2).
    names: NameTable,
    /// Per chunk, whether `metadata.chunk_hashes` disagrees with its `sha256`; computed at open.
    chunk_hashes_mismatch: Vec<bool>,
}

fn read_range<S: Source>(
    src: &S,
    file_len: u64,
    region: Region,
    chunk: Option<&str>,
    offset: u64,
    len: u64,
) -> Result<Vec<u8>> {
    let truncated = || Error::Truncated {
        region,
        chunk: chunk.map(str::to_owned),
        offset,
        len,
        file_len,
    };
    let end = offset.checked_add(len).ok_or_else(truncated)?;
    if end > file_len {
        return Err(truncated());
    }
    // The length is now bounded by bytes that exist, so this allocation is backed by input.
    let n = usize::try_from(len).map_err(|_| truncated())?;
    let mut buf = vec![0_u8; n];
    src.read_exact_at(offset, &mut buf).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            truncated()
        } else {
            Error::Io(e)
        }
    })?;
    Ok(buf)
}

/// CRC32C and SHA-256 of `data`, on two threads for large inputs when `parallel` is asked for
/// and the `parallel` feature is on (SHA-256 is the floor; CRC32C runs beside it).
fn digests(data: &[u8], parallel: bool) -> (u32, [u8; 32]) {
    #[cfg(all(feature = "parallel", not(target_arch = "wasm32")))]
    if parallel && data.len() >= PARALLEL_MIN {
        return std::thread::scope(|s| {
            let crc = s.spawn(|| crc32c::crc32c(data));
            let sha: [u8; 32] = Sha256::digest(data).into();
            (crc.join().unwrap_or_else(|_| crc32c::crc32c(data)), sha)
        });
    }
    let _ = parallel;
    (crc32c::crc32c(data), Sha256::digest(data).into())
}

/// CRC32C and SHA-256 of `data` while `side` runs on the same bytes: with the `parallel` feature
/// SHA-256 (the floor) and `side` each get a thread and CRC32C runs on this one, so a side job
/// that mostly waits (writing and fsyncing a file) hides behind the hash.
#[cfg(all(feature = "std-fs", not(target_arch = "wasm32")))]
fn digests_alongside<T: Send>(
    data: &[u8],
    side: impl FnOnce(&[u8]) -> T + Send,
) -> (u32, [u8; 32], T) {
    #[cfg(feature = "parallel")]
    {
        std::thread::scope(|s| {
            let sha = s.spawn(|| <[u8; 32]>::from(Sha256::digest(data)));
            let side = s.spawn(|| side(data));
            let crc = crc32c::crc32c(data);
            let sha = sha
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            let out = side
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (crc, sha, out)
        })
    }
    #[cfg(not(feature = "parallel"))]
    {
        let (crc, sha) = digests(data, false);
        (crc, sha, side(data))
    }
}

/// Copies `src` (a chunk body held in memory) into `dst` and digests its first `comp_len` bytes:
/// with `pipelined` (and the `parallel` feature) SHA-256 runs on a second thread over the source
/// while this thread copies and runs CRC32C block by block on the copy, still in cache, so the
/// copy hides behind the hash.
fn copy_digest(src: &[u8], dst: &mut [u8], comp_len: usize, pipelined: bool) -> (u32, [u8; 32]) {
    #[cfg(all(feature = "parallel", not(target_arch = "wasm32")))]
    if pipelined && comp_len >= PARALLEL_MIN {
        return std::thread::scope(|s| {
            let payload = &src[..comp_len];
            let sha = s.spawn(move || <[u8; 32]>::from(Sha256::digest(payload)));
            let mut crc = 0_u32;
            let mut pos = 0_usize;
            for (to, from) in dst
                .chunks_mut(PIPELINE_BLOCK)
                .zip(src.chunks(PIPELINE_BLOCK))
            {
                to.copy_from_slice(from);
                let part = &to[..to.len().min(comp_len.saturating_sub(pos))];
                crc = crc32c::crc32c_append(crc, part);
                pos += to.len();
            }
            let sha = sha
                .join()
                .unwrap_or_else(|_| Sha256::digest(&dst[..comp_len]).into());
            (crc, sha)
        });
    }
    let _ = pipelined;
    dst.copy_from_slice(src);
    (
        crc32c::crc32c(&dst[..comp_len]),
        Sha256::digest(&dst[..comp_len]).into(),
    )
}

/// Fills `body` from `offset` and digests its first `comp_len` bytes. With `pipelined` (and the
/// `parallel` feature) reading and SHA-256 overlap: this thread reads block after block and runs
/// CRC32C, a second thread hashes each block as soon as it is read, so a chunk read costs about
/// one SHA-256 pass over its bytes.
fn read_digest<S: Source>(
    src: &S,
    offset: u64,
    body: &mut [u8],
    comp_len: usize,
    pipelined: bool,
) -> std::io::Result<(u32, [u8; 32])> {
    #[cfg(all(feature = "parallel", not(target_arch = "wasm32")))]
    if pipelined && comp_len >= PARALLEL_MIN {
        return std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<&[u8]>(8);
            let hasher = s.spawn(move || {
                let mut h = Sha256::new();
                for block in rx {
                    h.update(block);
                }
                <[u8; 32]>::from(h.finalize())
            });
            let mut crc = 0_u32;
            let mut pos = 0_usize;
            let mut result = Ok(());
            for block in body.chunks_mut(PIPELINE_BLOCK) {
                if let Err(e) = src.read_exact_at(offset + pos as u64, block) {
                    result = Err(e);
                    break;
                }
                let block: &[u8] = block;
                let payload = &block[..block.len().min(comp_len.saturating_sub(pos))];
                pos += block.len();
                if payload.is_empty() {
                    continue;
                }
                crc = crc32c::crc32c_append(crc, payload);
                if tx.send(payload).is_err() {
                    break;
                }
            }
            drop(tx);
            let sha = hasher
                .join()
                .map_err(|_| std::io::Error::other("hashing thread failed"))?;
            result.map(|()| (crc, sha))
        });
    }
    let _ = pipelined;
    src.read_exact_at(offset, body)?;
    let payload = body.get(..comp_len).unwrap_or(&[]);
    Ok((crc32c::crc32c(payload), Sha256::digest(payload).into()))
}

/// Below this size a thread costs more than it saves.
#[cfg(all(feature = "parallel", not(target_arch = "wasm32")))]
const PARALLEL_MIN: usize = 1 << 20;

/// Block size of the read / hash pipeline.
#[cfg(all(feature = "parallel", not(target_arch = "wasm32")))]
const PIPELINE_BLOCK: usize = 1 << 20;

/// 002 §3: chunks follow the header back to back, then the index. Refuses, at open, any two
/// chunks whose byte ranges (`offset .. offset + 32 + comp_len + ecc_len`) overlap, and any chunk
/// that overlaps the index [`Error::OverlappingChunks`]. Without this, `n` entries naming one
/// large chunk make `verify` hash and decode it `n` times (issue 14 §2). pyfolds writes each
/// chunk where the previous ended, so its files never overlap.
///
/// Chunks that start inside the global header or end past the file fail their own rule when
/// read (§8.2) and are left out here. Sorting makes this O(n log n).
fn check_chunk_ranges(index: &Index, header: &GlobalHeader, file_len: u64) -> Result<()> {
    let mut ranges: Vec<(u64, u64, &str)> = index
        .chunks
        .iter()
        .filter(|e| e.offset >= u64::from(GLOBAL_HEADER_LEN))
        .filter_map(|e| Some((e.offset, e.end()?, e.name.as_str())))
        .filter(|&(_, end, _)| end <= file_len)
        .collect();
    // The index is part of the layout: a chunk range overlapping it is refused alike.
    let index_end = header.index_off.saturating_add(header.index_len);
    if header.index_len > 0 {
        ranges.push((header.index_off, index_end, "(index)"));
    }
    ranges.sort_unstable_by_key(|&(start, end, _)| (start, end));
    for pair in ranges.windows(2) {
        let (first, second) = (pair[0], pair[1]);
        if second.0 < first.1 {
            return Err(Error::OverlappingChunks {
                first: first.2.to_owned(),
                second: second.2.to_owned(),
            });
        }
    }
    Ok(())
}

impl<S: Source> FoldReader<S> {
    /// Opens with the default limits: reads and checks the global header (002 §8.1) and parses
    /// the index (§6, §7.3-7.4). Reads no chunk.
    ///
    /// ```
    /// use fold::{Compression, FoldReader, FoldWriter, WriteOptions};
    /// let opts = WriteOptions { compression: Compression::None, ..WriteOptions::default() };
    /// let mut w = FoldWriter::new(std::io::Cursor::new(Vec::new()), opts).unwrap();
    /// w.add_chunk("notes", "JSON", b"{\"a\":1}").unwrap();
    /// let bytes = w.finish(Vec::new(), 1_700_000_000.0).unwrap().into_inner();
    /// let r = FoldReader::open(bytes).unwrap();
    /// assert_eq!(r.read_chunk("notes").unwrap(), b"{\"a\":1}");
    /// ```
    ///
    /// # Errors
    /// Any header or index rule ([`Error::BadMagic`], [`Error::Truncated`],
    /// [`Error::IndexJson`], [`Error::IndexSchema`], ...).
    pub fn open(src: S) -> Result<Self> {
        Self::open_with(src, ReadOptions::default())
    }

    /// Opens with explicit limits (see [`FoldReader::open`]).
    ///
    /// # Errors
    /// As [`FoldReader::open`].
    pub fn open_with(src: S, opts: ReadOptions) -> Result<Self> {
        let file_len = src.len();
        let raw = read_range(
            &src,
            file_len,
            Region::GlobalHeader,
            None,
            0,
            u64::from(GLOBAL_HEADER_LEN),
        )?;
        let mut hb = [0_u8; 28];
        hb.copy_from_slice(&raw);
        let header = GlobalHeader::parse(&hb)?;
        let raw_index = read_range(
            &src,
            file_len,
            Region::Index,
            None,
            header.index_off,
            header.index_len,
        )?;
        let index = parse_index(&raw_index)?;
        check_chunk_ranges(&index, &header, file_len)?;
        let manifest_mismatch = match index.check_manifest_hash() {
            Err(Error::ManifestHashMismatch { expected, actual }) => Some((expected, actual)),
            _ => None,
        };
        Ok(Self {
            manifest_mismatch,
            names: index.name_table(),
            chunk_hashes_mismatch: index.chunk_hashes_mismatches(),
            src,
            file_len,
            header,
            index,
            opts,
        })
    }

    /// The parsed index.
    #[must_use]
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// The global header.
    #[must_use]
    pub fn header(&self) -> GlobalHeader {
        self.header
    }

    /// Length of the source.
    #[must_use]
    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// The source.
    #[must_use]
    pub fn source(&self) -> &S {
        &self.src
    }

    /// The position and entry of the chunk named `name`, in O(1).
    pub(crate) fn entry(&self, name: &str) -> Result<(usize, &ChunkEntry)> {
        let chunks = &self.index.chunks;
        self.names
            .find(name, |p| &chunks[p].name)
            .map(|p| (p, &chunks[p]))
            .ok_or_else(|| Error::ChunkNotFound {
                name: name.to_owned(),
            })
    }

    /// The first rules of a chunk read, which need none of its bytes: the size limits (§9.2) and
    /// the offset past the global header.
    pub(crate) fn check_limits(&self, e: &ChunkEntry) -> Result<()> {
        let name = || e.name.clone();
        let max = self.opts.max_chunk_size;
        for (field, value) in [
            (ChunkField::CompLen, e.comp_len),
            (ChunkField::UncompLen, e.uncomp_len),
            (ChunkField::EccLen, e.ecc_len),
        ] {
            if value > max {
                return Err(Error::ChunkTooLarge {
                    chunk: name(),
                    field,
                    value,
                    max,
                });
            }
        }
        if e.offset < u64::from(GLOBAL_HEADER_LEN) {
            return Err(Error::ChunkInsideHeader {
                chunk: name(),
                offset: e.offset,
            });
        }
        Ok(())
    }

    /// The checks that precede reading a chunk's body: limits, bounds, chunk header equal to the
    /// index entry, known flags, `ecc_len` consistent with `ecc_algo`. Returns the body's offset,
    /// its length (`comp_len + ecc_len`) and `comp_len`, both checked to fit in `usize`.
    fn check_layout<T: Source>(&self, src: &T, e: &ChunkEntry) -> Result<(u64, usize, usize)> {
        let name = || e.name.clone();
        self.check_limits(e)?;
        let hdr_raw = read_range(
            src,
            self.file_len,
            Region::ChunkHeader,
            Some(&e.name),
            e.offset,
            u64::from(CHUNK_HEADER_LEN),
        )?;
        let body_off = e.offset + u64::from(CHUNK_HEADER_LEN);
        let body_len = e.comp_len.saturating_add(e.ecc_len);
        if body_off
            .checked_add(body_len)
            .is_none_or(|end| end > self.file_len)
        {
            return Err(Error::Truncated {
                region: Region::ChunkBody,
                chunk: Some(name()),
                offset: body_off,
                len: body_len,
                file_len: self.file_len,
            });
        }
        let mut hb = [0_u8; 32];
        hb.copy_from_slice(&hdr_raw);
        let h = ChunkHeader::parse(&hb);
        if h.ctype != e.ctype {
            return Err(Error::CtypeMismatch {
                chunk: name(),
                offset: e.offset,
                header: h.ctype,
                index: e.ctype,
            });
        }
        for (field, header, index) in [
            (
                ChunkField::HeaderLen,
                u64::from(CHUNK_HEADER_LEN),
                e.header_len,
            ),
            (ChunkField::Flags, u64::from(h.flags), e.flags),
            (ChunkField::UncompLen, h.uncomp_len, e.uncomp_len),
            (ChunkField::CompLen, h.comp_len, e.comp_len),
            (ChunkField::Crc32c, u64::from(h.crc32c), u64::from(e.crc32c)),
            (ChunkField::EccLen, u64::from(h.ecc_len), e.ecc_len),
        ] {
            if header != index {
                return Err(Error::HeaderIndexMismatch {
                    chunk: name(),
                    offset: e.offset,
                    field,
                    header,
                    index,
                });
            }
        }
        if Compression::from_flag(e.flags).is_none() {
            return Err(Error::UnknownFlags {
                chunk: name(),
                flags: e.flags,
            });
        }
        let expected_ecc = e.ecc.ecc_len(e.comp_len);
        if e.ecc_len != expected_ecc {
            return Err(Error::BadEccLen {
                chunk: name(),
                algo: e.ecc,
                expected: expected_ecc,
                found: e.ecc_len,
            });
        }
        let truncated = || Error::Truncated {
            region: Region::ChunkBody,
            chunk: Some(e.name.clone()),
            offset: body_off,
            len: body_len,
            file_len: self.file_len,
        };
        // Both fit in usize: body_off + body_len <= file_len was checked, and the source holds
        // file_len bytes.
        let n = usize::try_from(body_len).map_err(|_| truncated())?;
        let comp_len = usize::try_from(e.comp_len).map_err(|_| truncated())?;
        Ok((body_off, n, comp_len))
    }

    /// Checks limits, bounds and header agreement ([`Self::check_layout`]), then digests the
    /// payload. For a source held in memory (a mapping) the digests are taken in place, and
    /// `comp || ecc` is copied into `buf` only when `copy` is set; other sources are always read
    /// into `buf` (grown to the body length, which is bounded by the bytes present). Returns the
    /// body length, `comp_len`, CRC32C, SHA-256, and whether `buf` holds the body.
    fn load_into<T: Source>(
        &self,
        src: &T,
        e: &ChunkEntry,
        buf: &mut Vec<u8>,
        pipelined: bool,
        copy: bool,
    ) -> Result<(usize, usize, u32, [u8; 32], bool)> {
        let (body_off, n, comp_len) = self.check_layout(src, e)?;
        let truncated = || Error::Truncated {
            region: Region::ChunkBody,
            chunk: Some(e.name.clone()),
            offset: body_off,
            len: n as u64,
            file_len: self.file_len,
        };
        if let Some(body) = Self::body_slice(src, body_off, n) {
            if !copy {
                // With `pipelined`, CRC32C runs on a second thread ahead of SHA-256, taking the
                // page faults of a fresh mapping out of the hashing thread's way.
                let (crc, sha) = digests(&body[..comp_len], pipelined);
                return Ok((n, comp_len, crc, sha, false));
            }
            if buf.len() < n {
                *buf = vec![0_u8; n];
            }
            let (crc, sha) = copy_digest(body, &mut buf[..n], comp_len, pipelined);
            return Ok((n, comp_len, crc, sha, true));
        }
        if buf.len() < n {
            // A fresh zeroed allocation (calloc: pages are zeroed lazily by the OS as the read
            // fills them) costs less than half of `resize`, which writes every zero first.
            *buf = vec![0_u8; n];
        }
        let (crc, sha) =
            read_digest(src, body_off, &mut buf[..n], comp_len, pipelined).map_err(|err| {
                if err.kind() == std::io::ErrorKind::UnexpectedEof {
                    truncated()
                } else {
                    Error::Io(err)
                }
            })?;
        Ok((n, comp_len, crc, sha, true))
    }

    /// `len` bytes at `offset` of a source held in memory (the range was bounds-checked against
    /// the file length, which is the slice's length).
    fn body_slice<T: Source>(src: &T, offset: u64, len: usize) -> Option<&[u8]> {
        let start = usize::try_from(offset).ok()?;
        src.as_slice()?.get(start..start.checked_add(len)?)
    }

    /// The body of a chunk whose limits and bounds `load_into` has checked.
    fn body_of<'a, T: Source>(src: &'a T, e: &ChunkEntry) -> Option<&'a [u8]> {
        let len = usize::try_from(e.comp_len.saturating_add(e.ecc_len)).ok()?;
        Self::body_slice(src, e.offset.checked_add(u64::from(CHUNK_HEADER_LEN))?, len)
    }

    /// Reads a chunk's stored payload, applies ECC when needed and checks integrity (002 §7.6-7.9,
    /// §8.2-8.3). Does not decompress.
    ///
    /// # Errors
    /// The first failed rule for this chunk.
    pub fn read_stored(&self, name: &str) -> Result<StoredChunk> {
        let (i, _) = self.entry(name)?;
        self.stored(&self.src, i)
    }

    /// [`Self::read_stored`] of the chunk at position `i` of the index.
    fn stored<T: Source>(&self, src: &T, i: usize) -> Result<StoredChunk> {
        let mut body = Vec::new();
        let (_, comp_len, corrected, _) = self.stored_into(src, i, &mut body, true, true)?;
        body.truncate(comp_len);
        Ok(StoredChunk {
            comp: body,
            corrected,
        })
    }

    /// [`Self::load_into`], then ECC and the integrity rules. Returns body length, `comp_len`, the
    /// bytes corrected and whether `buf` holds the body; the verified payload is `buf[..comp_len]`
    /// if so, else the first `comp_len` bytes of [`Self::body_of`].
    fn stored_into<T: Source>(
        &self,
        src: &T,
        i: usize,
        buf: &mut Vec<u8>,
        pipelined: bool,
        copy: bool,
    ) -> Result<(usize, usize, usize, bool)> {
        let e = &self.index.chunks[i];
        let (n, comp_len, mut crc, mut sha, mut filled) =
            self.load_into(src, e, buf, pipelined, copy)?;
        let mut corrected = 0;
        if crc != e.crc32c && e.ecc != Ecc::None {
            if !filled {
                // Correction works on a copy; the mapping is never written.
                let body = Self::body_of(src, e).unwrap_or_default();
                buf.clear();
                buf.extend_from_slice(body);
                filled = true;
            }
            let body = &mut buf[..n];
            let (comp, ecc) = body.split_at_mut(comp_len);
            corrected = e.ecc.correct(comp, ecc).map_err(|codeword| {
                let per = e.ecc.data_per_codeword().unwrap_or(1);
                Error::EccUncorrectable {
                    chunk: e.name.clone(),
                    codeword,
                    offset: e.offset + u64::from(CHUNK_HEADER_LEN) + codeword * per,
                }
            })?;
            (crc, sha) = digests(&body[..comp_len], true);
        }
        self.check_digests(i, crc, sha)?;
        Ok((n, comp_len, corrected, filled))
    }

    /// The integrity rules after ECC, in order: CRC32C against the chunk header, SHA-256 against
    /// the index (§8.3), then `chunk_hashes` and `manifest_hash` (both computed at open).
    fn check_digests(&self, i: usize, crc: u32, sha: [u8; 32]) -> Result<()> {
        let e = &self.index.chunks[i];
        if crc != e.crc32c {
            return Err(Error::CrcMismatch {
                chunk: e.name.clone(),
                offset: e.offset,
                expected: e.crc32c,
                actual: crc,
            });
        }
        if sha != e.sha256 {
            return Err(Error::Sha256Mismatch {
                chunk: e.name.clone(),
                offset: e.offset,
                expected: e.sha256,
                actual: sha,
            });
        }
        if self.chunk_hashes_mismatch.get(i).copied().unwrap_or(false) {
            return Err(Error::ChunkHashesMismatch {
                chunk: e.name.clone(),
            });
        }
        self.check_manifest()
    }

    /// The `manifest_hash` result computed once at open.
    fn check_manifest(&self) -> Result<()> {
        match &self.manifest_mismatch {
            None => Ok(()),
            Some((expected, actual)) => Err(Error::ManifestHashMismatch {
                expected: expected.clone(),
                actual: *actual,
            }),
        }
    }

    fn decompress_error(e: &ChunkEntry, err: DecompressError) -> Error {
        match err {
            DecompressError::Corrupt(source) => Error::Decompress {
                chunk: e.name.clone(),
                offset: e.offset,
                source,
            },
            DecompressError::Length { actual, at_least } => Error::UncompLenMismatch {
                chunk: e.name.clone(),
                expected: e.uncomp_len,
                actual,
                at_least,
            },
            DecompressError::Unavailable => Error::ZstdUnavailable {
                chunk: e.name.clone(),
            },
        }
    }

    /// Reads one chunk, verified and decompressed: the full §7 algorithm. Touches only the chunk's
    /// own bytes.
    ///
    /// # Errors
    /// The first failed rule for this chunk.
    pub fn read_chunk(&self, name: &str) -> Result<Vec<u8>> {
        self.read_chunk_in(&self.src, name)
    }

    /// [`FoldReader::read_chunk`] with the chunk's bytes read from `src`.
    pub(crate) fn read_chunk_in<T: Source>(&self, src: &T, name: &str) -> Result<Vec<u8>> {
        let (i, e) = self.entry(name)?;
        if Compression::from_flag(e.flags) == Some(Compression::Zstd) {
            // Decompress straight from a mapping when the bytes needed no correction.
            let mut buf = Vec::new();
            let (_, comp_len, _, filled) = self.stored_into(src, i, &mut buf, true, false)?;
            let comp = if filled {
                &buf[..comp_len]
            } else {
                &Self::body_of(src, e).unwrap_or_default()[..comp_len]
            };
            return compress::zstd_decompress(comp, e.uncomp_len)
                .map_err(|err| Self::decompress_error(e, err));
        }
        let stored = self.stored(src, i)?;
        self.decode(e, stored.comp)
    }

    /// Reads one chunk like [`FoldReader::read_chunk`], without copying when it can: a stored
    /// (uncompressed) chunk of a source held in memory (a memory map, a slice) is verified in
    /// place and borrowed, so reading costs the CRC32C and SHA-256 of its bytes and nothing else.
    /// Compressed chunks, chunks that needed ECC correction and other sources are returned owned.
    ///
    /// # Errors
    /// The first failed rule for this chunk.
    pub fn read_chunk_cow(&self, name: &str) -> Result<std::borrow::Cow<'_, [u8]>> {
        let (i, e) = self.entry(name)?;
        if Compression::from_flag(e.flags) == Some(Compression::None)
            && self.src.as_slice().is_some()
        {
            let mut buf = Vec::new();
            let (_, comp_len, _, filled) = self.stored_into(&self.src, i, &mut buf, true, false)?;
            if filled {
                buf.truncate(comp_len);
                return self.decode(e, buf).map(std::borrow::Cow::Owned);
            }
            let comp = &Self::body_of(&self.src, e).unwrap_or_default()[..comp_len];
            Self::check_decoded_len(e, comp)?;
            return Ok(std::borrow::Cow::Borrowed(comp));
        }
        self.read_chunk(name).map(std::borrow::Cow::Owned)
    }

    /// Verifies the chunk `name` in place while `side` runs on its payload on another thread: for
    /// a writer that writes the bytes while they are hashed and publishes them only after the
    /// verdict (`fs::extract_chunk`). Applies to a chunk stored uncompressed in a source held in
    /// memory; for any other chunk it returns `Ok(None)` without running `side`. It also returns
    /// `Ok(None)` when the payload needs ECC correction, since `side` saw the uncorrected bytes:
    /// the caller discards `side`'s work and reads the chunk the ordinary way.
    ///
    /// `Ok(Some(t))` means every rule [`Self::read_chunk`] checks held for exactly the bytes `side`
    /// was given; an error is the one `read_chunk` reports for this chunk, and `side`'s result is
    /// dropped with it.
    #[cfg(all(feature = "std-fs", not(target_arch = "wasm32")))]
    pub(crate) fn verify_stored_alongside<T: Send>(
        &self,
        name: &str,
        side: impl FnOnce(&[u8]) -> T + Send,
    ) -> Result<Option<T>> {
        let (i, e) = self.entry(name)?;
        if Compression::from_flag(e.flags) != Some(Compression::None) {
            return Ok(None);
        }
        let (body_off, n, comp_len) = self.check_layout(&self.src, e)?;
        let Some(body) = Self::body_slice(&self.src, body_off, n) else {
            return Ok(None);
        };
        let payload = &body[..comp_len];
        let (crc, sha, out) = digests_alongside(payload, side);
        if crc != e.crc32c && e.ecc != Ecc::None {
            return Ok(None);
        }
        self.check_digests(i, crc, sha)?;
        Self::check_decoded_len(e, payload)?;
        Ok(Some(out))
    }

    fn decode(&self, e: &ChunkEntry, comp: Vec<u8>) -> Result<Vec<u8>> {
        match Compression::from_flag(e.flags) {
            Some(Compression::Zstd) => compress::zstd_decompress(&comp, e.uncomp_len)
                .map_err(|err| Self::decompress_error(e, err)),
            _ => {
                if comp.len() as u64 == e.uncomp_len {
                    Ok(comp)
                } else {
                    Err(Error::UncompLenMismatch {
                        chunk: e.name.clone(),
                        expected: e.uncomp_len,
                        actual: comp.len() as u64,
                        at_least: false,
                    })
                }
            }
        }
    }

    /// 002 §8.4 without keeping the output.
    fn check_decoded_len(e: &ChunkEntry, comp: &[u8]) -> Result<()> {
        match Compression::from_flag(e.flags) {
            Some(Compression::Zstd) => compress::zstd_check_len(comp, e.uncomp_len)
                .map_err(|err| Self::decompress_error(e, err)),
            _ if comp.len() as u64 == e.uncomp_len => Ok(()),
            _ => Err(Error::UncompLenMismatch {
                chunk: e.name.clone(),
                expected: e.uncomp_len,
                actual: comp.len() as u64,
                at_least: false,
            }),
        }
    }
}
