//! The rules of docs/cli.md, checked on all four tools the same way: an existing output is kept
//! unless `--force`; outputs follow the umask (private ones are 0600); devices and FIFOs are
//! written in place, never renamed over; a closed stdout ends a command quietly; text from files
//! cannot drive the terminal; an interrupted command leaves no temporary file; errors name the file
//! and what to do; `--version` names the tool; `--json` errors are JSON.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::cli_binaries::Scratch;

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn run(scratch: &Scratch, tool: &str, args: &[&str]) -> Output {
    scratch
        .tool(tool)
        .args(args)
        .output()
        .expect("the tool runs")
}

/// Runs `tool args` and checks it failed with status 1 (not a usage error, not a crash).
fn failed(scratch: &Scratch, tool: &str, args: &[&str]) -> Output {
    let output = run(scratch, tool, args);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{tool} {args:?}: {}",
        stderr(&output)
    );
    output
}

fn ok(scratch: &Scratch, tool: &str, args: &[&str]) -> Output {
    let output = run(scratch, tool, args);
    assert!(
        output.status.success(),
        "{tool} {args:?}: {}",
        stderr(&output)
    );
    output
}

/// Cheap Argon2id costs for key files made in tests.
const CHEAP_KDF: [&str; 4] = ["--argon2-m-kib", "1024", "--argon2-t", "1"];

/// A scratch directory with one file of each kind to read: `d.ald` (a dataset), `k.key` /
/// `k.key.pub` (a key pair), `enc.ald` (encrypted for `k.key`), `m.apr` (a model), `f.fold`
/// (a container with chunk `part`).
fn inputs() -> Scratch {
    let s = Scratch::new();
    ok(&s, "alimentar", &["convert", "data.csv", "-o", "d.ald"]);
    let mut keygen = vec!["keygen", "-o", "k.key"];
    keygen.extend(CHEAP_KDF);
    ok(&s, "alimentar", &keygen);
    ok(
        &s,
        "alimentar",
        &[
            "encrypt",
            "d.ald",
            "-o",
            "enc.ald",
            "--recipient",
            "k.key.pub",
        ],
    );
    ok(&s, "apr", &["import", "model.safetensors", "-o", "m.apr"]);
    ok(&s, "fold", &["pack", "-o", "f.fold", "part=CSV:data.csv"]);
    s
}

/// Every command that writes one file, with `OUT` standing for its output.
fn writers() -> Vec<(&'static str, Vec<&'static str>)> {
    let mut keygen = vec!["keygen", "-o", "OUT"];
    keygen.extend(CHEAP_KDF);
    let mut encrypt = vec!["encrypt", "d.ald", "--password", "-o", "OUT"];
    encrypt.extend(CHEAP_KDF);
    vec![
        ("alimentar", vec!["convert", "data.csv", "-o", "OUT.ald"]),
        ("alimentar", vec!["convert", "data.csv", "OUT.ald"]),
        ("alimentar", keygen),
        (
            "alimentar",
            vec!["sign", "d.ald", "--key", "k.key", "-o", "OUT"],
        ),
        ("alimentar", encrypt),
        (
            "alimentar",
            vec!["decrypt", "enc.ald", "--key", "k.key", "-o", "OUT"],
        ),
        (
            "alimentar",
            vec![
                "license",
                "d.ald",
                "--licensee",
                "x",
                "--expires",
                "2099-01-01",
                "--key",
                "k.key",
                "-o",
                "OUT",
            ],
        ),
        ("apr", vec!["import", "model.safetensors", "-o", "OUT"]),
        (
            "apr",
            vec!["quantize", "m.apr", "--type", "q8_0", "-o", "OUT"],
        ),
        (
            "apr",
            vec!["export", "m.apr", "--format", "gguf", "-o", "OUT"],
        ),
        (
            "apr",
            vec!["convert", "m.apr", "-o", "OUT", "--trueno-native"],
        ),
        ("apr", vec!["sign", "m.apr", "--key", "k.key", "-o", "OUT"]),
        ("fold", vec!["pack", "-o", "OUT", "part=CSV:data.csv"]),
        ("fold", vec!["pack", "OUT", "part=CSV:data.csv"]),
        ("fold", vec!["cat", "f.fold", "part", "-o", "OUT"]),
        ("fold", vec!["repair", "f.fold", "-o", "OUT"]),
        (
            "lineage",
            vec![
                "snapshot",
                "dataset",
                "--tenant",
                "t",
                "--version",
                "v",
                "--trace",
                "OUT",
            ],
        ),
        (
            "lineage",
            vec![
                "snapshot",
                "dataset",
                "--tenant",
                "t",
                "--version",
                "v",
                "--certificate",
                "OUT",
                "--key",
                "k.key",
            ],
        ),
    ]
}

