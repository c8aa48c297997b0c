//! Tests of SafeTensors export and import: both layouts, dtype conversion, sharding, the
//! refusal of quantized tensors by transformers' format check, round trips.

use proptest::prelude::*;

use super::*;

fn model() -> TensorModel {
    let values: Vec<f32> = (0..128).map(|i| (i as f32 * 0.11).cos()).collect();
    TensorModel::new(vec![
        Tensor::from_f32("z.last", vec![2, 32], &values[..64]).unwrap(),
        Tensor::from_f32("a.first", vec![4, 32], &values).unwrap(),
        Tensor::new("bytes", DType::U8, vec![3], vec![1, 2, 3]).unwrap(),
    ])
    .unwrap()
}

#[test]
fn plain_export_round_trips_with_order() {
    let model = model();
    let exported = export(&model).unwrap();
    assert!(exported.scales.is_none());
    assert_eq!(import(&exported.weights, None, None).unwrap(), model);
}

#[test]
fn quantized_export_round_trips_bit_exactly() {
    for quant in QuantType::ALL
        .into_iter()
        .filter(|q| *q != QuantType::Custom)
    {
        let model = model().quantize(quant).unwrap();
        let exported = export(&model).unwrap();
        let back = import(
            &exported.weights,
            exported.scales.as_deref().map(str::as_bytes),
            exported.mins.as_deref().map(str::as_bytes),
        )
        .unwrap();
        assert_eq!(back.tensors, model.tensors, "{quant:?}");
    }
}

#[test]
fn missing_scales_are_quantization_corrupt() {
    let exported = export(&model().quantize(QuantType::Q4_1).unwrap()).unwrap();
    let error = import(
        &exported.weights,
        exported.scales.as_deref().map(str::as_bytes),
        None,
    )
    .unwrap_err();
    assert_eq!(error.signal(), envelope_core::Signal::QuantizationCorrupt);
}

#[test]
fn hostile_header_length_is_refused() {
    let mut bytes = u64::MAX.to_le_bytes().to_vec();
    bytes.extend_from_slice(b"{}");
    let error = import(&bytes, None, None).unwrap_err();
    assert_eq!(error.signal(), envelope_core::Signal::InvalidFormat);
}

/// Every file of `plan`, written with tensors fetched from `model`, by name.
fn write_all(plan: &Plan, model: &TensorModel) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for file in plan.files() {
        let mut bytes = Vec::new();
        file.write(&mut bytes, &mut |p| Ok(model.tensors[p].clone()))
            .unwrap();
        files.insert(file.name().to_owned(), bytes);
    }
    files
}

fn plan(model: &TensorModel, card: &ModelCard, options: &SafeTensorsOptions) -> Result<Plan> {
    Plan::new(&entries(model), card, options)
}

/// A card as a Hugging Face import leaves it: `config.json`, a tokenizer, and a name that is not
/// a kept file (which must never become a path).
fn hf_card(config: &str) -> ModelCard {
    let mut card = ModelCard::default();
    for (name, bytes) in [
        ("config.json", config.as_bytes()),
        ("tokenizer.json", b"{\"model\": {}}\n".as_slice()),
        ("../escape.json", b"{}".as_slice()),
    ] {
        card.source_files.0.insert(name.to_owned(), bytes.to_vec());
    }
    card
}

const F32_CONFIG: &str =
    "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"dtype\": \"float32\"\n}\n";

/// Hugging Face names in a checkpoint's (module) order.
fn hf_model() -> TensorModel {
    let values = |n: usize, k: f32| (0..n).map(|i| (i as f32 * k).sin()).collect::<Vec<f32>>();
    TensorModel::new(vec![
        Tensor::from_f32("model.embed_tokens.weight", vec![8, 32], &values(256, 0.3)).unwrap(),
        Tensor::from_f32(
            "model.layers.0.self_attn.q_proj.weight",
            vec![32, 32],
            &values(1024, 0.7),
        )
        .unwrap(),
        Tensor::from_f32("model.norm.weight", vec![32], &values(32, 1.1)).unwrap(),
        Tensor::from_f32("lm_head.weight", vec![8, 32], &values(256, 0.9)).unwrap(),
    ])
    .unwrap()
}

fn header_of(bytes: &[u8]) -> safetensors::tensor::Metadata {
    SafeTensors::read_metadata(bytes).unwrap().1
}

