//! The architecture map of GGUF export for Hugging Face models (`docs/apr.md` §6.1): from the
//! kept `config.json`, the GGUF architecture, the hyperparameter keys, the tensor names and the
//! changes to tensor data that llama.cpp's converter (`convert_hf_to_gguf.py`, `conversion/
//! {base,llama,qwen}.py`) makes for `LlamaForCausalLM`, `MistralForCausalLM` (both `llama`) and
//! `Qwen2ForCausalLM` (`qwen2`).
//!
//! The converter reads `config.json` through `transformers.AutoConfig(...).to_dict()`, so a key
//! the file leaves out has the config class's default (transformers 4.57): those defaults are
//! applied here before the converter's own lookups (`find_hparam`: the first of several names
//! that is present). What the converter would write for these architectures and this exporter
//! does not know (mixture of experts, per-layer RoPE, sliding-window RoPE bases, `longrope`,
//! `dynamic` scaling, pre-quantized checkpoints, multimodal `text_config`) is refused with
//! [`Error::ExportSource`] naming the key, never written half-right.

use crate::card::{ModelCard, SourceFiles, TensorEntry};
use crate::error::{DecodeError, Error, Result};
use crate::quant::QuantType;
use crate::tensor::DType;

use super::{
    DEFAULT_ALIGNMENT, GgmlType, GgufOptions, MAX_NAME_BYTES, Metadata, Planned,
    QUANTIZATION_VERSION, Source, Transform, Value, export_failed, ggml_dims,
};

type Map = serde_json::Map<String, serde_json::Value>;
type Json = serde_json::Value;

use crate::hf::CONFIG;

/// A GGUF architecture this exporter writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// `llama` (`LlamaForCausalLM`, `MistralForCausalLM`).
    Llama,
    /// `qwen2` (`Qwen2ForCausalLM`).
    Qwen2,
}

impl Arch {
    /// The GGUF `general.architecture`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Llama => "llama",
            Self::Qwen2 => "qwen2",
        }
    }
}

/// The Hugging Face classes mapped, with their GGUF architecture (as the converter registers
/// them: Mistral is written as `llama`).
pub const ARCHITECTURES: &[(&str, Arch)] = &[
    ("LlamaForCausalLM", Arch::Llama),
    ("MistralForCausalLM", Arch::Llama),
    ("Qwen2ForCausalLM", Arch::Qwen2),
];

fn hf_architecture(config: &Map) -> Result<(String, Arch)> {
    let name = config
        .get("architectures")
        .and_then(Json::as_array)
        .and_then(|a| a.first())
        .and_then(Json::as_str)
        .ok_or_else(|| {
            refuse(
                CONFIG,
                "architectures",
                "is missing: no model class is named",
            )
        })?;
    let arch = ARCHITECTURES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, a)| *a)
        .ok_or_else(|| {
            refuse(
                CONFIG,
                format!("architectures[0] = {name:?}"),
                "is not an architecture GGUF export maps (LlamaForCausalLM, MistralForCausalLM, \
                 Qwen2ForCausalLM)",
            )
        })?;
    Ok((name.to_owned(), arch))
}

pub(crate) fn refuse(file: &'static str, item: impl Into<String>, reason: &'static str) -> Error {
    Error::ExportSource {
        file,
        item: item.into(),
        reason,
    }
}

/// `bytes` as a JSON object, or `ExportSourceMalformed`/`ExportSource`.
pub(crate) fn json_object(file: &'static str, bytes: &[u8]) -> Result<Map> {
    match serde_json::from_slice::<Json>(bytes) {
        Ok(Json::Object(map)) => Ok(map),
        Ok(_) => Err(refuse(file, "the file", "is not a JSON object")),
        Err(source) => Err(Error::ExportSourceMalformed {
            file,
            reason: "it is not JSON",
            source: DecodeError::Json(source),
        }),
    }
}

/// RoPE scaling as the converter writes it.
#[derive(Debug, Clone, PartialEq)]
enum Rope {
    None,
    Linear(f32),
    Yarn {
        factor: f32,
        original: u32,
        ext_factor: Option<f32>,
        attn_factor: Option<f32>,
        beta_fast: Option<f32>,
        beta_slow: Option<f32>,
    },
    /// Llama 3.1's frequency-dependent scaling: a `rope_freqs.weight` tensor.
    Llama3 {
        factor: f64,
        low_freq_factor: f64,
        high_freq_factor: f64,
        original: f64,
    },
}

/// The hyperparameters the converter writes, read from `config.json` with the config class's
/// defaults.
#[derive(Debug, Clone)]
struct Hparams {
    block_count: u32,
    context_length: Option<u32>,
    embedding_length: Option<u32>,
    feed_forward_length: Option<u32>,
    head_count: Option<u32>,
    head_count_kv: Option<u32>,
    non_causal: bool,
    rope: Rope,
    rope_theta: Option<f64>,
    rms_eps: Option<f32>,
    layer_norm_eps: Option<f32>,
    head_dim: Option<u32>,
    vocab_size: u32,
    /// llama: `rope.dimension_count` (head_dim, or hidden_size / heads).
    rope_dim: u32,
    /// llama: the heads of Q and of K for the row permutation.
    permute: Option<(usize, usize)>,
}

