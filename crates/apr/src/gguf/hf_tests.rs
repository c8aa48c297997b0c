//! Tests of GGUF export for Hugging Face models with hand-built source files: a tiny
//! SentencePiece `tokenizer.model` (encoded with the prost structs), a tiny byte-level BPE
//! `tokenizer.json`, configs; the written file read back by a small GGUF reader.

use std::collections::BTreeMap;

use prost::Message;

use super::sentencepiece::{self, ModelProto, SentencePiece};
use super::*;
use crate::card::SourceFiles;

/// A parsed GGUF value.
#[derive(Debug, Clone, PartialEq)]
enum Read {
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    Str(String),
    Strs(Vec<String>),
    F32s(Vec<f32>),
    I32s(Vec<i32>),
    Other,
}

struct Gguf {
    kv: Vec<(String, Read)>,
    tensors: BTreeMap<String, (u32, Vec<u64>, Vec<u8>)>,
}

impl Gguf {
    fn get(&self, key: &str) -> Option<&Read> {
        self.kv.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

fn read_gguf(bytes: &[u8]) -> Gguf {
    let mut at = 8usize;
    let u32_ = |at: &mut usize| {
        let v = u32::from_le_bytes(bytes[*at..*at + 4].try_into().unwrap());
        *at += 4;
        v
    };
    let u64_ = |at: &mut usize| {
        let v = u64::from_le_bytes(bytes[*at..*at + 8].try_into().unwrap());
        *at += 8;
        v
    };
    let string = |at: &mut usize| {
        let n = usize::try_from(u64_(at)).unwrap();
        let s = String::from_utf8(bytes[*at..*at + n].to_vec()).unwrap();
        *at += n;
        s
    };
    let n_tensors = u64_(&mut at);
    let n_kv = u64_(&mut at);
    let mut kv = Vec::new();
    for _ in 0..n_kv {
        let key = string(&mut at);
        let ty = u32_(&mut at);
        let value = match ty {
            4 => Read::U32(u32_(&mut at)),
            5 => Read::I32(u32_(&mut at).cast_signed()),
            6 => Read::F32(f32::from_bits(u32_(&mut at))),
            7 => {
                at += 1;
                Read::Bool(bytes[at - 1] != 0)
            }
            8 => Read::Str(string(&mut at)),
            9 => {
                let item = u32_(&mut at);
                let n = u64_(&mut at);
                match item {
                    8 => Read::Strs((0..n).map(|_| string(&mut at)).collect()),
                    6 => Read::F32s((0..n).map(|_| f32::from_bits(u32_(&mut at))).collect()),
                    5 => Read::I32s((0..n).map(|_| u32_(&mut at).cast_signed()).collect()),
                    other => panic!("array of {other}"),
                }
            }
            2 => {
                at += 2;
                Read::Other
            }
            other => panic!("type {other}"),
        };
        kv.push((key, value));
    }
    let mut infos = Vec::new();
    for _ in 0..n_tensors {
        let name = string(&mut at);
        let n_dims = u32_(&mut at);
        let dims: Vec<u64> = (0..n_dims).map(|_| u64_(&mut at)).collect();
        let ty = u32_(&mut at);
        let offset = u64_(&mut at);
        infos.push((name, dims, ty, offset));
    }
    let data_start = at.next_multiple_of(32);
    let mut tensors = BTreeMap::new();
    for (i, (name, dims, ty, offset)) in infos.iter().enumerate() {
        let start = data_start + usize::try_from(*offset).unwrap();
        let end = infos.get(i + 1).map_or(bytes.len(), |next| {
            data_start + usize::try_from(next.3).unwrap()
        });
        tensors.insert(
            name.clone(),
            (*ty, dims.clone(), bytes[start..end].to_vec()),
        );
    }
    Gguf { kv, tensors }
}

fn spm_model() -> Vec<u8> {
    let piece = |p: &str, s: f32, t: i32| SentencePiece {
        piece: Some(p.to_owned()),
        score: Some(s),
        r#type: Some(t),
    };
    ModelProto {
        pieces: vec![
            piece("<unk>", 0.0, sentencepiece::UNKNOWN),
            piece("<s>", 0.0, sentencepiece::CONTROL),
            piece("</s>", 0.0, sentencepiece::CONTROL),
            piece("<0x0A>", 0.0, sentencepiece::BYTE),
            piece("▁hello", -1.0, sentencepiece::NORMAL),
            piece("▁world", -2.0, sentencepiece::USER_DEFINED),
        ],
    }
    .encode_to_vec()
}

fn llama_config(extra: &str) -> String {
    format!(
        r#"{{"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 64,
            "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
            "vocab_size": 8, "bos_token_id": 1, "eos_token_id": 2, "rms_norm_eps": 1e-5{extra}}}"#
    )
}

