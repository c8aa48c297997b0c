//! `dataset_root_hash` (004 §II.F): normalized relative paths, per-file SHA-256, tagged leaves,
//! and the Merkle root; plus the resumable [`DatasetBuilder`] and its [`Checkpoint`] (§10).

use std::collections::BTreeMap;

use crate::cbor::{self, Value};
use crate::error::{CborProblem, Error, PathProblem};
use crate::hash::{Digest, MerkleFrontier, sha256, sha256_cbor};

/// Leaf tag of the dataset tree.
pub const DATASET_LEAF_TAG: &str = "dataset_leaf_v1";
/// Parent tag of the dataset tree.
pub const DATASET_NODE_TAG: &str = "dataset_node_v1";
/// Tag of the path-list hash a checkpoint binds (this implementation's, not the contract's).
pub const CHECKPOINT_PATHS_TAG: &str = "dataset_paths_v1";
/// Value of the `format` field of a checkpoint.
pub const CHECKPOINT_FORMAT: &str = "lineage_snapshot_checkpoint_v2";
/// Tag of the chain of file stamps a checkpoint binds (this implementation's).
pub const CHECKPOINT_FILES_TAG: &str = "dataset_covered_files_v1";

/// The `covered_files` chain before any file: SHA-256 of [`CHECKPOINT_FILES_TAG`].
#[must_use]
pub fn covered_files_start() -> Digest {
    sha256(CHECKPOINT_FILES_TAG.as_bytes())
}

/// One step of the `covered_files` chain: `SHA-256(tag || previous || len(path) || path ||
/// len(stamp) || stamp)`, lengths as u64 big-endian. A stamp says what state a file was in when
/// it was hashed (natively: device, inode, size, modification and change times); the chain over
/// the files a checkpoint covers lets a resumed build check, without rehashing them, that none of
/// them changed since (docs/lineage.md §10).
#[must_use]
pub fn covered_files_step(previous: Digest, path: &RelPath, stamp: &[u8]) -> Digest {
    let mut bytes =
        Vec::with_capacity(CHECKPOINT_FILES_TAG.len() + 48 + path.0.len() + stamp.len());
    bytes.extend_from_slice(CHECKPOINT_FILES_TAG.as_bytes());
    bytes.extend_from_slice(&previous.0);
    for part in [path.0.as_bytes(), stamp] {
        bytes.extend_from_slice(&(part.len() as u64).to_be_bytes());
        bytes.extend_from_slice(part);
    }
    sha256(&bytes)
}

/// A normalized POSIX relative path: UTF-8, `/`-separated, no empty, `.` or `..` segments, no
/// leading slash, no NUL. Orders by its UTF-8 bytes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelPath(String);

impl RelPath {
    /// Validates `path` as already-normalized. Nothing is rewritten: a path that is not in
    /// normal form is refused rather than silently changed.
    ///
    /// # Errors
    /// [`Error::InvalidPath`] naming the problem.
    ///
    /// # Examples
    /// ```
    /// use lineage::RelPath;
    /// assert!(RelPath::new("train/a.txt").is_ok());
    /// assert!(RelPath::new("./a.txt").is_err());
    /// assert!(RelPath::new("a//b").is_err());
    /// ```
    pub fn new(path: &str) -> Result<Self, Error> {
        let fail = |problem| {
            Err(Error::InvalidPath {
                path: path.to_owned(),
                problem,
            })
        };
        if path.is_empty() {
            return fail(PathProblem::Empty);
        }
        if path.starts_with('/') {
            return fail(PathProblem::LeadingSlash);
        }
        if path.contains('\0') {
            return fail(PathProblem::Nul);
        }
        for seg in path.split('/') {
            match seg {
                "" => return fail(PathProblem::EmptySegment),
                "." | ".." => return fail(PathProblem::DotSegment),
                _ => {}
            }
        }
        Ok(Self(path.to_owned()))
    }

    /// The path text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// `leaf_i = SHA-256(CBOR_CANONICAL(["dataset_leaf_v1", relative_path_i, file_hash_i]))`.
#[must_use]
pub fn dataset_leaf_hash(path: &RelPath, file_hash: Digest) -> Digest {
    sha256_cbor(&Value::Array(vec![
        Value::text(DATASET_LEAF_TAG),
        Value::text(path.as_str()),
        file_hash.to_cbor(),
    ]))
}

/// The dataset commitment and what the rest of the snapshot needs from the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetDigest {
    /// The Merkle root over the file leaves.
    pub root_hash: Digest,
    /// The files in canonical (sorted) order; a file's position is its `sample_index`.
    pub paths: Vec<RelPath>,
    /// Sum of the file sizes (the `snapshot_size_bytes` metric).
    pub size_bytes: u64,
}

