//! `lineage snapshot s3://bucket/prefix` against a real S3 API on loopback (`moto` in server
//! mode under `$INTEROP_PYTHON`), the tree uploaded by boto3: the report and the trace are those
//! of the local copy, byte for byte, whatever the concurrency.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::{SNAP, assert_exit, setup};

/// `lineage ARGS` with the moto server's endpoint and test credentials in the environment.
fn lineage_s3(dir: &Path, endpoint: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lineage"))
        .current_dir(dir)
        .args(args)
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_REGION", "us-east-1")
        .output()
        .expect("run lineage")
}

/// The snapshot arguments of [`SNAP`] with DIR replaced by `dir`.
fn snap_args<'a>(dir: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--json", "snapshot", dir];
    args.extend_from_slice(&SNAP[1..]);
    args.extend_from_slice(extra);
    args
}

/// Runs `$INTEROP_PYTHON ARGS` in `dir`; panics with its stderr if it fails.
fn python_in(dir: &Path, args: &[&str]) {
    let python = std::env::var_os("INTEROP_PYTHON").expect("INTEROP_PYTHON");
    let out = Command::new(python)
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "needs $INTEROP_PYTHON with moto[server] and boto3 (run by .ci/run)"]
fn a_prefix_in_s3_has_the_ids_and_trace_of_its_local_copy() {
    let moto = test_support::MotoServer::start();
    let d = setup();
    let data = d.path().join("data");
    // Beyond the worked example: names object keys spell differently from paths (a space,
    // non-ASCII, a dot file), an empty file, a file of many network buffers, and enough small
    // files that several are in flight at once and finish out of order.
    std::fs::write(data.join("é x.txt"), "accent and space").expect("write");
    std::fs::write(data.join(".hidden"), "dot file").expect("write");
    std::fs::write(data.join("empty"), b"").expect("write");
    let big: Vec<u8> = (0..5_000_000u32)
        .map(|i| i.wrapping_mul(2_654_435_761).to_le_bytes()[1])
        .collect();
    std::fs::write(data.join("b/big.bin"), &big).expect("write");
    std::fs::create_dir_all(data.join("many/deeper")).expect("mkdir");
    for i in 0..150 {
        std::fs::write(
            data.join(format!("many/{i:03}.txt")),
            format!("file {i}\n").repeat(i),
        )
        .expect("write");
        std::fs::write(data.join(format!("many/deeper/{i}")), &i.to_le_bytes()[..1])
            .expect("write");
    }
    // Uploaded by boto3 (moto's own dependency): every file under runs/2026/data/, a folder
    // marker inside it (not an object of the tree), and a sibling prefix that shares the name's
    // first letters (not under the prefix).
    python_in(
        d.path(),
        &[
            "-c",
            "import boto3, os, sys\n\
             s3 = boto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id='test',\n\
                               aws_secret_access_key='test', region_name='us-east-1')\n\
             s3.create_bucket(Bucket='lake')\n\
             for root, _, files in os.walk('data'):\n\
             \x20   for name in files:\n\
             \x20       path = os.path.join(root, name)\n\
             \x20       key = 'runs/2026/' + os.path.relpath(path, '.').replace(os.sep, '/')\n\
             \x20       s3.put_object(Bucket='lake', Key=key, Body=open(path, 'rb').read())\n\
             s3.put_object(Bucket='lake', Key='runs/2026/data/b/', Body=b'')\n\
             s3.put_object(Bucket='lake', Key='runs/2026/data2/a.txt', Body=b'not in the tree')\n",
            &moto.endpoint(),
        ],
    );
    let local = crate::lineage(
        d.path(),
        &[snap_args("data", &["--trace", "local.trace"]), vec![]].concat(),
    );
    assert_exit(&local, 0);
    let local_report: Value = serde_json::from_slice(&local.stdout).expect("json");
    let endpoint = moto.endpoint();
    for (n, (url, extra)) in [
        ("s3://lake/runs/2026/data", vec!["--trace", "remote0.trace"]),
        (
            "s3://lake/runs/2026/data/",
            vec![
                "--trace",
                "remote1.trace",
                "--concurrency",
                "1",
                "--threads",
                "1",
            ],
        ),
        (
            "s3://lake/runs/2026/data",
            vec!["--trace", "remote2.trace", "--concurrency", "64"],
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let remote = lineage_s3(d.path(), &endpoint, &snap_args(url, &extra));
        assert_exit(&remote, 0);
        let remote_report: Value = serde_json::from_slice(&remote.stdout).expect("json");
        assert_eq!(remote_report, local_report, "{url} {extra:?}");
        assert_eq!(
            std::fs::read(d.path().join(format!("remote{n}.trace"))).expect("trace"),
            std::fs::read(d.path().join("local.trace")).expect("trace"),
            "the trace names the same files with the same hashes"
        );
    }
    // An empty prefix is an empty dataset, as an empty directory is; checkpoints are refused.
    let empty = lineage_s3(
        d.path(),
        &endpoint,
        &snap_args("s3://lake/nothing/here", &[]),
    );
    assert_exit(&empty, 1);
    assert!(
        String::from_utf8_lossy(&empty.stderr).contains("EMPTY_DATASET"),
        "{}",
        String::from_utf8_lossy(&empty.stderr)
    );
    let checkpoint = lineage_s3(
        d.path(),
        &endpoint,
        &snap_args("s3://lake/runs/2026/data", &["--checkpoint", "ck"]),
    );
    assert_exit(&checkpoint, 1);
    assert!(String::from_utf8_lossy(&checkpoint.stderr).contains("--checkpoint"));
    // A bucket that does not exist: IO, naming the location.
    let missing = lineage_s3(
        d.path(),
        &endpoint,
        &snap_args("s3://no-such-bucket/data", &[]),
    );
    assert_exit(&missing, 1);
    let message = String::from_utf8_lossy(&missing.stderr);
    assert!(
        message.contains("IO") && message.contains("s3://no-such-bucket/data"),
        "{message}"
    );
}
