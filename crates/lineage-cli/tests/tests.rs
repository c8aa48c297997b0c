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
    let out = lineage(d.path(), &[&["snapshot"], SNAP, &["--json"]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    let ok = lineage(d.path(), &[&["verify"], SNAP, &["--expect", &id]].concat());
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    std::fs::write(d.path().join("data/a.txt"), b"hellO").expect("write");
    let bad = lineage(d.path(), &[&["verify"], SNAP, &["--expect", &id]].concat());
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("SNAPSHOT_HASH_MISMATCH"));
}

#[test]
fn split_lists_each_file_with_its_split() {
    let d = setup();
    let out = lineage(d.path(), &["split", "data", "--splits", "splits.json"]);
    assert!(out.status.success());
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
    assert!(out.status.success());
    let got: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(
        got["data_access_plan_hash"],
        g["expect"]["data_access_plan_hash"]
    );
}

#[test]
fn stopped_snapshot_resumes_from_its_checkpoint_to_the_same_id() {
    let d = setup();
    let stop = lineage(
        d.path(),
        &[
            &["snapshot"],
            SNAP,
            &["--json", "--checkpoint", "ck", "--stop-after", "2"],
        ]
        .concat(),
    );
    assert_eq!(
        stop.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&stop.stderr)
    );
    assert!(d.path().join("ck").exists());
    let done = lineage(
        d.path(),
        &[&["snapshot"], SNAP, &["--json", "--checkpoint", "ck"]].concat(),
    );
    assert!(done.status.success());
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
    std::fs::write(
        d.path().join("bad.json"),
        r#"[{"split_name":"a","split_fraction":0.7}]"#,
    )
    .expect("write");
    let out = lineage(
        d.path(),
        &[
            "snapshot",
            "data",
            "--tenant",
            "t",
            "--version",
            "v",
            "--splits",
            "bad.json",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let got: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(got["ok"], false);
    assert_eq!(got["error"]["code"], "SPLIT_FRACTION_SUM");
}

#[test]
fn trace_holds_header_one_iter_per_file_and_run_end() {
    use lineage::trace::TraceRecord;
    let d = setup();
    let out = lineage(
        d.path(),
        &[&["snapshot"], SNAP, &["--trace", "trace.cbor"]].concat(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    std::fs::write(d.path().join("tie.json"), r#"[{"seq":1},{"seq":1}]"#).expect("write");
    let out = lineage(
        d.path(),
        &[
            "snapshot",
            "data",
            "--tenant",
            "t",
            "--version",
            "v",
            "--transforms",
            "tie.json",
            "--trace",
            "t.cbor",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
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
    let stop = lineage(
        d.path(),
        &[
            &["snapshot"],
            SNAP,
            &["--checkpoint", "ck", "--stop-after", "2"],
        ]
        .concat(),
    );
    assert_eq!(stop.status.code(), Some(3));
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
    let out = lineage(
        d.path(),
        &[
            &["verify"],
            SNAP,
            &["--checkpoint", "ck", "--expect", &expect],
        ]
        .concat(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("CHECKPOINT_MISMATCH"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
