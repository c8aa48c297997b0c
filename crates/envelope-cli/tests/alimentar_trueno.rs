//! End-to-end tests of `alimentar convert --trueno-native` (000 §10): CSV → zero-copy `.ald`, and
//! what `info` (the aligned arrays, `--verify`), `head`, `schema` and `convert` back make of it;
//! the same for the STREAMING form (`--streaming`: one chunk of every row, docs/zerocopy.md
//! §10.1); refusals with their exit status and message.

use std::path::Path;
use std::process::{Command, Output};

const ALIMENTAR: &str = env!("CARGO_BIN_EXE_alimentar");

/// 101 rows (odd, so no array ends on a 64-byte boundary) of every array type CSV inference
/// gives (Float64, Int64), plus a text column for the refusal.
fn write_csv(dir: &Path) {
    let mut numeric = String::from("id,x,y\n");
    let mut mixed = String::from("id,x,label\n");
    for i in 0..101 {
        numeric.push_str(&format!("{i},{:?},{}\n", f64::from(i) / 8.0, 1000 - 3 * i));
        mixed.push_str(&format!("{i},{:?},row {i}\n", f64::from(i) / 8.0));
    }
    std::fs::write(dir.join("numeric.csv"), numeric).unwrap();
    std::fs::write(dir.join("mixed.csv"), mixed).unwrap();
}

fn run(dir: &Path, args: &[&str]) -> Output {
    Command::new(ALIMENTAR)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let output = run(dir, args);
    assert!(
        output.status.success(),
        "alimentar {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// What a successful writing command said about its output (a note on stderr, docs/cli.md).
fn wrote(dir: &Path, args: &[&str]) -> String {
    let output = run(dir, args);
    assert!(
        output.status.success(),
        "alimentar {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stderr).unwrap()
}

/// Exit status 1 (2 for `Usage`) and a message starting with the signal's name, after the tool's
/// name.
fn refused(dir: &Path, args: &[&str], signal: &str) -> String {
    let output = run(dir, args);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.code(),
        Some(if signal == "Usage" { 2 } else { 1 }),
        "alimentar {args:?}: {stderr}"
    );
    assert!(
        stderr.starts_with(&format!("alimentar: {signal}")),
        "alimentar {args:?}: {stderr}"
    );
    stderr
}

#[test]
fn csv_to_trueno_ald_then_info_head_schema_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    write_csv(dir);
    let said = wrote(
        dir,
        &[
            "convert",
            "numeric.csv",
            "zero.ald",
            "--trueno-native",
            "--backend",
            "avx2",
        ],
    );
    assert!(
        said.contains("wrote 101 rows") && said.contains("TRUENO_NATIVE"),
        "{said}"
    );

    // `info` reads the header and the index only, and lists the arrays.
    let info = ok(dir, &["info", "zero.ald"]);
    assert!(info.contains("TRUENO_NATIVE"), "{info}");
    assert!(
        info.contains("tensors      3 (64-byte aligned, zero-copy)"),
        "{info}"
    );
    for (name, dtype) in [("id", "i64"), ("x", "f64"), ("y", "i64")] {
        assert!(
            info.lines().any(|line| {
                let words: Vec<&str> = line.split_whitespace().collect();
                words.first() == Some(&name)
                    && words.get(1) == Some(&dtype)
                    && line.contains("[101]")
            }),
            "no array line for {name}: {info}"
        );
    }
    assert!(info.contains("rows          101"), "{info}");
    assert!(info.contains("not read"), "lazy open: {info}");

    let json: serde_json::Value =
        serde_json::from_str(&ok(dir, &["info", "zero.ald", "--json"])).unwrap();
    let tensors = json["tensors"].as_array().unwrap();
    let names: Vec<&str> = tensors
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["id", "x", "y"]);
    for tensor in tensors {
        assert_eq!(tensor["offset"].as_u64().unwrap() % 64, 0);
        assert_eq!(tensor["shape"], serde_json::json!([101]));
        assert_eq!(tensor["strides"], serde_json::json!([1]));
        assert_eq!(tensor["backend"], "avx2");
    }
    assert_eq!(json["dataset"]["num_rows"], 101);
    assert_eq!(json["fully_verified"], false);

    // `--verify` checks every byte: the whole-file CRC32 and each array's CRC-32C.
    let verified: serde_json::Value =
        serde_json::from_str(&ok(dir, &["info", "zero.ald", "--verify", "--json"])).unwrap();
    assert_eq!(verified["fully_verified"], true);

    let schema = ok(dir, &["schema", "zero.ald"]);
    assert_eq!(schema, "id: Int64\nx: Float64\ny: Int64\n");
    let head: serde_json::Value =
        serde_json::from_str(&ok(dir, &["head", "zero.ald", "-n", "3", "--json"])).unwrap();
    assert_eq!(
        head,
        serde_json::json!([
            {"id": 0, "x": 0.0, "y": 1000},
            {"id": 1, "x": 0.125, "y": 997},
            {"id": 2, "x": 0.25, "y": 994},
        ])
    );
    let table = ok(dir, &["head", "zero.ald", "-n", "2"]);
    assert!(table.contains("997"), "{table}");

    // Back out to CSV: the same rows; and from a compressed .ald ("decompress once").
    ok(dir, &["convert", "zero.ald", "back.csv"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("back.csv")).unwrap(),
        std::fs::read_to_string(dir.join("numeric.csv")).unwrap()
    );
    ok(
        dir,
        &[
            "convert",
            "numeric.csv",
            "packed.ald",
            "--streaming",
            "--chunk-rows",
            "10",
        ],
    );
    ok(
        dir,
        &[
            "convert",
            "packed.ald",
            "unpacked.ald",
            "--trueno-native",
            "--compression",
            "none",
        ],
    );
    ok(dir, &["convert", "unpacked.ald", "back2.csv"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("back2.csv")).unwrap(),
        std::fs::read_to_string(dir.join("numeric.csv")).unwrap()
    );
}

