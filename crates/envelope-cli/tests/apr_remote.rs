//! `apr inspect` and `alimentar info` of `s3://` URLs (docs/remote.md) against a real S3 API on
//! loopback (`moto` in server mode under `$INTEROP_PYTHON`, as in `alimentar_remote.rs`): the
//! output, text and `--json`, is the local file's byte for byte but for the name of the file,
//! for STREAMING, TRUENO_NATIVE, signed, encrypted and serde models and for STREAMING, whole and
//! TRUENO_NATIVE datasets, opened from the object's head and tail or, with `--verify`, a trusted
//! key or a password, fetched whole.

use apr::{ModelCard, ModelType, SaveOptions, Tensor, TensorModel};
use envelope_core::Compression;

use crate::support::{ALIMENTAR, APR, CHEAP_KDF, Scratch, key_of, python, stderr};

/// A small tensor model with a card.
fn model_bytes() -> Vec<u8> {
    let values: Vec<f32> = (0..1024).map(|i| (i as f32 * 0.1).cos()).collect();
    let model = TensorModel::new(vec![
        Tensor::from_f32("token_embd.weight", vec![16, 32], &values[..512]).unwrap(),
        Tensor::from_f32("blk.0.attn_norm.weight", vec![32], &values[..32]).unwrap(),
        Tensor::from_f32("output.weight", vec![8, 64], &values[512..]).unwrap(),
    ])
    .unwrap()
    .quantize(apr::QuantType::Q8_0)
    .unwrap();
    let options = SaveOptions {
        card: ModelCard {
            name: "remote-test".to_owned(),
            version: "1.0".to_owned(),
            ..ModelCard::default()
        },
        compression: Compression::ZstdL3,
    };
    apr::save_tensors_to_bytes(&model, ModelType::NeuralSequential, &options).unwrap()
}

/// Uploads `names` of the scratch directory to bucket `bucket` of the server at `endpoint`
/// (boto3, moto's own dependency).
fn upload(ws: &Scratch, endpoint: &str, bucket: &str, names: &[&str]) {
    let mut args = vec![
        "-c".to_owned(),
        "import boto3, sys\n\
         s3 = boto3.client('s3', endpoint_url=sys.argv[1], aws_access_key_id='test',\n\
                           aws_secret_access_key='test', region_name='us-east-1')\n\
         s3.create_bucket(Bucket=sys.argv[2])\n\
         for name in sys.argv[3:]:\n\
         \x20   s3.put_object(Bucket=sys.argv[2], Key=name, Body=open(name, 'rb').read())\n"
            .to_owned(),
        endpoint.to_owned(),
        bucket.to_owned(),
    ];
    args.extend(names.iter().map(|name| (*name).to_owned()));
    python(ws.dir(), args);
}

/// Runs `binary` with `args` on `s3://BUCKET/NAME` and on the local `NAME`: both succeed and
/// print the same, the URL standing for the name.
fn same_as_local(
    ws: &Scratch,
    binary: &str,
    bucket: &str,
    env: &[(&str, &str)],
    cases: &[(&str, &str)],
) {
    for (name, args) in cases {
        let url = format!("s3://{bucket}/{name}");
        let remote = ws.run_env(binary, args.replace("{}", &url), env);
        assert!(remote.status.success(), "{args} {url}: {}", stderr(&remote));
        let local = ws.ok(binary, args.replace("{}", name));
        let remote = String::from_utf8(remote.stdout).unwrap();
        assert_eq!(remote.replace(&url, name), local, "{args} {name}");
    }
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON with moto[server] (run by .ci/run)"]
fn inspect_and_info_of_s3_urls_print_what_the_local_files_print() {
    let moto = test_support::MotoServer::start();
    let ws = Scratch::new();
    ws.write("model.apr", model_bytes());
    ws.wrote(APR, "convert model.apr trueno.apr --trueno-native");
    ws.keygen(APR, "alice");
    ws.write("signed.apr", model_bytes());
    ws.ok(APR, format!("sign signed.apr {}", key_of("alice")));
    ws.write("pw", b"s3cret\n");
    ws.wrote(
        APR,
        format!("encrypt model.apr -o sealed.apr --password-file pw {CHEAP_KDF}"),
    );
    ws.write(
        "serde.apr",
        apr::save_to_bytes(
            &vec![1.5f32, -2.0],
            ModelType::LinearRegression,
            &SaveOptions::default(),
        )
        .unwrap(),
    );
    let mut csv = String::from("id,name,score\n");
    for i in 0..300 {
        csv.push_str(&format!("{i},name {i},{}\n", f64::from(i) * 0.5));
    }
    ws.write("d.csv", &csv);
    ws.write("n.csv", "x,y\n1,2.5\n3,4.5\n5,6.5\n");
    ws.wrote(ALIMENTAR, "convert d.csv d.ald --streaming --chunk-rows 50");
    ws.wrote(ALIMENTAR, "convert d.csv whole.ald");
    ws.wrote(ALIMENTAR, "convert n.csv zero.ald --trueno-native");
    upload(
        &ws,
        &moto.endpoint(),
        "models",
        &[
            "model.apr",
            "trueno.apr",
            "signed.apr",
            "sealed.apr",
            "serde.apr",
        ],
    );
    upload(
        &ws,
        &moto.endpoint(),
        "datasets",
        &["d.ald", "whole.ald", "zero.ald"],
    );
    let endpoint = moto.endpoint();
    let env = [
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
    ];
    let mut cases = Vec::new();
    for name in [
        "model.apr",
        "trueno.apr",
        "signed.apr",
        "sealed.apr",
        "serde.apr",
    ] {
        cases.extend([
            (name, "inspect {}"),
            (name, "--json inspect {}"),
            (name, "inspect --verify {}"),
            (name, "--json inspect --verify {}"),
        ]);
    }
    cases.extend([
        ("model.apr", "inspect --quantization {}"),
        ("trueno.apr", "--json inspect --quantization {}"),
        ("signed.apr", "inspect {} --trusted-keys trusted-alice"),
        (
            "signed.apr",
            "--json inspect {} --trusted-keys trusted-alice",
        ),
        ("sealed.apr", "inspect {} --password-file pw"),
    ]);
    same_as_local(&ws, APR, "models", &env, &cases);
    let mut cases = Vec::new();
    for name in ["d.ald", "whole.ald", "zero.ald"] {
        cases.extend([
            (name, "info {}"),
            (name, "--json info {}"),
            (name, "info --verify {}"),
        ]);
    }
    same_as_local(&ws, ALIMENTAR, "datasets", &env, &cases);

    // Refusals name their signal and the location: a missing object (Io), an untrusted signer.
    let missing = ws.run_env(APR, "inspect s3://models/missing.apr", &env);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        stderr(&missing).starts_with("apr: Io: s3://models/missing.apr"),
        "{}",
        stderr(&missing)
    );
    ws.keygen(APR, "mallory");
    let untrusted = ws.run_env(
        APR,
        "inspect s3://models/signed.apr --trusted-keys trusted-mallory",
        &env,
    );
    assert_eq!(untrusted.status.code(), Some(1));
    assert!(
        stderr(&untrusted).contains("SignatureInvalid"),
        "{}",
        stderr(&untrusted)
    );
}
