//! SafeTensors export (001 §6.2.6) and import (read-only, through the `safetensors` crate, which
//! bounds the header at 100 MB and checks that every tensor's offsets are in bounds, contiguous
//! and match its dtype and shape).
//!
//! An export has one of two layouts ([`Layout`], `docs/apr.md` §7):
//! - **[`Layout::Transformers`]**, for a model imported from a Hugging Face directory (its card
//!   keeps `config.json` in `source_files`): the directory `transformers` loads with
//!   `from_pretrained`. `model.safetensors` (or `model-0000N-of-0000M.safetensors` shards and
//!   `model.safetensors.index.json` past [`SafeTensorsOptions::max_shard_size`]), the tensors
//!   under their Hugging Face names, `__metadata__` `{"format": "pt"}`; `config.json` with its
//!   dtype set to what was written; the kept tokenizer and generation files verbatim.
//!   transformers cannot run quantized blocks, so a quantized model needs
//!   [`SafeTensorsOptions::dtype`] (dequantized to a float type) or
//!   [`SafeTensorsOptions::raw_quantized`] (the other layout); otherwise it is refused.
//! - **[`Layout::Spec`]**, for every other model: `weights.safetensors` with `scales.json` /
//!   `mins.json` sidecars. Plain tensors as they are; Q8_0 as an `I8` tensor of the original shape
//!   with one f32 scale per block in `scales.json`; Q4_0/Q4_1 as a `U8` tensor of packed nibbles
//!   (shape `[..., last / 2]`, GGUF nibble order) with scales (and minimums in `mins.json`);
//!   Q8_TENSOR as an `I8` tensor with its scale and zero point in the header's `__metadata__`.
//!   `__metadata__` records the tensor order (`apr.tensor_order`: the file holds the tensors
//!   sorted by dtype and name, as the `safetensors` crate writes them) and each quantized tensor's
//!   type (`apr.dtype.<name>`), which is how [`import`] rebuilds the exact blocks. A file holding
//!   such int8 forms says `"format": "apr-quantized"` ([`QUANTIZED_FORMAT`]): transformers
//!   refuses any format but `pt`, `tf`, `flax` and `mlx`, so integer codes are never loaded as
//!   weights by mistake.
//!
//! Memory holds one tensor: a [`Plan`] is made from the tensor directory alone (sizes and offsets
//! follow from dtype and shape), and [`PlannedFile::write`] fetches each tensor as it writes it.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;

use half::{bf16, f16};
use safetensors::tensor::{Dtype, SafeTensors, TensorInfo};

use crate::card::{ModelCard, TensorEntry};
use crate::error::{Error, Result};
use crate::model::TensorModel;
use crate::quant::QuantType;
use crate::quant::q8_tensor;
use crate::tensor::{DType, Tensor};

const TARGET: &str = "SafeTensors";
/// `__metadata__` key holding the tensor order as a JSON array of names.
pub const ORDER_KEY: &str = "apr.tensor_order";
/// `__metadata__` key prefix of a quantized tensor's type (`apr.dtype.<name>` = `q4_0`).
pub const DTYPE_KEY_PREFIX: &str = "apr.dtype.";
/// `__metadata__` key naming the framework of the tensors (transformers reads it).
pub const FORMAT_KEY: &str = "format";
/// `__metadata__.format` of a file of float or plain tensors: PyTorch's, as `save_pretrained`
/// writes it.
pub const TORCH_FORMAT: &str = "pt";
/// `__metadata__.format` of a file holding quantized tensors in their int8 forms. Not one of the
/// formats transformers accepts (`pt`, `tf`, `flax`, `mlx`: anything else raises `OSError`), so
/// the integer codes cannot be loaded as float weights by mistake.
pub const QUANTIZED_FORMAT: &str = "apr-quantized";
/// Default [`SafeTensorsOptions::max_shard_size`]: transformers' `save_pretrained` default, "5GB"
/// (decimal).
pub const DEFAULT_MAX_SHARD_SIZE: u64 = 5_000_000_000;
/// The largest header a reader accepts (the `safetensors` crate's `MAX_HEADER_SIZE`).
pub const MAX_HEADER_BYTES: usize = 100_000_000;
/// Single weights file of [`Layout::Transformers`] (the name `save_pretrained` writes).
pub const HF_WEIGHTS: &str = crate::hf::SINGLE_WEIGHTS;
/// Shard index of [`Layout::Transformers`].
pub const HF_INDEX: &str = crate::hf::INDEX;
/// Weights file of [`Layout::Spec`].
pub const SPEC_WEIGHTS: &str = "weights.safetensors";
/// Scales sidecar of [`Layout::Spec`].
pub const SCALES: &str = "scales.json";
/// Minimums sidecar of [`Layout::Spec`].
pub const MINS: &str = "mins.json";

/// Whether an export writes files named `name` (either layout): an earlier export made of these
/// alone may be replaced.
#[must_use]
pub fn is_export_file(name: &str) -> bool {
    [HF_WEIGHTS, HF_INDEX, SPEC_WEIGHTS, SCALES, MINS].contains(&name)
        || crate::hf::kept_limit(name).is_some()
        || shard_numbers(name).is_some()
}