fn format_of(bytes: &[u8]) -> String {
    header_of(bytes).metadata().as_ref().unwrap()[FORMAT_KEY].clone()
}

#[test]
fn transformers_layout_writes_the_weights_config_and_kept_files() {
    let model = hf_model();
    let card = hf_card(F32_CONFIG);
    let plan = plan(&model, &card, &SafeTensorsOptions::default()).unwrap();
    assert_eq!(plan.layout(), Layout::Transformers);
    // The name that is not a kept file is not written.
    assert_eq!(
        plan.file_names().collect::<Vec<_>>(),
        ["model.safetensors", "config.json", "tokenizer.json"]
    );
    let files = write_all(&plan, &model);
    let weights = &files["model.safetensors"];
    let header = header_of(weights);
    assert_eq!(
        header.metadata().as_ref().unwrap(),
        &HashMap::from([("format".to_owned(), "pt".to_owned())])
    );
    // As `save_pretrained` orders them: one dtype, so by name.
    let mut names: Vec<String> = model.tensors.iter().map(|t| t.name.clone()).collect();
    names.sort();
    assert_eq!(header.offset_keys(), names);
    let file = SafeTensors::deserialize(weights).unwrap();
    for t in &model.tensors {
        let view = file.tensor(&t.name).unwrap();
        assert_eq!(view.data(), t.data(), "{}", t.name);
        assert_eq!(view.dtype(), Dtype::F32);
    }
    // Already says float32: kept byte for byte, as is the tokenizer.
    assert_eq!(files["config.json"], F32_CONFIG.as_bytes());
    assert_eq!(
        files["tokenizer.json"],
        card.source_files.get("tokenizer.json").unwrap()
    );
    // `apr import` of the exported file gives the tensors back (in file order).
    let back = import(weights, None, None).unwrap();
    for t in &model.tensors {
        assert_eq!(back.tensor(&t.name), Some(t));
    }
}

/// f32 → f16 / bf16 as `torch`'s `.to()` rounds (these bits are torch 2.11's): to nearest, ties
/// to even, overflow to infinity, underflow to zero.
#[test]
fn dtype_conversion_rounds_as_torch_does() {
    let values = [
        0.1,
        1.0,
        65520.0,
        1e-8,
        -2.5,
        f32::from_bits(0x3F80_8000),
        f32::from_bits(0x3F81_8000),
    ];
    let expected_f16: [u16; 7] = [0x2E66, 0x3C00, 0x7C00, 0x0000, 0xC100, 0x3C04, 0x3C0C];
    let expected_bf16: [u16; 7] = [0x3DCD, 0x3F80, 0x4780, 0x322C, 0xC020, 0x3F80, 0x3F82];
    let model = TensorModel::new(vec![Tensor::from_f32("w", vec![7], &values).unwrap()]).unwrap();
    for (dtype, expected, name) in [
        (FloatType::F16, expected_f16, "float16"),
        (FloatType::BF16, expected_bf16, "bfloat16"),
    ] {
        let options = SafeTensorsOptions {
            dtype: Some(dtype),
            ..SafeTensorsOptions::default()
        };
        let files = write_all(
            &plan(&model, &hf_card(F32_CONFIG), &options).unwrap(),
            &model,
        );
        let weights = &files["model.safetensors"];
        let file = SafeTensors::deserialize(weights).unwrap();
        let view = file.tensor("w").unwrap();
        let bits: Vec<u16> = view
            .data()
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect();
        assert_eq!(bits, expected, "{dtype:?}");
        // config.json now says the type written, under the key it had.
        let config: serde_json::Value = serde_json::from_slice(&files["config.json"]).unwrap();
        assert_eq!(config["dtype"], name);
        assert!(config.get("torch_dtype").is_none());
        assert_eq!(config["architectures"][0], "LlamaForCausalLM");
    }
}

#[test]
fn config_dtype_keys_are_set_or_added() {
    let both = br#"{"torch_dtype": "float32", "dtype": "float32", "x": 1e-05}"#;
    let out = config_with_dtype(both, Some(FloatType::BF16)).unwrap();
    let config: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(config["dtype"], "bfloat16");
    assert_eq!(config["torch_dtype"], "bfloat16");
    assert_eq!(config["x"], 1e-05);
    assert!(out.ends_with(b"}\n"));
    let neither = br#"{"model_type": "llama"}"#;
    let out = config_with_dtype(neither, Some(FloatType::F16)).unwrap();
    let config: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(config["torch_dtype"], "float16");
    assert_eq!(config_with_dtype(neither, None).unwrap(), neither);
    let error = config_with_dtype(b"[1]", Some(FloatType::F16)).unwrap_err();
    assert_eq!(error.signal(), envelope_core::Signal::InvalidFormat);
}