/// Sorts paths by their UTF-8 bytes and refuses duplicates.
///
/// # Errors
/// [`Error::DuplicatePath`], or [`Error::EmptyDataset`] for an empty list.
pub fn sort_paths(mut paths: Vec<RelPath>) -> Result<Vec<RelPath>, Error> {
    if paths.is_empty() {
        return Err(Error::EmptyDataset);
    }
    paths.sort();
    if let Some(w) = paths.windows(2).find(|w| w[0] == w[1]) {
        return Err(Error::DuplicatePath {
            path: w[0].0.clone(),
        });
    }
    Ok(paths)
}

/// `dataset_root_hash` over in-memory `(relative path, file bytes)` sources, in any order.
/// This is the filesystem-free entry point (wasm32); [`crate::fs`] walks a directory.
///
/// # Errors
/// [`Error::InvalidPath`], [`Error::DuplicatePath`], [`Error::EmptyDataset`].
///
/// # Examples
/// ```
/// let d = lineage::dataset_root_hash([("b.txt", &b"2"[..]), ("a.txt", &b"1"[..])])?;
/// assert_eq!(d.paths[0].as_str(), "a.txt");
/// assert_eq!(d.size_bytes, 2);
/// # Ok::<(), lineage::Error>(())
/// ```
pub fn dataset_root_hash<P, B, I>(sources: I) -> Result<DatasetDigest, Error>
where
    P: AsRef<str>,
    B: AsRef<[u8]>,
    I: IntoIterator<Item = (P, B)>,
{
    let mut files = BTreeMap::new();
    for (p, b) in sources {
        let path = RelPath::new(p.as_ref())?;
        let bytes = b.as_ref();
        let size = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
        if files.insert(path.clone(), (sha256(bytes), size)).is_some() {
            return Err(Error::DuplicatePath { path: path.0 });
        }
    }
    let paths: Vec<RelPath> = files.keys().cloned().collect();
    let mut builder = DatasetBuilder::new(paths)?;
    for (hash, size) in files.values() {
        builder.push(*hash, *size);
    }
    builder.finish()
}

/// Builds `dataset_root_hash` file by file in canonical order, with O(log n) partial state that a
/// [`Checkpoint`] can save and restore (§10: "resumed snapshot build yields identical snapshot
/// ID").
#[derive(Debug, Clone)]
pub struct DatasetBuilder {
    paths: Vec<RelPath>,
    paths_hash: Digest,
    frontier: MerkleFrontier,
    size_bytes: u64,
    /// The [`covered_files_step`] chain over the files pushed so far.
    covered_files: Digest,
}

impl DatasetBuilder {
    /// Starts a build over `paths` (any order; they are sorted here).
    ///
    /// # Errors
    /// [`Error::DuplicatePath`], [`Error::EmptyDataset`].
    pub fn new(paths: Vec<RelPath>) -> Result<Self, Error> {
        let paths = sort_paths(paths)?;
        let paths_hash = paths_hash(&paths);
        Ok(Self {
            paths,
            paths_hash,
            frontier: MerkleFrontier::new(DATASET_NODE_TAG),
            size_bytes: 0,
            covered_files: covered_files_start(),
        })
    }

    /// Resumes a build from `checkpoint`, which must have been taken over the same path list.
    /// The files it covers are not checked here (this crate's core does no I/O): a caller that
    /// reads files must check them against [`Checkpoint::covered_files`] first, as
    /// `lineage::fs::hash_tree` does.
    ///
    /// # Errors
    /// [`Error::CheckpointMismatch`] if the tree changed or the cursor is out of range, plus
    /// the errors of [`new`](Self::new).
    pub fn resume(paths: Vec<RelPath>, checkpoint: &Checkpoint) -> Result<Self, Error> {
        let mut b = Self::new(paths)?;
        if b.paths_hash != checkpoint.paths_hash {
            return Err(Error::CheckpointMismatch {
                reason: "the file list differs from the checkpointed one",
            });
        }
        let len = u64::try_from(b.paths.len()).unwrap_or(u64::MAX);
        if checkpoint.cursor > len || checkpoint.pending.len() > 64 {
            return Err(Error::CheckpointMismatch {
                reason: "cursor beyond the file list",
            });
        }
        // The frontier of n leaves has a pending node at level k exactly when bit k of n is set.
        let bits_match = checkpoint
            .pending
            .iter()
            .enumerate()
            .all(|(k, p)| p.is_some() == ((checkpoint.cursor >> k) & 1 == 1))
            && checkpoint
                .cursor
                .checked_shr(u32::try_from(checkpoint.pending.len()).unwrap_or(64))
                .unwrap_or(0)
                == 0;
        if !bits_match {
            return Err(Error::CheckpointMismatch {
                reason: "Merkle frontier inconsistent with the cursor",
            });
        }
        b.frontier = MerkleFrontier::from_parts(
            DATASET_NODE_TAG,
            checkpoint.pending.clone(),
            checkpoint.cursor,
        );
        b.size_bytes = checkpoint.size_bytes;
        b.covered_files = checkpoint.covered_files;
        Ok(b)
    }

