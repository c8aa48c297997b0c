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

// The catalog commands: publish, show, log, diff, gc.

/// `lineage --json ARGS` in `dir`, parsed.
fn lineage_json(dir: &Path, args: &[&str]) -> Value {
    let out = lineage(dir, &[&["--json"], args].concat());
    assert_exit(&out, 0);
    serde_json::from_slice(&out.stdout).expect("one JSON document")
}

fn golden_id() -> String {
    golden()["expect"]["dataset_snapshot_id"]
        .as_str()
        .expect("id")
        .to_owned()
}

#[test]
fn publish_records_the_golden_snapshot_and_show_prints_it_whole() {
    let d = setup();
    let p = lineage_json(
        d.path(),
        &[&["publish"], SNAP, &["--dataset", "words"]].concat(),
    );
    assert_eq!(p["dataset_snapshot_id"], golden_id().as_str());
    assert_eq!(p["state"], "published");
    assert_eq!(p["already_published"], false);
    assert!(d.path().join(".lineage/catalog.sqlite").is_file());
    // Again: nothing to do.
    let again = lineage_json(
        d.path(),
        &[&["publish"], SNAP, &["--dataset", "words"]].concat(),
    );
    assert_eq!(again["already_published"], true);
    let show = lineage_json(d.path(), &["show", &golden_id()[..10]]);
    assert_eq!(show["dataset_snapshot_id"], golden_id().as_str());
    assert_eq!(show["sources"].as_array().map(Vec::len), Some(3));
    assert_eq!(show["sources"][1]["path"], "b/c.bin");
    assert_eq!(show["splits"][0]["split_name"], "test");
    assert_eq!(show["transforms"][1]["op"], "lowercase");
    assert_eq!(
        show["lineage_root_hash"],
        golden()["expect"]["lineage_root_hash"]
    );
    // The JSON is a complete record: published into another catalog it gives the same ID.
    std::fs::write(d.path().join("rec.json"), show.to_string()).expect("write");
    let p2 = lineage_json(
        d.path(),
        &["publish", "--from", "rec.json", "--catalog", "other"],
    );
    assert_eq!(p2["dataset_snapshot_id"], golden_id().as_str());
    // A record whose ID does not match its content is refused.
    let mut forged = show.clone();
    forged["sources"][0]["content_hash"] = Value::from("00".repeat(32));
    std::fs::write(d.path().join("forged.json"), forged.to_string()).expect("write");
    let out = lineage(
        d.path(),
        &["publish", "--from", "forged.json", "--catalog", "third"],
    );
    assert_exit(&out, 1);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("SNAPSHOT_HASH_MISMATCH"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_published_version_cannot_name_other_content() {
    let d = setup();
    let p = lineage_json(
        d.path(),
        &[&["publish"], SNAP, &["--dataset", "words"]].concat(),
    );
    assert_eq!(p["state"], "published");
    std::fs::write(d.path().join("data/a.txt"), b"changed").expect("write");
    let out = lineage(
        d.path(),
        &[&["publish"], SNAP, &["--dataset", "words"]].concat(),
    );
    assert_exit(&out, 1);
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("lineage: VERSION_EXISTS"));
    // With --json the failure is one object on stdout.
    let out = lineage(
        d.path(),
        &[&["--json", "publish"], SNAP, &["--dataset", "words"]].concat(),
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["error"]["code"], "VERSION_EXISTS");
}

#[test]
fn log_and_diff_follow_a_dataset_through_versions() {
    let d = setup();
    let publish = |version: &str| {
        lineage_json(
            d.path(),
            &[
                "publish",
                "data",
                "--tenant",
                "acme",
                "--version",
                version,
                "--dataset",
                "words",
                "--splits",
                "splits.json",
            ],
        )["dataset_snapshot_id"]
            .as_str()
            .expect("id")
            .to_owned()
    };
    let v1 = publish("v1");
    std::fs::write(d.path().join("data/a.txt"), b"HELLO").expect("write");
    std::fs::remove_file(d.path().join("data/d.txt")).expect("rm");
    std::fs::write(d.path().join("data/e.txt"), b"new").expect("write");
    std::fs::write(
        d.path().join("splits.json"),
        r#"[{"split_name":"train","split_fraction":1.0}]"#,
    )
    .expect("write");
    let v2 = publish("v2");
    let log = lineage_json(d.path(), &["log", "words"]);
    let ids: Vec<&str> = log
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|s| s["dataset_snapshot_id"].as_str())
        .collect();
    assert_eq!(ids, [v1.as_str(), v2.as_str()]);
    let diff = lineage_json(d.path(), &["diff", &v1, &v2]);
    assert_eq!(diff["files_added"][0]["path"], "e.txt");
    assert_eq!(diff["files_removed"][0]["path"], "d.txt");
    assert_eq!(diff["files_changed"][0]["path"], "a.txt");
    assert_eq!(diff["splits_removed"][0]["split_name"], "test");
    assert_eq!(diff["splits_changed"][0]["split_name"], "train");
    assert_eq!(diff["transforms_changed"], false);
    let text = lineage(d.path(), &["diff", &v1, &v2]);
    assert_exit(&text, 0);
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(
        text.contains("A file  e.txt") && text.contains("D split test"),
        "{text}"
    );
}

