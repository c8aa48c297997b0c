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

use std::io::Write;

use crate::card::{ModelCard, TensorEntry};
use crate::error::{Error, Result};
use crate::model::TensorModel;
use crate::model_type::ModelType;
use crate::quant::QuantType;
use crate::quant::q8_tensor::{self, AffineParams};
use crate::tensor::{DType, Tensor};

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
    /// `general.architecture`; the model type's name in lower case when `None`.
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

/// A GGUF metadata value.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    U16(u16),
    U32(u32),
    I32(i32),
    F32(f32),
    Str(String),
}

impl Value {
    const fn type_id(&self) -> u32 {
        match self {
            Self::U16(_) => 2,
            Self::U32(_) => 4,
            Self::I32(_) => 5,
            Self::F32(_) => 6,
            Self::Str(_) => 8,
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
}

fn padding(at: u64, alignment: u64) -> u64 {
    (alignment - at % alignment) % alignment
}

/// One tensor as the writer plans it, from its directory entry alone.
struct Planned {
    name: String,
    dtype: DType,
    ggml: GgmlType,
    dims: Vec<u64>,
    /// Bytes of GGUF data (for Q8_TENSOR, without the 8-byte `S`, `Z` header).
    len: u64,
}

fn plan(entry: &TensorEntry) -> Result<Planned> {
    let failed = |reason| export_failed(&entry.name, reason);
    let dtype = DType::from_code(entry.dtype)?;
    let ggml = GgmlType::for_dtype(dtype).map_err(failed)?;
    if entry.name.len() > MAX_NAME_BYTES {
        return Err(failed("GGUF tensor names are at most 63 bytes"));
    }
    if entry.shape.len() > MAX_DIMS {
        return Err(failed("GGUF tensors have at most 4 dimensions"));
    }
    // ggml order: innermost dimension first. A scalar is one element of one dimension.
    let mut dims: Vec<u64> = entry.shape.iter().rev().copied().collect();
    if dims.is_empty() {
        dims.push(1);
    }
    let elements = dims
        .iter()
        .try_fold(1i64, |n, &d| n.checked_mul(i64::try_from(d).ok()?))
        .ok_or_else(|| failed("the element count overflows ggml's int64"))?;
    if !dims[0].is_multiple_of(ggml.block_size()) {
        return Err(failed(
            "the innermost dimension is not a multiple of the block size",
        ));
    }
    let len = dtype
        .byte_len(elements.unsigned_abs())
        .ok_or_else(|| failed("the data size overflows"))?;
    let len = match dtype {
        DType::Quantized(QuantType::Q8Tensor) => len - q8_tensor::Q8_TENSOR_HEADER_BYTES as u64,
        _ => len,
    };
    Ok(Planned {
        name: entry.name.clone(),
        dtype,
        ggml,
        dims,
        len,
    })
}

fn metadata(
    model_type: ModelType,
    card: &ModelCard,
    options: &GgufOptions,
    planned: &[Planned],
    q8_tensor_params: &[(String, AffineParams)],
) -> Result<Vec<(String, Value)>> {
    let architecture = options
        .architecture
        .clone()
        .unwrap_or_else(|| model_type.name().to_ascii_lowercase());
    let mut kv = vec![
        ("general.architecture".to_owned(), Value::Str(architecture)),
        (
            "general.alignment".to_owned(),
            Value::U32(options.alignment),
        ),
    ];
    if !card.name.is_empty() {
        kv.push(("general.name".to_owned(), Value::Str(card.name.clone())));
    }
    if !card.version.is_empty() {
        kv.push((
            "general.version".to_owned(),
            Value::Str(card.version.clone()),
        ));
    }
    for (key, value) in [
        ("general.author", &card.author),
        ("general.license", &card.license),
    ] {
        if let Some(value) = value {
            kv.push((key.to_owned(), Value::Str(value.clone())));
        }
    }
    let main = planned
        .iter()
        .map(|p| p.ggml)
        .find(|g| g.is_quantized())
        .or_else(|| planned.first().map(|p| p.ggml))
        .unwrap_or(GgmlType::F32);
    kv.push(("general.file_type".to_owned(), Value::U32(main.file_type())));
    if planned.iter().any(|p| p.dtype.is_quantized()) {
        kv.push((
            "general.quantization_version".to_owned(),
            Value::U32(QUANTIZATION_VERSION),
        ));
    }
    kv.push(("apr.model_type".to_owned(), Value::U16(model_type.id())));
    let card_json = serde_json::to_string(card).map_err(Error::CardJson)?;
    kv.push(("apr.model_card".to_owned(), Value::Str(card_json)));
    for (name, params) in q8_tensor_params {
        kv.push((
            format!("apr.q8_tensor.{name}.scale"),
            Value::F32(params.scale),
        ));
        kv.push((
            format!("apr.q8_tensor.{name}.zero_point"),
            Value::I32(params.zero_point),
        ));
    }
    Ok(kv)
}

/// Writes `model` as a GGUF v3 file to `out`.
///
/// # Errors
/// `ExportFailed` naming the first tensor that breaks a GGUF/ggml rule; `GgufAlignment` for a bad
/// alignment, `DuplicateName` for duplicate names; `Io` if writing fails.
pub fn write(
    model: &TensorModel,
    model_type: ModelType,
    card: &ModelCard,
    options: &GgufOptions,
    out: impl Write,
) -> Result<()> {
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
/// # Errors
/// As [`write()`]; `FetchedTensorDiffers` if a fetched tensor differs from its entry.
pub fn write_lazy(
    entries: &[TensorEntry],
    model_type: ModelType,
    card: &ModelCard,
    options: &GgufOptions,
    out: impl Write,
    mut tensor: impl FnMut(usize) -> Result<Tensor>,
) -> Result<()> {
    if !options.alignment.is_power_of_two() || options.alignment < 8 {
        return Err(Error::GgufAlignment {
            alignment: options.alignment,
        });
    }
    crate::error::check_unique(entries.iter().map(|e| e.name.as_str()))?;
    let alignment = u64::from(options.alignment);
    let planned = entries.iter().map(plan).collect::<Result<Vec<_>>>()?;
    let mut q8_tensor_params = Vec::new();
    for (i, p) in planned.iter().enumerate() {
        if p.dtype == DType::Quantized(QuantType::Q8Tensor) {
            let t = tensor(i)?;
            let (params, _) = q8_tensor::split(t.data())
                .ok_or_else(|| export_failed(&p.name, "the Q8_TENSOR header is missing"))?;
            q8_tensor_params.push((p.name.clone(), params));
        }
    }
    let kv = metadata(model_type, card, options, &planned, &q8_tensor_params)?;

    let mut w = Counter { out, written: 0 };
    w.bytes(&GGUF_MAGIC)?;
    w.bytes(&GGUF_VERSION.to_le_bytes())?;
    w.bytes(&(planned.len() as u64).to_le_bytes())?;
    w.bytes(&(kv.len() as u64).to_le_bytes())?;
    for (key, value) in &kv {
        w.string(key)?;
        w.bytes(&value.type_id().to_le_bytes())?;
        match value {
            Value::U16(v) => w.bytes(&v.to_le_bytes())?,
            Value::U32(v) => w.bytes(&v.to_le_bytes())?,
            Value::I32(v) => w.bytes(&v.to_le_bytes())?,
            Value::F32(v) => w.bytes(&v.to_le_bytes())?,
            Value::Str(v) => w.string(v)?,
        }
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
    for (i, p) in planned.iter().enumerate() {
        let t = tensor(i)?;
        let data = tensor_data(&t);
        if t.name != p.name || t.dtype != p.dtype || data.len() as u64 != p.len {
            return Err(Error::FetchedTensorDiffers {
                tensor: p.name.clone(),
            });
        }
        w.bytes(data)?;
        w.pad_to(alignment)?;
    }
    w.out.flush()?;
    Ok(())
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
