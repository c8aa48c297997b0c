//! The `tokenizer.*` keys of GGUF export for Hugging Face models (`docs/apr.md` §6.1), from the
//! kept tokenizer files, as llama.cpp's converter writes them (`conversion/base.py`:
//! `_set_vocab_sentencepiece`, `_set_vocab_gpt2`, `get_vocab_base`; gguf-py's `SpecialVocab`).
//!
//! - `tokenizer.model` present: a SentencePiece vocabulary, `tokenizer.ggml.model = llama`,
//!   `pre = default`, pieces with scores and types; `added_tokens.json` and
//!   `tokenizer_config.json`'s `added_tokens_decoder` override entries; ids up to `vocab_size`
//!   without a piece are `[PAD{i}]`.
//! - otherwise `tokenizer.json` with a byte-level BPE model: `gpt2`, the merges, and `pre` read
//!   from its pre-tokenizer: Llama 3's split regex is `llama-bpe`, Qwen2's is `qwen2`; any other
//!   is refused (the converter identifies it by hashing the token ids of a fixed text, and
//!   llama.cpp would split text differently under a wrong name).
//! - then the special tokens (`bos`/`eos`/`unk`/`sep`/`pad`/`mask`/`eot`/`eom` ids,
//!   `add_bos_token`/`add_eos_token`/`add_sep_token`, the chat template), read as `SpecialVocab`
//!   reads them: `tokenizer.json`'s post-processor and added tokens, `tokenizer_config.json`,
//!   then `config.json`'s `*_token_id`.
//!
//! transformers' decode-encode round trip of non-normalized added tokens is taken as the identity
//! (it is for the special tokens of these tokenizers).

use std::collections::HashMap;

use serde::Deserialize;

use crate::card::SourceFiles;
use crate::error::{DecodeError, Error, Result};
use crate::hf::CONFIG;

use super::Metadata;
use super::Value;
use super::arch::{Arch, json_object, refuse};
use super::sentencepiece::{self, BYTE, CONTROL, NORMAL, UNKNOWN, UNUSED, USER_DEFINED};

type Map = serde_json::Map<String, serde_json::Value>;
type Json = serde_json::Value;

/// The largest `vocab_size` exported: far above any published model (Gemma's 262 144), low
/// enough that a hostile `config.json` cannot make the `[PAD{i}]` list exhaust memory.
pub const MAX_VOCAB: u32 = 1 << 21;

/// llama.cpp's token types (`llama_token_type`, gguf-py's `TokenType`).
const TOKEN_NORMAL: i32 = 1;
const TOKEN_UNKNOWN: i32 = 2;
const TOKEN_CONTROL: i32 = 3;
const TOKEN_USER_DEFINED: i32 = 4;
const TOKEN_UNUSED: i32 = 5;
const TOKEN_BYTE: i32 = 6;

/// Llama 3's pre-tokenizer split (`tokenizer.json`), llama.cpp's `llama-bpe`.
pub const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen2's pre-tokenizer split, llama.cpp's `qwen2`.
pub const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The parts of `tokenizer.json` read.
#[derive(Debug, Deserialize)]
struct TokenizerJson {
    #[serde(default)]
    added_tokens: Vec<AddedToken>,
    #[serde(default)]
    normalizer: Json,
    #[serde(default)]
    pre_tokenizer: Json,
    #[serde(default)]
    post_processor: Json,
    #[serde(default)]
    decoder: Json,
    #[serde(default)]
    model: Model,
}

#[derive(Debug, Clone, Deserialize)]
struct AddedToken {
    id: u64,
    content: String,
    #[serde(default)]
    special: bool,
}

#[derive(Debug, Default, Deserialize)]
struct Model {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    vocab: Json,
    #[serde(default)]
    merges: Json,
    #[serde(default)]
    byte_fallback: Option<bool>,
    #[serde(default)]
    ignore_merges: Option<bool>,
}

const TOKENIZER_JSON: &str = "tokenizer.json";
const TOKENIZER_CONFIG: &str = "tokenizer_config.json";

/// Python's truthiness of a JSON value (`None`, `""`, `{}`, `[]`, `0`, `False` are false).
fn truthy(v: &Json) -> bool {
    match v {
        Json::Null => false,
        Json::Bool(b) => *b,
        Json::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Json::String(s) => !s.is_empty(),
        Json::Array(a) => !a.is_empty(),
        Json::Object(o) => !o.is_empty(),
    }
}