/// `(N, M)` of a shard name `model-0000N-of-0000M.safetensors`.
fn shard_numbers(name: &str) -> Option<(u32, u32)> {
    let middle = name.strip_prefix("model-")?.strip_suffix(".safetensors")?;
    let (n, m) = middle.split_once("-of-")?;
    let number = |s: &str| {
        (s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    Some((number(n)?, number(m)?))
}

fn shard_name(n: usize, of: usize) -> String {
    format!("model-{n:05}-of-{of:05}.safetensors")
}

/// The float type an export converts every float tensor to (`--dtype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FloatType {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    BF16,
}

impl FloatType {
    /// The `.apr` dtype.
    #[must_use]
    pub const fn dtype(self) -> DType {
        match self {
            Self::F32 => DType::F32,
            Self::F16 => DType::F16,
            Self::BF16 => DType::BF16,
        }
    }

    /// The name `torch` gives it (`config.json`'s `torch_dtype`): `float32`, `float16`,
    /// `bfloat16`.
    #[must_use]
    pub const fn torch_name(self) -> &'static str {
        match self {
            Self::F32 => "float32",
            Self::F16 => "float16",
            Self::BF16 => "bfloat16",
        }
    }

    const fn of(dtype: DType) -> Option<Self> {
        match dtype {
            DType::F32 => Some(Self::F32),
            DType::F16 => Some(Self::F16),
            DType::BF16 => Some(Self::BF16),
            _ => None,
        }
    }

    const fn safetensors(self) -> Dtype {
        match self {
            Self::F32 => Dtype::F32,
            Self::F16 => Dtype::F16,
            Self::BF16 => Dtype::BF16,
        }
    }

    const fn bytes(self) -> u64 {
        match self {
            Self::F32 => 4,
            Self::F16 | Self::BF16 => 2,
        }
    }

    /// `values` in this type, little-endian, rounded to nearest even (as `torch`'s `.to()`).
    fn encode(self, values: &[f32]) -> Vec<u8> {
        match self {
            Self::F32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            Self::F16 => values
                .iter()
                .flat_map(|&v| f16::from_f32(v).to_le_bytes())
                .collect(),
            Self::BF16 => values
                .iter()
                .flat_map(|&v| bf16::from_f32(v).to_le_bytes())
                .collect(),
        }
    }
}

/// Export settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SafeTensorsOptions {
    /// Convert every float tensor to this type, dequantizing Q8_0, Q4_0, Q4_1 and Q8_TENSOR
    /// tensors (`I8`/`U8` tensors stay as they are). `None` keeps each tensor's type.
    pub dtype: Option<FloatType>,
    /// [`Layout::Transformers`]: the most bytes of tensor data in one shard file; past it the
    /// weights are split into shards (a larger tensor gets a shard of its own), as
    /// transformers' `save_pretrained(max_shard_size=...)` splits them.
    pub max_shard_size: u64,
    /// Write a quantized model with `config.json` in [`Layout::Spec`] (int8 + scales, which
    /// transformers refuses) instead of refusing it.
    pub raw_quantized: bool,
}

impl Default for SafeTensorsOptions {
    fn default() -> Self {
        Self {
            dtype: None,
            max_shard_size: DEFAULT_MAX_SHARD_SIZE,
            raw_quantized: false,
        }
    }
}

/// The layout of an export (module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// A Hugging Face model directory (`model.safetensors`, `config.json`, tokenizer files).
    Transformers,
    /// 001 §6.2.6: `weights.safetensors` with `scales.json` / `mins.json`.
    Spec,
}

impl Layout {
    /// `transformers` or `spec`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Transformers => "transformers",
            Self::Spec => "spec",
        }
    }
}

/// The files of an in-memory export in [`Layout::Spec`] ([`export`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    /// `weights.safetensors`.
    pub weights: Vec<u8>,
    /// `scales.json`: tensor name → f32 scale per block (when a block type is present).
    pub scales: Option<String>,
    /// `mins.json`: tensor name → f32 minimum per block (when Q4_1 is present).
    pub mins: Option<String>,
}

/// How a tensor's bytes become the bytes written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// As stored.
    Stored,
    /// Converted (dequantized) to a float type.
    Convert(FloatType),
    /// Q8_0/Q4_0/Q4_1: the quant bytes of every block; scales (and minimums) to the sidecars.
    Blocks(QuantType),
    /// Q8_TENSOR: the i8 values; scale and zero point to `__metadata__`.
    Q8Tensor,
}

/// One tensor of a weights file.
#[derive(Debug, Clone)]
struct Slot {
    position: usize,
    entry: TensorEntry,
    dtype: DType,
    form: Form,
    written: Dtype,
    shape: Vec<usize>,
    len: u64,
}

#[derive(Debug, Clone)]
enum Content {
    /// A SafeTensors file: its tensors in the order of their data.
    Weights(Vec<Slot>),
    /// `scales.json` (`mins == false`) or `mins.json` of the block tensors listed, by name.
    Sidecar { slots: Vec<Slot>, mins: bool },
    /// Bytes known when planning (`config.json`, kept files, the shard index).
    Bytes(Vec<u8>),
}