fn files(list: &[(&str, &[u8])]) -> SourceFiles {
    SourceFiles(
        list.iter()
            .map(|(n, b)| ((*n).to_owned(), b.to_vec()))
            .collect(),
    )
}

fn llama_files(config: &str) -> SourceFiles {
    let model = spm_model();
    files(&[
        ("config.json", config.as_bytes()),
        ("tokenizer.model", &model),
        (
            "tokenizer_config.json",
            br#"{"add_bos_token": true, "add_eos_token": false, "bos_token": "<s>",
                "add_prefix_space": true,
                "added_tokens_decoder": {"6": {"content": "<|im_end|>", "special": false},
                                         "7": {"content": "my\u2581word", "special": false}}}"#,
        ),
        ("chat_template.jinja", b"{{ messages }}"),
        (
            "generation_config.json",
            br#"{"temperature": 0.6, "top_p": 0.9, "top_k": 40}"#,
        ),
    ])
}

/// A llama model of one layer (hidden 64, 4 heads, 2 KV heads) with `lm_head` or without.
fn llama_model(lm_head: bool) -> TensorModel {
    let t = |name: &str, shape: Vec<u64>| {
        let n = usize::try_from(shape.iter().product::<u64>()).unwrap();
        let values: Vec<f32> = (0..n).map(|i| i as f32 / 64.0).collect();
        Tensor::from_f32(name, shape, &values).unwrap()
    };
    let mut tensors = vec![
        t("model.embed_tokens.weight", vec![8, 64]),
        t("model.layers.0.input_layernorm.weight", vec![64]),
        t("model.layers.0.self_attn.q_proj.weight", vec![64, 64]),
        t("model.layers.0.self_attn.k_proj.weight", vec![32, 64]),
        t("model.layers.0.self_attn.v_proj.weight", vec![32, 64]),
        t("model.layers.0.self_attn.o_proj.weight", vec![64, 64]),
        t("model.layers.0.self_attn.rotary_emb.inv_freq", vec![8]),
        t("model.layers.0.mlp.gate_proj.weight", vec![64, 64]),
        t("model.layers.0.mlp.up_proj.weight", vec![64, 64]),
        t("model.layers.0.mlp.down_proj.weight", vec![64, 64]),
        t("model.norm.weight", vec![64]),
    ];
    // A norm saved in F16: written as F32.
    let f16: Vec<u8> = (0..64)
        .flat_map(|i| half::f16::from_f32(i as f32).to_le_bytes())
        .collect();
    tensors.push(
        Tensor::new(
            "model.layers.0.post_attention_layernorm.weight",
            DType::F16,
            vec![64],
            f16,
        )
        .unwrap(),
    );
    if lm_head {
        tensors.push(t("lm_head.weight", vec![8, 64]));
    }
    TensorModel::new(tensors).unwrap()
}

fn card(files: SourceFiles) -> ModelCard {
    ModelCard {
        name: "tiny".into(),
        source_files: files,
        ..ModelCard::default()
    }
}

fn export(model: &TensorModel, files: SourceFiles) -> Result<Gguf> {
    to_bytes(
        model,
        ModelType::NeuralCustom,
        &card(files),
        &GgufOptions::default(),
    )
    .map(|b| read_gguf(&b))
}