/// transformers 4.57's defaults for the keys the converter reads, per config class (`LlamaConfig`,
/// `MistralConfig`, `Qwen2Config`): what `AutoConfig(...).to_dict()` holds when `config.json`
/// leaves a key out.
fn defaults(hf_arch: &str) -> Vec<(&'static str, Json)> {
    let n = |v: u64| Json::from(v);
    let f = |v: f64| Json::from(v);
    match hf_arch {
        "MistralForCausalLM" => vec![
            ("vocab_size", n(32000)),
            ("hidden_size", n(4096)),
            ("intermediate_size", n(14336)),
            ("num_hidden_layers", n(32)),
            ("num_attention_heads", n(32)),
            ("num_key_value_heads", n(8)),
            ("max_position_embeddings", n(4096 * 32)),
            ("rms_norm_eps", f(1e-6)),
            ("rope_theta", f(10000.0)),
            ("head_dim", Json::Null),
        ],
        "Qwen2ForCausalLM" => vec![
            ("vocab_size", n(151_936)),
            ("hidden_size", n(4096)),
            ("intermediate_size", n(22016)),
            ("num_hidden_layers", n(32)),
            ("num_attention_heads", n(32)),
            ("num_key_value_heads", n(32)),
            ("max_position_embeddings", n(32768)),
            ("rms_norm_eps", f(1e-6)),
            ("rope_theta", f(10000.0)),
            ("rope_scaling", Json::Null),
        ],
        _ => vec![
            ("vocab_size", n(32000)),
            ("hidden_size", n(4096)),
            ("intermediate_size", n(11008)),
            ("num_hidden_layers", n(32)),
            ("num_attention_heads", n(32)),
            ("num_key_value_heads", Json::Null),
            ("max_position_embeddings", n(2048)),
            ("rms_norm_eps", f(1e-6)),
            ("rope_theta", f(10000.0)),
            ("rope_scaling", Json::Null),
            ("head_dim", Json::Null),
        ],
    }
}

/// Keys that make the converter write something this exporter does not (or that say the
/// checkpoint is not a plain dense model): refused when present and not null.
const REFUSED_KEYS: &[(&str, &str)] = &[
    ("text_config", "a multimodal wrapper"),
    ("quantization_config", "a pre-quantized checkpoint"),
    ("num_local_experts", "mixture of experts"),
    ("num_experts", "mixture of experts"),
    ("n_routed_experts", "mixture of experts"),
    ("num_experts_per_tok", "mixture of experts"),
    ("num_experts_per_token", "mixture of experts"),
    ("top_k_experts", "mixture of experts"),
    ("n_group", "mixture of experts"),
    ("topk_group", "mixture of experts"),
    ("score_function", "mixture of experts"),
    ("scoring_func", "mixture of experts"),
    ("score_func", "mixture of experts"),
    ("global_rope_theta", "per-layer RoPE bases"),
    ("rope_global_theta", "per-layer RoPE bases"),
    ("rope_theta_global", "per-layer RoPE bases"),
    ("local_rope_theta", "per-layer RoPE bases"),
    ("rope_local_theta", "per-layer RoPE bases"),
    ("rope_theta_local", "per-layer RoPE bases"),
    ("swa_rope_theta", "per-layer RoPE bases"),
    ("rope_local_base_freq", "per-layer RoPE bases"),
];

/// The first of `keys` present in `map` (its value may be null), as the converter's
/// `find_hparam`.
fn find<'a>(map: &'a Map, keys: &[&str]) -> Option<(&'a str, &'a Json)> {
    keys.iter()
        .find_map(|k| map.get_key_value(*k))
        .map(|(k, v)| (k.as_str(), v))
}

fn non_null<'a>(map: &'a Map, keys: &[&str]) -> Option<(&'a str, &'a Json)> {
    find(map, keys).filter(|(_, v)| !v.is_null())
}

fn uint(key: &str, value: &Json) -> Result<u32> {
    value
        .as_u64()
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| {
            refuse(
                CONFIG,
                format!("{key} = {value}"),
                "is not an unsigned 32-bit integer",
            )
        })
}

fn float(file: &'static str, key: &str, value: &Json) -> Result<f64> {
    value
        .as_f64()
        .filter(|v| v.is_finite())
        .ok_or_else(|| refuse(file, format!("{key} = {value}"), "is not a finite number"))
}

#[allow(
    clippy::cast_possible_truncation,
    reason = "gguf-py packs a Python float as f32 (nearest), as `as f32` does"
)]
const fn to_f32(v: f64) -> f32 {
    v as f32
}

fn opt_uint(map: &Map, keys: &[&str]) -> Result<Option<u32>> {
    non_null(map, keys).map(|(k, v)| uint(k, v)).transpose()
}

fn opt_f32(map: &Map, keys: &[&str]) -> Result<Option<f32>> {
    non_null(map, keys)
        .map(|(k, v)| float(CONFIG, k, v).map(to_f32))
        .transpose()
}

fn required_uint(map: &Map, key: &str) -> Result<u32> {
    match map.get(key) {
        Some(v) if !v.is_null() => uint(key, v),
        _ => Err(refuse(CONFIG, key, "is missing")),
    }
}

