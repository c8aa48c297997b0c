//! End-to-end tests of the `apr` model commands (`import`, `quantize`, `export`,
//! `inspect --quantization`): exit status, messages naming the Andon signal, JSON output, and
//! tensor names, shapes and order kept from import through quantize and export.

use std::path::Path;
use std::process::{Command, Output};

use apr::{DType, ModelCard, ModelType, QuantType, SaveOptions, Tensor, TensorModel};

/// Argon2id parameters that make a test's keys and passwords cheap to derive.
const CHEAP_ARGON2: [&str; 4] = ["--argon2-m-kib", "1024", "--argon2-t", "1"];

fn apr_bin() -> &'static str {
    env!("CARGO_BIN_EXE_apr")
}

fn run(args: &[&str]) -> Output {
    Command::new(apr_bin())
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("the binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn assert_ok(output: &Output) {
    assert!(output.status.success(), "{}", stderr(output));
}

/// Exit status 1 (2 for a usage error, docs/cli.md) and the message (after `apr: `) starts with
/// `signal`.
fn assert_fails_with(output: &Output, signal: &str) {
    let usage = stderr(output).starts_with("apr: Usage") && signal == "Usage";
    let status = if usage { 2 } else { 1 };
    assert_eq!(output.status.code(), Some(status), "{}", stderr(output));
    assert!(
        stderr(output).starts_with(&format!("apr: {signal}")),
        "{}",
        stderr(output)
    );
}

struct Ws(tempfile::TempDir);

impl Ws {
    fn new() -> Self {
        Self(tempfile::tempdir().unwrap())
    }
    fn path(&self, name: &str) -> String {
        self.0.path().join(name).to_str().unwrap().to_owned()
    }
}

/// Tensors in a deliberately unsorted order, with a tensor that is not whole blocks.
fn model() -> TensorModel {
    let values = |n: usize, k: f32| (0..n).map(|i| ((i as f32) * k).sin()).collect::<Vec<f32>>();
    TensorModel::new(vec![
        Tensor::from_f32("token_embd.weight", vec![8, 64], &values(512, 0.3)).unwrap(),
        Tensor::from_f32("blk.1.ffn.weight", vec![16, 32], &values(512, 0.7)).unwrap(),
        Tensor::from_f32("blk.0.ffn.weight", vec![16, 32], &values(512, 1.1)).unwrap(),
        Tensor::from_f32("blk.0.norm", vec![5], &values(5, 0.9)).unwrap(),
        Tensor::from_f32("output.weight", vec![4, 32], &values(128, 0.2)).unwrap(),
    ])
    .unwrap()
}

fn names(model: &TensorModel) -> Vec<(String, Vec<u64>)> {
    model
        .tensors
        .iter()
        .map(|t| (t.name.clone(), t.shape.clone()))
        .collect()
}

/// A SafeTensors file of `model()` as another tool would write it.
fn safetensors_input(ws: &Ws) -> String {
    let exported = apr::safetensors::export(&model()).unwrap();
    let path = ws.path("model.safetensors");
    std::fs::write(&path, exported.weights).unwrap();
    path
}

/// `model()` imported by `apr import` from [`safetensors_input`] (with `options`), as
/// `model.apr`.
fn imported(ws: &Ws, options: &[&str]) -> String {
    let input = safetensors_input(ws);
    let imported = ws.path("model.apr");
    let args = ["import", &input, "-o", &imported];
    assert_ok(&run(&[&args[..], options].concat()));
    imported
}

#[test]
fn import_quantize_export_keep_names_shapes_and_order() {
    let ws = Ws::new();
    let imported = imported(&ws, &["--type", "neural-sequential"]);
    let model_back = apr::fs::load_tensors(&imported, ModelType::NeuralSequential).unwrap();
    // Imported without a card: created_at is the import time in RFC 3339, never empty.
    let file = apr::fs::open(&imported).unwrap();
    let created = &file.metadata().model_card.created_at;
    assert!(
        created.parse::<jiff::Timestamp>().is_ok() && created.ends_with('Z'),
        "{created:?}"
    );
    assert_eq!(model_back, model());

    for quant in ["q8_0", "q4_0", "q4_1", "q8_tensor"] {
        let out = ws.path(&format!("{quant}.apr"));
        let output = run(&["quantize", &imported, "--type", quant, "-o", &out]);
        assert_ok(&output);
        let quantized = apr::fs::load_tensors(&out, ModelType::NeuralSequential).unwrap();
        assert_eq!(names(&quantized), names(&model()), "{quant}");
        // The same bytes as the library's quantization of the same model.
        let expected = model()
            .quantize(QuantType::from_name(quant).unwrap())
            .unwrap();
        assert_eq!(quantized.tensors, expected.tensors, "{quant}");

        let gguf = ws.path(&format!("{quant}.gguf"));
        assert_ok(&run(&["export", &out, "--format", "gguf", "-o", &gguf]));
        assert_eq!(&std::fs::read(&gguf).unwrap()[..4], b"GGUF");

        let dir = ws.path(&format!("{quant}-st"));
        assert_ok(&run(&[
            "export",
            &out,
            "--format",
            "safetensors",
            "-o",
            &dir,
        ]));
        let back = ws.path(&format!("{quant}-back.apr"));
        let weights = format!("{dir}/weights.safetensors");
        assert_ok(&run(&["import", &weights, "-o", &back]));
        let reimported = apr::fs::load_tensors(&back, ModelType::NeuralCustom).unwrap();
        assert_eq!(
            reimported.tensors, quantized.tensors,
            "{quant}: export → import"
        );
    }
}

#[test]
fn mixed_precision_and_inspect_quantization() {
    let ws = Ws::new();
    let imported = imported(&ws, &[]);
    let out = ws.path("mixed.apr");
    let output = run(&[
        "quantize",
        &imported,
        "--type",
        "q4_0",
        "--embedding-type",
        "q8_0",
        "--output-type",
        "q8_tensor",
        "-o",
        &out,
    ]);
    assert_ok(&output);
    let model = apr::fs::load_tensors(&out, ModelType::NeuralCustom).unwrap();
    let dtype = |name: &str| model.tensor(name).unwrap().dtype;
    assert_eq!(
        dtype("token_embd.weight"),
        DType::Quantized(QuantType::Q8_0)
    );
    assert_eq!(dtype("blk.0.ffn.weight"), DType::Quantized(QuantType::Q4_0));
    assert_eq!(
        dtype("output.weight"),
        DType::Quantized(QuantType::Q8Tensor)
    );
    assert_eq!(dtype("blk.0.norm"), DType::F32);

    let output = run(&["inspect", &out, "--quantization"]);
    assert_ok(&output);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("Type: Q4_0, Block size: 32, Bits/weight: 4.5, Original: f32"),
        "{text}"
    );
    assert!(
        text.contains("blk.0.norm f32 [5] kept: a norm, which llama.cpp keeps in F32"),
        "{text}"
    );

    let output = run(&["inspect", &out, "--json"]);
    assert_ok(&output);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["flags"], serde_json::json!(["STREAMING", "QUANTIZED"]));
    assert_eq!(json["model"]["model_type"], "NEURAL_CUSTOM");
    assert_eq!(json["model"]["tensors"][0]["name"], "token_embd.weight");
    assert_eq!(json["model"]["quantization"]["quant_type"], 2);
}

