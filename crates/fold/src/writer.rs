//! The writer of 002 §3: a placeholder global header, then `header | payload | ecc` per chunk, the
//! JSON index, and the header rewritten last with the index position. Byte-identical to pyfolds'
//! `FoldWriter` given the same chunks, metadata, settings and `created_at_unix`.

use std::io::{Seek, SeekFrom, Write};

use sha2::{Digest, Sha256};

use crate::ecc::Ecc;
use crate::error::{Error, Result};
use crate::format::{
    CHUNK_HEADER_LEN, ChunkHeader, Compression, DEFAULT_ZSTD_LEVEL, GLOBAL_HEADER_LEN,
    GlobalHeader, MAX_CHUNK_SIZE, MAX_INDEX_SIZE,
};
use crate::index::{ChunkEntry, Index, manifest_hash};
use crate::json::{Map, Value, map_set};
use strict_json::NameTable;

/// How chunks are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteOptions {
    /// Payload compression (pyfolds' default: zstd).
    pub compression: Compression,
    /// zstd level (pyfolds: 3).
    pub zstd_level: i32,
    /// ECC per chunk (pyfolds' default: none).
    pub ecc: Ecc,
}

impl Default for WriteOptions {
    fn default() -> Self {
        Self::new(Compression::Zstd, Ecc::None)
    }
}

impl WriteOptions {
    /// These compression and ECC settings, with pyfolds' zstd level.
    #[must_use]
    pub const fn new(compression: Compression, ecc: Ecc) -> Self {
        Self {
            compression,
            zstd_level: DEFAULT_ZSTD_LEVEL,
            ecc,
        }
    }
}

/// Writes a container to any `Write + Seek` sink (a file, a `Cursor<Vec<u8>>` on wasm32).
#[derive(Debug)]
pub struct FoldWriter<W> {
    out: W,
    pos: u64,
    opts: WriteOptions,
    chunks: Vec<ChunkEntry>,
    /// Positions of `chunks` by name: the duplicate-name check is O(1) per chunk.
    names: NameTable,
}

impl<W: Write + Seek> FoldWriter<W> {
    /// Starts a container: writes the placeholder header (`index_off = index_len = 0`).
    ///
    /// # Errors
    /// I/O.
    pub fn new(mut out: W, opts: WriteOptions) -> Result<Self> {
        let placeholder = GlobalHeader {
            index_off: 0,
            index_len: 0,
        };
        out.write_all(&placeholder.to_bytes())?;
        Ok(Self {
            out,
            pos: u64::from(GLOBAL_HEADER_LEN),
            opts,
            chunks: Vec::new(),
            names: NameTable::default(),
        })
    }

    /// Entries written so far.
    #[must_use]
    pub fn chunks(&self) -> &[ChunkEntry] {
        &self.chunks
    }

    /// Adds a chunk: compress, CRC32C + SHA-256 of the stored bytes, ECC of the stored bytes,
    /// then `header | stored | ecc` (pyfolds' `add_chunk`).
    ///
    /// # Errors
    /// [`Error::InvalidCtype`], [`Error::DuplicateName`], [`Error::ChunkTooLarge`] (payload or
    /// compressed payload above [`MAX_CHUNK_SIZE`]), I/O.
    pub fn add_chunk(&mut self, name: &str, ctype: &str, payload: &[u8]) -> Result<&ChunkEntry> {
        let opts = self.opts;
        self.add_chunk_with(name, ctype, payload, opts.compression, opts.ecc)
    }

