//! Tests of every rule in the crate docs, on real files, FIFOs, symlinks and (as root) a device
//! node made in a temporary directory.

use std::io::{Read as _, Write as _};
use std::process::Command;

use super::*;

fn put(destination: impl Into<Destination>, bytes: &[u8]) -> io::Result<()> {
    write(destination, |out| out.write_all(bytes))
}

/// A new temporary directory (removed when the guard drops) and the path `name` in it.
fn temp_path(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    (dir, path)
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Makes a FIFO at `path` and a thread that reads it to the end.
#[cfg(unix)]
fn fifo_with_reader(path: &Path) -> std::thread::JoinHandle<Vec<u8>> {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        File::open(path).unwrap().read_to_end(&mut bytes).unwrap();
        bytes
    })
}

#[test]
fn a_new_file_is_written_and_nothing_else_is_left() {
    let (dir, path) = temp_path("out.ald");
    put(&path, b"new").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"new");
    assert_eq!(entries(dir.path()), ["out.ald"]);
}

#[test]
fn keep_refuses_an_existing_file_and_replace_replaces_it() {
    let (dir, path) = temp_path("me.key");
    fs::write(&path, b"precious").unwrap();
    let keep = Destination::new(&path).existing(Existing::Keep);
    assert_eq!(
        keep.check().unwrap_err().kind(),
        io::ErrorKind::AlreadyExists
    );
    let error = put(keep, b"other").unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
    assert!(error.to_string().contains("already exists"), "{error}");
    assert_eq!(fs::read(&path).unwrap(), b"precious");
    put(
        Destination::new(&path).existing(Existing::Replace),
        b"other",
    )
    .unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"other");
    assert_eq!(entries(dir.path()), ["me.key"]);
}

#[test]
fn keep_never_replaces_a_file_created_while_writing() {
    let (dir, path) = temp_path("race.ald");
    let error = write(
        Destination::new(&path).existing(Existing::Keep),
        |out| -> io::Result<()> {
            // Another program creates the file after the check, before the rename.
            fs::write(&path, b"theirs")?;
            out.write_all(b"ours")
        },
    )
    .unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::AlreadyExists);
    assert_eq!(fs::read(&path).unwrap(), b"theirs");
    assert_eq!(entries(dir.path()), ["race.ald"], "temporary file removed");
}

#[test]
fn a_failed_write_leaves_the_old_file_and_no_temporary_file() {
    let (dir, path) = temp_path("data.ald");
    fs::write(&path, b"old content").unwrap();
    let result: io::Result<()> = write(&path, |out| {
        out.write_all(b"partial new content")?;
        Err(io::Error::other("simulated failure half-way"))
    });
    assert!(result.is_err());
    assert_eq!(fs::read(&path).unwrap(), b"old content");
    assert_eq!(entries(dir.path()), ["data.ald"]);
}

#[test]
fn a_panic_in_the_writer_leaves_no_temporary_file() {
    let (dir, path) = temp_path("data.ald");
    let outcome = std::panic::catch_unwind(|| {
        let _ = write(&path, |_out| -> io::Result<()> { panic!("writer bug") });
    });
    assert!(outcome.is_err());
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn a_directory_is_refused_as_a_file_destination() {
    let dir = tempfile::tempdir().unwrap();
    let error = put(dir.path(), b"x").unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    assert!(error.to_string().contains("is a directory"), "{error}");
}

#[cfg(unix)]
#[test]
fn a_symlink_to_a_file_replaces_the_file_and_keeps_the_link() {
    let (dir, real) = temp_path("v3.ald");
    let link = dir.path().join("latest.ald");
    fs::write(&real, b"v3").unwrap();
    std::os::unix::fs::symlink(&real, &link).unwrap();
    put(&link, b"v4").unwrap();
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read(&real).unwrap(), b"v4");
    assert_eq!(entries(dir.path()), ["latest.ald", "v3.ald"]);
}

#[cfg(unix)]
#[test]
fn a_symlink_to_nothing_is_refused() {
    let (dir, link) = temp_path("dangling.ald");
    std::os::unix::fs::symlink(dir.path().join("missing"), &link).unwrap();
    let error = put(&link, b"x").unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::NotFound);
    assert!(!dir.path().join("missing").exists());
}

