//! [`import_hf_dir`]: a Hugging Face model directory (`config.json`, `model.safetensors` or
//! shards with `model.safetensors.index.json`, the tokenizer files) into one `.apr` file, with
//! memory bounded by the largest tensor (`docs/apr.md` §11).
//!
//! Two passes over the shards, each mapped one at a time: the first reads only their headers and
//! checks them against the index (every tensor where the index says, none missing, none extra,
//! dtypes importable), so a bad checkpoint is refused before anything is written; the second
//! copies each tensor into the [`TensorFileWriter`], which spills it at once. The shards stay open
//! between the passes, so the second reads the files the first checked.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use envelope_core::fs::Destination;
use safetensors::tensor::{Dtype, SafeTensors};

use mapped_file::input::{self, Follow};

use super::{MappedFile, TensorFileWriter};
use crate::card::{ModelCard, SourceFiles};
use crate::error::{Error, Result};
use crate::hf::{
    CONFIG, HfConfig, HfError, INDEX, KEPT_FILES, MAX_INDEX_BYTES, MAX_KEPT_TOTAL, SINGLE_WEIGHTS,
    ShardPlan,
};
use crate::model_type::ModelType;
use crate::tensor::{DType, Tensor};

/// How far an import is, reported after each tensor (and once before the first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct HfImportProgress {
    /// Tensors written so far.
    pub tensors: usize,
    /// Tensors in the checkpoint.
    pub total_tensors: usize,
    /// Bytes of the shards read so far (headers included).
    pub bytes: u64,
    /// Bytes of all the shards.
    pub total_bytes: u64,
}

/// What [`import_hf_dir`] imported.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HfImportReport {
    /// Tensors written.
    pub tensors: usize,
    /// Shard files read (1 for `model.safetensors`).
    pub shards: usize,
    /// `config.json`'s first architecture (`LlamaForCausalLM`).
    pub architecture: String,
    /// `config.json`'s `model_type` (`llama`), when present.
    pub config_model_type: Option<String>,
    /// The files kept verbatim in the card, sorted.
    pub source_files: Vec<String>,
    /// Bytes of tensor data imported.
    pub bytes: u64,
}

/// Imports the Hugging Face model directory `dir` into the `.apr` file `destination`.
///
/// - `config.json` must be a JSON object with a non-empty `architectures` array;
/// - the weights are `model.safetensors`, or the shards `model.safetensors.index.json` names
///   (plain file names in `dir`), whose tensors must be exactly those the index places in each;
/// - every tensor is F32, F16 or BF16 and is written as stored, under its Hugging Face name, in
///   shard order (sorted by file name) then the order of the data in each shard;
/// - the files of [`crate::hf::KEPT_FILES`] present in `dir` are kept verbatim in the card's
///   `source_files` (replacing any the given card has), each within its size bound;
/// - a card without a name is named by the directory ([`model_name`]), as llama.cpp's converter
///   names a model (GGUF's `general.name`).
///
/// Files are opened without blocking and must be regular files; a symbolic link is followed only
/// to a file inside `dir`, or, for a Hugging Face cache snapshot (`.../snapshots/<revision>`),
/// inside that cache entry's `blobs`. Nothing is written to `destination` unless the whole import
/// succeeds. `progress` is called before the first tensor and after each.
///
/// # Errors
/// [`HfError`] (`Error::HfDirectory`) naming the file, shard or tensor at fault; `ExportFailed`
/// for a tensor of another dtype; as [`Tensor::new`]; `Io` for the destination or the writer.
pub fn import_hf_dir(
    dir: &Path,
    destination: impl Into<Destination>,
    model_type: ModelType,
    mut card: ModelCard,
    compression: envelope_core::Compression,
    progress: &mut dyn FnMut(HfImportProgress),
) -> Result<HfImportReport> {
    let model_dir = ModelDir::new(dir)?;
    if card.name.is_empty() {
        card.name = model_name(dir).unwrap_or_default();
    }
    let kept = model_dir.kept_files()?;
    let config = HfConfig::parse(kept.get(CONFIG).ok_or_else(|| HfError::NoConfig {
        dir: dir.to_owned(),
    })?)?;
    let plan = model_dir.plan()?;
    let shards = plan
        .shards
        .iter()
        .map(|name| {
            let file = model_dir.open(name)?.ok_or_else(|| HfError::MissingShard {
                shard: name.clone(),
            })?;
            Ok((name.as_str(), file))
        })
        .collect::<Result<Vec<_>>>()?;
    let headers = check_headers(&plan, &shards)?;
    let mut done = HfImportProgress {
        tensors: 0,
        total_tensors: headers.iter().map(|h| h.tensors.len()).sum(),
        bytes: 0,
        total_bytes: headers.iter().map(|h| h.file_len).sum(),
    };
    progress(done);

    let mut writer = TensorFileWriter::new(destination, compression)?;
    let mut bytes = 0;
    for ((shard, file), header) in shards.iter().zip(&headers) {
        let mapped = MappedFile::from_file(file, mapped_file::Mode::Map)?;
        // Read front to back: twice the read-ahead.
        mapped.advise_sequential();
        if mapped.len() as u64 != header.file_len {
            return Err(HfError::Open {
                file: dir.join(shard),
                source: std::io::Error::other("the shard changed during the import"),
            }
            .into());
        }
        for entry in &header.tensors {
            let data = mapped
                .get(header.data_start + entry.start..header.data_start + entry.end)
                .ok_or_else(|| HfError::Open {
                    file: dir.join(shard),
                    source: std::io::Error::other("the shard changed during the import"),
                })?;
            let tensor = Tensor::new(
                entry.name.clone(),
                entry.dtype,
                entry.shape.clone(),
                data.to_vec(),
            )?;
            writer.push(&tensor)?;
            bytes += data.len() as u64;
            done.tensors += 1;
            done.bytes = header.offset + (header.data_start + entry.end) as u64;
            progress(done);
        }
    }
    let source_files: Vec<String> = kept.keys().cloned().collect();
    card.source_files = SourceFiles(kept);
    writer.finish(model_type, &card, None)?;
    Ok(HfImportReport {
        tensors: done.total_tensors,
        shards: shards.len(),
        architecture: config.architecture().to_owned(),
        config_model_type: config.model_type,
        source_files,
        bytes,
    })
}