    /// [`FoldWriter::add_chunk`] with this chunk's own compression and ECC.
    ///
    /// # Errors
    /// As [`FoldWriter::add_chunk`].
    pub fn add_chunk_with(
        &mut self,
        name: &str,
        ctype: &str,
        payload: &[u8],
        compression: Compression,
        ecc: Ecc,
    ) -> Result<&ChunkEntry> {
        let ctype4: [u8; 4] = ctype
            .as_bytes()
            .try_into()
            .ok()
            .filter(|c: &[u8; 4]| c.is_ascii())
            .ok_or_else(|| Error::InvalidCtype(ctype.to_owned()))?;
        if self.names.find(name, |p| &self.chunks[p].name).is_some() {
            return Err(Error::DuplicateName(name.to_owned()));
        }
        let too_large = |field, value: u64| Error::ChunkTooLarge {
            chunk: name.to_owned(),
            field,
            value,
            max: MAX_CHUNK_SIZE,
        };
        let uncomp_len = payload.len() as u64;
        if uncomp_len > MAX_CHUNK_SIZE {
            return Err(too_large(crate::ChunkField::UncompLen, uncomp_len));
        }
        let compressed;
        let comp: &[u8] = match compression {
            Compression::None => payload,
            Compression::Zstd => {
                compressed = crate::compress::zstd_compress(payload, self.opts.zstd_level)?;
                &compressed
            }
        };
        let comp_len = comp.len() as u64;
        if comp_len > MAX_CHUNK_SIZE {
            return Err(too_large(crate::ChunkField::CompLen, comp_len));
        }
        let ecc_bytes = ecc.encode(comp);
        let ecc_len = u32::try_from(ecc_bytes.len())
            .map_err(|_| too_large(crate::ChunkField::EccLen, ecc_bytes.len() as u64))?;
        let crc32c = crc32c::crc32c(comp);
        let sha256: [u8; 32] = Sha256::digest(comp).into();
        let header = ChunkHeader {
            ctype: ctype4,
            flags: compression.flag(),
            uncomp_len,
            comp_len,
            crc32c,
            ecc_len,
        };
        self.out.write_all(&header.to_bytes())?;
        self.out.write_all(comp)?;
        self.out.write_all(&ecc_bytes)?;
        let entry = ChunkEntry {
            name: name.to_owned(),
            ctype: ctype4,
            flags: u64::from(compression.flag()),
            offset: self.pos,
            header_len: u64::from(CHUNK_HEADER_LEN),
            comp_len,
            uncomp_len,
            crc32c,
            sha256,
            ecc,
            ecc_len: u64::from(ecc_len),
        };
        self.pos += u64::from(CHUNK_HEADER_LEN) + comp_len + u64::from(ecc_len);
        let chunks = &self.chunks;
        let _ = self.names.insert(name, chunks.len(), |p| &chunks[p].name);
        self.chunks.push(entry);
        Ok(self
            .chunks
            .last()
            .unwrap_or_else(|| unreachable!("just pushed")))
    }

    /// Writes the index and rewrites the header (pyfolds' `finalize`): `metadata.chunk_hashes`
    /// is set (in place if the key exists, like a Python dict), then `manifest_hash` over the rest.
    /// A caller-supplied `manifest_hash` is dropped first (pyfolds would hash the stale value and
    /// write a file whose hash never verifies). Returns the sink, flushed.
    ///
    /// # Errors
    /// [`Error::IndexTooLarge`], I/O.
    pub fn finish(mut self, metadata: Map, created_at_unix: f64) -> Result<W> {
        let mut metadata: Map = metadata
            .into_iter()
            .filter(|(k, _)| k != "manifest_hash")
            .collect();
        let hashes: Map = self
            .chunks
            .iter()
            .map(|c| (c.name.clone(), Value::String(hex::encode(c.sha256))))
            .collect();
        map_set(&mut metadata, "chunk_hashes", Value::Object(hashes));
        let manifest = manifest_hash(&metadata);
        map_set(
            &mut metadata,
            "manifest_hash",
            Value::String(hex::encode(manifest)),
        );
        let mut index = Index::new(created_at_unix);
        index.metadata = metadata;
        index.chunks = std::mem::take(&mut self.chunks);
        let bytes = index.to_bytes();
        let index_len = bytes.len() as u64;
        if index_len > MAX_INDEX_SIZE {
            return Err(Error::IndexTooLarge {
                index_len,
                max: MAX_INDEX_SIZE,
            });
        }
        self.out.write_all(&bytes)?;
        self.out.flush()?;
        self.out.seek(SeekFrom::Start(0))?;
        let header = GlobalHeader {
            index_off: self.pos,
            index_len,
        };
        self.out.write_all(&header.to_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }
}