impl Hparams {
    fn read(config: &Map, hf_arch: &str, arch: Arch) -> Result<Self> {
        for (key, what) in REFUSED_KEYS {
            if let Some(v) = config.get(*key).filter(|v| !v.is_null()) {
                let _ = what;
                return Err(refuse(
                    CONFIG,
                    format!("{key} = {v}"),
                    "is not exported to GGUF (mixture of experts, per-layer RoPE, multimodal \
                     and pre-quantized checkpoints are refused)",
                ));
            }
        }
        // AutoConfig(...).to_dict(): the class's defaults, then the file's keys.
        let mut hp: Map = defaults(hf_arch)
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        for (k, v) in config {
            hp.insert(k.clone(), v.clone());
        }
        if hp.get("num_key_value_heads").is_none_or(Json::is_null) {
            let heads = hp.get("num_attention_heads").cloned().unwrap_or(Json::Null);
            hp.insert("num_key_value_heads".to_owned(), heads);
        }
        if hf_arch == "LlamaForCausalLM" && hp.get("head_dim").is_none_or(Json::is_null) {
            // LlamaConfig: head_dim = hidden_size // num_attention_heads.
            let hidden = required_uint(&hp, "hidden_size")?;
            let heads = required_uint(&hp, "num_attention_heads")?;
            if heads == 0 {
                return Err(refuse(
                    CONFIG,
                    "num_attention_heads = 0",
                    "must be positive",
                ));
            }
            hp.insert("head_dim".to_owned(), Json::from(hidden / heads));
        }

        let block_count = match find(
            &hp,
            &["n_layers", "num_hidden_layers", "n_layer", "num_layers"],
        ) {
            Some((k, v)) => uint(k, v)?,
            None => return Err(refuse(CONFIG, "num_hidden_layers", "is missing")),
        };
        let context_length = opt_uint(
            &hp,
            &[
                "max_position_embeddings",
                "n_ctx",
                "n_positions",
                "max_length",
                "max_sequence_length",
                "model_max_length",
            ],
        )?;
        let embedding_length = opt_uint(&hp, &["hidden_size", "n_embd", "dim"])?;
        let feed_forward_length = opt_uint(
            &hp,
            &[
                "prefix_dense_intermediate_size",
                "dense_intermediate_size",
                "intermediate_size",
                "n_inner",
                "hidden_dim",
            ],
        )?;
        let head_count = opt_uint(&hp, &["num_attention_heads", "n_head", "n_heads"])?;
        let head_count_kv = opt_uint(&hp, &["num_key_value_heads", "n_kv_heads"])?;
        let non_causal = hp.get("is_causal") == Some(&Json::Bool(false));
        let rms_eps = opt_f32(&hp, &["rms_norm_eps", "norm_eps"])?;
        let layer_norm_eps = opt_f32(
            &hp,
            &["layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"],
        )?;
        let head_dim = match hp.get("head_dim") {
            Some(v) if !v.is_null() => Some(uint("head_dim", v)?),
            _ => None,
        };
        let (rope, rope_theta) = rope(&hp, arch)?;
        let vocab_size = required_uint(&hp, "vocab_size")?;
        let (rope_dim, permute) = match arch {
            Arch::Llama => {
                let rope_dim = match head_dim {
                    Some(d) => d,
                    None => {
                        let hidden = required_uint(&hp, "hidden_size")?;
                        let heads = required_uint(&hp, "num_attention_heads")?;
                        hidden.checked_div(heads).ok_or_else(|| {
                            refuse(CONFIG, "num_attention_heads = 0", "must be positive")
                        })?
                    }
                };
                let n_head = match find(&hp, &["n_heads", "num_attention_heads"]) {
                    Some((k, v)) => uint(k, v)?,
                    None => return Err(refuse(CONFIG, "num_attention_heads", "is missing")),
                };
                let n_head_kv = match find(&hp, &["n_kv_heads", "num_key_value_heads"]) {
                    Some((k, v)) => uint(k, v)?,
                    None => return Err(refuse(CONFIG, "num_key_value_heads", "is missing")),
                };
                let as_usize = |v: u32| usize::try_from(v).unwrap_or(usize::MAX);
                (rope_dim, Some((as_usize(n_head), as_usize(n_head_kv))))
            }
            Arch::Qwen2 => (0, None),
        };
        Ok(Self {
            block_count,
            context_length,
            embedding_length,
            feed_forward_length,
            head_count,
            head_count_kv,
            non_causal,
            rope,
            rope_theta,
            rms_eps,
            layer_norm_eps,
            head_dim,
            vocab_size,
            rope_dim,
            permute,
        })
    }

