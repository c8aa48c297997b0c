//! The native implementation (see the crate docs for the rules).

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Buffer size of the writer handed to [`write`](fn@write)'s closure.
pub const IO_BLOCK: usize = 1 << 20;

/// What to do when the destination already exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Existing {
    /// Replace an existing regular file (atomically) or, with [`write_dir`], an earlier output
    /// directory. The semantics of `std::fs::write`, and the library default.
    #[default]
    Replace,
    /// Refuse with [`io::ErrorKind::AlreadyExists`]: the CLIs' default, lifted by `--force`.
    Keep,
}

impl Existing {
    /// [`Existing::Replace`] when `force` is set, else [`Existing::Keep`].
    #[must_use]
    pub const fn replace_if(force: bool) -> Self {
        if force { Self::Replace } else { Self::Keep }
    }
}

/// Who may read the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Access {
    /// A new file gets `0666 & !umask` (as `File::create`); a replaced file keeps its mode.
    #[default]
    Shared,
    /// Owner only (`0600`; directories `0700`), whatever the umask or the replaced file's mode:
    /// private keys and decrypted outputs.
    Private,
}

/// A path the user named as an output, with the policy for writing it.
///
/// Every `impl AsRef<Path>` converts into a `Destination` with the library defaults
/// ([`Existing::Replace`], [`Access::Shared`]), so functions that take
/// `impl Into<Destination>` accept plain paths too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    path: PathBuf,
    existing: Existing,
    access: Access,
    /// The process's standard output rather than `path` (`-o -`).
    stdout: bool,
}

impl<P: AsRef<Path>> From<P> for Destination {
    fn from(path: P) -> Self {
        Self::new(path)
    }
}

/// What a destination path is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Nothing exists there: the file will be created.
    Missing,
    /// A regular file (the path itself, or the file a symlink points to): replaced atomically.
    RegularFile {
        /// The file that will be replaced (symlinks resolved).
        real_path: PathBuf,
    },
    /// A character device or a FIFO (or a symlink to one): written in place, never renamed over.
    Stream,
    /// A directory (only [`write_dir`] writes one).
    Directory,
}

impl Destination {
    /// `path`, with the library defaults: replace an existing regular file, shared access.
    #[must_use]
    pub fn new(path: impl AsRef<Path>) -> Self {
        Self {
            path: path.as_ref().to_path_buf(),
            existing: Existing::Replace,
            access: Access::Shared,
            stdout: false,
        }
    }

    /// The process's standard output (what `-o -` names): written in place like a FIFO, whatever
    /// it is connected to (a pipe, a terminal, or a file the shell opened: then written at the
    /// shell's offset, never renamed over). Its path, for messages, is `-`.
    #[must_use]
    pub fn stdout() -> Self {
        Self {
            stdout: true,
            ..Self::new("-")
        }
    }

    /// Whether this is the process's standard output.
    #[must_use]
    pub fn is_stdout(&self) -> bool {
        self.stdout
    }

    /// Sets what happens to an existing destination.
    #[must_use]
    pub fn existing(mut self, existing: Existing) -> Self {
        self.existing = existing;
        self
    }

    /// Sets who may read the output.
    #[must_use]
    pub fn access(mut self, access: Access) -> Self {
        self.access = access;
        self
    }

    /// The path as given.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The policy for an existing destination.
    #[must_use]
    pub fn existing_policy(&self) -> Existing {
        self.existing
    }

    /// Who may read the output.
    #[must_use]
    pub fn access_policy(&self) -> Access {
        self.access
    }

