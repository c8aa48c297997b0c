//! End-to-end tests of the `alimentar` dataset commands (`convert`, `head`, `schema`): round
//! trips between every file kind, and every Andon signal of 000 §5.0 provoked through the binary
//! (exit status 1, message naming the signal).

use std::path::Path;
use std::process::{Command, Output};

const ALIMENTAR: &str = env!("CARGO_BIN_EXE_alimentar");
const CHEAP_KDF: &[&str] = &["--argon2-m-kib", "1024", "--argon2-t", "1"];

struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Self {
        let ws = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        let mut csv = String::from("id,score,name,ok,day\n");
        for i in 0..1000 {
            let score = if i % 7 == 3 {
                String::new()
            } else {
                format!("{:?}", f64::from(i) / 4.0)
            };
            let name = if i % 5 == 1 {
                String::new()
            } else {
                format!("\"row {i}, ü\"")
            };
            csv.push_str(&format!(
                "{i},{score},{name},{},2024-01-{:02}\n",
                i % 2 == 0,
                i % 28 + 1
            ));
        }
        ws.write("data.csv", csv.as_bytes());
        ws
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().unwrap().to_owned()
    }

    fn write(&self, name: &str, bytes: &[u8]) -> String {
        std::fs::write(self.path(name), bytes).unwrap();
        self.path(name)
    }

    fn read(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.path(name)).unwrap()
    }

    /// Runs `alimentar ARGS` (file names relative to the workspace when they exist there).
    fn run(&self, args: &[&str]) -> Output {
        let args: Vec<String> = args
            .iter()
            .map(|arg| {
                let candidate = self.dir.path().join(arg);
                if !arg.starts_with('-')
                    && (candidate.exists() || arg.contains('.'))
                    && !Path::new(arg).is_absolute()
                {
                    candidate.to_str().unwrap().to_owned()
                } else {
                    (*arg).to_owned()
                }
            })
            .collect();
        Command::new(ALIMENTAR)
            .args(&args)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("the binary runs")
    }

    fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        String::from_utf8(output.stdout).unwrap()
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Exit status 1 (2 for `Usage`, docs/cli.md) and a message `alimentar: SIGNAL...`.
fn assert_signal(output: &Output, signal: &str) {
    let status = if signal == "Usage" { 2 } else { 1 };
    assert_eq!(output.status.code(), Some(status), "{}", stderr(output));
    assert!(
        stderr(output).starts_with(&format!("alimentar: {signal}"))
            || stderr(output).contains(&format!(": {signal}: ")),
        "expected {signal}: {}",
        stderr(output)
    );
}

#[test]
fn csv_round_trips_through_every_kind_and_ald_variant() {
    let ws = Workspace::new();
    for (name, extra) in [
        ("plain.ald", vec!["--compression", "none"]),
        ("zstd.ald", vec!["--compression", "zstd-l3"]),
        (
            "lz4s.ald",
            vec!["--compression", "lz4", "--streaming", "--chunk-rows", "100"],
        ),
        (
            "z19s.ald",
            vec![
                "--compression",
                "zstd-l19",
                "--streaming",
                "--chunk-rows",
                "333",
            ],
        ),
    ] {
        let mut args = vec!["convert", "data.csv", name];
        args.extend(extra);
        let output = ws.run(&args);
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        // What was written is a note on stderr; stdout stays free for data (`-o -`).
        let said = stderr(&output);
        assert!(said.contains("wrote 1000 rows"), "{said}");
        for kind in ["csv", "jsonl", "parquet", "arrow"] {
            let out = format!("{name}.{kind}");
            ws.ok(&["convert", name, &out]);
            let back = format!("{name}.{kind}.csv");
            ws.ok(&["convert", &out, &back]);
            assert_eq!(ws.read(&back), ws.read("data.csv"), "{name} via {kind}");
        }
    }
}