#[test]
fn llama_with_sentencepiece_is_written_as_the_converter_writes_it() {
    let g = export(&llama_model(true), llama_files(&llama_config(""))).unwrap();
    let keys: Vec<&str> = g.kv.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        &keys[..6],
        [
            "general.architecture",
            "general.type",
            "general.sampling.top_k",
            "general.sampling.top_p",
            "general.sampling.temp",
            "general.name"
        ]
    );
    let expect = [
        ("general.architecture", Read::Str("llama".into())),
        ("general.type", Read::Str("model".into())),
        ("general.sampling.top_k", Read::I32(40)),
        ("general.sampling.temp", Read::F32(0.6)),
        ("llama.block_count", Read::U32(1)),
        ("llama.context_length", Read::U32(2048)),
        ("llama.embedding_length", Read::U32(64)),
        ("llama.feed_forward_length", Read::U32(64)),
        ("llama.attention.head_count", Read::U32(4)),
        ("llama.attention.head_count_kv", Read::U32(2)),
        ("llama.rope.freq_base", Read::F32(10000.0)),
        ("llama.attention.layer_norm_rms_epsilon", Read::F32(1e-5)),
        ("llama.attention.key_length", Read::U32(16)),
        ("llama.attention.value_length", Read::U32(16)),
        ("general.file_type", Read::U32(0)),
        ("llama.vocab_size", Read::U32(8)),
        ("llama.rope.dimension_count", Read::U32(16)),
        ("general.quantization_version", Read::U32(2)),
        ("tokenizer.ggml.add_space_prefix", Read::Bool(true)),
        ("tokenizer.ggml.model", Read::Str("llama".into())),
        ("tokenizer.ggml.pre", Read::Str("default".into())),
        ("tokenizer.ggml.bos_token_id", Read::U32(1)),
        ("tokenizer.ggml.eos_token_id", Read::U32(2)),
        ("tokenizer.ggml.add_bos_token", Read::Bool(true)),
        ("tokenizer.ggml.add_eos_token", Read::Bool(false)),
        (
            "tokenizer.chat_template",
            Read::Str("{{ messages }}".into()),
        ),
    ];
    for (key, value) in expect {
        assert_eq!(g.get(key), Some(&value), "{key}");
    }
    assert_eq!(
        g.get("tokenizer.ggml.tokens"),
        Some(&Read::Strs(
            [
                "<unk>",
                "<s>",
                "</s>",
                "<0x0A>",
                "▁hello",
                "▁world",
                "<|im_end|>",
                "my word"
            ]
            .map(String::from)
            .to_vec()
        ))
    );
    // UNKNOWN, CONTROL, CONTROL, BYTE, NORMAL, a USER_DEFINED piece as NORMAL; the added tokens:
    // `<|im_end|>` looks special (CONTROL), `my▁word` is USER_DEFINED with its ▁ a space.
    assert_eq!(
        g.get("tokenizer.ggml.token_type"),
        Some(&Read::I32s(vec![2, 3, 3, 6, 1, 1, 3, 4]))
    );
    assert_eq!(
        g.get("tokenizer.ggml.scores"),
        Some(&Read::F32s(vec![
            0.0, 0.0, 0.0, 0.0, -1.0, -2.0, -1000.0, -1000.0
        ]))
    );
    assert!(g.get("general.alignment").is_none());
    assert!(g.get("apr.model_type").is_none());

    // Tensors: GGUF names, inv_freq dropped, the F16 norm widened to F32, Q permuted by 4
    // heads and K by 2.
    let names: Vec<&str> = g.tensors.keys().map(String::as_str).collect();
    assert_eq!(names.len(), 12);
    assert!(names.contains(&"blk.0.attn_q.weight") && names.contains(&"output.weight"));
    assert!(
        !names
            .iter()
            .any(|n| n.contains("inv_freq") || n.contains("rot_embd"))
    );
    let (ty, dims, data) = &g.tensors["blk.0.ffn_norm.weight"];
    assert_eq!((*ty, dims.as_slice()), (0, &[64u64][..]));
    assert_eq!(
        f32::from_le_bytes(data[4 * 5..4 * 6].try_into().unwrap()),
        5.0
    );
    let model = llama_model(true);
    for (hf, gguf, heads) in [
        (
            "model.layers.0.self_attn.q_proj.weight",
            "blk.0.attn_q.weight",
            4,
        ),
        (
            "model.layers.0.self_attn.k_proj.weight",
            "blk.0.attn_k.weight",
            2,
        ),
    ] {
        let source = model.tensors.iter().find(|t| t.name == hf).unwrap();
        let rows = usize::try_from(source.shape[0]).unwrap();
        let expected = arch::permute_rows(source.data(), rows, heads).unwrap();
        assert_eq!(
            &g.tensors[gguf].2[..expected.len()],
            expected.as_slice(),
            "{hf}"
        );
        assert_ne!(expected.as_slice(), source.data());
    }
    let v = &g.tensors["blk.0.attn_v.weight"].2;
    let source = model
        .tensors
        .iter()
        .find(|t| t.name == "model.layers.0.self_attn.v_proj.weight")
        .unwrap();
    assert_eq!(
        &v[..source.data().len()],
        source.data(),
        "V is not permuted"
    );
}