    /// The converter's `set_gguf_parameters` keys (with `general.file_type` where it writes it).
    fn keys(&self, arch: Arch, kv: &mut Metadata, file_type: u32) {
        let a = arch.name();
        kv.set(format!("{a}.block_count"), Value::U32(self.block_count));
        for (key, value) in [
            ("context_length", self.context_length),
            ("embedding_length", self.embedding_length),
            ("feed_forward_length", self.feed_forward_length),
            ("attention.head_count", self.head_count),
            ("attention.head_count_kv", self.head_count_kv),
        ] {
            if let Some(v) = value {
                kv.set(format!("{a}.{key}"), Value::U32(v));
            }
        }
        if self.non_causal {
            kv.set(format!("{a}.attention.causal"), Value::Bool(false));
        }
        match &self.rope {
            Rope::None | Rope::Llama3 { .. } => {}
            Rope::Linear(factor) => {
                kv.set(
                    format!("{a}.rope.scaling.type"),
                    Value::Str("linear".into()),
                );
                kv.set(format!("{a}.rope.scaling.factor"), Value::F32(*factor));
            }
            Rope::Yarn {
                factor,
                original,
                ext_factor,
                attn_factor,
                beta_fast,
                beta_slow,
            } => {
                kv.set(format!("{a}.rope.scaling.type"), Value::Str("yarn".into()));
                kv.set(format!("{a}.rope.scaling.factor"), Value::F32(*factor));
                kv.set(
                    format!("{a}.rope.scaling.original_context_length"),
                    Value::U32(*original),
                );
                for (key, value) in [
                    ("yarn_ext_factor", ext_factor),
                    ("yarn_attn_factor", attn_factor),
                    ("yarn_beta_fast", beta_fast),
                    ("yarn_beta_slow", beta_slow),
                ] {
                    if let Some(v) = value {
                        kv.set(format!("{a}.rope.scaling.{key}"), Value::F32(*v));
                    }
                }
            }
        }
        if let Some(theta) = self.rope_theta {
            kv.set(format!("{a}.rope.freq_base"), Value::F32(to_f32(theta)));
        }
        if let Some(eps) = self.rms_eps {
            kv.set(
                format!("{a}.attention.layer_norm_rms_epsilon"),
                Value::F32(eps),
            );
        }
        if let Some(eps) = self.layer_norm_eps {
            kv.set(format!("{a}.attention.layer_norm_epsilon"), Value::F32(eps));
        }
        if let Some(d) = self.head_dim {
            kv.set(format!("{a}.attention.key_length"), Value::U32(d));
            kv.set(format!("{a}.attention.value_length"), Value::U32(d));
        }
        kv.set("general.file_type", Value::U32(file_type));
        if arch == Arch::Llama {
            kv.set(format!("{a}.vocab_size"), Value::U32(self.vocab_size));
            kv.set(
                format!("{a}.rope.dimension_count"),
                Value::U32(self.rope_dim),
            );
        }
    }
}

/// RoPE scaling and base as the converter reads them (`TextModel.__init__`: `rope_parameters`,
/// else `rope_scaling`, with the top-level `rope_theta` and `original_max_position_embeddings`
/// mirrored into it).
fn rope(hp: &Map, arch: Arch) -> Result<(Rope, Option<f64>)> {
    let params = match hp.get("rope_parameters").or_else(|| hp.get("rope_scaling")) {
        None | Some(Json::Null) => Map::new(),
        Some(Json::Object(m)) => m.clone(),
        Some(other) => {
            return Err(refuse(
                CONFIG,
                format!("rope_scaling = {other}"),
                "is not an object",
            ));
        }
    };
    let mut params = params;
    if params.contains_key("full_attention") || params.contains_key("sliding_attention") {
        return Err(refuse(
            CONFIG,
            "rope_parameters",
            "per-layer-type RoPE is not exported for these architectures",
        ));
    }
    if params.contains_key("mrope_section") {
        return Err(refuse(
            CONFIG,
            "rope_scaling.mrope_section",
            "multimodal RoPE sections are not exported",
        ));
    }
    if !params.contains_key("rope_theta")
        && let Some((_, v)) = non_null(hp, &["rope_theta", "rotary_emb_base"])
    {
        params.insert("rope_theta".to_owned(), v.clone());
    }
    if !params.contains_key("rope_type")
        && let Some(v) = params.get("type").filter(|v| !v.is_null()).cloned()
    {
        params.insert("rope_type".to_owned(), v);
    }
    if !params.contains_key("original_max_position_embeddings")
        && let Some(v) = hp
            .get("original_max_position_embeddings")
            .filter(|v| !v.is_null())
            .cloned()
    {
        params.insert("original_max_position_embeddings".to_owned(), v);
    }
    let theta = match params.get("rope_theta") {
        Some(v) if !v.is_null() => Some(float(CONFIG, "rope_theta", v)?),
        _ => None,
    };
    let get_f = |key: &str| -> Result<Option<f64>> {
        match params.get(key) {
            Some(v) if !v.is_null() => float(CONFIG, key, v).map(Some),
            _ => Ok(None),
        }
    };
    let rope = match params.get("rope_type") {
        None | Some(Json::Null) => Rope::None,
        Some(Json::String(t)) => match t.as_str() {
            "default" => Rope::None,
            "linear" => match get_f("factor")? {
                Some(factor) => Rope::Linear(to_f32(factor)),
                None => return Err(refuse(CONFIG, "rope_scaling.factor", "is missing")),
            },
            "yarn" => {
                let Some(factor) = get_f("factor")? else {
                    return Err(refuse(CONFIG, "rope_scaling.factor", "is missing"));
                };
                let original = match params.get("original_max_position_embeddings") {
                    Some(v) if !v.is_null() => uint("original_max_position_embeddings", v)?,
                    _ => {
                        return Err(refuse(
                            CONFIG,
                            "rope_scaling.original_max_position_embeddings",
                            "is missing (yarn needs it)",
                        ));
                    }
                };
                let attn = match params.get("attention_factor") {
                    Some(v) if !v.is_null() => Some(float(CONFIG, "attention_factor", v)?),
                    Some(_) => None,
                    None => get_f("attn_factor")?,
                };
                Rope::Yarn {
                    factor: to_f32(factor),
                    original,
                    ext_factor: get_f("extrapolation_factor")?.map(to_f32),
                    attn_factor: attn.map(to_f32),
                    beta_fast: get_f("beta_fast")?.map(to_f32),
                    beta_slow: get_f("beta_slow")?.map(to_f32),
                }
            }
            t if t.eq_ignore_ascii_case("llama3") && arch == Arch::Llama => Rope::Llama3 {
                factor: get_f("factor")?.unwrap_or(8.0),
                low_freq_factor: get_f("low_freq_factor")?.unwrap_or(1.0),
                high_freq_factor: get_f("high_freq_factor")?.unwrap_or(4.0),
                original: get_f("original_max_position_embeddings")?.unwrap_or(8192.0),
            },
            other => {
                return Err(refuse(
                    CONFIG,
                    format!("rope_scaling.rope_type = {other:?}"),
                    "is a RoPE scaling GGUF export does not write for this architecture \
                     (linear, yarn, and llama3 for llama, are)",
                ));
            }
        },
        Some(other) => {
            return Err(refuse(
                CONFIG,
                format!("rope_scaling.rope_type = {other}"),
                "is not a string",
            ));
        }
    };
    Ok((rope, theta))
}

