//! Interop with pyfolds 1.0.2 through the interpreter in `$INTEROP_PYTHON` (CI points it at the
//! project venv). The Python side is tests/python/fold/pyfolds_tool.py, which stubs torch.

use std::path::{Path, PathBuf};
use std::process::Command;

use fold::json::{self, Map, Value};
use fold::{Compression, Ecc, FoldReader, WriteOptions};

fn python() -> String {
    std::env::var("INTEROP_PYTHON")
        .expect("INTEROP_PYTHON must name a Python with pyfolds installed")
}

fn tool() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/python/fold/pyfolds_tool.py")
}

fn run(args: &[&str]) -> String {
    let out = Command::new(python())
        .arg(tool())
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "pyfolds_tool {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

struct Case {
    compress: Compression,
    ecc: Ecc,
    chunks: Vec<(String, String, Vec<u8>)>,
    metadata: Map,
}

fn obj(text: &str) -> Map {
    match json::parse(text).unwrap() {
        Value::Object(m) => m,
        _ => unreachable!(),
    }
}

fn cases() -> Vec<Case> {
    let rnd: Vec<u8> = (0..200_000_u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13).to_le_bytes()[0])
        .collect();
    let text = "ação 🧠 ".repeat(500).into_bytes();
    let md = obj(
        r#"{"model_type":"Tiny","tags":{"é":"ü","😀":"x"},"reproducibility":{"seed":1},"protection":"med","f":[0.1,1e-07,1e+16,-0.0,123456789.125],"n":123456789012345678901234567890,"nested":{"b":null,"a":true}}"#,
    );
    let mut v = Vec::new();
    for compress in [Compression::None, Compression::Zstd] {
        v.push(Case {
            compress,
            ecc: Ecc::None,
            chunks: vec![
                ("torch_state".into(), "TSAV".into(), rnd.clone()),
                ("llm_manifest".into(), "JSON".into(), text.clone()),
                ("empty".into(), "NPZ0".into(), Vec::new()),
            ],
            metadata: md.clone(),
        });
        // ECC on single-codeword chunks: byte-identical to pyfolds for every level.
        for ecc in [Ecc::Rs(16), Ecc::Rs(32), Ecc::Rs(64)] {
            let cap = 255
                - usize::from(match ecc {
                    Ecc::Rs(n) => n,
                    Ecc::None => 0,
                });
            v.push(Case {
                compress,
                ecc,
                chunks: vec![
                    ("small".into(), "JSON".into(), b"{\"a\":1}".to_vec()),
                    ("fill".into(), "TSAV".into(), rnd[..cap - 40].to_vec()),
                ],
                metadata: md.clone(),
            });
        }
    }
    v
}

fn write_spec(dir: &Path, i: usize, c: &Case, extra: &str) -> PathBuf {
    let chunks: Vec<Value> = c
        .chunks
        .iter()
        .map(|(n, t, p)| {
            Value::Object(vec![
                ("name".into(), Value::String(n.clone())),
                ("ctype".into(), Value::String(t.clone())),
                ("payload_hex".into(), Value::String(hex::encode(p))),
            ])
        })
        .collect();
    let mut spec = vec![
        (
            "compress".into(),
            Value::String(
                if c.compress == Compression::Zstd {
                    "zstd"
                } else {
                    "none"
                }
                .into(),
            ),
        ),
        ("ecc".into(), Value::String(c.ecc.to_string())),
        ("created_at".into(), Value::Float(1_700_000_123.456_789)),
        ("metadata".into(), Value::Object(c.metadata.clone())),
        ("chunks".into(), Value::Array(chunks)),
    ];
    if !extra.is_empty() {
        spec.push(("sign".into(), json::parse(extra).unwrap()));
    }
    let p = dir.join(format!("spec{i}.json"));
    std::fs::write(&p, Value::Object(spec).to_python_json(false, false)).unwrap();
    p
}

