//! `apr watermark` and the model side of `apr piracy` (003 §8.3): a suspect is an `.apr` model
//! or a SafeTensors file (what an `.apr` is most often exported to and leaked as).

use std::path::Path;

use anyhow::Context as _;
use apr::{ModelType, SaveOptions, TensorModel};
use envelope_core::Flags;
use envelope_license::LicenseBlock;
use watermark::detect::SliceStatistics;
use watermark::{Reading, SellerKey};

use crate::piracy::{self, Kind, MarkArgs, Subject, Suspect};
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
    default_strength: MODEL_STRENGTH,
    accepts: |path| has_extension(path, "apr") || has_extension(path, "safetensors"),
    open: |path| {
        let input = read_model(path)?;
        Ok(Suspect {
            subject: Box::new(input.model),
            license: input.license,
        })
    },
};

/// The default strength of `apr watermark`: model outputs move by under 1e-4 (docs/watermark.md
/// §13), the distortion limit, where the engine's default 1e-3 moves them by about 5e-4.
pub const MODEL_STRENGTH: f32 = 1e-4;

/// A model read for `watermark` or `piracy`, with what an `.apr` said about itself.
struct Input {
    model: TensorModel,
    model_type: ModelType,
    save: SaveOptions,
    license: Option<LicenseBlock>,
}

/// The tensors of `path` (`.apr`, or SafeTensors by extension), with the `.apr`'s type and save
/// options. A licensed `.apr` is read whatever its expiry: tracing a leak is not using the model
/// under its license.
fn read_model(path: &Path) -> anyhow::Result<Input> {
    if has_extension(path, "safetensors") {
        return Ok(Input {
            model: apr::fs::import_safetensors(path)?,
            model_type: ModelType::Custom,
            save: SaveOptions::default(),
            license: None,
        });
    }
    let options = apr::LoadOptions {
        // Time 0 is before any expiry (a leaked copy is examined, not licensed).
        now_unix: Some(0),
        limits: crate::limits(),
        ..apr::LoadOptions::default()
    };
    let file = apr::fs::open_verified(path, &options)?;
    if file.envelope().header().flags().contains(Flags::ENCRYPTED) {
        return Err(piracy::encrypted_input(
            "decrypt the model first with `apr decrypt`",
        ));
    }
    let model_type = ModelType::from_id(file.model_type_id()).unwrap_or(ModelType::Custom);
    let save = SaveOptions {
        card: file.metadata().model_card.clone(),
        compression: file.envelope().header().compression(),
    };
    Ok(Input {
        model: file.tensors()?,
        model_type,
        save,
        license: envelope_license::read_license(file.envelope())?,
    })
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
    let Input {
        model,
        model_type,
        save,
        ..
    } = read_model(&args.input).with_context(|| format!("reading {}", args.input.display()))?;
    let names: Vec<String> = model.tensors.iter().map(|t| t.name.clone()).collect();
    let mut mark = args.watermark(&seller_key, &names, &PIRACY)?;
    let blocks = model.marks_blocks(&mark);
    let (marked, report) = if args.redundancy.is_none() && blocks {
        let (marked, report, redundancy) = model.watermarked_sparsest(&mark, &seller_key)?;
        mark.redundancy = redundancy;
        (marked, report)
    } else {
        model.watermarked(&mark, &seller_key)?
    };
    let shown = destination.path().display().to_string();
    apr::fs::save_tensors(destination, &marked, model_type, &save)
        .with_context(|| format!("writing {shown}"))?;
    if blocks {
        cli_support::print::note(format!(
            "quantized tensors carry the mark at redundancy {} (each marked quant moves by one \
             step; pass --redundancy to choose)",
            mark.redundancy
        ));
    }
    piracy::report_marked(&shown, &args.buyer, &mark, &report, "tensor")
}
