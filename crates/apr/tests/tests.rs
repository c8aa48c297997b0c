//! Integration tests of the `apr` crate: known-answer vectors from `gguf.quants` (checked in),
//! round trips of every model type and quantization, the Andon signals through the API, and the
//! interop tests against the Python `gguf` and `safetensors` packages (run by `.ci/run`).

mod complexity;
mod fuzz_check;
mod fuzz_check_safetensors;
mod hf_import;
mod vectors;
mod watermark;

use std::path::{Path, PathBuf};
use std::process::Command;

use vectors::{
    Stump, card, data_dir, golden_bytes, golden_stump_bytes, sample_model, stump, test_values,
    to_bytes,
};

use apr::quant::kernels;
use apr::{DType, ModelType, QuantType, SaveOptions, Tensor, TensorModel, gguf, safetensors};
use envelope_core::{Compression, Signal};

fn from_bytes(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

type Kernel = fn(&[f32], &mut [u8]) -> Result<(), kernels::KernelError>;

fn quantizers() -> [(&'static str, usize, Kernel); 3] {
    [
        ("q8_0", kernels::Q8_0_BLOCK_BYTES, kernels::quantize_q8_0),
        ("q4_0", kernels::Q4_0_BLOCK_BYTES, kernels::quantize_q4_0),
        ("q4_1", kernels::Q4_1_BLOCK_BYTES, kernels::quantize_q4_1),
    ]
}

fn ours(kernel: Kernel, block_bytes: usize, values: &[f32]) -> Vec<u8> {
    let mut out = vec![0; values.len() / 32 * block_bytes];
    kernel(values, &mut out).unwrap();
    out
}

/// Compares block by block against `gguf.quants`. The allowed differences (docs/apr.md
/// "Quantization corner cases") are the sign of a zero scale, where this crate follows ggml's C
/// code (checked exactly by `quantizers_match_ggmls_c_reference_code`) and numpy does not: a Q4_1
/// block whose minimum or maximum is a zero present with both signs (numpy's SIMD reduction picks
/// a zero by lane order, ggml the first), and a Q4_0 block of zeros only (ggml keeps its initial
/// `max = +0`, so `d = -0`; numpy takes the first zero's sign). The f16 d or m is then +0 in one
/// and -0 in the other, everything else equal.
fn assert_same_blocks(name: &str, block_bytes: usize, ours: &[u8], theirs: &[u8]) {
    assert_eq!(ours.len(), theirs.len(), "{name}: length");
    for (i, (a, b)) in ours
        .chunks_exact(block_bytes)
        .zip(theirs.chunks_exact(block_bytes))
        .enumerate()
    {
        if a == b {
            continue;
        }
        let scales: &[usize] = if name == "q4_1" { &[0, 2] } else { &[0] };
        let signed_zero_only = name != "q8_0"
            && a[2 * scales.len()..] == b[2 * scales.len()..]
            && scales.iter().all(|&o| {
                let (x, y) = (
                    u16::from_le_bytes([a[o], a[o + 1]]),
                    u16::from_le_bytes([b[o], b[o + 1]]),
                );
                x == y || (x & 0x7fff == 0 && y & 0x7fff == 0)
            });
        assert!(
            signed_zero_only,
            "{name} block {i} differs:\n ours   {}\n theirs {}",
            hex::encode(a),
            hex::encode(b)
        );
    }
}

/// The numbers of a JSON array (a shape an oracle printed).
fn u64s(value: &serde_json::Value) -> Vec<u64> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap())
        .collect()
}

/// A tensor's dimensions in ggml's order (innermost first); ours are outermost first.
fn ggml_dims(tensor: &Tensor) -> Vec<u64> {
    tensor.shape.iter().rev().copied().collect()
}

#[test]
fn known_answers_from_gguf_quants() {
    let dir = data_dir().join("kat");
    let values = from_bytes(&std::fs::read(dir.join("values.f32")).unwrap());
    for (name, block_bytes, kernel) in quantizers() {
        let expected = std::fs::read(dir.join(format!("{name}.bin"))).unwrap();
        assert_same_blocks(
            name,
            block_bytes,
            &ours(kernel, block_bytes, &values),
            &expected,
        );
    }
}

/// The format does not drift: a file written by an earlier build still loads to the same model,
/// and today's writer produces it byte for byte.
#[test]
fn golden_file_loads_and_is_rewritten_byte_for_byte() {
    let golden = std::fs::read(data_dir().join("golden_q4_0.apr")).unwrap();
    let model = apr::load_tensors_from_bytes(&golden, ModelType::NeuralSequential).unwrap();
    assert_eq!(model, sample_model().quantize(QuantType::Q4_0).unwrap());
    assert_eq!(golden_bytes(), golden);
}

/// The serde golden file (the model `examples/embedded-apr` decodes without `std`) does not drift
/// either.
#[test]
fn golden_serde_file_loads_and_is_rewritten_byte_for_byte() {
    let golden = std::fs::read(data_dir().join("golden_stump.apr")).unwrap();
    let model: Stump = apr::load_from_bytes(&golden, ModelType::DecisionTree).unwrap();
    assert_eq!(model, stump());
    assert_eq!(golden_stump_bytes(), golden);
}

fn oracle() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/python/apr/oracle.py")
}

fn python() -> String {
    std::env::var("INTEROP_PYTHON").expect("INTEROP_PYTHON must name the interop venv's python")
}

/// `model` as GGUF with the golden card and the default options.
fn gguf_bytes(model: &TensorModel, model_type: ModelType) -> apr::Result<Vec<u8>> {
    gguf::to_bytes(model, model_type, &card(), &gguf::GgufOptions::default())
}

/// The test values of `seed` (random and adversarial blocks, `vectors::test_values`) and a
/// temporary directory holding them as `values.f32`, for an oracle to quantize.
fn values_file(seed: u64) -> (tempfile::TempDir, Vec<f32>, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let values = test_values(seed, 4096);
    let input = dir.path().join("values.f32");
    std::fs::write(&input, to_bytes(&values)).unwrap();
    (dir, values, input)
}

