//! Where a table's bytes come from: the seam between the table and storage.
//!
//! A table is local files or objects in a store, never both:
//! - **Local**: a path to one `.ald` file, or a directory whose `.ald` files (not those of
//!   subdirectories) make one table, in path order. Each file is opened through `ald`'s own
//!   verified path ([`ald::StreamingDataset::open`]: a memory map, the header, metadata, schema and
//!   chunk index checked, each chunk's CRC-32C or AES-GCM tag when it is read, a signature policy
//!   over every byte), so every check is exactly the local loader's.
//! - **Remote**: `s3://`, `gs://`, `az://` (and `object_store`'s other Azure spellings) and
//!   `http(s)://` URLs naming one object, or a prefix (ending in `/`) whose objects directly under
//!   it with the table's extension make the table, sorted by key. Each object is opened through
//!   [`remote_file::RemoteDataset`] (head and tail by range, the same checks in the same order,
//!   each chunk fetched by range and checked before it is decoded).
//!
//! The store of a remote location is the session's: the one its `RuntimeEnv` has registered for
//! the URL's `scheme://authority` if there is one (a store the caller configured, or a counting
//! wrapper), else one built from the environment by [`remote_file::Location::parse`] and then
//! registered there, so that DataFusion's own readers (Parquet over the same bucket, say) use the
//! same client and connection pool.
//!
//! Nothing above this module knows where the bytes are: the table keeps the [`FileInfo`] found at
//! registration (and, for an object, its ETag and size) and asks this module to open files again
//! when a scan runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ald::StreamingDataset;
use ald::fs::SharedMap;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::execution::runtime_env::RuntimeEnv;
use envelope_core::{ChunkEntry, Signal};
use futures::{StreamExt as _, TryStreamExt as _};
use object_store::ObjectStoreScheme as Kind;
use object_store::{ObjectStore, ObjectStoreExt as _};
use remote_file::{ReadOptions, RemoteDataset};

use crate::config::Keys;
use crate::{Error, Result};

/// The extension of the files a directory table reads by default.
pub const DEFAULT_EXTENSION: &str = ".ald";

/// Objects opened at once when a remote table is planned (two requests each).
const PARALLEL_OPENS: usize = 8;

/// A table location: one file or a directory of files, locally or on object storage.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Location {
    /// A local file or directory.
    Local(PathBuf),
    /// An object, or a prefix of objects, in a store.
    Remote(RemoteUrl),
}

/// An object storage URL: the store it is in (`scheme://authority`) and the path in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteUrl {
    /// The URL as written.
    text: String,
    /// `scheme://authority`, the key of the store in a DataFusion `RuntimeEnv`.
    store_url: ObjectStoreUrl,
    /// The path in the store (no leading or trailing `/`).
    path: object_store::path::Path,
    /// Whether the URL ends with `/`: a prefix, never one object.
    prefix: bool,
}

impl RemoteUrl {
    /// The URL as written.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The store's URL (`s3://bucket/`), under which a `RuntimeEnv` registers it.
    #[must_use]
    pub fn store_url(&self) -> &ObjectStoreUrl {
        &self.store_url
    }

    /// The store: the one `runtime` has for [`RemoteUrl::store_url`], else one configured from
    /// the environment (`AWS_ENDPOINT_URL`, ..., docs/remote.md), registered with `runtime`.
    ///
    /// # Errors
    /// `Usage` ([`Error::Remote`]) if the environment does not configure the store.
    pub fn store(&self, runtime: Option<&RuntimeEnv>) -> Result<Arc<dyn ObjectStore>> {
        if let Some(store) = runtime.and_then(|runtime| runtime.object_store(&self.store_url).ok())
        {
            return Ok(store);
        }
        let built = remote_file::Location::parse(&self.text).map_err(Error::remote(&self.text))?;
        let store = Arc::clone(built.store());
        if let Some(runtime) = runtime {
            runtime.register_object_store(self.store_url.as_ref(), Arc::clone(&store));
        }
        Ok(store)
    }