/// Llama 3's `rope_freqs.weight`, computed in f32 as the converter's torch code does
/// (`LlamaModel.generate_extra_tensors`): one factor per rotary pair.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    reason = "f32 arithmetic, as torch's float32 tensors"
)]
fn llama3_rope_factors(
    dim: u32,
    base: f64,
    factor: f64,
    low_freq_factor: f64,
    high_freq_factor: f64,
    original: f64,
) -> Vec<f32> {
    let low_wavelen = original / low_freq_factor;
    let high_wavelen = original / high_freq_factor;
    // torch: `scalar / tensor` is `tensor.reciprocal() * scalar`, scalars cast to f32.
    (0..dim)
        .step_by(2)
        .map(|i| {
            let exponent = i as f32 / dim as f32;
            let freq = 1.0f32 / (base as f32).powf(exponent);
            let wavelen = (1.0f32 / freq) * (2.0 * core::f64::consts::PI) as f32;
            if wavelen < high_wavelen as f32 {
                1.0
            } else if wavelen > low_wavelen as f32 {
                factor as f32
            } else {
                let smooth = ((1.0f32 / wavelen) * original as f32 - low_freq_factor as f32)
                    / (high_freq_factor - low_freq_factor) as f32;
                1.0f32 / ((1.0 - smooth) / factor as f32 + smooth)
            }
        })
        .collect()
}

/// Rows of `data` (`rows` equal rows, whole blocks for quantized types) reordered as the
/// converter's `LlamaModel.permute` reorders Q and K: within each of `heads` heads, the first and
/// second halves of the rows are interleaved (row `h·d + 2j + k` is old row `h·d + k·d/2 + j`),
/// turning Hugging Face's rotate-half RoPE layout into ggml's pairwise one. Permuting whole rows
/// is the same as permuting before quantizing, since blocks never cross rows. `None` if the rows
/// are not `heads` heads of an even number of rows.
#[must_use]
pub fn permute_rows(data: &[u8], rows: usize, heads: usize) -> Option<Vec<u8>> {
    if heads == 0 || rows == 0 || !rows.is_multiple_of(heads) {
        return None;
    }
    let per_head = rows / heads;
    if !per_head.is_multiple_of(2) || !data.len().is_multiple_of(rows) {
        return None;
    }
    let row = data.len() / rows;
    let half = per_head / 2;
    let mut out = Vec::with_capacity(data.len());
    for h in 0..heads {
        for j in 0..half {
            for k in 0..2 {
                let old = h * per_head + k * half + j;
                out.extend_from_slice(data.get(old * row..(old + 1) * row)?);
            }
        }
    }
    Some(out)
}

/// F16 or BF16 little-endian values as F32 bytes (exact); `None` for other dtypes.
#[must_use]
pub fn widen_to_f32(dtype: DType, data: &[u8]) -> Option<Vec<u8>> {
    let widen: fn([u8; 2]) -> f32 = match dtype {
        DType::F16 => |b| half::f16::from_le_bytes(b).to_f32(),
        DType::BF16 => |b| half::bf16::from_le_bytes(b).to_f32(),
        _ => return None,
    };
    let mut out = Vec::with_capacity(data.len() * 2);
    for pair in data.chunks_exact(2) {
        out.extend_from_slice(&widen([pair[0], pair[1]]).to_le_bytes());
    }
    Some(out)
}

/// The GGUF name of the Hugging Face tensor `name` in a model of `block_count` layers, as
/// gguf-py's `TensorNameMap` maps it for `llama` and `qwen2` (the Hugging Face spellings only).
#[must_use]
pub fn gguf_tensor_name(name: &str, block_count: u64) -> Option<String> {
    let (stem, suffix) = [".weight", ".bias"]
        .iter()
        .find_map(|s| name.strip_suffix(s).map(|stem| (stem, *s)))?;
    let mapped = match stem {
        "model.embed_tokens" => "token_embd".to_owned(),
        "model.norm" => "output_norm".to_owned(),
        "lm_head" => "output".to_owned(),
        _ => {
            let (bid, part) = stem.strip_prefix("model.layers.")?.split_once('.')?;
            let n: u64 = bid.parse().ok()?;
            if n.to_string() != bid || n >= block_count {
                return None;
            }
            let part = match part {
                "input_layernorm" => "attn_norm",
                "self_attn.q_proj" => "attn_q",
                "self_attn.k_proj" => "attn_k",
                "self_attn.v_proj" => "attn_v",
                "self_attn.o_proj" => "attn_output",
                "post_attention_layernorm" => "ffn_norm",
                "mlp.gate_proj" => "ffn_gate",
                "mlp.up_proj" => "ffn_up",
                "mlp.down_proj" => "ffn_down",
                _ => return None,
            };
            format!("blk.{n}.{part}")
        }
    };
    Some(format!("{mapped}{suffix}"))
}

