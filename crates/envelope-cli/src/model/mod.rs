//! `apr` model commands: `import`, `quantize`, `export`, and the model part of `inspect`
//! ([`inspect`]). Argument parsing and printing only; the work is in the `apr` crate.
//!
//! Inputs are opened mapped and lazily (`apr::fs::open`): `quantize` reads, quantizes and spills
//! one tensor at a time, so its memory is bounded by the largest tensor, not the model. Encrypted
//! inputs are refused with `DecryptionFailed` (run `apr decrypt` first); `--trusted-keys`
//! requires a valid signature before anything else is read, and a licensed input whose license
//! has expired is refused (`LicenseExpired`). Outputs are new, unsigned, unlicensed files: sign
//! (and license) them again with `apr sign` / `apr license`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use apr::fs::MappedFile;
use apr::quant::calibration;
use apr::{
    AprFile, MixedPrecisionHooks, ModelCard, ModelType, QuantType, QuantizationHooks,
    QuantizationSession, QuantizerRegistry, SaveOptions, UniformQuantization,
};
use clap::{Args, ValueEnum};
use cli_support::output::{self, Access, Content, Destination, Force};
use cli_support::say;
use cli_support::terminal::Safe;
use envelope_core::Flags;
use serde_json::json;

use crate::dataset::CompressionArg;
use crate::security::{KeyOptions, Tool};

pub mod leaks;

/// A quantization type as named on the command line (`q8_0`, `q4_0`, `q4_1`, `q8_tensor`); an
/// unknown name is `UnsupportedQuantization` (001 §6.2.9), not a usage error.
fn quant_type(name: &str) -> anyhow::Result<QuantType> {
    match QuantType::from_name(name) {
        Ok(QuantType::Custom) | Err(_) => Err(anyhow::anyhow!(
            "UnsupportedQuantization: unknown quantization type {name:?} (use q8_0, q4_0, q4_1 \
             or q8_tensor)"
        )),
        Ok(quant) => Ok(quant),
    }
}

/// `apr import`.
#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A Hugging Face model directory, or a .safetensors file.
    ///
    /// A directory: `config.json` (a JSON object with `architectures`), `model.safetensors` or
    /// the shards `model.safetensors.index.json` names, F32/F16/BF16 tensors kept as stored
    /// under their Hugging Face names (shards in file-name order, then each shard's data order).
    /// config.json, generation_config.json and the tokenizer files (tokenizer.json,
    /// tokenizer.model, tokenizer_config.json, special_tokens_map.json, added_tokens.json,
    /// chat_template.jinja) are kept verbatim in the model card for export. The index must
    /// match the shards exactly; shard names must be plain file names in the directory; links
    /// may not lead out of it. One tensor is in memory at a time (docs/apr.md §11).
    ///
    /// A .safetensors file: F32, F16, BF16, I8, U8 tensors; `scales.json` / `mins.json` next to
    /// it are used for tensors `apr export` wrote quantized.
    #[arg(value_name = "DIR|FILE")]
    pub input: PathBuf,
    /// The .apr file to write (atomically; an existing file is refused without --force).
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Replace an existing output (`--force`).
    #[command(flatten)]
    pub force: Force,
    /// Model type: a 001 §3.1 name (neural-sequential, linear-regression, custom, ...).
    #[arg(long = "type", value_name = "TYPE", default_value = "neural-custom")]
    pub model_type: String,
    /// A JSON model card (name, version, author, license, metrics, ...).
    #[arg(long, value_name = "JSON")]
    pub card: Option<PathBuf>,
    /// Payload compression (each tensor separately).
    #[arg(long, value_enum, default_value = "none")]
    pub compression: CompressionArg,
}

/// What a command requires of its input model before reading its tensors (`quantize`, `export`).
#[derive(Debug, Args)]
pub struct InputChecks {
    /// Require a valid signature on the input by a key in one of the `*.pub` files of DIR.
    #[arg(long, value_name = "DIR")]
    pub trusted_keys: Option<PathBuf>,
    /// Refuse the input (ModelTypeMismatch) unless it is a model of this type.
    #[arg(long, value_name = "TYPE")]
    pub expect_type: Option<String>,
}

