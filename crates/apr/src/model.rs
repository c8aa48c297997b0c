//! [`TensorModel`]: an ordered set of named tensors, and its quantization (001 §6.2.5).

use crate::error::{Error, Result};
use crate::quant::{
    QuantType, QuantizationHooks, QuantizationInfo, QuantizerRegistry, TensorQuantization,
    TensorRole, UniformQuantization, relative_error,
};
use crate::tensor::{DType, Tensor};

/// A model whose payload is named tensors, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TensorModel {
    /// The tensors; names are unique.
    pub tensors: Vec<Tensor>,
    /// How they were quantized, if they were.
    pub quantization: Option<QuantizationInfo>,
}

/// Progress of a long operation: `(tensors done, tensors in all)`.
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize);

impl TensorModel {
    /// A model of `tensors`.
    ///
    /// # Errors
    /// `DuplicateName` if two tensors share a name.
    pub fn new(tensors: Vec<Tensor>) -> Result<Self> {
        let model = Self {
            tensors,
            quantization: None,
        };
        model.check_unique_names()?;
        Ok(model)
    }

    pub(crate) fn check_unique_names(&self) -> Result<()> {
        crate::error::check_unique(self.tensors.iter().map(|t| t.name.as_str()))
    }

    /// The tensor named `name`.
    #[must_use]
    pub fn tensor(&self, name: &str) -> Option<&Tensor> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// Whether any tensor is quantized (the QUANTIZED flag).
    #[must_use]
    pub fn is_quantized(&self) -> bool {
        self.tensors.iter().any(|t| t.dtype.is_quantized())
    }

    /// Quantizes every tensor the [`TensorRole`] policy quantizes with `quant_type` (explicit
    /// opt-in, 001 §6.2.5). See [`QuantizationSession`] for which tensors are kept as they are.
    ///
    /// # Errors
    /// See [`TensorModel::quantize_with`].
    pub fn quantize(&self, quant_type: QuantType) -> Result<Self> {
        self.quantize_with_hooks(&UniformQuantization { quant_type })
    }

    /// Quantizes tensor by tensor as `hooks` decide, with the built-in quantizers.
    ///
    /// # Errors
    /// See [`TensorModel::quantize_with`].
    pub fn quantize_with_hooks(&self, hooks: &dyn QuantizationHooks) -> Result<Self> {
        self.quantize_with(hooks, &QuantizerRegistry::default(), &mut |_, _| {})
    }

    /// Quantizes every tensor the [`TensorRole`] policy quantizes with the plugin `name` of
    /// `registry`.
    ///
    /// # Errors
    /// `UnsupportedQuantization` if the registry has no such quantizer; see
    /// [`TensorModel::quantize_with`].
    pub fn quantize_with_registry(&self, name: &str, registry: &QuantizerRegistry) -> Result<Self> {
        let session = QuantizationSession::with_plugin(name, registry)?;
        self.run(session, &mut |_, _| {})
    }

    /// The general form: `hooks` pick each tensor's type, `registry` supplies the quantizer of
    /// each type (by the type's name), `progress` hears after each tensor.
    ///
    /// # Errors
    /// `AlreadyQuantized` if the model is already quantized; `QuantizationCorrupt` naming the
    /// tensor for NaN or infinite values, or a scale that overflows f16/f32.
    pub fn quantize_with(
        &self,
        hooks: &dyn QuantizationHooks,
        registry: &QuantizerRegistry,
        progress: Progress<'_>,
    ) -> Result<Self> {
        self.run(QuantizationSession::new(hooks, registry), progress)
    }

    fn run(&self, mut session: QuantizationSession<'_>, progress: Progress<'_>) -> Result<Self> {
        let mut out = Vec::with_capacity(self.tensors.len());
        for (done, tensor) in self.tensors.iter().enumerate() {
            out.push(session.quantize(tensor)?);
            progress(done + 1, self.tensors.len());
        }
        Ok(Self {
            tensors: out,
            quantization: Some(session.finish()?),
        })
    }
}