#[test]
fn calibration_data_measures_layer_outputs() {
    let ws = Ws::new();
    let imported = imported(&ws, &[]);
    let csv = ws.path("data.csv");
    let mut text = (0..32)
        .map(|i| format!("f{i}"))
        .collect::<Vec<_>>()
        .join(",")
        + "\n";
    for row in 0..10 {
        let line: Vec<String> = (0..32)
            .map(|i| format!("{}", ((row * 32 + i) as f32 * 0.13).cos()))
            .collect();
        text += &(line.join(",") + "\n");
    }
    std::fs::write(&csv, text).unwrap();
    let out = ws.path("q.apr");
    let quantize = |force: &[&str]| {
        let args = [
            "quantize",
            &imported,
            "--type",
            "q4_1",
            "--calibration",
            &csv,
            "-o",
            &out,
        ];
        run(&[&args[..], force].concat())
    };
    assert_ok(&quantize(&[]));
    let file = apr::fs::open(&out).unwrap();
    let info = file.metadata().quantization.as_ref().unwrap();
    assert_eq!(info.calibration_samples, 10);
    let measured: Vec<&str> = info
        .tensors
        .iter()
        .filter(|t| t.output_error.is_some())
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(
        measured,
        ["blk.1.ffn.weight", "blk.0.ffn.weight", "output.weight"]
    );

    std::fs::write(&csv, "1,2\n3,x\n").unwrap();
    assert_fails_with(&quantize(&["--force"]), "Usage");
}