/// The converter's `does_token_look_special`.
fn looks_special(token: &str) -> bool {
    matches!(token, "<pad>" | "<mask>" | "<2mass>" | "[@BOS@]")
        || (token.starts_with("<|") && token.ends_with("|>"))
        || (token.starts_with("<｜") && token.ends_with("｜>"))
        || (token.starts_with("<unused") && token.ends_with('>'))
}

/// The `tokenizer.*` keys (and llama's `tokenizer.ggml.add_space_prefix`) for a model of `arch`
/// with `vocab_size` tokens.
///
/// # Errors
/// `ExportSource` naming what is missing or not exported; `ExportSourceMalformed` for a file that
/// is not JSON or not a SentencePiece model.
pub(crate) fn metadata(files: &SourceFiles, arch: Arch, vocab_size: u32) -> Result<Metadata> {
    if vocab_size == 0 || vocab_size > MAX_VOCAB {
        return Err(refuse(
            CONFIG,
            format!("vocab_size = {vocab_size}"),
            "is not between 1 and 2^21",
        ));
    }
    if arch == Arch::Llama && vocab_size == 32016 {
        return Err(refuse(
            CONFIG,
            "vocab_size = 32016",
            "is CodeLlama's infill vocabulary, whose prefix/suffix/middle tokens are not exported",
        ));
    }
    let n_vocab = usize::try_from(vocab_size).unwrap_or(usize::MAX);
    let config = match files.get(CONFIG) {
        Some(bytes) => json_object(CONFIG, bytes)?,
        None => Map::new(),
    };
    let tokenizer_config = files
        .get(TOKENIZER_CONFIG)
        .map(|b| json_object(TOKENIZER_CONFIG, b))
        .transpose()?;
    let tokenizer_json = files
        .get(TOKENIZER_JSON)
        .map(|b| {
            serde_json::from_slice::<TokenizerJson>(b).map_err(|source| {
                Error::ExportSourceMalformed {
                    file: TOKENIZER_JSON,
                    reason: "it is not a tokenizers JSON file",
                    source: DecodeError::Json(source),
                }
            })
        })
        .transpose()?;

    let mut kv = Metadata::default();
    if arch == Arch::Llama
        && let Some(v) = tokenizer_config
            .as_ref()
            .and_then(|tc| tc.get("add_prefix_space"))
            .filter(|v| !v.is_null())
    {
        let b = v.as_bool().ok_or_else(|| {
            refuse(
                TOKENIZER_CONFIG,
                format!("add_prefix_space = {v}"),
                "is not a boolean",
            )
        })?;
        kv.set("tokenizer.ggml.add_space_prefix", Value::Bool(b));
    }

    let special = if let Some(model) = files.get("tokenizer.model") {
        sentencepiece_vocab(&mut kv, files, model, tokenizer_config.as_ref(), n_vocab)?;
        SpecialVocab::load(
            tokenizer_json.as_ref(),
            tokenizer_config.as_ref(),
            files,
            &config,
            false,
            Some(n_vocab),
        )?
    } else if let Some(tj) = &tokenizer_json {
        if arch == Arch::Llama && is_llama_hf(tj) {
            return Err(refuse(
                TOKENIZER_JSON,
                "model (BPE with byte_fallback) without tokenizer.model",
                "is a SentencePiece-style vocabulary the converter reads through transformers \
                 (LlamaHfVocab); keep tokenizer.model in the source directory",
            ));
        }
        bpe_vocab(&mut kv, tj, tokenizer_config.as_ref(), n_vocab)?;
        SpecialVocab::load(
            Some(tj),
            tokenizer_config.as_ref(),
            files,
            &config,
            true,
            None,
        )?
    } else {
        return Err(refuse(
            "tokenizer.model",
            "the file",
            "is missing, and so is tokenizer.json: the model has no vocabulary to export",
        ));
    };
    special.add_to(&mut kv);
    if arch == Arch::Llama && vocab_size == 49152 {
        // The converter's rule for Granite's small models, kept for the same vocabularies.
        kv.set("tokenizer.ggml.add_bos_token", Value::Bool(false));
    }
    Ok(kv)
}