#[test]
fn quantized_q_rows_are_permuted_as_blocks() {
    let model = llama_model(false).quantize(QuantType::Q8_0).unwrap();
    let g = export(&model, llama_files(&llama_config(""))).unwrap();
    assert_eq!(g.get("general.file_type"), Some(&Read::U32(7)));
    assert!(!g.tensors.contains_key("output.weight"), "tied embeddings");
    let q = model
        .tensors
        .iter()
        .find(|t| t.name == "model.layers.0.self_attn.q_proj.weight")
        .unwrap();
    let expected = arch::permute_rows(q.data(), 64, 4).unwrap();
    let (ty, _, data) = &g.tensors["blk.0.attn_q.weight"];
    assert_eq!(*ty, GgmlType::Q8_0 as u32);
    assert_eq!(&data[..expected.len()], expected.as_slice());
    // The norms stay F32.
    assert_eq!(g.tensors["blk.0.attn_norm.weight"].0, 0);
}

fn bpe_tokenizer(pre_regex: &str, post: &str) -> String {
    let pre = serde_json::json!({
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pre_regex}, "behavior": "Isolated", "invert": false},
            {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false}
        ]
    });
    format!(
        r#"{{"version": "1.0",
            "added_tokens": [
              {{"id": 5, "content": "<|endoftext|>", "special": true, "normalized": false}},
              {{"id": 6, "content": "<|im_end|>", "special": true, "normalized": false}}],
            "normalizer": {{"type": "NFC"}},
            "pre_tokenizer": {pre},
            "post_processor": {post},
            "decoder": {{"type": "ByteLevel"}},
            "model": {{"type": "BPE", "vocab": {{"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġab": 4}},
                       "merges": [["a", "b"], ["Ġ", "ab"], ["a b", "c"]]}}}}"#
    )
}

const QWEN_CONFIG: &str = r#"{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64,
    "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
    "num_key_value_heads": 2, "vocab_size": 9, "eos_token_id": 6, "tie_word_embeddings": true}"#;

fn qwen_files(tokenizer: &str) -> SourceFiles {
    files(&[
        ("config.json", QWEN_CONFIG.as_bytes()),
        ("tokenizer.json", tokenizer.as_bytes()),
        (
            "tokenizer_config.json",
            br#"{"bos_token": null, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
                "chat_template": "{% for m in messages %}{{ m }}{% endfor %}"}"#,
        ),
    ])
}

fn qwen_model() -> TensorModel {
    let t = |name: &str, shape: Vec<u64>| {
        let n = usize::try_from(shape.iter().product::<u64>()).unwrap();
        Tensor::from_f32(name, shape, &vec![0.25; n]).unwrap()
    };
    TensorModel::new(vec![
        t("model.embed_tokens.weight", vec![9, 64]),
        t("model.layers.0.self_attn.q_proj.weight", vec![64, 64]),
        t("model.layers.0.self_attn.q_proj.bias", vec![64]),
        t("model.norm.weight", vec![64]),
    ])
    .unwrap()
}

