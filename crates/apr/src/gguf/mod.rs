//! GGUF v3 export (001 §6.2.7, 003 §7): a pure-Rust writer whose files pass ggml's own loader
//! (`gguf_init_from_file`), which is stricter than the Python `gguf.GGUFReader`.
//!
//! Layout (all little-endian): magic `GGUF`, version 3 (u32), tensor count (u64), key-value count
//! (u64), the key-values, the tensor infos (name, n_dims, dims innermost first, ggml type, offset
//! relative to the data section), zero padding to `general.alignment`, then the tensor data in
//! the order listed, each padded to the alignment. The rules ggml enforces are enforced here with
//! [`Error::ExportFailed`] naming the tensor: names under 64 bytes, at most 4 dimensions, the
//! innermost dimension a multiple of the block size, no duplicate names; and the keys ggml and
//! llama.cpp rely on are always written: `general.architecture`, `general.alignment`, and
//! `general.quantization_version = 2` when anything is quantized.
//!
//! Two exports share the writer. A model whose card keeps a Hugging Face `config.json`
//! (`ModelCard::source_files`, from `apr import DIR`) is written as llama.cpp's own converter
//! (`convert_hf_to_gguf.py`) writes it ([`arch`]: architecture, hyperparameters, GGUF tensor
//! names, the Q/K row permutation; [`vocab`]: the `tokenizer.ggml.*` keys), so that llama.cpp runs
//! it; anything that converter would write differently, or that this exporter does not know, is
//! refused. Any other model is written generically: its own tensor names, the model type as the
//! architecture and the `apr.*` keys.

use std::borrow::Cow;
use std::io::Write;

use crate::card::{ModelCard, TensorEntry};
use crate::error::{Error, Result};
use crate::model::TensorModel;
use crate::model_type::ModelType;
use crate::quant::QuantType;
use crate::quant::q8_tensor::{self, AffineParams};
use crate::tensor::{DType, Tensor};

pub mod arch;
#[cfg(test)]
mod hf_tests;
mod sentencepiece;
pub mod vocab;

/// `GGUF` as a little-endian u32.
pub const GGUF_MAGIC: [u8; 4] = *b"GGUF";
/// The GGUF version written.
pub const GGUF_VERSION: u32 = 3;
/// Default `general.alignment` (ggml's `GGUF_DEFAULT_ALIGNMENT`).
pub const DEFAULT_ALIGNMENT: u32 = 32;
/// ggml's `GGML_MAX_NAME`: names are at most 63 bytes (plus the C string's NUL).
pub const MAX_NAME_BYTES: usize = 63;
/// ggml's `GGML_MAX_DIMS`.
pub const MAX_DIMS: usize = 4;
/// `general.quantization_version` of the Q4_0/Q4_1/Q8_0 layouts written here.
pub const QUANTIZATION_VERSION: u32 = 2;

const TARGET: &str = "GGUF";

/// GGML tensor types written here (`ggml_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types, reason = "ggml's names")]
pub enum GgmlType {
    /// GGML_TYPE_F32.
    F32 = 0,
    /// GGML_TYPE_F16.
    F16 = 1,
    /// GGML_TYPE_Q4_0.
    Q4_0 = 2,
    /// GGML_TYPE_Q4_1.
    Q4_1 = 3,
    /// GGML_TYPE_Q8_0.
    Q8_0 = 8,
    /// GGML_TYPE_I8.
    I8 = 24,
    /// GGML_TYPE_BF16.
    BF16 = 30,
}

impl GgmlType {
    /// The GGML type a tensor exports as (001 §6.2.7), or why it cannot.
    ///
    /// # Errors
    /// `ExportFailed` naming the tensor for `u8` (GGML has no unsigned byte type) and plugin
    /// quantizations.
    pub fn for_tensor(tensor: &Tensor) -> Result<Self> {
        Self::for_dtype(tensor.dtype).map_err(|reason| export_failed(&tensor.name, reason))
    }