fn saved(ws: &Ws, name: &str, model: &TensorModel, model_type: ModelType) -> String {
    let path = ws.path(name);
    let options = SaveOptions {
        card: ModelCard::default(),
        compression: envelope_core::Compression::None,
    };
    apr::fs::save_tensors(&path, model, model_type, &options).unwrap();
    path
}

#[test]
fn every_signal_of_5_1_through_the_cli() {
    let ws = Ws::new();
    let path = saved(&ws, "m.apr", &model(), ModelType::Knn);
    let out = ws.path("out.apr");
    let bytes = std::fs::read(&path).unwrap();
    let variant = |name: &str, change: &dyn Fn(&mut Vec<u8>)| {
        let mut b = bytes.clone();
        change(&mut b);
        let p = ws.path(name);
        std::fs::write(&p, b).unwrap();
        p
    };

    let bad_magic = variant("magic.apr", &|b| b[0] = b'X');
    assert_fails_with(
        &run(&["quantize", &bad_magic, "--type", "q8_0", "-o", &out]),
        "InvalidFormat",
    );
    let flipped = variant("flip.apr", &|b| {
        let at = b.len() - 10;
        b[at] ^= 1;
    });
    assert_fails_with(
        &run(&["export", &flipped, "--format", "gguf", "-o", &out]),
        "ChecksumMismatch",
    );
    let metadata_flip = variant("meta.apr", &|b| b[40] ^= 1);
    assert_fails_with(&run(&["inspect", &metadata_flip]), "ChecksumMismatch");
    let version = variant("version.apr", &|b| b[4] = 9);
    assert_fails_with(&run(&["inspect", &version]), "UnsupportedVersion");
    // `quantize` of the model under one input check.
    let quantize_checked = |option: &str, value: &str| {
        run(&[
            "quantize", &path, "--type", "q8_0", option, value, "-o", &out,
        ])
    };
    assert_fails_with(
        &quantize_checked("--expect-type", "svm"),
        "ModelTypeMismatch",
    );
    // A real trusted key (made by `apr keygen`); the model is not signed.
    let pw = ws.path("pw");
    std::fs::write(&pw, "pw\n").unwrap();
    // A command with the password file and a cheap Argon2id.
    let with_password =
        |args: &[&str]| run(&[args, &["--password-file", &pw], &CHEAP_ARGON2].concat());
    let key = ws.path("me.key");
    assert_ok(&with_password(&["keygen", "-o", &key]));
    let trusted = ws.path("trusted");
    std::fs::create_dir_all(&trusted).unwrap();
    std::fs::copy(format!("{key}.pub"), format!("{trusted}/me.pub")).unwrap();
    assert_fails_with(
        &quantize_checked("--trusted-keys", &trusted),
        "SignatureInvalid",
    );
    let encrypted = ws.path("enc.apr");
    assert_ok(&with_password(&["encrypt", &path, "-o", &encrypted]));
    assert_fails_with(
        &run(&["quantize", &encrypted, "--type", "q8_0", "-o", &out]),
        "DecryptionFailed",
    );
    assert!(!Path::new(&out).exists(), "nothing is written on failure");

    // A licensed model whose license expired in 1970: LicenseExpired, checked after the signature.
    let seller = envelope_sign::Identity::from_seed([5; 32]);
    let mut license = envelope_license::LicenseBlock::new([2; 16], "buyer", 1_000, 2_000);
    license.flags = envelope_license::LicenseFlags::EXPIRATION_ENFORCED;
    let signer = seller.signing_key();
    let package = envelope_license::commercial::CommercialPackage {
        license,
        signer: &signer,
        encrypt_to: None,
        options: envelope_crypto::EncryptOptions::default(),
    };
    let parts = apr::tensor_parts(&model(), ModelType::Knn, &SaveOptions::default()).unwrap();
    let licensed = ws.path("licensed.apr");
    let bytes =
        envelope_license::commercial::package(&parts, &package, &mut envelope_crypto::OsRng)
            .unwrap();
    std::fs::write(&licensed, bytes).unwrap();
    assert_fails_with(
        &run(&[
            "export",
            &licensed,
            "--format",
            "gguf",
            "-o",
            &ws.path("l.gguf"),
        ]),
        "LicenseExpired",
    );
}

