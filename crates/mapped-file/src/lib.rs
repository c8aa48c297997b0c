//! How the workspace's native readers open the files they read: a read-only view of a whole file,
//! memory-mapped natively (the one place `.fold` chunks, `.ald` streaming datasets, `.apr` models
//! and zero-copy tensors get `mmap`, behind a safe API), and [`input`], the one opener of every
//! input and side file (without blocking, regular files only, read within a bound).
//!
//! Mapping lets a reader open a multi-gigabyte file in microseconds, touch only the pages it
//! reads, and hash or hand out bytes straight from the page cache without a copy.
//!
//! # What is guaranteed, and what is not
//!
//! Creating a mapping is `unsafe` in Rust because the bytes behind a `&[u8]` are supposed never to
//! change, and the operating system cannot promise that for a file: another process may write to
//! it or truncate it while it is mapped. This crate's position, which every caller inherits:
//!
//! - **Files written by this workspace never change under a mapping.** Every writer in the
//!   workspace (`envelope_core::fs::write_atomic`, fold's writer) writes a new temporary file and
//!   renames it over the old name. A mapping holds the old inode, whose bytes stay exactly as they
//!   were until the mapping is dropped. Re-opening sees the new file.
//! - **A file modified in place by another program while mapped** may show the change through the
//!   slice. Our readers contain no `unsafe` that relies on byte *values* (bounds, alignment and
//!   sizes are checked on offsets and lengths the reader holds, and every typed view is checked
//!   once against the slice's real length), so the consequence is wrong or inconsistent data, or a
//!   failed checksum: never a read outside the mapping. Callers that cannot rule out concurrent
//!   writers should open with [`Mode::Copy`], which reads the file into memory once.
//! - **A file truncated by another program while mapped** makes the kernel deliver `SIGBUS` when a
//!   page past the new end is touched, which terminates the process (the behaviour of every mmap
//!   reader: numpy, safetensors, SQLite). It is not caught: a handler could only turn it into a
//!   different crash. [`Mode::Copy`] avoids it.
//! - The mapping is private and read-only (`MAP_PRIVATE`, `PROT_READ`): nothing we do writes to
//!   the file.
//!
//! On wasm32 this crate is empty: browsers have no files to map, and the format crates read from a
//! byte slice instead.

#![cfg_attr(target_arch = "wasm32", allow(unused))]

#[cfg(not(target_arch = "wasm32"))]
pub mod input;

#[cfg(not(target_arch = "wasm32"))]
mod native {
    use std::fs::File;
    use std::io::Read as _;
    use std::ops::{Deref, Range};
    use std::path::Path;

