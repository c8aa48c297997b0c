//! Leak tracing end to end (000 §9.3.5-9.3.6, 003 §8.3): `watermark`, `license --watermarked`,
//! `piracy detect|entropy|extract|prove|verify|scan|secret`, through the binaries, on copies
//! leaked the ways users leak them (CSV and Parquet exports, row samples, column subsets,
//! SafeTensors exports, re-licensed and encrypted packages).

use apr::{ModelType, SaveOptions, Tensor, TensorModel};
use serde_json::Value;

use crate::support::{ALIMENTAR, APR, Scratch};

/// A table a seller might sell: an id, two continuous columns and a small-integer column.
fn sales_csv(rows: usize) -> String {
    let mut text = String::from("id,price,qty,score\n");
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut uniform = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    for i in 0..rows {
        let (u1, u2) = (uniform().max(1e-12), uniform());
        let normal = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
        let qty = 1.0 + (uniform() * 9.0).floor();
        text.push_str(&format!(
            "{i},{:.6},{qty},{:.9}\n",
            50.0 + 10.0 * normal,
            uniform()
        ));
    }
    text
}

/// A scratch directory with a seller key, another seller's key, and `data.ald` (20,000 rows).
fn seller() -> Scratch {
    let scratch = Scratch::new();
    scratch.write("data.csv", sales_csv(20_000));
    scratch.wrote(ALIMENTAR, "convert data.csv data.ald");
    scratch.keygen(ALIMENTAR, "seller");
    scratch.keygen(ALIMENTAR, "other");
    scratch.write(
        "buyers.txt",
        "# our buyers\nbob@example.com\nalice@example.com\n",
    );
    scratch
}

const SELLER: &str = "--seller-key seller.key --password-file seller.pw";
const OTHER: &str = "--seller-key other.key --password-file other.pw";

fn extract(scratch: &Scratch, binary: &str, file: &str, key: &str) -> Value {
    scratch.json(
        binary,
        format!("piracy extract {file} {key} --buyers buyers.txt --json"),
    )
}

/// `data.ald` marked for alice as `alice.ald`; returns alice's buyer hash.
fn mark_alice(scratch: &Scratch) -> String {
    let report = scratch.json(
        ALIMENTAR,
        format!("watermark data.ald --buyer alice@example.com {SELLER} -o alice.ald --json"),
    );
    assert_eq!(report["traceability"], "extractable");
    let marked: Vec<&str> = report["slices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["marked"].as_u64() > Some(0))
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    // Float columns by default; the integer columns (ids, quantities) are never changed unasked.
    assert_eq!(marked, ["price", "score"]);
    report["buyer_hash"].as_str().unwrap().to_owned()
}

#[test]
fn a_marked_dataset_names_its_buyer_after_csv_parquet_sampling_and_column_subsets() {
    let scratch = seller();
    let alice = mark_alice(&scratch);

    let found = extract(&scratch, ALIMENTAR, "alice.ald", SELLER);
    assert_eq!(found["found"], true);
    assert_eq!(found["method"], "extracted");
    assert_eq!(found["buyer_hash"], alice.as_str());
    assert_eq!(found["buyer"], "alice@example.com");

    // Exports as `alimentar convert` writes them.
    scratch.wrote(ALIMENTAR, "convert alice.ald leak.csv");
    scratch.wrote(ALIMENTAR, "convert alice.ald leak.parquet");
    scratch.wrote(ALIMENTAR, "convert leak.parquet back.ald");
    for leak in ["leak.csv", "leak.parquet", "back.ald"] {
        assert_eq!(
            extract(&scratch, ALIMENTAR, leak, SELLER)["buyer_hash"],
            alice.as_str(),
            "{leak}"
        );
    }

    // Half of the rows, in another order, and only the `score` column with the id.
    let csv = String::from_utf8(scratch.read("leak.csv")).unwrap();
    let mut lines = csv.lines();
    let header = lines.next().unwrap();
    let mut half: Vec<&str> = lines.step_by(2).collect();
    half.reverse();
    scratch.write("half.csv", format!("{header}\n{}\n", half.join("\n")));
    let subset: Vec<String> = half
        .iter()
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            format!("{},{}", fields[0], fields[3])
        })
        .collect();
    scratch.write("subset.csv", format!("id,score\n{}\n", subset.join("\n")));
    for leak in ["half.csv", "subset.csv"] {
        assert_eq!(
            extract(&scratch, ALIMENTAR, leak, SELLER)["buyer_hash"],
            alice.as_str(),
            "{leak}"
        );
    }

    // Nobody in the clean table; nobody under another seller's key.
    assert_eq!(
        extract(&scratch, ALIMENTAR, "data.ald", SELLER)["found"],
        false
    );
    assert_eq!(
        extract(&scratch, ALIMENTAR, "alice.ald", OTHER)["found"],
        false
    );
}