    /// The GGML type of `dtype`, or the reason there is none.
    ///
    /// # Errors
    /// The reason, for `u8` and plugin quantizations.
    pub const fn for_dtype(dtype: DType) -> Result<Self, &'static str> {
        Ok(match dtype {
            DType::F32 => Self::F32,
            DType::F16 => Self::F16,
            DType::BF16 => Self::BF16,
            DType::I8 | DType::Quantized(QuantType::Q8Tensor) => Self::I8,
            DType::Quantized(QuantType::Q8_0) => Self::Q8_0,
            DType::Quantized(QuantType::Q4_0) => Self::Q4_0,
            DType::Quantized(QuantType::Q4_1) => Self::Q4_1,
            DType::U8 => return Err("GGML has no unsigned 8-bit type"),
            DType::Quantized(QuantType::Custom) => {
                return Err("plugin quantizations have no GGML type");
            }
        })
    }

    /// Values per block (1 for plain types).
    #[must_use]
    pub const fn block_size(self) -> u64 {
        match self {
            Self::Q4_0 | Self::Q4_1 | Self::Q8_0 => 32,
            _ => 1,
        }
    }

    const fn is_quantized(self) -> bool {
        self.block_size() > 1
    }

    /// `general.file_type` (llama.cpp's `LLAMA_FTYPE_*`) of a model whose main type is this.
    const fn file_type(self) -> u32 {
        match self {
            Self::F32 | Self::I8 => 0,
            Self::F16 => 1,
            Self::Q4_0 => 2,
            Self::Q4_1 => 3,
            Self::Q8_0 => 7,
            Self::BF16 => 32,
        }
    }
}

fn export_failed(tensor: &str, reason: &'static str) -> Error {
    Error::ExportFailed {
        target: TARGET,
        tensor: tensor.to_owned(),
        reason,
    }
}

/// Export settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GgufOptions {
    /// `general.alignment`: a power of two, at least 8 ([`DEFAULT_ALIGNMENT`]).
    pub alignment: u32,
    /// `general.architecture`; the model type's name in lower case when `None`. For a model with
    /// a Hugging Face `config.json` the architecture comes from it, and a different value here is
    /// refused.
    pub architecture: Option<String>,
}

impl Default for GgufOptions {
    fn default() -> Self {
        Self {
            alignment: DEFAULT_ALIGNMENT,
            architecture: None,
        }
    }
}

/// A GGUF metadata value (`gguf_type`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    U16(u16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    Str(String),
    /// An array of strings.
    Strs(Vec<String>),
    /// An array of f32.
    F32s(Vec<f32>),
    /// An array of i32.
    I32s(Vec<i32>),
}

/// GGUF value type ids (`GGUF_TYPE_*`).
const TYPE_U16: u32 = 2;
const TYPE_U32: u32 = 4;
const TYPE_I32: u32 = 5;
const TYPE_F32: u32 = 6;
const TYPE_BOOL: u32 = 7;
const TYPE_STRING: u32 = 8;
const TYPE_ARRAY: u32 = 9;

impl Value {
    const fn type_id(&self) -> u32 {
        match self {
            Self::U16(_) => TYPE_U16,
            Self::U32(_) => TYPE_U32,
            Self::I32(_) => TYPE_I32,
            Self::F32(_) => TYPE_F32,
            Self::Bool(_) => TYPE_BOOL,
            Self::Str(_) => TYPE_STRING,
            Self::Strs(_) | Self::F32s(_) | Self::I32s(_) => TYPE_ARRAY,
        }
    }
}

/// Key-values in the order first set; setting a key again replaces its value in place, as
/// gguf-py's `GGUFWriter` does (so the converter's overrides read the same here).
#[derive(Debug, Default)]
pub(crate) struct Metadata(pub(crate) Vec<(String, Value)>);

impl Metadata {
    pub(crate) fn set(&mut self, key: impl Into<String>, value: Value) {
        let key = key.into();
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key, value)),
        }
    }
}

struct Counter<W> {
    out: W,
    written: u64,
}

impl<W: Write> Counter<W> {
    fn bytes(&mut self, bytes: &[u8]) -> Result<()> {
        self.out.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }

    fn string(&mut self, text: &str) -> Result<()> {
        self.bytes(&(text.len() as u64).to_le_bytes())?;
        self.bytes(text.as_bytes())
    }

    fn pad_to(&mut self, alignment: u64) -> Result<()> {
        let pad = padding(self.written, alignment);
        self.bytes(&vec![0; usize::try_from(pad).unwrap_or(0)])
    }

    fn array_header(&mut self, item_type: u32, len: usize) -> Result<()> {
        self.bytes(&item_type.to_le_bytes())?;
        self.bytes(&(len as u64).to_le_bytes())
    }