/// The name of the model in `dir`: its directory name, or for a Hugging Face cache snapshot
/// (`models--ORG--NAME/snapshots/REVISION`) `ORG/NAME`.
#[must_use]
pub fn model_name(dir: &Path) -> Option<String> {
    let dir = std::fs::canonicalize(dir).ok()?;
    let last = dir.file_name()?.to_str()?;
    let parent = dir.parent()?;
    if parent.file_name().and_then(|n| n.to_str()) == Some("snapshots") {
        let repo = parent.parent()?.file_name()?.to_str()?;
        if let Some(id) = repo.strip_prefix("models--") {
            return Some(id.replace("--", "/"));
        }
    }
    Some(last.to_owned())
}

/// One tensor of a shard's header: where its data is (relative to the data section).
struct Entry {
    name: String,
    dtype: DType,
    shape: Vec<u64>,
    start: usize,
    end: usize,
}

/// A shard's checked header.
struct Header {
    /// Its tensors in the order of their data.
    tensors: Vec<Entry>,
    /// Where the data section starts (8 + the header's length).
    data_start: usize,
    /// The file's length.
    file_len: u64,
    /// The total length of the shards before it (for progress).
    offset: u64,
}

/// Reads every shard's header (each mapped in turn, no tensor data touched) and checks it
/// against the plan: every tensor in the shard the index names, every listed tensor found, every
/// dtype importable.
fn check_headers(plan: &ShardPlan, shards: &[(&str, File)]) -> Result<Vec<Header>> {
    let mut remaining = plan.weight_map.clone();
    let mut headers = Vec::with_capacity(shards.len());
    let mut offset = 0;
    for (shard, file) in shards {
        let mapped = MappedFile::from_file(file, mapped_file::Mode::Map)?;
        let refused = |source| HfError::Shard {
            shard: (*shard).to_owned(),
            source,
        };
        let (header_len, metadata) = SafeTensors::read_metadata(&mapped).map_err(refused)?;
        let mut tensors = Vec::new();
        for name in metadata.offset_keys() {
            if !plan.is_single() {
                match remaining.remove(&name) {
                    Some(listed) if listed == *shard => {}
                    listed => {
                        let listed = listed.or_else(|| plan.weight_map.get(&name).cloned());
                        return Err(match listed {
                            Some(listed) => HfError::WrongShard {
                                tensor: name,
                                shard: (*shard).to_owned(),
                                listed,
                            },
                            None => HfError::NotInIndex {
                                tensor: name,
                                shard: (*shard).to_owned(),
                            },
                        }
                        .into());
                    }
                }
            }
            let Some(info) = metadata.info(&name) else {
                continue;
            };
            let dtype = match info.dtype {
                Dtype::F32 => DType::F32,
                Dtype::F16 => DType::F16,
                Dtype::BF16 => DType::BF16,
                _ => {
                    return Err(Error::ExportFailed {
                        target: ".apr",
                        tensor: name,
                        reason: "a Hugging Face import takes F32, F16 and BF16 tensors",
                    });
                }
            };
            tensors.push(Entry {
                shape: info.shape.iter().map(|&d| d as u64).collect(),
                start: info.data_offsets.0,
                end: info.data_offsets.1,
                name,
                dtype,
            });
        }
        let file_len = mapped.len() as u64;
        headers.push(Header {
            tensors,
            data_start: 8 + header_len,
            file_len,
            offset,
        });
        offset += file_len;
    }
    if let Some((tensor, shard)) = remaining.into_iter().next() {
        return Err(HfError::MissingTensor { tensor, shard }.into());
    }
    Ok(headers)
}