#[test]
fn every_signal_of_6_2_9_through_the_cli() {
    let ws = Ws::new();
    let path = saved(&ws, "m.apr", &model(), ModelType::NeuralSequential);
    let out = ws.path("out.apr");
    // Unknown type name / byte: UnsupportedQuantization.
    assert_fails_with(
        &run(&["quantize", &path, "--type", "q3_k", "-o", &out]),
        "UnsupportedQuantization",
    );
    // NaN weights: QuantizationCorrupt naming the tensor (the NaN policy).
    let mut values = vec![0.5f32; 64];
    values[3] = f32::NAN;
    let nan = TensorModel::new(vec![
        Tensor::from_f32("bad.weight", vec![2, 32], &values).unwrap(),
    ])
    .unwrap();
    let nan_path = saved(&ws, "nan.apr", &nan, ModelType::NeuralSequential);
    let output = run(&["quantize", &nan_path, "--type", "q8_0", "-o", &out]);
    assert_fails_with(&output, "QuantizationCorrupt");
    assert!(
        stderr(&output).contains("bad.weight"),
        "{}",
        stderr(&output)
    );
    // Block data that does not match the shape: QuantizationCorrupt.
    let quantized = model().quantize(QuantType::Q4_0).unwrap();
    let mut parts = apr::tensor_parts(
        &quantized,
        ModelType::NeuralSequential,
        &SaveOptions::default(),
    )
    .unwrap();
    let mut metadata = apr::ModelMetadata::decode(&parts.metadata).unwrap();
    metadata.tensors[1].shape = vec![32, 32];
    parts.metadata = metadata.encode().unwrap().into();
    let corrupt = ws.path("corrupt.apr");
    std::fs::write(&corrupt, parts.to_bytes().unwrap()).unwrap();
    let output = run(&["inspect", &corrupt, "--quantization"]);
    assert_fails_with(&output, "QuantizationCorrupt");
    assert!(
        stderr(&output).contains("blk.1.ffn.weight"),
        "{}",
        stderr(&output)
    );
    // A type GGUF cannot hold: ExportFailed (a Usage signal) naming the tensor.
    let bytes = TensorModel::new(vec![
        Tensor::new("mask", DType::U8, vec![4], vec![1; 4]).unwrap(),
    ])
    .unwrap();
    let mask = saved(&ws, "mask.apr", &bytes, ModelType::Custom);
    let output = run(&[
        "export",
        &mask,
        "--format",
        "gguf",
        "-o",
        &ws.path("x.gguf"),
    ]);
    assert_fails_with(&output, "Usage: ");
    assert!(
        stderr(&output).contains("ExportFailed: tensor \"mask\""),
        "{}",
        stderr(&output)
    );
    // Accuracy loss over the type's threshold (17.2% for Q4_0: an outlier flattens every block):
    // a warning in the metadata, the command succeeds.
    let spiky: Vec<f32> = (0..32).map(|i| if i == 0 { 100.0 } else { 5.0 }).collect();
    let spiky =
        TensorModel::new(vec![Tensor::from_f32("w", vec![1, 32], &spiky).unwrap()]).unwrap();
    let spiky = saved(&ws, "spiky.apr", &spiky, ModelType::Custom);
    let output = run(&[
        "quantize", &spiky, "--type", "q4_0", "-o", &out, "--force", "--quiet",
    ]);
    assert_ok(&output);
    // The summary counts it on stderr, even with --quiet; --verbose names it.
    assert_eq!(
        stderr(&output),
        format!(
            "warning: {out}: 1 of 1 tensors quantized (q4_0), none kept, 1 tensor over the \
             accuracy threshold (--verbose lists them)\n"
        )
    );
    let output = run(&[
        "quantize",
        &spiky,
        "--type",
        "q4_0",
        "-o",
        &out,
        "--force",
        "--verbose",
    ]);
    assert_ok(&output);
    assert!(
        stderr(&output).contains(
            "warning: tensor \"w\": relative error 26.82% exceeds 17.2%, the q4_0 threshold"
        ),
        "{}",
        stderr(&output)
    );
    let info = apr::fs::open(&out)
        .unwrap()
        .metadata()
        .quantization
        .clone()
        .unwrap();
    assert_eq!(info.warnings.len(), 1);
}

