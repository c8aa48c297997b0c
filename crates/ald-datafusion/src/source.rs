//! Where a table's bytes come from: the seam between the table and storage.
//!
//! This build reads local files: a path to one `.ald` file, or a directory whose `.ald` files
//! (not those of subdirectories) make one table, in path order. Each file is opened through
//! `ald`'s own verified path ([`ald::StreamingDataset::open`]: a memory map, the header, metadata,
//! schema and chunk index checked, each chunk's CRC-32C or AES-GCM tag when it is read, a
//! signature policy over every byte), so every check is exactly the local loader's.
//!
//! Object storage plugs in here: [`Location`] gets a remote variant (an `ObjectStoreUrl` and a
//! prefix), [`list`] lists it through the session's `object_store`, and [`open`] returns a
//! dataset over the remote reader's verified bytes. Nothing above this module knows where the
//! bytes are: the table keeps the [`FileInfo`] found at registration and asks this module to
//! open files again when a scan runs.

use std::path::{Path, PathBuf};

use ald::StreamingDataset;
use ald::fs::SharedMap;
use envelope_core::ChunkEntry;

use crate::config::Keys;
use crate::{Error, Result};

/// The extension of the files a directory table reads by default.
pub const DEFAULT_EXTENSION: &str = ".ald";

/// A table location: one file or a directory of files.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Location {
    /// A local file or directory.
    Local(PathBuf),
}

impl Location {
    /// Parses a path, or a `file://` URL. Other URL schemes (`s3://`, `gs://`, `az://`,
    /// `http(s)://`) are refused with `Usage` until the remote reader exists.
    ///
    /// # Errors
    /// `Usage` ([`Error::Location`]) for a URL this build cannot read.
    pub fn parse(location: &str) -> Result<Self> {
        if let Some(path) = location.strip_prefix("file://") {
            return Ok(Self::Local(PathBuf::from(path)));
        }
        if let Some((scheme, _)) = location.split_once("://")
            && !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
        {
            return Err(Error::Location {
                location: location.to_owned(),
                reason: "object storage is not read by this build of ald-datafusion (local paths and file:// only)",
            });
        }
        Ok(Self::Local(PathBuf::from(location)))
    }
}

/// The files at `location`: the file itself, or the regular files directly in the directory whose
/// name ends with `extension`, sorted by path.
///
/// # Errors
/// `Io` if the location cannot be read; `Usage` ([`Error::NoFiles`]) for a directory without
/// such files.
pub(crate) fn list(location: &Location, extension: &str) -> Result<Vec<PathBuf>> {
    let Location::Local(path) = location;
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

    /// `Changed` unless `dataset` (opened again for a scan) has the rows and chunks planned from.
    pub(crate) fn check_unchanged(&self, dataset: &Dataset) -> Result<()> {
        let now = Self::of(self.path.clone(), dataset)?;
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
    use super::*;

    #[test]
    fn locations_parse_local_paths_and_refuse_object_storage_for_now() {
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
        for remote in ["s3://bucket/prefix/", "gs://b/x.ald", "https://host/x.ald"] {
            let error = Location::parse(remote).unwrap_err();
            assert_eq!(error.signal(), envelope_core::Signal::Usage, "{remote}");
        }
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