#[test]
fn marking_changes_only_the_chosen_columns_and_keeps_their_statistics() {
    let scratch = seller();
    scratch.wrote(
        ALIMENTAR,
        format!(
            "watermark data.ald --buyer alice@example.com {SELLER} --columns score -o only.ald"
        ),
    );
    scratch.wrote(ALIMENTAR, "convert only.ald only.csv");
    let column = |csv: &str, index: usize| -> Vec<f64> {
        csv.lines()
            .skip(1)
            .map(|line| line.split(',').nth(index).unwrap().parse().unwrap())
            .collect()
    };
    let original = sales_csv(20_000);
    let marked = String::from_utf8(scratch.read("only.csv")).unwrap();
    for index in [0, 1, 2] {
        assert_eq!(
            column(&original, index),
            column(&marked, index),
            "column {index}"
        );
    }
    let (before, after) = (column(&original, 3), column(&marked, 3));
    assert_ne!(before, after);
    let stats = |v: &[f64]| {
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64).sqrt();
        (mean, sd)
    };
    let ((m0, s0), (m1, s1)) = (stats(&before), stats(&after));
    assert!(((m1 - m0) / m0).abs() < 1e-4 && ((s1 - s0) / s0).abs() < 1e-4);

    scratch.refused(
        ALIMENTAR,
        format!("watermark data.ald --buyer x {SELLER} --columns nope -o x.ald"),
        "Usage: there is no column \"nope\"",
    );
    scratch.refused(
        ALIMENTAR,
        format!("watermark data.ald --buyer x {SELLER} --strength 0.5 -o x.ald"),
        "Usage: INVALID_WATERMARK",
    );
    // Too few values to carry the mark: refused, nothing written.
    scratch.write("tiny.csv", sales_csv(12));
    scratch.run(
        ALIMENTAR,
        format!("watermark tiny.csv --buyer x {SELLER} -o tiny.ald"),
    );
    assert!(!scratch.exists("tiny.ald") && !scratch.exists("x.ald"));
}

#[test]
fn license_watermarked_is_checked_against_the_content_and_composes_with_encryption() {
    let scratch = seller();
    mark_alice(&scratch);
    let license = |input: &str, output: &str, licensee: &str| {
        format!(
            "license {input} -o {output} --licensee {licensee} --expires 2099-01-01 --key \
             seller.key --password-file seller.pw --watermarked"
        )
    };
    // The unmarked table, and alice's copy licensed to bob: refused, nothing written.
    scratch.refused(
        ALIMENTAR,
        license("data.ald", "lic.ald", "alice@example.com"),
        "WatermarkNotFound",
    );
    scratch.refused(
        ALIMENTAR,
        license("alice.ald", "lic.ald", "bob@example.com"),
        "WatermarkNotFound",
    );
    assert!(!scratch.exists("lic.ald"));
    scratch.wrote(
        ALIMENTAR,
        license("alice.ald", "lic.ald", "alice@example.com"),
    );
    let found = extract(&scratch, ALIMENTAR, "lic.ald", SELLER);
    assert_eq!(found["license"]["watermarked_flag"], true);
    assert_eq!(found["license"]["licensee"], "alice@example.com");
    assert_eq!(found["license"]["claim_holds"], true);

    // Then encrypted for the buyer and signed: the buyer decrypts, and the leaked plaintext still
    // names them.
    scratch.keygen(ALIMENTAR, "alice");
    scratch.wrote(
        ALIMENTAR,
        "encrypt lic.ald -o sold.ald --recipient alice.key.pub",
    );
    scratch.wrote(
        ALIMENTAR,
        "sign sold.ald --key seller.key --password-file seller.pw",
    );
    scratch.refused(
        ALIMENTAR,
        format!("piracy extract sold.ald {SELLER}"),
        "DecryptionFailed",
    );
    scratch.wrote(
        ALIMENTAR,
        "decrypt sold.ald -o leaked.ald --key alice.key --password-file alice.pw",
    );
    scratch.wrote(ALIMENTAR, "convert leaked.ald leaked.csv");
    assert_eq!(
        extract(&scratch, ALIMENTAR, "leaked.csv", SELLER)["buyer"],
        "alice@example.com"
    );
}