    fn value(&mut self, value: &Value) -> Result<()> {
        self.bytes(&value.type_id().to_le_bytes())?;
        match value {
            Value::U16(v) => self.bytes(&v.to_le_bytes()),
            Value::U32(v) => self.bytes(&v.to_le_bytes()),
            Value::I32(v) => self.bytes(&v.to_le_bytes()),
            Value::F32(v) => self.bytes(&v.to_le_bytes()),
            Value::Bool(v) => self.bytes(&[u8::from(*v)]),
            Value::Str(v) => self.string(v),
            Value::Strs(items) => {
                self.array_header(TYPE_STRING, items.len())?;
                items.iter().try_for_each(|s| self.string(s))
            }
            Value::F32s(items) => {
                self.array_header(TYPE_F32, items.len())?;
                items.iter().try_for_each(|v| self.bytes(&v.to_le_bytes()))
            }
            Value::I32s(items) => {
                self.array_header(TYPE_I32, items.len())?;
                items.iter().try_for_each(|v| self.bytes(&v.to_le_bytes()))
            }
        }
    }
}

fn padding(at: u64, alignment: u64) -> u64 {
    (alignment - at % alignment) % alignment
}

/// One tensor as the writer plans it, from its directory entry alone.
pub(crate) struct Planned {
    /// The GGUF name.
    pub(crate) name: String,
    /// The GGUF type.
    pub(crate) ggml: GgmlType,
    /// Dimensions, innermost first.
    pub(crate) dims: Vec<u64>,
    /// Bytes of GGUF data (for Q8_TENSOR, without the 8-byte `S`, `Z` header).
    pub(crate) len: u64,
    /// Where the data comes from.
    pub(crate) source: Source,
}

/// The data of a planned tensor.
pub(crate) enum Source {
    /// The `.apr` tensor at `index`, changed by `transform` on the way.
    Entry {
        /// Its position in the tensor directory.
        index: usize,
        /// Its `.apr` name (what the fetched tensor must be called).
        name: String,
        /// Its `.apr` dtype.
        dtype: DType,
        /// Its `.apr` data length (Q8_TENSOR without the header).
        len: u64,
        /// What is done to its bytes.
        transform: Transform,
    },
    /// Bytes made by the exporter (llama 3's `rope_freqs.weight`).
    Generated(Vec<u8>),
}

/// What the architecture-aware export does to a tensor's bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Transform {
    /// F16 or BF16 values widened to F32 (1-D tensors: llama.cpp keeps them in F32).
    pub(crate) to_f32: bool,
    /// Rows reordered by [`arch::permute_rows`] with this many heads (llama's Q and K).
    pub(crate) permute_heads: Option<usize>,
}

impl Planned {
    fn dtype(&self) -> Option<DType> {
        match &self.source {
            Source::Entry { dtype, .. } => Some(*dtype),
            Source::Generated(_) => None,
        }
    }

    /// Elements (the product of the dimensions), as gguf-py counts parameters.
    pub(crate) fn elements(&self) -> u64 {
        self.dims.iter().product()
    }
}

/// The GGUF dimensions (innermost first) and element count of an `.apr` shape, or why not.
fn ggml_dims(shape: &[u64]) -> Result<(Vec<u64>, u64), &'static str> {
    if shape.len() > MAX_DIMS {
        return Err("GGUF tensors have at most 4 dimensions");
    }
    // ggml order: innermost dimension first. A scalar is one element of one dimension.
    let mut dims: Vec<u64> = shape.iter().rev().copied().collect();
    if dims.is_empty() {
        dims.push(1);
    }
    let elements = dims
        .iter()
        .try_fold(1i64, |n, &d| n.checked_mul(i64::try_from(d).ok()?))
        .ok_or("the element count overflows ggml's int64")?;
    Ok((dims, elements.unsigned_abs()))
}

