//! Hugging Face model directories (`docs/apr.md` §11), the parts that need no file system (so
//! they build for wasm32): which files an import keeps verbatim and how large each may be, the
//! checks on `config.json`, and the shard plan read from `model.safetensors.index.json`.
//!
//! The reading itself (mapping the shards one at a time, streaming each tensor into the `.apr`)
//! is `apr::fs::import_hf_dir`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use envelope_core::Signal;

/// The configuration file every Hugging Face model directory has.
pub const CONFIG: &str = "config.json";
/// The single-file checkpoint.
pub const SINGLE_WEIGHTS: &str = "model.safetensors";
/// The index of a sharded checkpoint.
pub const INDEX: &str = "model.safetensors.index.json";

const MIB: u64 = 1 << 20;

/// The files of a model directory kept verbatim in `ModelCard::source_files`, when present, each
/// with the largest size kept: a larger file is refused ([`HfError::TooLarge`]), never read whole.
///
/// The bounds hold every published tokenizer of the supported families (Llama 3's
/// `tokenizer.json` is 9 MiB) and together stay under [`MAX_KEPT_TOTAL`].
pub const KEPT_FILES: &[(&str, u64)] = &[
    (CONFIG, MIB),
    ("generation_config.json", MIB),
    ("tokenizer.json", 40 * MIB),
    ("tokenizer.model", 16 * MIB),
    ("tokenizer_config.json", 16 * MIB),
    ("special_tokens_map.json", MIB),
    ("added_tokens.json", 16 * MIB),
    ("chat_template.jinja", MIB),
];

/// The largest total of the kept files: they live in the `.apr` metadata, which a reader decodes
/// up to `envelope_core::Limits::DEFAULT.max_metadata` (64 MiB on 64-bit targets); 16 MiB are
/// left for the tensor directory and the rest of the card.
pub const MAX_KEPT_TOTAL: u64 = 48 * MIB;

// A native reader's default limits open every file an import writes (wasm32's are smaller: a
// model that large does not fit its address space anyway).
#[cfg(not(target_arch = "wasm32"))]
const _: () = assert!(MAX_KEPT_TOTAL + 16 * MIB <= envelope_core::Limits::DEFAULT.max_metadata);

/// The largest `model.safetensors.index.json` read: a larger one is refused, never read whole
/// (the index of a 400-billion-parameter checkpoint is under 1 MiB).
pub const MAX_INDEX_BYTES: u64 = 64 * MIB;