/// Tensors the converter drops (`prepare_tensors`: "we don't need these").
fn dropped(name: &str) -> bool {
    [
        ".attention.masked_bias",
        ".attention.bias",
        ".rotary_emb.inv_freq",
    ]
    .iter()
    .any(|s| name.ends_with(s))
}

/// A Hugging Face model's export plan: what `config.json` and the tokenizer files say, checked.
#[derive(Debug)]
pub struct HfExport {
    arch: Arch,
    hparams: Hparams,
    vocab: Metadata,
    sampling: Metadata,
}

impl HfExport {
    /// Reads `config.json`, `generation_config.json` and the tokenizer files.
    ///
    /// # Errors
    /// `ExportSource` naming what is missing or not exported (an unmapped architecture, a
    /// refused key, a tokenizer kind, `options.architecture` differing from the model's);
    /// `ExportSourceMalformed` for a file that is not JSON or not a SentencePiece model.
    pub fn new(files: &SourceFiles, options: &GgufOptions) -> Result<Self> {
        let bytes = files
            .get(CONFIG)
            .ok_or_else(|| refuse(CONFIG, "the file", "is missing"))?;
        let config = json_object(CONFIG, bytes)?;
        let (hf_arch, arch) = hf_architecture(&config)?;
        if let Some(asked) = &options.architecture
            && asked != arch.name()
        {
            return Err(refuse(
                CONFIG,
                format!(
                    "--architecture {asked} (config.json's {hf_arch} is {})",
                    arch.name()
                ),
                "conflicts with the architecture the model's config.json gives",
            ));
        }
        let hparams = Hparams::read(&config, &hf_arch, arch)?;
        let vocab = super::vocab::metadata(files, arch, hparams.vocab_size)?;
        let sampling = sampling(files);
        Ok(Self {
            arch,
            hparams,
            vocab,
            sampling,
        })
    }

    /// The GGUF architecture.
    #[must_use]
    pub const fn arch(&self) -> Arch {
        self.arch
    }

    /// The tensors as written: GGUF names, F16/BF16 1-D tensors widened to F32, llama's Q and K
    /// permuted, `rope_freqs.weight` first for llama 3 scaling.
    pub(crate) fn plan(&self, entries: &[TensorEntry]) -> Result<Vec<Planned>> {
        let mut planned = Vec::with_capacity(entries.len() + 1);
        if let Rope::Llama3 {
            factor,
            low_freq_factor,
            high_freq_factor,
            original,
        } = self.hparams.rope
        {
            let base = self.hparams.rope_theta.unwrap_or(10000.0);
            let factors = llama3_rope_factors(
                self.hparams.rope_dim,
                base,
                factor,
                low_freq_factor,
                high_freq_factor,
                original,
            );
            let bytes: Vec<u8> = factors.iter().flat_map(|f| f.to_le_bytes()).collect();
            planned.push(Planned {
                name: "rope_freqs.weight".to_owned(),
                ggml: GgmlType::F32,
                dims: vec![factors.len() as u64],
                len: bytes.len() as u64,
                source: Source::Generated(bytes),
            });
        }
        for (index, entry) in entries.iter().enumerate() {
            if dropped(&entry.name) {
                continue;
            }
            planned.push(self.plan_one(index, entry)?);
        }
        Ok(planned)
    }