    /// The sorted paths.
    #[must_use]
    pub fn paths(&self) -> &[RelPath] {
        &self.paths
    }

    /// Index of the next file to push.
    #[must_use]
    pub fn cursor(&self) -> usize {
        usize::try_from(self.frontier.count()).unwrap_or(usize::MAX)
    }

    /// The path of the next file to push, `None` when all are in.
    #[must_use]
    pub fn next_path(&self) -> Option<&RelPath> {
        self.paths.get(self.cursor())
    }

    /// Pushes the SHA-256 and size of the file at [`next_path`](Self::next_path), with an empty
    /// stamp (bytes in memory have no file state to bind). Pushes past the end are ignored.
    pub fn push(&mut self, file_hash: Digest, size: u64) {
        self.push_stamped(file_hash, size, &[]);
    }

    /// [`push`](Self::push), recording `stamp` (the file's state when it was hashed) in the
    /// checkpoint's `covered_files` chain ([`covered_files_step`]).
    pub fn push_stamped(&mut self, file_hash: Digest, size: u64, stamp: &[u8]) {
        if let Some(path) = self.next_path() {
            let leaf = dataset_leaf_hash(path, file_hash);
            self.covered_files = covered_files_step(self.covered_files, path, stamp);
            self.frontier.push(leaf);
            self.size_bytes = self.size_bytes.saturating_add(size);
        }
    }

    /// The state to save.
    #[must_use]
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint {
            paths_hash: self.paths_hash,
            cursor: self.frontier.count(),
            pending: self.frontier.pending().to_vec(),
            size_bytes: self.size_bytes,
            covered_files: self.covered_files,
        }
    }

    /// The finished dataset digest.
    ///
    /// # Errors
    /// [`Error::CheckpointMismatch`] if files are still missing; [`Error::EmptyDataset`].
    pub fn finish(self) -> Result<DatasetDigest, Error> {
        if self.cursor() != self.paths.len() {
            return Err(Error::CheckpointMismatch {
                reason: "finish called before every file was hashed",
            });
        }
        let root_hash = self.frontier.finish().ok_or(Error::EmptyDataset)?;
        Ok(DatasetDigest {
            root_hash,
            paths: self.paths,
            size_bytes: self.size_bytes,
        })
    }
}

fn paths_hash(paths: &[RelPath]) -> Digest {
    sha256_cbor(&Value::Array(vec![
        Value::text(CHECKPOINT_PATHS_TAG),
        Value::Array(paths.iter().map(|p| Value::text(p.as_str())).collect()),
    ]))
}

/// A snapshot-build checkpoint (§10): the cursor and the partial Merkle state, serialized as
/// canonical CBOR (see `docs/lineage.md` for the field list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// Binds the checkpoint to the sorted path list.
    pub paths_hash: Digest,
    /// Files already hashed.
    pub cursor: u64,
    /// Pending left nodes per Merkle level.
    pub pending: Vec<Option<Digest>>,
    /// Bytes hashed so far.
    pub size_bytes: u64,
    /// The [`covered_files_step`] chain over the `cursor` files already hashed: binds the
    /// checkpoint to the state those files were in, so a resumed build refuses it if any of them
    /// changed instead of vouching for bytes it did not hash.
    pub covered_files: Digest,
}

impl Checkpoint {
    /// Canonical CBOR bytes of the checkpoint.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let map: BTreeMap<String, Value> = [
            ("format", Value::text(CHECKPOINT_FORMAT)),
            ("paths_hash", self.paths_hash.to_cbor()),
            ("cursor", Value::Unsigned(self.cursor)),
            (
                "pending",
                Value::Array(
                    self.pending
                        .iter()
                        .map(|p| p.map_or(Value::Null, Digest::to_cbor))
                        .collect(),
                ),
            ),
            ("snapshot_size_bytes", Value::Unsigned(self.size_bytes)),
            ("covered_files", self.covered_files.to_cbor()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        Value::Map(map).to_canonical_bytes()
    }

