//! End to end against llama.cpp itself (issue 17): a Hugging Face model directory imported with
//! `apr import`, exported with `apr export --format gguf`, as is and after
//! `apr quantize --type q8_0`, runs in llama.cpp exactly as the files llama.cpp's own converter
//! (`convert_hf_to_gguf.py`) makes from the same directory.
//!
//! The programs are the real ones, built from the pinned llama-cpp-python sdist by
//! `.ci/setup-llama`: `$LLAMA_PROBE` (tests/ggml/llama_probe.cpp, linked with libllama: tokens,
//! the last position's logits, greedy tokens) and `$LLAMA_CPP_DIR` (the converter and its
//! gguf-py). The models are made by transformers under `$INTEROP_PYTHON`
//! (tests/python/llama/make_model.py: Llama with a SentencePiece tokenizer, sharded; Llama with
//! a Llama 3 BPE tokenizer and chat template; Mistral with GQA, bf16; Qwen2 with biases and tied
//! embeddings).
//!
//! For each model:
//! - the harness first checks itself: llama.cpp's tokens for the converter's file are
//!   transformers' tokens, and its logits are transformers' within float rounding (so the test
//!   tokenizers are what llama.cpp implements, and the probe runs the model);
//! - our unquantized export and the converter's file of the same tensor types (`--outtype f32`,
//!   or `bf16` for a bf16 checkpoint) hold the same tensors, byte for byte, and the same
//!   architecture and tokenizer metadata (tests/python/llama/gguf_diff.py); llama.cpp gives the
//!   same tokens, logits within 1e-5 and the same greedy generation;
//! - the same for our Q8_0 export and the converter's `--outtype q8_0`.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::support::{APR, Scratch};

/// Greedy tokens generated per run: every step must agree.
const N_PREDICT: &str = "16";

/// Our export against the converter's: the same tensor bytes give the same logits; the margin
/// only allows for a reordering of float sums between two loads of the same model.
const SAME_MODEL: f64 = 1e-5;

fn env_path(name: &str, how: &str) -> PathBuf {
    std::env::var_os(name)
        .unwrap_or_else(|| panic!("{name} is not set: {how}"))
        .into()
}

fn llama_cpp_dir() -> PathBuf {
    env_path("LLAMA_CPP_DIR", "eval \"$(.ci/setup-llama)\"")
}