#[test]
fn evidence_is_signed_checked_and_never_written_without_the_mark() {
    let scratch = seller();
    let alice = mark_alice(&scratch);
    scratch.wrote(ALIMENTAR, "convert alice.ald leak.csv");
    scratch.wrote(
        ALIMENTAR,
        format!("piracy prove leak.csv --buyer alice@example.com {SELLER} -o evidence.json"),
    );
    let document: Value = serde_json::from_slice(&scratch.read("evidence.json")).unwrap();
    let evidence = &document["evidence"];
    assert_eq!(evidence["buyer_hash"], alice.as_str());
    assert_eq!(evidence["dataset_hash"]["algorithm"], "BLAKE3");
    assert_eq!(
        evidence["dataset_hash"]["hex"],
        blake3::hash(&scratch.read("leak.csv")).to_hex().as_str()
    );
    let columns: Vec<&str> = evidence["column_evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["column_name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["id", "price", "qty", "score"]);

    let verified = scratch.json(
        ALIMENTAR,
        "piracy verify evidence.json --file leak.csv --trusted-keys trusted-seller --json",
    );
    assert_eq!(verified["buyer_hash"], alice.as_str());
    scratch.refused(
        ALIMENTAR,
        "piracy verify evidence.json --file data.csv",
        "ChecksumMismatch",
    );
    scratch.refused(
        ALIMENTAR,
        "piracy verify evidence.json --trusted-keys trusted-other",
        "SignatureInvalid",
    );
    // Any edit of the evidence breaks its signature.
    let text = String::from_utf8(scratch.read("evidence.json")).unwrap();
    scratch.write(
        "edited.json",
        text.replace("alice@example.com", "bob@example.com"),
    );
    scratch.refused(ALIMENTAR, "piracy verify edited.json", "SignatureInvalid");

    // By hash, as `extract` prints it; an existing output needs --force.
    scratch.refused(
        ALIMENTAR,
        format!("piracy prove leak.csv --buyer-hash {alice} {SELLER} -o evidence.json"),
        "cannot write evidence.json: already exists",
    );
    scratch.wrote(
        ALIMENTAR,
        format!("piracy prove leak.csv --buyer-hash {alice} {SELLER} -o evidence.json --force"),
    );
    // No mark, no evidence.
    scratch.refused(
        ALIMENTAR,
        format!("piracy prove data.csv --buyer alice@example.com {SELLER} -o none.json"),
        "WatermarkNotFound",
    );
    scratch.refused(
        ALIMENTAR,
        format!("piracy prove leak.csv --buyer bob@example.com {SELLER} -o none.json"),
        "WatermarkNotFound",
    );
    assert!(!scratch.exists("none.json"));
}