fn rust_write(c: &Case) -> Vec<u8> {
    super::build_owned(
        WriteOptions::new(c.compress, c.ecc),
        &c.chunks,
        c.metadata.clone(),
        1_700_000_123.456_789,
    )
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn pyfolds_files_read_in_rust_and_rust_files_byte_identical_and_read_in_pyfolds() {
    let dir = tempfile::tempdir().unwrap();
    for (i, c) in cases().iter().enumerate() {
        let spec = write_spec(dir.path(), i, c, "");
        let py_path = dir.path().join(format!("py{i}.fold"));
        run(&["write", spec.to_str().unwrap(), py_path.to_str().unwrap()]);
        let py = std::fs::read(&py_path).unwrap();
        // pyfolds -> Rust: every chunk, every rule.
        let r = FoldReader::open(&py[..]).unwrap();
        assert!(r.verify_all(&|_| {}).is_ok(), "case {i}");
        for (n, _, p) in &c.chunks {
            assert_eq!(&r.read_chunk(n).unwrap(), p, "case {i} chunk {n}");
        }
        // Rust -> bytes: identical to pyfolds'.
        let ours = rust_write(c);
        assert!(
            ours == py,
            "case {i} ({:?}, {}): bytes differ from pyfolds'",
            c.compress,
            c.ecc
        );
        // Rust -> pyfolds: reads and verifies (manifest warning is a failure there).
        let rs_path = dir.path().join(format!("rs{i}.fold"));
        std::fs::write(&rs_path, &ours).unwrap();
        let out = run(&["read", rs_path.to_str().unwrap()]);
        let v = json::parse(out.trim()).unwrap();
        for (n, _, p) in &c.chunks {
            let want = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(p));
            assert_eq!(
                v.get("chunks").unwrap().get(n).unwrap().as_str(),
                Some(want.as_str())
            );
        }
    }
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn signatures_cross_verify_between_pyfolds_and_rust() {
    let dir = tempfile::tempdir().unwrap();
    run(&["keygen", dir.path().to_str().unwrap()]);
    let private = std::fs::read_to_string(dir.path().join("private.pem")).unwrap();
    let public_path = dir.path().join("public.pem");
    let public = std::fs::read_to_string(&public_path).unwrap();
    let c = &cases()[1];
    let sign = Value::Object(vec![
        ("private_key_pem".into(), Value::String(private.clone())),
        ("key_id".into(), Value::String("ci".into())),
    ])
    .to_python_json(false, false);
    let spec = write_spec(dir.path(), 0, c, &sign);
    let py_path = dir.path().join("signed_py.fold");
    run(&["write", spec.to_str().unwrap(), py_path.to_str().unwrap()]);
    let py = std::fs::read(&py_path).unwrap();
    FoldReader::open(&py[..])
        .unwrap()
        .verify_signature(&public)
        .unwrap();
    // Rust signs the same metadata: the signature is deterministic, so the file is identical.
    let mut md = c.metadata.clone();
    fold::signature::sign(&mut md, &private, "ci").unwrap();
    let ours = rust_write(&Case {
        metadata: md,
        chunks: c.chunks.clone(),
        ..*c
    });
    assert!(ours == py, "signed file differs from pyfolds'");
    let rs_path = dir.path().join("signed_rs.fold");
    std::fs::write(&rs_path, &ours).unwrap();
    assert_eq!(
        run(&[
            "verify-sig",
            rs_path.to_str().unwrap(),
            public_path.to_str().unwrap()
        ])
        .trim(),
        "ok"
    );
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn rs_codec_agrees_with_reedsolo_on_encode_and_on_correction() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (nsym, len, corrupt)) in [
        (16_usize, 100_usize, vec![(0, 1), (50, 255), (110, 7)]),
        (32, 223, vec![(3, 9); 1]),
        (8, 30, vec![(1, 1), (2, 2), (3, 3), (4, 4)]),
    ]
    .into_iter()
    .enumerate()
    {
        let data: Vec<u8> = (0..len).map(|j| (j * 31 + i).to_le_bytes()[0]).collect();
        let spec = Value::Object(vec![
            ("nsym".into(), Value::from_u64(nsym as u64)),
            ("data_hex".into(), Value::String(hex::encode(&data))),
            (
                "corrupt".into(),
                Value::Array(
                    corrupt
                        .iter()
                        .map(|(p, x)| Value::Array(vec![Value::from_u64(*p), Value::from_u64(*x)]))
                        .collect(),
                ),
            ),
        ]);
        let p = dir.path().join(format!("rs{i}.json"));
        std::fs::write(&p, spec.to_python_json(false, false)).unwrap();
        let v = json::parse(run(&["rs", p.to_str().unwrap()]).trim()).unwrap();
        let rs = fold::rs::ReedSolomon::new(nsym).unwrap();
        let parity = rs.encode_codeword(&data);
        let mut enc = data.clone();
        enc.extend_from_slice(&parity);
        assert_eq!(
            v.get("encoded_hex").unwrap().as_str().unwrap(),
            hex::encode(&enc)
        );
        for (pos, x) in &corrupt {
            enc[usize::try_from(*pos).unwrap()] ^= u8::try_from(*x).unwrap();
        }
        let (d, q) = enc.split_at_mut(len);
        let ours = rs.correct_codeword(d, q).ok().map(|_| hex::encode(&d));
        assert_eq!(
            ours.as_deref(),
            v.get("decoded_hex").unwrap().as_str(),
            "case {i}"
        );
    }
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn corrupted_pyfolds_file_with_ecc_is_repaired_by_rust() {
    let dir = tempfile::tempdir().unwrap();
    let c = &cases()[2]; // none + rs(16)
    let spec = write_spec(dir.path(), 0, c, "");
    let py_path = dir.path().join("py.fold");
    run(&["write", spec.to_str().unwrap(), py_path.to_str().unwrap()]);
    let clean = std::fs::read(&py_path).unwrap();
    let mut bad = clean.clone();
    let r = FoldReader::open(&clean[..]).unwrap();
    for e in &r.index().chunks {
        let body = usize::try_from(e.offset).unwrap() + 32;
        for k in 0..8 {
            bad[body + k * 2] ^= 0xC3;
        }
    }
    let r = FoldReader::open(&bad[..]).unwrap();
    let mut repaired = Vec::new();
    assert_eq!(r.repair_into(&mut repaired).unwrap(), 16);
    assert_eq!(repaired, clean);
    let out_path = dir.path().join("repaired.fold");
    std::fs::write(&out_path, &repaired).unwrap();
    run(&["read", out_path.to_str().unwrap()]);
}