/// What an export writes: the files, each planned from the tensor directory alone. Write each
/// with [`PlannedFile::write`].
#[derive(Debug, Clone)]
pub struct Plan {
    layout: Layout,
    order: Vec<String>,
    files: Vec<(String, Content)>,
}

fn failed(tensor: &str, reason: &'static str) -> Error {
    Error::ExportFailed {
        target: TARGET,
        tensor: tensor.to_owned(),
        reason,
    }
}

/// Why a quantized model with `config.json` is refused without a float type.
const QUANTIZED_FOR_TRANSFORMERS: &str = "transformers cannot run quantized blocks: choose a \
    float type (apr export --dtype f32, f16 or bf16 dequantizes), or the int8 + scales form of \
    001 §6.2.6 that transformers refuses to load (--raw-quantized)";

fn slot(position: usize, entry: &TensorEntry, target: Option<FloatType>) -> Result<Slot> {
    let dtype = DType::from_code(entry.dtype)?;
    let mut shape = entry
        .shape
        .iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| failed(&entry.name, "too large for this platform"))
        })
        .collect::<Result<Vec<usize>>>()?;
    let elements = crate::tensor::element_count(&entry.shape)
        .ok_or_else(|| failed(&entry.name, "its element count overflows"))?;
    let (form, written) = match (dtype, target) {
        (DType::Quantized(QuantType::Custom), _) => {
            return Err(failed(
                &entry.name,
                "plugin quantizations have no SafeTensors layout",
            ));
        }
        (DType::I8, _) => (Form::Stored, Dtype::I8),
        (DType::U8, _) => (Form::Stored, Dtype::U8),
        (_, Some(target)) if FloatType::of(dtype) == Some(target) => {
            (Form::Stored, target.safetensors())
        }
        (_, Some(target)) => (Form::Convert(target), target.safetensors()),
        (DType::Quantized(QuantType::Q8Tensor), None) => (Form::Q8Tensor, Dtype::I8),
        (DType::Quantized(quant), None) => {
            if quant != QuantType::Q8_0 {
                // Two nibbles per byte along the last dimension.
                let last = shape
                    .last_mut()
                    .ok_or_else(|| failed(&entry.name, "a quantized scalar has no rows"))?;
                if !last.is_multiple_of(2) {
                    return Err(failed(
                        &entry.name,
                        "a 4-bit tensor's last dimension must be even to pack nibble pairs",
                    ));
                }
                *last /= 2;
            }
            let written = if quant == QuantType::Q8_0 {
                Dtype::I8
            } else {
                Dtype::U8
            };
            (Form::Blocks(quant), written)
        }
        (DType::F32, None) => (Form::Stored, Dtype::F32),
        (DType::F16, None) => (Form::Stored, Dtype::F16),
        (DType::BF16, None) => (Form::Stored, Dtype::BF16),
    };
    let len = match form {
        Form::Convert(target) => elements.checked_mul(target.bytes()),
        Form::Blocks(QuantType::Q8_0) | Form::Q8Tensor => Some(elements),
        Form::Blocks(_) => Some(elements / 2),
        Form::Stored => dtype.byte_len(elements),
    }
    .ok_or_else(|| failed(&entry.name, "its byte size overflows"))?;
    Ok(Slot {
        position,
        entry: entry.clone(),
        dtype,
        form,
        written,
        shape,
        len,
    })
}

/// Sorts a file's tensors as the `safetensors` crate (and so `save_pretrained`) writes them: by
/// descending dtype alignment, then name. Data after the 8-byte-padded header is then aligned for
/// every tensor, and a model imported from a Hugging Face file is written back in its own order.
fn sort_for_file(slots: &mut [Slot]) {
    slots.sort_by(|a, b| {
        b.written
            .cmp(&a.written)
            .then_with(|| a.entry.name.cmp(&b.entry.name))
    });
}

impl Plan {
    /// Plans the export of the tensors `entries` (a model's tensor directory, in payload order) of
    /// a model with `card`.
    ///
    /// # Errors
    /// `DuplicateName`; `ExportFailed` naming a tensor SafeTensors cannot hold (plugin
    /// quantizations, a quantized scalar, a 4-bit tensor whose last dimension is odd) and, for a
    /// model with `config.json`, the first quantized tensor when neither `dtype` nor
    /// `raw_quantized` is set; `UnsupportedQuantization` for an unknown dtype code;
    /// `InvalidFormat` if `config.json` is not a JSON object.
    pub fn new(
        entries: &[TensorEntry],
        card: &ModelCard,
        options: &SafeTensorsOptions,
    ) -> Result<Self> {
        crate::error::check_unique(entries.iter().map(|e| e.name.as_str()))?;
        let slots = entries
            .iter()
            .enumerate()
            .map(|(i, entry)| slot(i, entry, options.dtype))
            .collect::<Result<Vec<_>>>()?;
        let quantized = slots
            .iter()
            .find(|s| matches!(s.form, Form::Blocks(_) | Form::Q8Tensor));
        let order = entries.iter().map(|e| e.name.clone()).collect();
        match (card.source_files.get(crate::hf::CONFIG), quantized) {
            (Some(_), Some(_)) if options.raw_quantized => Ok(Self::spec(slots, order)),
            (Some(_), Some(slot)) => Err(failed(&slot.entry.name, QUANTIZED_FOR_TRANSFORMERS)),
            (Some(config), None) => {
                Self::transformers(slots, order, card, config, options.max_shard_size)
            }
            (None, _) => Ok(Self::spec(slots, order)),
        }
    }