impl InputChecks {
    /// Opens `path` under these checks ([`open`]).
    fn open(&self, path: &Path) -> anyhow::Result<AprFile<MappedFile>> {
        open(path, self.trusted_keys.as_ref(), self.expect_type.as_ref())
    }
}

/// `apr quantize`.
#[derive(Debug, Args)]
pub struct QuantizeArgs {
    /// The .apr model to quantize (named tensors, unencrypted).
    pub input: PathBuf,
    /// Type of every weight matrix: q8_0 (8.5 bits/weight), q4_0 (4.5), q4_1 (5.0), all
    /// GGUF-compatible blocks of 32 that need the last dimension to be a multiple of 32, or
    /// q8_tensor (8 bits, one scale and zero point per tensor). Norms, biases, every tensor of
    /// fewer than 2 dimensions and the few others llama.cpp keeps in F32 are kept, as are tensors
    /// that are not whole blocks; the reason is recorded (docs/apr.md §5.5).
    #[arg(long = "type", value_name = "TYPE")]
    pub quant_type: String,
    /// Type of embedding tensors (names containing `embed`/`embd`): mixed precision.
    #[arg(long, value_name = "TYPE")]
    pub embedding_type: Option<String>,
    /// Type of the output layer (`output.*`, `lm_head*`): mixed precision.
    #[arg(long, value_name = "TYPE")]
    pub output_type: Option<String>,
    /// A CSV of input samples (one row per sample, one numeric column per input feature, an
    /// optional header row). Every 2-D tensor whose input width equals the column count is
    /// checked on these samples: its output error `||W x - W' x|| / ||W x||` is recorded, and
    /// over its type's threshold (5% for 8-bit types, 17.2% for q4_0, 15.6% for q4_1:
    /// docs/apr.md §5.6) it is a warning in the metadata.
    #[arg(long, value_name = "CSV")]
    pub calibration: Option<PathBuf>,
    /// Print one line per tensor (its type and error, or why it was kept) and every accuracy
    /// warning, after the summary line. `--json` always has them.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// The quantized .apr file (atomically; an existing file is refused without --force).
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Replace an existing output (`--force`).
    #[command(flatten)]
    pub force: Force,
    /// What the input must be (signed by a trusted key, of a model type).
    #[command(flatten)]
    pub checks: InputChecks,
}

/// Export target. Both are written one tensor at a time (memory bounded by the largest tensor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// GGUF v3 (llama.cpp, Ollama); a model imported from a Hugging Face directory (Llama,
    /// Mistral, Qwen2) as llama.cpp's converter writes it: hparams, tensor names, tokenizer.
    Gguf,
    /// A directory: for a model imported from a Hugging Face directory, one transformers loads
    /// (model.safetensors or shards, config.json, tokenizer files); otherwise weights.safetensors
    /// (+ scales.json, mins.json for quantized tensors).
    Safetensors,
}

/// `apr export --dtype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FloatTypeArg {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    Bf16,
}

impl From<FloatTypeArg> for apr::safetensors::FloatType {
    fn from(arg: FloatTypeArg) -> Self {
        match arg {
            FloatTypeArg::F32 => Self::F32,
            FloatTypeArg::F16 => Self::F16,
            FloatTypeArg::Bf16 => Self::BF16,
        }
    }
}

