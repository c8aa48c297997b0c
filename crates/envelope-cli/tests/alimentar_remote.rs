//! `alimentar head` and `alimentar schema` of `s3://` URLs (docs/remote.md) against a real S3 API
//! on loopback: `moto` in server mode under `$INTEROP_PYTHON` (`moto[server]` in
//! tests/python/requirements.txt), started on a free port of 127.0.0.1 and killed when the test
//! ends, failed or not. The output (text and `--json`) is the local file's, byte for byte.

use crate::support::{ALIMENTAR, Scratch, python, stderr};

#[test]
#[ignore = "interop: needs INTEROP_PYTHON with moto[server] (run by .ci/run)"]
fn head_and_schema_of_an_s3_url_print_what_the_local_file_prints() {
    let moto = test_support::MotoServer::start();
    let ws = Scratch::new();
    let mut csv = String::from("id,name,score\n");
    for i in 0..400 {
        csv.push_str(&format!("{i},name {i},{}\n", f64::from(i) * 0.5));
    }
    ws.write("d.csv", csv);
    ws.wrote(ALIMENTAR, "convert d.csv d.ald --streaming --chunk-rows 50");
    // Bucket and object made by boto3 (moto's own dependency), straight to the server.
    python(
        ws.dir(),
        [
            "-c",
            "import boto3, sys\n\
             s3 = boto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id='test',\n\
                               aws_secret_access_key='test', region_name='us-east-1')\n\
             s3.create_bucket(Bucket='datasets')\n\
             s3.put_object(Bucket='datasets', Key='d.ald', Body=open('d.ald', 'rb').read())\n",
            &moto.endpoint(),
        ]
        .as_slice(),
    );
    let endpoint = moto.endpoint();
    let env = [
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
    ];
    for args in [
        "head -n 120 {}",
        "--json head -n 120 {}",
        "schema {}",
        "--json schema {}",
    ] {
        let remote = ws.run_env(ALIMENTAR, args.replace("{}", "s3://datasets/d.ald"), &env);
        assert!(remote.status.success(), "{args}: {}", stderr(&remote));
        let local = ws.ok(ALIMENTAR, args.replace("{}", "d.ald"));
        assert_eq!(String::from_utf8(remote.stdout).unwrap(), local, "{args}");
    }
    // A missing object: Io, exit 1, the location named.
    let missing = ws.run_env(ALIMENTAR, "head s3://datasets/missing.ald", &env);
    assert_eq!(missing.status.code(), Some(1));
    assert!(stderr(&missing).starts_with("alimentar: Io: s3://datasets/missing.ald"));
}
