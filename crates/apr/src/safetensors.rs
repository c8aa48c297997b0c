//! SafeTensors export (001 §6.2.6-§6.2.7: weights plus `scales.json` / `mins.json`) and import
//! (read-only, through the `safetensors` crate, which bounds the header at 100 MB and checks that
//! every tensor's offsets are in bounds, contiguous and match its dtype and shape).
//!
//! Exported layout (`docs/apr.md` §7): plain tensors as they are; Q8_0 as an `I8` tensor of the
//! original shape with one f32 scale per block in `scales.json`; Q4_0/Q4_1 as a `U8` tensor of
//! packed nibbles (shape `[..., last / 2]`, GGUF nibble order) with scales (and minimums in
//! `mins.json`); Q8_TENSOR as an `I8` tensor with its scale and zero point in the header's
//! `__metadata__`. `__metadata__` also records the tensor order (`apr.tensor_order`, the
//! `safetensors` crate sorts tensors by dtype and name) and each quantized tensor's type
//! (`apr.dtype.<name>`), which is how [`import`] rebuilds the exact blocks.

use std::collections::{BTreeMap, HashMap};

use half::f16;
use safetensors::tensor::{Dtype, SafeTensors, View};

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

/// The files of an export: `weights.safetensors` and the sidecars.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    /// `weights.safetensors`.
    pub weights: Vec<u8>,
    /// `scales.json`: tensor name → f32 scale per block (when a block type is present).
    pub scales: Option<String>,
    /// `mins.json`: tensor name → f32 minimum per block (when Q4_1 is present).
    pub mins: Option<String>,
}

struct Stored {
    dtype: Dtype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl View for &Stored {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> std::borrow::Cow<'_, [u8]> {
        std::borrow::Cow::Borrowed(&self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

fn failed(tensor: &Tensor, reason: &'static str) -> Error {
    Error::ExportFailed {
        target: TARGET,
        tensor: tensor.name.clone(),
        reason,
    }
}

fn usize_shape(tensor: &Tensor) -> Result<Vec<usize>> {
    tensor
        .shape
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| failed(tensor, "too large for this platform")))
        .collect()
}

/// Splits GGUF blocks into (scales, mins, quant bytes).
fn split_blocks(data: &[u8], block_bytes: usize, has_min: bool) -> (Vec<f32>, Vec<f32>, Vec<u8>) {
    let head = if has_min { 4 } else { 2 };
    let mut scales = Vec::new();
    let mut mins = Vec::new();
    let mut quants = Vec::with_capacity(data.len());
    for block in data.chunks_exact(block_bytes) {
        scales.push(f16::from_le_bytes([block[0], block[1]]).to_f32());
        if has_min {
            mins.push(f16::from_le_bytes([block[2], block[3]]).to_f32());
        }
        quants.extend_from_slice(&block[head..]);
    }
    (scales, mins, quants)
}

/// Exports `model`.
///
/// # Errors
/// `ExportFailed` naming a tensor SafeTensors cannot hold (plugin quantizations, a scalar
/// quantized tensor); `DuplicateName` for duplicate names; `SafeTensorsRefused` if the
/// `safetensors` crate refuses to write them.
pub fn export(model: &TensorModel) -> Result<Exported> {
    model.check_unique_names()?;
    let mut stored = Vec::with_capacity(model.tensors.len());
    let mut scales = BTreeMap::new();
    let mut mins = BTreeMap::new();
    let mut info = HashMap::new();
    for tensor in &model.tensors {
        let mut shape = usize_shape(tensor)?;
        let (dtype, data) = match tensor.dtype {
            DType::F32 => (Dtype::F32, tensor.data().to_vec()),
            DType::F16 => (Dtype::F16, tensor.data().to_vec()),
            DType::BF16 => (Dtype::BF16, tensor.data().to_vec()),
            DType::I8 => (Dtype::I8, tensor.data().to_vec()),
            DType::U8 => (Dtype::U8, tensor.data().to_vec()),
            DType::Quantized(quant @ (QuantType::Q8_0 | QuantType::Q4_0 | QuantType::Q4_1)) => {
                let (block_bytes, has_min, dtype) = match quant {
                    QuantType::Q8_0 => (34, false, Dtype::I8),
                    QuantType::Q4_0 => (18, false, Dtype::U8),
                    _ => (20, true, Dtype::U8),
                };
                let (s, m, quants) = split_blocks(tensor.data(), block_bytes, has_min);
                if dtype == Dtype::U8 {
                    let last = shape
                        .last_mut()
                        .ok_or_else(|| failed(tensor, "a quantized scalar has no rows"))?;
                    *last /= 2;
                }
                scales.insert(tensor.name.clone(), s);
                if has_min {
                    mins.insert(tensor.name.clone(), m);
                }
                info.insert(
                    format!("{DTYPE_KEY_PREFIX}{}", tensor.name),
                    quant.name().to_owned(),
                );
                (dtype, quants)
            }
            DType::Quantized(QuantType::Q8Tensor) => {
                let (params, values) = q8_tensor::split(tensor.data())
                    .ok_or_else(|| failed(tensor, "the Q8_TENSOR header is missing"))?;
                let name = &tensor.name;
                info.insert(format!("{DTYPE_KEY_PREFIX}{name}"), "q8_tensor".to_owned());
                info.insert(
                    format!("apr.q8_tensor.{name}.scale"),
                    params.scale.to_string(),
                );
                info.insert(
                    format!("apr.q8_tensor.{name}.zero_point"),
                    params.zero_point.to_string(),
                );
                (Dtype::I8, values.to_vec())
            }
            DType::Quantized(QuantType::Custom) => {
                return Err(failed(
                    tensor,
                    "plugin quantizations have no SafeTensors layout",
                ));
            }
        };
        stored.push((tensor.name.clone(), Stored { dtype, shape, data }));
    }
    let order: Vec<&str> = model.tensors.iter().map(|t| t.name.as_str()).collect();
    info.insert(
        ORDER_KEY.to_owned(),
        serde_json::to_string(&order).unwrap_or_default(),
    );
    let weights = safetensors::serialize(stored.iter().map(|(n, s)| (n.as_str(), s)), Some(info))
        .map_err(Error::SafeTensorsRefused)?;
    let json = |map: &BTreeMap<String, Vec<f32>>| {
        (!map.is_empty()).then(|| serde_json::to_string(map).unwrap_or_default())
    };
    Ok(Exported {
        weights,
        scales: json(&scales),
        mins: json(&mins),
    })
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
mod tests {
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

    proptest! {
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
}