/// Deterministic N(0, 1) values (xorshift and Box–Muller).
#[allow(clippy::cast_possible_truncation, reason = "test data in f32")]
fn gaussian(seed: u64, count: usize) -> Vec<f32> {
    let mut state = seed;
    let mut uniform = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        ((state >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    };
    (0..count)
        .map(|_| {
            let (u, v) = (uniform(), uniform());
            ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
        })
        .collect()
}

/// A small random Llama-shaped model in Hugging Face's names: weights, norms and biases.
fn random_llama() -> TensorModel {
    let shapes: [(&str, Vec<u64>); 9] = [
        ("model.embed_tokens.weight", vec![128, 64]),
        ("model.layers.0.input_layernorm.weight", vec![64]),
        ("model.layers.0.self_attn.q_proj.weight", vec![64, 64]),
        ("model.layers.0.self_attn.q_proj.bias", vec![64]),
        ("model.layers.0.post_attention_layernorm.weight", vec![64]),
        ("model.layers.0.mlp.up_proj.weight", vec![256, 64]),
        ("model.layers.0.mlp.down_proj.weight", vec![64, 256]),
        ("model.norm.weight", vec![64]),
        ("lm_head.weight", vec![128, 64]),
    ];
    let tensors = shapes
        .into_iter()
        .enumerate()
        .map(|(i, (name, shape))| {
            let count = usize::try_from(shape.iter().product::<u64>()).unwrap();
            let values: Vec<f32> = gaussian(i as u64 + 1, count)
                .iter()
                .map(|v| v * 0.02)
                .collect();
            Tensor::from_f32(name, shape, &values).unwrap()
        })
        .collect();
    TensorModel::new(tensors).unwrap()
}

/// Issue 17: an ordinary Q4_0 run prints one summary line (what it kept and why, no accuracy
/// warning: Q4_0's ordinary 8.6% error is under its threshold); `--verbose` adds one line per
/// tensor; `--json` has every record.
#[test]
fn an_ordinary_q4_0_run_prints_one_summary_line_and_verbose_prints_each_tensor() {
    let ws = Ws::new();
    let model = random_llama();
    let path = saved(&ws, "llama.apr", &model, ModelType::NeuralCustom);
    let out = ws.path("q4.apr");
    let output = run(&["quantize", &path, "--type", "q4_0", "-o", &out]);
    assert_ok(&output);
    assert_eq!(
        stderr(&output),
        format!(
            "{out}: 5 of 9 tensors quantized (q4_0), 4 kept (3: a norm, which llama.cpp keeps \
             in F32; 1: a bias, which llama.cpp keeps in F32), no accuracy warnings\n"
        )
    );
    let quantized = apr::fs::load_tensors(&out, ModelType::NeuralCustom).unwrap();
    for (original, tensor) in model.tensors.iter().zip(&quantized.tensors) {
        let kept = tensor.shape.len() == 1;
        assert_eq!(tensor == original, kept, "{}", tensor.name);
    }
    let info = quantized.quantization.unwrap();
    assert!(info.warnings.is_empty(), "{:?}", info.warnings);

    let output = run(&[
        "quantize", &path, "--type", "q4_0", "-o", &out, "--force", "-v",
    ]);
    assert_ok(&output);
    let text = stderr(&output);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + model.tensors.len(), "{text}");
    assert!(!text.contains("warning:"), "{text}");
    assert!(
        lines[1].starts_with("  model.embed_tokens.weight: q4_0, error 8."),
        "{text}"
    );
    assert_eq!(
        lines[2],
        "  model.layers.0.input_layernorm.weight: kept: a norm, which llama.cpp keeps in F32"
    );

    let output = run(&[
        "--json", "quantize", &path, "--type", "q4_0", "-o", &out, "--force",
    ]);
    assert_ok(&output);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["quantized"], 5);
    assert_eq!(json["kept"][0]["tensors"], 3);
    assert_eq!(
        json["kept"][1]["reason"],
        "a bias, which llama.cpp keeps in F32"
    );
    assert_eq!(json["warnings"], serde_json::json!([]));
    assert_eq!(json["records"].as_array().unwrap().len(), 9);
    assert_eq!(
        json["records"][3]["name"],
        "model.layers.0.self_attn.q_proj.bias"
    );
}

