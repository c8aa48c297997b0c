//! `alimentar watermark` and the dataset side of `alimentar piracy` (000 §9.3.5): a suspect is
//! any table `alimentar convert` reads (CSV, JSONL, Parquet, Arrow, `.ald`), since a leaked copy
//! is rarely still the file that was sold.

use std::path::Path;

use ald::interchange::{FileKind, ReadOptions, Source};
use ald::watermark::{Reading, SellerKey, detect::SliceStatistics};
use ald::{ArrowDataset, DatasetType, LoadOptions, SaveOptions, StreamingDataset};
use anyhow::Context as _;
use envelope_core::{Compression, Flags};
use envelope_license::LicenseBlock;

use crate::piracy::{self, Kind, MarkArgs, Subject, Suspect};
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
    default_strength: watermark::DEFAULT_STRENGTH,
    accepts: |path| FileKind::of(path).is_ok(),
    open: |path| {
        let input = read_input(path)?;
        Ok(Suspect {
            subject: Box::new(input.dataset),
            license: input.license,
        })
    },
};

/// A table read for `watermark` or `piracy`, with what an `.ald` said about itself.
struct Input {
    dataset: ArrowDataset,
    /// How to write it back as `.ald`: the input's type, card, compression and layout.
    save: SaveOptions,
    license: Option<LicenseBlock>,
}

/// The whole table in `path`, of any kind `convert` reads; an `.ald` is mapped and verified once,
/// then its header, card and license come with the table. A licensed `.ald` is read whatever its
/// expiry: tracing a leak is not using the data under its license.
fn read_input(path: &Path) -> anyhow::Result<Input> {
    let options = LoadOptions {
        // Time 0 is before any expiry (000 §9.3: a leaked copy is examined, not licensed).
        now_unix: Some(0),
        limits: crate::limits(),
        ..LoadOptions::default()
    };
    if FileKind::of(path)? != FileKind::Ald {
        let read = ReadOptions {
            ald: options,
            ..ReadOptions::default()
        };
        return Ok(Input {
            dataset: Source::open(path, read)?.read_all()?,
            // As `convert` writes it by default: zstd, STREAMING.
            save: SaveOptions::new(DatasetType::Tabular, Compression::ZstdL3)
                .streaming(ald::DEFAULT_CHUNK_ROWS),
            license: None,
        });
    }
    let file = StreamingDataset::open(path, &options)?;
    let opened = file.file();
    if opened.is_encrypted() {
        return Err(piracy::encrypted_input("decrypt it first"));
    }
    let header = opened.envelope().header();
    let mut save = SaveOptions::new(opened.dataset_type(), header.compression());
    save.metadata = opened.metadata().clone();
    if header.flags().contains(Flags::STREAMING) {
        save.chunk_rows = Some(ald::DEFAULT_CHUNK_ROWS);
    }
    Ok(Input {
        dataset: opened.read_dataset(&options)?,
        save,
        license: opened.license().cloned(),
    })
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
    let Input { dataset, save, .. } =
        read_input(&args.input).with_context(|| format!("reading {}", args.input.display()))?;
    let names: Vec<String> = dataset
        .schema()
        .fields()
        .iter()
        .map(|field| field.name().clone())
        .collect();
    let mark = args.watermark(&seller_key, &names, &PIRACY)?;
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