/// The converter's `LlamaHfVocab` case: a BPE `tokenizer.json` with byte fallback and a
/// `Sequence` decoder (a SentencePiece model converted by transformers), which it does not read
/// as `gpt2`.
fn is_llama_hf(tj: &TokenizerJson) -> bool {
    let bpe = tj.model.kind.as_deref() == Some("BPE");
    let byte_fallback = tj.model.byte_fallback.unwrap_or(false);
    let llama3 = bpe && tj.model.ignore_merges.unwrap_or(false) && !byte_fallback;
    !llama3 && bpe && byte_fallback && tj.decoder.get("type") == Some(&Json::from("Sequence"))
}

/// `_create_vocab_sentencepiece` + `_set_vocab_sentencepiece`'s first keys.
fn sentencepiece_vocab(
    kv: &mut Metadata,
    files: &SourceFiles,
    model: &[u8],
    tokenizer_config: Option<&Map>,
    n_vocab: usize,
) -> Result<()> {
    let (pieces, _) = sentencepiece::pieces(model, n_vocab)?;
    let mut tokens: Vec<String> = (0..n_vocab).map(|i| format!("[PAD{i}]")).collect();
    let mut scores = vec![-10000.0f32; n_vocab];
    let mut types = vec![TOKEN_UNUSED; n_vocab];
    for (id, piece) in pieces.into_iter().enumerate() {
        // sentencepiece's IsUnknown / IsControl / IsUnused / IsByte; USER_DEFINED and NORMAL
        // pieces are NORMAL, as the converter writes them.
        types[id] = match piece.kind {
            UNKNOWN => TOKEN_UNKNOWN,
            CONTROL => TOKEN_CONTROL,
            UNUSED => TOKEN_UNUSED,
            BYTE => TOKEN_BYTE,
            NORMAL | USER_DEFINED => TOKEN_NORMAL,
            _ => TOKEN_NORMAL,
        };
        tokens[id] = piece.text;
        scores[id] = piece.score;
    }
    if let Some(bytes) = files.get("added_tokens.json") {
        for (content, id) in json_object("added_tokens.json", bytes)? {
            let id = id
                .as_u64()
                .ok_or_else(|| refuse("added_tokens.json", content.clone(), "has no integer id"))?;
            let Some(id) = usize::try_from(id).ok().filter(|i| *i < n_vocab) else {
                continue;
            };
            tokens[id] = content;
            scores[id] = -1000.0;
            types[id] = TOKEN_USER_DEFINED;
        }
    }
    if let Some(decoder) = tokenizer_config
        .and_then(|tc| tc.get("added_tokens_decoder"))
        .filter(|v| !v.is_null())
    {
        let decoder = decoder
            .as_object()
            .ok_or_else(|| refuse(TOKENIZER_CONFIG, "added_tokens_decoder", "is not an object"))?;
        for (id, data) in decoder {
            let (id, content, special) = decoder_entry(id, data)?;
            let Some(id) = usize::try_from(id).ok().filter(|i| *i < n_vocab) else {
                continue;
            };
            let content = if special || looks_special(&content) {
                types[id] = TOKEN_CONTROL;
                content
            } else {
                types[id] = TOKEN_USER_DEFINED;
                content.replace('\u{2581}', " ")
            };
            scores[id] = -1000.0;
            tokens[id] = content;
        }
    }
    kv.set("tokenizer.ggml.model", Value::Str("llama".into()));
    kv.set("tokenizer.ggml.pre", Value::Str("default".into()));
    kv.set("tokenizer.ggml.tokens", Value::Strs(tokens));
    kv.set("tokenizer.ggml.scores", Value::F32s(scores));
    kv.set("tokenizer.ggml.token_type", Value::I32s(types));
    Ok(())
}

/// One `added_tokens_decoder` entry: id, content, whether `special` is truthy.
fn decoder_entry(id: &str, data: &Json) -> Result<(u64, String, bool)> {
    let n: u64 = id.trim().parse().map_err(|_| {
        refuse(
            TOKENIZER_CONFIG,
            format!("added_tokens_decoder[{id:?}]"),
            "is not a token id",
        )
    })?;
    let content = data.get("content").and_then(Json::as_str).ok_or_else(|| {
        refuse(
            TOKENIZER_CONFIG,
            format!("added_tokens_decoder[{id:?}]"),
            "has no content",
        )
    })?;
    let special = data.get("special").is_some_and(truthy);
    Ok((n, content.to_owned(), special))
}