fn plan(entry: &TensorEntry, index: usize) -> Result<Planned> {
    let failed = |reason| export_failed(&entry.name, reason);
    let dtype = DType::from_code(entry.dtype)?;
    let ggml = GgmlType::for_dtype(dtype).map_err(failed)?;
    if entry.name.len() > MAX_NAME_BYTES {
        return Err(failed("GGUF tensor names are at most 63 bytes"));
    }
    let (dims, elements) = ggml_dims(&entry.shape).map_err(failed)?;
    if !dims[0].is_multiple_of(ggml.block_size()) {
        return Err(failed(
            "the innermost dimension is not a multiple of the block size",
        ));
    }
    let len = dtype
        .byte_len(elements)
        .ok_or_else(|| failed("the data size overflows"))?;
    let len = match dtype {
        DType::Quantized(QuantType::Q8Tensor) => len - q8_tensor::Q8_TENSOR_HEADER_BYTES as u64,
        _ => len,
    };
    Ok(Planned {
        name: entry.name.clone(),
        ggml,
        dims,
        len,
        source: Source::Entry {
            index,
            name: entry.name.clone(),
            dtype,
            len,
            transform: Transform::default(),
        },
    })
}

/// `general.file_type` of the planned tensors: the quantized type holding the most elements, or
/// else the type of the first tensor of two or more dimensions (the weights' type: norms and
/// biases are F32 in any llama.cpp file), or F32.
fn file_type(planned: &[Planned]) -> u32 {
    let mut counts: Vec<(GgmlType, u64)> = Vec::new();
    for p in planned.iter().filter(|p| p.ggml.is_quantized()) {
        match counts.iter_mut().find(|(g, _)| *g == p.ggml) {
            Some(c) => c.1 += p.elements(),
            None => counts.push((p.ggml, p.elements())),
        }
    }
    let main = counts
        .iter()
        .max_by_key(|(_, n)| *n)
        .map(|(g, _)| *g)
        .or_else(|| planned.iter().find(|p| p.dims.len() >= 2).map(|p| p.ggml))
        .or_else(|| planned.first().map(|p| p.ggml))
        .unwrap_or(GgmlType::F32);
    main.file_type()
}

fn generic_metadata(
    model_type: ModelType,
    card: &ModelCard,
    options: &GgufOptions,
    planned: &[Planned],
    q8_tensor_params: &[(String, AffineParams)],
) -> Result<Metadata> {
    let architecture = options
        .architecture
        .clone()
        .unwrap_or_else(|| model_type.name().to_ascii_lowercase());
    let mut kv = Metadata::default();
    kv.set("general.architecture", Value::Str(architecture));
    kv.set("general.alignment", Value::U32(options.alignment));
    card_keys(&mut kv, card);
    kv.set("general.file_type", Value::U32(file_type(planned)));
    if planned
        .iter()
        .any(|p| p.dtype().is_some_and(DType::is_quantized))
    {
        kv.set(
            "general.quantization_version",
            Value::U32(QUANTIZATION_VERSION),
        );
    }
    kv.set("apr.model_type", Value::U16(model_type.id()));
    let card_json = serde_json::to_string(card).map_err(Error::CardJson)?;
    kv.set("apr.model_card", Value::Str(card_json));
    for (name, params) in q8_tensor_params {
        kv.set(
            format!("apr.q8_tensor.{name}.scale"),
            Value::F32(params.scale),
        );
        kv.set(
            format!("apr.q8_tensor.{name}.zero_point"),
            Value::I32(params.zero_point),
        );
    }
    Ok(kv)
}

/// `general.name`, `general.version`, `general.author` and `general.license` from the card, when
/// it has them.
fn card_keys(kv: &mut Metadata, card: &ModelCard) {
    if !card.name.is_empty() {
        kv.set("general.name", Value::Str(card.name.clone()));
    }
    if !card.version.is_empty() {
        kv.set("general.version", Value::Str(card.version.clone()));
    }
    for (key, value) in [
        ("general.author", &card.author),
        ("general.license", &card.license),
    ] {
        if let Some(value) = value {
            kv.set(key, Value::Str(value.clone()));
        }
    }
}

/// Writes `model` as a GGUF v3 file to `out`; returns what was written ([`Written`]).
///
/// # Errors
/// `ExportFailed` naming the first tensor that breaks a GGUF/ggml rule; `GgufAlignment` for a bad
/// alignment, `DuplicateName` for duplicate names; `Io` if writing fails; for a model with a
/// Hugging Face `config.json`, as [`arch::HfExport::new`].
pub fn write(
    model: &TensorModel,
    model_type: ModelType,
    card: &ModelCard,
    options: &GgufOptions,
    out: impl Write,
) -> Result<Written> {
    model.check_unique_names()?;
    let entries = crate::codec::tensor_metadata(model, card).tensors;
    write_lazy(&entries, model_type, card, options, out, |i| {
        model.tensors.get(i).cloned().ok_or(Error::NoTensorAt {
            position: i,
            count: model.tensors.len(),
        })
    })
}

