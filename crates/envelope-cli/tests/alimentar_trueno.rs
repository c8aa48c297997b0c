//! End-to-end tests of `alimentar convert --trueno-native` (000 §10): CSV → zero-copy `.ald`, and
//! what `info` (the aligned arrays, `--verify`), `head`, `schema` and `convert` back make of it;
//! the same for the STREAMING form (`--streaming`: one chunk of every row, docs/zerocopy.md
//! §10.1); refusals with their exit status and message.

use crate::support::{ALIMENTAR, Scratch};

/// A scratch directory with 101 rows (odd, so no array ends on a 64-byte boundary) of every array
/// type CSV inference gives (Float64, Int64) in `numeric.csv`, plus a text column for the refusal
/// in `mixed.csv`.
fn scratch_with_csv() -> Scratch {
    let ws = Scratch::new();
    let mut numeric = String::from("id,x,y\n");
    let mut mixed = String::from("id,x,label\n");
    for i in 0..101 {
        numeric.push_str(&format!("{i},{:?},{}\n", f64::from(i) / 8.0, 1000 - 3 * i));
        mixed.push_str(&format!("{i},{:?},row {i}\n", f64::from(i) / 8.0));
    }
    ws.write("numeric.csv", numeric);
    ws.write("mixed.csv", mixed);
    ws
}

fn ok(ws: &Scratch, args: &str) -> String {
    ws.ok(ALIMENTAR, args)
}

fn json(ws: &Scratch, args: &str) -> serde_json::Value {
    ws.json(ALIMENTAR, args)
}

/// Exit status 1 (2 for `Usage`) and a message starting with the signal's name, after the tool's
/// name.
fn refused(ws: &Scratch, args: &str, signal: &str) -> String {
    ws.refused(ALIMENTAR, args, signal)
}

/// The CSV the scratch directory started with, and `name` converted back to CSV, are the same.
fn back_to_csv_is_the_same(ws: &Scratch, name: &str) {
    let back = format!("{name}.csv");
    ok(ws, &format!("convert {name} {back}"));
    assert_eq!(ws.read(&back), ws.read("numeric.csv"), "{name}");
}

/// `convert FILES OPTIONS` wrote the 101 rows in the form its note names.
fn converted(ws: &Scratch, files: &str, options: &str, form: &str) {
    let said = ws.wrote(ALIMENTAR, format!("convert {files} {options}"));
    assert!(
        said.contains("wrote 101 rows") && said.contains(form),
        "{said}"
    );
}

/// Where the payload starts in the file `info --json` described.
fn payload_offset(info: &serde_json::Value) -> u64 {
    let sections = info["sections"].as_array().unwrap();
    let payload = sections.iter().find(|s| s["name"] == "payload").unwrap();
    payload["offset"].as_u64().unwrap()
}

#[test]
fn csv_to_trueno_ald_then_info_head_schema_and_back() {
    let ws = scratch_with_csv();
    let options = "--trueno-native --backend avx2";
    converted(&ws, "numeric.csv zero.ald", options, "TRUENO_NATIVE");

    // `info` reads the header and the index only, and lists the arrays.
    let info = ok(&ws, "info zero.ald");
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

    let json = json(&ws, "info zero.ald --json");
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
    let verified = ws.json(ALIMENTAR, "info zero.ald --verify --json");
    assert_eq!(verified["fully_verified"], true);

    let schema = ok(&ws, "schema zero.ald");
    assert_eq!(schema, "id: Int64\nx: Float64\ny: Int64\n");
    let head = ws.json(ALIMENTAR, "head zero.ald -n 3 --json");
    assert_eq!(
        head,
        serde_json::json!([
            {"id": 0, "x": 0.0, "y": 1000},
            {"id": 1, "x": 0.125, "y": 997},
            {"id": 2, "x": 0.25, "y": 994},
        ])
    );
    let table = ok(&ws, "head zero.ald -n 2");
    assert!(table.contains("997"), "{table}");

    // Back out to CSV: the same rows; and from a compressed .ald ("decompress once").
    back_to_csv_is_the_same(&ws, "zero.ald");
    ok(
        &ws,
        "convert numeric.csv packed.ald --streaming --chunk-rows 10",
    );
    ok(
        &ws,
        "convert packed.ald unpacked.ald --trueno-native --compression none",
    );
    back_to_csv_is_the_same(&ws, "unpacked.ald");
}