/// The stdout of a helper program's run, which must have succeeded (`what` names the run).
fn succeeded(what: &str, output: &std::process::Output) -> Vec<u8> {
    assert!(
        output.status.success(),
        "{what} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout.clone()
}

fn run_oracle(args: &[&std::ffi::OsStr]) -> String {
    let output = Command::new(python())
        .arg(oracle())
        .args(args)
        .output()
        .unwrap();
    String::from_utf8(succeeded("oracle.py", &output)).unwrap()
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn quantization_matches_gguf_quants_on_random_and_adversarial_blocks() {
    let (dir, values, input) = values_file(0xC0FFEE);
    let mut mine = Vec::new();
    for (name, block_bytes, kernel) in quantizers() {
        let bytes = ours(kernel, block_bytes, &values);
        std::fs::write(dir.path().join(format!("{name}.ours")), &bytes).unwrap();
        mine.push(bytes);
    }
    run_oracle(&[
        "quantize".as_ref(),
        input.as_os_str(),
        dir.path().as_os_str(),
    ]);
    for ((name, block_bytes, _), bytes) in quantizers().into_iter().zip(&mine) {
        let theirs = std::fs::read(dir.path().join(format!("{name}.bin"))).unwrap();
        assert_same_blocks(name, block_bytes, bytes, &theirs);
        // Dequantization of the same bytes: identical f32 bit patterns (NaN compared as NaN).
        let expected =
            from_bytes(&std::fs::read(dir.path().join(format!("{name}.deq.f32"))).unwrap());
        let dtype = DType::Quantized(QuantType::from_name(name).unwrap());
        let tensor = Tensor::new("t", dtype, vec![values.len() as u64], bytes.clone()).unwrap();
        let got = tensor.to_f32().unwrap();
        for (i, (a, b)) in got.iter().zip(&expected).enumerate() {
            assert!(
                a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                "{name} value {i}: ours {a:e}, gguf {b:e}"
            );
        }
    }
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn gguf_reader_reads_back_every_exported_file() {
    let dir = tempfile::tempdir().unwrap();
    for quant in [
        None,
        Some(QuantType::Q8_0),
        Some(QuantType::Q4_0),
        Some(QuantType::Q4_1),
        Some(QuantType::Q8Tensor),
    ] {
        let model = match quant {
            None => sample_model(),
            Some(q) => sample_model().quantize(q).unwrap(),
        };
        let bytes = gguf_bytes(&model, ModelType::NeuralSequential).unwrap();
        let path = dir.path().join("model.gguf");
        std::fs::write(&path, &bytes).unwrap();
        let json: serde_json::Value =
            serde_json::from_str(&run_oracle(&["read-gguf".as_ref(), path.as_os_str()])).unwrap();
        assert_eq!(json["ggml_violations"], serde_json::json!([]), "{quant:?}");
        assert_eq!(json["kv"]["general.architecture"], "neural_sequential");
        assert_eq!(json["kv"]["general.name"], "tiny");
        assert_eq!(json["kv"]["general.alignment"], 32);
        if quant.is_some() {
            assert_eq!(json["kv"]["general.quantization_version"], 2, "{quant:?}");
        }
        let tensors = json["tensors"].as_array().unwrap();
        assert_eq!(tensors.len(), model.tensors.len());
        for (t, ours) in tensors.iter().zip(&model.tensors) {
            assert_eq!(t["name"], ours.name.as_str());
            let ggml = gguf::GgmlType::for_tensor(ours).unwrap();
            assert_eq!(t["type"], ggml as u32, "{}", ours.name);
            // GGUFReader's shape is ggml's dims (innermost first); ours is outermost first.
            assert_eq!(u64s(&t["shape"]), ggml_dims(ours), "{}", ours.name);
            let data = gguf::tensor_data(ours);
            assert_eq!(t["sha256"], sha256_hex(data), "{}", ours.name);
        }
    }
}

/// 003 §7.1: a serde linear regression exports to GGUF as its `coefficients` and `intercept`
/// tensors, which gguf-py reads back with the values; a serde model of another type is refused
/// with `ExportFailed` and nothing is written.
#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn serde_regressions_export_to_gguf_as_coefficient_tensors() {
    #[derive(serde::Serialize)]
    struct Linear {
        coefficients: Vec<f64>,
        intercept: f64,
        fit_intercept: bool,
    }
    let linear = Linear {
        coefficients: vec![1.5, -2.0, 0.125],
        intercept: 0.25,
        fit_intercept: true,
    };
    let dir = tempfile::tempdir().unwrap();
    let options = SaveOptions {
        card: card(),
        compression: Compression::ZstdL3,
    };
    let bytes = apr::save_to_bytes(&linear, ModelType::LinearRegression, &options).unwrap();
    let file = apr::AprFile::parse(&bytes[..]).unwrap();
    let path = dir.path().join("linear.gguf");
    apr::fs::export_gguf_from(&path, &file, &gguf::GgufOptions::default()).unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&run_oracle(&["read-gguf".as_ref(), path.as_os_str()])).unwrap();
    assert_eq!(json["ggml_violations"], serde_json::json!([]));
    assert_eq!(json["kv"]["general.architecture"], "linear_regression");
    let tensors = json["tensors"].as_array().unwrap();
    let f32_bytes = |values: &[f32]| {
        values
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>()
    };
    assert_eq!(tensors[0]["name"], "coefficients");
    assert_eq!(u64s(&tensors[0]["shape"]), vec![3]);
    assert_eq!(
        tensors[0]["sha256"],
        sha256_hex(&f32_bytes(&[1.5, -2.0, 0.125]))
    );
    assert_eq!(tensors[1]["name"], "intercept");
    assert_eq!(tensors[1]["sha256"], sha256_hex(&f32_bytes(&[0.25])));

    let tree = apr::save_to_bytes(&linear, ModelType::DecisionTree, &options).unwrap();
    let file = apr::AprFile::parse(&tree[..]).unwrap();
    let refused = dir.path().join("tree.gguf");
    let error =
        apr::fs::export_gguf_from(&refused, &file, &gguf::GgufOptions::default()).unwrap_err();
    assert!(error.to_string().contains("ExportFailed"), "{error}");
    assert!(!refused.exists());
}

fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(data))
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn python_safetensors_loads_exports_and_apr_imports_its_files() {
    let dir = tempfile::tempdir().unwrap();
    for quant in [None, Some(QuantType::Q8_0), Some(QuantType::Q4_1)] {
        let model = match quant {
            None => sample_model(),
            Some(q) => sample_model().quantize(q).unwrap(),
        };
        let exported = safetensors::export(&model).unwrap();
        let path = dir.path().join("weights.safetensors");
        std::fs::write(&path, &exported.weights).unwrap();
        let json: serde_json::Value = serde_json::from_str(&run_oracle(&[
            "read-safetensors".as_ref(),
            path.as_os_str(),
        ]))
        .unwrap();
        assert_eq!(json.as_object().unwrap().len(), model.tensors.len());
        if quant.is_none() {
            for t in &model.tensors {
                assert_eq!(json[&t.name]["sha256"], sha256_hex(t.data()), "{}", t.name);
                assert_eq!(json[&t.name]["dtype"], "float32");
            }
        }
    }
    let path = dir.path().join("from_python.safetensors");
    let described: serde_json::Value = serde_json::from_str(&run_oracle(&[
        "write-safetensors".as_ref(),
        path.as_os_str(),
    ]))
    .unwrap();
    let model = safetensors::import(&std::fs::read(&path).unwrap(), None, None).unwrap();
    assert_eq!(model.tensors.len(), 4);
    for t in &model.tensors {
        assert_eq!(
            described[&t.name]["sha256"],
            sha256_hex(t.data()),
            "{}",
            t.name
        );
        assert_eq!(u64s(&described[&t.name]["shape"]), t.shape);
    }
}