#[test]
fn head_and_schema_print_text_and_json() {
    let ws = Workspace::new();
    ws.ok(&[
        "convert",
        "data.csv",
        "s.ald",
        "--streaming",
        "--chunk-rows",
        "64",
        "--type",
        "time-series",
    ]);
    let text = ws.ok(&["head", "s.ald", "--rows", "3"]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].starts_with("id"), "{text}");
    assert!(
        lines[2].contains("row 1, ü") || lines[2].contains("null"),
        "{text}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&ws.ok(&["head", "s.ald", "--rows", "70", "--json"])).unwrap();
    let rows = json.as_array().unwrap();
    assert_eq!(rows.len(), 70);
    assert_eq!(rows[69]["id"], 69);
    assert_eq!(rows[0]["name"], "row 0, ü");
    let schema: serde_json::Value =
        serde_json::from_str(&ws.ok(&["schema", "s.ald", "--json"])).unwrap();
    assert_eq!(
        schema[0],
        serde_json::json!({"name": "id", "type": "Int64", "nullable": true})
    );
    assert_eq!(schema[4]["type"], "Date32");
    let text = ws.ok(&["schema", "s.ald"]);
    assert!(text.starts_with("id: Int64\nscore: Float64\n"), "{text}");
    // The same commands read interchange files.
    assert_eq!(
        ws.ok(&["head", "data.csv", "-n", "3"]),
        text_of(&ws, "s.ald", "3")
    );
}

fn text_of(ws: &Workspace, file: &str, rows: &str) -> String {
    ws.ok(&["head", file, "-n", rows])
}

#[test]
fn an_explicit_schema_and_a_card_go_into_the_file() {
    let ws = Workspace::new();
    ws.write(
        "card.json",
        br#"{"name": "demo", "version": "1.2.0", "license": "CC-BY-4.0", "description": "rows", "tags": ["x"]}"#,
    );
    ws.ok(&[
        "convert",
        "data.csv",
        "typed.ald",
        "--schema",
        "id: Int32 not null, score: Float32, name: Utf8, ok: Boolean, day: Date32",
        "--card",
        "card.json",
    ]);
    let schema = ws.ok(&["schema", "typed.ald"]);
    assert!(
        schema.starts_with("id: Int32 not null\nscore: Float32\n"),
        "{schema}"
    );
    let info = ald::fs::inspect(ws.path("typed.ald")).unwrap();
    let card = info.metadata.card.unwrap();
    assert_eq!(
        (card.name.as_str(), card.license.as_deref()),
        ("demo", Some("CC-BY-4.0"))
    );
}

#[test]
fn usage_and_io_errors() {
    let ws = Workspace::new();
    assert_signal(&ws.run(&["convert", "data.csv", "out.xlsx"]), "Usage");
    assert_signal(&ws.run(&["head", "missing.ald"]), "Io");
    assert_signal(
        &ws.run(&["convert", "data.csv", "x.ald", "--type", "spreadsheet"]),
        "Usage",
    );
    ws.write("bad.csv", b"a,b\nnot a number,x\n");
    assert_signal(
        &ws.run(&[
            "convert",
            "bad.csv",
            "bad.ald",
            "--schema",
            "a: Int64, b: Utf8",
        ]),
        "InvalidFormat",
    );
}