    /// What the path is now (symlinks followed).
    ///
    /// # Errors
    /// `NotFound` for a symlink to nothing; `InvalidInput` for a block device or a socket; any
    /// error of `stat`.
    pub fn kind(&self) -> io::Result<Kind> {
        if self.stdout {
            return Ok(Kind::Stream);
        }
        let link = match fs::symlink_metadata(&self.path) {
            Ok(meta) => meta,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Kind::Missing),
            Err(error) => return Err(error),
        };
        let is_link = link.file_type().is_symlink();
        let meta = if is_link {
            fs::metadata(&self.path).map_err(|error| {
                if error.kind() == io::ErrorKind::NotFound {
                    io::Error::new(
                        io::ErrorKind::NotFound,
                        format!(
                            "{} is a symlink to a file that does not exist; not followed",
                            self.path.display()
                        ),
                    )
                } else {
                    error
                }
            })?
        } else {
            link
        };
        let file_type = meta.file_type();
        if file_type.is_file() {
            let real_path = if is_link {
                fs::canonicalize(&self.path)?
            } else {
                self.path.clone()
            };
            return Ok(Kind::RegularFile { real_path });
        }
        if file_type.is_dir() {
            return Ok(Kind::Directory);
        }
        if is_stream(&file_type) {
            return Ok(Kind::Stream);
        }
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is neither a regular file, a character device nor a FIFO; not written",
                self.path.display()
            ),
        ))
    }

    /// Checks, before any work is done, that a file may be written here: refuses an existing
    /// regular file under [`Existing::Keep`] and a directory. Writing checks again.
    ///
    /// # Errors
    /// `AlreadyExists`, `InvalidInput` (a directory, block device or socket), or as
    /// [`Destination::kind`].
    pub fn check(&self) -> io::Result<Kind> {
        let kind = self.kind()?;
        match &kind {
            Kind::RegularFile { .. } if self.existing == Existing::Keep => Err(self.exists_error()),
            Kind::Directory => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is a directory; name a file", self.path.display()),
            )),
            _ => Ok(kind),
        }
    }

    /// Where scratch files of this output go (spill files, the temporary file): the directory of
    /// the file that will be replaced or created, so the final rename stays on one filesystem;
    /// the system's temporary directory for a device or FIFO.
    ///
    /// # Errors
    /// As [`Destination::kind`].
    pub fn scratch_dir(&self) -> io::Result<PathBuf> {
        Ok(match self.kind()? {
            Kind::RegularFile { real_path } => parent_dir(&real_path),
            Kind::Missing | Kind::Directory => parent_dir(&self.path),
            Kind::Stream => std::env::temp_dir(),
        })
    }

    fn exists_error(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "{} already exists; it was not replaced",
                self.path.display()
            ),
        )
    }
}

#[cfg(unix)]
fn is_stream(file_type: &fs::FileType) -> bool {
    use std::os::unix::fs::FileTypeExt as _;
    file_type.is_char_device() || file_type.is_fifo()
}

#[cfg(not(unix))]
fn is_stream(_file_type: &fs::FileType) -> bool {
    false
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The writer handed to [`write`](fn@write)'s closure and held by a [`PendingFile`].
pub type Writer = BufWriter<File>;

/// Writes `destination` through `write`, by the crate's rules: a regular file atomically
/// (temporary file, fsync, rename, directory fsync), a character device or FIFO in place.
///
/// # Errors
/// As [`Destination::check`] (`AlreadyExists` under [`Existing::Keep`]), any I/O error, or
/// whatever `write` returns; in every error case the previous content of a regular file is
/// unchanged and no temporary file is left.
pub fn write<T, E: From<io::Error>>(
    destination: impl Into<Destination>,
    write: impl FnOnce(&mut Writer) -> Result<T, E>,
) -> Result<T, E> {
    let mut pending = PendingFile::open(destination.into(), StreamMode::Direct)?;
    let value = write(pending.writer())?;
    pending.commit()?;
    Ok(value)
}

/// How a [`PendingFile`] writes a device or FIFO destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamMode {
    /// Straight through (the writer cannot seek).
    Direct,
    /// Into an anonymous scratch file copied to the stream on commit (the writer can seek).
    Scratch,
}