/// Quantization one tensor at a time, for models that do not fit in memory: feed each tensor to
/// [`QuantizationSession::quantize`] in order, then [`QuantizationSession::finish`] gives the
/// [`QuantizationInfo`] for the metadata. [`TensorModel::quantize_with`] is this over a model in
/// memory.
///
/// Rules (`docs/apr.md` §5): only f32, f16 and bf16 tensors are quantized (i8/u8 are kept); the
/// hooks choose each tensor's type, and the built-in hooks and plugin sessions keep the roles
/// llama.cpp keeps in F32 (norms, biases, every tensor of fewer than 2 dimensions:
/// [`TensorRole`]); a block type needs the last dimension to be a multiple of 32, other tensors
/// are kept in their dtype (as llama.cpp keeps such tensors in F32/F16); every kept tensor's
/// record says why. A tensor whose relative RMS error exceeds its type's
/// [`QuantType::warning_threshold`] is quantized and a warning recorded (001 §6.2.9).
pub struct QuantizationSession<'a> {
    plan: Plan<'a>,
    records: Vec<TensorQuantization>,
    warnings: Vec<String>,
    original_dtype: Option<&'static str>,
    /// Elements quantized per type: the main type is the one covering the most weights.
    elements: Vec<(QuantType, u64)>,
    calibration_samples: u32,
}

impl core::fmt::Debug for QuantizationSession<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("QuantizationSession")
            .field("tensors", &self.records.len())
            .finish_non_exhaustive()
    }
}

impl<'a> QuantizationSession<'a> {
    /// A session where `hooks` choose and `registry` supplies the quantizers.
    #[must_use]
    pub fn new(hooks: &'a dyn QuantizationHooks, registry: &'a QuantizerRegistry) -> Self {
        Self::from_plan(Plan::Hooks { hooks, registry })
    }

    /// A session quantizing every float tensor with the plugin `name`.
    ///
    /// # Errors
    /// `UnsupportedQuantization` if the registry has no such quantizer.
    pub fn with_plugin(name: &str, registry: &'a QuantizerRegistry) -> Result<Self> {
        let quantizer = registry.get(name).ok_or(Error::UnsupportedQuantization {
            type_id: QuantType::Custom.id(),
        })?;
        Ok(Self::from_plan(Plan::Plugin(quantizer)))
    }

    fn from_plan(plan: Plan<'a>) -> Self {
        Self {
            plan,
            records: Vec::new(),
            warnings: Vec::new(),
            original_dtype: None,
            elements: Vec::new(),
            calibration_samples: 0,
        }
    }

    /// Records how many calibration samples informed the ranges (stored in the metadata).
    pub fn set_calibration_samples(&mut self, samples: u32) {
        self.calibration_samples = samples;
    }

    /// Quantizes (or keeps) the next tensor.
    ///
    /// # Errors
    /// `AlreadyQuantized` if the tensor is already quantized; `QuantizationCorrupt` naming the
    /// tensor for NaN or infinite values, or a scale that overflows.
    pub fn quantize(&mut self, tensor: &Tensor) -> Result<Tensor> {
        if tensor.dtype.is_quantized() {
            return Err(Error::AlreadyQuantized {
                tensor: tensor.name.clone(),
            });
        }
        let (next, record) = quantize_one(tensor, &self.plan)?;
        self.record(
            &tensor.name,
            tensor.dtype,
            tensor.element_count(),
            next.dtype,
            record,
        );
        Ok(next)
    }

    /// The built-in block type (Q8_0, Q4_0, Q4_1) [`QuantizationSession::quantize`] would give
    /// the tensor `name` of `dtype` and `shape`, when its result depends on the values only
    /// through that type's kernel: the hooks choose the type, the registry's quantizer for it is
    /// the built-in one, and the hooks do not inspect results
    /// ([`QuantizationHooks::inspects_results`]). `None` otherwise (the tensor is kept, or goes
    /// through a plugin or the hooks' `validate`): only `quantize` then treats it. A faster path
    /// (`apr::fs`'s streaming quantization) runs the kernel itself and reports the result with
    /// [`QuantizationSession::record_block`].
    #[must_use]
    pub fn block_type_for(&self, name: &str, dtype: DType, shape: &[u64]) -> Option<QuantType> {
        let Plan::Hooks { hooks, registry } = &self.plan else {
            return None;
        };
        if !matches!(dtype, DType::F32 | DType::F16 | DType::BF16) || hooks.inspects_results() {
            return None;
        }
        let shape = shape
            .iter()
            .map(|&d| usize::try_from(d).ok())
            .collect::<Option<Vec<usize>>>()?;
        let quant = hooks.select_quantizer(name, &shape)?;
        let whole_blocks = shape
            .last()
            .is_some_and(|&last| last % crate::quant::kernels::BLOCK_LEN == 0);
        let built_in = registry.get(quant.name())?.built_in_block_type() == Some(quant);
        (whole_blocks && built_in).then_some(quant)
    }