#[test]
fn hostile_safetensors_are_refused() {
    let ws = Ws::new();
    let path = ws.path("evil.safetensors");
    let mut bytes = (1u64 << 40).to_le_bytes().to_vec();
    bytes.extend_from_slice(
        b"{\"a\":{\"dtype\":\"F32\",\"shape\":[1000000000],\"data_offsets\":[0,4000000000]}}",
    );
    std::fs::write(&path, bytes).unwrap();
    assert_fails_with(
        &run(&["import", &path, "-o", &ws.path("x.apr")]),
        "InvalidFormat",
    );
}

/// `apr convert --trueno-native`: the zero-copy form keeps every tensor, `inspect` lists the
/// aligned tensors without reading them (`--verify` reads everything), and the file still exports
/// and maps.
#[test]
fn convert_to_trueno_native_and_inspect_the_tensor_index() {
    let ws = Ws::new();
    let input = saved(
        &ws,
        "in.apr",
        &model().quantize(QuantType::Q8_0).unwrap(),
        ModelType::NeuralSequential,
    );
    let aligned = ws.path("aligned.apr");
    let output = run(&[
        "convert",
        &input,
        &aligned,
        "--trueno-native",
        "--backend",
        "avx2",
    ]);
    assert_ok(&output);
    assert!(
        stderr(&output).contains("TRUENO_NATIVE"),
        "{}",
        stderr(&output)
    );

    let output = run(&["inspect", &aligned, "--json"]);
    assert_ok(&output);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["fully_verified"], false);
    let tensors = report["tensors"].as_array().unwrap();
    assert_eq!(tensors.len(), 5);
    assert!(
        tensors
            .iter()
            .all(|t| t["offset"].as_u64().unwrap() % 64 == 0 && t["backend"] == "avx2")
    );
    let output = run(&["inspect", &aligned, "--verify", "--json"]);
    assert_ok(&output);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["fully_verified"], true);

    let back = apr::fs::load_tensors(&aligned, ModelType::NeuralSequential).unwrap();
    assert_eq!(
        back,
        apr::fs::load_tensors(&input, ModelType::NeuralSequential).unwrap()
    );
    assert_ok(&run(&[
        "export",
        &aligned,
        "--format",
        "gguf",
        "-o",
        &ws.path("m.gguf"),
    ]));
    let mapped = zerocopy_trueno::MappedModel::open(&aligned).unwrap();
    assert_eq!(mapped.tensors().index().len(), 5);

    // A damaged tensor byte: the lazy inspect does not read it, --verify names the failure.
    let mut bytes = std::fs::read(&aligned).unwrap();
    let offset = mapped
        .tensors()
        .file_range(&mapped.tensors().index().entries()[2])
        .start;
    bytes[offset + 5] ^= 0x40;
    let damaged = ws.path("damaged.apr");
    std::fs::write(&damaged, &bytes).unwrap();
    assert_ok(&run(&["inspect", &damaged]));
    assert_fails_with(&run(&["inspect", &damaged, "--verify"]), "ChecksumMismatch");

    let output = run(&["convert", &input, &ws.path("x.apr"), "--backend", "avx2"]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "--backend needs --trueno-native"
    );
}