/// An output being written, for writers that cannot work inside one closure (a container whose
/// chunks arrive one by one, then a header patched in place). It is `Write + Seek` whatever the
/// destination: a device or FIFO destination is written to an anonymous scratch file first and
/// copied to it on commit. [`PendingFile::commit`] puts it in place; dropping it uncommitted
/// leaves the destination untouched and removes the temporary file.
#[derive(Debug)]
pub struct PendingFile {
    destination: Destination,
    out: Writer,
    state: Pending,
}

#[derive(Debug)]
enum Pending {
    /// A device or FIFO, written through.
    InPlace,
    /// A device or FIFO, written at commit from the scratch file the writer fills.
    Scratch,
    /// A temporary file to rename over `target` in `dir`.
    Temporary {
        temp: tempfile::TempPath,
        registered: Registered,
        target: PathBuf,
        dir: PathBuf,
        replaces: bool,
    },
}

impl PendingFile {
    /// Starts writing `destination`: checks it (as [`Destination::check`]) and opens the device
    /// or FIFO, or creates the temporary file with its final permissions.
    ///
    /// # Errors
    /// As [`Destination::check`], and I/O.
    pub fn create(destination: impl Into<Destination>) -> io::Result<Self> {
        Self::open(destination.into(), StreamMode::Scratch)
    }

    fn open(destination: Destination, stream: StreamMode) -> io::Result<Self> {
        let (target, replaces) = match destination.check()? {
            Kind::Stream => {
                let (file, state) = match stream {
                    StreamMode::Direct => (open_stream(&destination)?, Pending::InPlace),
                    StreamMode::Scratch => (
                        tempfile::tempfile_in(std::env::temp_dir())?,
                        Pending::Scratch,
                    ),
                };
                return Ok(Self {
                    destination,
                    out: BufWriter::with_capacity(IO_BLOCK, file),
                    state,
                });
            }
            Kind::Missing => (destination.path.clone(), false),
            Kind::RegularFile { real_path } => (real_path, true),
            Kind::Directory => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is a directory; name a file", destination.path.display()),
                ));
            }
        };
        let dir = parent_dir(&target);
        let name = target.file_name().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} has no file name", destination.path.display()),
            )
        })?;
        let mut prefix = OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        set_creation_mode(&mut builder, destination.access);
        // O_CREAT | O_EXCL under a random name: never through a planted symlink.
        let (file, temp) = builder.tempfile_in(&dir)?.into_parts();
        let registered = Registered::new(temp.to_path_buf(), Entry::File);
        match destination.access {
            Access::Private => set_mode(&file, 0o600)?,
            Access::Shared if replaces => {
                file.set_permissions(fs::metadata(&target)?.permissions())?
            }
            Access::Shared => {}
        }
        Ok(Self {
            destination,
            out: BufWriter::with_capacity(IO_BLOCK, file),
            state: Pending::Temporary {
                temp,
                registered,
                target,
                dir,
                replaces,
            },
        })
    }

    /// The buffered writer.
    pub fn writer(&mut self) -> &mut Writer {
        &mut self.out
    }

    /// A writer of the file at chosen offsets, from several threads at once, with a flush to
    /// disk requested every `every` bytes ([`crate::PositionalWriter`]); what the buffered writer
    /// holds is flushed first. Offsets are from the start of the output; the file is committed
    /// or discarded by this `PendingFile` as usual (drop the writer first: that ends its helper
    /// thread).
    ///
    /// # Errors
    /// I/O.
    pub fn positional(&mut self, every: usize) -> io::Result<crate::PositionalWriter> {
        io::Write::flush(&mut self.out)?;
        crate::PositionalWriter::new(self.out.get_ref(), every)
    }

    /// The destination being written.
    #[must_use]
    pub fn destination(&self) -> &Destination {
        &self.destination
    }

    /// Flushes, fsyncs and renames the file into place (a device or FIFO is only flushed), then
    /// fsyncs the directory.
    ///
    /// # Errors
    /// I/O; `AlreadyExists` if, under [`Existing::Keep`], a file appeared at the destination
    /// meanwhile (it is left as it is). The temporary file is removed on every error.
    pub fn commit(self) -> io::Result<()> {
        let Self {
            destination,
            out,
            state,
        } = self;
        let mut file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        if let Pending::Scratch = state {
            io::Seek::seek(&mut file, io::SeekFrom::Start(0))?;
            let mut stream = open_stream(&destination)?;
            io::copy(&mut file, &mut stream)?;
            return Ok(());
        }
        let Pending::Temporary {
            temp,
            registered,
            target,
            dir,
            replaces,
        } = state
        else {
            return Ok(());
        };
        file.sync_all()?;
        drop(file);
        // Keep the file being replaced open across the rename: the rename then only unlinks it,
        // and the filesystem frees its blocks (and trims them, on a `discard` mount) when the last
        // handle closes, on a short-lived thread after the new file is durable. Opened without
        // blocking, so a FIFO swapped in meanwhile cannot hang us.
        let old_handle = if replaces {
            open_nonblocking(&target)
        } else {
            None
        };
        {
            let mut live = registered.lock();
            let persisted = match destination.existing {
                Existing::Keep => temp.persist_noclobber(&target).map_err(|error| {
                    if error.error.kind() == io::ErrorKind::AlreadyExists {
                        destination.exists_error()
                    } else {
                        error.error
                    }
                }),
                Existing::Replace => still_replaceable(&target)
                    .and_then(|()| temp.persist(&target).map_err(|error| error.error)),
            };
            live.remove(&registered.path);
            persisted?;
        }
        sync_directory(&dir)?;
        if let Some(old_handle) = old_handle {
            // If the thread cannot be started, the handle is simply closed here.
            let _ = std::thread::Builder::new()
                .name("release-replaced-file".into())
                .spawn(move || drop(old_handle));
        }
        Ok(())
    }
}