#[test]
fn every_model_type_round_trips_as_serde_and_tensors() {
    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct Linear {
        coefficients: Vec<f64>,
        intercept: f64,
    }
    let linear = Linear {
        coefficients: vec![1.5, -2.0],
        intercept: 0.25,
    };
    for &model_type in ModelType::ALL {
        for compression in [Compression::None, Compression::ZstdL3, Compression::Lz4] {
            let options = SaveOptions {
                card: card(),
                compression,
            };
            let bytes = apr::save_to_bytes(&linear, model_type, &options).unwrap();
            let back: Linear = apr::load_from_bytes(&bytes, model_type).unwrap();
            assert_eq!(back, linear);
            let file = apr::AprFile::parse(&bytes[..]).unwrap();
            assert_eq!(file.metadata().model_card, card());
            let bytes = apr::save_tensors_to_bytes(&sample_model(), model_type, &options).unwrap();
            assert_eq!(
                apr::load_tensors_from_bytes(&bytes, model_type).unwrap(),
                sample_model()
            );
        }
    }
}

#[test]
fn every_quantization_round_trips_through_a_file() {
    for quant in [
        QuantType::Q8_0,
        QuantType::Q4_0,
        QuantType::Q4_1,
        QuantType::Q8Tensor,
    ] {
        let model = sample_model().quantize(quant).unwrap();
        let bytes = apr::save_tensors_to_bytes(
            &model,
            ModelType::NeuralSequential,
            &SaveOptions::default(),
        )
        .unwrap();
        // The chunk-by-chunk writer gives exactly the in-memory writer's bytes.
        let via_parts =
            apr::tensor_parts(&model, ModelType::NeuralSequential, &SaveOptions::default())
                .unwrap()
                .to_bytes()
                .unwrap();
        assert_eq!(bytes, via_parts);
        let file = apr::AprFile::parse(&bytes[..]).unwrap();
        assert!(
            file.envelope()
                .header()
                .flags()
                .contains(envelope_core::Flags::QUANTIZED)
        );
        let back = file.tensors().unwrap();
        assert_eq!(back, model, "{quant:?}");
        assert_eq!(back.quantization.unwrap().quant_type, quant.id());
        // One tensor alone.
        let one = file.tensor("blk.0.attn_q.weight").unwrap();
        assert_eq!(&one, model.tensor("blk.0.attn_q.weight").unwrap());
        assert!(one.to_f32().unwrap().iter().all(|v| v.is_finite()));
    }
}

#[test]
fn wrong_model_type_is_model_type_mismatch() {
    let bytes = apr::save_to_bytes(&1u32, ModelType::Knn, &SaveOptions::default()).unwrap();
    let error = apr::load_from_bytes::<u32>(&bytes, ModelType::Svm).unwrap_err();
    assert_eq!(error.signal(), Signal::ModelTypeMismatch);
}

#[test]
fn corrupt_files_raise_the_envelope_signals() {
    let bytes =
        apr::save_tensors_to_bytes(&sample_model(), ModelType::Custom, &SaveOptions::default())
            .unwrap();
    // A payload bit, the magic, the version: each byte set to `value` raises its signal.
    for (at, value, signal) in [
        (100, bytes[100] ^ 1, Signal::ChecksumMismatch),
        (0, b'X', Signal::InvalidFormat),
        (4, 99, Signal::UnsupportedVersion),
    ] {
        let mut damaged = bytes.clone();
        damaged[at] = value;
        let error = apr::load_tensors_from_bytes(&damaged, ModelType::Custom).unwrap_err();
        assert_eq!(error.signal(), signal, "byte {at}: {error}");
    }
    // Corruption sweep: every single-byte change is refused, never a panic or wrong data.
    for at in (0..bytes.len()).step_by(7) {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x40;
        assert!(
            apr::load_tensors_from_bytes(&damaged, ModelType::Custom).is_err(),
            "byte {at}"
        );
    }
}

#[test]
fn quantization_gates_through_the_api() {
    // Unknown type byte: UnsupportedQuantization.
    assert_eq!(
        QuantType::from_id(0x42).unwrap_err().signal(),
        Signal::UnsupportedQuantization
    );
    assert_eq!(
        QuantType::from_name("q3_k").unwrap_err().signal(),
        Signal::UnsupportedQuantization
    );
    // Block count vs shape, QuantizationCorrupt: every block type in
    // `tensor::tests::data_must_match_shape`.
    // GGUF export of a type GGUF lacks: ExportFailed (Usage), naming the tensor.
    let model = TensorModel::new(vec![
        Tensor::new("mask", DType::U8, vec![4], vec![0; 4]).unwrap(),
    ])
    .unwrap();
    let error = gguf_bytes(&model, ModelType::Custom).unwrap_err();
    assert_eq!(error.signal(), Signal::Usage);
    assert!(error.to_string().contains("ExportFailed") && error.to_string().contains("mask"));
}