/// `apr export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The .apr model (unencrypted): named tensors, or for GGUF also a serde linear or logistic
    /// regression (written as its `coefficients` and `intercept` tensors, 003 §7.1).
    pub input: PathBuf,
    /// Target format.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// GGUF: the output file. SafeTensors: the output directory, built beside it and moved into
    /// place whole (an existing non-empty directory needs --force and may hold only the files an
    /// export writes).
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Replace an existing output (`--force`).
    #[command(flatten)]
    pub force: Force,
    /// GGUF `general.architecture` (default: the model type's name in lower case). A model
    /// imported from a Hugging Face directory takes it from its config.json (`llama`, `qwen2`),
    /// and a different value is refused.
    #[arg(long, value_name = "NAME")]
    pub architecture: Option<String>,
    /// SafeTensors: convert every float tensor to this type, dequantizing quantized ones
    /// (transformers cannot run Q8_0/Q4_x blocks, so a quantized Hugging Face model needs it).
    #[arg(long, value_enum, value_name = "TYPE")]
    pub dtype: Option<FloatTypeArg>,
    /// SafeTensors, for transformers: the most tensor bytes per file (bytes, or a number with
    /// K, M, G, T: powers of 1024; default transformers' 5 GB, 5 000 000 000 bytes); past it the
    /// weights are split into model-0000N-of-0000M.safetensors shards with
    /// model.safetensors.index.json.
    #[arg(
        long,
        value_name = "SIZE",
        default_value_t = apr::safetensors::DEFAULT_MAX_SHARD_SIZE,
        value_parser = crate::parse_size
    )]
    pub max_shard_size: u64,
    /// SafeTensors: write a quantized Hugging Face model as int8 + scales.json (001 §6.2.6,
    /// which transformers refuses to load and `apr import` reads back) instead of refusing it.
    #[arg(long, conflicts_with = "dtype")]
    pub raw_quantized: bool,
    /// What the input must be (signed by a trusted key, of a model type).
    #[command(flatten)]
    pub checks: InputChecks,
}

/// `apr convert`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The .apr model (named tensors, unencrypted).
    pub input: PathBuf,
    /// The converted model (atomically; an existing file is refused without --force).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// The output as a second argument (`convert IN OUT`, kept for existing scripts).
    #[arg(value_name = "OUT", hide = true, conflicts_with = "output")]
    pub output_positional: Option<PathBuf>,
    /// Replace an existing output (`--force`).
    #[command(flatten)]
    pub force: Force,
    /// Write the zero-copy deployment form (TRUENO_NATIVE, 003 §9): every tensor uncompressed on
    /// a 64-byte boundary, listed in a tensor index, so a memory-mapped reader
    /// (`zerocopy_trueno::MappedModel`) opens it in microseconds whatever its size and borrows
    /// tensors in place. Decompresses once; the file stays a valid tensor model for every reader.
    #[arg(long)]
    pub trueno_native: bool,
    /// The SIMD backend hint stored with each tensor (auto, scalar, sse2, avx, avx2, avx512, neon,
    /// wasm-simd, gpu).
    #[arg(
        long,
        value_name = "HINT",
        default_value = "auto",
        requires = "trueno_native"
    )]
    pub backend: String,
    /// Without --trueno-native: the payload compression of the output.
    #[arg(
        long,
        value_enum,
        default_value = "zstd-l3",
        conflicts_with = "trueno_native"
    )]
    pub compression: crate::dataset::CompressionArg,
    /// Require a valid signature on the input by a key in one of the `*.pub` files of DIR.
    #[arg(long, value_name = "DIR")]
    pub trusted_keys: Option<PathBuf>,
}

/// `apr convert`: rewrite a tensor model, as the zero-copy TRUENO_NATIVE form or with another
/// compression. Tensors, names, order, card and quantization are kept.
///
/// # Errors
/// The input's signal, or the writer's error.
pub fn convert(args: &ConvertArgs) -> anyhow::Result<()> {
    let output_path = args
        .output
        .as_deref()
        .or(args.output_positional.as_deref())
        .ok_or_else(|| anyhow::anyhow!("Usage: name the output with -o OUT"))?;
    let destination =
        output::destination(output_path, args.force, Access::Shared, Content::Binary)?;
    let input = open(&args.input, args.trusted_keys.as_ref(), None)?;
    let model = input.tensors()?;
    let model_type = ModelType::from_id(input.model_type_id()).ok_or_else(|| {
        anyhow::anyhow!(
            "InvalidFormat: unknown model type {:#06x}",
            input.model_type_id()
        )
    })?;
    let card = input.metadata().model_card.clone();
    let parts = if args.trueno_native {
        apr::trueno::trueno_parts(
            &model,
            model_type,
            &card,
            crate::backend_hint(&args.backend)?,
        )?
    } else {
        let options = SaveOptions {
            card,
            compression: args.compression.into(),
        };
        apr::tensor_parts(&model, model_type, &options)?
    };
    let shown = destination.path().display().to_string();
    envelope_core::fs::save(destination, &parts).with_context(|| format!("writing {shown}"))?;
    let form = if args.trueno_native {
        "TRUENO_NATIVE (64-byte aligned, zero-copy)"
    } else {
        "compressed"
    };
    crate::security::report_written(
        &format!("{shown}: {} tensors written, {form}", model.tensors.len()),
        json!({
            "ok": true,
            "output": shown,
            "tensors": model.tensors.len(),
            "trueno_native": args.trueno_native,
        }),
    )
}

