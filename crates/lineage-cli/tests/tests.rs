//! End-to-end tests of the `lineage` binary against the crate's worked-example golden vector.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const SPLITS: &str = r#"[{"split_name":"train","split_fraction":0.5,"split_seed":7},
                         {"split_name":"test","split_fraction":0.5,"split_seed":7}]"#;
const TRANSFORMS: &str = r#"[{"seq":1,"op":"lowercase"},{"seq":0,"op":"dedupe","threshold":0.25}]"#;

fn golden() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lineage/tests/data/worked_example.json");
    serde_json::from_str(&std::fs::read_to_string(p).expect("golden vector")).expect("json")
}

/// The worked example's tree plus its splits/transforms files.
fn setup() -> tempfile::TempDir {
    let d = tempfile::tempdir().expect("tempdir");
    let data = d.path().join("data");
    std::fs::create_dir_all(data.join("b")).expect("mkdir");
    std::fs::write(data.join("a.txt"), b"hello").expect("write");
    std::fs::write(data.join("b/c.bin"), [0u8, 1, 2]).expect("write");
    std::fs::write(data.join("d.txt"), b"dog\n").expect("write");
    std::fs::write(d.path().join("splits.json"), SPLITS).expect("write");
    std::fs::write(d.path().join("transforms.json"), TRANSFORMS).expect("write");
    d
}

fn lineage(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lineage"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run lineage")
}

/// `lineage snapshot data --tenant t --version v FLAG input.json EXTRA...`, with input.json
/// holding `json`.
fn snapshot_with_input(dir: &Path, flag: &str, json: &str, extra: &[&str]) -> Output {
    std::fs::write(dir.join("input.json"), json).expect("write");
    let args = [
        "snapshot",
        "data",
        "--tenant",
        "t",
        "--version",
        "v",
        flag,
        "input.json",
    ];
    lineage(dir, &[&args[..], extra].concat())
}

/// Asserts the exit status, showing stderr when it differs.
#[track_caller]
fn assert_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `lineage COMMAND` with the golden snapshot's arguments ([`SNAP`]), then `extra`.
fn lineage_snap(dir: &Path, command: &str, extra: &[&str]) -> Output {
    lineage(dir, &[&[command], SNAP, extra].concat())
}

const SNAP: &[&str] = &[
    "data",
    "--tenant",
    "acme",
    "--version",
    "v1",
    "--splits",
    "splits.json",
    "--transforms",
    "transforms.json",
];

#[test]
fn snapshot_json_prints_the_golden_commitments() {
    let d = setup();
    let out = lineage_snap(d.path(), "snapshot", &["--json"]);
    assert_exit(&out, 0);
    let got: Value = serde_json::from_slice(&out.stdout).expect("json");
    let want = &golden()["expect"];
    for k in [
        "dataset_root_hash",
        "split_hashes",
        "transform_chain_hash",
        "dataset_snapshot_id",
        "lineage_root_hash",
        "source_count",
        "transform_count",
        "snapshot_size_bytes",
    ] {
        assert_eq!(got[k], want[k], "{k}");
    }
}

#[test]
fn verify_exits_nonzero_with_the_failure_code_on_mismatch() {
    let d = setup();
    let id = golden()["expect"]["dataset_snapshot_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let ok = lineage_snap(d.path(), "verify", &["--expect", &id]);
    assert_exit(&ok, 0);
    std::fs::write(d.path().join("data/a.txt"), b"hellO").expect("write");
    let bad = lineage_snap(d.path(), "verify", &["--expect", &id]);
    assert_exit(&bad, 1);
    assert!(String::from_utf8_lossy(&bad.stderr).contains("SNAPSHOT_HASH_MISMATCH"));
}

#[test]
fn split_lists_each_file_with_its_split() {
    let d = setup();
    let out = lineage(d.path(), &["split", "data", "--splits", "splits.json"]);
    assert_exit(&out, 0);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "train\ta.txt\ntrain\tb/c.bin\ntest\td.txt\n"
    );
}

#[test]
fn plan_prints_the_golden_access_plan_hash() {
    let d = setup();
    let g = golden();
    let plan = &g["input"]["plan"];
    let s = |v: &Value| v.as_str().expect("str").to_owned();
    let out = lineage(
        d.path(),
        &[
            "plan",
            "--json",
            "--kernel-replay-token",
            &s(&plan["kernel_replay_token"]),
            "--manifest-hash",
            &s(&plan["manifest_hash"]),
            "--dataset-key",
            &s(&g["expect"]["dataset_snapshot_id"]),
            "--sampler-config-hash",
            &s(&plan["sampler_config_hash"]),
        ],
    );
    assert_exit(&out, 0);
    let got: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        got["data_access_plan_hash"],
        g["expect"]["data_access_plan_hash"]
    );
}