#[test]
fn qwen2_with_bpe_is_written_as_the_converter_writes_it() {
    let tokenizer = bpe_tokenizer(vocab::QWEN2_SPLIT, r#"{"type": "ByteLevel"}"#);
    let g = export(&qwen_model(), qwen_files(&tokenizer)).unwrap();
    for (key, value) in [
        ("general.architecture", Read::Str("qwen2".into())),
        ("qwen2.attention.head_count_kv", Read::U32(2)),
        ("qwen2.context_length", Read::U32(32768)),
        ("qwen2.attention.layer_norm_rms_epsilon", Read::F32(1e-6)),
        ("tokenizer.ggml.model", Read::Str("gpt2".into())),
        ("tokenizer.ggml.pre", Read::Str("qwen2".into())),
        ("tokenizer.ggml.eos_token_id", Read::U32(6)),
        ("tokenizer.ggml.padding_token_id", Read::U32(5)),
        ("tokenizer.ggml.add_bos_token", Read::Bool(false)),
        ("tokenizer.ggml.add_eos_token", Read::Bool(false)),
    ] {
        assert_eq!(g.get(key), Some(&value), "{key}");
    }
    // qwen2 writes neither vocab_size, rope.dimension_count nor key_length (no head_dim).
    for absent in [
        "qwen2.vocab_size",
        "qwen2.rope.dimension_count",
        "qwen2.attention.key_length",
        "tokenizer.ggml.bos_token_id",
        "tokenizer.ggml.scores",
    ] {
        assert!(g.get(absent).is_none(), "{absent}");
    }
    assert_eq!(
        g.get("tokenizer.ggml.tokens"),
        Some(&Read::Strs(
            [
                "a",
                "b",
                "ab",
                "Ġ",
                "Ġab",
                "<|endoftext|>",
                "<|im_end|>",
                "[PAD7]",
                "[PAD8]"
            ]
            .map(String::from)
            .to_vec()
        ))
    );
    assert_eq!(
        g.get("tokenizer.ggml.token_type"),
        Some(&Read::I32s(vec![1, 1, 1, 1, 1, 3, 3, 5, 5]))
    );
    assert_eq!(
        g.get("tokenizer.ggml.merges"),
        Some(&Read::Strs(
            ["a b", "Ġ ab", "aĠb c"].map(String::from).to_vec()
        ))
    );
    // qwen2: no permutation; the bias is F32 as it is.
    let q = &g.tensors["blk.0.attn_q.weight"].2;
    assert!(
        q[..64 * 64 * 4]
            .chunks(4)
            .all(|c| c == 0.25f32.to_le_bytes())
    );
    assert_eq!(g.tensors["blk.0.attn_q.bias"].0, 0);
    assert!(!g.tensors.contains_key("output.weight"));
}

#[test]
fn llama3_template_processing_sets_add_bos_and_add_sep() {
    let post = r#"{"type": "Sequence", "processors": [
        {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
        {"type": "TemplateProcessing",
         "single": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                    {"Sequence": {"id": "A", "type_id": 0}}],
         "pair": [{"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
                  {"Sequence": {"id": "A", "type_id": 0}},
                  {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 1}},
                  {"Sequence": {"id": "B", "type_id": 1}}],
         "special_tokens": {}}]}"#;
    let tokenizer =
        bpe_tokenizer(vocab::LLAMA3_SPLIT, post).replace("<|endoftext|>", "<|begin_of_text|>");
    let config = r#"{"architectures": ["LlamaForCausalLM"], "hidden_size": 64,
        "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 7}"#;
    let files = files(&[
        ("config.json", config.as_bytes()),
        ("tokenizer.json", tokenizer.as_bytes()),
        (
            "tokenizer_config.json",
            br#"{"bos_token": "<|begin_of_text|>", "eos_token": "<|im_end|>"}"#,
        ),
    ]);
    let g = export(&qwen_model_for_llama(), files).unwrap();
    for (key, value) in [
        ("tokenizer.ggml.pre", Read::Str("llama-bpe".into())),
        ("tokenizer.ggml.bos_token_id", Read::U32(5)),
        ("tokenizer.ggml.eos_token_id", Read::U32(6)),
        ("tokenizer.ggml.add_bos_token", Read::Bool(true)),
        ("tokenizer.ggml.add_eos_token", Read::Bool(false)),
        ("tokenizer.ggml.add_sep_token", Read::Bool(false)),
        ("llama.vocab_size", Read::U32(7)),
    ] {
        assert_eq!(g.get(key), Some(&value), "{key}");
    }
}