mod commercial {
    use apr::commercial::{load_commercial_tensors, package_commercial};
    use apr::watermark::{SellerKey, Watermark};
    use envelope_crypto::{DecryptionKey, EncryptOptions, EncryptTo, OsRng};
    use envelope_license::commercial::CommercialPackage;
    use envelope_license::{LicenseBlock, LicenseFlags};
    use envelope_sign::{Identity, TrustedKeys};

    use super::*;

    fn setup() -> (Identity, Identity, LicenseBlock) {
        let seller = Identity::from_seed([7; 32]);
        let buyer = Identity::from_seed([9; 32]);
        let mut license = LicenseBlock::new([1; 16], "buyer@example.com", 1_000, 2_000);
        license.flags = LicenseFlags::EXPIRATION_ENFORCED;
        (seller, buyer, license)
    }

    fn package(
        seller: &Identity,
        buyer: &Identity,
        license: LicenseBlock,
        watermark: Option<(&Watermark, &SellerKey)>,
    ) -> Vec<u8> {
        try_package(seller, buyer, license, watermark).unwrap()
    }

    fn try_package(
        seller: &Identity,
        buyer: &Identity,
        license: LicenseBlock,
        watermark: Option<(&Watermark, &SellerKey)>,
    ) -> apr::Result<Vec<u8>> {
        let signer = seller.signing_key();
        let recipient = buyer.recipient_public_key();
        let package = CommercialPackage {
            license,
            signer: &signer,
            encrypt_to: Some(EncryptTo::Recipient(&recipient)),
            options: EncryptOptions::default(),
        };
        package_commercial(
            &sample_model(),
            ModelType::NeuralSequential,
            &SaveOptions::default(),
            &package,
            watermark,
            &mut OsRng,
        )
    }

    /// `apr::LoadOptions` applies the same policy as `ald::LoadOptions` (issue 15): the
    /// signature first, then the license at the caller's clock, then the model type; a file whose
    /// license enforces expiry is not "valid" for a caller that gives no time.
    #[test]
    fn load_options_check_signature_license_and_type_in_order() {
        let (seller, buyer, license) = setup();
        let bytes = package(&seller, &buyer, license, None);
        let trusted = TrustedKeys::from_keys([seller.signing_public_key()]);
        let stranger = TrustedKeys::from_keys([buyer.signing_public_key()]);
        let open = |signer: &TrustedKeys, now: Option<u64>, expected: ModelType| {
            let options = apr::LoadOptions {
                expected_type: Some(expected),
                now_unix: now,
                signature: Some(envelope_sign::Policy::RequireSignature { trusted: signer }),
                ..apr::LoadOptions::default()
            };
            apr::AprFile::open(&bytes[..], &options).map(|file| file.metadata().tensors.len())
        };
        let sequential = ModelType::NeuralSequential;
        assert_eq!(open(&trusted, Some(1_500), sequential).unwrap(), 5);
        // Every check fails below; the first in the order is the one reported.
        let signal = |r: apr::Result<usize>| r.unwrap_err().signal();
        assert_eq!(
            signal(open(&stranger, Some(2_500), ModelType::Custom)),
            Signal::SignatureInvalid
        );
        assert_eq!(
            signal(open(&trusted, Some(2_500), ModelType::Custom)),
            Signal::LicenseExpired
        );
        assert_eq!(signal(open(&trusted, None, sequential)), Signal::Usage);
        assert_eq!(
            signal(open(&trusted, Some(1_500), ModelType::Custom)),
            Signal::ModelTypeMismatch
        );
    }

    #[test]
    fn packaged_model_loads_for_its_buyer_and_signals_every_failure_in_order() {
        let (seller, buyer, license) = setup();
        let bytes = package(&seller, &buyer, license.clone(), None);
        let trusted = TrustedKeys::from_keys([seller.signing_public_key()]);
        let secret = buyer.recipient_secret_key();
        let key = Some(DecryptionKey::Recipient(&secret));
        let (model, got) =
            load_commercial_tensors(&bytes, ModelType::NeuralSequential, &trusted, key, 1_500)
                .unwrap();
        assert_eq!(model, sample_model());
        assert_eq!(got, license);

        let untrusted = TrustedKeys::from_keys([buyer.signing_public_key()]);
        let signal = |r: apr::Result<(TensorModel, LicenseBlock)>| r.unwrap_err().signal();
        assert_eq!(
            signal(load_commercial_tensors(
                &bytes,
                ModelType::NeuralSequential,
                &untrusted,
                key,
                1_500
            )),
            Signal::SignatureInvalid
        );
        assert_eq!(
            signal(load_commercial_tensors(
                &bytes,
                ModelType::NeuralSequential,
                &trusted,
                key,
                2_000
            )),
            Signal::LicenseExpired
        );
        let stranger = seller.recipient_secret_key();
        assert_eq!(
            signal(load_commercial_tensors(
                &bytes,
                ModelType::NeuralSequential,
                &trusted,
                Some(DecryptionKey::Recipient(&stranger)),
                1_500
            )),
            Signal::DecryptionFailed
        );
        assert_eq!(
            signal(load_commercial_tensors(
                &bytes,
                ModelType::NeuralSequential,
                &trusted,
                None,
                1_500
            )),
            Signal::DecryptionFailed
        );
        assert_eq!(
            signal(load_commercial_tensors(
                &bytes,
                ModelType::Knn,
                &trusted,
                key,
                1_500
            )),
            Signal::ModelTypeMismatch
        );
    }

    /// Issue 16: the WATERMARKED flag is set by an embedding that reads back, and the seller's
    /// key finds the licensee in the delivered model.
    #[test]
    fn watermark_runs_before_packaging_and_is_flagged() {
        let (seller, buyer, license) = setup();
        let seller_key = SellerKey::new([5; 32]);
        let mark = Watermark::for_buyer(&seller_key, &license.licensee_hash);
        let bytes = package(&seller, &buyer, license, Some((&mark, &seller_key)));
        let trusted = TrustedKeys::from_keys([seller.signing_public_key()]);
        let secret = buyer.recipient_secret_key();
        let (model, got) = load_commercial_tensors(
            &bytes,
            ModelType::NeuralSequential,
            &trusted,
            Some(DecryptionKey::Recipient(&secret)),
            1_500,
        )
        .unwrap();
        assert!(got.flags.contains(LicenseFlags::WATERMARKED));
        assert_ne!(model.tensors[0], sample_model().tensors[0]);
        // 15 values: too few to carry a mark, left as they are.
        assert_eq!(model.tensors[3], sample_model().tensors[3]);
        use apr::watermark::Watermarkable as _;
        let found = model.extract_watermark(&seller_key).unwrap();
        assert_eq!(found.buyer_hash, mark.buyer_hash);
        assert!(sample_model().extract_watermark(&seller_key).is_none());
    }

