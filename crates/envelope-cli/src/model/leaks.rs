//! `apr watermark` and the model side of `apr piracy` (003 §8.3): a suspect is an `.apr` model
//! or a SafeTensors file (what an `.apr` is most often exported to and leaked as).

use std::path::Path;

use anyhow::{Context as _, bail};
use apr::{ModelType, SaveOptions, TensorModel};
use envelope_core::Flags;
use watermark::detect::SliceStatistics;
use watermark::{Reading, SellerKey};

use crate::piracy::{self, Kind, MarkArgs, Subject};
use crate::security::Tool;

impl Subject for TensorModel {
    fn reading(&self, seller_key: &SellerKey) -> Reading {
        self.watermark_reading(seller_key)
    }

    fn statistics(&self) -> Vec<(String, SliceStatistics)> {
        self.watermark_statistics()
    }
}

fn has_extension(path: &Path, wanted: &str) -> bool {
    path.extension()
        .is_some_and(|extension| extension.eq_ignore_ascii_case(wanted))
}

/// How `apr piracy` reads suspects.
pub const PIRACY: Kind = Kind {
    tool: Tool::APR,
    noun: "tensor",
    accepts: |path| has_extension(path, "apr") || has_extension(path, "safetensors"),
    open: |path| Ok(Box::new(read_model(path)?.0)),
};

/// The tensors of `path` (`.apr`, or SafeTensors by extension), with the `.apr`'s type and save
/// options. A licensed `.apr` is read whatever its expiry: tracing a leak is not using the model
/// under its license.
fn read_model(path: &Path) -> anyhow::Result<(TensorModel, ModelType, SaveOptions)> {
    if has_extension(path, "safetensors") {
        let model = apr::fs::import_safetensors(path)?;
        return Ok((model, ModelType::Custom, SaveOptions::default()));
    }
    let options = apr::LoadOptions {
        // Time 0 is before any expiry (a leaked copy is examined, not licensed).
        now_unix: Some(0),
        limits: crate::limits(),
        ..apr::LoadOptions::default()
    };
    let file = apr::fs::open_verified(path, &options)?;
    if file.envelope().header().flags().contains(Flags::ENCRYPTED) {
        bail!(
            "{}; decrypt the model first with `apr decrypt` (mark the plaintext, then license, \
             encrypt and sign)",
            envelope_core::Error::DecryptionFailed(envelope_core::DecryptionFailure::KeyRequired)
        );
    }
    let model_type = ModelType::from_id(file.model_type_id()).unwrap_or(ModelType::Custom);
    let save = SaveOptions {
        card: file.metadata().model_card.clone(),
        compression: file.envelope().header().compression(),
    };
    Ok((file.tensors()?, model_type, save))
}

/// `apr watermark`: a copy of an `.apr` model marked for one buyer, with the input's type, card,
/// compression and quantization record; unsigned and unlicensed (license it for the buyer, then
/// encrypt and sign).
///
/// # Errors
/// `Usage` for bad arguments or an encrypted input; the library's error when the model cannot
/// carry the mark (nothing is written then).
pub fn watermark(tool: Tool, args: &MarkArgs) -> anyhow::Result<()> {
    let destination = args.destination()?;
    let seller_key = args.seller_key(tool)?;
    let (model, model_type, save) =
        read_model(&args.input).with_context(|| format!("reading {}", args.input.display()))?;
    let names: Vec<String> = model.tensors.iter().map(|t| t.name.clone()).collect();
    let mut mark = args.watermark(&seller_key, &names, "tensor")?;
    let has_blocks = model
        .tensors
        .iter()
        .enumerate()
        .any(|(index, tensor)| mark.selects(index) && tensor.dtype.is_quantized());
    let (marked, report) = if args.redundancy.is_none() && has_blocks {
        sparsest(&model, &mut mark, &seller_key)?
    } else {
        model.watermarked(&mark, &seller_key)?
    };
    let shown = destination.path().display().to_string();
    apr::fs::save_tensors(destination, &marked, model_type, &save)
        .with_context(|| format!("writing {shown}"))?;
    if has_blocks {
        cli_support::print::note(format!(
            "quantized tensors carry the mark at redundancy {} (each marked quant moves by one \
             step; pass --redundancy to choose)",
            mark.redundancy
        ));
    }
    piracy::report_marked(&shown, &args.buyer, &mark, &report, "tensor")
}

/// Redundancies tried for a model with block-quantized tensors, sparsest first.
const BLOCK_REDUNDANCIES: [f32; 7] = [
    1.0 / 65_536.0,
    1.0 / 4_096.0,
    1.0 / 256.0,
    1.0 / 64.0,
    1.0 / 16.0,
    0.25,
    1.0,
];

/// Marks `model` at the sparsest of [`BLOCK_REDUNDANCIES`] whose mark extracts (a block mark
/// moves every quant it uses by a whole quantization step, so density is distortion); if none
/// extracts, the sparsest that `verify` still proves. Leaves the redundancy used in `mark`.
fn sparsest(
    model: &TensorModel,
    mark: &mut watermark::Watermark,
    seller_key: &SellerKey,
) -> anyhow::Result<(TensorModel, watermark::MarkReport)> {
    let mut verify_only = None;
    let mut last_error = None;
    for redundancy in BLOCK_REDUNDANCIES {
        mark.redundancy = redundancy;
        match model.watermarked(mark, seller_key) {
            Ok((marked, report)) if report.traceability == watermark::Traceability::Extractable => {
                return Ok((marked, report));
            }
            Ok(found) => {
                verify_only.get_or_insert((redundancy, found));
            }
            Err(error) => last_error = Some(error),
        }
    }
    if let Some((redundancy, found)) = verify_only {
        mark.redundancy = redundancy;
        return Ok(found);
    }
    Err(last_error.map_or_else(
        || anyhow::anyhow!("the model cannot carry the mark"),
        anyhow::Error::from,
    ))
}