fn open(
    path: &Path,
    trusted_keys: Option<&PathBuf>,
    expect_type: Option<&String>,
) -> anyhow::Result<AprFile<MappedFile>> {
    // The library's load order (signature, license, model type); under a signature requirement
    // it holds the file still, so the tensors used are the bytes whose signature was checked.
    let trusted = trusted_keys
        .map(|dir| cli_support::keys::trusted_keys(dir))
        .transpose()?;
    let options = apr::LoadOptions {
        expected_type: expect_type
            .map(|name| ModelType::from_name(name))
            .transpose()?,
        now_unix: Some(crate::security::unix_now()?),
        signature: trusted
            .as_ref()
            .map(|trusted| envelope_sign::Policy::RequireSignature { trusted }),
        limits: crate::limits(),
    };
    let file =
        apr::fs::open_verified(path, &options).with_context(|| path.display().to_string())?;
    if file.envelope().header().flags().contains(Flags::ENCRYPTED) {
        return Err(anyhow::anyhow!(
            "{}; decrypt the model first with `apr decrypt`",
            envelope_core::Error::DecryptionFailed(envelope_core::DecryptionFailure::KeyRequired)
        ));
    }
    Ok(file)
}

fn read_card(path: Option<&PathBuf>) -> anyhow::Result<ModelCard> {
    let Some(path) = path else {
        return Ok(ModelCard::default());
    };
    let text = std::fs::read_to_string(path).map_err(|error| {
        anyhow::anyhow!("Io: reading the model card {}: {error}", path.display())
    })?;
    serde_json::from_str(&text).map_err(|error| {
        anyhow::anyhow!(
            "Usage: the model card {} is not a JSON ModelCard object: {error}",
            path.display()
        )
    })
}

/// `apr import`.
///
/// # Errors
/// The import's or the writer's error, naming its signal.
pub fn import(args: &ImportArgs) -> anyhow::Result<()> {
    let destination =
        output::destination(&args.output, args.force, Access::Shared, Content::Binary)?;
    let model_type = ModelType::from_name(&args.model_type)?;
    let mut card = read_card(args.card.as_ref())?;
    if card.created_at.is_empty() {
        // 001 §4.1: created_at is RFC 3339. Without a card (or a card without the field) the
        // model file is created now; libraries take no clock, so the CLI fills it.
        card.created_at = jiff::Timestamp::now()
            .round(jiff::Unit::Second)
            .map_or_else(
                |_| jiff::Timestamp::now().to_string(),
                |now| now.to_string(),
            );
    }
    if args.input.is_dir() {
        return import_dir(args, destination, model_type, card);
    }
    let model = apr::fs::import_safetensors(&args.input)
        .with_context(|| format!("importing {}", args.input.display()))?;
    let options = SaveOptions {
        card,
        compression: args.compression.into(),
    };
    let shown = destination.path().display().to_string();
    apr::fs::save_tensors(destination, &model, model_type, &options)
        .with_context(|| format!("writing {shown}"))?;
    crate::security::report_written(
        &format!(
            "{shown}: {} tensors imported as {model_type}",
            model.tensors.len()
        ),
        json!({
            "ok": true,
            "output": shown,
            "tensors": model.tensors.len(),
            "model_type": model_type.to_string(),
        }),
    )
}