    /// Parses checkpoint bytes (untrusted: strict canonical CBOR, exact field set).
    ///
    /// # Errors
    /// [`Error::Cbor`] if malformed.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let shape = || Error::Cbor {
            offset: 0,
            problem: CborProblem::Shape,
            source: None,
        };
        let Value::Map(map) = cbor::decode(bytes)? else {
            return Err(shape());
        };
        if map.len() != 6 || map.get("format") != Some(&Value::text(CHECKPOINT_FORMAT)) {
            return Err(shape());
        }
        let digest = |v: &Value| match v {
            Value::Bytes(b) => Digest::from_slice(b),
            _ => None,
        };
        let uint = |k: &str| match map.get(k) {
            Some(Value::Unsigned(n)) => Some(*n),
            _ => None,
        };
        let paths_hash = map.get("paths_hash").and_then(digest).ok_or_else(shape)?;
        let covered_files = map
            .get("covered_files")
            .and_then(digest)
            .ok_or_else(shape)?;
        let cursor = uint("cursor").ok_or_else(shape)?;
        let size_bytes = uint("snapshot_size_bytes").ok_or_else(shape)?;
        let Some(Value::Array(items)) = map.get("pending") else {
            return Err(shape());
        };
        let pending = items
            .iter()
            .map(|v| match v {
                Value::Null => Ok(None),
                other => digest(other).map(Some).ok_or_else(shape),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            paths_hash,
            cursor,
            pending,
            size_bytes,
            covered_files,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_normalized_paths_are_refused_not_rewritten() {
        for bad in ["", "/a", "a/", "a//b", "./a", "a/../b", "a/.", "a\0b"] {
            assert!(RelPath::new(bad).is_err(), "{bad:?}");
        }
        for good in ["a", "a/b", ".hidden", "a/..b", "ü/水"] {
            assert!(RelPath::new(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn duplicate_and_empty_sources_fail_with_their_codes() {
        let dup = dataset_root_hash([("a", &b""[..]), ("a", &b"x"[..])]);
        assert!(matches!(dup, Err(Error::DuplicatePath { .. })));
        let empty: Vec<(&str, &[u8])> = Vec::new();
        assert!(matches!(dataset_root_hash(empty), Err(Error::EmptyDataset)));
    }

    #[test]
    fn single_file_root_is_its_leaf_hash() -> Result<(), Error> {
        let d = dataset_root_hash([("a.txt", b"hello")])?;
        let leaf = dataset_leaf_hash(&RelPath::new("a.txt")?, sha256(b"hello"));
        assert_eq!(d.root_hash, leaf);
        Ok(())
    }

    #[test]
    fn checkpoint_round_trips_and_resume_gives_the_same_root() -> Result<(), Error> {
        let files: Vec<(String, Vec<u8>)> = (0..37u8)
            .map(|i| (format!("f{i:03}"), vec![i; 5]))
            .collect();
        let whole = dataset_root_hash(files.iter().map(|(p, b)| (p.as_str(), b.as_slice())))?;
        let paths: Vec<RelPath> = files
            .iter()
            .map(|(p, _)| RelPath::new(p))
            .collect::<Result<_, _>>()?;
        let mut b = DatasetBuilder::new(paths.clone())?;
        for (_, bytes) in &files[..20] {
            b.push(sha256(bytes), 5);
        }
        let cp = Checkpoint::from_bytes(&b.checkpoint().to_bytes())?;
        let mut r = DatasetBuilder::resume(paths, &cp)?;
        for (_, bytes) in &files[20..] {
            r.push(sha256(bytes), 5);
        }
        assert_eq!(r.finish()?, whole);
        Ok(())
    }

    #[test]
    fn checkpoint_with_a_frontier_that_cannot_match_its_cursor_is_refused() -> Result<(), Error> {
        let paths: Vec<RelPath> = ["a", "b", "c"]
            .iter()
            .map(|p| RelPath::new(p))
            .collect::<Result<_, _>>()?;
        let mut b = DatasetBuilder::new(paths.clone())?;
        b.push(sha256(b"a"), 1);
        let mut cp = b.checkpoint();
        cp.cursor = 2; // one leaf's frontier claimed as two
        assert!(matches!(
            DatasetBuilder::resume(paths, &cp),
            Err(Error::CheckpointMismatch { .. })
        ));
        Ok(())
    }

    #[test]
    fn checkpoint_from_another_tree_is_refused() -> Result<(), Error> {
        let b = DatasetBuilder::new(vec![RelPath::new("a")?])?;
        let cp = b.checkpoint();
        let other = DatasetBuilder::resume(vec![RelPath::new("b")?], &cp);
        assert!(matches!(other, Err(Error::CheckpointMismatch { .. })));
        Ok(())
    }
}