    fn spec(mut slots: Vec<Slot>, order: Vec<String>) -> Self {
        let mut by_name: Vec<Slot> = slots
            .iter()
            .filter(|s| matches!(s.form, Form::Blocks(_)))
            .cloned()
            .collect();
        by_name.sort_by(|a, b| a.entry.name.cmp(&b.entry.name));
        let mins: Vec<Slot> = by_name
            .iter()
            .filter(|s| s.form == Form::Blocks(QuantType::Q4_1))
            .cloned()
            .collect();
        sort_for_file(&mut slots);
        let mut files = vec![(SPEC_WEIGHTS.to_owned(), Content::Weights(slots))];
        if !by_name.is_empty() {
            files.push((
                SCALES.to_owned(),
                Content::Sidecar {
                    slots: by_name,
                    mins: false,
                },
            ));
        }
        if !mins.is_empty() {
            files.push((
                MINS.to_owned(),
                Content::Sidecar {
                    slots: mins,
                    mins: true,
                },
            ));
        }
        Self {
            layout: Layout::Spec,
            order,
            files,
        }
    }

    fn transformers(
        slots: Vec<Slot>,
        order: Vec<String>,
        card: &ModelCard,
        config: &[u8],
        max_shard_size: u64,
    ) -> Result<Self> {
        // huggingface_hub's `split_state_dict_into_shards_factory`, in the checkpoint's order: a
        // tensor that would tip the current shard over the limit starts a new one; a tensor over
        // the limit by itself gets its own shard at once.
        let mut shards: Vec<Vec<Slot>> = Vec::new();
        let mut current: Vec<Slot> = Vec::new();
        let mut current_size = 0u64;
        let (mut total_size, mut total_parameters) = (0u64, 0u64);
        let mut elements_by_type = [
            (FloatType::F32, 0u64),
            (FloatType::F16, 0),
            (FloatType::BF16, 0),
        ];
        for slot in slots {
            let elements = crate::tensor::element_count(&slot.entry.shape).unwrap_or(0);
            total_size = total_size.saturating_add(slot.len);
            total_parameters = total_parameters.saturating_add(elements);
            let float = match slot.form {
                Form::Convert(target) => Some(target),
                _ => FloatType::of(slot.dtype),
            };
            if let Some((_, count)) = elements_by_type.iter_mut().find(|(f, _)| Some(*f) == float) {
                *count = count.saturating_add(elements);
            }
            if slot.len > max_shard_size {
                shards.push(vec![slot]);
                continue;
            }
            if !current.is_empty() && current_size.saturating_add(slot.len) > max_shard_size {
                shards.push(std::mem::take(&mut current));
                current_size = 0;
            }
            current_size += slot.len;
            current.push(slot);
        }
        if !current.is_empty() || shards.is_empty() {
            shards.push(current);
        }
        // config.json says the type most of the weights have (every float tensor's, when
        // converted).
        let written = elements_by_type
            .iter()
            .filter(|(_, count)| *count > 0)
            .max_by_key(|(_, count)| *count)
            .map(|&(float, _)| float);
        let mut files = Vec::new();
        let count = shards.len();
        let mut weight_map = BTreeMap::new();
        for (i, mut shard) in shards.into_iter().enumerate() {
            let name = if count == 1 {
                HF_WEIGHTS.to_owned()
            } else {
                shard_name(i + 1, count)
            };
            for slot in &shard {
                weight_map.insert(slot.entry.name.clone(), name.clone());
            }
            sort_for_file(&mut shard);
            files.push((name, Content::Weights(shard)));
        }
        if count > 1 {
            // `save_pretrained`'s index: `json.dumps(index, indent=2, sort_keys=True) + "\n"`.
            let index = serde_json::json!({
                "metadata": { "total_parameters": total_parameters, "total_size": total_size },
                "weight_map": weight_map,
            });
            files.push((HF_INDEX.to_owned(), Content::Bytes(pretty_json(&index)?)));
        }
        files.push((
            crate::hf::CONFIG.to_owned(),
            Content::Bytes(config_with_dtype(config, written)?),
        ));
        // The other kept files as they were kept. Only these names are written, so a card cannot
        // name a path.
        for (name, _) in crate::hf::KEPT_FILES
            .iter()
            .filter(|(n, _)| *n != crate::hf::CONFIG)
        {
            if let Some(bytes) = card.source_files.get(name) {
                files.push(((*name).to_owned(), Content::Bytes(bytes.to_vec())));
            }
        }
        Ok(Self {
            layout: Layout::Transformers,
            order,
            files,
        })
    }