#[test]
fn gc_collects_an_expired_snapshot_and_dry_run_deletes_nothing() {
    let d = setup();
    let keep = lineage_json(
        d.path(),
        &[
            "publish",
            "data",
            "--tenant",
            "acme",
            "--version",
            "keep",
            "--dataset",
            "w",
        ],
    );
    std::fs::write(d.path().join("data/extra"), b"1").expect("write");
    let old = lineage_json(
        d.path(),
        &[
            "publish",
            "data",
            "--tenant",
            "acme",
            "--version",
            "old",
            "--dataset",
            "w",
            "--retention-class",
            "ephemeral",
            "--gc-eligible-after",
            "2030-01-01T00:00:00Z",
        ],
    );
    let old_id = old["dataset_snapshot_id"].as_str().expect("id");
    let before = lineage_json(d.path(), &["gc", "--dry-run", "--at", "1893455999"]);
    assert_eq!(before["collected"].as_array().map(Vec::len), Some(0));
    let dry = lineage_json(
        d.path(),
        &["gc", "--dry-run", "--at", "2030-01-01T00:00:00Z"],
    );
    assert_eq!(dry["snapshots_removed"][0], old_id);
    assert_eq!(dry["dry_run"], true);
    lineage_json(d.path(), &["show", old_id]);
    let gc = lineage_json(d.path(), &["gc", "--at", "2030-01-01T00:00:00Z"]);
    assert_eq!(gc["collected"], dry["collected"]);
    let out = lineage(d.path(), &["show", old_id]);
    assert_exit(&out, 1);
    assert!(String::from_utf8_lossy(&out.stderr).contains("SNAPSHOT_NOT_FOUND"));
    lineage_json(
        d.path(),
        &["show", keep["dataset_snapshot_id"].as_str().expect("id")],
    );
    let store = lineage_store::Store::open(d.path().join(".lineage")).expect("open");
    assert!(store.check().expect("check").is_ok());
}

#[test]
fn read_commands_never_create_a_catalog_and_lineage_catalog_names_one() {
    let d = setup();
    let out = lineage(d.path(), &["log", "words", "--catalog", "nowhere"]);
    assert_exit(&out, 1);
    assert!(!d.path().join("nowhere").exists());
    let out = Command::new(env!("CARGO_BIN_EXE_lineage"))
        .current_dir(d.path())
        .env("LINEAGE_CATALOG", "from-env")
        .args([&["publish"], SNAP, &["--dataset", "words"]].concat())
        .output()
        .expect("run");
    assert_exit(&out, 0);
    assert!(d.path().join("from-env/catalog.sqlite").is_file());
}

#[test]
fn two_lineage_processes_publish_into_one_catalog_at_once() {
    let d = setup();
    const N: usize = 12;
    let workers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|w| {
            let dir = d.path().to_path_buf();
            std::thread::spawn(move || {
                for i in 0..N {
                    let version = format!("{w}{i}");
                    let out = lineage(
                        &dir,
                        &[
                            "publish",
                            "data",
                            "--tenant",
                            "acme",
                            "--version",
                            &version,
                            "--dataset",
                            w,
                            "--threads",
                            "1",
                        ],
                    );
                    assert_exit(&out, 0);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    for w in ["a", "b"] {
        let log = lineage_json(d.path(), &["log", w]);
        assert_eq!(log.as_array().map(Vec::len), Some(N), "{w}");
    }
    let store = lineage_store::Store::open(d.path().join(".lineage")).expect("open");
    let check = store.check().expect("check");
    assert!(check.is_ok(), "{check:?}");
}