/// What llama.cpp makes of `gguf`: the probe's JSON.
fn probe(gguf: &str, prompt: &str) -> Value {
    let output = Command::new(env_path("LLAMA_PROBE", "eval \"$(.ci/setup-llama)\""))
        .args([gguf, prompt, N_PREDICT])
        .output()
        .expect("llama_probe runs");
    assert!(
        output.status.success(),
        "llama_probe {gguf}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

fn python_json(script: &str, args: &[&OsStr]) -> Value {
    serde_json::from_slice(&test_support::python_ok(script, args)).unwrap()
}

fn numbers(value: &Value) -> Vec<f64> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn max_abs_diff(a: &Value, b: &Value) -> f64 {
    let (a, b) = (numbers(a), numbers(b));
    assert_eq!(a.len(), b.len(), "logit counts");
    a.iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f64::max)
}

/// llama.cpp's converter on `dir`, writing `out` as `outtype`.
fn convert(model: &Value, outtype: &str, out: &str) {
    let llama = llama_cpp_dir();
    let mut args: Vec<&OsStr> = vec![llama.as_os_str()];
    if let Some(pre) = model["tokenizer_pre"].as_str() {
        args.extend([OsStr::new("--tokenizer-pre"), OsStr::new(pre)]);
    }
    let dir = model["dir"].as_str().unwrap();
    args.extend(["--outtype", outtype, "--outfile", out, dir].map(OsStr::new));
    let _ = test_support::python_ok("llama/convert.py", &args);
}

/// The same model, file `ours` (apr) and `theirs` (the converter): same tensors and metadata,
/// and llama.cpp runs both alike.
fn assert_same_model(name: &str, what: &str, ours: &str, theirs: &str, prompt: &str) {
    let llama = llama_cpp_dir();
    let diff = python_json(
        "llama/gguf_diff.py",
        &[llama.as_os_str(), OsStr::new(ours), OsStr::new(theirs)],
    );
    assert_eq!(
        diff["differences"],
        Value::Array(vec![]),
        "{name} {what}: our GGUF (A) against the converter's (B)"
    );
    let (a, b) = (probe(ours, prompt), probe(theirs, prompt));
    assert_eq!(a["tokens"], b["tokens"], "{name} {what}: tokens");
    let diff = max_abs_diff(&a["logits"], &b["logits"]);
    assert!(
        diff <= SAME_MODEL,
        "{name} {what}: logits differ by up to {diff}"
    );
    assert_eq!(
        a["generated"], b["generated"],
        "{name} {what}: greedy tokens"
    );
}

fn end_to_end(name: &str) {
    let ws = Scratch::new();
    let dir = ws.path("hf");
    let model = python_json("llama/make_model.py", &[OsStr::new(name), OsStr::new(&dir)]);
    let prompt = model["prompt"].as_str().unwrap();
    let dtype = model["dtype"].as_str().unwrap();

    // The converter's files, and the harness checked against transformers on the full one.
    let (theirs_full, theirs_q8) = (ws.path("theirs-full.gguf"), ws.path("theirs-q8_0.gguf"));
    convert(&model, dtype, &theirs_full);
    convert(&model, "q8_0", &theirs_q8);
    let reference = probe(&theirs_full, prompt);
    assert_eq!(
        reference["tokens"], model["tokens"],
        "{name}: llama.cpp tokenizes the prompt as transformers does"
    );
    // Relative to the largest logit. f32: float rounding (seen: 2e-6); bf16: llama.cpp rounds
    // the activations to bf16 for its matrix products, transformers (run in f32 here) does not
    // (seen: 7e-3).
    let scale = numbers(&model["logits"])
        .iter()
        .fold(1.0, |m: f64, x| m.max(x.abs()));
    let tolerance = if dtype == "f32" { 2e-5 } else { 2e-2 } * scale;
    let diff = max_abs_diff(&reference["logits"], &model["logits"]);
    assert!(
        diff <= tolerance,
        "{name}: llama.cpp's logits differ from transformers' by up to {diff} (allowed {tolerance})"
    );

    // Ours: import, export; quantize, export.
    ws.wrote(APR, ["import", &dir, "-o", "m.apr"]);
    ws.wrote(APR, "export m.apr --format gguf -o ours-full.gguf");
    ws.wrote(APR, "quantize m.apr --type q8_0 -o q.apr");
    ws.wrote(APR, "export q.apr --format gguf -o ours-q8_0.gguf");

    assert_same_model(
        name,
        dtype,
        &ws.path("ours-full.gguf"),
        &theirs_full,
        prompt,
    );
    assert_same_model(name, "q8_0", &ws.path("ours-q8_0.gguf"), &theirs_q8, prompt);
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON, LLAMA_PROBE and LLAMA_CPP_DIR (run by .ci/run)"]
fn llama_with_a_sentencepiece_tokenizer_sharded_runs_as_the_converters() {
    end_to_end("llama-spm");
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON, LLAMA_PROBE and LLAMA_CPP_DIR (run by .ci/run)"]
fn llama_with_a_llama3_bpe_tokenizer_and_chat_template_runs_as_the_converters() {
    end_to_end("llama-bpe");
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON, LLAMA_PROBE and LLAMA_CPP_DIR (run by .ci/run)"]
fn mistral_with_gqa_saved_in_bf16_runs_as_the_converters() {
    end_to_end("mistral");
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON, LLAMA_PROBE and LLAMA_CPP_DIR (run by .ci/run)"]
fn qwen2_with_biases_and_tied_embeddings_runs_as_the_converters() {
    end_to_end("qwen2");
}