/// `apr import DIR`: a Hugging Face model directory, streamed one tensor at a time, with a
/// progress bar over the shards' bytes on stderr.
fn import_dir(
    args: &ImportArgs,
    destination: Destination,
    model_type: ModelType,
    card: ModelCard,
) -> anyhow::Result<()> {
    let shown = destination.path().display().to_string();
    let mut bar: Option<indicatif::ProgressBar> = None;
    let report = apr::fs::import_hf_dir(
        &args.input,
        destination,
        model_type,
        card,
        args.compression.into(),
        &mut |progress| {
            bar.get_or_insert_with(|| {
                cli_support::progress::bytes(progress.total_bytes, "importing")
            })
            .set_position(progress.bytes);
        },
    )
    .with_context(|| format!("importing {}", args.input.display()))?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let input = args.input.display().to_string();
    let shards = match report.shards {
        1 => "1 shard".to_owned(),
        n => format!("{n} shards"),
    };
    crate::security::report_written(
        &format!(
            "{shown}: {} tensors imported from {input} ({}, {shards}, {} kept)",
            report.tensors,
            report.architecture,
            report.source_files.join(", ")
        ),
        json!({
            "ok": true,
            "output": shown,
            "input": input,
            "tensors": report.tensors,
            "shards": report.shards,
            "architecture": report.architecture,
            "model_type": model_type.to_string(),
            "config_model_type": report.config_model_type,
            "source_files": report.source_files,
            "bytes": report.bytes,
        }),
    )
}

/// `apr quantize`.
///
/// # Errors
/// The input's signal, `QuantizationCorrupt` naming a tensor, or the writer's error.
pub fn quantize(args: &QuantizeArgs) -> anyhow::Result<()> {
    let destination =
        output::destination(&args.output, args.force, Access::Shared, Content::Binary)?;
    let input = args.checks.open(&args.input)?;
    let default_type = quant_type(&args.quant_type)?;
    let mixed;
    let uniform = UniformQuantization {
        quant_type: default_type,
    };
    let hooks: &dyn QuantizationHooks =
        if args.embedding_type.is_some() || args.output_type.is_some() {
            mixed = MixedPrecisionHooks {
                default_type,
                embedding_type: args
                    .embedding_type
                    .as_deref()
                    .map_or(Ok(default_type), quant_type)?,
                output_type: args
                    .output_type
                    .as_deref()
                    .map_or(Ok(default_type), quant_type)?,
            };
            &mixed
        } else {
            &uniform
        };
    let samples = args
        .calibration
        .as_deref()
        .map(calibration::Samples::read)
        .transpose()?;
    let registry = QuantizerRegistry::default();
    let mut session = QuantizationSession::new(hooks, &registry);
    let options = SaveOptions {
        card: input.metadata().model_card.clone(),
        compression: input.envelope().header().compression(),
    };
    let shown = destination.path().display().to_string();
    let mut writer = apr::fs::TensorFileWriter::with_memory_budget(
        destination,
        options.compression,
        apr::fs::QUANTIZE_MEMORY_BUDGET,
    )?;
    let count = input.metadata().tensors.len();
    let bar = cli_support::progress::items(count as u64, "tensors", "quantizing");
    let mut checks = Vec::new();
    if let Some(samples) = &samples {
        // The calibration check needs every tensor and its quantized form as values.
        for position in 0..count {
            let tensor = input.tensor_at(position)?;
            let quantized = session.quantize(&tensor)?;
            if let Some(check) = calibration::check(&tensor, &quantized, samples)? {
                checks.push(check);
            }
            writer.push_owned(quantized)?;
            bar.inc(1);
        }
    } else {
        // Streaming: kernels on every core straight from the mapped chunks, the error measured in
        // the same pass (apr::fs::quantize_into).
        apr::fs::quantize_into(&input, &mut session, &mut writer, |_| bar.inc(1))?;
    }
    bar.finish_and_clear();
    if let Some(samples) = &samples {
        session.set_calibration_samples(u32::try_from(samples.rows()).unwrap_or(u32::MAX));
    }
    let mut info = session.finish()?;
    calibration::record(&mut info, &checks);
    let model_type = input.model_type_id();
    let model_type = ModelType::from_id(model_type).unwrap_or(ModelType::Custom);
    writer
        .finish(model_type, &options.card, Some(info.clone()))
        .with_context(|| format!("writing {shown}"))?;
    if cli_support::run::mode().json {
        let kept: Vec<_> = kept_by_reason(&info)
            .into_iter()
            .map(|(reason, tensors)| json!({"reason": reason, "tensors": tensors}))
            .collect();
        cli_support::print::json(&json!({
            "ok": true,
            "output": shown,
            "quantized": quantized_count(&info),
            "tensors": count,
            "type": default_type.name(),
            "kept": kept,
            "warnings": info.warnings,
            "records": info.tensors,
        }))?;
        return Ok(());
    }
    let summary = summary_line(&shown, default_type, &info, args.verbose);
    // A run with accuracy warnings says so even under --quiet; the details are --verbose's.
    if info.warnings.is_empty() {
        cli_support::print::note(Safe(&summary));
    } else {
        cli_support::print::warn(Safe(&summary));
    }
    if args.verbose {
        for record in &info.tensors {
            cli_support::print::note(Safe(&tensor_line(record)));
        }
        for warning in &info.warnings {
            cli_support::print::warn(Safe(warning));
        }
    }
    Ok(())
}

