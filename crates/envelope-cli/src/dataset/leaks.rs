//! `alimentar watermark` and the dataset side of `alimentar piracy` (000 §9.3.5): a suspect is
//! any table `alimentar convert` reads (CSV, JSONL, Parquet, Arrow, `.ald`), since a leaked copy
//! is rarely still the file that was sold.

use std::path::Path;

use ald::interchange::{FileKind, ReadOptions, Source};
use ald::watermark::{Reading, SellerKey, detect::SliceStatistics};
use ald::{ArrowDataset, LoadOptions, SaveOptions};
use anyhow::{Context as _, bail};
use envelope_core::Flags;

use crate::piracy::{self, Kind, MarkArgs, Subject};
use crate::security::Tool;

impl Subject for ArrowDataset {
    fn reading(&self, seller_key: &SellerKey) -> Reading {
        self.watermark_reading(seller_key)
    }

    fn statistics(&self) -> Vec<(String, SliceStatistics)> {
        self.watermark_statistics()
    }
}

/// How `alimentar piracy` reads suspects.
pub const PIRACY: Kind = Kind {
    tool: Tool::ALIMENTAR,
    noun: "column",
    accepts: |path| FileKind::of(path).is_ok(),
    open: |path| Ok(Box::new(read_table(path)?)),
};

/// The whole table in `path`, of any kind `convert` reads. A licensed `.ald` is read whatever its
/// expiry: tracing a leak is not using the data under its license.
fn read_table(path: &Path) -> anyhow::Result<ArrowDataset> {
    let options = ReadOptions {
        ald: LoadOptions {
            // Time 0 is before any expiry (000 §9.3: a leaked copy is examined, not licensed).
            now_unix: Some(0),
            limits: crate::limits(),
            ..LoadOptions::default()
        },
        ..ReadOptions::default()
    };
    Ok(Source::open(path, options)?.read_all()?)
}

/// `alimentar watermark`: a copy of FILE marked for one buyer. An `.ald` output keeps the input's
/// dataset type, card, compression and STREAMING layout; it has no signature or license (license
/// it for the buyer, then encrypt and sign). Other outputs are written as `convert` writes them.
///
/// # Errors
/// `Usage` for bad arguments or an encrypted input; the library's error when the table cannot
/// carry the mark (nothing is written then).
pub fn watermark(tool: Tool, args: &MarkArgs) -> anyhow::Result<()> {
    let destination = args.destination()?;
    let output_kind = FileKind::of(&args.output)?;
    let seller_key = args.seller_key(tool)?;
    let (dataset, save) = if FileKind::of(&args.input)? == FileKind::Ald {
        let envelope = crate::security::load(tool, &args.input)?;
        let flags = envelope.header().flags();
        if flags.contains(Flags::ENCRYPTED) {
            bail!(
                "Usage: {} is encrypted: mark the plaintext, then license, encrypt and sign",
                args.input.display()
            );
        }
        let loaded = ald::load_from_bytes_with(
            envelope.as_bytes(),
            &LoadOptions {
                now_unix: Some(0),
                limits: crate::limits(),
                ..LoadOptions::default()
            },
        )?;
        let mut save = SaveOptions::new(loaded.dataset_type, envelope.header().compression());
        save.metadata = loaded.metadata;
        if flags.contains(Flags::STREAMING) {
            save.chunk_rows = Some(ald::DEFAULT_CHUNK_ROWS);
        }
        (loaded.dataset, save)
    } else {
        let dataset =
            read_table(&args.input).with_context(|| format!("reading {}", args.input.display()))?;
        let save = SaveOptions::new(
            ald::DatasetType::Tabular,
            envelope_core::Compression::ZstdL3,
        );
        (dataset, save)
    };
    let names: Vec<String> = dataset
        .schema()
        .fields()
        .iter()
        .map(|field| field.name().clone())
        .collect();
    let mark = args.watermark(&seller_key, &names, "column")?;
    let (marked, report) = dataset.watermarked(&mark, &seller_key)?;
    let shown = destination.path().display().to_string();
    if output_kind == FileKind::Ald {
        ald::fs::save(destination, &marked, &save).with_context(|| format!("writing {shown}"))?;
    } else {
        ald::interchange::write_file(destination, &marked)
            .with_context(|| format!("writing {shown}"))?;
    }
    piracy::report_marked(&shown, &args.buyer, &mark, &report, "column")
}
