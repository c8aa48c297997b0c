//! `alimentar info` / `apr inspect`: a report of any envelope file, built from a streaming walk
//! (`envelope_core::fs::inspect`) so that it costs the same memory for 1 KiB and for 10 GiB.

use std::path::Path;

use envelope_core::{ChunkIndex, Format, Layout};

use crate::security::{KeyOptions, Tool};
use serde::Serialize;

/// What `info` / `inspect` print.
#[derive(Debug, Serialize)]
pub struct Report {
    /// The file's path as given.
    pub path: String,
    /// `.ald` or `.apr`.
    pub format: String,
    /// `major.minor`.
    pub version: String,
    /// `dataset_type` / `model_type` as hex.
    pub type_id: String,
    /// Names of the set flags.
    pub flags: Vec<&'static str>,
    /// Compression name.
    pub compression: &'static str,
    /// Total file size.
    pub file_size: u64,
    /// Stored payload bytes.
    pub payload_size: u64,
    /// Decoded payload bytes.
    pub uncompressed_size: u64,
    /// Rows (datasets only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub num_rows: Option<u64>,
    /// Number of chunks (STREAMING files only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunks: Option<usize>,
    /// The CRC32 trailer, verified.
    pub crc32: String,
    /// Every section with its body offset and length.
    pub sections: Vec<SectionReport>,
    /// Signature and decryption checks done on request (`--trusted-keys`, key options).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
}

/// One section of the report.
#[derive(Debug, Serialize)]
pub struct SectionReport {
    /// Section name.
    pub name: &'static str,
    /// Offset of the body.
    pub offset: u64,
    /// Length of the body.
    pub length: u64,
}

/// Walks and verifies the file at `path` (checksum included) and describes it.
///
/// # Errors
/// The envelope error of the first failed check, or an I/O error.
pub fn inspect(path: &Path, expected: Format) -> Result<Report, envelope_core::Error> {
    let (layout, index) = envelope_core::fs::inspect(path)?;
    if layout.header().format() != expected {
        return Err(envelope_core::FormatError::WrongFormat {
            expected,
            found: layout.header().format(),
        }
        .into());
    }
    Ok(report(path, &layout, index.as_ref()))
}

fn report(path: &Path, layout: &Layout, index: Option<&ChunkIndex>) -> Report {
    let header = layout.header();
    let payload = layout
        .span(envelope_core::Section::Payload)
        .unwrap_or_default();
    let uncompressed = index
        .map(ChunkIndex::uncompressed_size)
        .or_else(|| header.uncompressed_size().exact())
        .unwrap_or_default();
    Report {
        path: path.display().to_string(),
        format: header.format().to_string(),
        version: header.version().to_string(),
        type_id: format!("{:#06x}", header.type_id()),
        flags: header.flags().names(),
        compression: header.compression().name(),
        file_size: layout.file_len(),
        payload_size: payload.len,
        uncompressed_size: uncompressed,
        num_rows: (header.format() == Format::Dataset).then_some(header.num_rows()),
        chunks: index.map(ChunkIndex::len),
        crc32: format!("{:08x} (verified)", layout.checksum()),
        sections: layout
            .sections()
            .into_iter()
            .map(|(section, span, _)| SectionReport {
                name: section.name(),
                offset: span.offset,
                length: span.len,
            })
            .collect(),
        checks: Vec::new(),
    }
}

/// Inspects `path` and prints the report as text or, with `json`, as one JSON object. With key
/// options or `--trusted-keys`, also checks the signature and authenticates the encrypted payload
/// ([`crate::security::deep_checks`]); any failure makes the command fail.
///
/// # Errors
/// As [`inspect`], then the first failed deep check.
pub fn run(path: &Path, tool: Tool, json: bool, keys: &KeyOptions) -> anyhow::Result<()> {
    let mut report = inspect(path, tool.format)?;
    report.checks = crate::security::deep_checks(tool, path, keys)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_text(&report);
    }
    Ok(())
}

/// Prints `report` for people.
pub fn print_text(report: &Report) {
    println!("{}", report.path);
    println!("  format       {} {}", report.format, report.version);
    println!("  type         {}", report.type_id);
    let flags = if report.flags.is_empty() {
        "-".to_owned()
    } else {
        report.flags.join(" ")
    };
    println!("  flags        {flags}");
    println!("  compression  {}", report.compression);
    println!("  size         {} bytes", report.file_size);
    println!(
        "  payload      {} bytes stored, {} bytes decoded",
        report.payload_size, report.uncompressed_size
    );
    if let Some(rows) = report.num_rows {
        println!("  rows         {rows}");
    }
    if let Some(chunks) = report.chunks {
        println!("  chunks       {chunks}");
    }
    println!("  crc32        {}", report.crc32);
    println!("  sections");
    for section in &report.sections {
        println!(
            "    {:<14} offset {:>12}  length {:>12}",
            section.name, section.offset, section.length
        );
    }
    for check in &report.checks {
        println!("  {check}");
    }
}