fn quantized_count(info: &apr::QuantizationInfo) -> usize {
    info.tensors
        .iter()
        .filter(|t| t.quant_type.is_some())
        .count()
}

/// How many tensors were kept for each reason, in the order the reasons first occur.
fn kept_by_reason(info: &apr::QuantizationInfo) -> Vec<(&str, usize)> {
    let mut groups: Vec<(&str, usize)> = Vec::new();
    for reason in info
        .tensors
        .iter()
        .filter_map(|t| t.kept_because.as_deref())
    {
        match groups.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, n)) => *n += 1,
            None => groups.push((reason, 1)),
        }
    }
    groups
}

/// `apr quantize`'s one line: what was quantized, what was kept and why, and how many accuracy
/// warnings (issue 17: per-tensor detail is `--verbose`'s).
fn summary_line(
    shown: &str,
    quant: QuantType,
    info: &apr::QuantizationInfo,
    verbose: bool,
) -> String {
    let kept = kept_by_reason(info);
    let kept = if kept.is_empty() {
        "none kept".to_owned()
    } else {
        let total: usize = kept.iter().map(|(_, n)| n).sum();
        let reasons: Vec<String> = kept.iter().map(|(r, n)| format!("{n}: {r}")).collect();
        format!("{total} kept ({})", reasons.join("; "))
    };
    let warnings = match info.warnings.len() {
        0 => "no accuracy warnings".to_owned(),
        1 => "1 tensor over the accuracy threshold".to_owned(),
        n => format!("{n} tensors over the accuracy threshold"),
    };
    let hint = if verbose || info.warnings.is_empty() {
        ""
    } else {
        " (--verbose lists them)"
    };
    format!(
        "{shown}: {} of {} tensors quantized ({}), {kept}, {warnings}{hint}",
        quantized_count(info),
        info.tensors.len(),
        quant.name()
    )
}

/// One tensor's line under `--verbose`.
fn tensor_line(record: &apr::quant::TensorQuantization) -> String {
    let mut line = format!("  {}: ", record.name);
    match (&record.kept_because, record.quant_type) {
        (Some(why), _) => line += &format!("kept: {why}"),
        (None, Some(id)) => {
            let name = QuantType::from_id(id).map_or("unknown", QuantType::name);
            line += name;
            if let Some(error) = record.relative_error {
                line += &format!(", error {:.2}%", error * 100.0);
            }
            if let Some(error) = record.output_error {
                line += &format!(", output error {:.2}%", error * 100.0);
            }
        }
        (None, None) => line += "kept",
    }
    line
}