/// One Q8_0 block whose values are known: `d` = 0.5, `q[i]` = i - 16.
fn q8_0_block() -> Tensor {
    let mut data = f16::from_f32(0.5).to_le_bytes().to_vec();
    data.extend((-16i8..16).map(i8::cast_unsigned));
    Tensor::new("q", DType::Quantized(QuantType::Q8_0), vec![32], data).unwrap()
}

#[test]
fn quantized_tensors_are_dequantized_with_the_crate_dequantizers() {
    let values: Vec<f32> = (0..256).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
    let plain =
        TensorModel::new(vec![Tensor::from_f32("w", vec![8, 32], &values).unwrap()]).unwrap();
    let options = SafeTensorsOptions {
        dtype: Some(FloatType::F32),
        ..SafeTensorsOptions::default()
    };
    // Known answer.
    let known = TensorModel::new(vec![q8_0_block()]).unwrap();
    let files = write_all(
        &plan(&known, &hf_card(F32_CONFIG), &options).unwrap(),
        &known,
    );
    let file = SafeTensors::deserialize(&files["model.safetensors"]).unwrap();
    let got: Vec<f32> = file
        .tensor("q")
        .unwrap()
        .data()
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let expected: Vec<f32> = (0..32).map(|i| 0.5 * (i - 16) as f32).collect();
    assert_eq!(got, expected);
    // Every built-in type, against `Tensor::to_f32`.
    for quant in [
        QuantType::Q8_0,
        QuantType::Q4_0,
        QuantType::Q4_1,
        QuantType::Q8Tensor,
    ] {
        let model = plain.quantize(quant).unwrap();
        for dtype in [FloatType::F32, FloatType::F16, FloatType::BF16] {
            let options = SafeTensorsOptions {
                dtype: Some(dtype),
                ..SafeTensorsOptions::default()
            };
            let files = write_all(
                &plan(&model, &hf_card(F32_CONFIG), &options).unwrap(),
                &model,
            );
            let file = SafeTensors::deserialize(&files["model.safetensors"]).unwrap();
            let view = file.tensor("w").unwrap();
            assert_eq!(view.dtype(), dtype.safetensors());
            assert_eq!(view.shape(), [8, 32]);
            let expected = dtype.encode(&model.tensors[0].to_f32().unwrap());
            assert_eq!(view.data(), expected, "{quant:?} → {dtype:?}");
        }
    }
}

#[test]
fn quantized_model_with_config_is_refused_without_a_float_type() {
    let model = hf_model().quantize(QuantType::Q8_0).unwrap();
    let error = plan(&model, &hf_card(F32_CONFIG), &SafeTensorsOptions::default()).unwrap_err();
    let Error::ExportFailed { tensor, .. } = &error else {
        panic!("{error}");
    };
    let first_quantized = model
        .tensors
        .iter()
        .find(|t| t.dtype.is_quantized())
        .unwrap();
    assert_eq!(tensor, &first_quantized.name);
    assert!(error.to_string().contains("--dtype"), "{error}");
    assert!(error.is_operation_failure());
}

#[test]
fn raw_quantized_form_is_marked_so_transformers_refuses_it_and_imports_back() {
    let model = hf_model().quantize(QuantType::Q4_1).unwrap();
    let options = SafeTensorsOptions {
        raw_quantized: true,
        ..SafeTensorsOptions::default()
    };
    let plan = plan(&model, &hf_card(F32_CONFIG), &options).unwrap();
    assert_eq!(plan.layout(), Layout::Spec);
    // No config.json: the int8 form is never a model directory.
    assert_eq!(
        plan.file_names().collect::<Vec<_>>(),
        ["weights.safetensors", "scales.json", "mins.json"]
    );
    let files = write_all(&plan, &model);
    let weights = &files["weights.safetensors"];
    assert_eq!(format_of(weights), QUANTIZED_FORMAT);
    let back = import(
        weights,
        Some(&files["scales.json"]),
        Some(&files["mins.json"]),
    )
    .unwrap();
    assert_eq!(back.tensors, model.tensors);
    // A quantized model with config.json but nothing left quantized after --dtype is a
    // transformers directory whatever raw_quantized says.
    let options = SafeTensorsOptions {
        dtype: Some(FloatType::F16),
        raw_quantized: true,
        ..SafeTensorsOptions::default()
    };
    let converted = Plan::new(&entries(&model), &hf_card(F32_CONFIG), &options).unwrap();
    assert_eq!(converted.layout(), Layout::Transformers);
}