/// Why a Hugging Face model directory cannot be imported. Every message starts with its Andon
/// signal's name ([`HfError::signal`]): the directory's contents are `InvalidFormat`, a file that
/// cannot be read as a regular file inside the directory is `Io`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HfError {
    /// The directory has no `config.json`.
    #[error(
        "InvalidFormat: {} is not a Hugging Face model directory: it has no config.json",
        dir.display()
    )]
    NoConfig {
        /// The directory.
        dir: PathBuf,
    },
    /// The directory has neither `model.safetensors` nor `model.safetensors.index.json`.
    #[error(
        "InvalidFormat: {} has no SafeTensors weights: neither model.safetensors nor \
         model.safetensors.index.json (other weight formats are not imported)",
        dir.display()
    )]
    NoWeights {
        /// The directory.
        dir: PathBuf,
    },
    /// The directory has `model.safetensors` and an index naming other files: which one holds
    /// the model is ambiguous (one of them is stale).
    #[error(
        "InvalidFormat: {} has both model.safetensors and model.safetensors.index.json naming \
         other shards: remove the stale one",
        dir.display()
    )]
    AmbiguousWeights {
        /// The directory.
        dir: PathBuf,
    },
    /// A JSON file of the directory is not JSON.
    #[error("InvalidFormat: {file} is not JSON")]
    Json {
        /// The file's name.
        file: &'static str,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// `config.json` is JSON but not a model configuration.
    #[error("InvalidFormat: config.json {reason}")]
    Config {
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// `model.safetensors.index.json` is JSON but not a shard index.
    #[error("InvalidFormat: model.safetensors.index.json {reason}")]
    Index {
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// A shard name in the index is not a plain `.safetensors` file name (a path, `..`, empty).
    #[error(
        "InvalidFormat: model.safetensors.index.json names the shard {shard:?}: a shard must be \
         a plain .safetensors file name inside the model directory"
    )]
    ShardName {
        /// The name as the index gives it.
        shard: String,
    },
    /// A shard the index names is not in the directory.
    #[error("InvalidFormat: shard {shard:?} named by model.safetensors.index.json is missing")]
    MissingShard {
        /// The shard's name.
        shard: String,
    },
    /// A shard is not a valid SafeTensors file.
    #[error("InvalidFormat: shard {shard:?} is not a valid SafeTensors file")]
    Shard {
        /// The shard's name.
        shard: String,
        /// The `safetensors` crate's error.
        #[source]
        source: safetensors::SafeTensorError,
    },
    /// A shard holds a tensor the index does not list.
    #[error(
        "InvalidFormat: tensor {tensor:?} is in shard {shard:?} but not in \
         model.safetensors.index.json"
    )]
    NotInIndex {
        /// The tensor.
        tensor: String,
        /// The shard holding it.
        shard: String,
    },
    /// A shard holds a tensor the index places in another shard (or the tensor is in two shards).
    #[error(
        "InvalidFormat: tensor {tensor:?} is in shard {shard:?} but \
         model.safetensors.index.json places it in {listed:?}"
    )]
    WrongShard {
        /// The tensor.
        tensor: String,
        /// The shard holding it.
        shard: String,
        /// The shard the index names.
        listed: String,
    },
    /// The index lists a tensor its shard does not hold.
    #[error(
        "InvalidFormat: tensor {tensor:?} is listed in model.safetensors.index.json in shard \
         {shard:?}, which does not hold it"
    )]
    MissingTensor {
        /// The tensor.
        tensor: String,
        /// The shard the index names.
        shard: String,
    },
    /// A kept file (or the index) is larger than its bound.
    #[error("Io: {file}: larger than the {limit} bytes an import reads (docs/apr.md §11)")]
    TooLarge {
        /// The file's name.
        file: String,
        /// The bound.
        limit: u64,
    },
    /// The kept files together pass [`MAX_KEPT_TOTAL`].
    #[error(
        "Io: the kept files total {total} bytes, more than the {limit} an .apr card holds \
         (docs/apr.md §11)"
    )]
    KeptTotal {
        /// Their total.
        total: u64,
        /// [`MAX_KEPT_TOTAL`].
        limit: u64,
    },
    /// A file of the directory is a symbolic link to a place outside it.
    #[error(
        "Io: {} links to {}, outside the model directory (a link is followed only within the \
         directory, or into the blobs of a Hugging Face cache snapshot)",
        file.display(),
        target.display()
    )]
    LinkEscapes {
        /// The file.
        file: PathBuf,
        /// Where the link leads.
        target: PathBuf,
    },
    /// A file of the directory cannot be opened as a regular file (a FIFO, a device, a
    /// directory, unreadable).
    #[error("Io: {}: {source}", file.display())]
    Open {
        /// The file.
        file: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

impl HfError {
    /// The Andon signal this failure raises.
    #[must_use]
    pub const fn signal(&self) -> Signal {
        match self {
            Self::TooLarge { .. }
            | Self::KeptTotal { .. }
            | Self::LinkEscapes { .. }
            | Self::Open { .. } => Signal::Io,
            _ => Signal::InvalidFormat,
        }
    }
}

/// The largest size kept of the file `name`, if an import keeps it ([`KEPT_FILES`]).
#[must_use]
pub fn kept_limit(name: &str) -> Option<u64> {
    KEPT_FILES
        .iter()
        .find(|(kept, _)| *kept == name)
        .map(|&(_, limit)| limit)
}

/// What an import needs of `config.json`: the architecture names (`LlamaForCausalLM`) and the
/// `model_type` (`llama`). The file itself is kept verbatim; this is only its check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HfConfig {
    /// `architectures`: at least one name.
    pub architectures: Vec<String>,
    /// `model_type`, when present.
    pub model_type: Option<String>,
}

