//! How the workspace writes a file that a user named: the one place that decides what may be
//! replaced, with which permissions, and what is left behind when something fails.
//!
//! Every writer of the workspace (envelope files, interchange exports, GGUF and SafeTensors
//! exports, key files, `.fold` containers, lineage checkpoints and the four CLIs) goes through
//! [`write`](fn@write) or [`write_dir`]. The rules, which are those of `cp`, `cargo` and `age`:
//!
//! - **A regular file is replaced atomically.** The new content goes to a temporary file in the
//!   destination's directory (named `.NAME.XXXXXX.tmp`, created exclusively, never through a
//!   symlink), which is flushed, fsynced and renamed over the destination; the directory is then
//!   fsynced. If anything fails, the old file is untouched and the temporary file is removed.
//! - **Only a regular file is ever renamed over.** A destination that is a character device or a
//!   FIFO (`-o /dev/null`, `-o /dev/stdout`, a named pipe), or a symlink to one, is opened and
//!   written in place, as `cp` and `cat` do; a directory, a block device or a socket is refused
//!   with [`std::io::ErrorKind::InvalidInput`]. (`fold cat -o /dev/null` once renamed its temporary
//!   file over `/dev/null`.)
//! - **An existing file is kept unless the caller says otherwise.** [`Existing::Keep`] refuses a
//!   destination that exists ([`std::io::ErrorKind::AlreadyExists`]), checked up front by
//!   [`Destination::check`] and again at the rename, which never replaces a file that appeared in
//!   the meantime. Libraries default to [`Existing::Replace`] (the semantics of `std::fs::write`);
//!   the CLIs pass `Keep` unless the user said `--force`.
//! - **Permissions follow the umask.** A new file gets `0666 & !umask`, as `File::create` gives;
//!   a replaced file keeps its mode. [`Access::Private`] outputs (private keys, decrypted data) are
//!   `0600` whatever the umask and whatever the replaced file's mode was.
//! - **A symlink to a regular file is followed**: the file it points to is replaced in its own
//!   directory and the link is kept. A symlink to nothing is refused.
//! - **Temporary files are removed on every exit path.** On an error or a panic the temporary
//!   file's drop removes it. A program that is interrupted (Ctrl-C, `SIGTERM`, `SIGHUP`) calls
//!   [`remove_temporary_files_and_exit`] from its signal handler: it removes every temporary file
//!   and directory still in flight and exits, and no rename can happen after it began.
//!
//! On wasm32 this crate is empty: there is no filesystem there.

#![cfg_attr(target_arch = "wasm32", allow(unused))]

#[cfg(not(target_arch = "wasm32"))]
mod early_sync;
#[cfg(not(target_arch = "wasm32"))]
mod native;

#[cfg(not(target_arch = "wasm32"))]
pub use early_sync::{EarlySyncWriter, PositionalWriter, with_early_sync};

#[cfg(not(target_arch = "wasm32"))]
pub use native::*;