/// `args` with `out` for `OUT` (and for `OUT.ald`, where the output's kind comes from its name:
/// then `out` must end in `.ald` too, or be a device or FIFO, which `convert` refuses to guess).
fn with_output<'a>(args: &[&'a str], out: &'a str) -> Vec<&'a str> {
    args.iter()
        .map(|arg| match *arg {
            "OUT" | "OUT.ald" => out,
            other => other,
        })
        .collect()
}

#[test]
fn an_existing_output_is_kept_unless_force() {
    let s = inputs();
    for (n, (tool, args)) in writers().into_iter().enumerate() {
        let name = if args.contains(&"OUT.ald") {
            format!("precious-{n}.ald")
        } else {
            format!("precious-{n}")
        };
        std::fs::write(s.path().join(&name), b"precious").unwrap();
        let args = with_output(&args, &name);
        let output = failed(&s, tool, &args);
        let said = stderr(&output);
        assert!(
            said.contains(&name) && said.contains("already exists") && said.contains("--force"),
            "{tool} {args:?}: {said}"
        );
        assert_eq!(
            std::fs::read(s.path().join(&name)).unwrap(),
            b"precious",
            "{tool} {args:?}"
        );
        let mut forced = args.clone();
        forced.push("--force");
        ok(&s, tool, &forced);
        assert_ne!(
            std::fs::read(s.path().join(&name)).unwrap(),
            b"precious",
            "{tool} {args:?}"
        );
    }
    // keygen also keeps an existing public key file.
    std::fs::write(s.path().join("new.key.pub"), b"precious").unwrap();
    let mut args = vec!["keygen", "-o", "new.key"];
    args.extend(CHEAP_KDF);
    assert_eq!(run(&s, "alimentar", &args).status.code(), Some(1));
    assert!(!s.path().join("new.key").exists(), "no lone private key");
    assert_eq!(
        std::fs::read(s.path().join("new.key.pub")).unwrap(),
        b"precious"
    );
}

#[test]
fn a_directory_output_is_never_mixed_or_clobbered() {
    let s = inputs();
    let export = ["export", "m.apr", "--format", "safetensors", "-o", "st"];
    ok(&s, "apr", &export);
    std::fs::write(s.path().join("st/scales.json"), b"stale").unwrap();
    let output = run(&s, "apr", &export);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        s.path().join("st/scales.json").exists(),
        "kept without --force"
    );
    ok(&s, "apr", &[&export[..], &["--force"]].concat());
    assert!(
        !s.path().join("st/scales.json").exists(),
        "old files do not survive a new export"
    );
    // A directory holding anything else is never replaced, even with --force.
    std::fs::write(s.path().join("st/notes.txt"), b"mine").unwrap();
    let output = run(&s, "apr", &[&export[..], &["--force"]].concat());
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("notes.txt"), "{}", stderr(&output));
    assert_eq!(
        std::fs::read(s.path().join("st/notes.txt")).unwrap(),
        b"mine"
    );
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[cfg(unix)]
#[test]
fn outputs_follow_the_umask_and_private_ones_are_0600() {
    let s = inputs();
    let script = |umask: &str| {
        format!(
            "set -e; umask {umask}
             alimentar convert data.csv -o c{umask}.ald
             fold pack -o f{umask}.fold part=CSV:data.csv
             apr export m.apr --format gguf -o g{umask}.gguf
             alimentar decrypt enc.ald --key k.key -o plain{umask}.ald
             alimentar keygen -o key{umask} {}",
            CHEAP_KDF.join(" ")
        )
    };
    for (umask, shared) in [("022", 0o644), ("077", 0o600), ("002", 0o664)] {
        let output = s.bash(&script(umask));
        assert!(output.status.success(), "{}", stderr(&output));
        for file in [
            format!("c{umask}.ald"),
            format!("f{umask}.fold"),
            format!("g{umask}.gguf"),
            format!("key{umask}.pub"),
        ] {
            assert_eq!(
                mode(&s.path().join(&file)),
                shared,
                "{file} under umask {umask}"
            );
        }
        for private in [format!("plain{umask}.ald"), format!("key{umask}")] {
            assert_eq!(
                mode(&s.path().join(&private)),
                0o600,
                "{private} under umask {umask}"
            );
        }
    }
}