    fn object(&self, store: &Arc<dyn ObjectStore>, meta: object_store::ObjectMeta) -> RemoteObject {
        RemoteObject {
            store: Some(Arc::clone(store)),
            origin: self.clone(),
            url: format!("{}{}", self.store_url.as_str(), meta.location),
            path: meta.location,
        }
    }
}

impl Location {
    /// Parses a path, a `file://` URL, or an object storage URL (`s3://`, `s3a://`, `gs://`,
    /// `az://`, `abfs(s)://`, `azure://`, `adl://`, `http(s)://`). A URL ending in `/` is a
    /// prefix; one that does not names an object, or, if there is none, a prefix.
    ///
    /// # Errors
    /// `Usage` ([`Error::Location`]) for a URL of another scheme or that does not parse.
    pub fn parse(location: &str) -> Result<Self> {
        if let Some(path) = location.strip_prefix("file://") {
            return Ok(Self::Local(PathBuf::from(path)));
        }
        let Some((scheme, _)) = location.split_once("://") else {
            return Ok(Self::Local(PathBuf::from(location)));
        };
        if scheme.is_empty()
            || !scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        {
            return Ok(Self::Local(PathBuf::from(location)));
        }
        let refuse = |reason| Error::Location {
            location: location.to_owned(),
            reason,
        };
        let url = url::Url::parse(location).map_err(|_| refuse("not a URL"))?;
        let (kind, path) = Kind::parse(&url)
            .map_err(|_| refuse("not an object storage URL (s3, gs, az, http, https)"))?;
        if !matches!(
            kind,
            Kind::AmazonS3 | Kind::GoogleCloudStorage | Kind::MicrosoftAzure | Kind::Http
        ) {
            return Err(refuse(
                "not an object storage URL this crate reads (s3, gs, az, http, https)",
            ));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(refuse("no bucket, container or host"));
        }
        let authority = &url[url::Position::BeforeHost..url::Position::AfterPort];
        let store_url = ObjectStoreUrl::parse(format!("{}://{authority}", url.scheme()))
            .map_err(|_| refuse("no bucket, container or host"))?;
        Ok(Self::Remote(RemoteUrl {
            text: location.to_owned(),
            store_url,
            path,
            prefix: url.path().ends_with('/'),
        }))
    }

    /// Whether this is a location on object storage.
    #[must_use]
    pub fn is_remote(&self) -> bool {
        matches!(self, Self::Remote(_))
    }
}