    /// The layout chosen.
    #[must_use]
    pub const fn layout(&self) -> Layout {
        self.layout
    }

    /// The files to write, in order.
    pub fn files(&self) -> impl Iterator<Item = PlannedFile<'_>> {
        self.files.iter().map(|(name, content)| PlannedFile {
            plan: self,
            name,
            content,
        })
    }

    /// The names of the files, in order.
    pub fn file_names(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|(name, _)| name.as_str())
    }

    /// `__metadata__` of [`Layout::Spec`]'s weights: `format`, the order, and each quantized
    /// tensor's type (and Q8_TENSOR's parameters, for which those tensors are fetched).
    fn spec_info(
        &self,
        slots: &[Slot],
        tensor: &mut dyn FnMut(usize) -> Result<Tensor>,
    ) -> Result<HashMap<String, String>> {
        let mut info = HashMap::new();
        let mut quantized = false;
        for slot in slots {
            let name = &slot.entry.name;
            match slot.form {
                Form::Blocks(quant) => {
                    info.insert(format!("{DTYPE_KEY_PREFIX}{name}"), quant.name().to_owned());
                }
                Form::Q8Tensor => {
                    let t = fetch(slot, tensor)?;
                    let (params, _) = q8_tensor::split(t.data())
                        .ok_or_else(|| failed(name, "the Q8_TENSOR header is missing"))?;
                    info.insert(format!("{DTYPE_KEY_PREFIX}{name}"), "q8_tensor".to_owned());
                    info.insert(
                        format!("apr.q8_tensor.{name}.scale"),
                        params.scale.to_string(),
                    );
                    info.insert(
                        format!("apr.q8_tensor.{name}.zero_point"),
                        params.zero_point.to_string(),
                    );
                }
                Form::Stored | Form::Convert(_) => continue,
            }
            quantized = true;
        }
        let format = if quantized {
            QUANTIZED_FORMAT
        } else {
            TORCH_FORMAT
        };
        info.insert(FORMAT_KEY.to_owned(), format.to_owned());
        info.insert(ORDER_KEY.to_owned(), to_json(&self.order)?);
        Ok(info)
    }
}

/// One file of a [`Plan`].
#[derive(Debug, Clone, Copy)]
pub struct PlannedFile<'a> {
    plan: &'a Plan,
    name: &'a str,
    content: &'a Content,
}

impl PlannedFile<'_> {
    /// The file's name in the export directory.
    #[must_use]
    pub const fn name(&self) -> &str {
        self.name
    }

    /// Writes the file to `out`, fetching each tensor it needs with `tensor(position)` (payload
    /// order) and dropping it once written: memory holds one tensor and its converted copy.
    /// Q8_TENSOR tensors of [`Layout::Spec`] are fetched twice, first for their scale and zero
    /// point, which the header holds; block tensors once more for each sidecar.
    ///
    /// # Errors
    /// `Io` from `out`; `FetchedTensorDiffers` if a fetched tensor is not the one planned;
    /// `QuantizationCorrupt` for block data that does not dequantize; `SafeTensorsRefused` if the
    /// header is over [`MAX_HEADER_BYTES`]; whatever `tensor` returns.
    pub fn write(
        &self,
        out: &mut dyn Write,
        tensor: &mut dyn FnMut(usize) -> Result<Tensor>,
    ) -> Result<()> {
        match self.content {
            Content::Bytes(bytes) => Ok(out.write_all(bytes)?),
            Content::Sidecar { slots, mins } => write_sidecar(slots, *mins, out, tensor),
            Content::Weights(slots) => {
                let info = match self.plan.layout {
                    Layout::Transformers => {
                        HashMap::from([(FORMAT_KEY.to_owned(), TORCH_FORMAT.to_owned())])
                    }
                    Layout::Spec => self.plan.spec_info(slots, tensor)?,
                };
                out.write_all(&header(&info, slots)?)?;
                for slot in slots {
                    let bytes = written_bytes(slot, fetch(slot, tensor)?)?;
                    if bytes.len() as u64 != slot.len {
                        return Err(Error::FetchedTensorDiffers {
                            tensor: slot.entry.name.clone(),
                        });
                    }
                    out.write_all(&bytes)?;
                }
                Ok(())
            }
        }
    }
}

/// `value` as JSON. Serializing these values (strings, maps of strings, numbers) cannot fail; a
/// writer's failure would be `Io`.
fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    Ok(serde_json::to_string(value).map_err(std::io::Error::from)?)
}