/// Writes a GGUF v3 file whose tensors are described by `entries` (an `.apr` tensor directory)
/// and fetched one at a time by `tensor(i)`: memory holds one tensor, not the model. Q8_TENSOR
/// tensors are fetched twice (their scale and zero point are metadata keys, written before the
/// data).
///
/// When `card.source_files` holds a Hugging Face `config.json`, the file is written as llama.cpp's
/// converter writes that model ([`arch`], [`vocab`]); otherwise generically. Returns what was
/// written ([`Written`]).
///
/// # Errors
/// As [`write()`]; `FetchedTensorDiffers` if a fetched tensor differs from its entry.
pub fn write_lazy(
    entries: &[TensorEntry],
    model_type: ModelType,
    card: &ModelCard,
    options: &GgufOptions,
    out: impl Write,
    mut tensor: impl FnMut(usize) -> Result<Tensor>,
) -> Result<Written> {
    if !options.alignment.is_power_of_two() || options.alignment < 8 {
        return Err(Error::GgufAlignment {
            alignment: options.alignment,
        });
    }
    crate::error::check_unique(entries.iter().map(|e| e.name.as_str()))?;
    let alignment = u64::from(options.alignment);
    let (planned, kv) = if card.source_files.get(crate::hf::CONFIG).is_some() {
        let export = arch::HfExport::new(&card.source_files, options)?;
        let planned = export.plan(entries)?;
        let kv = export.metadata(card, options, &planned)?;
        (planned, kv)
    } else {
        let planned = entries
            .iter()
            .enumerate()
            .map(|(i, e)| plan(e, i))
            .collect::<Result<Vec<_>>>()?;
        let mut q8_tensor_params = Vec::new();
        for (i, p) in planned.iter().enumerate() {
            if p.dtype() == Some(DType::Quantized(QuantType::Q8Tensor)) {
                let t = tensor(i)?;
                let (params, _) = q8_tensor::split(t.data())
                    .ok_or_else(|| export_failed(&p.name, "the Q8_TENSOR header is missing"))?;
                q8_tensor_params.push((p.name.clone(), params));
            }
        }
        let kv = generic_metadata(model_type, card, options, &planned, &q8_tensor_params)?;
        (planned, kv)
    };
    crate::error::check_unique(planned.iter().map(|p| p.name.as_str()))?;

    let mut w = Counter { out, written: 0 };
    w.bytes(&GGUF_MAGIC)?;
    w.bytes(&GGUF_VERSION.to_le_bytes())?;
    w.bytes(&(planned.len() as u64).to_le_bytes())?;
    w.bytes(&(kv.0.len() as u64).to_le_bytes())?;
    for (key, value) in &kv.0 {
        w.string(key)?;
        w.value(value)?;
    }
    let mut offset = 0u64;
    for p in &planned {
        w.string(&p.name)?;
        w.bytes(&u32::try_from(p.dims.len()).unwrap_or(0).to_le_bytes())?;
        for d in &p.dims {
            w.bytes(&d.to_le_bytes())?;
        }
        w.bytes(&(p.ggml as u32).to_le_bytes())?;
        w.bytes(&offset.to_le_bytes())?;
        offset = p
            .len
            .checked_add(padding(p.len, alignment))
            .and_then(|l| offset.checked_add(l))
            .ok_or_else(|| Error::GgufTooLarge {
                tensor: p.name.clone(),
            })?;
    }
    w.pad_to(alignment)?;
    for p in &planned {
        match &p.source {
            Source::Generated(bytes) => w.bytes(bytes)?,
            Source::Entry {
                index,
                name,
                dtype,
                len,
                transform,
            } => {
                let t = tensor(*index)?;
                let data = tensor_data(&t);
                if t.name != *name || t.dtype != *dtype || data.len() as u64 != *len {
                    return Err(Error::FetchedTensorDiffers {
                        tensor: name.clone(),
                    });
                }
                let data = apply(*transform, *dtype, data, &p.dims, &p.name)?;
                if data.len() as u64 != p.len {
                    return Err(Error::FetchedTensorDiffers {
                        tensor: name.clone(),
                    });
                }
                w.bytes(&data)?;
            }
        }
        w.pad_to(alignment)?;
    }
    w.out.flush()?;
    let architecture = match kv.0.iter().find(|(k, _)| k == "general.architecture") {
        Some((_, Value::Str(name))) => name.clone(),
        _ => String::new(),
    };
    Ok(Written {
        tensors: planned.len(),
        architecture,
    })
}