/// A device node made in the scratch directory (as root; CI runs as root) and a symlink to the
/// real `/dev/null` stay what they are after every writing command wrote to them.
#[cfg(unix)]
#[test]
fn devices_are_written_in_place_never_replaced() {
    use std::os::unix::fs::FileTypeExt as _;
    let s = inputs();
    std::os::unix::fs::symlink("/dev/null", s.path().join("null-link")).unwrap();
    let mut devices = vec!["null-link"];
    let made = Command::new("mknod")
        .args(["null-node", "c", "1", "3"])
        .current_dir(s.path())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if made {
        devices.push("null-node");
    }
    for device in devices {
        for (tool, args) in writers() {
            let by_name = args.contains(&"OUT.ald");
            let mut args = with_output(&args, device);
            if by_name {
                args.extend(["--to", "ald"]);
            }
            if args[0] == "keygen" {
                // keygen also writes DEVICE.pub, a regular file.
                let _ = std::fs::remove_file(s.path().join(format!("{device}.pub")));
            }
            ok(&s, tool, &args);
            let meta = std::fs::metadata(s.path().join(device)).unwrap();
            assert!(
                meta.file_type().is_char_device(),
                "{tool} {args:?} replaced {device}"
            );
        }
    }
    assert!(
        std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device()
    );
    let leftovers: Vec<_> = std::fs::read_dir(s.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

/// A FIFO output gets the bytes a reader at its other end reads, without hanging and without a
/// temporary file left beside it.
#[cfg(unix)]
#[test]
fn a_fifo_output_is_streamed_to_its_reader() {
    let s = inputs();
    for (tool, args) in writers() {
        if args[0] == "keygen" {
            continue;
        }
        let by_name = args.contains(&"OUT.ald");
        let mut args = with_output(&args, "out.fifo");
        if by_name {
            args.extend(["--to", "ald"]);
        }
        let command = args
            .iter()
            .map(|a| format!("'{a}'"))
            .collect::<Vec<_>>()
            .join(" ");
        let script = format!(
            "set -e; rm -f out.fifo captured; mkfifo out.fifo
             timeout 60 cat out.fifo > captured 2>/dev/null & reader=$!
             trap 'kill $reader 2>/dev/null || true' EXIT
             timeout 60 {tool} {command}
             wait $reader
             test -p out.fifo
             test -s captured
             ! ls -a | grep -q '\\.tmp$'"
        );
        let output = s.bash(&script);
        assert!(
            output.status.success(),
            "{tool} {args:?}: {}",
            stderr(&output)
        );
    }
}

#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_every_tool_quietly() {
    let s = inputs();
    // Outputs larger than a pipe's buffer, so the writer sees the reader go.
    let mut csv = String::from("id,label\n");
    for i in 0..200_000 {
        csv.push_str(&format!("{i},row {i}\n"));
    }
    std::fs::write(s.path().join("big.csv"), csv).unwrap();
    ok(&s, "alimentar", &["convert", "big.csv", "-o", "big.ald"]);
    std::fs::write(s.path().join("big.bin"), vec![7u8; 4 << 20]).unwrap();
    ok(&s, "fold", &["pack", "-o", "big.fold", "big=BIN:big.bin"]);
    let many = s.path().join("many");
    std::fs::create_dir(&many).unwrap();
    for i in 0..4000 {
        std::fs::write(many.join(format!("file-{i:05}.txt")), i.to_string()).unwrap();
    }
    write_safetensors(&s.path().join("wide.safetensors"), 3000, "t");
    ok(&s, "apr", &["import", "wide.safetensors", "-o", "wide.apr"]);
    for pipeline in [
        "alimentar head big.ald -n 200000 | head -1",
        "alimentar convert big.ald -o - --to csv | head -c 10",
        "apr --json inspect wide.apr | head -1",
        "fold cat big.fold big | head -c 10",
        "lineage split many --splits splits.json | head -1",
    ] {
        let script = format!("{pipeline} >/dev/null; exit ${{PIPESTATUS[0]}}");
        let output = s.bash(&script);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{pipeline}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).is_empty(),
            "{pipeline}: {}",
            stderr(&output)
        );
    }
}