/// `get_vocab_base` + `_set_vocab_gpt2`'s first keys.
fn bpe_vocab(
    kv: &mut Metadata,
    tj: &TokenizerJson,
    tokenizer_config: Option<&Map>,
    n_vocab: usize,
) -> Result<()> {
    if tj.model.kind.as_deref() != Some("BPE") {
        return Err(refuse(
            TOKENIZER_JSON,
            format!("model.type = {:?}", tj.model.kind.as_deref().unwrap_or("")),
            "is not BPE: only byte-level BPE tokenizer.json vocabularies are exported",
        ));
    }
    let pre = bpe_pre(tj)?;
    let vocab = tj
        .model
        .vocab
        .as_object()
        .ok_or_else(|| refuse(TOKENIZER_JSON, "model.vocab", "is not an object"))?;
    let mut reverse: HashMap<u64, &str> = HashMap::with_capacity(vocab.len());
    for (token, id) in vocab {
        let id = id.as_u64().ok_or_else(|| {
            refuse(
                TOKENIZER_JSON,
                format!("model.vocab[{token:?}]"),
                "is not a token id",
            )
        })?;
        reverse.insert(id, token);
    }
    // transformers' added tokens: tokenizer.json's, then tokenizer_config.json's
    // added_tokens_decoder for ids tokenizer.json does not list.
    let mut added: Vec<AddedToken> = tj.added_tokens.clone();
    if let Some(decoder) = tokenizer_config
        .and_then(|tc| tc.get("added_tokens_decoder"))
        .and_then(Json::as_object)
    {
        for (id, data) in decoder {
            let (id, content, special) = decoder_entry(id, data)?;
            if !added.iter().any(|a| a.id == id) {
                added.push(AddedToken {
                    id,
                    content,
                    special,
                });
            }
        }
    }
    let mut added_vocab: HashMap<&str, u64> = HashMap::new();
    let mut added_decoder: HashMap<u64, &AddedToken> = HashMap::new();
    for a in &added {
        reverse.insert(a.id, &a.content);
        added_vocab.insert(&a.content, a.id);
        added_decoder.insert(a.id, a);
    }
    if let Some(max) = reverse.keys().max()
        && usize::try_from(*max).map_or(true, |m| m >= n_vocab)
    {
        return Err(refuse(
            TOKENIZER_JSON,
            format!("token id {max}"),
            "is not below config.json's vocab_size",
        ));
    }
    let mut tokens = Vec::with_capacity(n_vocab);
    let mut types = Vec::with_capacity(n_vocab);
    for i in 0..n_vocab as u64 {
        let Some(token) = reverse.get(&i) else {
            tokens.push(format!("[PAD{i}]"));
            types.push(TOKEN_UNUSED);
            continue;
        };
        if added_vocab.contains_key(token) {
            let Some(entry) = added_decoder.get(&i) else {
                return Err(refuse(
                    TOKENIZER_JSON,
                    format!("added token {token:?}"),
                    "has the text of a vocabulary token with another id",
                ));
            };
            if entry.special || looks_special(token) {
                tokens.push((*token).to_owned());
                types.push(TOKEN_CONTROL);
            } else {
                tokens.push(token.replace('\u{2581}', " "));
                types.push(TOKEN_USER_DEFINED);
            }
        } else {
            tokens.push((*token).to_owned());
            types.push(TOKEN_NORMAL);
        }
    }
    kv.set("tokenizer.ggml.model", Value::Str("gpt2".into()));
    kv.set("tokenizer.ggml.pre", Value::Str(pre.into()));
    kv.set("tokenizer.ggml.tokens", Value::Strs(tokens));
    kv.set("tokenizer.ggml.token_type", Value::I32s(types));
    Ok(())
}