    /// How [`MappedFile::open_with`] gets the bytes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum Mode {
        /// Map the file (the default): O(1) to open, pages are read as they are touched.
        #[default]
        Map,
        /// Read the whole file into memory once: immune to concurrent writers and truncation, at
        /// the cost of reading everything up front.
        Copy,
        /// Copy the file into an anonymous temporary file (unlinked at once: no other program can
        /// open it by name) and map the copy: immune to concurrent writers and truncation like
        /// [`Mode::Copy`], but the bytes live in the page cache, not in the process's memory, so
        /// a file of any size can be held still. The copy goes next to the file when that
        /// directory is writable (where a copy-on-write filesystem shares its blocks), else to the
        /// system's temporary directory. For inputs checked against a signature: the bytes used
        /// are then the bytes verified, whatever another program does to the file meanwhile.
        Snapshot,
    }

    enum Bytes {
        Mapped(memmap2::Mmap),
        Owned(Vec<u8>),
    }

    /// The bytes of a file, mapped or read. Dereferences to `[u8]`.
    pub struct MappedFile {
        bytes: Bytes,
    }

    impl std::fmt::Debug for MappedFile {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("MappedFile")
                .field("len", &self.len())
                .field("mapped", &self.is_mapped())
                .finish()
        }
    }

    use crate::input::{Follow, not_regular};

    impl MappedFile {
        /// Maps `path` read-only.
        ///
        /// # Errors
        /// Whatever opening or mapping the file reports.
        pub fn open(path: impl AsRef<Path>) -> std::io::Result<Self> {
            Self::open_with(path, Mode::Map)
        }

        /// Opens `path` with the given [`Mode`]. An empty file is never mapped (a zero-length
        /// mapping is an error on some systems); it is an empty slice.
        ///
        /// # Errors
        /// Whatever opening, reading or mapping the file reports.
        pub fn open_with(path: impl AsRef<Path>, mode: Mode) -> std::io::Result<Self> {
            let path = path.as_ref();
            let file = crate::input::open(path, Follow::Symlinks)?;
            if mode == Mode::Snapshot {
                return Self::snapshot(file, path.parent());
            }
            Self::from_file(&file, mode)
        }

        /// [`Mode::Snapshot`] of `file`, whose directory is `dir`.
        fn snapshot(mut file: File, dir: Option<&Path>) -> std::io::Result<Self> {
            let meta = file.metadata()?;
            if !meta.is_file() {
                return Err(not_regular(None, &meta));
            }
            let dir = dir
                .filter(|dir| !dir.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let mut copy = tempfile::tempfile_in(dir).or_else(|_| tempfile::tempfile())?;
            // `io::copy` between files uses copy_file_range on Linux (a reflink where the
            // filesystem can). A file that changes while copied gives a copy that fails whatever
            // check it is made for, never a copy that changes afterwards.
            std::io::copy(&mut file, &mut copy)?;
            Self::from_file(&copy, Mode::Map)
        }

        /// The bytes of an open file, with the given [`Mode`]. The file must be a regular file
        /// (a device such as `/dev/zero` would be read without end, a FIFO would block).
        ///
        /// # Errors
        /// Whatever reading or mapping the file reports.
        #[allow(unsafe_code, reason = "the crate's one mmap call; see SAFETY below")]
        pub fn from_file(file: &File, mode: Mode) -> std::io::Result<Self> {
            let meta = file.metadata()?;
            if !meta.is_file() {
                return Err(not_regular(None, &meta));
            }
            let len = meta.len();
            if len == 0 || mode == Mode::Copy {
                let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
                (&*file).read_to_end(&mut bytes)?;
                return Ok(Self {
                    bytes: Bytes::Owned(bytes),
                });
            }
            // SAFETY: `Mmap::map` is unsafe because the mapped bytes can change or vanish if
            // another process modifies or truncates the file while it is mapped. The crate docs
            // state the policy: the workspace's writers only ever rename new files into place (the
            // mapped inode is never modified), readers hold no `unsafe` that depends on byte
            // values, and truncation by a foreign process ends in SIGBUS rather than a read
            // outside the mapping. The mapping is read-only and private. Exercised by the tests
            // `maps_and_reads_back` and `replaced_file_keeps_old_bytes`.
            let map = unsafe { memmap2::MmapOptions::new().map(file)? };
            Ok(Self {
                bytes: Bytes::Mapped(map),
            })
        }

        /// Whether the bytes are a memory map (false for [`Mode::Copy`] and empty files; a
        /// [`Mode::Snapshot`] maps its private copy).
        #[must_use]
        pub fn is_mapped(&self) -> bool {
            matches!(self.bytes, Bytes::Mapped(_))
        }

        /// Tells the kernel the pages of `range` will be needed soon (`madvise(WILLNEED)`), so
        /// they are read ahead in the background. A hint: out-of-range parts are ignored, and
        /// failures are silent because nothing depends on it.
        pub fn advise_willneed(&self, range: Range<usize>) {
            if let Bytes::Mapped(map) = &self.bytes {
                let end = range.end.min(map.len());
                if range.start < end {
                    let _ =
                        map.advise_range(memmap2::Advice::WillNeed, range.start, end - range.start);
                }
            }
        }

        /// Maps the pages of `range` into this process now (`madvise(POPULATE_READ)`, Linux 5.14
        /// and later), reading them from disk if needed, so that touching them later costs no page
        /// fault: one system call instead of a fault per few pages. A hint like
        /// [`MappedFile::advise_willneed`]; elsewhere, or on older kernels, it does nothing.
        pub fn populate(&self, range: Range<usize>) {
            #[cfg(target_os = "linux")]
            if let Bytes::Mapped(map) = &self.bytes {
                let end = range.end.min(map.len());
                if range.start < end {
                    let _ = map.advise_range(
                        memmap2::Advice::PopulateRead,
                        range.start,
                        end - range.start,
                    );
                }
            }
            #[cfg(not(target_os = "linux"))]
            let _ = range;
        }

        /// Drops this process's mapping of the pages inside `range` (`madvise(DONTNEED)` on the
        /// 64 KiB-aligned part of it, so on every page size), so that they no longer count in its
        /// resident memory; they stay in the page cache, and touching them again maps them again,
        /// with the file's bytes. For a reader that streams through a file larger than the memory
        /// it may hold. A hint like [`MappedFile::advise_willneed`]: elsewhere it does nothing.
        #[allow(
            unsafe_code,
            reason = "madvise(DONTNEED) is unchecked advice; see SAFETY below"
        )]
        pub fn release(&self, range: Range<usize>) {
            #[cfg(unix)]
            if let Bytes::Mapped(map) = &self.bytes {
                const ALIGN: usize = 64 << 10;
                let start = range.start.div_ceil(ALIGN).saturating_mul(ALIGN);
                let end = range.end.min(map.len()) / ALIGN * ALIGN;
                if start < end {
                    // SAFETY: the advice is unchecked because after DONTNEED a private mapping's
                    // pages are filled again from the file (or with zeros for anonymous memory),
                    // which changes what a borrow sees if the process had written to them. This
                    // mapping is read-only (`PROT_READ`) and file-backed, so no page of it was ever
                    // written or copied on write: every page is dropped and later read again from
                    // the same file, whose bytes the crate's policy above says do not change.
                    // Borrows of the range stay valid and see the same bytes. Exercised by the test
                    // `released_pages_read_back`.
                    let _ = unsafe {
                        map.unchecked_advise_range(
                            memmap2::UncheckedAdvice::DontNeed,
                            start,
                            end - start,
                        )
                    };
                }
            }
            #[cfg(not(unix))]
            let _ = range;
        }

        /// Tells the kernel the whole file will be read front to back (`madvise(SEQUENTIAL)`),
        /// which doubles read-ahead. A hint, like [`MappedFile::advise_willneed`].
        pub fn advise_sequential(&self) {
            if let Bytes::Mapped(map) = &self.bytes {
                let _ = map.advise(memmap2::Advice::Sequential);
            }
        }
    }

    impl Deref for MappedFile {
        type Target = [u8];

        fn deref(&self) -> &[u8] {
            match &self.bytes {
                Bytes::Mapped(map) => map,
                Bytes::Owned(bytes) => bytes,
            }
        }
    }

    impl AsRef<[u8]> for MappedFile {
        fn as_ref(&self) -> &[u8] {
            self
        }
    }
}