/// `apr export`.
///
/// # Errors
/// The input's signal, or `ExportFailed` naming the tensor the target cannot hold.
pub fn export(args: &ExportArgs) -> anyhow::Result<()> {
    let destination = match args.format {
        ExportFormat::Gguf => {
            output::destination(&args.output, args.force, Access::Shared, Content::Binary)?
        }
        // A directory: checked (and refused or replaced whole) by the export itself.
        ExportFormat::Safetensors => {
            Destination::new(&args.output).existing(output::Existing::replace_if(args.force.force))
        }
    };
    if args.format == ExportFormat::Gguf && (args.dtype.is_some() || args.raw_quantized) {
        anyhow::bail!("Usage: --dtype and --raw-quantized apply to --format safetensors");
    }
    let input = args.checks.open(&args.input)?;
    match args.format {
        ExportFormat::Gguf => export_gguf(args, destination, &input),
        ExportFormat::Safetensors => export_safetensors(args, destination, &input),
    }
}

/// `apr export --format gguf`. A Hugging Face model (config.json kept by `apr import DIR`) is
/// written as llama.cpp's converter writes it, its architecture taken from config.json; a serde
/// regression as its coefficient tensors.
fn export_gguf(
    args: &ExportArgs,
    destination: Destination,
    input: &AprFile<MappedFile>,
) -> anyhow::Result<()> {
    let shown = args.output.display().to_string();
    let options = apr::gguf::GgufOptions {
        architecture: args.architecture.clone(),
        ..apr::gguf::GgufOptions::default()
    };
    let hugging_face = input
        .metadata()
        .model_card
        .source_files
        .get(apr::hf::CONFIG)
        .is_some();
    let written = apr::fs::export_gguf_from(destination, input, &options)
        .with_context(|| format!("writing {shown}"))?;
    let count = written.tensors;
    let mut report = json!({ "ok": true, "output": shown, "tensors": count });
    let mut line = format!("{shown}: {count} tensors exported");
    if hugging_face {
        report["architecture"] = json!(written.architecture);
        line.push_str(&format!(
            " (llama.cpp architecture {})",
            written.architecture
        ));
    }
    crate::security::report_written(&line, report)
}

/// `apr export --format safetensors`, with a progress bar over the tensors.
fn export_safetensors(
    args: &ExportArgs,
    destination: Destination,
    input: &AprFile<MappedFile>,
) -> anyhow::Result<()> {
    let shown = args.output.display().to_string();
    let count = input.metadata().tensors.len();
    let options = apr::safetensors::SafeTensorsOptions {
        dtype: args.dtype.map(Into::into),
        max_shard_size: args.max_shard_size,
        raw_quantized: args.raw_quantized,
    };
    let metadata = input.metadata();
    let bar = cli_support::progress::items(count as u64, "tensors", "exporting");
    let layout = apr::fs::export_safetensors_with(
        destination,
        &metadata.tensors,
        &metadata.model_card,
        &options,
        |i| {
            // The spec layout reads block tensors again for the sidecars: the bar stops at the
            // tensor count.
            if bar.position() < count as u64 {
                bar.inc(1);
            }
            input.tensor_at(i)
        },
    );
    bar.finish_and_clear();
    let layout = layout.with_context(|| format!("writing {shown}"))?.name();
    crate::security::report_written(
        &format!("{shown}: {count} tensors exported ({layout} layout)"),
        json!({ "ok": true, "output": shown, "tensors": count, "layout": layout }),
    )
}