#[test]
fn import_a_sharded_hugging_face_directory_keeps_its_tokenizer_and_reports_it() {
    let ws = Ws::new();
    let dir = ws.path("tiny-llama");
    std::fs::create_dir(&dir).unwrap();
    let write = |name: &str, bytes: &[u8]| std::fs::write(Path::new(&dir).join(name), bytes);
    let values: Vec<f32> = (0..64).map(|i| i as f32 / 7.0).collect();
    // F16 bits, kept as stored (any bit pattern is an f16).
    let half: Vec<u8> = (0..128u8).map(|i| i.wrapping_mul(37)).collect();
    let shards = [
        vec![
            Tensor::from_f32("model.embed_tokens.weight", vec![8, 4], &values[..32]).unwrap(),
            Tensor::new(
                "model.layers.0.mlp.up_proj.weight",
                DType::F16,
                vec![8, 8],
                half,
            )
            .unwrap(),
        ],
        vec![Tensor::from_f32("model.norm.weight", vec![4], &values[..4]).unwrap()],
    ];
    let mut weight_map = serde_json::Map::new();
    for (i, tensors) in shards.iter().enumerate() {
        let shard = format!("model-{:05}-of-00002.safetensors", i + 1);
        for tensor in tensors {
            weight_map.insert(tensor.name.clone(), shard.clone().into());
        }
        let exported = apr::safetensors::export(&TensorModel::new(tensors.clone()).unwrap());
        write(&shard, &exported.unwrap().weights).unwrap();
    }
    let index = serde_json::json!({"weight_map": weight_map});
    write("model.safetensors.index.json", index.to_string().as_bytes()).unwrap();
    let config = br#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama"}"#;
    write("config.json", config).unwrap();
    write("tokenizer.json", br#"{"version": "1.0"}"#).unwrap();
    write("tokenizer_config.json", br#"{"add_bos_token": true}"#).unwrap();

    let out = ws.path("tiny.apr");
    let output = run(&["import", &dir, "-o", &out]);
    assert_ok(&output);
    assert_eq!(
        stderr(&output).trim_end(),
        format!(
            "{out}: 3 tensors imported from {dir} (LlamaForCausalLM, 2 shards, config.json, \
             tokenizer.json, tokenizer_config.json kept)"
        )
    );
    let output = run(&["import", &dir, "-o", &out, "--force", "--json"]);
    assert_ok(&output);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["ok"], true);
    assert_eq!(json["output"], out.as_str());
    assert_eq!(json["tensors"], 3);
    assert_eq!(json["shards"], 2);
    assert_eq!(json["architecture"], "LlamaForCausalLM");
    assert_eq!(json["model_type"], "NEURAL_CUSTOM");
    assert_eq!(json["config_model_type"], "llama");
    assert_eq!(
        json["source_files"],
        serde_json::json!(["config.json", "tokenizer.json", "tokenizer_config.json"])
    );
    assert_eq!(json["bytes"], 32 * 4 + 64 * 2 + 4 * 4);

    let file = apr::fs::open(&out).unwrap();
    let names: Vec<&str> = file
        .metadata()
        .tensors
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "model.embed_tokens.weight",
            "model.layers.0.mlp.up_proj.weight",
            "model.norm.weight"
        ]
    );
    assert_eq!(file.tensor_at(1).unwrap().dtype, DType::F16);
    let kept = &file.metadata().model_card.source_files;
    assert_eq!(kept.get("config.json"), Some(&config[..]));
    assert_eq!(
        kept.get("tokenizer_config.json"),
        Some(&br#"{"add_bos_token": true}"#[..])
    );

    // An index that names a tensor no shard holds: refused, naming it, nothing written.
    weight_map.insert(
        "lm_head.weight".into(),
        "model-00002-of-00002.safetensors".into(),
    );
    let index = serde_json::json!({"weight_map": weight_map});
    write("model.safetensors.index.json", index.to_string().as_bytes()).unwrap();
    let refused = ws.path("refused.apr");
    let output = run(&["import", &dir, "-o", &refused]);
    assert_fails_with(&output, "InvalidFormat");
    assert!(
        stderr(&output).contains("\"lm_head.weight\""),
        "{}",
        stderr(&output)
    );
    assert!(!Path::new(&refused).exists());
}