/// `--trueno-native --streaming`: the STREAMING form, one chunk of every row, reads like the
/// ordinary form everywhere; `info` shows the tensor index and the one chunk.
#[test]
fn csv_to_streaming_trueno_ald_is_one_chunk_and_reads_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    write_csv(dir);
    ok(
        dir,
        &["convert", "numeric.csv", "whole.ald", "--trueno-native"],
    );
    let said = wrote(
        dir,
        &[
            "convert",
            "numeric.csv",
            "chunked.ald",
            "--trueno-native",
            "--streaming",
        ],
    );
    assert!(
        said.contains("wrote 101 rows") && said.contains("TRUENO_NATIVE, STREAMING as one chunk"),
        "{said}"
    );

    let info = ok(dir, &["info", "chunked.ald"]);
    assert!(
        info.contains("TRUENO_NATIVE") && info.contains("STREAMING"),
        "{info}"
    );
    assert!(info.contains("chunks       1"), "{info}");
    assert!(info.contains("chunks        1"), "{info}");
    assert!(
        info.contains("tensors      3 (64-byte aligned, zero-copy)"),
        "{info}"
    );
    assert!(info.contains("not read"), "lazy open: {info}");
    let json: serde_json::Value =
        serde_json::from_str(&ok(dir, &["info", "chunked.ald", "--json"])).unwrap();
    let whole: serde_json::Value =
        serde_json::from_str(&ok(dir, &["info", "whole.ald", "--json"])).unwrap();
    assert_eq!(json["chunks"], 1);
    assert_eq!(json["dataset"]["num_chunks"], 1);
    assert_eq!(json["dataset"]["num_rows"], 101);
    assert_eq!(json["tensors"], whole["tensors"], "the same arrays");
    assert_eq!(json["payload_size"], whole["payload_size"]);
    let sections: Vec<&str> = json["sections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(sections.contains(&"chunk_index"), "{sections:?}");
    let payload = json["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "payload")
        .unwrap();
    assert_eq!(payload["offset"].as_u64().unwrap() % 64, 0);
    let verified: serde_json::Value =
        serde_json::from_str(&ok(dir, &["info", "chunked.ald", "--verify", "--json"])).unwrap();
    assert_eq!(verified["fully_verified"], true);

    assert_eq!(
        ok(dir, &["schema", "chunked.ald"]),
        "id: Int64\nx: Float64\ny: Int64\n"
    );
    assert_eq!(
        ok(dir, &["head", "chunked.ald", "-n", "7", "--json"]),
        ok(dir, &["head", "whole.ald", "-n", "7", "--json"])
    );
    ok(dir, &["convert", "chunked.ald", "back.csv"]);
    assert_eq!(
        std::fs::read_to_string(dir.join("back.csv")).unwrap(),
        std::fs::read_to_string(dir.join("numeric.csv")).unwrap()
    );

    // A damaged array: a lazy `info` does not read it, `--verify` and `head` refuse it.
    let at = usize::try_from(
        payload["offset"].as_u64().unwrap() + json["tensors"][2]["offset"].as_u64().unwrap() + 3,
    )
    .unwrap();
    let mut bytes = std::fs::read(dir.join("chunked.ald")).unwrap();
    bytes[at] ^= 0x01;
    std::fs::write(dir.join("damaged.ald"), &bytes).unwrap();
    ok(dir, &["info", "damaged.ald"]);
    refused(
        dir,
        &["info", "damaged.ald", "--verify"],
        "ChecksumMismatch",
    );
    refused(dir, &["head", "damaged.ald"], "ChecksumMismatch");
    // `convert` names the files first ("converting damaged.ald to back2.csv: ChecksumMismatch").
    let output = run(dir, &["convert", "damaged.ald", "back2.csv"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("ChecksumMismatch"), "{stderr}");
    assert!(!dir.join("back2.csv").exists(), "nothing written");
}

#[test]
fn info_verify_finds_a_damaged_array_that_a_lazy_info_does_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    write_csv(dir);
    ok(
        dir,
        &["convert", "numeric.csv", "zero.ald", "--trueno-native"],
    );
    let json: serde_json::Value =
        serde_json::from_str(&ok(dir, &["info", "zero.ald", "--json"])).unwrap();
    let payload = json["sections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "payload")
        .unwrap()["offset"]
        .as_u64()
        .unwrap();
    let x = &json["tensors"][1];
    let at = usize::try_from(payload + x["offset"].as_u64().unwrap() + 9).unwrap();
    let mut bytes = std::fs::read(dir.join("zero.ald")).unwrap();
    bytes[at] ^= 0x20;
    // The CRC32 trailer recomputed, as a careless tool would: only the array's CRC-32C is left.
    test_support::fix_crc32_trailer(&mut bytes);
    std::fs::write(dir.join("damaged.ald"), &bytes).unwrap();

    ok(dir, &["info", "damaged.ald"]);
    refused(
        dir,
        &["info", "damaged.ald", "--verify"],
        "ChecksumMismatch",
    );
    refused(dir, &["head", "damaged.ald"], "ChecksumMismatch");
}

#[test]
fn refusals_name_the_column_or_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    write_csv(dir);
    let message = refused(
        dir,
        &["convert", "mixed.csv", "zero.ald", "--trueno-native"],
        "Usage",
    );
    assert!(
        message.contains("\"label\" holds Utf8") && message.contains("f32, f64, i32, i64 or u8"),
        "{message}"
    );
    assert!(!dir.join("zero.ald").exists(), "nothing written");

    let message = refused(
        dir,
        &[
            "convert",
            "numeric.csv",
            "zero.ald",
            "--trueno-native",
            "--compression",
            "zstd-l3",
        ],
        "Usage",
    );
    assert!(message.contains("uncompressed"), "{message}");
    let message = refused(
        dir,
        &[
            "convert",
            "numeric.csv",
            "zero.ald",
            "--trueno-native",
            "--streaming",
            "--chunk-rows",
            "10",
        ],
        "Usage",
    );
    assert!(
        message.contains("one chunk holding every row") && message.contains("--chunk-rows"),
        "{message}"
    );
    // The options are checked before the input is read.
    refused(
        dir,
        &[
            "convert",
            "missing.csv",
            "zero.ald",
            "--trueno-native",
            "--streaming",
            "--chunk-rows",
            "10",
        ],
        "Usage",
    );
    let message = refused(
        dir,
        &["convert", "numeric.csv", "zero.parquet", "--trueno-native"],
        "Usage",
    );
    assert!(message.contains(".ald"), "{message}");
    let message = refused(
        dir,
        &[
            "convert",
            "numeric.csv",
            "zero.ald",
            "--trueno-native",
            "--backend",
            "mmx",
        ],
        "Usage",
    );
    assert!(message.contains("mmx"), "{message}");

    let help = ok(dir, &["convert", "--help"]);
    assert!(
        help.contains("--trueno-native") && help.contains("zero-copy"),
        "{help}"
    );
}