impl io::Write for PendingFile {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.out.write(bytes)
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl io::Seek for PendingFile {
    fn seek(&mut self, position: io::SeekFrom) -> io::Result<u64> {
        self.out.seek(position)
    }
}

/// Opens a device, FIFO or standard output for writing (never created, never truncated: a FIFO or
/// device has nothing to truncate, and standard output is written at the shell's offset).
fn open_stream(destination: &Destination) -> io::Result<File> {
    if destination.stdout {
        return stdout_file();
    }
    OpenOptions::new().write(true).open(&destination.path)
}

#[cfg(unix)]
fn stdout_file() -> io::Result<File> {
    use std::os::fd::AsFd as _;
    Ok(File::from(io::stdout().as_fd().try_clone_to_owned()?))
}

#[cfg(windows)]
fn stdout_file() -> io::Result<File> {
    use std::os::windows::io::AsHandle as _;
    Ok(File::from(io::stdout().as_handle().try_clone_to_owned()?))
}

#[cfg(not(any(unix, windows)))]
fn stdout_file() -> io::Result<File> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no standard output handle on this platform",
    ))
}

/// Just before renaming over `target`: it must still be a regular file or nothing (it may have
/// been swapped for a device or FIFO since [`Destination::check`]).
fn still_replaceable(target: &Path) -> io::Result<()> {
    match fs::symlink_metadata(target) {
        Ok(meta) if !meta.file_type().is_file() => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} stopped being a regular file while it was written; not replaced",
                target.display()
            ),
        )),
        Ok(_) => Ok(()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error),
    }
}

#[cfg(unix)]
fn open_nonblocking(path: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    file.metadata()
        .ok()
        .filter(fs::Metadata::is_file)
        .map(|_| file)
}

#[cfg(not(unix))]
fn open_nonblocking(_path: &Path) -> Option<File> {
    // Elsewhere an open file may not be replaced.
    None
}

