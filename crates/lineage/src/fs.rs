//! Native-only (feature `fs`): walking a dataset directory, hashing its files on every core, and
//! checkpoint files.
//!
//! Files are hashed by `threads` workers (`std::thread::scope`) that take the next file index
//! from a shared counter and stream it through SHA-256 with one fixed buffer each, so memory does
//! not grow with file size. Results travel over a bounded channel to the calling thread, which
//! feeds them in canonical order to the [`DatasetBuilder`]; that thread alone touches the Merkle
//! state and writes checkpoints.
//!
//! **What is hashed is what was listed, and nothing outside the root.** On unix every path
//! component below the root is opened relative to its parent directory without following a
//! symlink (`openat` with `O_NOFOLLOW`; directories with `O_DIRECTORY`), by the walk and again by
//! the hashing, so a file or directory swapped for a symlink between the two is refused
//! (`UNSUPPORTED_FILE_TYPE`), never followed out of the tree. Files are opened with `O_NONBLOCK`,
//! so a FIFO swapped in cannot hang the build, and the opened handle must be a regular file. Its
//! state (device, inode, size, modification and change times) is read from the handle before and
//! after hashing; a difference fails the build (`IO`: the file changed while it was hashed).
//!
//! **A checkpoint vouches only for files that did not change.** It carries a chain of those
//! states for every file it covers ([`Checkpoint::covered_files`]); resuming reads the states
//! again (no rehash) and refuses the checkpoint (`CHECKPOINT_MISMATCH`) if any differs. Checkpoint
//! files are written through a new, exclusively created temporary file (never through an existing
//! path or symlink) and read with a size cap, without following a symlink or blocking.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use sha2::{Digest as _, Sha256};

use crate::dataset::{Checkpoint, DatasetBuilder, DatasetDigest, RelPath, covered_files_step};
use crate::error::{Error, PathProblem};
use crate::hash::{Digest, sha256};
use crate::records::{RecordFormat, SampleLayout};

/// Largest checkpoint file read (a checkpoint of any tree is under 3 KiB: 64 frontier levels).
pub const MAX_CHECKPOINT_BYTES: u64 = 64 << 10;

/// A file's state when it was hashed: device, inode, size, modification and change time (seconds
/// and nanoseconds), each as 8 little-endian bytes. Where the platform lacks a field it is zero.
pub type Stamp = [u8; 56];

/// Read buffer per worker.
pub const READ_BUFFER_BYTES: usize = 1 << 20;
/// Result batches in flight between the workers and the ordering thread.
pub const CHANNEL_BOUND: usize = 64;
/// A worker sends its results after this many files...
pub const BATCH_FILES: usize = 64;
/// ...or this many bytes hashed, whichever comes first (so progress on big files stays live).
pub const BATCH_BYTES: u64 = 16 << 20;

type Batch = Vec<(usize, Result<(Digest, u64, Stamp), Error>)>;

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
    /// The regular file at its relative path under the root.
    File,
    /// A symlink hashed as its target path (read when the tree was walked).
    LinkTarget(Vec<u8>),
}