    /// A license may not claim WATERMARKED without a mark, and a model that cannot carry one is
    /// refused before anything is packaged.
    #[test]
    fn a_watermarked_claim_needs_a_mark_that_reads_back() {
        let (seller, buyer, mut license) = setup();
        license.flags = license.flags.with(LicenseFlags::WATERMARKED);
        let error = try_package(&seller, &buyer, license.clone(), None).unwrap_err();
        assert!(matches!(error, apr::Error::WatermarkClaimWithoutMark));
        let seller_key = SellerKey::new([5; 32]);
        let mut mark = Watermark::for_buyer(&seller_key, b"buyer");
        mark.column_indices = vec![3];
        let error = try_package(&seller, &buyer, license, Some((&mark, &seller_key))).unwrap_err();
        assert!(error.is_operation_failure(), "{error}");
    }
}

#[test]
fn encrypted_and_signed_models_load_through_the_api() {
    use envelope_crypto::{DecryptionKey, EncryptOptions, EncryptTo, OsRng};
    use envelope_sign::{Identity, Policy, TrustedKeys};
    let me = Identity::from_seed([3; 32]);
    let parts =
        apr::tensor_parts(&sample_model(), ModelType::Custom, &SaveOptions::default()).unwrap();
    let recipient = me.recipient_public_key();
    let sealed = envelope_crypto::encrypt(
        &parts,
        EncryptTo::Recipient(&recipient),
        EncryptOptions::default(),
        &mut OsRng,
    )
    .unwrap();
    let signed = envelope_sign::sign(&sealed.to_bytes().unwrap(), &me.signing_key()).unwrap();
    let trusted = TrustedKeys::from_keys([me.signing_public_key()]);
    let file =
        apr::load_verified(&signed[..], &Policy::RequireSignature { trusted: &trusted }).unwrap();
    let secret = me.recipient_secret_key();
    assert_eq!(
        file.decrypt_tensors(DecryptionKey::Recipient(&secret))
            .unwrap(),
        sample_model()
    );
    assert_eq!(
        file.tensors().unwrap_err().signal(),
        Signal::DecryptionFailed
    );
    let stranger = TrustedKeys::from_keys([Identity::from_seed([4; 32]).signing_public_key()]);
    let error = apr::load_verified(
        &signed[..],
        &Policy::RequireSignature { trusted: &stranger },
    )
    .unwrap_err();
    assert_eq!(error.signal(), Signal::SignatureInvalid);
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    fn finite() -> impl Strategy<Value = f32> {
        prop_oneof![
            -1e4f32..1e4f32,
            -1.0f32..1.0f32,
            Just(0.0f32),
            Just(-0.0f32),
            (1u32..0x0080_0000).prop_map(f32::from_bits),
        ]
    }

    fn tensor_model() -> impl Strategy<Value = TensorModel> {
        prop::collection::vec((1usize..4, prop::collection::vec(finite(), 32..=32)), 1..5).prop_map(
            |specs| {
                let tensors = specs
                    .into_iter()
                    .enumerate()
                    .map(|(i, (rows, row))| {
                        let values: Vec<f32> =
                            row.iter().copied().cycle().take(rows * 32).collect();
                        Tensor::from_f32(format!("t{i}"), vec![rows as u64, 32], &values).unwrap()
                    })
                    .collect();
                TensorModel::new(tensors).unwrap()
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn tensor_models_round_trip_through_bytes(model in tensor_model(), quant in 0usize..5) {
            let model = match quant {
                0 => model,
                q => model.quantize([QuantType::Q8_0, QuantType::Q4_0, QuantType::Q4_1, QuantType::Q8Tensor][q - 1]).unwrap(),
            };
            let bytes = apr::save_tensors_to_bytes(&model, ModelType::Custom, &SaveOptions::default()).unwrap();
            prop_assert_eq!(apr::load_tensors_from_bytes(&bytes, ModelType::Custom).unwrap(), model);
        }

        #[test]
        fn q8_0_error_is_at_most_half_a_step(block in prop::collection::vec(finite(), 32..=32)) {
            let tensor = Tensor::from_f32("t", vec![1, 32], &block).unwrap();
            let q = TensorModel::new(vec![tensor]).unwrap().quantize(QuantType::Q8_0).unwrap();
            let back = q.tensors[0].to_f32().unwrap();
            let amax = block.iter().fold(0.0f32, |m, v| m.max(v.abs()));
            let step = f32::from(half::f16::from_f32(amax / 127.0));
            for (x, y) in block.iter().zip(&back) {
                // Half a step from rounding, plus the f16 rounding of the scale times 127.
                prop_assert!((x - y).abs() <= step * 0.5 + amax * 1e-3 + 1e-30, "{} vs {}", x, y);
            }
        }

        #[test]
        fn safetensors_export_import_round_trips(model in tensor_model(), quant in 0usize..5) {
            let model = match quant {
                0 => model,
                q => model.quantize([QuantType::Q8_0, QuantType::Q4_0, QuantType::Q4_1, QuantType::Q8Tensor][q - 1]).unwrap(),
            };
            let exported = safetensors::export(&model).unwrap();
            let back = safetensors::import(
                &exported.weights,
                exported.scales.as_deref().map(str::as_bytes),
                exported.mins.as_deref().map(str::as_bytes),
            ).unwrap();
            prop_assert_eq!(back.tensors, model.tensors);
        }

        #[test]
        fn random_bytes_are_refused_without_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
            prop_assert!(apr::AprFile::parse(&bytes[..]).is_err());
        }

        #[test]
        fn damaged_model_files_never_panic(at in any::<prop::sample::Index>(), byte in any::<u8>()) {
            let bytes = apr::save_tensors_to_bytes(&sample_model().quantize(QuantType::Q4_1).unwrap(), ModelType::Custom, &SaveOptions::default()).unwrap();
            let mut damaged = bytes.clone();
            let i = at.index(damaged.len());
            damaged[i] = byte;
            // Parsing without the CRC's protection (lazy open) must still never panic.
            if let Ok(file) = apr::AprFile::parse_lazy(&damaged[..]) {
                let _ = file.tensors();
            }
            if damaged != bytes {
                prop_assert!(apr::load_tensors_from_bytes(&damaged, ModelType::Custom).is_err());
            }
        }
    }
}

/// ggml's own code, built from its sources by `.ci/setup-ggml` (tests/ggml/gguf_probe.cpp): the
/// GGUF loader llama.cpp uses and the C reference quantizers.
fn ggml_probe(args: &[&std::ffi::OsStr]) -> std::process::Output {
    let probe = std::env::var_os("GGML_PROBE").expect("GGML_PROBE: run .ci/setup-ggml");
    Command::new(probe)
        .args(args)
        .output()
        .expect("gguf_probe runs")
}

fn fnv1a64_hex(data: &[u8]) -> String {
    let hash = data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// The same bytes as ggml's C `quantize_row_q{8_0,4_0,4_1}_ref` on random and adversarial blocks
/// (exactly: no signed-zero allowance, ggml and this crate both keep the first extreme), and the
/// same values, bit for bit, as ggml's `dequantize_row_*`.
#[test]
#[ignore = "interop: needs GGML_PROBE (built by .ci/setup-ggml, run by .ci/run)"]
fn quantizers_match_ggmls_c_reference_code() {
    let (dir, values, input) = values_file(0x9e37_79b9);
    for (name, block_bytes, kernel) in quantizers() {
        let ours = ours(kernel, block_bytes, &values);
        let theirs_path = dir.path().join(format!("{name}.ggml"));
        // `ggml_probe OP NAME FROM TO`: ggml's own quantizer or dequantizer of type `name`.
        let probe = |op: &str, from: &Path, to: &Path| {
            let args = [op.as_ref(), name.as_ref(), from.as_os_str(), to.as_os_str()];
            succeeded(&format!("ggml {op} {name}"), &ggml_probe(&args));
        };
        probe("quantize", &input, &theirs_path);
        let theirs = std::fs::read(&theirs_path).unwrap();
        assert_eq!(ours.len(), theirs.len());
        for (i, (a, b)) in ours
            .chunks_exact(block_bytes)
            .zip(theirs.chunks_exact(block_bytes))
            .enumerate()
        {
            assert_eq!(hex::encode(a), hex::encode(b), "{name} block {i}");
        }

        let ours_path = dir.path().join(format!("{name}.ours"));
        std::fs::write(&ours_path, &ours).unwrap();
        let back = dir.path().join(format!("{name}.back"));
        probe("dequantize", &ours_path, &back);
        let theirs = from_bytes(&std::fs::read(&back).unwrap());
        let mut mine = vec![0f32; values.len()];
        match name {
            "q8_0" => kernels::dequantize_q8_0(&ours, &mut mine).unwrap(),
            "q4_0" => kernels::dequantize_q4_0(&ours, &mut mine).unwrap(),
            _ => kernels::dequantize_q4_1(&ours, &mut mine).unwrap(),
        }
        for (i, (a, b)) in mine.iter().zip(&theirs).enumerate() {
            assert_eq!(a.to_bits(), b.to_bits(), "{name} dequantized value {i}");
        }
    }
}

/// Every exported GGUF file loads with ggml's own loader (`gguf_init_from_file`, stricter than the
/// Python reader: alignment, offsets, dimensions, block multiples), with the names, types,
/// dimensions and bytes we wrote; and the probe has teeth: a cut file is refused.
#[test]
#[ignore = "interop: needs GGML_PROBE (built by .ci/setup-ggml, run by .ci/run)"]
fn exported_gguf_files_pass_ggmls_own_loader() {
    let dir = tempfile::tempdir().unwrap();
    let half = TensorModel::new(vec![
        Tensor::new(
            "blk.0.ffn.weight",
            DType::F16,
            vec![2, 32],
            (0..64u16)
                .flat_map(|i| half::f16::from_f32(f32::from(i) / 8.0).to_le_bytes())
                .collect(),
        )
        .unwrap(),
    ])
    .unwrap();
    let models = [
        ("f32", sample_model()),
        ("f16", half),
        ("q8_0", sample_model().quantize(QuantType::Q8_0).unwrap()),
        ("q4_0", sample_model().quantize(QuantType::Q4_0).unwrap()),
        ("q4_1", sample_model().quantize(QuantType::Q4_1).unwrap()),
        (
            "q8_tensor",
            sample_model().quantize(QuantType::Q8Tensor).unwrap(),
        ),
    ];
    for (label, model) in models {
        let bytes = gguf_bytes(&model, ModelType::NeuralSequential).unwrap();
        let path = dir.path().join(format!("{label}.gguf"));
        std::fs::write(&path, &bytes).unwrap();
        let output = ggml_probe(&["load".as_ref(), path.as_os_str()]);
        let stdout = succeeded(&format!("{label}: ggml loading the file"), &output);
        let json: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
        assert_eq!(json["version"], 3, "{label}");
        assert_eq!(json["kv"]["general.architecture"], "str", "{label}");
        if model.is_quantized() {
            assert_eq!(json["kv"]["general.quantization_version"], "u32", "{label}");
        }
        let tensors = json["tensors"].as_array().unwrap();
        assert_eq!(tensors.len(), model.tensors.len(), "{label}");
        for (t, ours) in tensors.iter().zip(&model.tensors) {
            assert_eq!(t["name"], ours.name.as_str());
            let ggml = gguf::GgmlType::for_tensor(ours).unwrap();
            assert_eq!(
                t["type"],
                format!("{ggml:?}").to_lowercase(),
                "{label} {}",
                ours.name
            );
            assert_eq!(u64s(&t["ne"]), ggml_dims(ours), "{label} {}", ours.name);
            let data = gguf::tensor_data(ours);
            assert_eq!(t["fnv1a64"], fnv1a64_hex(data), "{label} {}", ours.name);
        }
        let cut = dir.path().join(format!("{label}-cut.gguf"));
        std::fs::write(&cut, &bytes[..bytes.len() - 1]).unwrap();
        let output = ggml_probe(&["load".as_ref(), cut.as_os_str()]);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{label}: ggml must refuse a cut file"
        );
    }
}

/// Replays the fuzz corpus (fuzz/corpus/apr_reader) on stable: no input may panic.
#[test]
fn fuzz_corpus_replays_without_panic() {
    test_support::replay_corpus("apr_reader", fuzz_check::apr_reader);
}

/// Replays the `safetensors_import` fuzz corpus (fuzz/corpus/safetensors_import) on stable.
#[test]
fn safetensors_fuzz_corpus_replays_without_panic() {
    test_support::replay_corpus(
        "safetensors_import",
        fuzz_check_safetensors::safetensors_import,
    );
}

/// A TRUENO_NATIVE model loads through every `.apr` reader (full, lazy, in memory as on wasm32)
/// with the same tensors, and maps zero-copy: each tensor 64-byte aligned, borrowed as `&[f32]`.
#[test]
fn trueno_native_models_load_everywhere_and_map_zero_copy() {
    let dir = tempfile::tempdir().unwrap();
    for (label, model) in [
        ("f32", sample_model()),
        ("q8_0", sample_model().quantize(QuantType::Q8_0).unwrap()),
        ("q4_1", sample_model().quantize(QuantType::Q4_1).unwrap()),
    ] {
        let bytes = apr::trueno::save_trueno_to_bytes(
            &model,
            ModelType::NeuralSequential,
            &card(),
            zerocopy_trueno::BackendHint::Avx2,
        )
        .unwrap();
        let flags = envelope_core::Envelope::parse(&bytes[..], envelope_core::Format::Model)
            .unwrap()
            .header()
            .flags();
        assert!(
            flags.contains(envelope_core::Flags::TRUENO_NATIVE),
            "{label}"
        );
        let file = apr::AprFile::parse(&bytes[..]).unwrap();
        assert!(file.is_aligned());
        assert_eq!(file.tensors().unwrap(), model, "{label}");
        let lazy = apr::AprFile::parse_lazy(&bytes[..]).unwrap();
        assert_eq!(
            lazy.tensor("blk.0.odd").unwrap(),
            *model.tensor("blk.0.odd").unwrap()
        );
        assert_eq!(
            apr::load_tensors_from_bytes(&bytes, ModelType::NeuralSequential).unwrap(),
            model
        );

        let path = dir.path().join(format!("{label}.apr"));
        std::fs::write(&path, &bytes).unwrap();
        let mapped = zerocopy_trueno::MappedModel::open(&path).unwrap();
        assert_eq!(mapped.model_type(), ModelType::NeuralSequential.id());
        for tensor in &model.tensors {
            let view = mapped.get(&tensor.name).unwrap();
            assert_eq!(view.bytes(), tensor.data(), "{label} {}", tensor.name);
            assert_eq!(view.bytes().as_ptr() as usize % 64, 0);
            if tensor.dtype == DType::F32 {
                assert_eq!(
                    mapped.get_f32(&tensor.name).unwrap(),
                    &tensor.to_f32().unwrap()[..]
                );
            }
        }
    }
}

/// A TRUENO_NATIVE model described one way by its tensor index and another by its metadata.
/// `to_bytes` recomputes every checksum, so only the agreement rule can refuse it.
fn trueno_with_index_of(honest: &TensorModel, liar: &TensorModel) -> Vec<u8> {
    let parts = |model: &TensorModel| {
        apr::trueno::trueno_parts(
            model,
            ModelType::NeuralSequential,
            &card(),
            zerocopy_trueno::BackendHint::Auto,
        )
        .unwrap()
    };
    let honest_parts = parts(honest);
    let liar_index = zerocopy_trueno::TensorIndex::parse(
        envelope_core::Format::Model,
        parts(liar).tensor_index.as_deref().unwrap(),
    )
    .unwrap();
    // The honest metadata, the liar's index, laid out (and padded) afresh.
    let mut base =
        envelope_core::EnvelopeParts::new(envelope_core::Format::Model, honest_parts.type_id);
    base.quantized = honest_parts.quantized;
    base.metadata = honest_parts.metadata;
    let data: Vec<&[u8]> = liar.tensors.iter().map(Tensor::data).collect();
    zerocopy_trueno::aligned_parts(base, liar_index, &data, Some(1))
        .unwrap()
        .to_bytes()
        .unwrap()
}

/// Every `.apr` reader of a TRUENO_NATIVE file refuses `bytes` with `InvalidFormat` naming
/// `tensor`, with `reason` in the message.
fn refused_naming(bytes: &[u8], tensor: &str, reason: &str) {
    let check = |error: apr::Error, reader: &str| {
        assert_eq!(error.signal(), Signal::InvalidFormat, "{reader}: {error}");
        let message = error.to_string();
        assert!(
            message.contains(&format!("{tensor:?}")) && message.contains(reason),
            "{reader}: {message}"
        );
    };
    let all = |file: apr::AprFile<&[u8]>| file.tensors().map(|_| ());
    check(
        apr::AprFile::parse(bytes).and_then(all).unwrap_err(),
        "parse",
    );
    check(
        apr::AprFile::parse_lazy(bytes).and_then(all).unwrap_err(),
        "parse_lazy",
    );
    check(
        apr::load_tensors_from_bytes(bytes, ModelType::NeuralSequential).unwrap_err(),
        "load_tensors_from_bytes",
    );
}

/// Two descriptions of one tensor must agree: the tensor index (what `MappedModel` hands out)
/// and the metadata (what `AprFile` builds) give the same element type, shape and layout, or the
/// file is refused naming the tensor (issue 14 §5: an index saying i8 [64, 256] over metadata
/// saying f32 [64, 64] used to pass `inspect --verify`).
#[test]
fn fail_a_trueno_model_whose_index_and_metadata_disagree_is_refused_naming_the_tensor() {
    let values: Vec<f32> = (0..64 * 64).map(|i| i as f32 * 0.5).collect();
    let weight = Tensor::from_f32("w", vec![64, 64], &values).unwrap();
    let bias = Tensor::from_f32("b", vec![3], &[1.0, 2.0, 3.0]).unwrap();
    let honest = TensorModel::new(vec![weight.clone(), bias.clone()]).unwrap();
    let same = trueno_with_index_of(&honest, &honest);
    assert_eq!(
        apr::AprFile::parse(&same[..]).unwrap().tensors().unwrap(),
        honest
    );
    let as_type = |dtype, shape| {
        let w = Tensor::new("w", dtype, shape, weight.data().to_vec()).unwrap();
        TensorModel::new(vec![w, bias.clone()]).unwrap()
    };
    refused_naming(
        &trueno_with_index_of(&honest, &as_type(DType::I8, vec![64, 256])),
        "w",
        "element types",
    );
    refused_naming(
        &trueno_with_index_of(&honest, &as_type(DType::F32, vec![32, 128])),
        "w",
        "shapes",
    );
    // Quantized tensors are u8 byte arrays in the index, of exactly their stored size.
    let quantized = honest.quantize(QuantType::Q8_0).unwrap();
    let mut other = quantized.clone();
    other.tensors[0] = Tensor::new(
        "w",
        DType::U8,
        vec![4, 1088],
        quantized.tensors[0].data().to_vec(),
    )
    .unwrap();
    refused_naming(&trueno_with_index_of(&quantized, &other), "w", "shapes");
    // Names in another order.
    let swapped = TensorModel::new(vec![bias.clone(), weight.clone()]).unwrap();
    let error = apr::AprFile::parse(&trueno_with_index_of(&honest, &swapped)[..]).unwrap_err();
    assert_eq!(error.signal(), Signal::InvalidFormat, "{error}");
    // Mapped: `MappedModel` reads the index alone; `apr::fs::open_mapped` checks the agreement.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("liar.apr");
    std::fs::write(
        &path,
        trueno_with_index_of(&honest, &as_type(DType::I8, vec![64, 256])),
    )
    .unwrap();
    let error = apr::fs::open_mapped(&path).unwrap_err();
    assert!(error.to_string().contains("\"w\""), "{error}");
    std::fs::write(&path, &same).unwrap();
    let mapped = apr::fs::open_mapped(&path).unwrap();
    assert_eq!(mapped.get_f32("w").unwrap(), &values[..]);
}

/// The padding after a TRUENO_NATIVE tensor (up to the next 64-byte boundary) must be zero, as
/// no checksum but the chunk's covers it: a file whose padding holds data is refused by every
/// reader, naming the tensor before the padding.
#[test]
fn fail_non_zero_padding_in_a_trueno_model_is_refused_naming_the_tensor() {
    let model = TensorModel::new(vec![
        Tensor::from_f32("norm", vec![3], &[1.0, 2.0, 3.0]).unwrap(),
        Tensor::from_f32("w", vec![4, 4], &[0.5; 16]).unwrap(),
    ])
    .unwrap();
    let mut parts = apr::trueno::trueno_parts(
        &model,
        ModelType::NeuralSequential,
        &card(),
        zerocopy_trueno::BackendHint::Auto,
    )
    .unwrap();
    let mut stored = parts.payload.stored().to_vec();
    assert_eq!(stored[12..64], [0; 52], "12 bytes of norm, then padding");
    stored[40] = 7;
    if let envelope_core::Payload::Chunked { stored: s, .. } = &mut parts.payload {
        *s = stored.into();
    }
    let bytes = parts.to_bytes().unwrap();
    envelope_core::Envelope::parse(&bytes[..], envelope_core::Format::Model)
        .expect("every checksum holds");
    refused_naming(&bytes, "norm", "non-zero padding");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("padded.apr");
    std::fs::write(&path, &bytes).unwrap();
    let error = zerocopy_trueno::MappedModel::open(&path).unwrap_err();
    assert_eq!(error.signal(), Signal::InvalidFormat, "{error}");
}

/// `import_safetensors` reads no file it cannot bound: a sidecar (`scales.json`, `mins.json`)
/// that is a symlink (to `/dev/zero`, say), a FIFO, or larger than the quantized tensors can need
/// is refused with `Io`, and so are weights that are a FIFO, all without blocking. (Before, the
/// sidecars were read whole through any link and a FIFO hung the import.)
#[cfg(unix)]
#[test]
fn import_refuses_unbounded_or_blocking_sidecars_and_weights() {
    let model = sample_model().quantize(QuantType::Q4_1).unwrap();
    let dir = tempfile::tempdir().unwrap();
    apr::fs::export_safetensors(
        dir.path(),
        &model,
        &apr::ModelCard::default(),
        &apr::safetensors::SafeTensorsOptions::default(),
    )
    .unwrap();
    let weights = dir.path().join("weights.safetensors");
    let imports_the_model =
        || apr::fs::import_safetensors(&weights).unwrap().tensors == model.tensors;
    assert!(imports_the_model());
    let mkfifo = |path: &Path| {
        rustix::fs::mknodat(
            rustix::fs::CWD,
            path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .unwrap();
    };
    let refused = |what: &str| {
        let error = apr::fs::import_safetensors(&weights).unwrap_err();
        assert_eq!(error.signal(), Signal::Io, "{what}: {error}");
    };
    let scales = dir.path().join("scales.json");
    let original = std::fs::read(&scales).unwrap();
    std::fs::remove_file(&scales).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &scales).unwrap();
    refused("a link to /dev/zero");
    std::fs::remove_file(&scales).unwrap();
    mkfifo(&scales);
    refused("a FIFO");
    std::fs::remove_file(&scales).unwrap();
    let limit = apr::safetensors::sidecar_limit(&std::fs::read(&weights).unwrap()).unwrap();
    let mut padded = original.clone();
    padded.resize(usize::try_from(limit).unwrap() + 1, b' ');
    std::fs::write(&scales, &padded).unwrap();
    refused("larger than the weights can need");
    // Within the limit, whitespace and all, it is read as before.
    padded.truncate(usize::try_from(limit).unwrap());
    std::fs::write(&scales, &padded).unwrap();
    assert!(imports_the_model());
    std::fs::remove_file(&weights).unwrap();
    mkfifo(&weights);
    refused("weights that are a FIFO");
}