    fn plan_one(&self, index: usize, entry: &TensorEntry) -> Result<Planned> {
        let failed = |reason| export_failed(&entry.name, reason);
        let name = gguf_tensor_name(&entry.name, u64::from(self.hparams.block_count)).ok_or_else(
            || {
                failed(
                    "not a tensor of this architecture that llama.cpp's converter maps (or its \
                     layer is past num_hidden_layers)",
                )
            },
        )?;
        if name.len() > MAX_NAME_BYTES {
            return Err(failed("GGUF tensor names are at most 63 bytes"));
        }
        let dtype = DType::from_code(entry.dtype)?;
        let src_ggml = match dtype {
            DType::F32 => GgmlType::F32,
            DType::F16 => GgmlType::F16,
            DType::BF16 => GgmlType::BF16,
            DType::Quantized(QuantType::Q8_0) => GgmlType::Q8_0,
            DType::Quantized(QuantType::Q4_0) => GgmlType::Q4_0,
            DType::Quantized(QuantType::Q4_1) => GgmlType::Q4_1,
            _ => {
                return Err(failed(
                    "llama.cpp runs F32, F16, BF16, Q8_0, Q4_0 and Q4_1 weights; this dtype has \
                     no llama.cpp kernel",
                ));
            }
        };
        let (dims, elements) = ggml_dims(&entry.shape).map_err(failed)?;
        // The converter writes 1-D tensors and norms as F32 (llama.cpp's element-wise kernels
        // take F32 operands).
        let needs_f32 = entry.shape.len() <= 1 || name.ends_with("_norm.weight");
        let (ggml, to_f32) = match (needs_f32, src_ggml) {
            (false, g) | (true, g @ GgmlType::F32) => (g, false),
            (true, GgmlType::F16 | GgmlType::BF16) => (GgmlType::F32, true),
            (true, _) => {
                return Err(failed(
                    "1-D tensors and norms are F32 in llama.cpp; this one is quantized",
                ));
            }
        };
        if !dims[0].is_multiple_of(ggml.block_size()) {
            return Err(failed(
                "the innermost dimension is not a multiple of the block size",
            ));
        }
        let source_len = dtype
            .byte_len(elements)
            .ok_or_else(|| failed("the data size overflows"))?;
        let len = if to_f32 {
            elements
                .checked_mul(4)
                .ok_or_else(|| failed("the data size overflows"))?
        } else {
            source_len
        };
        let permute_heads = match self.hparams.permute {
            Some((n_head, n_head_kv)) => {
                if entry.name.ends_with("q_proj.weight") || entry.name.ends_with("q_proj.bias") {
                    Some(n_head)
                } else if entry.name.ends_with("k_proj.weight")
                    || entry.name.ends_with("k_proj.bias")
                {
                    Some(n_head_kv)
                } else {
                    None
                }
            }
            None => None,
        };
        if let Some(heads) = permute_heads {
            let rows = entry.shape.first().copied().unwrap_or(1);
            let heads = heads as u64;
            if heads == 0 || !rows.is_multiple_of(heads) || !(rows / heads).is_multiple_of(2) {
                return Err(failed(
                    "its rows are not a whole number of heads of an even size (num_attention_heads \
                     / num_key_value_heads in config.json)",
                ));
            }
        }
        Ok(Planned {
            name,
            ggml,
            dims,
            len,
            source: Source::Entry {
                index,
                name: entry.name.clone(),
                dtype,
                len: source_len,
                transform: Transform {
                    to_f32,
                    permute_heads,
                },
            },
        })
    }

    /// The key-values, in the converter's order.
    pub(crate) fn metadata(
        &self,
        card: &ModelCard,
        options: &GgufOptions,
        planned: &[Planned],
    ) -> Result<Metadata> {
        let mut kv = Metadata::default();
        kv.set("general.architecture", Value::Str(self.arch.name().into()));
        kv.set("general.type", Value::Str("model".into()));
        for (k, v) in &self.sampling.0 {
            kv.set(k.clone(), v.clone());
        }
        if !card.name.is_empty() {
            kv.set("general.name", Value::Str(card.name.clone()));
        }
        if let Some(author) = &card.author {
            kv.set("general.author", Value::Str(author.clone()));
        }
        if !card.version.is_empty() {
            kv.set("general.version", Value::Str(card.version.clone()));
        }
        let total: u64 = planned.iter().map(Planned::elements).sum();
        if total > 0 {
            kv.set("general.size_label", Value::Str(size_label(total)));
        }
        if let Some(license) = &card.license {
            kv.set("general.license", Value::Str(license.clone()));
        }
        self.hparams
            .keys(self.arch, &mut kv, super::file_type(planned));
        kv.set(
            "general.quantization_version",
            Value::U32(QUANTIZATION_VERSION),
        );
        for (k, v) in &self.vocab.0 {
            kv.set(k.clone(), v.clone());
        }
        if options.alignment != DEFAULT_ALIGNMENT {
            kv.set("general.alignment", Value::U32(options.alignment));
        }
        // Provenance: the card (license, hashes; the source files as name → length).
        let card_json = serde_json::to_string(card).map_err(Error::CardJson)?;
        kv.set("apr.model_card", Value::Str(card_json));
        Ok(kv)
    }
}

/// gguf-py's `size_label` for a dense model: the parameter count rounded to at least two
/// significant digits with a K/M/B/T suffix (`model_weight_count_rounded_notation`).
#[allow(
    clippy::cast_precision_loss,
    reason = "Python multiplies the int by a float, as here"
)]
#[must_use]
pub fn size_label(params: u64) -> String {
    let n = params as f64;
    let (scaled, suffix) = if n > 1e12 {
        (n * 1e-12, "T")
    } else if n > 1e9 {
        (n * 1e-9, "B")
    } else if n > 1e6 {
        (n * 1e-6, "M")
    } else {
        (n * 1e-3, "K")
    };
    // Python: len(str(round(scaled)).lstrip('0')), round() to even.
    let rounded = scaled.round_ties_even();
    let digits = format!("{rounded:.0}").trim_start_matches('0').len();
    let fix = 2usize.saturating_sub(digits);
    format!("{scaled:.fix$}{suffix}")
}