#[cfg(unix)]
#[test]
fn a_fifo_is_written_in_place_not_renamed_over() {
    let (dir, fifo) = temp_path("pipe.ald");
    let reader = fifo_with_reader(&fifo);
    put(
        Destination::new(&fifo).existing(Existing::Keep),
        b"through the pipe",
    )
    .unwrap();
    assert_eq!(reader.join().unwrap(), b"through the pipe");
    assert_eq!(Destination::new(&fifo).kind().unwrap(), Kind::Stream);
    assert_eq!(entries(dir.path()), ["pipe.ald"], "no temporary file");
}

/// The bug this crate exists for: `-o /dev/null` renamed a file over the device. A device node
/// made in a temporary directory (as root) and a symlink to the real `/dev/null` (anyone) are
/// written through and stay what they were.
#[cfg(unix)]
#[test]
fn a_device_is_written_in_place_and_survives() {
    use std::os::unix::fs::FileTypeExt as _;
    let dir = tempfile::tempdir().unwrap();
    let mut devices = Vec::new();
    let node = dir.path().join("null");
    // Character device 1:3 is the null device on Linux; mknod needs CAP_MKNOD (CI runs as root).
    if Command::new("mknod")
        .args([node.as_os_str(), "c".as_ref(), "1".as_ref(), "3".as_ref()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
    {
        devices.push(node);
    }
    let link = dir.path().join("null-link");
    std::os::unix::fs::symlink("/dev/null", &link).unwrap();
    devices.push(link.clone());
    for device in &devices {
        put(
            Destination::new(device).existing(Existing::Keep),
            b"discarded",
        )
        .unwrap();
        assert!(
            fs::metadata(device).unwrap().file_type().is_char_device(),
            "{} is still a device",
            device.display()
        );
    }
    assert!(
        fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device()
    );
}

#[cfg(unix)]
#[test]
fn new_files_follow_the_umask_like_file_create_and_private_files_are_0600() {
    let dir = tempfile::tempdir().unwrap();
    // Whatever this process's umask is, a new output gets what File::create gives.
    let reference = dir.path().join("reference");
    File::create(&reference).unwrap();
    let shared = dir.path().join("shared.ald");
    put(&shared, b"x").unwrap();
    assert_eq!(mode(&shared), mode(&reference));
    let private = dir.path().join("plain.ald");
    put(Destination::new(&private).access(Access::Private), b"x").unwrap();
    assert_eq!(mode(&private), 0o600);
}

#[cfg(unix)]
#[test]
fn a_replaced_file_keeps_its_mode_unless_the_output_is_private() {
    use std::os::unix::fs::PermissionsExt as _;
    let (_dir, path) = temp_path("data.ald");
    fs::write(&path, b"old").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    put(&path, b"new").unwrap();
    assert_eq!(mode(&path), 0o640);
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    put(Destination::new(&path).access(Access::Private), b"secret").unwrap();
    assert_eq!(mode(&path), 0o600, "decrypted output over a shared file");
}

#[test]
fn temporary_files_in_flight_are_removed_on_request() {
    let (dir, path) = temp_path("big.ald");
    let result = write(&path, |out| -> io::Result<()> {
        out.write_all(b"half")?;
        out.flush()?;
        let in_flight: Vec<String> = entries(dir.path());
        assert_eq!(in_flight.len(), 1);
        assert!(
            in_flight[0].starts_with(".big.ald.") && in_flight[0].ends_with(".tmp"),
            "documented temporary name, got {in_flight:?}"
        );
        // What the interrupt handler does (without exiting; only this test's files, since the
        // other tests run on other threads of this process).
        assert_eq!(
            remove_where(&mut live(), |path| path.starts_with(dir.path())),
            1
        );
        assert!(entries(dir.path()).is_empty());
        Ok(())
    });
    // The rename fails: the temporary file is gone.
    assert!(result.is_err());
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn a_directory_output_is_created_whole() {
    let (dir, out) = temp_path("export");
    write_dir(&out, &["a", "b"], |tmp| -> io::Result<()> {
        put(tmp.join("a"), b"1")?;
        put(tmp.join("b"), b"2")
    })
    .unwrap();
    assert_eq!(entries(&out), ["a", "b"]);
    assert_eq!(entries(dir.path()), ["export"]);
}

#[test]
fn an_existing_empty_directory_is_filled_without_force() {
    let (_dir, out) = temp_path("export");
    fs::create_dir(&out).unwrap();
    write_dir(
        Destination::new(&out).existing(Existing::Keep),
        &["a"],
        |tmp| put(tmp.join("a"), b"1"),
    )
    .unwrap();
    assert_eq!(entries(&out), ["a"]);
}

#[test]
fn a_directory_output_never_mixes_new_files_with_old_ones() {
    let (dir, out) = temp_path("export");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("a"), b"old a").unwrap();
    fs::write(out.join("scales.json"), b"old scales").unwrap();
    let names = ["a", "scales.json"];
    let kept = write_dir(
        Destination::new(&out).existing(Existing::Keep),
        &names,
        |tmp| put(tmp.join("a"), b"new a"),
    )
    .unwrap_err();
    assert_eq!(kept.kind(), io::ErrorKind::AlreadyExists);
    assert_eq!(entries(&out), ["a", "scales.json"]);
    write_dir(&out, &names, |tmp| put(tmp.join("a"), b"new a")).unwrap();
    assert_eq!(entries(&out), ["a"], "the old scales.json is gone");
    assert_eq!(fs::read(out.join("a")).unwrap(), b"new a");
    assert_eq!(
        entries(dir.path()),
        ["export"],
        "no temporary directory left"
    );
}

#[test]
fn a_directory_holding_foreign_files_is_never_replaced() {
    let (dir, home) = temp_path("home");
    fs::create_dir(&home).unwrap();
    fs::write(home.join("thesis.tex"), b"years of work").unwrap();
    let error = write_dir(&home, &["model.safetensors"], |tmp| {
        put(tmp.join("model.safetensors"), b"w")
    })
    .unwrap_err();
    assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
    assert!(error.to_string().contains("thesis.tex"), "{error}");
    assert_eq!(fs::read(home.join("thesis.tex")).unwrap(), b"years of work");
    assert_eq!(entries(dir.path()), ["home"]);
}

#[test]
fn a_failed_directory_build_leaves_the_destination_and_no_temporary_directory() {
    let (dir, out) = temp_path("export");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("a"), b"old").unwrap();
    let error = write_dir(&out, &["a"], |tmp| -> io::Result<()> {
        put(tmp.join("a"), b"new")?;
        Err(io::Error::other("tensor 3 failed"))
    })
    .unwrap_err();
    assert_eq!(error.to_string(), "tensor 3 failed");
    assert_eq!(fs::read(out.join("a")).unwrap(), b"old");
    assert_eq!(entries(dir.path()), ["export"]);
}

/// A `PendingFile` can seek whatever the destination: for a FIFO it fills a scratch file and
/// copies it through on commit (a `.fold` container patches its header after the chunks).
#[cfg(unix)]
#[test]
fn a_pending_file_seeks_even_when_its_destination_is_a_fifo() {
    use std::io::{Seek as _, SeekFrom};
    let (dir, fifo) = temp_path("out.fold");
    let reader = fifo_with_reader(&fifo);
    let mut pending = PendingFile::create(&fifo).unwrap();
    pending.write_all(b"....body").unwrap();
    pending.seek(SeekFrom::Start(0)).unwrap();
    pending.write_all(b"HEAD").unwrap();
    pending.commit().unwrap();
    assert_eq!(reader.join().unwrap(), b"HEADbody");
    assert_eq!(entries(dir.path()), ["out.fold"]);
}

#[test]
fn an_uncommitted_pending_file_leaves_nothing() {
    let (dir, path) = temp_path("out.fold");
    fs::write(&path, b"old").unwrap();
    let mut pending = PendingFile::create(&path).unwrap();
    pending.write_all(b"new").unwrap();
    drop(pending);
    assert_eq!(fs::read(&path).unwrap(), b"old");
    assert_eq!(entries(dir.path()), ["out.fold"]);
}

/// Buffered bytes are flushed before the positional writer takes over; the committed file holds
/// both, and an uncommitted one leaves nothing behind.
#[test]
fn a_pending_file_is_written_at_offsets_then_committed_or_discarded() {
    let (dir, path) = temp_path("out.apr");
    fs::write(&path, b"old").unwrap();
    let mut pending = PendingFile::create(&path).unwrap();
    pending.write_all(b"HEAD").unwrap();
    let positional = pending.positional(1 << 20).unwrap();
    positional.write_all_at(b"tail", 8).unwrap();
    positional.write_all_at(b"body", 4).unwrap();
    drop(positional);
    pending.commit().unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"HEADbodytail");
    assert_eq!(entries(dir.path()), ["out.apr"]);

    let mut pending = PendingFile::create(&path).unwrap();
    pending
        .positional(1 << 20)
        .unwrap()
        .write_all_at(b"new", 0)
        .unwrap();
    drop(pending);
    assert_eq!(fs::read(&path).unwrap(), b"HEADbodytail");
    assert_eq!(entries(dir.path()), ["out.apr"]);
}