    /// Records the tensor `name` (of `dtype`, `elements` values) quantized to `quant` outside
    /// the session, with its relative error, exactly as [`QuantizationSession::quantize`]
    /// records it. Only for a tensor [`QuantizationSession::block_type_for`] gave `quant`, in
    /// model order with the others.
    pub fn record_block(
        &mut self,
        name: &str,
        dtype: DType,
        elements: u64,
        quant: QuantType,
        relative_error: f32,
    ) {
        let record = TensorQuantization {
            name: name.to_owned(),
            quant_type: Some(quant.id()),
            relative_error: Some(relative_error),
            kept_because: None,
            output_error: None,
        };
        self.record(name, dtype, elements, DType::Quantized(quant), record);
    }

    /// A copy of the session as it stands, for planning an output before any tensor is read
    /// (`apr::fs`'s streaming quantization feeds it [`QuantizationSession::plan_tensor`] and
    /// encodes what its `finish` gives, to know the metadata's length in advance).
    #[cfg(feature = "fs")]
    pub(crate) fn planning_copy(&self) -> Self {
        Self {
            plan: self.plan,
            records: self.records.clone(),
            warnings: self.warnings.clone(),
            original_dtype: self.original_dtype,
            elements: self.elements.clone(),
            calibration_samples: self.calibration_samples,
        }
    }

    /// The dtype [`QuantizationSession::quantize`] will give the tensor `name` of `dtype` and
    /// `shape` when that follows from these alone: the block type of
    /// [`QuantizationSession::block_type_for`], or `dtype` for a tensor kept for its dtype, name
    /// or shape. The tensor is then recorded as `quantize` records it, a block type with a
    /// relative error of 0 (encoded as wide as any other, and below every warning threshold).
    /// `None`, recording nothing, when the outcome depends on more (a plugin's or a validating
    /// hook's result) or `quantize` would refuse the tensor.
    #[cfg(feature = "fs")]
    pub(crate) fn plan_tensor(&mut self, name: &str, dtype: DType, shape: &[u64]) -> Option<DType> {
        let elements = crate::tensor::element_count(shape).unwrap_or(0);
        if let Some(quant) = self.block_type_for(name, dtype, shape) {
            self.record_block(name, dtype, elements, quant, 0.0);
            return Some(DType::Quantized(quant));
        }
        let reason = match dtype {
            DType::Quantized(_) => return None,
            DType::F32 | DType::F16 | DType::BF16 => {
                let shape = shape
                    .iter()
                    .map(|&d| usize::try_from(d).ok())
                    .collect::<Option<Vec<usize>>>()?;
                match treatment(&self.plan, name, &shape).ok()? {
                    Treatment::Kept(reason) => reason,
                    Treatment::Quantize(_) => return None,
                }
            }
            _ => INTEGERS_KEPT.to_owned(),
        };
        self.record(name, dtype, elements, dtype, kept_record(name, &reason));
        Some(dtype)
    }

    /// Records one tensor's treatment: its warning, its type's weight count, its record.
    fn record(
        &mut self,
        name: &str,
        dtype: DType,
        elements: u64,
        next: DType,
        record: TensorQuantization,
    ) {
        if let (Some(error), DType::Quantized(quant)) = (record.relative_error, next) {
            let threshold = quant.warning_threshold();
            if error > threshold {
                self.warnings.push(format!(
                    "tensor {:?}: relative error {:.2}% exceeds {:.1}%, the {} threshold",
                    name,
                    error * 100.0,
                    threshold * 100.0,
                    quant.name()
                ));
            }
        }
        if record.quant_type.is_some() {
            self.original_dtype.get_or_insert(dtype.name());
            if let DType::Quantized(q) = next {
                match self.elements.iter_mut().find(|(t, _)| *t == q) {
                    Some((_, n)) => *n = n.saturating_add(elements),
                    None => self.elements.push((q, elements)),
                }
            }
        }
        self.records.push(record);
    }