/// 003 §7.1 through the CLI: a serde linear regression exports to GGUF as its two coefficient
/// tensors; a serde model of another type is refused with ExportFailed (exit 1) and nothing is
/// written.
#[test]
fn serde_regressions_export_to_gguf_and_other_serde_models_are_refused() {
    #[derive(serde::Serialize)]
    struct Logistic {
        coefficients: Vec<Vec<f32>>,
        intercepts: Vec<f32>,
    }
    let ws = Ws::new();
    let model = Logistic {
        coefficients: vec![vec![0.5, -1.0], vec![2.0, 0.25], vec![-0.75, 1.5]],
        intercepts: vec![0.1, 0.2, 0.3],
    };
    let options = SaveOptions {
        card: ModelCard::default(),
        compression: envelope_core::Compression::None,
    };
    for (model_type, name) in [
        (ModelType::LogisticRegression, "logistic"),
        (ModelType::Knn, "knn"),
    ] {
        let input = ws.path(&format!("{name}.apr"));
        std::fs::write(
            &input,
            apr::save_to_bytes(&model, model_type, &options).unwrap(),
        )
        .unwrap();
        let out = ws.path(&format!("{name}.gguf"));
        let output = run(&["export", &input, "--format", "gguf", "-o", &out, "--json"]);
        if model_type == ModelType::LogisticRegression {
            assert_ok(&output);
            let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            assert_eq!(report["tensors"], 2);
            let bytes = std::fs::read(&out).unwrap();
            assert_eq!(&bytes[..4], b"GGUF");
            let text = String::from_utf8_lossy(&bytes);
            assert!(text.contains("logistic_regression") && text.contains("coefficients"));
        } else {
            assert_fails_with(&output, "Usage: ");
            assert!(
                stderr(&output).contains("ExportFailed"),
                "{}",
                stderr(&output)
            );
            assert!(!Path::new(&out).exists());
        }
    }
}