/// `--trueno-native --streaming`: the STREAMING form, one chunk of every row, reads like the
/// ordinary form everywhere; `info` shows the tensor index and the one chunk.
#[test]
fn csv_to_streaming_trueno_ald_is_one_chunk_and_reads_the_same() {
    let ws = scratch_with_csv();
    ok(&ws, "convert numeric.csv whole.ald --trueno-native");
    let options = "--trueno-native --streaming";
    let form = "TRUENO_NATIVE, STREAMING as one chunk";
    converted(&ws, "numeric.csv chunked.ald", options, form);

    let info = ok(&ws, "info chunked.ald");
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
    let json = json(&ws, "info chunked.ald --json");
    let whole = ws.json(ALIMENTAR, "info whole.ald --json");
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
    let payload = payload_offset(&json);
    assert_eq!(payload % 64, 0);
    let verified = ws.json(ALIMENTAR, "info chunked.ald --verify --json");
    assert_eq!(verified["fully_verified"], true);

    assert_eq!(
        ok(&ws, "schema chunked.ald"),
        "id: Int64\nx: Float64\ny: Int64\n"
    );
    assert_eq!(
        ok(&ws, "head chunked.ald -n 7 --json"),
        ok(&ws, "head whole.ald -n 7 --json")
    );
    back_to_csv_is_the_same(&ws, "chunked.ald");

    // A damaged array: a lazy `info` does not read it, `--verify` and `head` refuse it.
    let at = usize::try_from(payload + json["tensors"][2]["offset"].as_u64().unwrap() + 3).unwrap();
    let mut bytes = ws.read("chunked.ald");
    bytes[at] ^= 0x01;
    ws.write("damaged.ald", &bytes);
    ok(&ws, "info damaged.ald");
    refused(&ws, "info damaged.ald --verify", "ChecksumMismatch");
    refused(&ws, "head damaged.ald", "ChecksumMismatch");
    // `convert` names the files first ("converting damaged.ald to back2.csv: ChecksumMismatch").
    let output = ws.run(ALIMENTAR, "convert damaged.ald back2.csv");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("ChecksumMismatch"), "{stderr}");
    assert!(!ws.exists("back2.csv"), "nothing written");
}

#[test]
fn info_verify_finds_a_damaged_array_that_a_lazy_info_does_not_read() {
    let ws = scratch_with_csv();
    ok(&ws, "convert numeric.csv zero.ald --trueno-native");
    let json = json(&ws, "info zero.ald --json");
    let x = &json["tensors"][1];
    let at = usize::try_from(payload_offset(&json) + x["offset"].as_u64().unwrap() + 9).unwrap();
    let mut bytes = ws.read("zero.ald");
    bytes[at] ^= 0x20;
    // The CRC32 trailer recomputed, as a careless tool would: only the array's CRC-32C is left.
    test_support::fix_crc32_trailer(&mut bytes);
    ws.write("damaged.ald", &bytes);

    ok(&ws, "info damaged.ald");
    refused(&ws, "info damaged.ald --verify", "ChecksumMismatch");
    refused(&ws, "head damaged.ald", "ChecksumMismatch");
}

#[test]
fn refusals_name_the_column_or_the_flag() {
    let ws = scratch_with_csv();
    let message = refused(&ws, "convert mixed.csv zero.ald --trueno-native", "Usage");
    assert!(
        message.contains("\"label\" holds Utf8") && message.contains("f32, f64, i32, i64 or u8"),
        "{message}"
    );
    assert!(!ws.exists("zero.ald"), "nothing written");

    let trueno = "convert numeric.csv zero.ald --trueno-native";
    let message = refused(&ws, &format!("{trueno} --compression zstd-l3"), "Usage");
    assert!(message.contains("uncompressed"), "{message}");
    let message = refused(
        &ws,
        &format!("{trueno} --streaming --chunk-rows 10"),
        "Usage",
    );
    assert!(
        message.contains("one chunk holding every row") && message.contains("--chunk-rows"),
        "{message}"
    );
    // The options are checked before the input is read.
    let missing = "convert missing.csv zero.ald --trueno-native --streaming --chunk-rows 10";
    refused(&ws, missing, "Usage");
    let message = refused(
        &ws,
        "convert numeric.csv zero.parquet --trueno-native",
        "Usage",
    );
    assert!(message.contains(".ald"), "{message}");
    let message = refused(&ws, &format!("{trueno} --backend mmx"), "Usage");
    assert!(message.contains("mmx"), "{message}");

    let help = ok(&ws, "convert --help");
    assert!(
        help.contains("--trueno-native") && help.contains("zero-copy"),
        "{help}"
    );
}