#[test]
fn scan_reports_every_file_and_an_examiner_traces_with_the_secret_alone() {
    let scratch = seller();
    let alice = mark_alice(&scratch);
    std::fs::create_dir_all(scratch.path("suspects/deeper")).unwrap();
    scratch.wrote(ALIMENTAR, "convert alice.ald suspects/a.parquet");
    scratch.wrote(ALIMENTAR, "convert data.ald suspects/clean.csv");
    scratch.wrote(ALIMENTAR, "convert alice.ald suspects/deeper/b.csv");
    scratch.write("suspects/broken.ald", b"ALDF not really");
    scratch.write("suspects/notes.txt", "not a table");
    let scan = scratch.json(
        ALIMENTAR,
        format!("piracy scan suspects {SELLER} --buyers buyers.txt --jobs 2 --json"),
    );
    assert_eq!(scan["scanned"], 4);
    assert_eq!(scan["found"], 2);
    assert_eq!(scan["failed"], 1);
    let by_name = |suffix: &str| -> &Value {
        scan["files"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["path"].as_str().unwrap().ends_with(suffix))
            .unwrap()
    };
    assert_eq!(by_name("a.parquet")["buyer"], "alice@example.com");
    assert_eq!(by_name("deeper/b.csv")["buyer_hash"], alice.as_str());
    assert_eq!(by_name("clean.csv")["found"], false);
    assert!(by_name("broken.ald")["error"].is_string());

    scratch.wrote(
        ALIMENTAR,
        "piracy secret --seller-key seller.key --password-file seller.pw -o examiner.hex",
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(scratch.path("examiner.hex"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let found = extract(
        &scratch,
        ALIMENTAR,
        "suspects/a.parquet",
        "--watermark-secret examiner.hex",
    );
    assert_eq!(found["buyer_hash"], alice.as_str());
}

#[test]
fn keyless_detection_flags_a_naive_lsb_mark_and_writes_its_report() {
    let scratch = seller();
    // The last mantissa bit of every value forced to 1: the naive LSB mark of 000 §9.3.1.
    let csv = sales_csv(20_000);
    let mut naive = String::from("price\n");
    for line in csv.lines().skip(1) {
        let price: f64 = line.split(',').nth(1).unwrap().parse().unwrap();
        naive.push_str(&format!("{}\n", f64::from_bits(price.to_bits() | 1)));
    }
    scratch.write("naive.csv", naive);
    let detected = scratch.json(ALIMENTAR, "piracy detect naive.csv --json");
    assert_eq!(detected["likely_watermarked"], true);
    assert_eq!(detected["suspicious"][0], "price");
    scratch.ok(ALIMENTAR, "piracy entropy naive.csv --output report.json");
    let report: Value = serde_json::from_slice(&scratch.read("report.json")).unwrap();
    assert!(report["slices"][0]["lsb_entropy"].as_f64().unwrap() < 0.01);
}

/// A small MLP's weights (two layers, 128 → 256 → 32) as an `.apr`, in the scratch directory.
fn mlp(scratch: &Scratch) {
    let mut state = 7u64;
    let mut values = |n: usize| -> Vec<f32> {
        (0..n)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1
            })
            .collect()
    };
    let model = TensorModel::new(vec![
        Tensor::from_f32("fc1.weight", vec![256, 128], &values(256 * 128)).unwrap(),
        Tensor::from_f32("fc1.bias", vec![256], &values(256)).unwrap(),
        Tensor::from_f32("fc2.weight", vec![32, 256], &values(32 * 256)).unwrap(),
    ])
    .unwrap();
    apr::fs::save_tensors(
        scratch.path("mlp.apr").as_str(),
        &model,
        ModelType::NeuralSequential,
        &SaveOptions::default(),
    )
    .unwrap();
}

/// `‖y' − y‖ / ‖y‖` of [`mlp`]'s outputs `fc2 · relu(fc1 · x + b1)` over 64 fixed inputs.
fn output_change(original: &TensorModel, marked: &TensorModel) -> f64 {
    let outputs = |model: &TensorModel| -> Vec<f64> {
        let weights = |name: &str| -> Vec<f64> {
            let tensor = model.tensors.iter().find(|t| t.name == name).unwrap();
            tensor
                .to_f32()
                .unwrap()
                .into_iter()
                .map(f64::from)
                .collect()
        };
        let (w1, b1, w2) = (
            weights("fc1.weight"),
            weights("fc1.bias"),
            weights("fc2.weight"),
        );
        let mut out = Vec::new();
        for sample in 0..64_u32 {
            let x: Vec<f64> = (0..128_u32)
                .map(|i| f64::from((sample * 131 + i * 17) % 97) / 48.0 - 1.0)
                .collect();
            let hidden: Vec<f64> = (0..256)
                .map(|j| {
                    let z: f64 = (0..128).map(|i| w1[j * 128 + i] * x[i]).sum::<f64>() + b1[j];
                    z.max(0.0)
                })
                .collect();
            out.extend((0..32).map(|k| (0..256).map(|j| w2[k * 256 + j] * hidden[j]).sum::<f64>()));
        }
        out
    };
    let (y, y2) = (outputs(original), outputs(marked));
    let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|a| a * a).sum::<f64>().sqrt();
    norm(&mut y.iter().zip(&y2).map(|(a, b)| b - a)) / norm(&mut y.iter().copied())
}