#[test]
fn stopped_snapshot_resumes_from_its_checkpoint_to_the_same_id() {
    let d = setup();
    let stop = lineage_snap(
        d.path(),
        "snapshot",
        &["--json", "--checkpoint", "ck", "--stop-after", "2"],
    );
    assert_exit(&stop, 3);
    assert!(d.path().join("ck").exists());
    let done = lineage_snap(d.path(), "snapshot", &["--json", "--checkpoint", "ck"]);
    assert_exit(&done, 0);
    let got: Value = serde_json::from_slice(&done.stdout).expect("json");
    assert_eq!(
        got["dataset_snapshot_id"],
        golden()["expect"]["dataset_snapshot_id"]
    );
    assert!(!d.path().join("ck").exists());
}

#[test]
fn invalid_splits_fail_with_their_code() {
    let d = setup();
    let out = snapshot_with_input(
        d.path(),
        "--splits",
        r#"[{"split_name":"a","split_fraction":0.7}]"#,
        &["--json"],
    );
    assert_exit(&out, 1);
    let got: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(got["ok"], false);
    assert_eq!(got["error"]["code"], "SPLIT_FRACTION_SUM");
}

#[test]
fn trace_holds_header_one_iter_per_file_and_run_end() {
    use lineage::trace::TraceRecord;
    let d = setup();
    let out = lineage_snap(d.path(), "snapshot", &["--trace", "trace.cbor"]);
    assert_exit(&out, 0);
    let bytes = std::fs::read(d.path().join("trace.cbor")).expect("trace written");
    let id = lineage::Digest::from_hex(
        golden()["expect"]["dataset_snapshot_id"]
            .as_str()
            .expect("id"),
    )
    .expect("hex");
    let end = TraceRecord::RunEnd {
        dataset_snapshot_id: id,
    }
    .to_cbor()
    .to_canonical_bytes();
    assert!(bytes.ends_with(&end));
    let iter0 = TraceRecord::Iter {
        step: 0,
        hash: lineage::hash::sha256(b"hello"),
        status: "ok",
    }
    .to_cbor()
    .to_canonical_bytes();
    assert!(bytes.windows(iter0.len()).any(|w| w == iter0.as_slice()));
}

#[test]
fn trace_of_a_failed_run_is_one_error_record() {
    use lineage::cbor::{Value, decode};
    let d = setup();
    let out = snapshot_with_input(
        d.path(),
        "--transforms",
        r#"[{"seq":1},{"seq":1}]"#,
        &["--trace", "t.cbor"],
    );
    assert_exit(&out, 1);
    let Ok(Value::Map(m)) = decode(&std::fs::read(d.path().join("t.cbor")).expect("trace")) else {
        panic!("error record is one canonical map")
    };
    assert_eq!(m["failure_code"], Value::text("TRANSFORM_SEQ_TIE"));
    assert_eq!(
        m["failure_operator"],
        Value::text("UML_OS.Data.ValidateSnapshot_v1")
    );
}

/// `verify --checkpoint` never says OK for files the checkpoint covers but that were replaced
/// since: the resumed build refuses the checkpoint instead of reusing their old hashes.
#[test]
fn verify_refuses_a_checkpoint_whose_files_were_replaced() {
    let d = setup();
    let stop = lineage_snap(
        d.path(),
        "snapshot",
        &["--checkpoint", "ck", "--stop-after", "2"],
    );
    assert_exit(&stop, 3);
    // The two covered files (a.txt, b/c.bin) replaced by new files of the same length.
    for (name, bytes) in [("a.txt", &b"HELLO"[..]), ("b/c.bin", &[9, 9, 9][..])] {
        let fresh = d.path().join("fresh");
        std::fs::write(&fresh, bytes).expect("write");
        std::fs::rename(&fresh, d.path().join("data").join(name)).expect("rename");
    }
    let expect = golden()["expect"]["dataset_snapshot_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let out = lineage_snap(
        d.path(),
        "verify",
        &["--checkpoint", "ck", "--expect", &expect],
    );
    assert_exit(&out, 1);
    assert!(String::from_utf8_lossy(&out.stdout).is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("CHECKPOINT_MISMATCH"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
