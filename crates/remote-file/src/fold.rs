//! A `.fold` / `.mind` container read over object storage: the global header and the JSON index
//! fetched to open it (`fold::index_range`, `FoldReader::open_with` over a `fold::RangedSource`),
//! then one range per chunk, read by `FoldReader::read_chunk_from` with every rule of a local read.

use std::sync::Mutex;

use fold::{FoldReader, RangedSource};

use crate::fetch::RemoteFile;
use crate::location::Location;
use crate::ranged::{InFlight, ReadOptions};
use crate::{Error, Result};

/// A verified `.fold` file over object storage (or a local path, through the same code): header
/// and index checked as `FoldReader::open` checks them (the metadata signature, which lives in
/// the index, is checked with `fold::signature` on [`RemoteFold::reader`] as locally).
pub struct RemoteFold {
    file: RemoteFile,
    reader: FoldReader<RangedSource>,
    options: ReadOptions,
    in_flight: InFlight,
}

impl std::fmt::Debug for RemoteFold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteFold")
            .field("file", &self.file)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl RemoteFold {
    /// Opens `location` (a URL or a local path, see [`Location::parse`]): the first and last
    /// [`ReadOptions::first_read`] bytes in parallel (two requests), and the index if they do not
    /// hold it (a third), then every open rule of docs/fold.md §3 in `FoldReader::open`'s order,
    /// under `limits` (the chunk size limit).
    ///
    /// # Errors
    /// `Location`; what [`RemoteFile`] returns; `HeadTooLarge` for an index larger than
    /// [`ReadOptions::max_head`]; `Fold` for a file the reader refuses.
    pub async fn open(
        location: &str,
        limits: fold::ReadOptions,
        options: ReadOptions,
    ) -> Result<Self> {
        Self::open_location(Location::parse(location)?, limits, options).await
    }

    /// As [`RemoteFold::open`], for a location already parsed.
    ///
    /// # Errors
    /// As [`RemoteFold::open`].
    pub async fn open_location(
        location: Location,
        limits: fold::ReadOptions,
        options: ReadOptions,
    ) -> Result<Self> {
        let first = options.first_read.max(u64::from(fold::GLOBAL_HEADER_LEN));
        let (file, head, tail) = RemoteFile::open(location, first, first, options.retry).await?;
        let size = file.size();
        let mut source = RangedSource::new(size);
        let index = fold::index_range(&head, size);
        source.hold(0, head.to_vec());
        source.hold(size - tail.len() as u64, tail.to_vec());
        let index = index?;
        if !source.holds(&index) {
            let needed = index.end - index.start;
            if needed > options.max_head {
                return Err(Error::HeadTooLarge {
                    location: file.location().as_str().to_owned(),
                    needed,
                    max: options.max_head,
                });
            }
            let bytes = file.range(index.clone(), |_| Ok(())).await?;
            source.hold(index.start, bytes.to_vec());
        }
        let reader = FoldReader::open_with(source, limits)?;
        Ok(Self {
            file,
            reader,
            options,
            in_flight: InFlight::new(options.max_in_flight),
        })
    }

    /// The object read (size, ETag, requests sent).
    #[must_use]
    pub fn file(&self) -> &RemoteFile {
        &self.file
    }

    /// The verified header and index (`index()`, `header()`; `fold::signature` checks the
    /// metadata signature on it).
    #[must_use]
    pub fn reader(&self) -> &FoldReader<RangedSource> {
        &self.reader
    }

    /// Chunk `name`, verified and decompressed: one range request (more only on retries).
    ///
    /// # Errors
    /// As [`RemoteFold::chunks`].
    pub async fn chunk(&self, name: &str) -> Result<Vec<u8>> {
        let mut chunks = self.chunks(&[name]).await?;
        chunks.pop().ok_or_else(|| {
            Error::Fold(fold::Error::ChunkNotFound {
                name: name.to_owned(),
            })
        })
    }

    /// Chunks `names`, in order, fetched in parallel under [`ReadOptions::max_requests`] and
    /// [`ReadOptions::max_in_flight`]; each read from its fetched bytes with every rule of a local
    /// read (header against the index, ECC on a CRC32C mismatch, CRC32C, SHA-256, the metadata's
    /// hashes, bounded decompression). Bytes that fail CRC32C or SHA-256 (a body changed in
    /// transit that ECC could not correct) are requested again within the retry budget.
    ///
    /// # Errors
    /// `ObjectChanged`; `RetriesExhausted` (signal `ChecksumMismatch` for a chunk that never
    /// verified); `Fold` for any other refusal (`ChunkNotFound`, `ChunkTooLarge`, `Truncated`,
    /// `ManifestHashMismatch`, ...).
    pub async fn chunks(&self, names: &[&str]) -> Result<Vec<Vec<u8>>> {
        // The read is the verification: it runs inside the retried check, and its output waits
        // here until the fetch returns.
        let read: Vec<Mutex<Option<Vec<u8>>>> = names.iter().map(|_| Mutex::new(None)).collect();
        self.in_flight
            .fetch_chunks(
                &self.file,
                self.options.max_requests,
                0..names.len(),
                |k| Ok(self.reader.chunk_range(names[k])?),
                |k, bytes| {
                    let chunk = self.reader.read_chunk_from(names[k], bytes)?;
                    *read[k]
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(chunk);
                    Ok(())
                },
                |k, _| {
                    read[k]
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .take()
                        .ok_or_else(|| {
                            Error::Runtime(std::io::Error::other("a chunk read was lost"))
                        })
                },
            )
            .await
    }
}