#[test]
fn csv_input_options_shape_the_columns() {
    let ws = Workspace::new();
    ws.write(
        "semi.csv",
        b"# preamble\n1;NA;2024-01-01T10:00:00Z\n2;-;2024-01-01T10:00:00+0200\n",
    );
    let schema = ws.ok(&[
        "schema",
        "semi.csv",
        "--delimiter",
        ";",
        "--no-header",
        "--skip-rows",
        "1",
        "--null-values",
        "NA,-",
    ]);
    assert_eq!(schema, "f0: Int64\nf1: Null\nf2: Timestamp(s, \"UTC\")\n");
    ws.ok(&[
        "convert",
        "semi.csv",
        "semi.jsonl",
        "--delimiter",
        ";",
        "--no-header",
        "--skip-rows",
        "1",
        "--infer-rows",
        "all",
    ]);
    let json = String::from_utf8(ws.read("semi.jsonl")).unwrap();
    assert!(json.contains(r#""f2":"2024-01-01T08:00:00Z""#), "{json}");
    // CSV options for an input that is not CSV are refused, not ignored.
    assert_signal(
        &ws.run(&["schema", "semi.jsonl", "--delimiter", ";"]),
        "Usage",
    );
}

#[test]
fn invalid_format_unsupported_version_and_checksum_mismatch() {
    let ws = Workspace::new();
    ws.ok(&["convert", "data.csv", "good.ald"]);
    let good = ws.read("good.ald");
    let mut magic = good.clone();
    magic[..4].copy_from_slice(b"NOPE");
    ws.write("magic.ald", &magic);
    assert_signal(&ws.run(&["head", "magic.ald"]), "InvalidFormat");
    let mut version = good.clone();
    version[4] = 9;
    ws.write("version.ald", &version);
    assert_signal(&ws.run(&["schema", "version.ald"]), "UnsupportedVersion");
    // A flipped payload byte, in the default (STREAMING) file and in a whole one: every command
    // that reads rows refuses it. `schema` of a STREAMING file reads only what its chunk index's
    // prefix CRC-32C covers (opening is lazy, docs/envelope.md §4.1), so it answers; of a whole
    // file it checks the CRC32 first.
    ws.ok(&["convert", "data.csv", "whole.ald", "--whole"]);
    for (file, schema_refuses) in [("good.ald", false), ("whole.ald", true)] {
        let mut flipped = ws.read(file);
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0x10;
        ws.write("flipped.ald", &flipped);
        assert_signal(&ws.run(&["head", "flipped.ald"]), "ChecksumMismatch");
        let schema = ws.run(&["schema", "flipped.ald"]);
        if schema_refuses {
            assert_signal(&schema, "ChecksumMismatch");
        } else {
            assert!(schema.status.success(), "{file}: {}", stderr(&schema));
        }
        assert_signal(
            &ws.run(&["convert", "flipped.ald", "out.csv"]),
            "ChecksumMismatch",
        );
        assert!(!Path::new(&ws.path("out.csv")).exists());
    }
}

#[test]
fn schema_mismatch_is_reported_with_both_schemas() {
    let ws = Workspace::new();
    ws.ok(&["convert", "data.csv", "d.ald", "--streaming"]);
    let output = ws.run(&["head", "d.ald", "--expect-schema", "id: Int64"]);
    assert_signal(&output, "SchemaMismatch");
    assert!(stderr(&output).contains("expected {id: Int64}, found {id: Int64, score: Float64"));
    assert_signal(
        &ws.run(&["convert", "d.ald", "o.csv", "--expect-schema", "x: Utf8"]),
        "SchemaMismatch",
    );
    ws.ok(&[
        "head",
        "d.ald",
        "--expect-schema",
        "id: Int64, score: Float64, name: Utf8, ok: Boolean, day: Date32",
    ]);
}

fn keygen(ws: &Workspace, name: &str) -> String {
    let pw = ws.write(&format!("{name}.pw"), format!("{name}-pw\n").as_bytes());
    let key = ws.path(&format!("{name}.key"));
    let mut args = vec!["keygen", "-o", &key, "--password-file", &pw];
    args.extend_from_slice(CHEAP_KDF);
    ws.ok(&args);
    let trusted = ws.path(&format!("trusted-{name}"));
    std::fs::create_dir_all(&trusted).unwrap();
    std::fs::copy(format!("{key}.pub"), format!("{trusted}/{name}.pub")).unwrap();
    key
}

#[test]
fn signature_invalid_unless_signed_by_a_trusted_key() {
    let ws = Workspace::new();
    let key = keygen(&ws, "alice");
    keygen(&ws, "mallory");
    ws.ok(&[
        "convert",
        "data.csv",
        "d.ald",
        "--streaming",
        "--chunk-rows",
        "100",
    ]);
    let trusted = ws.path("trusted-alice");
    assert_signal(
        &ws.run(&["head", "d.ald", "--trusted-keys", &trusted]),
        "SignatureInvalid",
    );
    ws.ok(&[
        "sign",
        "d.ald",
        "--key",
        &key,
        "--password-file",
        "alice.pw",
    ]);
    ws.ok(&["head", "d.ald", "--trusted-keys", &trusted]);
    ws.ok(&["convert", "d.ald", "back.csv", "--trusted-keys", &trusted]);
    assert_eq!(ws.read("back.csv"), ws.read("data.csv"));
    let mallory = ws.path("trusted-mallory");
    assert_signal(
        &ws.run(&["head", "d.ald", "--trusted-keys", &mallory]),
        "SignatureInvalid",
    );
}

#[test]
fn decryption_failed_without_the_right_key_streaming_or_not() {
    let ws = Workspace::new();
    let key = keygen(&ws, "bob");
    ws.write("pw", b"s3cret\n");
    ws.write("wrong", b"guess\n");
    for (name, extra) in [
        ("whole.ald", vec![]),
        ("chunks.ald", vec!["--streaming", "--chunk-rows", "50"]),
    ] {
        let mut args = vec!["convert", "data.csv", name];
        args.extend(extra);
        ws.ok(&args);
        let copy = format!("r-{name}");
        std::fs::copy(ws.path(name), ws.path(&copy)).unwrap();
        let mut args = vec!["encrypt", name, "--password-file", "pw"];
        args.extend_from_slice(CHEAP_KDF);
        ws.ok(&args);
        assert_signal(&ws.run(&["head", name]), "DecryptionFailed");
        assert_signal(
            &ws.run(&["head", name, "--password-file", "wrong"]),
            "DecryptionFailed",
        );
        let json: serde_json::Value = serde_json::from_str(&ws.ok(&[
            "head",
            name,
            "--password-file",
            "pw",
            "--json",
            "-n",
            "120",
        ]))
        .unwrap();
        assert_eq!(json.as_array().unwrap().len(), 120);
        ws.ok(&[
            "convert",
            name,
            &format!("{name}.csv"),
            "--password-file",
            "pw",
        ]);
        assert_eq!(ws.read(&format!("{name}.csv")), ws.read("data.csv"));

        let pubkey = format!("{key}.pub");
        ws.ok(&["encrypt", &copy, "--recipient", &pubkey]);
        ws.ok(&["head", &copy, "--key", &key, "--password-file", "bob.pw"]);
        assert_signal(
            &ws.run(&["head", &copy, "--password-file", "pw"]),
            "DecryptionFailed",
        );
    }
}

#[test]
fn license_expired_files_are_refused() {
    use ald::{LicenseBlock, LicenseFlags, SaveOptions};
    let ws = Workspace::new();
    ws.ok(&["convert", "data.csv", "d.ald"]);
    let dataset = ald::fs::load(ws.path("d.ald"), &ald::LoadOptions::default())
        .unwrap()
        .dataset;
    for (name, expires_at) in [
        ("expired.ald", 1_000_000_000u64),
        ("valid.ald", 4_000_000_000),
    ] {
        let mut parts = dataset.to_parts(&SaveOptions::default()).unwrap();
        let mut license = LicenseBlock::new([3; 16], "Acme Corp", 900_000_000, expires_at);
        license.flags = LicenseFlags::EXPIRATION_ENFORCED;
        parts.license = Some(license.encode().unwrap().into());
        ws.write(name, &parts.to_bytes().unwrap());
    }
    let output = ws.run(&["head", "expired.ald"]);
    assert_signal(&output, "LicenseExpired");
    assert_signal(
        &ws.run(&["convert", "expired.ald", "x.csv"]),
        "LicenseExpired",
    );
    ws.ok(&["head", "valid.ald"]);
}

/// `.ald` outputs of any size are STREAMING unless `--whole` says otherwise (bounded memory while
/// converting, lazy opening, and loading on every core afterwards, issue 18).
#[test]
fn inputs_of_every_size_convert_to_streaming_files_by_default() {
    let ws = Workspace::new();
    let long = "x".repeat(1 << 20);
    let mut csv = String::from("id,text\n");
    for i in 0..65 {
        csv.push_str(&format!("{i},{long}\n"));
    }
    ws.write("big.csv", csv.as_bytes());
    let info = |file: &str| ws.ok(&["info", file]);
    ws.ok(&["convert", "big.csv", "auto.ald", "--compression", "none"]);
    assert!(
        info("auto.ald").contains("STREAMING"),
        "{}",
        info("auto.ald")
    );
    ws.ok(&[
        "convert",
        "big.csv",
        "whole.ald",
        "--compression",
        "none",
        "--whole",
    ]);
    assert!(
        !info("whole.ald").contains("STREAMING"),
        "{}",
        info("whole.ald")
    );
    ws.ok(&["convert", "data.csv", "small.ald"]);
    assert!(
        info("small.ald").contains("STREAMING"),
        "{}",
        info("small.ald")
    );
    ws.ok(&["convert", "data.csv", "small-whole.ald", "--whole"]);
    assert!(
        !info("small-whole.ald").contains("STREAMING"),
        "{}",
        info("small-whole.ald")
    );
    let chunked_whole = ws.run(&[
        "convert",
        "data.csv",
        "y.ald",
        "--whole",
        "--chunk-rows",
        "9",
    ]);
    assert!(!chunked_whole.status.success());
    let both = ws.run(&["convert", "big.csv", "x.ald", "--whole", "--streaming"]);
    assert!(!both.status.success());
    assert!(
        stderr(&both).contains("cannot be used with"),
        "{}",
        stderr(&both)
    );
    assert!(ws.read("auto.ald").len() > 64 << 20);
}