/// `tokenizer.ggml.pre` from `tokenizer.json`'s pre-tokenizer: a `Sequence` of a `Split` on Llama
/// 3's or Qwen2's regex (isolated, not inverted) and a `ByteLevel` without prefix space or regex.
fn bpe_pre(tj: &TokenizerJson) -> Result<&'static str> {
    let pt = &tj.pre_tokenizer;
    let steps = pt
        .get("pretokenizers")
        .and_then(Json::as_array)
        .filter(|_| pt.get("type") == Some(&Json::from("Sequence")));
    let recognized = steps.and_then(|steps| match steps.as_slice() {
        [split, byte_level] => {
            let split_ok = split.get("type") == Some(&Json::from("Split"))
                && split.get("behavior") == Some(&Json::from("Isolated"))
                && split.get("invert") == Some(&Json::Bool(false));
            let byte_ok = byte_level.get("type") == Some(&Json::from("ByteLevel"))
                && byte_level.get("add_prefix_space") == Some(&Json::Bool(false))
                && byte_level.get("use_regex") == Some(&Json::Bool(false));
            let regex = split
                .get("pattern")
                .and_then(|p| p.get("Regex"))
                .and_then(Json::as_str);
            match (split_ok && byte_ok, regex) {
                (true, Some(LLAMA3_SPLIT)) => Some("llama-bpe"),
                (true, Some(QWEN2_SPLIT)) => Some("qwen2"),
                _ => None,
            }
        }
        _ => None,
    });
    recognized.ok_or_else(|| {
        let mut shown = pt.to_string();
        if shown.len() > 300 {
            let mut cut = 300;
            while !shown.is_char_boundary(cut) {
                cut -= 1;
            }
            shown.truncate(cut);
            shown.push('…');
        }
        refuse(
            TOKENIZER_JSON,
            format!("pre_tokenizer {shown}"),
            "is not a pre-tokenizer GGUF export recognizes (Llama 3's split regex is llama-bpe, \
             Qwen2's is qwen2): llama.cpp would split text differently",
        )
    })
}

/// A chat template: one, or named ones (`[{"name", "template"}]`).
#[derive(Debug, Clone)]
enum ChatTemplate {
    One(String),
    Named(Vec<(String, Option<String>)>),
}

/// gguf-py's `SpecialVocab`, for the special token types the converter uses.
#[derive(Debug, Default)]
struct SpecialVocab {
    merges: Vec<String>,
    add_special: Vec<(String, bool)>,
    ids: Vec<(String, u32)>,
    chat_template: Option<ChatTemplate>,
    lowercase: Option<bool>,
    strip_accents: Option<bool>,
    types: Vec<String>,
    n_vocab: Option<usize>,
}

fn sp(item: &Json, kind: &str) -> Json {
    item.get(kind)
        .and_then(|t| t.get("id"))
        .cloned()
        .unwrap_or(Json::Null)
}

impl SpecialVocab {
    fn load(
        tj: Option<&TokenizerJson>,
        tokenizer_config: Option<&Map>,
        files: &SourceFiles,
        config: &Map,
        load_merges: bool,
        n_vocab: Option<usize>,
    ) -> Result<Self> {
        let mut sv = Self {
            types: ["bos", "eos", "unk", "sep", "pad", "cls", "mask"]
                .map(str::to_owned)
                .to_vec(),
            n_vocab,
            ..Self::default()
        };
        sv.read_tokenizer_json(tj, tokenizer_config, files, load_merges)?;
        // `_try_load_from_config_json`: the raw config.json's `<type>_token_id`.
        for typ in sv.types.clone() {
            if let Some(id) = config.get(&format!("{typ}_token_id")) {
                sv.set_special(&typ, id)?;
            }
        }
        Ok(sv)
    }

    fn set_add(&mut self, typ: &str, value: bool, only_if_absent: bool) {
        match self.add_special.iter_mut().find(|(t, _)| t == typ) {
            Some(slot) if !only_if_absent => slot.1 = value,
            Some(_) => {}
            None => self.add_special.push((typ.to_owned(), value)),
        }
    }

    /// `_set_special_token`: integer ids only, the first one set wins, ids past `n_vocab`
    /// skipped.
    fn set_special(&mut self, typ: &str, id: &Json) -> Result<()> {
        let Json::Number(n) = id else {
            return Ok(());
        };
        if !n.is_i64() && !n.is_u64() {
            return Ok(());
        }
        let id = n
            .as_u64()
            .and_then(|v| u32::try_from(v).ok())
            .ok_or_else(|| refuse(CONFIG, format!("{typ}_token_id = {n}"), "is not a token id"))?;
        if self.n_vocab.is_some_and(|n| id as usize >= n) {
            return Ok(());
        }
        if !self.ids.iter().any(|(t, _)| t == typ) {
            self.ids.push((typ.to_owned(), id));
        }
        Ok(())
    }