impl HfConfig {
    /// Parses and checks `config.json`: a JSON object whose `architectures` is a non-empty array
    /// of strings (what every exporter keys on), and whose `model_type`, when present, is a
    /// string.
    ///
    /// # Errors
    /// [`HfError::Json`] for text that is not JSON; [`HfError::Config`] naming the rule broken.
    pub fn parse(bytes: &[u8]) -> Result<Self, HfError> {
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|source| HfError::Json {
                file: CONFIG,
                source,
            })?;
        let object = value.as_object().ok_or(HfError::Config {
            reason: "is not a JSON object",
        })?;
        let names = object.get("architectures").ok_or(HfError::Config {
            reason: "has no \"architectures\" (the model class, e.g. LlamaForCausalLM)",
        })?;
        let architectures = names
            .as_array()
            .filter(|names| !names.is_empty())
            .and_then(|names| {
                names
                    .iter()
                    .map(|name| name.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or(HfError::Config {
                reason: "\"architectures\" is not a non-empty array of strings",
            })?;
        let model_type = match object.get("model_type") {
            None => None,
            Some(serde_json::Value::String(name)) => Some(name.clone()),
            Some(_) => {
                return Err(HfError::Config {
                    reason: "\"model_type\" is not a string",
                });
            }
        };
        Ok(Self {
            architectures,
            model_type,
        })
    }

    /// The first architecture (the one transformers instantiates).
    #[must_use]
    pub fn architecture(&self) -> &str {
        self.architectures.first().map_or("", String::as_str)
    }
}

/// Whether `name` is a plain `.safetensors` file name: no directory part (`/` or `\`), not `.`
/// or `..`, no NUL, not hidden (`.x.safetensors`), ending in `.safetensors`. A shard name comes
/// from the index, which is input: a path there could make an import read a file outside the
/// model directory and embed it in the `.apr`.
#[must_use]
pub fn is_plain_shard_name(name: &str) -> bool {
    name.len() > ".safetensors".len()
        && name.ends_with(".safetensors")
        && !name.starts_with('.')
        && !name.contains(['/', '\\', '\0', ':'])
}

/// The shards of a checkpoint and which tensors each must hold.
///
/// Tensor order in the `.apr` is deterministic: shards in [`ShardPlan::shards`] order (sorted by
/// file name, which for `model-0000N-of-0000M.safetensors` is their number), then each shard's
/// tensors in the order of their data in the file. The index's `weight_map` is a JSON object,
/// whose order no reader is bound to keep, so it is not used for order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardPlan {
    /// The shard file names, sorted, each once.
    pub shards: Vec<String>,
    /// Tensor name → the shard the index places it in; empty for a single file (its header is
    /// the whole truth).
    pub weight_map: BTreeMap<String, String>,
}

impl ShardPlan {
    /// The plan of a single `model.safetensors`.
    #[must_use]
    pub fn single() -> Self {
        Self {
            shards: vec![SINGLE_WEIGHTS.to_owned()],
            weight_map: BTreeMap::new(),
        }
    }

    /// The plan of `model.safetensors.index.json`: `{"weight_map": {tensor: shard, ...}}` (other
    /// members, such as `metadata.total_size`, are ignored, as transformers ignores them).
    ///
    /// # Errors
    /// [`HfError::Json`], [`HfError::Index`] for an index without a `weight_map` object of
    /// strings or with no tensor, [`HfError::ShardName`] for a shard that is not a plain name.
    pub fn from_index(bytes: &[u8]) -> Result<Self, HfError> {
        let value: serde_json::Value =
            serde_json::from_slice(bytes).map_err(|source| HfError::Json {
                file: INDEX,
                source,
            })?;
        let map = value
            .as_object()
            .ok_or(HfError::Index {
                reason: "is not a JSON object",
            })?
            .get("weight_map")
            .and_then(serde_json::Value::as_object)
            .ok_or(HfError::Index {
                reason: "has no \"weight_map\" object",
            })?;
        if map.is_empty() {
            return Err(HfError::Index {
                reason: "lists no tensor",
            });
        }
        let mut weight_map = BTreeMap::new();
        let mut shards = BTreeSet::new();
        for (tensor, shard) in map {
            let shard = shard.as_str().ok_or(HfError::Index {
                reason: "maps a tensor to something other than a file name",
            })?;
            if !is_plain_shard_name(shard) {
                return Err(HfError::ShardName {
                    shard: shard.to_owned(),
                });
            }
            shards.insert(shard.to_owned());
            weight_map.insert(tensor.clone(), shard.to_owned());
        }
        Ok(Self {
            shards: shards.into_iter().collect(),
            weight_map,
        })
    }