/// `value` as Python's `json.dumps(value, indent=2, sort_keys=True)` writes it, with a newline
/// (serde_json's maps are sorted by key).
fn pretty_json(value: &serde_json::Value) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(std::io::Error::from)?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// `config.json` saying `written` as its dtype: every one of `dtype` (transformers ≥ 4.56) and
/// `torch_dtype` (earlier, still read) it has is set, or `torch_dtype` is added; the file is kept
/// byte for byte when it already says so.
fn config_with_dtype(config: &[u8], written: Option<FloatType>) -> Result<Vec<u8>> {
    let mut value: serde_json::Value = serde_json::from_slice(config)
        .map_err(|source| Error::malformed("config.json is not JSON", source))?;
    let object = value
        .as_object_mut()
        .ok_or_else(|| Error::inconsistent("config.json is not a JSON object"))?;
    let Some(written) = written else {
        return Ok(config.to_vec());
    };
    let name = written.torch_name();
    let keys: Vec<&str> = ["dtype", "torch_dtype"]
        .into_iter()
        .filter(|key| object.contains_key(*key))
        .collect();
    if !keys.is_empty() && keys.iter().all(|key| object[*key] == name) {
        return Ok(config.to_vec());
    }
    for key in if keys.is_empty() {
        vec!["torch_dtype"]
    } else {
        keys
    } {
        object.insert(key.to_owned(), name.into());
    }
    pretty_json(&value)
}

/// The tensor `slot` plans, fetched and checked against its entry.
fn fetch(slot: &Slot, tensor: &mut dyn FnMut(usize) -> Result<Tensor>) -> Result<Tensor> {
    let t = tensor(slot.position)?;
    if t.name != slot.entry.name || t.dtype != slot.dtype || t.shape != slot.entry.shape {
        return Err(Error::FetchedTensorDiffers {
            tensor: slot.entry.name.clone(),
        });
    }
    Ok(t)
}

/// The bytes `slot` writes of its tensor `t`.
fn written_bytes(slot: &Slot, t: Tensor) -> Result<Vec<u8>> {
    Ok(match slot.form {
        Form::Stored => t.into_data(),
        Form::Convert(target) => target.encode(&t.to_f32()?),
        Form::Blocks(quant) => split_blocks(&t, quant)?.2,
        Form::Q8Tensor => {
            let (_, values) = q8_tensor::split(t.data())
                .ok_or_else(|| failed(&t.name, "the Q8_TENSOR header is missing"))?;
            values.to_vec()
        }
    })
}

/// The SafeTensors header of `slots` (in data order) with `__metadata__` `info`: the 8-byte
/// length, then JSON padded with spaces to a multiple of 8, as the `safetensors` crate writes it
/// (`__metadata__` first with sorted keys, then the tensors in data order), so a file is the same
/// bytes on every run.
fn header(info: &HashMap<String, String>, slots: &[Slot]) -> Result<Vec<u8>> {
    let mut tensors = Vec::with_capacity(slots.len());
    let mut offset = 0usize;
    for slot in slots {
        let len = usize::try_from(slot.len)
            .map_err(|_| failed(&slot.entry.name, "too large for this platform"))?;
        let end = offset
            .checked_add(len)
            .ok_or_else(|| failed(&slot.entry.name, "too large for this platform"))?;
        tensors.push((
            slot.entry.name.clone(),
            TensorInfo {
                dtype: slot.written,
                shape: slot.shape.clone(),
                data_offsets: (offset, end),
            },
        ));
        offset = end;
    }
    // The crate's own checks: contiguous offsets, sizes that match dtype and shape.
    safetensors::tensor::Metadata::new(Some(info.clone()), tensors.clone())
        .map_err(Error::SafeTensorsRefused)?;
    let mut json = String::from("{\"__metadata__\":");
    json += &to_json(&info.iter().collect::<BTreeMap<_, _>>())?;
    for (name, tensor) in &tensors {
        json.push(',');
        json += &to_json(name)?;
        json.push(':');
        json += &to_json(tensor)?;
    }
    json.push('}');
    let mut json = json.into_bytes();
    json.resize(json.len().next_multiple_of(8), b' ');
    if json.len() > MAX_HEADER_BYTES {
        return Err(Error::SafeTensorsRefused(
            safetensors::SafeTensorError::HeaderTooLarge,
        ));
    }
    let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(&json);
    Ok(bytes)
}

/// Splits GGUF blocks into (scales, mins, quant bytes).
fn split_blocks(tensor: &Tensor, quant: QuantType) -> Result<(Vec<f32>, Vec<f32>, Vec<u8>)> {
    let (block_bytes, has_min) = match quant {
        QuantType::Q8_0 => (34, false),
        QuantType::Q4_0 => (18, false),
        QuantType::Q4_1 => (20, true),
        _ => return Err(failed(&tensor.name, "not a block type")),
    };
    let head = if has_min { 4 } else { 2 };
    let data = tensor.data();
    let mut scales = Vec::with_capacity(data.len() / block_bytes);
    let mut mins = Vec::new();
    let mut quants = Vec::with_capacity(data.len());
    for block in data.chunks_exact(block_bytes) {
        scales.push(f16::from_le_bytes([block[0], block[1]]).to_f32());
        if has_min {
            mins.push(f16::from_le_bytes([block[2], block[3]]).to_f32());
        }
        quants.extend_from_slice(&block[head..]);
    }
    Ok((scales, mins, quants))
}