    fn parse_normalizer(&mut self, normalizer: &Json) -> Result<()> {
        let as_flag = |key: &str, v: &Json| -> Result<Option<bool>> {
            match v {
                Json::Null => Ok(None),
                Json::Bool(b) => Ok(Some(*b)),
                other => Err(refuse(
                    TOKENIZER_JSON,
                    format!("normalizer.{key} = {other}"),
                    "is not a boolean",
                )),
            }
        };
        match normalizer.get("type").and_then(Json::as_str) {
            Some("Lowercase") => self.lowercase = Some(true),
            Some("StripAccents") => self.strip_accents = Some(true),
            Some("BertNormalizer") => {
                if let Some(v) = normalizer.get("lowercase") {
                    self.lowercase = as_flag("lowercase", v)?;
                }
                if let Some(v) = normalizer.get("strip_accents") {
                    self.strip_accents = as_flag("strip_accents", v)?;
                }
            }
            Some("Sequence") => {
                if let Some(list) = normalizer.get("normalizers").and_then(Json::as_array) {
                    for n in list {
                        self.parse_normalizer(n)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn merges(&mut self, tj: &TokenizerJson) -> Result<()> {
        let Some(merges) = tj.model.merges.as_array().filter(|m| !m.is_empty()) else {
            return Ok(());
        };
        let bad = || refuse(TOKENIZER_JSON, "model.merges", "is not a list of merges");
        if merges[0].is_string() {
            self.merges = merges
                .iter()
                .map(|m| m.as_str().map(str::to_owned).ok_or_else(bad))
                .collect::<Result<_>>()?;
        } else if merges[0]
            .as_array()
            .is_some_and(|p| p.len() == 2 && p[0].is_string())
        {
            // transformers ≥ 4.45 writes pairs, which may hold spaces: gguf-py encodes a space
            // as U+0120 (' ' + 256) and joins the pair with one space.
            self.merges = merges
                .iter()
                .map(|pair| {
                    let parts = pair.as_array().ok_or_else(bad)?;
                    let parts: Vec<String> = parts
                        .iter()
                        .map(|p| {
                            p.as_str()
                                .map(|s| s.replace(' ', "\u{120}"))
                                .ok_or_else(bad)
                        })
                        .collect::<Result<_>>()?;
                    Ok(parts.join(" "))
                })
                .collect::<Result<_>>()?;
        } else {
            return Err(bad());
        }
        Ok(())
    }

    /// `_try_load_from_tokenizer_json`.
    #[allow(
        clippy::too_many_lines,
        reason = "one port of gguf-py's function, kept in its order so it can be read against it"
    )]
    fn read_tokenizer_json(
        &mut self,
        tj: Option<&TokenizerJson>,
        tokenizer_config: Option<&Map>,
        files: &SourceFiles,
        load_merges: bool,
    ) -> Result<()> {
        let empty: Vec<AddedToken> = Vec::new();
        let added_tokens = tj.map_or(&empty, |t| &t.added_tokens);
        if let Some(tj) = tj {
            if load_merges {
                self.merges(tj)?;
            }
            if truthy(&tj.normalizer) {
                self.parse_normalizer(&tj.normalizer)?;
            }
        }
        let mut tc: Option<Map> = tokenizer_config.cloned();
        let get = |tc: &Option<Map>, k: &str| {
            tc.as_ref()
                .and_then(|m| m.get(k))
                .cloned()
                .unwrap_or(Json::Null)
        };
        let tc_truthy = |tc: &Option<Map>| tc.as_ref().is_some_and(|m| !m.is_empty());
        if let Some(tj) = tj {
            let mut special_bos = get(&tc, "bos_token");
            let mut special_cls = get(&tc, "cls_token");
            let mut special_eos = get(&tc, "eos_token");
            let mut special_sep = get(&tc, "sep_token");
            if !truthy(&special_bos) && truthy(&special_cls) && tc_truthy(&tc) {
                special_bos = special_cls.clone();
                set(&mut tc, "bos_token", &special_bos);
            }
            if !truthy(&special_eos) && truthy(&special_sep) && tc_truthy(&tc) {
                special_eos = special_sep.clone();
                set(&mut tc, "eos_token", &special_eos);
            }
            if truthy(&tj.post_processor) {
                let processors: Vec<Json> = match tj.post_processor.get("processors") {
                    Some(Json::Array(list)) => list.clone(),
                    Some(_) => {
                        return Err(refuse(
                            TOKENIZER_JSON,
                            "post_processor.processors",
                            "is not a list",
                        ));
                    }
                    None => vec![tj.post_processor.clone()],
                };
                for processor in &processors {
                    match processor.get("type").and_then(Json::as_str) {
                        Some("ByteLevel") => {
                            self.set_add("bos", false, true);
                            self.set_add("eos", false, true);
                        }
                        Some("RobertaProcessing") => {
                            self.set_add("bos", true, false);
                            self.set_add("eos", true, false);
                            self.set_add("sep", true, false);
                            if !truthy(&special_cls) && tc_truthy(&tc) {
                                special_cls = first_of(processor.get("cls"), &special_bos);
                                set(&mut tc, "cls_token", &special_cls);
                            }
                            if !truthy(&special_sep) && tc_truthy(&tc) {
                                special_sep = first_of(processor.get("sep"), &special_eos);
                                set(&mut tc, "sep_token", &special_sep);
                            }
                        }
                        Some("TemplateProcessing") => {
                            let list = |k: &str| {
                                processor
                                    .get(k)
                                    .and_then(Json::as_array)
                                    .cloned()
                                    .unwrap_or_default()
                            };
                            let single = list("single");
                            let pair = list("pair");
                            let mut special_first = Json::Null;
                            let mut special_last = Json::Null;
                            if single.len() > 1 {
                                special_first = sp(&single[0], "SpecialToken");
                                if truthy(&special_first) {
                                    if !tc_truthy(&tc) {
                                        special_bos = special_first.clone();
                                    } else if special_first != special_bos
                                        && special_first != special_cls
                                    {
                                        if !truthy(&special_bos) {
                                            special_bos = special_first.clone();
                                            set(&mut tc, "bos_token", &special_bos);
                                        }
                                        if !truthy(&special_cls) {
                                            special_cls = special_first.clone();
                                            set(&mut tc, "cls_token", &special_cls);
                                        }
                                    }
                                    let add = special_first == special_bos
                                        || special_first == special_cls;
                                    self.set_add("bos", add, false);
                                }
                                special_last = sp(&single[single.len() - 1], "SpecialToken");
                                if truthy(&special_last) {
                                    if !tc_truthy(&tc) {
                                        special_eos = special_last.clone();
                                    } else if special_last != special_eos {
                                        if !self.types.iter().any(|t| t == "eot") {
                                            self.types.push("eot".to_owned());
                                            set(&mut tc, "eot_token", &special_eos);
                                        } else if !self.types.iter().any(|t| t == "eom") {
                                            self.types.push("eom".to_owned());
                                            set(&mut tc, "eom_token", &special_eos);
                                        }
                                        special_eos = special_last.clone();
                                        set(&mut tc, "eos_token", &special_eos);
                                    }
                                    self.set_add("eos", special_last == special_eos, false);
                                }
                            }
                            if !pair.is_empty() {
                                let start = usize::from(
                                    truthy(&special_first)
                                        && sp(&pair[0], "SpecialToken") == special_first,
                                );
                                let stop = if truthy(&special_last)
                                    && sp(&pair[pair.len() - 1], "SpecialToken") == special_last
                                {
                                    pair.len() - 1
                                } else {
                                    pair.len()
                                };
                                let inner = pair.get(start..stop.max(start)).unwrap_or_default();
                                if !inner.is_empty() {
                                    let a = sp(&inner[0], "Sequence");
                                    let b = sp(&inner[inner.len() - 1], "Sequence");
                                    let middle = if inner.len() >= 2 {
                                        &inner[1..inner.len() - 1]
                                    } else {
                                        &[]
                                    };
                                    if a == "A" && b == "B" && !middle.is_empty() {
                                        let mut add_sep = false;
                                        let entry = sp(&middle[0], "SpecialToken");
                                        if truthy(&entry)
                                            && (entry == special_sep || entry == special_eos)
                                            && !truthy(&special_last)
                                        {
                                            add_sep = true;
                                        }
                                        if middle.len() == 2 {
                                            let entry = sp(&middle[1], "SpecialToken");
                                            if truthy(&entry)
                                                && (entry == special_sep || entry == special_eos)
                                            {
                                                add_sep = true;
                                            }
                                        }
                                        self.set_add("sep", add_sep, false);
                                        if add_sep && !truthy(&special_sep) && tc_truthy(&tc) {
                                            set(&mut tc, "sep_token", &special_eos);
                                        }
                                    }
                                }
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        let Some(tc) = tc.filter(|m| !m.is_empty()) else {
            return Ok(());
        };
        let alt = files
            .get("chat_template.jinja")
            .map(|b| {
                String::from_utf8(b.to_vec())
                    .map_err(|_| refuse("chat_template.jinja", "the file", "is not UTF-8 text"))
            })
            .transpose()?;
        let template = match tc.get("chat_template") {
            Some(v) => v.clone(),
            None => alt.map_or(Json::Null, Json::String),
        };
        self.chat_template = match template {
            Json::String(s) => Some(ChatTemplate::One(s)),
            Json::Array(list) => Some(ChatTemplate::Named(
                list.iter()
                    .map(|c| {
                        let name = c.get("name").and_then(Json::as_str).unwrap_or("");
                        let name: String = name
                            .chars()
                            .map(|ch| if ch.is_ascii_alphanumeric() { ch } else { '_' })
                            .collect();
                        let template = c.get("template").and_then(Json::as_str).map(str::to_owned);
                        (name, template)
                    })
                    .collect(),
            )),
            _ => None,
        };
        for typ in self.types.clone() {
            if let Some(Json::Bool(add)) = tc.get(&format!("add_{typ}_token")) {
                self.set_add(&typ, *add, true);
            }
            let content = match tc.get(&format!("{typ}_token")) {
                Some(Json::String(s)) => s.clone(),
                Some(Json::Object(o)) => match o.get("content") {
                    Some(Json::String(s)) => s.clone(),
                    _ => continue,
                },
                _ => continue,
            };
            if let Some(a) = added_tokens.iter().find(|a| a.content == content) {
                self.set_special(&typ, &Json::from(a.id))?;
            }
        }
        Ok(())
    }

    /// `add_to_gguf`.
    fn add_to(&self, kv: &mut Metadata) {
        if !self.merges.is_empty() {
            kv.set("tokenizer.ggml.merges", Value::Strs(self.merges.clone()));
        }
        for (typ, id) in &self.ids {
            let key = match typ.as_str() {
                "bos" => "bos_token_id",
                "eos" => "eos_token_id",
                "unk" => "unknown_token_id",
                "sep" => "seperator_token_id",
                "pad" => "padding_token_id",
                "mask" => "mask_token_id",
                "eot" => "eot_token_id",
                "eom" => "eom_token_id",
                // gguf-py has no writer for `cls`: skipped there too.
                _ => continue,
            };
            kv.set(format!("tokenizer.ggml.{key}"), Value::U32(*id));
        }
        for (typ, add) in &self.add_special {
            if matches!(typ.as_str(), "bos" | "eos" | "sep") {
                kv.set(format!("tokenizer.ggml.add_{typ}_token"), Value::Bool(*add));
            }
        }
        match &self.chat_template {
            Some(ChatTemplate::One(t)) if !t.is_empty() => {
                kv.set("tokenizer.chat_template", Value::Str(t.clone()));
            }
            Some(ChatTemplate::Named(list)) => {
                let mut names = Vec::new();
                let mut default = None;
                for (name, template) in list {
                    let Some(template) = template.as_ref().filter(|_| !name.is_empty()) else {
                        continue;
                    };
                    if name == "default" {
                        default = Some(template.clone());
                    } else {
                        if !names.contains(name) {
                            names.push(name.clone());
                        }
                        if !template.is_empty() {
                            kv.set(
                                format!("tokenizer.chat_template.{name}"),
                                Value::Str(template.clone()),
                            );
                        }
                    }
                }
                if !names.is_empty() {
                    kv.set("tokenizer.chat_templates", Value::Strs(names));
                }
                if let Some(t) = default.filter(|t| !t.is_empty()) {
                    kv.set("tokenizer.chat_template", Value::Str(t));
                }
            }
            _ => {}
        }
        if let Some(v) = self.lowercase {
            kv.set("tokenizer.ggml.normalizer.lowercase", Value::Bool(v));
        }
        if let Some(v) = self.strip_accents {
            kv.set("tokenizer.ggml.normalizer.strip_accents", Value::Bool(v));
        }
    }
}

fn set(tc: &mut Option<Map>, key: &str, value: &Json) {
    if let Some(m) = tc {
        m.insert(key.to_owned(), value.clone());
    }
}

/// `processor.get(key, [default])[0]`.
fn first_of(v: Option<&Json>, default: &Json) -> Json {
    match v {
        Some(Json::Array(a)) => a.first().cloned().unwrap_or(Json::Null),
        Some(_) => Json::Null,
        None => default.clone(),
    }
}
