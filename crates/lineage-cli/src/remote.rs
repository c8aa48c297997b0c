//! `lineage snapshot s3://bucket/prefix`: the dataset root of a tree in object storage, equal to
//! the one of a local copy of it (docs/lineage.md §3.6).
//!
//! The prefix is listed once (recursively, as a directory walk); each object's key relative to
//! the prefix is its path, validated and ordered exactly as a local walk's. Objects are then
//! streamed through SHA-256, several at once: at most `concurrency` objects are being fetched,
//! each holding one network buffer, on a runtime with one worker thread per core (the hashing is
//! spread over the cores), and finished hashes are merged into the Merkle tree in path order.
//! Memory is bounded by `concurrency`, whatever the number or size of the objects.
//!
//! Every request is pinned to the version the listing saw (`If-Match` on its ETag, its size
//! compared), so the root commits to the tree as listed or the run fails with `FILE_CHANGED`.
//! A body cut mid-stream is resumed where it stopped, transient failures retried with backoff
//! (remote-file's `Retry`).

use lineage::fs::Progress;
use lineage::{DatasetBuilder, DatasetDigest, Digest, RelPath};
use remote_file::{Listed, Location, Retry};
use sha2::{Digest as _, Sha256};

/// Objects fetched at once by default: enough to hide a store's latency, few enough to bound
/// memory and connections.
pub(crate) const DEFAULT_CONCURRENCY: u16 = 16;

/// Whether `dir` names object storage rather than a local directory.
pub(crate) fn is_remote(dir: &std::path::Path) -> bool {
    dir.to_str().is_some_and(Location::is_remote)
}

/// The dataset digest of every object under `url`, hashed by `threads` worker threads (0: one
/// per core) with at most `concurrency` objects in flight; `progress` is called in path order.
///
/// # Errors
/// As a local walk: `EMPTY_DATASET`, `INVALID_PATH`, `DUPLICATE_PATH`; `FILE_CHANGED` for an
/// object replaced after the listing; `IO` for a store that refuses or keeps failing.
pub(crate) fn hash_prefix(
    url: &str,
    threads: usize,
    concurrency: usize,
    progress: &mut dyn FnMut(Progress),
) -> Result<DatasetDigest, lineage::Error> {
    let io = |error: remote_file::Error| lineage::Error::Io {
        path: url.to_owned(),
        source: std::io::Error::other(error),
    };
    let mut runtime = tokio::runtime::Builder::new_multi_thread();
    if threads > 0 {
        runtime.worker_threads(threads);
    }
    let runtime = runtime
        .enable_all()
        .build()
        .map_err(|source| lineage::Error::Io {
            path: url.to_owned(),
            source,
        })?;
    let location = Location::parse(url).map_err(io)?;
    let listed = runtime.block_on(location.list()).map_err(io)?;
    let objects = in_canonical_order(listed)?;
    let mut builder = DatasetBuilder::new(objects.iter().map(|(path, _)| path.clone()).collect())?;
    let objects: Vec<Listed> = objects.into_iter().map(|(_, object)| object).collect();
    let files_total = u64::try_from(objects.len()).unwrap_or(u64::MAX);
    let mut bytes_done = 0u64;
    let run = remote_file::for_each_object(
        &objects,
        concurrency,
        |object| hash_object(object, Retry::default()),
        |index, (file_hash, size)| {
            builder.push(file_hash, size);
            bytes_done = bytes_done.saturating_add(size);
            progress(Progress {
                files_done: u64::try_from(index + 1).unwrap_or(u64::MAX),
                files_total,
                bytes_done,
                file_hash,
            });
            Ok(())
        },
    );
    runtime.block_on(run).map_err(|error| match error {
        remote_file::Error::ObjectChanged { location, .. } => lineage::Error::FileChanged {
            path: location,
            reason: "it changed after the prefix was listed (its ETag or size differs)",
        },
        other => io(other),
    })?;
    builder.finish()
}

/// The listed objects with their paths, in the canonical order (a local walk's), refusing keys
/// that are not normalized relative paths and duplicates.
fn in_canonical_order(listed: Vec<Listed>) -> Result<Vec<(RelPath, Listed)>, lineage::Error> {
    let mut objects = listed
        .into_iter()
        .map(|object| Ok((RelPath::new(&object.relative)?, object)))
        .collect::<Result<Vec<_>, lineage::Error>>()?;
    if objects.is_empty() {
        return Err(lineage::Error::EmptyDataset);
    }
    objects.sort_by(|a, b| a.0.cmp(&b.0));
    if let Some(pair) = objects.windows(2).find(|pair| pair[0].0 == pair[1].0) {
        return Err(lineage::Error::DuplicatePath {
            path: pair[0].0.as_str().to_owned(),
        });
    }
    Ok(objects)
}

/// Streams one object through SHA-256: its hash and size.
async fn hash_object(object: Listed, retry: Retry) -> remote_file::Result<(Digest, u64)> {
    let file = object.file(retry);
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    file.stream(0..object.size, |piece| {
        hasher.update(piece);
        size += piece.len() as u64;
        Ok(())
    })
    .await?;
    Ok((Digest(hasher.finalize().into()), size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_remote_and_paths_are_not() {
        assert!(is_remote(std::path::Path::new("s3://bucket/prefix")));
        assert!(is_remote(std::path::Path::new("gs://bucket/prefix/")));
        assert!(!is_remote(std::path::Path::new("data/train")));
        assert!(!is_remote(std::path::Path::new("file:///data/train")));
    }
}