/// `scales.json` (or `mins.json`): `{"name": [f32, ...], ...}` in name order, one tensor in memory
/// at a time.
fn write_sidecar(
    slots: &[Slot],
    mins: bool,
    out: &mut dyn Write,
    tensor: &mut dyn FnMut(usize) -> Result<Tensor>,
) -> Result<()> {
    out.write_all(b"{")?;
    for (i, slot) in slots.iter().enumerate() {
        let Form::Blocks(quant) = slot.form else {
            continue;
        };
        let (scales, minimums, _) = split_blocks(&fetch(slot, tensor)?, quant)?;
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, &slot.entry.name).map_err(std::io::Error::from)?;
        out.write_all(b":")?;
        serde_json::to_writer(&mut *out, if mins { &minimums } else { &scales })
            .map_err(std::io::Error::from)?;
    }
    out.write_all(b"}")?;
    Ok(())
}

/// The directory entries of `model`'s tensors (as its `.apr` file would list them).
pub(crate) fn entries(model: &TensorModel) -> Vec<TensorEntry> {
    crate::codec::tensor_metadata(model, &ModelCard::default()).tensors
}

/// Exports `model` in memory in [`Layout::Spec`] (the model has no card).
///
/// # Errors
/// As [`Plan::new`] and [`PlannedFile::write`].
pub fn export(model: &TensorModel) -> Result<Exported> {
    let plan = Plan::new(
        &entries(model),
        &ModelCard::default(),
        &SafeTensorsOptions::default(),
    )?;
    let mut exported = Exported {
        weights: Vec::new(),
        scales: None,
        mins: None,
    };
    let mut tensor = |position: usize| {
        model
            .tensors
            .get(position)
            .cloned()
            .ok_or(Error::NoTensorAt {
                position,
                count: model.tensors.len(),
            })
    };
    for file in plan.files() {
        let mut bytes = Vec::new();
        file.write(&mut bytes, &mut tensor)?;
        // The sidecars are serde_json's output, hence UTF-8.
        let text = || String::from_utf8_lossy(&bytes).into_owned();
        match file.name() {
            SCALES => exported.scales = Some(text()),
            MINS => exported.mins = Some(text()),
            _ => exported.weights = bytes,
        }
    }
    Ok(exported)
}

/// `InvalidFormat` for bytes the `safetensors` crate refuses, keeping its error.
fn not_safetensors(error: safetensors::SafeTensorError) -> Error {
    Error::malformed("not a valid SafeTensors file", error)
}

fn sidecar(text: Option<&[u8]>, what: &'static str) -> Result<BTreeMap<String, Vec<f32>>> {
    match text {
        None => Ok(BTreeMap::new()),
        Some(bytes) => {
            serde_json::from_slice(bytes).map_err(|source| Error::malformed(what, source))
        }
    }
}

/// Bytes of sidecar text (`scales.json` or `mins.json`) that the weights in `weights` can need:
/// the sidecars hold one number per 32-value block of each block-quantized tensor, keyed by the
/// tensor's name, so a reader never reads more than that (a sidecar that is a link to
/// `/dev/zero`, or a huge file, is refused without reading it whole). Allows 32 bytes of text
/// per number and six per name byte (JSON escapes), plus 4 KiB.
///
/// # Errors
/// `InvalidFormat` if `weights` is not a SafeTensors file.
pub fn sidecar_limit(weights: &[u8]) -> Result<u64> {
    let (_, metadata) = SafeTensors::read_metadata(weights).map_err(not_safetensors)?;
    let empty = HashMap::new();
    let info = metadata.metadata().as_ref().unwrap_or(&empty);
    let mut limit: u64 = 4096;
    for (name, tensor) in metadata.tensors() {
        let quant_bytes = match info
            .get(&format!("{DTYPE_KEY_PREFIX}{name}"))
            .and_then(|q| QuantType::from_name(q).ok())
        {
            Some(QuantType::Q8_0) => 32,
            Some(QuantType::Q4_0 | QuantType::Q4_1) => 16,
            _ => continue,
        };
        let (start, end) = tensor.data_offsets;
        let blocks = (end.saturating_sub(start) / quant_bytes) as u64;
        limit = limit
            .saturating_add(6 * name.len() as u64 + 8)
            .saturating_add(32 * blocks);
    }
    Ok(limit)
}

