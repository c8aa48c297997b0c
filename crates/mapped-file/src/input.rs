//! Opening the files a program is given to read, the one way every native reader of the workspace
//! does it: without blocking, regular files only, and (for side files read whole) no further than
//! a bound.
//!
//! A path on a command line or in a configuration can name anything: a FIFO (opening it for
//! reading waits for a writer forever), a device (`/dev/zero` reads without end), a directory, a
//! symlink planted beside a file, or a file far larger than the few kilobytes a key, a card or a
//! list ever holds. [`open`] opens with `O_NONBLOCK` (a FIFO opens at once instead of waiting)
//! and refuses whatever the opened handle is if it is not a regular file; [`read`] and
//! [`read_to_string`] then read at most `limit` bytes and refuse a file that holds more, checking
//! its length first and stopping one byte past the limit in case it grows while read.
//!
//! Errors are `std::io::Error`s whose message names the path and what it is (`InvalidInput` for
//! something that is not a regular file or a symlink not followed, `FileTooLarge` for a file over
//! its bound, `InvalidData` for text that is not UTF-8), so a caller's `Io` error reads as one
//! line that says what to fix.

use std::fs::File;
use std::io::{Error, ErrorKind, Read as _};
use std::path::Path;

/// Whether [`open`] follows a symlink at the path's last component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Follow it: the path is the user's own choice (a command-line argument).
    Symlinks,
    /// Refuse it (`O_NOFOLLOW`): the path was derived from another one (a sidecar found by name
    /// beside a file, an object inside a store), so a link there was planted, not chosen.
    NoSymlinks,
}

/// The bound for a side file read whole when its format gives none of its own: a key, a
/// password, a certificate, a card, a list of buyers or of splits. 16 MiB is thousands of times
/// what any of them holds and small enough to read at once on any machine.
pub const SIDE_FILE_LIMIT: u64 = 16 << 20;

/// Opens `path` for reading without blocking, following a symlink at its last component as
/// `follow` says, and checks that the opened handle is a regular file.
///
/// # Errors
/// What opening reports (`NotFound`, `PermissionDenied`, ...); `InvalidInput` naming the path for
/// a directory, a device, a FIFO or a socket, and for a symlink under [`Follow::NoSymlinks`].
pub fn open(path: &Path, follow: Follow) -> std::io::Result<File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        // O_NONBLOCK changes nothing for a regular file; it makes opening a FIFO return at once.
        let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
        if follow == Follow::NoSymlinks {
            flags |= libc::O_NOFOLLOW;
        }
        options.custom_flags(flags);
    }
    #[cfg(not(unix))]
    if follow == Follow::NoSymlinks && std::fs::symlink_metadata(path)?.file_type().is_symlink() {
        return Err(symlink_refused(path));
    }
    let file = options.open(path).map_err(|error| {
        // O_NOFOLLOW on a symlink fails with ELOOP, which reads as "too many levels of symbolic
        // links": say what happened instead.
        #[cfg(unix)]
        if follow == Follow::NoSymlinks && error.raw_os_error() == Some(libc::ELOOP) {
            return symlink_refused(path);
        }
        Error::new(error.kind(), format!("{}: {error}", path.display()))
    })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(Some(path), &meta));
    }
    Ok(file)
}

/// The whole of the regular file at `path` (opened as [`open`] does), if it holds at most `limit`
/// bytes.
///
/// # Errors
/// As [`open`]; `FileTooLarge` naming the path and the bound for a larger file (nothing past
/// `limit + 1` bytes is read); what reading reports.
pub fn read(path: &Path, follow: Follow, limit: u64) -> std::io::Result<Vec<u8>> {
    let file = open(path, follow)?;
    read_file(file, limit)?.ok_or_else(|| too_large(path, limit))
}

/// [`read`] of a text file: its bytes must be UTF-8.
///
/// # Errors
/// As [`read`]; `InvalidData` naming the path for bytes that are not UTF-8.
pub fn read_to_string(path: &Path, follow: Follow, limit: u64) -> std::io::Result<String> {
    String::from_utf8(read(path, follow, limit)?).map_err(|error| {
        Error::new(
            ErrorKind::InvalidData,
            format!(
                "{}: not UTF-8 text (invalid byte at offset {})",
                path.display(),
                error.utf8_error().valid_up_to()
            ),
        )
    })
}

/// The whole of the open regular `file` if it holds at most `limit` bytes, `None` (without
/// reading it) if more: its length is checked first, and the read stops one byte past `limit` in
/// case it grew.
///
/// # Errors
/// `InvalidInput` if `file` is not a regular file; what reading reports.
pub fn read_file(file: File, limit: u64) -> std::io::Result<Option<Vec<u8>>> {
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular(None, &meta));
    }
    if meta.len() > limit {
        return Ok(None);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= limit).then_some(bytes))
}

/// The error for a file over its bound.
#[must_use]
pub fn too_large(path: &Path, limit: u64) -> Error {
    Error::new(
        ErrorKind::FileTooLarge,
        format!(
            "{}: larger than the {limit} bytes such a file may hold",
            path.display()
        ),
    )
}

fn symlink_refused(path: &Path) -> Error {
    Error::new(
        ErrorKind::InvalidInput,
        format!(
            "{}: is a symlink, which is not followed here",
            path.display()
        ),
    )
}

/// The error for something that is not a regular file, saying what it is.
pub(crate) fn not_regular(path: Option<&Path>, meta: &std::fs::Metadata) -> Error {
    let what = if meta.is_dir() {
        "a directory"
    } else {
        "not a regular file (a device, FIFO or socket)"
    };
    let message = match path {
        Some(path) => format!("{} is {what}", path.display()),
        None => format!("the file is {what}"),
    };
    Error::new(ErrorKind::InvalidInput, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_regular_file_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key.pub");
        std::fs::write(&path, "hello").unwrap();
        assert_eq!(read_to_string(&path, Follow::Symlinks, 5).unwrap(), "hello");
    }

    #[test]
    fn a_file_over_its_bound_is_refused_without_being_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big");
        std::fs::write(&path, [0u8; 6]).unwrap();
        let error = read(&path, Follow::Symlinks, 5).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::FileTooLarge);
        assert!(error.to_string().contains("big"), "{error}");
    }

    #[test]
    fn text_that_is_not_utf8_is_refused_with_its_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        std::fs::write(&path, b"ab\xff").unwrap();
        let error = read_to_string(&path, Follow::Symlinks, 10).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidData);
        assert!(error.to_string().contains("offset 2"), "{error}");
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let error = read(dir.path(), Follow::Symlinks, 10).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
        assert!(error.to_string().contains("a directory"), "{error}");
    }

    #[cfg(unix)]
    #[test]
    fn devices_are_refused_and_never_read() {
        // /dev/zero would be read until memory runs out.
        let error = read(Path::new("/dev/zero"), Follow::Symlinks, 10).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_at_once_instead_of_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fifo");
        let status = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(status.success());
        // Without O_NONBLOCK this open would wait for a writer forever.
        let error = read(&path, Follow::Symlinks, 10).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput, "{error}");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_followed_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "x").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert_eq!(read(&link, Follow::Symlinks, 10).unwrap(), b"x");
        let error = read(&link, Follow::NoSymlinks, 10).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
        assert!(error.to_string().contains("symlink"), "{error}");
    }
}