/// `apr inspect`: the shared envelope report, then the model's card, tensors and (with
/// `quantization`) how it was quantized. With `--json`, one object: the envelope report with a
/// `model` member ([`apr::ModelSummary`]).
///
/// A file whose envelope is valid but whose metadata is not an `.apr` model map (written by
/// another tool) is still reported, with the model part replaced by the reason (`model_error` in
/// JSON); with `--quantization`, which asks about the model itself, that is an error.
///
/// # Errors
/// As `crate::inspect::inspect`, the deep checks, then (with `quantization`) the model's.
pub fn inspect(
    path: &Path,
    quantization: bool,
    verify: bool,
    keys: &KeyOptions,
) -> anyhow::Result<()> {
    let read = || {
        let read = match apr::fs::open_with(path, crate::limits()) {
            Ok(file) => Ok(apr::summarize(&file)),
            Err(error) if quantization => return Err(error.into()),
            Err(error) => Err(error.to_string()),
        };
        Ok(crate::inspect::FormatPart {
            name: "model",
            kind: "an .apr model",
            read,
        })
    };
    let print = |summary: &apr::ModelSummary| print_summary(summary, quantization);
    if let Some(url) = path
        .to_str()
        .filter(|text| remote_file::Location::is_remote(text))
    {
        // An object in a store (docs/remote.md): the same report from its head and tail, the
        // model part from the same metadata checks as `apr::fs::open_with`.
        let read = |part: crate::inspect::RemotePart<'_>| {
            let opened = match part {
                crate::inspect::RemotePart::Whole(bytes) => {
                    envelope_core::Envelope::parse_lazy(bytes, envelope_core::Format::Model)
                        .map_err(apr::Error::from)
                        .and_then(|envelope| {
                            apr::AprFile::from_envelope(envelope.with_limits(crate::limits()))
                        })
                        .map(|file| apr::summarize(&file))
                }
                crate::inspect::RemotePart::Ranged(envelope) => {
                    apr::RangedModel::from_envelope(envelope.clone().with_limits(crate::limits()))
                        .map(|model| model.summary())
                }
            };
            let read = match opened {
                Ok(summary) => Ok(summary),
                Err(error) if quantization => return Err(error.into()),
                Err(error) => Err(error.to_string()),
            };
            Ok(crate::inspect::FormatPart {
                name: "model",
                kind: "an .apr model",
                read,
            })
        };
        return crate::inspect::report_remote_with(Tool::APR, url, verify, keys, read, print);
    }
    crate::inspect::report_with(Tool::APR, path, verify, keys, read, print)
}

fn print_summary(summary: &apr::ModelSummary, quantization: bool) -> std::io::Result<()> {
    say!(
        "  model        {} ({:#06x})",
        Safe(summary.model_type),
        summary.model_type_id
    )?;
    let card = &summary.model_card;
    if !card.name.is_empty() {
        let version = if card.version.is_empty() {
            String::new()
        } else {
            format!(" {}", card.version)
        };
        say!("  name         {}{}", Safe(&card.name), Safe(&version))?;
    }
    if let Some(config) = card.source_files.get(apr::hf::CONFIG) {
        // A Hugging Face import: its model class and the files export writes back.
        let class = apr::hf::HfConfig::parse(config).map_or_else(
            |_| "unreadable config.json".to_owned(),
            |c| c.architecture().to_owned(),
        );
        let files: Vec<&str> = card.source_files.0.keys().map(String::as_str).collect();
        say!(
            "  source       {} ({})",
            Safe(&class),
            Safe(&files.join(", "))
        )?;
    }
    say!("  tensors      {}", summary.tensors.len())?;
    if !quantization {
        return Ok(());
    }
    match &summary.quantization {
        None => say!("  quantization none")?,
        Some(info) => {
            let name = QuantType::from_id(info.quant_type).map_or("unknown", |q| q.name());
            say!(
                "  quantization Type: {}, Block size: {}, Bits/weight: {}, Original: {}",
                name.to_ascii_uppercase(),
                info.block_size,
                info.bits_per_weight,
                Safe(&info.original_dtype)
            )?;
            say!(
                "  calibration  {} ({} samples)",
                Safe(&info.calibration_method),
                info.calibration_samples
            )?;
            for (tensor, record) in summary.tensors.iter().zip(&info.tensors) {
                let error = record
                    .relative_error
                    .map_or_else(String::new, |e| format!(" error {:.3}%", e * 100.0));
                let kept = record
                    .kept_because
                    .as_ref()
                    .map_or_else(String::new, |why| format!(" kept: {why}"));
                say!(
                    "    {} {} {:?}{error}{}",
                    Safe(&tensor.name),
                    tensor.dtype,
                    tensor.shape,
                    Safe(&kept)
                )?;
            }
            for warning in &info.warnings {
                say!("  warning      {}", Safe(warning))?;
            }
        }
    }
    Ok(())
}