/// The model directory, with the places its symbolic links may lead.
struct ModelDir {
    /// The directory as given (for messages).
    dir: PathBuf,
    /// Canonical directories a file may be in: the directory itself and, for a Hugging Face cache
    /// snapshot (`models--org--name/snapshots/<revision>`), `models--org--name/blobs`, where its
    /// links lead.
    roots: Vec<PathBuf>,
}

impl ModelDir {
    fn new(dir: &Path) -> Result<Self> {
        let open_error = |source| HfError::Open {
            file: dir.to_owned(),
            source,
        };
        let root = std::fs::canonicalize(dir).map_err(open_error)?;
        if !std::fs::metadata(&root).map_err(open_error)?.is_dir() {
            return Err(open_error(std::io::Error::other("not a directory")).into());
        }
        let mut roots = vec![root.clone()];
        if let Some(snapshots) = root.parent()
            && snapshots.file_name() == Some("snapshots".as_ref())
            && let Some(entry) = snapshots.parent()
            && let Ok(blobs) = std::fs::canonicalize(entry.join("blobs"))
        {
            roots.push(blobs);
        }
        Ok(Self {
            dir: dir.to_owned(),
            roots,
        })
    }

    /// Opens the file `name` of the directory for reading, `None` if there is none: a regular
    /// file, reached through a link only if the link stays inside [`ModelDir::roots`].
    fn open(&self, name: &str) -> Result<Option<File>> {
        let path = self.dir.join(name);
        let open_error = |source| HfError::Open {
            file: path.clone(),
            source,
        };
        let link = match std::fs::symlink_metadata(&path) {
            Ok(metadata) => metadata.file_type().is_symlink(),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(open_error(error).into()),
        };
        let target = if link {
            let target = std::fs::canonicalize(&path).map_err(open_error)?;
            if !self.roots.iter().any(|root| target.starts_with(root)) {
                return Err(HfError::LinkEscapes {
                    file: path.clone(),
                    target,
                }
                .into());
            }
            target
        } else {
            path.clone()
        };
        // The last component is no link now (a canonical path, or checked above): a link swapped
        // in meanwhile is refused (O_NOFOLLOW), not followed.
        Ok(Some(
            input::open(&target, Follow::NoSymlinks).map_err(open_error)?,
        ))
    }

    /// Reads the file `name` if present, refusing one over `limit` bytes without reading it.
    fn read(&self, name: &str, limit: u64) -> Result<Option<Vec<u8>>> {
        let Some(file) = self.open(name)? else {
            return Ok(None);
        };
        let bytes = input::read_file(file, limit).map_err(|source| HfError::Open {
            file: self.dir.join(name),
            source,
        })?;
        Ok(Some(bytes.ok_or_else(|| HfError::TooLarge {
            file: name.to_owned(),
            limit,
        })?))
    }

    /// The files of [`KEPT_FILES`] present, each and together within their bounds.
    fn kept_files(&self) -> Result<BTreeMap<String, Vec<u8>>> {
        let mut kept = BTreeMap::new();
        let mut total: u64 = 0;
        for &(name, limit) in KEPT_FILES {
            if let Some(bytes) = self.read(name, limit)? {
                total += bytes.len() as u64;
                if total > MAX_KEPT_TOTAL {
                    return Err(HfError::KeptTotal {
                        total,
                        limit: MAX_KEPT_TOTAL,
                    }
                    .into());
                }
                kept.insert(name.to_owned(), bytes);
            }
        }
        Ok(kept)
    }

    /// The shard plan: the index's when there is one, else `model.safetensors`.
    fn plan(&self) -> Result<ShardPlan> {
        let single = std::fs::symlink_metadata(self.dir.join(SINGLE_WEIGHTS)).is_ok();
        match self.read(INDEX, MAX_INDEX_BYTES)? {
            Some(index) => {
                let plan = ShardPlan::from_index(&index)?;
                if single && plan.shards != [SINGLE_WEIGHTS] {
                    return Err(HfError::AmbiguousWeights {
                        dir: self.dir.clone(),
                    }
                    .into());
                }
                Ok(plan)
            }
            None if single => Ok(ShardPlan::single()),
            None => Err(HfError::NoWeights {
                dir: self.dir.clone(),
            }
            .into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_is_named_by_its_directory_or_its_hugging_face_cache_repository() {
        let root = tempfile::tempdir().unwrap();
        let plain = root.path().join("TinyLlama-1.1B");
        let snapshot = root
            .path()
            .join("models--meta-llama--Llama-3.2-1B/snapshots/4e20de3");
        std::fs::create_dir_all(&plain).unwrap();
        std::fs::create_dir_all(&snapshot).unwrap();
        assert_eq!(model_name(&plain).as_deref(), Some("TinyLlama-1.1B"));
        assert_eq!(
            model_name(&snapshot).as_deref(),
            Some("meta-llama/Llama-3.2-1B")
        );
    }
}