#[cfg(unix)]
fn set_creation_mode(builder: &mut tempfile::Builder<'_, '_>, access: Access) {
    use std::os::unix::fs::PermissionsExt as _;
    // The mode passed to open(2); the kernel applies the umask, as for File::create.
    let mode = match access {
        Access::Shared => 0o666,
        Access::Private => 0o600,
    };
    builder.permissions(fs::Permissions::from_mode(mode));
}

#[cfg(not(unix))]
fn set_creation_mode(_builder: &mut tempfile::Builder<'_, '_>, _access: Access) {}

#[cfg(unix)]
fn set_mode(file: &File, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    file.set_permissions(fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_file: &File, _mode: u32) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn sync_directory(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_directory(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// Writes a directory output (SafeTensors exports: weights, config, tokenizer files) so that it
/// never mixes new files with old ones: `build` fills a new temporary directory beside the
/// destination, which then takes the destination's place.
///
/// - A destination that does not exist, or is an empty directory, is simply created or filled.
/// - An existing non-empty directory is refused under [`Existing::Keep`]. Under
///   [`Existing::Replace`] it is replaced only if every entry in it is a regular file whose name
///   is in `replaceable` (the names this kind of output writes): a directory holding anything else
///   is never deleted, so `-o ~ --force` cannot remove a home directory. The swap is one
///   `renameat2(RENAME_EXCHANGE)` on Linux (two renames elsewhere); the old directory is then
///   removed.
/// - Anything else at the destination (a file, a device) is refused.
///
/// Files that `build` writes should be fsynced (write them with [`write`](fn@write)); the directory itself
/// is fsynced before it is moved into place.
///
/// # Errors
/// `AlreadyExists`, `InvalidInput`, any I/O error, or whatever `build` returns; in every error case
/// the destination is unchanged and no temporary directory is left.
pub fn write_dir<T, E: From<io::Error>>(
    destination: impl Into<Destination>,
    replaceable: &[&str],
    build: impl FnOnce(&Path) -> Result<T, E>,
) -> Result<T, E> {
    let destination = destination.into();
    let path = &destination.path;
    let replace = match destination.kind()? {
        Kind::Missing => false,
        Kind::Directory if is_empty_dir(path)? => false,
        Kind::Directory => {
            if destination.existing == Existing::Keep {
                return Err(destination.exists_error().into());
            }
            check_replaceable_dir(path, replaceable)?;
            true
        }
        Kind::RegularFile { .. } | Kind::Stream => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} exists and is not a directory", path.display()),
            )
            .into());
        }
    };
    let parent = parent_dir(path);
    let name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} has no directory name", path.display()),
        )
    })?;
    let temp = create_temp_dir(&parent, name, destination.access)?;
    let registered = Registered::new(temp.clone(), Entry::Directory);
    let value = match build(&temp) {
        Ok(value) => value,
        Err(error) => {
            let _ = fs::remove_dir_all(&temp);
            registered.lock().remove(&temp);
            return Err(error);
        }
    };
    let moved = sync_directory(&temp).and_then(|()| {
        let mut live = registered.lock();
        let result = if replace {
            exchange_dirs(&temp, path)
        } else {
            // An empty directory at the destination is replaced by the rename on Unix; refuse a
            // non-empty one that appeared meanwhile (rename fails with ENOTEMPTY by itself).
            fs::rename(&temp, path)
        };
        if result.is_ok() && !replace {
            live.remove(&temp);
        }
        result
    });
    if let Err(error) = moved {
        let _ = fs::remove_dir_all(&temp);
        registered.lock().remove(&temp);
        return Err(error.into());
    }
    if replace {
        // `temp` now holds the old directory.
        let removed = fs::remove_dir_all(&temp);
        registered.lock().remove(&temp);
        removed?;
    }
    sync_directory(&parent)?;
    Ok(value)
}

fn is_empty_dir(path: &Path) -> io::Result<bool> {
    Ok(fs::read_dir(path)?.next().is_none())
}