/// Imports a SafeTensors file (and, for files [`export`] wrote with quantized tensors, the
/// `scales.json` / `mins.json` sidecars). Tensor order: `apr.tensor_order` when present and
/// consistent, otherwise the order of the data in the file. F32, F16, BF16, I8 and U8 tensors
/// are supported.
///
/// # Errors
/// `InvalidFormat` for anything the `safetensors` crate refuses (header over 100 MB, offsets out
/// of bounds or overlapping, sizes that disagree with shapes) or a malformed sidecar;
/// `ExportFailed` naming a tensor of an unsupported dtype; `QuantizationCorrupt` if a quantized
/// tensor's sidecar data does not match its shape.
pub fn import(weights: &[u8], scales: Option<&[u8]>, mins: Option<&[u8]>) -> Result<TensorModel> {
    let (_, metadata) = SafeTensors::read_metadata(weights).map_err(not_safetensors)?;
    let file = SafeTensors::deserialize(weights).map_err(not_safetensors)?;
    let empty = HashMap::new();
    let info = metadata.metadata().as_ref().unwrap_or(&empty);
    let mut order = metadata.offset_keys();
    if let Some(listed) = info
        .get(ORDER_KEY)
        .and_then(|text| serde_json::from_str::<Vec<String>>(text).ok())
    {
        let mut a = listed.clone();
        let mut b = order.clone();
        a.sort_unstable();
        b.sort_unstable();
        if a == b {
            order = listed;
        }
    }
    let scales = sidecar(scales, "scales.json is not a map of names to numbers")?;
    let mins = sidecar(mins, "mins.json is not a map of names to numbers")?;
    let mut tensors = Vec::with_capacity(order.len());
    for name in order {
        let view = file
            .tensor(&name)
            .map_err(|error| Error::malformed("a listed tensor is missing", error))?;
        let shape: Vec<u64> = view.shape().iter().map(|&d| d as u64).collect();
        let quant = info
            .get(&format!("{DTYPE_KEY_PREFIX}{name}"))
            .map(|q| QuantType::from_name(q))
            .transpose()?;
        let tensor = match (quant, view.dtype()) {
            (None, dtype) => {
                let dtype = match dtype {
                    Dtype::F32 => DType::F32,
                    Dtype::F16 => DType::F16,
                    Dtype::BF16 => DType::BF16,
                    Dtype::I8 => DType::I8,
                    Dtype::U8 => DType::U8,
                    _ => {
                        return Err(Error::ExportFailed {
                            target: ".apr",
                            tensor: name,
                            reason: "only F32, F16, BF16, I8 and U8 tensors can be imported",
                        });
                    }
                };
                Tensor::new(name, dtype, shape, view.data().to_vec())?
            }
            (Some(QuantType::Q8Tensor), Dtype::I8) => {
                let number = |key: &str| info.get(&format!("apr.q8_tensor.{name}.{key}"));
                let scale = number("scale").and_then(|s| s.parse::<f32>().ok());
                let zero_point = number("zero_point").and_then(|s| s.parse::<i32>().ok());
                let (Some(scale), Some(zero_point)) = (scale, zero_point) else {
                    return Err(Error::inconsistent(
                        "a Q8_TENSOR tensor lacks its scale or zero point",
                    ));
                };
                let mut data = Vec::with_capacity(8 + view.data().len());
                data.extend_from_slice(&scale.to_le_bytes());
                data.extend_from_slice(&zero_point.to_le_bytes());
                data.extend_from_slice(view.data());
                Tensor::new(name, DType::Quantized(QuantType::Q8Tensor), shape, data)?
            }
            (Some(quant @ (QuantType::Q8_0 | QuantType::Q4_0 | QuantType::Q4_1)), dtype) => {
                rebuild_blocks(name, quant, dtype, shape, view.data(), &scales, &mins)?
            }
            (Some(_), _) => {
                return Err(Error::inconsistent(
                    "a quantized tensor has an unexpected dtype",
                ));
            }
        };
        tensors.push(tensor);
    }
    TensorModel::new(tensors)
}

fn rebuild_blocks(
    name: String,
    quant: QuantType,
    dtype: Dtype,
    mut shape: Vec<u64>,
    quants: &[u8],
    scales: &BTreeMap<String, Vec<f32>>,
    mins: &BTreeMap<String, Vec<f32>>,
) -> Result<Tensor> {
    let (expected_dtype, quant_bytes) = match quant {
        QuantType::Q8_0 => (Dtype::I8, 32),
        _ => (Dtype::U8, 16),
    };
    if dtype != expected_dtype {
        return Err(Error::inconsistent(
            "a quantized tensor has an unexpected dtype",
        ));
    }
    if quant != QuantType::Q8_0 {
        let last = shape
            .last_mut()
            .ok_or_else(|| Error::corrupt(&name, "a quantized scalar has no rows"))?;
        *last = last
            .checked_mul(2)
            .ok_or_else(|| Error::corrupt(&name, "the shape overflows"))?;
    }
    let blocks = quants.len() / quant_bytes;
    let scale = scales.get(&name).map(Vec::as_slice).unwrap_or_default();
    let min = mins.get(&name).map(Vec::as_slice).unwrap_or_default();
    let has_min = quant == QuantType::Q4_1;
    if !quants.len().is_multiple_of(quant_bytes)
        || scale.len() != blocks
        || (has_min && min.len() != blocks)
    {
        return Err(Error::corrupt(
            &name,
            "the scales do not match the number of blocks",
        ));
    }
    let mut data = Vec::with_capacity(blocks * (quant_bytes + 4));
    for (i, q) in quants.chunks_exact(quant_bytes).enumerate() {
        data.extend_from_slice(&f16::from_f32(scale[i]).to_le_bytes());
        if has_min {
            data.extend_from_slice(&f16::from_f32(min[i]).to_le_bytes());
        }
        data.extend_from_slice(q);
    }
    Tensor::new(name, DType::Quantized(quant), shape, data)
}

#[cfg(test)]
mod tests;