/// `general.sampling.*` from `generation_config.json`, as gguf-py's `Metadata.load` reads it (a
/// file that is not a JSON object is ignored, as there; a value of the wrong type is skipped).
fn sampling(files: &SourceFiles) -> Metadata {
    let mut kv = Metadata::default();
    let Some(Ok(Json::Object(gen_config))) = files
        .get("generation_config.json")
        .map(serde_json::from_slice::<Json>)
    else {
        return kv;
    };
    enum Kind {
        Str,
        I32,
        F32,
    }
    for (json_key, gguf_key, kind) in [
        ("sequence", "sequence", Kind::Str),
        ("top_k", "top_k", Kind::I32),
        ("top_p", "top_p", Kind::F32),
        ("min_p", "min_p", Kind::F32),
        ("xtc_probability", "xtc_probability", Kind::F32),
        ("xtc_threshold", "xtc_threshold", Kind::F32),
        ("temperature", "temp", Kind::F32),
        ("penalty_last_n", "penalty_last_n", Kind::I32),
        ("repetition_penalty", "penalty_repeat", Kind::F32),
        ("mirostat", "mirostat", Kind::I32),
        ("mirostat_tau", "mirostat_tau", Kind::F32),
        ("mirostat_eta", "mirostat_eta", Kind::F32),
    ] {
        let key = if json_key == "repetition_penalty" {
            gen_config
                .get("penalty_repeat")
                .or_else(|| gen_config.get(json_key))
        } else {
            gen_config.get(json_key)
        };
        let Some(value) = key.filter(|v| !v.is_null()) else {
            continue;
        };
        let value = match kind {
            Kind::Str => value
                .as_str()
                .filter(|s| !s.is_empty())
                .map(|s| Value::Str(s.to_owned())),
            Kind::I32 => value
                .as_i64()
                .and_then(|v| i32::try_from(v).ok())
                .map(Value::I32),
            Kind::F32 => value.as_f64().map(|v| Value::F32(to_f32(v))),
        };
        if let Some(value) = value {
            kv.set(format!("general.sampling.{gguf_key}"), value);
        }
    }
    kv
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_known_answer() {
        // 2 heads of 4 rows, one byte per row: per head, rows [a0 a1 b0 b1] -> [a0 b0 a1 b1].
        let data = [0u8, 1, 2, 3, 4, 5, 6, 7];
        assert_eq!(
            permute_rows(&data, 8, 2).unwrap(),
            vec![0, 2, 1, 3, 4, 6, 5, 7]
        );
        // One head of 6 rows of 2 bytes: rows 0 1 2 | 3 4 5 -> 0 3 1 4 2 5.
        let data: Vec<u8> = (0..12).collect();
        assert_eq!(
            permute_rows(&data, 6, 1).unwrap(),
            vec![0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11]
        );
        assert!(permute_rows(&data, 6, 4).is_none());
        assert!(
            permute_rows(&data, 6, 2).is_none(),
            "3 rows per head is odd"
        );
        assert!(permute_rows(&data, 5, 1).is_none());
        assert!(permute_rows(&data, 6, 0).is_none());
    }

    #[test]
    fn names_map_as_tensor_mapping_does() {
        for (hf, gguf) in [
            ("model.embed_tokens.weight", "token_embd.weight"),
            ("model.norm.weight", "output_norm.weight"),
            ("lm_head.weight", "output.weight"),
            (
                "model.layers.0.input_layernorm.weight",
                "blk.0.attn_norm.weight",
            ),
            (
                "model.layers.1.self_attn.q_proj.weight",
                "blk.1.attn_q.weight",
            ),
            ("model.layers.1.self_attn.q_proj.bias", "blk.1.attn_q.bias"),
            (
                "model.layers.1.self_attn.k_proj.weight",
                "blk.1.attn_k.weight",
            ),
            (
                "model.layers.1.self_attn.v_proj.weight",
                "blk.1.attn_v.weight",
            ),
            (
                "model.layers.1.self_attn.o_proj.weight",
                "blk.1.attn_output.weight",
            ),
            (
                "model.layers.1.post_attention_layernorm.weight",
                "blk.1.ffn_norm.weight",
            ),
            (
                "model.layers.1.mlp.gate_proj.weight",
                "blk.1.ffn_gate.weight",
            ),
            ("model.layers.1.mlp.up_proj.weight", "blk.1.ffn_up.weight"),
            (
                "model.layers.1.mlp.down_proj.weight",
                "blk.1.ffn_down.weight",
            ),
        ] {
            assert_eq!(gguf_tensor_name(hf, 2).as_deref(), Some(gguf), "{hf}");
        }
        for unknown in [
            "model.layers.2.mlp.up_proj.weight",
            "model.layers.01.mlp.up_proj.weight",
            "model.layers.0.mlp.experts.0.w1.weight",
            "model.embed_tokens",
            "vision_tower.weight",
        ] {
            assert_eq!(gguf_tensor_name(unknown, 2), None, "{unknown}");
        }
    }

    #[test]
    fn size_labels_read_as_gguf_py_writes_them() {
        assert_eq!(size_label(6_738_415_616), "6.7B");
        assert_eq!(size_label(124_000), "124K");
        assert_eq!(size_label(1_500), "1.5K");
        assert_eq!(size_label(12_345_678), "12M");
        assert_eq!(size_label(500), "0.50K");
    }

    #[test]
    fn llama3_factors_follow_the_three_bands() {
        let f = llama3_rope_factors(128, 500_000.0, 8.0, 1.0, 4.0, 8192.0);
        assert_eq!(f.len(), 64);
        assert_eq!(f[0], 1.0);
        assert_eq!(f[63], 8.0);
        assert!(f.iter().all(|x| (1.0..=8.0).contains(x)));
        assert!(f.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn widening_is_exact() {
        let v = [1.5f32, -0.25, 65504.0];
        let f16: Vec<u8> = v
            .iter()
            .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
            .collect();
        let out = widen_to_f32(DType::F16, &f16).unwrap();
        let back: Vec<f32> = out
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(back, v);
        assert!(widen_to_f32(DType::F32, &[0; 4]).is_none());
    }
}