fn check_replaceable_dir(path: &Path, replaceable: &[&str]) -> io::Result<()> {
    for entry in fs::read_dir(path)? {
        let entry = entry?;
        let name = entry.file_name();
        let known = name
            .to_str()
            .is_some_and(|name| replaceable.contains(&name));
        if !known || !entry.file_type()?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} holds {:?}, which this output does not write; not replaced (choose an \
                     empty or new directory)",
                    path.display(),
                    name
                ),
            ));
        }
    }
    Ok(())
}

/// A new directory `.NAME.<unique>.tmp` in `parent`, created with `mkdir` (so `0777 & !umask`,
/// or `0700` for private outputs).
fn create_temp_dir(parent: &Path, name: &std::ffi::OsStr, access: Access) -> io::Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    if access == Access::Private {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    #[cfg(not(unix))]
    let _ = access;
    for _ in 0..1000 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.subsec_nanos());
        let mut candidate = OsString::from(".");
        candidate.push(name);
        candidate.push(format!(
            ".{}-{}-{nanos}.tmp",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let candidate = parent.join(candidate);
        match builder.create(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
            Err(error) => return Err(error),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "could not find a free temporary directory name",
    ))
}

/// Swaps two directories: atomically on Linux, by two renames elsewhere.
#[cfg(target_os = "linux")]
fn exchange_dirs(new: &Path, old: &Path) -> io::Result<()> {
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        new,
        rustix::fs::CWD,
        old,
        rustix::fs::RenameFlags::EXCHANGE,
    )
    .map_err(io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn exchange_dirs(new: &Path, old: &Path) -> io::Result<()> {
    let aside = old.with_extension("old-output");
    fs::rename(old, &aside)?;
    if let Err(error) = fs::rename(new, old) {
        let _ = fs::rename(&aside, old);
        return Err(error);
    }
    fs::rename(&aside, new)
}

/// A temporary file or directory in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    File,
    Directory,
}

/// The temporary files and directories in flight, for [`remove_temporary_files_and_exit`]. The
/// lock is held across every rename, so an interrupted program either renamed a file completely
/// or removes it.
struct Live(Vec<(PathBuf, Entry)>);

impl Live {
    fn remove(&mut self, path: &Path) {
        self.0.retain(|(live, _)| live != path);
    }
}

static LIVE: Mutex<Live> = Mutex::new(Live(Vec::new()));

fn live() -> MutexGuard<'static, Live> {
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A registration in [`LIVE`], removed on drop (error paths and panics).
#[derive(Debug)]
struct Registered {
    path: PathBuf,
}

impl Registered {
    fn new(path: PathBuf, entry: Entry) -> Self {
        live().0.push((path.clone(), entry));
        Self { path }
    }

    fn lock(&self) -> MutexGuard<'static, Live> {
        live()
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        live().remove(&self.path);
    }
}

/// Removes every temporary file and directory of this process that is still in flight and
/// returns how many there were. After it returns the lock is released; use
/// [`remove_temporary_files_and_exit`] from a signal handler, which never releases it.
pub fn remove_temporary_files() -> usize {
    remove_where(&mut live(), |_| true)
}

/// Removes the entries in flight whose path satisfies `which`; returns how many.
fn remove_where(live: &mut Live, which: impl Fn(&Path) -> bool) -> usize {
    let mut removed = 0;
    live.0.retain(|(path, entry)| {
        if !which(path) {
            return true;
        }
        let _ = match entry {
            Entry::File => fs::remove_file(path),
            Entry::Directory => fs::remove_dir_all(path),
        };
        removed += 1;
        false
    });
    removed
}

/// For a program's interrupt handler (Ctrl-C, `SIGTERM`, `SIGHUP`): removes every temporary file
/// and directory in flight, then exits with `code` (130 is the shell's convention for SIGINT)
/// while still holding the lock that every rename takes, so nothing is renamed into place after
/// the interruption began.
pub fn remove_temporary_files_and_exit(code: i32) -> ! {
    let mut live = live();
    remove_where(&mut live, |_| true);
    std::process::exit(code)
}

#[cfg(test)]
mod tests;