/// A SafeTensors file of `count` one-element f32 tensors named `{prefix}{i}`.
fn write_safetensors(path: &Path, count: usize, prefix: &str) {
    let mut header = serde_json::Map::new();
    for i in 0..count {
        header.insert(
            format!("{prefix}{i}"),
            serde_json::json!({"dtype": "F32", "shape": [1], "data_offsets": [i * 4, i * 4 + 4]}),
        );
    }
    let mut text = serde_json::Value::Object(header).to_string();
    while !text.len().is_multiple_of(8) {
        text.push(' ');
    }
    let mut file = std::fs::File::create(path).unwrap();
    file.write_all(&(text.len() as u64).to_le_bytes()).unwrap();
    file.write_all(text.as_bytes()).unwrap();
    for i in 0..count {
        file.write_all(&(i as f32).to_le_bytes()).unwrap();
    }
}

/// An escape sequence in a column, chunk, tensor or file name reaches the terminal escaped.
#[test]
fn names_from_files_cannot_drive_the_terminal() {
    let s = inputs();
    let evil = "x\u{1b}]0;pwned\u{7}\u{1b}[2J";
    std::fs::write(s.path().join("evil.csv"), format!("{evil},b\n1,2\n")).unwrap();
    ok(&s, "alimentar", &["convert", "evil.csv", "-o", "evil.ald"]);
    write_safetensors(&s.path().join("evil.safetensors"), 1, evil);
    ok(&s, "apr", &["import", "evil.safetensors", "-o", "evil.apr"]);
    ok(
        &s,
        "apr",
        &["quantize", "evil.apr", "--type", "q8_0", "-o", "evilq.apr"],
    );
    let chunk = format!("{evil}=CSV:data.csv");
    ok(&s, "fold", &["pack", "-o", "evil.fold", &chunk]);
    std::fs::create_dir(s.path().join("evil-dir")).unwrap();
    std::fs::write(s.path().join("evil-dir").join(evil), b"x").unwrap();
    for (tool, args) in [
        ("alimentar", vec!["schema", "evil.ald"]),
        ("alimentar", vec!["info", "evil.ald"]),
        ("alimentar", vec!["head", "evil.ald"]),
        ("apr", vec!["inspect", "evilq.apr", "--quantization"]),
        ("fold", vec!["ls", "evil.fold"]),
        ("fold", vec!["verify", "evil.fold"]),
        (
            "lineage",
            vec!["split", "evil-dir", "--splits", "splits.json"],
        ),
    ] {
        let output = ok(&s, tool, &args);
        let text = stdout(&output);
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{tool} {args:?}: {text:?}"
        );
        assert!(
            text.contains("\\x1b"),
            "{tool} {args:?} shows the name escaped: {text}"
        );
    }
}

/// Ctrl-C while a container is being written: exit 130, no temporary file, no output.
#[cfg(unix)]
#[test]
fn an_interrupted_write_leaves_nothing_behind() {
    let s = Scratch::new();
    // Incompressible-ish content large enough that zstd works for a while in a debug build.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let bytes: Vec<u8> = (0..(96 << 20))
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 56) as u8 & 0x3f
        })
        .collect();
    std::fs::write(s.path().join("big.bin"), bytes).unwrap();
    let mut child = s
        .tool("fold")
        .args(["pack", "-o", "big.fold", "big=BIN:big.bin", "--ecc", "high"])
        .spawn()
        .unwrap();
    // Wait until the temporary output exists, then interrupt.
    let started = Instant::now();
    let temporary = || {
        std::fs::read_dir(s.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().starts_with(".big.fold."))
    };
    while !temporary() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no temporary file appeared"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "finished before it could be interrupted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    assert!(!temporary(), "the temporary file was removed");
    assert!(!s.path().join("big.fold").exists());
}