#[test]
fn spec_layout_says_pt_unless_it_holds_int8_forms() {
    let plain = export(&model()).unwrap();
    assert_eq!(format_of(&plain.weights), TORCH_FORMAT);
    for quant in [QuantType::Q8_0, QuantType::Q4_0, QuantType::Q8Tensor] {
        let exported = export(&model().quantize(quant).unwrap()).unwrap();
        assert_eq!(format_of(&exported.weights), QUANTIZED_FORMAT, "{quant:?}");
    }
    // --dtype dequantizes a model without config.json too: plain floats, `pt`.
    let quantized = model().quantize(QuantType::Q8_0).unwrap();
    let options = SafeTensorsOptions {
        dtype: Some(FloatType::F32),
        ..SafeTensorsOptions::default()
    };
    let files = write_all(
        &plan(&quantized, &ModelCard::default(), &options).unwrap(),
        &quantized,
    );
    assert_eq!(files.keys().collect::<Vec<_>>(), ["weights.safetensors"]);
    assert_eq!(format_of(&files["weights.safetensors"]), TORCH_FORMAT);
}

#[test]
fn shards_split_as_save_pretrained_does() {
    let values = vec![0.25f32; 1024];
    let t = |name: &str, n: usize| Tensor::from_f32(name, vec![n as u64], &values[..n]).unwrap();
    // 1024-byte tensors and one of 4096 bytes, with a 2048-byte limit: `a` and `b` fill a
    // shard; `big` is over the limit by itself, so it is a shard at once (before a+b, as
    // huggingface_hub orders them); `c` would tip a+b over, so it starts the last.
    let model =
        TensorModel::new(vec![t("a", 256), t("b", 256), t("big", 1024), t("c", 256)]).unwrap();
    let options = SafeTensorsOptions {
        max_shard_size: 2048,
        ..SafeTensorsOptions::default()
    };
    let plan = plan(&model, &hf_card(F32_CONFIG), &options).unwrap();
    let files = write_all(&plan, &model);
    let shards = [
        "model-00001-of-00003.safetensors",
        "model-00002-of-00003.safetensors",
        "model-00003-of-00003.safetensors",
    ];
    for name in shards {
        assert!(is_export_file(name));
        assert_eq!(format_of(&files[name]), "pt");
    }
    let keys = |name: &str| header_of(&files[name]).offset_keys();
    assert_eq!(keys(shards[0]), ["big"]);
    assert_eq!(keys(shards[1]), ["a", "b"]);
    assert_eq!(keys(shards[2]), ["c"]);
    assert!(!files.contains_key("model.safetensors"));
    let index: serde_json::Value = serde_json::from_slice(&files[HF_INDEX]).unwrap();
    assert_eq!(
        index,
        serde_json::json!({
            "metadata": {"total_parameters": 1792, "total_size": 7168},
            "weight_map": {"a": shards[1], "b": shards[1], "big": shards[0], "c": shards[2]},
        })
    );
    // The index is written as `json.dumps(index, indent=2, sort_keys=True) + "\n"`.
    let text = String::from_utf8(files[HF_INDEX].clone()).unwrap();
    assert!(text.starts_with("{\n  \"metadata\": {\n    \"total_parameters\": 1792,"));
    assert!(text.ends_with("}\n"));
}

#[test]
fn export_files_are_recognised_by_name() {
    for name in [
        "model.safetensors",
        "model-00002-of-00010.safetensors",
        "model.safetensors.index.json",
        "weights.safetensors",
        "scales.json",
        "tokenizer.model",
    ] {
        assert!(is_export_file(name), "{name}");
    }
    for name in [
        "model-2-of-10.safetensors",
        "model-0000a-of-00010.safetensors",
        "notes.txt",
        "../config.json",
    ] {
        assert!(!is_export_file(name), "{name}");
    }
}

