//! Native-only (feature `fs`): walking a dataset directory, hashing its files on every core, and
//! checkpoint files.
//!
//! Files are hashed by `threads` workers (`std::thread::scope`) that take the next file index
//! from a shared counter and stream it through SHA-256 with one fixed buffer each, so memory does
//! not grow with file size. Results travel over a bounded channel to the calling thread, which
//! feeds them in canonical order to the [`DatasetBuilder`]; that thread alone touches the Merkle
//! state and writes checkpoints.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use sha2::{Digest as _, Sha256};

use crate::dataset::{Checkpoint, DatasetBuilder, DatasetDigest, RelPath};
use crate::error::{Error, PathProblem};
use crate::hash::{Digest, sha256};

/// Read buffer per worker.
pub const READ_BUFFER_BYTES: usize = 1 << 20;
/// Result batches in flight between the workers and the ordering thread.
pub const CHANNEL_BOUND: usize = 64;
/// A worker sends its results after this many files...
pub const BATCH_FILES: usize = 64;
/// ...or this many bytes hashed, whichever comes first (so progress on big files stays live).
pub const BATCH_BYTES: u64 = 16 << 20;

type Batch = Vec<(usize, Result<(Digest, u64), Error>)>;

/// What to do with a symlink found while walking.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SymlinkPolicy {
    /// Fail with `UNSUPPORTED_FILE_TYPE` (the default: links are never followed).
    #[default]
    Refuse,
    /// Treat the link as a file whose bytes are the link target path as stored (not followed).
    HashTargetPath,
}

/// Where a file's bytes come from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Content {
    File(PathBuf),
    LinkTarget(Vec<u8>),
}

/// The dataset's files in canonical order.
#[derive(Debug, Clone)]
pub struct Tree {
    files: Vec<(RelPath, Content)>,
}

impl Tree {
    /// The sorted relative paths.
    #[must_use]
    pub fn paths(&self) -> Vec<RelPath> {
        self.files.iter().map(|(p, _)| p.clone()).collect()
    }

    /// Number of files.
    #[must_use]
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether the tree has no files.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

fn io_err(path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        path: path.display().to_string(),
        source,
    }
}

/// Walks `root` (not following symlinks) and returns its regular files sorted by relative path.
/// Directories contribute only their files; empty directories are invisible.
///
/// # Errors
/// [`Error::Io`], [`Error::InvalidPath`] (non-UTF-8 names), [`Error::UnsupportedFileType`]
/// (symlinks under [`SymlinkPolicy::Refuse`], sockets, FIFOs, devices), [`Error::EmptyDataset`].
pub fn walk(root: &Path, symlinks: SymlinkPolicy) -> Result<Tree, Error> {
    let mut files = Vec::new();
    let mut stack: Vec<(PathBuf, String)> = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, prefix)) = stack.pop() {
        for entry in fs::read_dir(&dir).map_err(|e| io_err(&dir, e))? {
            let entry = entry.map_err(|e| io_err(&dir, e))?;
            let name = entry
                .file_name()
                .into_string()
                .map_err(|n| Error::InvalidPath {
                    path: format!("{prefix}{}", n.to_string_lossy()),
                    problem: PathProblem::NotUtf8,
                })?;
            let rel = format!("{prefix}{name}");
            let ft = entry.file_type().map_err(|e| io_err(&entry.path(), e))?;
            if ft.is_dir() {
                stack.push((entry.path(), format!("{rel}/")));
            } else if ft.is_file() {
                files.push((RelPath::new(&rel)?, Content::File(entry.path())));
            } else if ft.is_symlink() {
                match symlinks {
                    SymlinkPolicy::Refuse => {
                        return Err(Error::UnsupportedFileType {
                            path: rel,
                            kind: "symlink",
                        });
                    }
                    SymlinkPolicy::HashTargetPath => {
                        let target =
                            fs::read_link(entry.path()).map_err(|e| io_err(&entry.path(), e))?;
                        let target = target.into_os_string().into_string().map_err(|_| {
                            Error::InvalidPath {
                                path: rel.clone(),
                                problem: PathProblem::NotUtf8,
                            }
                        })?;
                        files.push((
                            RelPath::new(&rel)?,
                            Content::LinkTarget(target.into_bytes()),
                        ));
                    }
                }
            } else {
                return Err(Error::UnsupportedFileType {
                    path: rel,
                    kind: "special file",
                });
            }
        }
    }
    if files.is_empty() {
        return Err(Error::EmptyDataset);
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    if let Some(w) = files.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(Error::DuplicatePath {
            path: w[0].0.as_str().to_owned(),
        });
    }
    Ok(Tree { files })
}