/// The files at a local `location`: the file itself, or the regular files directly in the
/// directory whose name ends with `extension`, sorted by path.
///
/// # Errors
/// `Io` if the location cannot be read; `Usage` ([`Error::NoFiles`]) for a directory without
/// such files; `Usage` for a remote location (see [`list_remote`]).
pub(crate) fn list(location: &Location, extension: &str) -> Result<Vec<PathBuf>> {
    let path = match location {
        Location::Local(path) => path,
        Location::Remote(url) => {
            return Err(Error::Location {
                location: url.as_str().to_owned(),
                reason: "an object storage location is listed through its store",
            });
        }
    };
    let io = |source| Error::Io {
        path: path.clone(),
        source,
    };
    let metadata = std::fs::metadata(path).map_err(io)?;
    if !metadata.is_dir() {
        return Ok(vec![path.clone()]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(path).map_err(io)? {
        let entry = entry.map_err(io)?;
        let file = entry.path();
        let name_matches = file
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name.ends_with(extension) && !name.starts_with('.'));
        // Symbolic links are followed, as for a single file given by path.
        if name_matches && std::fs::metadata(&file).map_err(io)?.is_file() {
            files.push(file);
        }
    }
    if files.is_empty() {
        return Err(Error::NoFiles {
            path: path.clone(),
            extension: extension.to_owned(),
        });
    }
    files.sort();
    Ok(files)
}

/// One object of a remote table: where it is, and the store that reads it.
#[derive(Debug, Clone)]
pub(crate) struct RemoteObject {
    /// The store, when the table was registered in this process; `None` for a table rebuilt from
    /// a plan (`ald-ballista`), whose scans take the store of the session that runs them
    /// ([`RemoteObject::location`]).
    pub(crate) store: Option<Arc<dyn ObjectStore>>,
    /// A URL in the object's store (the one the table was registered from, or the planned
    /// store URL): [`RemoteUrl::store_url`] is the store's key in a DataFusion `RuntimeEnv`, and
    /// [`RemoteUrl::store`] finds or builds the store.
    pub(crate) origin: RemoteUrl,
    pub(crate) path: object_store::path::Path,
    /// `scheme://authority/path`, for messages (and the table's `FileInfo::path`).
    pub(crate) url: String,
}

impl RemoteObject {
    /// The object `info` names (its [`ObjectVersion`]), without a store; `None` for a local file.
    ///
    /// # Errors
    /// `InvalidFormat` ([`Error::Plan`]) for a store URL or key that does not parse.
    pub(crate) fn of_planned(info: &FileInfo) -> Result<Option<Self>> {
        let Some(object) = &info.object else {
            return Ok(None);
        };
        let bad = |what| Error::Plan { what };
        // Parsed once here; every open of the object then uses the parsed store URL.
        let origin = match Location::parse(&object.store) {
            Ok(Location::Remote(origin)) if origin.store_url().as_str() == object.store => origin,
            _ => return Err(bad("an object's store URL is not object storage")),
        };
        let path = object_store::path::Path::parse(&object.key)
            .map_err(|_| bad("an object's key is not a valid object path"))?;
        if path.as_ref().is_empty() {
            return Err(bad("an object's key is empty"));
        }
        Ok(Some(Self {
            store: None,
            url: format!("{}{path}", origin.store_url().as_str()),
            origin,
            path,
        }))
    }

    /// The object's location for the remote reader, in the store this object was registered
    /// with, else the one `runtime` has for its store URL, else one configured from the
    /// environment (and registered with `runtime`), as for a table registered in that session.
    fn location(&self, runtime: Option<&RuntimeEnv>) -> Result<remote_file::Location> {
        let store = match &self.store {
            Some(store) => Arc::clone(store),
            None => self.origin.store(runtime)?,
        };
        Ok(remote_file::Location::from_store(
            store,
            self.path.clone(),
            self.url.clone(),
        ))
    }
}

/// The objects at `url` in `store`: the object it names, or (a URL ending in `/`, or naming no
/// object) the objects directly under the prefix whose name ends with `extension`, sorted by key.
/// One request (`HEAD` or `LIST`), two for a URL without `/` that names no object.
///
/// # Errors
/// `Io` ([`Error::Remote`]) if the store refuses; `Usage` ([`Error::NoFiles`]) for a prefix without
/// such objects.
pub(crate) async fn list_remote(
    url: &RemoteUrl,
    store: &Arc<dyn ObjectStore>,
    extension: &str,
) -> Result<Vec<RemoteObject>> {
    let store_error = |source| {
        Error::remote(url.as_str())(remote_file::Error::Store {
            location: url.as_str().to_owned(),
            source,
        })
    };
    if !url.prefix && !url.path.as_ref().is_empty() {
        match store.head(&url.path).await {
            Ok(meta) => return Ok(vec![url.object(store, meta)]),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(source) => return Err(store_error(source)),
        }
    }
    let prefix = (!url.path.as_ref().is_empty()).then_some(&url.path);
    let listed = store
        .list_with_delimiter(prefix)
        .await
        .map_err(store_error)?;
    let mut objects: Vec<RemoteObject> = listed
        .objects
        .into_iter()
        .filter(|meta| {
            meta.location
                .filename()
                .is_some_and(|name| name.ends_with(extension) && !name.starts_with('.'))
        })
        .map(|meta| url.object(store, meta))
        .collect();
    if objects.is_empty() {
        return Err(Error::NoFiles {
            path: PathBuf::from(url.as_str()),
            extension: extension.to_owned(),
        });
    }
    objects.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(objects)
}

/// Opens and verifies `object` under `keys`' policy: the signature policy always, and, when
/// `decrypt`, the first of the session's keys that opens an encrypted payload (a wrong key is
/// `DecryptionFailed` here, when the next one is tried). Planning opens without keys, as a local
/// table is registered; a scan opens with them.
///
/// # Errors
/// The first check the remote reader refuses ([`Error::Remote`]).
pub(crate) async fn open_remote(
    object: &RemoteObject,
    keys: &Keys,
    decrypt: bool,
    runtime: Option<&RuntimeEnv>,
) -> Result<RemoteDataset> {
    let location = object.location(runtime)?;
    let base = keys.load_options();
    let mut candidates: Vec<_> = if decrypt {
        keys.decryption_keys().map(Some).collect()
    } else {
        Vec::new()
    };
    if candidates.is_empty() {
        candidates.push(None);
    }
    let last = candidates.len() - 1;
    for (index, key) in candidates.into_iter().enumerate() {
        let load = ald::LoadOptions { key, ..base };
        match RemoteDataset::open_location(location.clone(), &load, ReadOptions::default()).await {
            Ok(dataset) => return Ok(dataset),
            Err(error) if error.signal() == Signal::DecryptionFailed && index < last => {}
            Err(error) => return Err(Error::remote(&object.url)(error)),
        }
    }
    Err(Error::Location {
        location: object.url.clone(),
        reason: "no key was tried",
    })
}

/// Opens every object of `objects`, [`PARALLEL_OPENS`] at once, in order.
pub(crate) async fn open_all_remote(
    objects: Vec<RemoteObject>,
    keys: &Keys,
) -> Result<Vec<(RemoteObject, RemoteDataset)>> {
    futures::stream::iter(objects)
        .map(|object| async move {
            let dataset = open_remote(&object, keys, false, None).await?;
            Ok::<_, Error>((object, dataset))
        })
        .buffered(PARALLEL_OPENS)
        .try_collect()
        .await
}

/// An opened, verified file.
pub(crate) type Dataset = StreamingDataset<SharedMap>;

/// Opens and verifies `path` under `keys`' policy.
///
/// # Errors
/// `Io`, then the first check `ald` refuses ([`Error::File`]).
pub(crate) fn open(path: &Path, keys: &Keys) -> Result<Dataset> {
    StreamingDataset::open(path, &keys.load_options()).map_err(Error::file(path))
}

/// What the table knows of one file from its registration: enough to plan and to give the planner
/// exact statistics without opening the file again.
#[derive(Debug, Clone)]
pub struct FileInfo {
    /// The file.
    pub path: PathBuf,
    /// The file's size in bytes.
    pub file_size: u64,
    /// The chunk index (row groups); a non-STREAMING file has one entry covering the payload.
    pub chunks: Vec<ChunkEntry>,
    /// The header's row count.
    pub num_rows: u64,
    /// Whether the file is STREAMING (else it is one unit of scan work).
    pub streaming: bool,
    /// Whether the payload is encrypted.
    pub encrypted: bool,
    /// `Some` for an object on object storage (`path` is then its URL): the store, key and
    /// version every read of it is pinned to.
    pub object: Option<ObjectVersion>,
}

/// The object a table's file is, and the version of it the table was planned from: what a scan
/// in another process (a Ballista executor) needs to read that object and nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectVersion {
    /// The store's URL, `scheme://authority/` (`s3://bucket/`): the key under which a DataFusion
    /// `RuntimeEnv` registers the store that reads it.
    pub store: String,
    /// The object's key in the store (`object_store`'s path: no leading `/`).
    pub key: String,
    /// The ETag the store gave when the table was registered (`None` when the store gives none:
    /// the size and chunk index alone then tell versions apart). A scan refuses another one.
    pub e_tag: Option<String>,
}