fn qwen_model_for_llama() -> TensorModel {
    let t = |name: &str, shape: Vec<u64>| {
        let n = usize::try_from(shape.iter().product::<u64>()).unwrap();
        Tensor::from_f32(name, shape, &vec![0.5; n]).unwrap()
    };
    TensorModel::new(vec![
        t("model.embed_tokens.weight", vec![7, 64]),
        t("model.norm.weight", vec![64]),
    ])
    .unwrap()
}

#[track_caller]
fn refused(result: Result<Gguf>, needle: &str) {
    let Err(error) = result else {
        panic!("not refused: {needle}");
    };
    let message = error.to_string();
    assert!(message.starts_with("Usage: ExportFailed"), "{message}");
    assert!(message.contains(needle), "{message} lacks {needle}");
    assert!(error.is_operation_failure(), "{message}");
}

#[test]
fn what_the_exporter_does_not_know_is_refused_naming_it() {
    let m = llama_model(true);
    let with = |config: &str| llama_files(config);
    refused(
        export(&m, with(r#"{"architectures": ["GPTNeoXForCausalLM"]}"#)),
        "GPTNeoXForCausalLM",
    );
    refused(export(&m, with(r#"{"hidden_size": 64}"#)), "architectures");
    refused(
        export(&m, with(&llama_config(r#", "num_local_experts": 8"#))),
        "num_local_experts",
    );
    refused(
        export(
            &m,
            with(&llama_config(
                r#", "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}"#,
            )),
        ),
        "dynamic",
    );
    refused(
        export(
            &m,
            with(&llama_config(
                r#", "rope_scaling": {"rope_type": "yarn", "factor": 2.0}"#,
            )),
        ),
        "original_max_position_embeddings",
    );
    let no_tokenizer = files(&[("config.json", llama_config("").as_bytes())]);
    refused(export(&m, no_tokenizer), "tokenizer.model");
    let unknown_pre = bpe_tokenizer(r"\s+", r#"{"type": "ByteLevel"}"#);
    refused(
        export(&qwen_model(), qwen_files(&unknown_pre)),
        "pre_tokenizer",
    );
    // A tensor the map does not know, and one past num_hidden_layers.
    for name in [
        "model.layers.0.mlp.experts.0.w1.weight",
        "model.layers.1.mlp.up_proj.weight",
    ] {
        let mut tensors = llama_model(true).tensors;
        tensors.push(Tensor::from_f32(name, vec![32], &[0.0; 32]).unwrap());
        refused(
            export(&TensorModel::new(tensors).unwrap(), with(&llama_config(""))),
            name,
        );
    }
    // Q8_TENSOR has no llama.cpp kernel.
    let q8t = llama_model(true).quantize(QuantType::Q8Tensor).unwrap();
    refused(export(&q8t, with(&llama_config(""))), "llama.cpp");
    // A different --architecture.
    let options = GgufOptions {
        architecture: Some("qwen2".into()),
        ..GgufOptions::default()
    };
    let error = to_bytes(
        &m,
        ModelType::NeuralCustom,
        &card(with(&llama_config(""))),
        &options,
    )
    .unwrap_err();
    assert!(
        error.to_string().contains("--architecture qwen2"),
        "{error}"
    );
    // The same value is accepted.
    let options = GgufOptions {
        architecture: Some("llama".into()),
        ..GgufOptions::default()
    };
    to_bytes(
        &m,
        ModelType::NeuralCustom,
        &card(with(&llama_config(""))),
        &options,
    )
    .unwrap();
    // A config.json that is not JSON keeps serde_json's error.
    let error = export(&m, with("{not json")).err().unwrap();
    assert!(
        matches!(error, Error::ExportSourceMalformed { .. }),
        "{error}"
    );
    assert!(std::error::Error::source(&error).is_some());
}

#[test]
fn llama3_rope_scaling_adds_rope_freqs_first() {
    let config = llama_config(
        r#", "rope_theta": 500000.0, "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
            "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64}"#,
    );
    let bytes = to_bytes(
        &llama_model(true),
        ModelType::NeuralCustom,
        &card(llama_files(&config)),
        &GgufOptions::default(),
    )
    .unwrap();
    let g = read_gguf(&bytes);
    let (ty, dims, data) = &g.tensors["rope_freqs.weight"];
    assert_eq!((*ty, dims.as_slice()), (0, &[8u64][..]));
    assert_eq!(f32::from_le_bytes(data[..4].try_into().unwrap()), 1.0);
    assert!(g.get("llama.rope.scaling.type").is_none());
    // Linear scaling writes its two keys instead.
    let config = llama_config(r#", "rope_scaling": {"type": "linear", "factor": 2.0}"#);
    let g = export(&llama_model(true), llama_files(&config)).unwrap();
    assert_eq!(
        g.get("llama.rope.scaling.type"),
        Some(&Read::Str("linear".into()))
    );
    assert_eq!(g.get("llama.rope.scaling.factor"), Some(&Read::F32(2.0)));
}

#[test]
fn a_model_without_config_json_keeps_the_generic_export() {
    let g = read_gguf(
        &to_bytes(
            &llama_model(true),
            ModelType::NeuralCustom,
            &ModelCard::default(),
            &GgufOptions::default(),
        )
        .unwrap(),
    );
    assert!(
        g.tensors
            .contains_key("model.layers.0.self_attn.q_proj.weight")
    );
    assert!(g.get("apr.model_type").is_some());
}

/// gguf-py's own reader (`$INTEROP_PYTHON` has the `gguf` package) reads the exported llama and
/// qwen2 files back: every key with its type, every tensor with its type and shape.
#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
#[cfg(all(feature = "fs", not(target_arch = "wasm32")))]
fn gguf_py_reads_the_hugging_face_exports_back() {
    let python = std::env::var("INTEROP_PYTHON").expect("INTEROP_PYTHON");
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = bpe_tokenizer(vocab::QWEN2_SPLIT, r#"{"type": "ByteLevel"}"#);
    let llama = llama_model(true).quantize(QuantType::Q8_0).unwrap();
    for (name, model, files) in [
        ("llama", &llama, llama_files(&llama_config(""))),
        ("qwen2", &qwen_model(), qwen_files(&tokenizer)),
    ] {
        let bytes = to_bytes(
            model,
            ModelType::NeuralCustom,
            &card(files),
            &GgufOptions::default(),
        )
        .unwrap();
        let path = dir.path().join(format!("{name}.gguf"));
        std::fs::write(&path, &bytes).unwrap();
        let script = r#"
import json, sys
from gguf import GGUFReader, GGUFValueType
r = GGUFReader(sys.argv[1])
out = {"keys": {}, "tensors": {}}
for f in r.fields.values():
    if f.name.startswith("GGUF."):
        continue
    t = f.types[0]
    if t == GGUFValueType.ARRAY:
        out["keys"][f.name] = ["ARRAY", f.types[1].name, len(f.data)]
    elif t == GGUFValueType.STRING:
        out["keys"][f.name] = ["STRING", bytes(f.parts[f.data[0]]).decode()]
    else:
        out["keys"][f.name] = [t.name, f.parts[f.data[0]].tolist()[0]]
for t in r.tensors:
    out["tensors"][t.name] = [t.tensor_type.name, [int(d) for d in t.shape]]
print(json.dumps(out))
"#;
        let output = std::process::Command::new(&python)
            .args(["-c", script])
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let read: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let ours = read_gguf(&bytes);
        assert_eq!(read["keys"].as_object().unwrap().len(), ours.kv.len());
        assert_eq!(
            read["tensors"].as_object().unwrap().len(),
            ours.tensors.len()
        );
        assert_eq!(
            read["keys"]["general.architecture"][1],
            serde_json::json!(name)
        );
        assert_eq!(read["keys"]["tokenizer.ggml.tokens"][1], "STRING");
        assert_eq!(read["keys"]["tokenizer.ggml.token_type"][1], "INT32");
        if name == "llama" {
            assert_eq!(read["keys"]["tokenizer.ggml.scores"][1], "FLOAT32");
            assert_eq!(read["keys"]["tokenizer.ggml.add_bos_token"][0], "BOOL");
            assert_eq!(
                read["tensors"]["blk.0.attn_q.weight"],
                serde_json::json!(["Q8_0", [64, 64]])
            );
            assert_eq!(
                read["tensors"]["blk.0.ffn_norm.weight"],
                serde_json::json!(["F32", [64]])
            );
        } else {
            assert_eq!(read["keys"]["tokenizer.ggml.merges"][2], 3);
        }
    }
}