    /// The record for the metadata. Its `quant_type` is the type that covers the most weights
    /// (the uniform type, or mixed precision's default in practice).
    ///
    /// # Errors
    /// `UnsupportedQuantization` if the registry lacks the main type's quantizer.
    pub fn finish(self) -> Result<QuantizationInfo> {
        let (quant_type, quantizer, bits) = match &self.plan {
            Plan::Plugin(q) => (QuantType::Custom, q.name().to_owned(), q.bits_per_weight()),
            Plan::Hooks { registry, .. } => {
                // The type covering the most weights (first seen wins a tie).
                let quant = self
                    .elements
                    .iter()
                    .rev()
                    .max_by_key(|(_, n)| *n)
                    .map_or(QuantType::Q8_0, |(q, _)| *q);
                let quantizer = registry.for_type(quant)?;
                (
                    quant,
                    quantizer.name().to_owned(),
                    quantizer.bits_per_weight(),
                )
            }
        };
        Ok(QuantizationInfo {
            quant_type: quant_type.id(),
            calibration_method: "minmax".to_owned(),
            calibration_samples: self.calibration_samples,
            original_dtype: self.original_dtype.unwrap_or("f32").to_owned(),
            quantizer,
            block_size: u32::try_from(quant_type.block_size()).unwrap_or(0),
            bits_per_weight: bits,
            tensors: self.records,
            warnings: self.warnings,
        })
    }
}

/// Why an integer tensor is kept.
const INTEGERS_KEPT: &str = "integer tensors are not quantized";

#[derive(Clone, Copy)]
enum Plan<'a> {
    Hooks {
        hooks: &'a dyn QuantizationHooks,
        registry: &'a QuantizerRegistry,
    },
    Plugin(&'a dyn crate::Quantizer),
}

fn kept(tensor: &Tensor, reason: &str) -> (Tensor, TensorQuantization) {
    (tensor.clone(), kept_record(&tensor.name, reason))
}

fn kept_record(name: &str, reason: &str) -> TensorQuantization {
    TensorQuantization {
        name: name.to_owned(),
        quant_type: None,
        relative_error: None,
        kept_because: Some(reason.to_owned()),
        output_error: None,
    }
}

/// What the session does with a float tensor, decided from its name and shape alone.
enum Treatment<'a> {
    /// Kept as it is, for this reason.
    Kept(String),
    /// Quantized by this quantizer (and then possibly kept by the hooks' `validate`).
    Quantize(&'a dyn crate::Quantizer),
}

/// [`Treatment`] of the float tensor `name` of `shape` under `plan`.
fn treatment<'a>(plan: &Plan<'a>, name: &str, shape: &[usize]) -> Result<Treatment<'a>> {
    Ok(match plan {
        Plan::Plugin(q) => match TensorRole::of(name, shape).kept_because() {
            Some(reason) => Treatment::Kept(reason.to_owned()),
            None => Treatment::Quantize(*q),
        },
        Plan::Hooks { hooks, registry } => {
            let Some(quant) = hooks.select_quantizer(name, shape) else {
                return Ok(Treatment::Kept(hooks.kept_because(name, shape)));
            };
            if quant.block_size() != 0
                && shape
                    .last()
                    .is_none_or(|&last| last % quant.block_size() != 0)
            {
                return Ok(Treatment::Kept(
                    "its last dimension is not a multiple of 32".to_owned(),
                ));
            }
            Treatment::Quantize(registry.for_type(quant)?)
        }
    })
}