/// Streams one file through SHA-256.
fn hash_content(c: &Content, buf: &mut [u8]) -> Result<(Digest, u64), Error> {
    match c {
        Content::LinkTarget(t) => Ok((sha256(t), u64::try_from(t.len()).unwrap_or(u64::MAX))),
        Content::File(path) => {
            let mut f = File::open(path).map_err(|e| io_err(path, e))?;
            let mut h = Sha256::new();
            let mut size = 0u64;
            loop {
                let n = match f.read(buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(io_err(path, e)),
                };
                h.update(buf.get(..n).unwrap_or_default());
                size = size.saturating_add(u64::try_from(n).unwrap_or(u64::MAX));
            }
            Ok((Digest(h.finalize().into()), size))
        }
    }
}

/// Progress of a build, reported to the caller's callback from the calling thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Files hashed and merged so far.
    pub files_done: u64,
    /// Files in the tree.
    pub files_total: u64,
    /// Bytes hashed so far.
    pub bytes_done: u64,
    /// SHA-256 of the file just merged (`sample_index = files_done - 1`), for `iter` records.
    pub file_hash: Digest,
}

/// Options of [`hash_tree`].
#[derive(Debug, Clone, Default)]
pub struct HashOptions {
    /// Worker threads; 0 means `std::thread::available_parallelism()`.
    pub threads: usize,
    /// Checkpoint file: resumed from when present, written every `checkpoint_every_files` files
    /// and when stopping, removed when the build completes.
    pub checkpoint: Option<PathBuf>,
    /// Checkpoint interval in files (0: only when stopping).
    pub checkpoint_every_files: u64,
    /// Stop (writing a checkpoint) once this many files are in; for interrupting on purpose.
    pub stop_after_files: Option<u64>,
}

/// How a build ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BuildOutcome {
    /// Every file is hashed.
    Complete(DatasetDigest),
    /// Stopped at `cursor` files; the checkpoint (if any) holds the state.
    Stopped {
        /// Files hashed.
        cursor: u64,
    },
}

/// Reads a checkpoint file; `Ok(None)` if it does not exist.
///
/// # Errors
/// [`Error::Io`], [`Error::Cbor`].
pub fn read_checkpoint(path: &Path) -> Result<Option<Checkpoint>, Error> {
    match fs::read(path) {
        Ok(bytes) => Checkpoint::from_bytes(&bytes).map(Some),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(path, e)),
    }
}

/// Writes a checkpoint atomically: a temporary file beside it, `fsync`, rename, `fsync` of the
/// directory (best effort: not every platform can open a directory).
///
/// # Errors
/// [`Error::Io`].
pub fn write_checkpoint(path: &Path, cp: &Checkpoint) -> Result<(), Error> {
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(".tmp");
    let tmp = path.with_file_name(tmp_name);
    {
        let mut f = File::create(&tmp).map_err(|e| io_err(&tmp, e))?;
        f.write_all(&cp.to_bytes()).map_err(|e| io_err(&tmp, e))?;
        f.sync_all().map_err(|e| io_err(&tmp, e))?;
    }
    fs::rename(&tmp, path).map_err(|e| io_err(path, e))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && let Ok(d) = File::open(dir)
    {
        // Best effort: the rename is already durable on most filesystems without it.
        let _ = d.sync_all();
    }
    Ok(())
}