    /// True for a single file without index.
    #[must_use]
    pub fn is_single(&self) -> bool {
        self.weight_map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_needs_an_object_with_architectures() {
        let config =
            HfConfig::parse(br#"{"architectures": ["LlamaForCausalLM"], "model_type": "llama"}"#)
                .unwrap();
        assert_eq!(config.architecture(), "LlamaForCausalLM");
        assert_eq!(config.model_type.as_deref(), Some("llama"));
        for (text, expected) in [
            (&b"[1]"[..], "not a JSON object"),
            (b"{}", "no \"architectures\""),
            (br#"{"architectures": []}"#, "non-empty array"),
            (br#"{"architectures": [1]}"#, "non-empty array"),
            (
                br#"{"architectures": ["X"], "model_type": 3}"#,
                "\"model_type\"",
            ),
        ] {
            let error = HfConfig::parse(text).unwrap_err();
            assert!(error.to_string().contains(expected), "{error}");
            assert_eq!(error.signal(), Signal::InvalidFormat);
        }
        assert!(matches!(
            HfConfig::parse(b"{").unwrap_err(),
            HfError::Json {
                file: "config.json",
                ..
            }
        ));
    }

    #[test]
    fn shard_names_are_plain_file_names() {
        for good in [
            "model-00001-of-00002.safetensors",
            "model.safetensors",
            "a b.safetensors",
        ] {
            assert!(is_plain_shard_name(good), "{good}");
        }
        for bad in [
            "../model.safetensors",
            "/etc/model.safetensors",
            "sub/model.safetensors",
            "sub\\model.safetensors",
            "..",
            ".safetensors",
            ".hidden.safetensors",
            "model.bin",
            "c:model.safetensors",
            "",
        ] {
            assert!(!is_plain_shard_name(bad), "{bad}");
        }
    }

    #[test]
    fn the_plan_lists_shards_sorted_once() {
        let plan = ShardPlan::from_index(
            br#"{"metadata": {"total_size": 8}, "weight_map": {
                "b": "model-00002-of-00002.safetensors",
                "a": "model-00001-of-00002.safetensors",
                "c": "model-00002-of-00002.safetensors"}}"#,
        )
        .unwrap();
        assert_eq!(
            plan.shards,
            [
                "model-00001-of-00002.safetensors",
                "model-00002-of-00002.safetensors"
            ]
        );
        assert_eq!(plan.weight_map.len(), 3);
        assert!(!plan.is_single());
        assert!(ShardPlan::single().is_single());
    }

    #[test]
    fn bad_indexes_are_refused_by_name() {
        for (text, expected) in [
            (&b"[]"[..], "not a JSON object"),
            (b"{}", "no \"weight_map\""),
            (br#"{"weight_map": {}}"#, "no tensor"),
            (br#"{"weight_map": {"a": 1}}"#, "something other"),
            (
                br#"{"weight_map": {"a": "../x.safetensors"}}"#,
                "\"../x.safetensors\"",
            ),
        ] {
            let error = ShardPlan::from_index(text).unwrap_err();
            assert!(error.to_string().contains(expected), "{error}");
            assert!(error.to_string().starts_with("InvalidFormat"), "{error}");
        }
    }

    #[test]
    fn kept_files_fit_the_metadata_bound() {
        let total: u64 = KEPT_FILES.iter().map(|(_, limit)| limit).sum();
        assert!(
            total > MAX_KEPT_TOTAL,
            "the total bound is the one that binds"
        );
        assert_eq!(kept_limit("tokenizer.json"), Some(40 * MIB));
        assert_eq!(kept_limit("pytorch_model.bin"), None);
    }
}