impl FileInfo {
    /// Reads what the planner needs from an opened file.
    pub(crate) fn of(path: PathBuf, dataset: &Dataset) -> Result<Self> {
        let chunks = (0..dataset.num_chunks())
            .map(|chunk| {
                dataset.chunk_entry(chunk).ok_or_else(|| Error::Changed {
                    path: path.clone(),
                    what: "a chunk index entry is missing",
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let file = dataset.file();
        Ok(Self {
            file_size: file.envelope().as_bytes().len() as u64,
            streaming: file.envelope().chunk_index().is_some(),
            encrypted: file.is_encrypted(),
            num_rows: dataset.num_rows(),
            chunks,
            path,
            object: None,
        })
    }

    /// The decoded bytes of the file's payload (the Arrow IPC messages the arrays are views of).
    pub fn decoded_bytes(&self) -> u64 {
        self.chunks
            .iter()
            .map(|chunk| chunk.uncompressed_size)
            .sum()
    }

    /// The payload's bytes as stored (compressed, encrypted).
    pub fn stored_bytes(&self) -> u64 {
        self.chunks.iter().map(|chunk| chunk.stored_size).sum()
    }

    /// What the planner needs from `object`, opened through the remote reader as `dataset`.
    pub(crate) fn of_remote(object: &RemoteObject, dataset: &RemoteDataset) -> Result<Self> {
        let path = PathBuf::from(&object.url);
        let chunks = (0..dataset.num_chunks())
            .map(|chunk| {
                dataset.chunk_entry(chunk).ok_or_else(|| Error::Changed {
                    path: path.clone(),
                    what: "a chunk index entry is missing",
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            file_size: dataset.file().size(),
            streaming: dataset.is_ranged(),
            encrypted: dataset.is_encrypted(),
            num_rows: dataset.num_rows(),
            chunks,
            path,
            object: Some(ObjectVersion {
                store: object.origin.store_url().as_str().to_owned(),
                key: object.path.as_ref().to_owned(),
                e_tag: dataset.file().e_tag().map(str::to_owned),
            }),
        })
    }

    /// `Changed` unless `dataset` (an object opened again for a scan) is the version `object`
    /// was planned from (same ETag and size) with the rows and chunks planned from.
    pub(crate) fn check_unchanged_remote(
        &self,
        object: &RemoteObject,
        dataset: &RemoteDataset,
    ) -> Result<()> {
        if dataset.file().size() != self.file_size {
            return Err(Error::Changed {
                path: self.path.clone(),
                what: "its size",
            });
        }
        let planned = self
            .object
            .as_ref()
            .and_then(|object| object.e_tag.as_deref());
        if planned.is_some() && dataset.file().e_tag() != planned {
            return Err(Error::Changed {
                path: self.path.clone(),
                what: "its ETag",
            });
        }
        self.check_same(&Self::of_remote(object, dataset)?)
    }

    /// `Changed` unless `dataset` (opened again for a scan) has the rows and chunks planned from.
    pub(crate) fn check_unchanged(&self, dataset: &Dataset) -> Result<()> {
        self.check_same(&Self::of(self.path.clone(), dataset)?)
    }

    fn check_same(&self, now: &Self) -> Result<()> {
        let what = if now.num_rows != self.num_rows {
            "its row count"
        } else if now.chunks != self.chunks {
            "its chunk index"
        } else if now.encrypted != self.encrypted || now.streaming != self.streaming {
            "its flags"
        } else {
            return Ok(());
        };
        Err(Error::Changed {
            path: self.path.clone(),
            what,
        })
    }
}

#[cfg(test)]
mod tests {
    use object_store::ObjectStoreExt as _;

    use super::*;

    #[test]
    fn locations_parse_local_paths_and_object_storage_urls() {
        assert_eq!(
            Location::parse("/data/x.ald").unwrap(),
            Location::Local("/data/x.ald".into())
        );
        assert_eq!(
            Location::parse("file:///data/").unwrap(),
            Location::Local("/data/".into())
        );
        assert_eq!(
            Location::parse("relative/dir").unwrap(),
            Location::Local("relative/dir".into())
        );
        for (remote, store, path, prefix) in [
            ("s3://bucket/prefix/", "s3://bucket/", "prefix", true),
            ("s3://bucket/", "s3://bucket/", "", true),
            ("gs://b/x.ald", "gs://b/", "x.ald", false),
            (
                "https://host:8443/d/x.ald",
                "https://host:8443/",
                "d/x.ald",
                false,
            ),
            ("az://container/a/b/", "az://container/", "a/b", true),
        ] {
            let Location::Remote(url) = Location::parse(remote).unwrap() else {
                panic!("{remote} is remote");
            };
            assert_eq!(url.as_str(), remote);
            assert_eq!(url.store_url().as_str(), store, "{remote}");
            assert_eq!(url.path.as_ref(), path, "{remote}");
            assert_eq!(url.prefix, prefix, "{remote}");
        }
        for refused in ["ftp://host/x.ald", "memory://x/y.ald", "s3://"] {
            let error = Location::parse(refused).unwrap_err();
            assert_eq!(error.signal(), envelope_core::Signal::Usage, "{refused}");
        }
    }

    #[tokio::test]
    async fn a_prefix_lists_its_objects_of_the_extension_in_order() {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        for name in [
            "t/b.ald",
            "t/a.ald",
            "t/.hidden.ald",
            "t/notes.txt",
            "t/sub/c.ald",
        ] {
            store
                .put(&object_store::path::Path::from(name), b"x".to_vec().into())
                .await
                .unwrap();
        }
        let url = |text: &str| match Location::parse(text).unwrap() {
            Location::Remote(url) => url,
            Location::Local(_) => unreachable!(),
        };
        let names = |objects: Vec<RemoteObject>| {
            objects
                .into_iter()
                .map(|object| object.url)
                .collect::<Vec<_>>()
        };
        for prefix in ["s3://bucket/t/", "s3://bucket/t"] {
            let found = list_remote(&url(prefix), &store, DEFAULT_EXTENSION)
                .await
                .unwrap();
            assert_eq!(names(found), ["s3://bucket/t/a.ald", "s3://bucket/t/b.ald"]);
        }
        // An object named without `/`: that object, whatever its name.
        let one = list_remote(&url("s3://bucket/t/notes.txt"), &store, ".ald")
            .await
            .unwrap();
        assert_eq!(names(one), ["s3://bucket/t/notes.txt"]);
        let error = list_remote(&url("s3://bucket/empty/"), &store, ".ald")
            .await
            .unwrap_err();
        assert!(matches!(error, Error::NoFiles { .. }), "{error}");
        assert_eq!(
            error.to_string(),
            "Usage: no .ald file in s3://bucket/empty/"
        );
    }

    #[test]
    fn a_directory_lists_its_files_of_the_extension_in_order() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["b.ald", "a.ald", ".hidden.ald", "notes.txt"] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        std::fs::create_dir(dir.path().join("sub.ald")).unwrap();
        let found = list(&Location::Local(dir.path().into()), DEFAULT_EXTENSION).unwrap();
        assert_eq!(found, [dir.path().join("a.ald"), dir.path().join("b.ald")]);
        let empty = tempfile::tempdir().unwrap();
        let error = list(&Location::Local(empty.path().into()), DEFAULT_EXTENSION).unwrap_err();
        assert!(matches!(error, Error::NoFiles { .. }));
        let missing = list(&Location::Local(dir.path().join("nope")), ".ald").unwrap_err();
        assert_eq!(missing.signal(), envelope_core::Signal::Io);
    }
}