/// What a GGUF export wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Tensors written (a Hugging Face model's may differ from the model's: `rotary_emb.inv_freq`
    /// is dropped, `rope_freqs` added).
    pub tensors: usize,
    /// `general.architecture` (`llama`, `qwen2`, or the generic export's name).
    pub architecture: String,
}

/// `data` (of `dtype`) with `transform` applied; `dims` are the GGUF dimensions (innermost first).
fn apply<'a>(
    transform: Transform,
    dtype: DType,
    data: &'a [u8],
    dims: &[u64],
    name: &str,
) -> Result<Cow<'a, [u8]>> {
    let mut data = Cow::Borrowed(data);
    if transform.to_f32 {
        data =
            Cow::Owned(arch::widen_to_f32(dtype, &data).ok_or_else(|| {
                export_failed(name, "only F16 and BF16 tensors are widened to F32")
            })?);
    }
    if let Some(heads) = transform.permute_heads {
        // Rows are the outermost GGUF dimension (the first of the `.apr` shape); a 1-D bias
        // has one value per row.
        let rows = usize::try_from(*dims.last().unwrap_or(&1)).map_err(|_| {
            Error::TooLargeForPlatform {
                tensor: name.to_owned(),
            }
        })?;
        data = Cow::Owned(arch::permute_rows(&data, rows, heads).ok_or_else(|| {
            export_failed(
                name,
                "its rows are not a whole number of heads of an even size",
            )
        })?);
    }
    Ok(data)
}

/// The bytes GGUF stores for `tensor`: its data, for Q8_TENSOR without the 8-byte `S`, `Z`
/// header (those are the `apr.q8_tensor.<name>.*` metadata keys).
#[must_use]
pub fn tensor_data(tensor: &Tensor) -> &[u8] {
    match tensor.dtype {
        DType::Quantized(QuantType::Q8Tensor) => tensor
            .data()
            .get(q8_tensor::Q8_TENSOR_HEADER_BYTES..)
            .unwrap_or_default(),
        _ => tensor.data(),
    }
}

/// [`write()`] into memory.
///
/// # Errors
/// As [`write()`].
pub fn to_bytes(
    model: &TensorModel,
    model_type: ModelType,
    card: &ModelCard,
    options: &GgufOptions,
) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    write(model, model_type, card, options, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(name: &str, shape: Vec<u64>) -> TensorModel {
        let n = usize::try_from(shape.iter().product::<u64>()).unwrap();
        TensorModel::new(vec![Tensor::from_f32(name, shape, &vec![0.5; n]).unwrap()]).unwrap()
    }

    #[test]
    fn header_and_alignment() {
        let bytes = to_bytes(
            &model("w", vec![2, 32]),
            ModelType::NeuralSequential,
            &ModelCard::default(),
            &GgufOptions::default(),
        )
        .unwrap();
        assert_eq!(&bytes[..4], b"GGUF");
        assert_eq!(u32::from_le_bytes(bytes[4..8].try_into().unwrap()), 3);
        assert_eq!(bytes.len() % 32, 0);
    }

    #[test]
    fn ggml_loader_rules_are_enforced_naming_the_tensor() {
        let long = "x".repeat(64);
        let u8_model = TensorModel::new(vec![
            Tensor::new("u", DType::U8, vec![4], vec![1; 4]).unwrap(),
        ])
        .unwrap();
        for (m, name, reason) in [
            (model(&long, vec![32]), long.as_str(), "63 bytes"),
            (model("w", vec![1, 1, 1, 1, 32]), "w", "4 dimensions"),
            (u8_model, "u", "unsigned 8-bit"),
        ] {
            let error = to_bytes(
                &m,
                ModelType::Custom,
                &ModelCard::default(),
                &GgufOptions::default(),
            )
            .unwrap_err();
            assert_eq!(error.signal(), envelope_core::Signal::Usage);
            assert!(error.to_string().contains(reason), "{error}");
            assert!(error.to_string().contains(&format!("{name:?}")), "{error}");
            assert!(error.to_string().contains("ExportFailed"), "{error}");
        }
    }
}