#[test]
fn a_marked_model_names_its_buyer_in_apr_safetensors_and_quantized_copies() {
    let scratch = seller();
    mlp(&scratch);
    let report = scratch.json(
        APR,
        format!("watermark mlp.apr --buyer alice@example.com {SELLER} -o alice.apr --json"),
    );
    let alice = report["buyer_hash"].as_str().unwrap().to_owned();
    assert!(
        (report["strength"].as_f64().unwrap() - 1e-4).abs() < 1e-9,
        "models default to 1e-4"
    );
    assert_eq!(
        extract(&scratch, APR, "alice.apr", SELLER)["buyer"],
        "alice@example.com"
    );
    let original = apr::fs::load_tensors(scratch.path("mlp.apr"), ModelType::NeuralSequential);
    let marked = apr::fs::load_tensors(scratch.path("alice.apr"), ModelType::NeuralSequential);
    let (original, marked) = (original.unwrap(), marked.unwrap());
    assert_eq!(marked.tensors.len(), 3, "type and tensors kept");
    // The MLP's outputs on 64 inputs move by under 1e-4 (issue 16's limit) at the default strength.
    let change = output_change(&original, &marked);
    assert!(change < 1e-4, "output change {change:e}");

    scratch.wrote(APR, "export alice.apr --format safetensors -o exported");
    assert_eq!(
        extract(&scratch, APR, "exported/weights.safetensors", SELLER)["buyer_hash"],
        alice.as_str()
    );
    assert_eq!(extract(&scratch, APR, "mlp.apr", SELLER)["found"], false);
    assert_eq!(extract(&scratch, APR, "alice.apr", OTHER)["found"], false);

    // A quantized model carries its own mark in its blocks.
    scratch.wrote(APR, "quantize mlp.apr --type q8_0 -o q8.apr");
    let q8 = scratch.json(
        APR,
        format!("watermark q8.apr --buyer bob@example.com {SELLER} -o bob-q8.apr --json"),
    );
    // Sparse by default: each marked quant moves by a whole step.
    assert!(q8["redundancy"].as_f64().unwrap() < 1.0, "{q8}");
    assert_eq!(
        extract(&scratch, APR, "bob-q8.apr", SELLER)["buyer"],
        "bob@example.com"
    );

    scratch.wrote(
        APR,
        "license alice.apr -o lic.apr --licensee alice@example.com --expires 2099-01-01 --key \
         seller.key --password-file seller.pw --watermarked",
    );
    scratch.refused(
        APR,
        "license mlp.apr -o bad.apr --licensee alice@example.com --expires 2099-01-01 --key \
         seller.key --password-file seller.pw --watermarked",
        "WatermarkNotFound",
    );
    std::fs::create_dir_all(scratch.path("models")).unwrap();
    for file in ["alice.apr", "bob-q8.apr", "mlp.apr", "lic.apr"] {
        std::fs::copy(scratch.path(file), scratch.path(&format!("models/{file}"))).unwrap();
    }
    let scan = scratch.json(
        APR,
        format!("piracy scan models {SELLER} --buyers buyers.txt --json"),
    );
    assert_eq!(
        (scan["scanned"].as_u64(), scan["found"].as_u64()),
        (Some(4), Some(3))
    );
    scratch.wrote(
        APR,
        format!("piracy prove lic.apr --buyer alice@example.com {SELLER} -o evidence.json"),
    );
    scratch.ok(
        APR,
        "piracy verify evidence.json --file lic.apr --trusted-keys trusted-seller",
    );
}

/// Independent readers, written from docs/watermark.md alone, check what the CLI wrote: the numpy
/// extractor finds the buyer in the marked `.ald` with the secret `piracy secret` exported, and
/// the Python verifier (`cryptography`, `blake3`) accepts the evidence and refuses it edited.
#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn independent_readers_extract_the_buyer_and_verify_the_evidence() {
    use std::ffi::OsStr;
    let scratch = seller();
    let alice = mark_alice(&scratch);
    scratch.wrote(
        ALIMENTAR,
        "piracy secret --seller-key seller.key --password-file seller.pw -o examiner.hex",
    );
    let secret = String::from_utf8(scratch.read("examiner.hex")).unwrap();
    let marked = scratch.path("alice.ald");
    let found = test_support::python_ok(
        "watermark/numpy_extract.py",
        &[OsStr::new(&marked), OsStr::new(secret.trim())],
    );
    let found = String::from_utf8(found).unwrap();
    assert!(found.contains(&format!("buyer {alice}")), "{found}");

    scratch.wrote(ALIMENTAR, "convert alice.ald leak.csv");
    scratch.wrote(
        ALIMENTAR,
        format!("piracy prove leak.csv --buyer alice@example.com {SELLER} -o evidence.json"),
    );
    let (evidence, leak) = (scratch.path("evidence.json"), scratch.path("leak.csv"));
    let public = scratch.path("seller.key.pub");
    let verified = test_support::python_ok(
        "watermark/verify_evidence.py",
        &[evidence.as_ref(), leak.as_ref(), public.as_ref()],
    );
    assert_eq!(
        String::from_utf8(verified).unwrap().trim(),
        format!("ok {alice}")
    );
    let text = String::from_utf8(scratch.read("evidence.json")).unwrap();
    let edited = scratch.write(
        "edited.json",
        text.replace("\"votes\": 20000", "\"votes\": 20001"),
    );
    assert_ne!(
        text,
        String::from_utf8(scratch.read("edited.json")).unwrap()
    );
    let refused = test_support::python(
        "watermark/verify_evidence.py",
        &[edited.as_ref(), leak.as_ref()],
    );
    assert!(!refused.status.success());
}