/// Hashes every file of `tree` into `dataset_root_hash`, on `opts.threads` cores, resuming from
/// and writing `opts.checkpoint`.
///
/// # Errors
/// [`Error::Io`], [`Error::CheckpointMismatch`] (checkpoint of another tree), [`Error::Cbor`]
/// (corrupt checkpoint).
pub fn hash_tree(
    tree: &Tree,
    opts: &HashOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<BuildOutcome, Error> {
    let mut builder = match opts
        .checkpoint
        .as_deref()
        .map(read_checkpoint)
        .transpose()?
        .flatten()
    {
        Some(cp) => DatasetBuilder::resume(tree.paths(), &cp)?,
        None => DatasetBuilder::new(tree.paths())?,
    };
    let total = tree.files.len();
    let start = builder.cursor();
    let stop_at = opts
        .stop_after_files
        .and_then(|n| usize::try_from(n).ok())
        .map_or(total, |n| n.min(total));
    let threads = if opts.threads == 0 {
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
    } else {
        opts.threads
    };
    let files_total = u64::try_from(total).unwrap_or(u64::MAX);
    let mut last_cp = builder.cursor();
    let save = |b: &DatasetBuilder| -> Result<(), Error> {
        match &opts.checkpoint {
            Some(p) => write_checkpoint(p, &b.checkpoint()),
            None => Ok(()),
        }
    };

    if start < stop_at {
        let next = AtomicUsize::new(start);
        let abort = AtomicBool::new(false);
        let (tx, rx) = mpsc::sync_channel::<Batch>(CHANNEL_BOUND);
        let result = std::thread::scope(|s| -> Result<(), Error> {
            for _ in 0..threads.max(1) {
                let tx = tx.clone();
                let (next, abort, files) = (&next, &abort, &tree.files);
                s.spawn(move || {
                    let mut buf = vec![0u8; READ_BUFFER_BYTES];
                    // Results go out in batches: one channel message (and at most one wake-up)
                    // per BATCH_FILES small files instead of per file.
                    let mut batch: Batch = Vec::with_capacity(BATCH_FILES);
                    let mut batch_bytes = 0u64;
                    loop {
                        if abort.load(Ordering::Relaxed) {
                            break;
                        }
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some((_, content)) = files.get(i).filter(|_| i < stop_at) else {
                            break;
                        };
                        let r = hash_content(content, &mut buf);
                        batch_bytes += r.as_ref().map_or(0, |(_, n)| *n);
                        batch.push((i, r));
                        if batch.len() >= BATCH_FILES || batch_bytes >= BATCH_BYTES {
                            if tx.send(std::mem::take(&mut batch)).is_err() {
                                return;
                            }
                            batch_bytes = 0;
                        }
                    }
                    if !batch.is_empty() {
                        let _ = tx.send(batch);
                    }
                });
            }
            drop(tx);
            // Reorder buffer: results arrive out of order, the Merkle leaves go in order.
            let mut waiting: BTreeMap<usize, (Digest, u64)> = BTreeMap::new();
            let mut bytes_done = 0u64;
            let outcome = (|| {
                for (i, r) in rx.iter().flatten() {
                    waiting.insert(i, r?);
                    while let Some((hash, size)) = waiting.remove(&builder.cursor()) {
                        builder.push(hash, size);
                        bytes_done = bytes_done.saturating_add(size);
                        let done = builder.cursor();
                        progress(Progress {
                            files_done: u64::try_from(done).unwrap_or(u64::MAX),
                            files_total,
                            bytes_done,
                            file_hash: hash,
                        });
                        let every =
                            usize::try_from(opts.checkpoint_every_files).unwrap_or(usize::MAX);
                        if every > 0 && done - last_cp >= every && done < stop_at {
                            save(&builder)?;
                            last_cp = done;
                        }
                    }
                    if builder.cursor() >= stop_at {
                        break;
                    }
                }
                Ok(())
            })();
            abort.store(true, Ordering::Relaxed);
            // Dropping the receiver fails any blocked send, so every worker exits.
            drop(rx);
            outcome
        });
        result?;
    }

    if builder.cursor() < total {
        save(&builder)?;
        return Ok(BuildOutcome::Stopped {
            cursor: u64::try_from(builder.cursor()).unwrap_or(u64::MAX),
        });
    }
    let digest = builder.finish()?;
    if let Some(p) = &opts.checkpoint {
        // A finished checkpoint must not outlive the build: files may change before the next run.
        match fs::remove_file(p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(p, e)),
        }
    }
    Ok(BuildOutcome::Complete(digest))
}

/// Walks and hashes `root` in one call (all cores, no checkpoint).
///
/// # Errors
/// Those of [`walk`] and [`hash_tree`].
///
/// # Examples
/// ```
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("a.txt"), b"hello")?;
/// let d = lineage::fs::dataset_root_hash_dir(dir.path())?;
/// assert_eq!(d, lineage::dataset_root_hash([("a.txt", &b"hello"[..])])?);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn dataset_root_hash_dir(root: &Path) -> Result<DatasetDigest, Error> {
    let tree = walk(root, SymlinkPolicy::Refuse)?;
    match hash_tree(&tree, &HashOptions::default(), &mut |_| {})? {
        BuildOutcome::Complete(d) => Ok(d),
        BuildOutcome::Stopped { .. } => Err(Error::CheckpointMismatch {
            reason: "build stopped without a stop request",
        }),
    }
}