fn quantize_one(tensor: &Tensor, plan: &Plan<'_>) -> Result<(Tensor, TensorQuantization)> {
    if !matches!(tensor.dtype, DType::F32 | DType::F16 | DType::BF16) {
        return Ok(kept(tensor, INTEGERS_KEPT));
    }
    let Ok(shape) = tensor
        .shape
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<Vec<usize>, _>>()
    else {
        return Err(Error::TooLargeForPlatform {
            tensor: tensor.name.clone(),
        });
    };
    let quantizer = match treatment(plan, &tensor.name, &shape)? {
        Treatment::Kept(reason) => return Ok(kept(tensor, &reason)),
        Treatment::Quantize(quantizer) => quantizer,
    };
    let name_error = |error: Error| match error {
        Error::QuantizationCorrupt { reason, .. } => Error::QuantizationCorrupt {
            tensor: tensor.name.clone(),
            reason,
        },
        other => other,
    };
    let values = tensor.to_f32()?;
    let block = quantizer.quantize(&values, &shape).map_err(name_error)?;
    let back = quantizer.dequantize(&block).map_err(name_error)?;
    if back.iter().any(|v| !v.is_finite()) {
        return Err(Error::corrupt(&tensor.name, crate::quant::SCALE_OVERFLOW));
    }
    if let Plan::Hooks { hooks, .. } = plan
        && !hooks.validate(&tensor.name, &values, &block)
    {
        return Ok(kept(tensor, "the hooks rejected the result"));
    }
    let error = relative_error(&values, &back);
    let type_id = block.quant_type.id();
    let mut next = Tensor::new(
        tensor.name.clone(),
        DType::Quantized(block.quant_type),
        tensor.shape.clone(),
        block.blocks,
    )?;
    if block.quant_type == QuantType::Custom {
        next.set_quantizer(quantizer.name());
    }
    Ok((
        next,
        TensorQuantization {
            name: tensor.name.clone(),
            quant_type: Some(type_id),
            relative_error: Some(error),
            kept_because: None,
            output_error: None,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::MixedPrecisionHooks;

    fn model() -> TensorModel {
        let values: Vec<f32> = (0..128).map(|i| (i as f32 * 0.37).sin()).collect();
        TensorModel::new(vec![
            Tensor::from_f32("token_embd.weight", vec![4, 32], &values).unwrap(),
            Tensor::from_f32("blk.0.weight", vec![2, 64], &values).unwrap(),
            Tensor::from_f32("blk.0.bias", vec![3], &values[..3]).unwrap(),
            Tensor::from_f32("blk.0.odd", vec![3, 5], &values[..15]).unwrap(),
        ])
        .unwrap()
    }

    #[test]
    fn uniform_quantization_keeps_tensors_that_are_not_whole_blocks() {
        let q = model().quantize(QuantType::Q4_0).unwrap();
        assert_eq!(q.tensors[0].dtype, DType::Quantized(QuantType::Q4_0));
        assert_eq!(q.tensors[3].dtype, DType::F32);
        let info = q.quantization.unwrap();
        assert_eq!(info.quant_type, QuantType::Q4_0.id());
        assert_eq!(
            info.tensors[3].kept_because.as_deref(),
            Some("its last dimension is not a multiple of 32")
        );
    }

    /// A small Llama-shaped block in Hugging Face's names, Gaussian weights of scale 0.02.
    fn llama_block() -> TensorModel {
        let mut noise = crate::quant::tests::Noise(3);
        let mut tensor = |name: &str, shape: Vec<u64>| {
            let count = usize::try_from(shape.iter().product::<u64>()).unwrap();
            let values: Vec<f32> = (0..count).map(|_| noise.normal() * 0.02).collect();
            Tensor::from_f32(name, shape, &values).unwrap()
        };
        TensorModel::new(vec![
            tensor("model.embed_tokens.weight", vec![64, 64]),
            tensor("model.layers.0.input_layernorm.weight", vec![64]),
            tensor("model.layers.0.self_attn.q_proj.weight", vec![64, 64]),
            tensor("model.layers.0.self_attn.q_proj.bias", vec![64]),
            tensor("model.layers.0.post_attention_layernorm.weight", vec![64]),
            tensor("model.layers.0.mlp.up_proj.weight", vec![128, 64]),
            tensor("model.layers.0.mlp.down_proj.weight", vec![64, 128]),
            tensor("model.layers.0.layer_scale", vec![64]),
            tensor("model.norm.weight", vec![64]),
            tensor("lm_head.weight", vec![64, 64]),
        ])
        .unwrap()
    }

    fn kept_reasons(info: &QuantizationInfo) -> Vec<(&str, &str)> {
        info.tensors
            .iter()
            .filter_map(|t| Some((t.name.as_str(), t.kept_because.as_deref()?)))
            .collect()
    }

    #[test]
    fn norms_biases_and_vectors_stay_f32_with_the_reason_under_every_policy() {
        let norm = TensorRole::Norm.kept_because().unwrap();
        let bias = TensorRole::Bias.kept_because().unwrap();
        let vector = TensorRole::Vector.kept_because().unwrap();
        let expected = [
            ("model.layers.0.input_layernorm.weight", norm),
            ("model.layers.0.self_attn.q_proj.bias", bias),
            ("model.layers.0.post_attention_layernorm.weight", norm),
            ("model.layers.0.layer_scale", vector),
            ("model.norm.weight", norm),
        ];
        let model = llama_block();
        let mixed = MixedPrecisionHooks {
            default_type: QuantType::Q4_0,
            embedding_type: QuantType::Q8_0,
            output_type: QuantType::Q8_0,
        };
        let registry = QuantizerRegistry::default();
        for quantized in [
            model.quantize(QuantType::Q4_0).unwrap(),
            model.quantize(QuantType::Q8Tensor).unwrap(),
            model.quantize_with_hooks(&mixed).unwrap(),
            model.quantize_with_registry("q4_1", &registry).unwrap(),
        ] {
            let info = quantized.quantization.as_ref().unwrap();
            assert_eq!(kept_reasons(info), expected);
            for (original, tensor) in model.tensors.iter().zip(&quantized.tensors) {
                let kept = expected.iter().any(|(name, _)| *name == tensor.name);
                assert_eq!(tensor == original, kept, "{}", tensor.name);
                assert_eq!(tensor.dtype == DType::F32, kept, "{}", tensor.name);
            }
        }
    }

    #[test]
    fn an_ordinary_q4_run_records_no_warning() {
        for quant in [QuantType::Q4_0, QuantType::Q4_1] {
            let info = llama_block().quantize(quant).unwrap().quantization.unwrap();
            assert_eq!(info.warnings, Vec::<String>::new(), "{}", quant.name());
            // Each quantized tensor's error is the type's ordinary one, well over the spec's 5%.
            assert!(
                info.tensors
                    .iter()
                    .filter_map(|t| t.relative_error)
                    .all(|e| e > 0.05)
            );
        }
    }

    #[test]
    fn hooks_that_skip_a_tensor_say_so() {
        struct FirstOnly;
        impl QuantizationHooks for FirstOnly {
            fn select_quantizer(&self, name: &str, _shape: &[usize]) -> Option<QuantType> {
                (name == "token_embd.weight").then_some(QuantType::Q8_0)
            }
        }
        let info = model()
            .quantize_with_hooks(&FirstOnly)
            .unwrap()
            .quantization
            .unwrap();
        assert_eq!(
            info.tensors[1].kept_because.as_deref(),
            Some("the hooks skipped it")
        );
    }

    #[test]
    fn mixed_precision_gives_embeddings_their_type() {
        let hooks = MixedPrecisionHooks {
            default_type: QuantType::Q4_1,
            embedding_type: QuantType::Q8_0,
            output_type: QuantType::Q8Tensor,
        };
        let q = model().quantize_with_hooks(&hooks).unwrap();
        assert_eq!(q.tensors[0].dtype, DType::Quantized(QuantType::Q8_0));
        assert_eq!(q.tensors[1].dtype, DType::Quantized(QuantType::Q4_1));
    }

    #[test]
    fn nan_is_refused_naming_the_tensor() {
        let mut values = vec![1.0f32; 32];
        values[5] = f32::NAN;
        let model =
            TensorModel::new(vec![Tensor::from_f32("bad", vec![1, 32], &values).unwrap()]).unwrap();
        let error = model.quantize(QuantType::Q8_0).unwrap_err();
        assert_eq!(error.signal(), envelope_core::Signal::QuantizationCorrupt);
        assert!(error.to_string().contains("\"bad\""), "{error}");
    }

    #[test]
    fn large_error_is_recorded_as_a_warning() {
        // One huge value per block flattens everything else to zero under Q4_0.
        let values: Vec<f32> = (0..32)
            .map(|i| {
                if i == 0 {
                    1000.0
                } else {
                    1.0 + i as f32 * 10.0
                }
            })
            .collect();
        let model =
            TensorModel::new(vec![Tensor::from_f32("w", vec![1, 32], &values).unwrap()]).unwrap();
        let q = model.quantize(QuantType::Q4_0).unwrap();
        let info = q.quantization.unwrap();
        assert!(info.tensors[0].relative_error.unwrap() > 0.0);
        let values: Vec<f32> = (0..32).map(|i| if i == 0 { 100.0 } else { 5.0 }).collect();
        let model =
            TensorModel::new(vec![Tensor::from_f32("w", vec![1, 32], &values).unwrap()]).unwrap();
        let info = model
            .quantize(QuantType::Q4_0)
            .unwrap()
            .quantization
            .unwrap();
        assert_eq!(info.warnings.len(), 1, "{info:?}");
        assert!(
            info.warnings[0].contains("relative error 26.82% exceeds 17.2%, the q4_0 threshold"),
            "{info:?}"
        );
    }

    #[test]
    fn quantizing_twice_is_refused() {
        let q = model().quantize(QuantType::Q8_0).unwrap();
        assert!(q.quantize(QuantType::Q8_0).is_err());
    }
}
