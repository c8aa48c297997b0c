//! The objects under a prefix, each with the version it was listed at, and streaming their
//! bytes: what a content hash of a whole remote tree (`lineage snapshot s3://bucket/prefix`)
//! needs.
//!
//! A prefix is read as a directory: `s3://bucket/data` holds `data/a.csv` and `data/sub/b.csv`
//! (named `a.csv` and `sub/b.csv` relative to it), never `data2/c.csv`. Listing is recursive, as a
//! directory walk is. Each object keeps the size and ETag the listing gave, and every later
//! request for it is pinned to them (`If-Match`, sizes compared), so a tree hashed from a listing
//! is the tree listed or an `ObjectChanged` error, never a mix.

use std::future::Future;
use std::sync::Arc;

use futures::{StreamExt as _, TryStreamExt as _};
use object_store::ObjectStoreExt as _;
use object_store::path::Path;

use crate::fetch::{RemoteFile, Retry};
use crate::location::Location;
use crate::{Error, Result};

/// One object found under a prefix.
#[derive(Debug, Clone)]
pub struct Listed {
    /// The object's key relative to the prefix, `/`-separated (`sub/b.csv`).
    pub relative: String,
    /// The object's size when listed.
    pub size: u64,
    /// Its ETag when listed, if the store gives one.
    pub e_tag: Option<String>,
    /// Its version when listed, if the store versions objects.
    pub version: Option<String>,
    location: Location,
}

impl Listed {
    /// The object's full location.
    #[must_use]
    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The object as a [`RemoteFile`] pinned to the listed version, without a request.
    #[must_use]
    pub fn file(&self, retry: Retry) -> RemoteFile {
        RemoteFile::listed(
            self.location.clone(),
            self.size,
            self.e_tag.clone(),
            self.version.clone(),
            retry,
        )
    }
}

#[cfg(test)]
impl Listed {
    /// A listed object of one byte named `relative` (its location is `prefix`'s: no request is
    /// made with it).
    pub(crate) fn for_test(prefix: &Location, relative: &str) -> Self {
        Self {
            relative: relative.to_owned(),
            size: 1,
            e_tag: None,
            version: None,
            location: prefix.clone(),
        }
    }
}

impl Location {
    /// Every object under this location read as a directory, sorted by relative key (bytewise).
    /// Zero-byte keys ending in `/` (the "folder" markers some consoles create) are not objects
    /// of the tree and are skipped (one HEAD request per zero-byte object tells them apart). An empty listing is an empty vector: the caller decides
    /// whether that is an error.
    ///
    /// # Errors
    /// `Store` for a listing the store refuses (not found, access denied, ...).
    pub async fn list(&self) -> Result<Vec<Listed>> {
        let prefix = self.path.clone();
        let prefix_text = prefix.as_ref();
        let mut stream = self.store.list(Some(&prefix));
        let mut found = Vec::new();
        while let Some(meta) = stream.try_next().await.map_err(|source| Error::Store {
            location: self.display.clone(),
            source,
        })? {
            let key = meta.location.as_ref();
            let relative = if prefix_text.is_empty() {
                key
            } else {
                // object_store lists `prefix/...` only; anything else would be a store bug, and
                // an object outside the tree must not be hashed into it.
                match key
                    .strip_prefix(prefix_text)
                    .and_then(|rest| rest.strip_prefix('/'))
                {
                    Some(relative) => relative,
                    None => continue,
                }
            };
            if relative.is_empty() || (meta.size == 0 && self.is_folder_marker(&meta).await?) {
                continue;
            }
            found.push(Listed {
                relative: relative.to_owned(),
                size: meta.size,
                e_tag: meta.e_tag.clone(),
                version: meta.version.clone(),
                location: self.child(&meta.location),
            });
        }
        found.sort_by(|a, b| a.relative.cmp(&b.relative));
        Ok(found)
    }

    /// Whether a listed zero-byte object is a folder marker (key `name/`): object_store's paths
    /// drop a trailing `/`, so the marker lists as `name`; a HEAD of `name` finds no such key.
    async fn is_folder_marker(&self, meta: &object_store::ObjectMeta) -> Result<bool> {
        match self.store.head(&meta.location).await {
            Ok(_) => Ok(false),
            Err(object_store::Error::NotFound { .. }) => Ok(true),
            Err(source) => Err(Error::Store {
                location: self.child(&meta.location).display,
                source,
            }),
        }
    }

    /// The object at `path` of this location's store.
    fn child(&self, path: &Path) -> Self {
        let display = match self.display.split_once("://") {
            Some((scheme, rest)) => {
                // The store's part of the URL (bucket, host) is everything before the path.
                let store_part = rest.split_once('/').map_or(rest, |(store, _)| store);
                if scheme.eq_ignore_ascii_case("file") {
                    format!("file:///{}", path.as_ref())
                } else {
                    format!("{scheme}://{store_part}/{}", path.as_ref())
                }
            }
            None => format!("/{}", path.as_ref()),
        };
        Self {
            store: Arc::clone(&self.store),
            path: path.clone(),
            display,
        }
    }
}

/// Runs `work` on every object of `objects` with at most `concurrency` at once, on the current
/// tokio runtime's worker threads, and hands the results to `done` in the objects' order as they
/// complete. At most `concurrency` objects are being read at any time, and at most
/// `concurrency` finished results wait for an earlier one: memory is bounded by
/// `concurrency` × (what one `work` holds + one result), whatever the number of objects.
///
/// The first error stops the run (objects not yet started are never read) and is returned.
///
/// # Errors
/// The first error of `work` or `done`; `Task` if a worker task panicked or was cancelled.
pub async fn for_each_object<T, W, Fut>(
    objects: &[Listed],
    concurrency: usize,
    work: W,
    mut done: impl FnMut(usize, T) -> Result<()>,
) -> Result<()>
where
    T: Send + 'static,
    W: Fn(Listed) -> Fut,
    Fut: Future<Output = Result<T>> + Send + 'static,
{
    let mut results = futures::stream::iter(objects.iter().cloned().map(|object| {
        let task = AbortOnDrop(tokio::task::spawn(work(object)));
        async move {
            let mut task = task;
            (&mut task.0)
                .await
                .map_err(|join| Error::Task(join.to_string()))?
        }
    }))
    .buffered(concurrency.max(1));
    let mut index = 0;
    while let Some(result) = results.next().await {
        done(index, result?)?;
        index += 1;
    }
    Ok(())
}

/// A spawned task that is cancelled when its result is no longer wanted (a run stopped by an
/// error drops the tasks in flight: none keeps reading in the background).
pub(crate) struct AbortOnDrop<T>(pub(crate) tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}