/// The dataset's files in canonical order, and how to reach them.
#[derive(Debug, Clone)]
pub struct Tree {
    root: Root,
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
/// Directories contribute only their files; empty directories are invisible. On unix each
/// directory below `root` is opened relative to its parent with `O_NOFOLLOW`, so a directory
/// swapped for a symlink during the walk is refused, not listed.
///
/// # Errors
/// [`Error::Io`], [`Error::InvalidPath`] (non-UTF-8 names), [`Error::UnsupportedFileType`]
/// (symlinks under [`SymlinkPolicy::Refuse`], sockets, FIFOs, devices), [`Error::EmptyDataset`].
pub fn walk(root: &Path, symlinks: SymlinkPolicy) -> Result<Tree, Error> {
    let tree_root = Root::open(root)?;
    let mut files = Vec::new();
    let mut stack: Vec<String> = vec![String::new()];
    while let Some(prefix) = stack.pop() {
        for (name, kind) in tree_root.list(&prefix)? {
            let name = name.into_string().map_err(|n| Error::InvalidPath {
                path: format!("{prefix}{}", n.to_string_lossy()),
                problem: PathProblem::NotUtf8,
            })?;
            let rel = format!("{prefix}{name}");
            match kind {
                Kind::Dir => stack.push(format!("{rel}/")),
                Kind::File => files.push((RelPath::new(&rel)?, Content::File)),
                Kind::Symlink => match symlinks {
                    SymlinkPolicy::Refuse => {
                        return Err(Error::UnsupportedFileType {
                            path: rel,
                            kind: "symlink",
                        });
                    }
                    SymlinkPolicy::HashTargetPath => {
                        let target = tree_root.read_link(&rel)?;
                        let target = target.into_string().map_err(|_| Error::InvalidPath {
                            path: rel.clone(),
                            problem: PathProblem::NotUtf8,
                        })?;
                        files.push((
                            RelPath::new(&rel)?,
                            Content::LinkTarget(target.into_bytes()),
                        ));
                    }
                },
                Kind::Other => {
                    return Err(Error::UnsupportedFileType {
                        path: rel,
                        kind: "special file",
                    });
                }
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
    Ok(Tree {
        root: tree_root,
        files,
    })
}

/// What a directory entry is, as listed (`lstat`: a symlink is a symlink).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Dir,
    File,
    Symlink,
    Other,
}

/// The stamp of an open file, from its handle (`fstat`).
fn stamp_of(meta: &fs::Metadata) -> Stamp {
    let fields: [u64; 7] = stamp_fields(meta);
    let mut stamp = [0u8; 56];
    for (slot, field) in stamp.chunks_exact_mut(8).zip(fields) {
        slot.copy_from_slice(&field.to_le_bytes());
    }
    stamp
}

#[cfg(unix)]
fn stamp_fields(meta: &fs::Metadata) -> [u64; 7] {
    use std::os::unix::fs::MetadataExt as _;
    [
        meta.dev(),
        meta.ino(),
        meta.size(),
        meta.mtime().cast_unsigned(),
        meta.mtime_nsec().cast_unsigned(),
        meta.ctime().cast_unsigned(),
        meta.ctime_nsec().cast_unsigned(),
    ]
}

#[cfg(not(unix))]
fn stamp_fields(meta: &fs::Metadata) -> [u64; 7] {
    let since = |t: std::io::Result<std::time::SystemTime>| {
        t.ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .unwrap_or_default()
    };
    let modified = since(meta.modified());
    [
        0,
        0,
        meta.len(),
        modified.as_secs(),
        u64::from(modified.subsec_nanos()),
        0,
        0,
    ]
}

/// Opens the file `rel` of `tree` for hashing, refusing anything but the regular file listed:
/// the handle's own type decides, after an open that neither follows a symlink nor blocks.
fn open_listed(tree: &Tree, rel: &RelPath) -> Result<(File, fs::Metadata), Error> {
    let file = tree.root.open_file(rel.as_str())?;
    let meta = file
        .metadata()
        .map_err(|e| io_err(&tree.root.path(rel.as_str()), e))?;
    if !meta.is_file() {
        return Err(Error::UnsupportedFileType {
            path: rel.as_str().to_owned(),
            kind: if meta.is_dir() {
                "directory"
            } else {
                "special file"
            },
        });
    }
    Ok((file, meta))
}

/// The stamp a file has now, without reading it (for checking a checkpoint).
fn current_stamp(tree: &Tree, rel: &RelPath, content: &Content) -> Result<Stamp, Error> {
    match content {
        Content::LinkTarget(target) => Ok(link_stamp(target)),
        Content::File => open_listed(tree, rel).map(|(_, meta)| stamp_of(&meta)),
    }
}

/// A link hashed as its target path is stamped with that path (read again by every walk).
fn link_stamp(target: &[u8]) -> Stamp {
    let mut stamp = [0u8; 56];
    stamp[..32].copy_from_slice(&sha256(target).0);
    stamp
}

/// Streams one file through SHA-256; returns its hash, size and stamp.
fn hash_content(
    tree: &Tree,
    rel: &RelPath,
    c: &Content,
    buf: &mut [u8],
) -> Result<(Digest, u64, Stamp), Error> {
    match c {
        Content::LinkTarget(t) => Ok((
            sha256(t),
            u64::try_from(t.len()).unwrap_or(u64::MAX),
            link_stamp(t),
        )),
        Content::File => {
            let path = tree.root.path(rel.as_str());
            let (mut f, before) = open_listed(tree, rel)?;
            let mut h = Sha256::new();
            let mut size = 0u64;
            loop {
                let n = match f.read(buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(io_err(&path, e)),
                };
                h.update(buf.get(..n).unwrap_or_default());
                size = size.saturating_add(u64::try_from(n).unwrap_or(u64::MAX));
            }
            // The bytes hashed are the file's only if nothing changed it meanwhile.
            let after = f.metadata().map_err(|e| io_err(&path, e))?;
            let stamp = stamp_of(&before);
            if stamp_of(&after) != stamp || size != before.len() {
                return Err(Error::FileChanged {
                    path: rel.as_str().to_owned(),
                    reason: "it changed while it was hashed",
                });
            }
            Ok((Digest(h.finalize().into()), size, stamp))
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

/// Reads a checkpoint file; `Ok(None)` if it does not exist. The file is opened without
/// following a symlink or blocking, must be a regular file, and is read up to
/// [`MAX_CHECKPOINT_BYTES`].
///
/// # Errors
/// [`Error::Io`] (also for a symlink, a special file or an oversized file), [`Error::Cbor`].
pub fn read_checkpoint(path: &Path) -> Result<Option<Checkpoint>, Error> {
    let file = match open_no_follow(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err(path, e)),
    };
    let meta = file.metadata().map_err(|e| io_err(path, e))?;
    if !meta.is_file() {
        return Err(io_err(
            path,
            std::io::Error::other("a checkpoint must be a regular file"),
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_CHECKPOINT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_err(path, e))?;
    if bytes.len() as u64 > MAX_CHECKPOINT_BYTES {
        return Err(io_err(
            path,
            std::io::Error::other("larger than any checkpoint (MAX_CHECKPOINT_BYTES)"),
        ));
    }
    Checkpoint::from_bytes(&bytes).map(Some)
}

/// Writes a checkpoint atomically, by the workspace's rules for output files (`output-file`): a
/// temporary file beside it created exclusively under a random name (so a symlink or file planted
/// beside the checkpoint is never followed or overwritten), `fsync`, rename over `path`, `fsync`
/// of the directory. Two runs never share a temporary name.
///
/// # Errors
/// [`Error::Io`].
pub fn write_checkpoint(path: &Path, cp: &Checkpoint) -> Result<(), Error> {
    output_file::write(output_file::Destination::new(path), |out| {
        out.write_all(&cp.to_bytes())
    })
    .map_err(|e| io_err(path, e))
}

/// Checks that the files a checkpoint covers (the first `cursor` of `tree`) are in the state
/// they were hashed in, by their stamps (no file is read).
fn check_covered_files(tree: &Tree, cp: &Checkpoint) -> Result<(), Error> {
    let cursor = usize::try_from(cp.cursor).unwrap_or(usize::MAX);
    let mut chain = crate::dataset::covered_files_start();
    for (rel, content) in tree.files.iter().take(cursor) {
        chain = covered_files_step(chain, rel, &current_stamp(tree, rel, content)?);
    }
    if chain != cp.covered_files {
        return Err(Error::CheckpointMismatch {
            reason: "a file the checkpoint covers changed since it was hashed (identity, size or times)",
        });
    }
    Ok(())
}

/// Hashes every file of `tree` into `dataset_root_hash`, on `opts.threads` cores, resuming from
/// and writing `opts.checkpoint`.
///
/// A checkpoint is used only if every file it covers is in the state it was hashed in (same
/// device, inode, size and times); the files after it are hashed now.
///
/// # Errors
/// [`Error::Io`], [`Error::FileChanged`], [`Error::UnsupportedFileType`] (a listed file that is
/// now a symlink or special file), [`Error::CheckpointMismatch`] (checkpoint of another tree, or
/// a covered file changed since), [`Error::Cbor`] (corrupt checkpoint).
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
        Some(cp) => {
            let builder = DatasetBuilder::resume(tree.paths(), &cp)?;
            check_covered_files(tree, &cp)?;
            builder
        }
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
                        let Some((rel, content)) = files.get(i).filter(|_| i < stop_at) else {
                            break;
                        };
                        let r = hash_content(tree, rel, content, &mut buf);
                        batch_bytes += r.as_ref().map_or(0, |(_, n, _)| *n);
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
            let mut waiting: BTreeMap<usize, (Digest, u64, Stamp)> = BTreeMap::new();
            let mut bytes_done = 0u64;
            let outcome = (|| {
                for (i, r) in rx.iter().flatten() {
                    waiting.insert(i, r?);
                    while let Some((hash, size, stamp)) = waiting.remove(&builder.cursor()) {
                        builder.push_stamped(hash, size, &stamp);
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

/// The samples of `tree` (docs/lineage.md §3.5): each record-oriented file holds its records,
/// any other file (and a symlink hashed as its target path) one sample. JSON Lines and CSV files
/// are read once more and counted as they stream by ([`RecordCounter`](crate::records::RecordCounter)); Parquet and `.ald`
/// files are handed, opened as the walk listed them, to `count_metadata`, which returns their
/// row count (their metadata is verified by the format's own library, which this crate does not
/// link). Files are read in canonical order on the calling thread; memory does not grow with
/// their size.
///
/// # Errors
/// [`Error::Io`], [`Error::UnsupportedFileType`] for a file replaced since the walk, and what
/// `count_metadata` returns.
pub fn sample_layout(
    tree: &Tree,
    count_metadata: &mut dyn FnMut(RecordFormat, &RelPath, File) -> Result<u64, Error>,
) -> Result<SampleLayout, Error> {
    let mut counts = Vec::with_capacity(tree.files.len());
    let mut buffer = vec![0u8; 1 << 20];
    for (rel, content) in &tree.files {
        let format = match content {
            Content::File => RecordFormat::of_path(rel.as_str()),
            Content::LinkTarget(_) => None,
        };
        let Some(format) = format else {
            counts.push(1);
            continue;
        };
        let (mut file, _) = open_listed(tree, rel)?;
        let count = match format.counter() {
            Some(mut counter) => {
                loop {
                    let read = file
                        .read(&mut buffer)
                        .map_err(|e| io_err(&tree.root.path(rel.as_str()), e))?;
                    if read == 0 {
                        break;
                    }
                    counter.feed(&buffer[..read]);
                }
                counter.finish()
            }
            None => count_metadata(format, rel, file)?,
        };
        counts.push(count);
    }
    SampleLayout::new(counts)
}

/// Opens `path` for reading without following a symlink at its last component and without
/// blocking (a FIFO opens at once; the caller checks the handle's type).
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    #[cfg(unix)]
    {
        use rustix::fs::{Mode, OFlags};
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        Ok(File::from(rustix::fs::open(path, flags, Mode::empty())?))
    }
    #[cfg(not(unix))]
    {
        if fs::symlink_metadata(path)?.file_type().is_symlink() {
            return Err(std::io::Error::other("a symlink is not followed"));
        }
        File::open(path)
    }
}

#[cfg(unix)]
mod root {
    //! The dataset root held open, and every path below it resolved from that descriptor one
    //! component at a time with `O_NOFOLLOW` (`openat`), so nothing outside the tree is reached
    //! through a symlink, whenever it appears.

    use std::ffi::OsString;
    use std::fs::File;
    use std::os::fd::{AsFd as _, OwnedFd};
    use std::os::unix::ffi::OsStringExt as _;
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use rustix::fs::{AtFlags, CWD, Dir, FileType, Mode, OFlags, openat, readlinkat, statat};
    use rustix::io::Errno;

    use super::{Kind, io_err};
    use crate::error::Error;

    /// A directory below the root: never through a symlink.
    const DIR: OFlags = OFlags::RDONLY
        .union(OFlags::DIRECTORY)
        .union(OFlags::NOFOLLOW)
        .union(OFlags::CLOEXEC);
    /// A file to hash: never through a symlink, never blocking (a FIFO opens at once and is then
    /// refused by its type), never becoming the controlling terminal.
    const FILE: OFlags = OFlags::RDONLY
        .union(OFlags::NOFOLLOW)
        .union(OFlags::NONBLOCK)
        .union(OFlags::NOCTTY)
        .union(OFlags::CLOEXEC);

    #[derive(Debug, Clone)]
    pub(super) struct Root {
        path: PathBuf,
        fd: Arc<OwnedFd>,
    }

    /// `rel` split into its directory part and its last component.
    fn split(rel: &str) -> (&str, &str) {
        rel.rsplit_once('/').unwrap_or(("", rel))
    }

    impl Root {
        /// Opens the root directory. The root itself is the caller's choice and may be reached
        /// through a symlink; nothing below it is.
        pub(super) fn open(path: &Path) -> Result<Self, Error> {
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let fd = openat(CWD, path, flags, Mode::empty()).map_err(|e| io_err(path, e.into()))?;
            Ok(Self {
                path: path.to_path_buf(),
                fd: Arc::new(fd),
            })
        }

        /// The full path of `rel`, for messages.
        pub(super) fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
            self.path.join(rel)
        }

        fn error(&self, rel: &str, errno: Errno) -> Error {
            if errno == Errno::LOOP {
                // O_NOFOLLOW met a symlink where the walk had listed a file or directory.
                return Error::UnsupportedFileType {
                    path: rel.to_owned(),
                    kind: "symlink",
                };
            }
            io_err(&self.path(rel), errno.into())
        }

        /// Opens the directory `rel` (`""` for the root itself, components separated by `/`).
        fn dir(&self, rel: &str) -> Result<OwnedFd, Error> {
            let mut current =
                openat(self.fd.as_fd(), ".", DIR, Mode::empty()).map_err(|e| self.error("", e))?;
            for component in rel.split('/').filter(|c| !c.is_empty()) {
                current = match openat(current.as_fd(), component, DIR, Mode::empty()) {
                    Ok(fd) => fd,
                    // O_DIRECTORY is checked before O_NOFOLLOW on some systems: a symlink then
                    // fails with ENOTDIR. Say what it is.
                    Err(Errno::NOTDIR)
                        if statat(&current, component, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(
                            |stat| FileType::from_raw_mode(stat.st_mode) == FileType::Symlink,
                        ) =>
                    {
                        return Err(self.error(rel, Errno::LOOP));
                    }
                    Err(e) => return Err(self.error(rel, e)),
                };
            }
            Ok(current)
        }

        /// The entries of directory `prefix` (`""` or `"a/b/"`), typed as `lstat` sees them.
        pub(super) fn list(&self, prefix: &str) -> Result<Vec<(OsString, Kind)>, Error> {
            let dir_fd = self.dir(prefix)?;
            let listing = |e: Errno| io_err(&self.path(prefix), e.into());
            let mut out = Vec::new();
            for entry in Dir::read_from(&dir_fd).map_err(listing)? {
                let entry = entry.map_err(listing)?;
                let name = entry.file_name();
                if matches!(name.to_bytes(), b"." | b"..") {
                    continue;
                }
                let file_type = match entry.file_type() {
                    FileType::Unknown => {
                        let stat =
                            statat(&dir_fd, name, AtFlags::SYMLINK_NOFOLLOW).map_err(listing)?;
                        FileType::from_raw_mode(stat.st_mode)
                    }
                    known => known,
                };
                let kind = match file_type {
                    FileType::Directory => Kind::Dir,
                    FileType::RegularFile => Kind::File,
                    FileType::Symlink => Kind::Symlink,
                    _ => Kind::Other,
                };
                out.push((OsString::from_vec(name.to_bytes().to_vec()), kind));
            }
            Ok(out)
        }

        /// The target of the symlink `rel`, as stored.
        pub(super) fn read_link(&self, rel: &str) -> Result<OsString, Error> {
            let (dir, name) = split(rel);
            let target =
                readlinkat(self.dir(dir)?, name, Vec::new()).map_err(|e| self.error(rel, e))?;
            Ok(OsString::from_vec(target.into_bytes()))
        }

        /// Opens the file `rel` for reading: no component followed through a symlink, no
        /// blocking. The caller checks the handle's type.
        pub(super) fn open_file(&self, rel: &str) -> Result<File, Error> {
            let (dir, name) = split(rel);
            let fd = openat(self.dir(dir)?, name, FILE, Mode::empty())
                .map_err(|e| self.error(rel, e))?;
            Ok(File::from(fd))
        }
    }
}

#[cfg(not(unix))]
mod root {
    //! The portable fallback: paths joined to the root, symlinks refused by `symlink_metadata`
    //! just before opening, and the opened handle's type checked by the caller. (Only unix gets
    //! the component-by-component `openat`, which leaves no window between check and use.)

    use std::ffi::OsString;
    use std::fs::{self, File};
    use std::path::{Path, PathBuf};

    use super::{Kind, io_err};
    use crate::error::Error;

    #[derive(Debug, Clone)]
    pub(super) struct Root {
        path: PathBuf,
    }

    impl Root {
        pub(super) fn open(path: &Path) -> Result<Self, Error> {
            fs::read_dir(path).map_err(|e| io_err(path, e))?;
            Ok(Self {
                path: path.to_path_buf(),
            })
        }

        pub(super) fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
            self.path.join(rel)
        }

        pub(super) fn list(&self, prefix: &str) -> Result<Vec<(OsString, Kind)>, Error> {
            let dir = self.path(prefix);
            let mut out = Vec::new();
            for entry in fs::read_dir(&dir).map_err(|e| io_err(&dir, e))? {
                let entry = entry.map_err(|e| io_err(&dir, e))?;
                let ft = entry.file_type().map_err(|e| io_err(&entry.path(), e))?;
                let kind = if ft.is_symlink() {
                    Kind::Symlink
                } else if ft.is_dir() {
                    Kind::Dir
                } else if ft.is_file() {
                    Kind::File
                } else {
                    Kind::Other
                };
                out.push((entry.file_name(), kind));
            }
            Ok(out)
        }

        pub(super) fn read_link(&self, rel: &str) -> Result<OsString, Error> {
            let path = self.path(rel);
            fs::read_link(&path)
                .map(PathBuf::into_os_string)
                .map_err(|e| io_err(&path, e))
        }

        pub(super) fn open_file(&self, rel: &str) -> Result<File, Error> {
            let path = self.path(rel);
            let meta = fs::symlink_metadata(&path).map_err(|e| io_err(&path, e))?;
            if meta.file_type().is_symlink() {
                return Err(Error::UnsupportedFileType {
                    path: rel.to_owned(),
                    kind: "symlink",
                });
            }
            File::open(&path).map_err(|e| io_err(&path, e))
        }
    }
}

use root::Root;