/// Memory holds one tensor: each is fetched once per file that needs it, and a fetched tensor
/// that is not the planned one is refused.
#[test]
fn each_tensor_is_fetched_once_and_checked() {
    let model = hf_model().quantize(QuantType::Q8_0).unwrap();
    let options = SafeTensorsOptions {
        dtype: Some(FloatType::BF16),
        ..SafeTensorsOptions::default()
    };
    let plan = plan(&model, &hf_card(F32_CONFIG), &options).unwrap();
    let mut fetched = vec![0; model.tensors.len()];
    let mut sink = Vec::new();
    let weights = plan.files().next().unwrap();
    weights
        .write(&mut sink, &mut |p| {
            fetched[p] += 1;
            Ok(model.tensors[p].clone())
        })
        .unwrap();
    assert_eq!(fetched, vec![1; model.tensors.len()]);
    let error = weights
        .write(&mut sink, &mut |_| Ok(model.tensors[0].clone()))
        .unwrap_err();
    assert!(
        matches!(error, Error::FetchedTensorDiffers { .. }),
        "{error}"
    );
}

#[test]
fn the_same_model_gives_the_same_bytes() {
    let model = model().quantize(QuantType::Q8Tensor).unwrap();
    let first = export(&model).unwrap();
    for _ in 0..8 {
        assert_eq!(export(&model).unwrap(), first);
    }
}

#[test]
fn tensors_safetensors_cannot_hold_are_refused_by_name() {
    let custom = Tensor::new(
        "p",
        DType::Quantized(QuantType::Custom),
        vec![4],
        vec![0; 3],
    )
    .unwrap();
    let odd = Tensor::new(
        "odd",
        DType::Quantized(QuantType::Q4_0),
        vec![32, 3],
        vec![0; 54],
    )
    .unwrap();
    for t in [custom, odd] {
        let model = TensorModel::new(vec![t.clone()]).unwrap();
        let error = export(&model).unwrap_err();
        assert!(
            matches!(&error, Error::ExportFailed { tensor, .. } if *tensor == t.name),
            "{error}"
        );
    }
}

proptest! {
    /// Whatever the sizes and the limit: every tensor is in exactly one shard, the index says
    /// which and counts every byte, and a shard passes the limit only when it is one tensor.
    #[test]
    fn shards_hold_every_tensor_once_within_the_limit(
        sizes in proptest::collection::vec(1usize..64, 1..12),
        limit in 1u64..512,
    ) {
        let tensors = sizes
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                Tensor::from_f32(format!("t{i:02}"), vec![n as u64], &vec![1.0; n]).unwrap()
            })
            .collect();
        let model = TensorModel::new(tensors).unwrap();
        let options = SafeTensorsOptions { max_shard_size: limit, ..SafeTensorsOptions::default() };
        let files = write_all(&plan(&model, &hf_card(F32_CONFIG), &options).unwrap(), &model);
        let shards: Vec<&String> = files.keys().filter(|n| n.ends_with(".safetensors")).collect();
        let mut seen = Vec::new();
        for name in &shards {
            let header = header_of(&files[*name]);
            let keys = header.offset_keys();
            let bytes = header.data_len() as u64;
            prop_assert!(bytes <= limit || keys.len() == 1, "{name}: {bytes} bytes");
            seen.extend(keys);
        }
        let names: Vec<String> = model.tensors.iter().map(|t| t.name.clone()).collect();
        seen.sort();
        prop_assert_eq!(&seen, &names);
        if shards.len() > 1 {
            let index: serde_json::Value = serde_json::from_slice(&files[HF_INDEX]).unwrap();
            for name in &names {
                let shard = index["weight_map"][name].as_str().unwrap();
                prop_assert!(header_of(&files[shard]).offset_keys().contains(name));
            }
            let total: usize = sizes.iter().map(|n| n * 4).sum();
            prop_assert_eq!(index["metadata"]["total_size"].as_u64(), Some(total as u64));
        } else {
            prop_assert_eq!(shards, [&HF_WEIGHTS.to_owned()]);
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = import(&bytes, None, None);
    }

    #[test]
    fn mutated_files_never_panic(at in 0usize..400, byte in any::<u8>()) {
        let mut exported = export(&model()).unwrap().weights;
        let at = at % exported.len();
        exported[at] = byte;
        let _ = import(&exported, None, None);
    }
}