#[test]
fn errors_name_the_file_and_the_fix() {
    let s = inputs();
    for (tool, args, needles) in [
        (
            "alimentar",
            vec!["info", "missing.ald"],
            vec!["Io: ", "missing.ald"],
        ),
        (
            "apr",
            vec!["inspect", "missing.apr"],
            vec!["Io: ", "missing.apr"],
        ),
        ("fold", vec!["ls", "missing.fold"], vec!["missing.fold"]),
        (
            "apr",
            vec!["import", "dataset", "-o", "x.apr"],
            vec![
                "dataset is not a Hugging Face model directory",
                "no config.json",
            ],
        ),
        (
            "alimentar",
            vec!["info", "dataset"],
            vec!["dataset is a directory"],
        ),
        (
            "alimentar",
            vec!["decrypt", "enc.ald", "--key", "k.key.pub", "-o", "p.ald"],
            vec!["k.key.pub is a public key file", "without .pub"],
        ),
        (
            "alimentar",
            vec!["encrypt", "d.ald", "--recipient", "k.key", "-o", "e2.ald"],
            vec!["k.key is a private key file"],
        ),
    ] {
        let output = run(&s, tool, &args);
        assert!(!output.status.success(), "{tool} {args:?}");
        let said = stderr(&output);
        assert_eq!(said.lines().count(), 1, "one line: {said}");
        for needle in needles {
            assert!(said.contains(needle), "{tool} {args:?}: {said}");
        }
    }
}

#[test]
fn version_and_help_name_the_tool() {
    let s = Scratch::new();
    for (tool, _) in crate::cli_binaries::TOOLS {
        let output = ok(&s, tool, &["--version"]);
        assert!(
            stdout(&output).starts_with(&format!("{tool} ")),
            "{}",
            stdout(&output)
        );
        let help = stdout(&ok(&s, tool, &["--help"]));
        assert!(help.contains(&format!("Usage: {tool}")), "{help}");
        assert!(
            help.contains("--json") && help.contains("--quiet"),
            "{tool}: {help}"
        );
        assert!(!help.contains("envelope-cli"), "{tool}: {help}");
    }
}

#[test]
fn json_mode_reports_failures_as_one_json_object() {
    let s = inputs();
    for (tool, args, code) in [
        ("alimentar", vec!["--json", "info", "missing.ald"], "Io"),
        ("apr", vec!["inspect", "d.ald", "--json"], "InvalidFormat"),
        ("fold", vec!["--json", "ls", "d.ald"], ""),
        (
            "lineage",
            vec![
                "--json",
                "snapshot",
                "missing",
                "--tenant",
                "t",
                "--version",
                "v",
            ],
            "",
        ),
        (
            "lineage",
            vec!["--json", "log", "d", "--catalog", "no-catalog-here"],
            "IO",
        ),
    ] {
        let output = failed(&s, tool, &args);
        let value: serde_json::Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("{tool} {args:?}: {e}: {}", stdout(&output)));
        assert_eq!(value["ok"], false);
        assert!(value["error"]["message"].is_string());
        if !code.is_empty() {
            assert_eq!(value["error"]["code"], code, "{tool} {args:?}");
        }
    }
    // Results too: every command of every tool prints one JSON document.
    for (tool, args) in [
        (
            "alimentar",
            vec!["--json", "convert", "data.csv", "-o", "j.ald"],
        ),
        ("alimentar", vec!["--json", "schema", "j.ald"]),
        (
            "apr",
            vec![
                "--json", "quantize", "m.apr", "--type", "q8_0", "-o", "j.apr",
            ],
        ),
        (
            "fold",
            vec!["--json", "pack", "-o", "j.fold", "part=CSV:data.csv"],
        ),
        ("fold", vec!["--json", "verify", "j.fold"]),
        (
            "lineage",
            vec!["--json", "split", "dataset", "--splits", "splits.json"],
        ),
        (
            "lineage",
            vec![
                "--json",
                "publish",
                "dataset",
                "--tenant",
                "t",
                "--version",
                "v",
                "--catalog",
                "cat",
            ],
        ),
        (
            "lineage",
            vec!["--json", "log", "dataset", "--catalog", "cat"],
        ),
        (
            "lineage",
            vec!["--json", "gc", "--dry-run", "--catalog", "cat"],
        ),
    ] {
        let output = ok(&s, tool, &args);
        let value: Result<serde_json::Value, _> = serde_json::from_slice(&output.stdout);
        assert!(value.is_ok(), "{tool} {args:?}: {}", stdout(&output));
    }
}