#[cfg(not(target_arch = "wasm32"))]
pub use native::{MappedFile, Mode};

/// Asks the kernel to back the whole 2 MiB-aligned stretches of `buffer` with huge pages
/// (`madvise(MADV_HUGEPAGE)`; Linux, where transparent huge pages are in `madvise` mode, the
/// usual default). Called on a large buffer before it is first written (a fresh allocation of
/// that size is its own anonymous mapping), it then costs a page fault per 2 MiB instead of one
/// per 4 KiB, and is freed as fast: `apr quantize`'s output buffer took 17 000 faults and 14 ms to
/// free. A hint: elsewhere, or if the kernel declines, nothing changes. The contents are not
/// touched.
#[allow(
    unsafe_code,
    reason = "madvise on memory this process owns; see SAFETY below"
)]
pub fn advise_huge_pages(buffer: &mut [u8]) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = buffer.as_mut_ptr().addr();
        let aligned = start.div_ceil(HUGE).saturating_mul(HUGE);
        let end = (start + buffer.len()) / HUGE * HUGE;
        if aligned < end {
            let offset = aligned - start;
            let stretch = &mut buffer[offset..offset + (end - aligned)];
            // SAFETY: `stretch` is memory this process owns and borrows exclusively for the call,
            // page-aligned (2 MiB) and of a whole number of pages. MADV_HUGEPAGE only chooses the
            // size of the pages that will back it: it neither frees, moves nor changes a byte, so
            // every pointer and borrow stays valid and sees the same contents (exercised by the
            // test `huge_page_advice_keeps_the_bytes`).
            let _ = unsafe {
                libc::madvise(
                    stretch.as_mut_ptr().cast(),
                    stretch.len(),
                    libc::MADV_HUGEPAGE,
                )
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buffer;
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use std::io::Write as _;

    /// The advice changes no byte, before or after the buffer is written, on any alignment.
    #[test]
    #[allow(clippy::cast_possible_truncation, reason = "i % 251 fits a byte")]
    fn huge_page_advice_keeps_the_bytes() {
        let mut buffer = vec![0u8; (9 << 20) + 4099];
        advise_huge_pages(&mut buffer[1..]);
        assert!(buffer.iter().all(|&b| b == 0));
        for (i, b) in buffer.iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        advise_huge_pages(&mut buffer);
        assert!(
            buffer
                .iter()
                .enumerate()
                .all(|(i, &b)| b == (i % 251) as u8)
        );
        advise_huge_pages(&mut []);
    }

    fn file_with(bytes: &[u8]) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(bytes).unwrap();
        file.flush().unwrap();
        file
    }

    #[test]
    fn maps_and_reads_back() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let file = file_with(&data);
        let mapped = MappedFile::open(file.path()).unwrap();
        assert!(mapped.is_mapped());
        assert_eq!(&*mapped, &data[..]);
        mapped.advise_willneed(10..20_000);
        mapped.advise_willneed(99_000..200_000); // past the end: ignored
        mapped.advise_sequential();
        mapped.populate(0..50_000);
        mapped.populate(99_000..300_000);
        assert_eq!(mapped.as_ref()[12_345], data[12_345]);
        let copied = MappedFile::open_with(file.path(), Mode::Copy).unwrap();
        assert!(!copied.is_mapped());
        assert_eq!(&*copied, &data[..]);
    }

    /// Released pages leave the process's resident memory and read back the file's bytes, through
    /// a borrow taken before the release too.
    #[test]
    #[cfg(target_os = "linux")]
    fn released_pages_read_back() {
        fn resident_kib() -> u64 {
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            let line = status.lines().find(|l| l.starts_with("RssFile:")).unwrap();
            line.split_whitespace().nth(1).unwrap().parse().unwrap()
        }
        let data: Vec<u8> = (0..(32u32 << 20)).map(|i| (i % 251) as u8).collect();
        let file = file_with(&data);
        let mapped = MappedFile::open(file.path()).unwrap();
        let borrowed: &[u8] = &mapped;
        assert_eq!(borrowed, &data[..]);
        let before = resident_kib();
        mapped.release(0..data.len() + 1); // past the end: clipped
        let after = resident_kib();
        assert!(before - after >= 30 << 10, "{before} KiB -> {after} KiB");
        assert_eq!(borrowed, &data[..]);
        mapped.release(10..20); // no whole aligned page inside: nothing
        MappedFile::open_with(file.path(), Mode::Copy)
            .unwrap()
            .release(0..100);
    }

    #[test]
    fn empty_file_is_an_empty_slice() {
        let file = file_with(b"");
        let mapped = MappedFile::open(file.path()).unwrap();
        assert!(mapped.is_empty());
        assert!(!mapped.is_mapped());
    }

    /// Inputs that are not regular files are refused by name, at once: a directory, a device that
    /// would be read without end (`/dev/zero`), a FIFO that would block until a writer comes.
    #[cfg(unix)]
    #[test]
    fn directories_devices_and_fifos_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let error = MappedFile::open(dir.path()).unwrap_err();
        assert!(error.to_string().contains("is a directory"), "{error}");
        let error = MappedFile::open("/dev/zero").unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
        let fifo = dir.path().join("input.ald");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let error = MappedFile::open(&fifo).unwrap_err();
        assert!(error.to_string().contains("not a regular file"), "{error}");
        let null = std::fs::File::open("/dev/null").unwrap();
        let error = MappedFile::from_file(&null, Mode::Copy).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::InvalidInput);
    }

    /// A snapshot keeps the bytes it was opened with, even when the file is then rewritten in
    /// place (which a mapping of the file itself would show).
    #[test]
    fn a_snapshot_does_not_see_writes_made_in_place() {
        use std::io::{Seek as _, SeekFrom};
        let file = file_with(&[1u8; 10_000]);
        let snapshot = MappedFile::open_with(file.path(), Mode::Snapshot).unwrap();
        let mapped = MappedFile::open(file.path()).unwrap();
        let mut writer = std::fs::OpenOptions::new()
            .write(true)
            .open(file.path())
            .unwrap();
        writer.seek(SeekFrom::Start(5000)).unwrap();
        writer.write_all(&[9u8; 100]).unwrap();
        writer.flush().unwrap();
        assert_eq!(mapped[5000], 9, "the shared mapping shows the write");
        assert!(snapshot.iter().all(|&b| b == 1), "the snapshot does not");
        assert_eq!(snapshot.len(), 10_000);
    }

    #[test]
    fn missing_file_is_an_io_error() {
        let error = MappedFile::open("/nonexistent/definitely/not/here").unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::NotFound);
    }

    /// The policy the crate relies on: replacing a file by rename (as every writer here does)
    /// leaves an existing mapping on the old bytes.
    #[test]
    fn replaced_file_keeps_old_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data.bin");
        std::fs::write(&path, vec![1u8; 8192]).unwrap();
        let mapped = MappedFile::open(&path).unwrap();
        let replacement = dir.path().join("data.tmp");
        std::fs::write(&replacement, vec![2u8; 4096]).unwrap();
        std::fs::rename(&replacement, &path).unwrap();
        assert_eq!(mapped.len(), 8192);
        assert!(mapped.iter().all(|&b| b == 1));
        assert!(MappedFile::open(&path).unwrap().iter().all(|&b| b == 2));
    }
}
