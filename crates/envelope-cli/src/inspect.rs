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
    /// The key named in the signature block (verified only with `--trusted-keys`; see `checks`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    /// The license block, parsed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub license: Option<LicenseReport>,
    /// Signature and decryption checks done on request (`--trusted-keys`, key options).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
}

/// The license block, for people and scripts.
#[derive(Debug, Serialize)]
pub struct LicenseReport {
    /// The license UUID.
    pub license_id: String,
    /// SHA-256 of the licensee's name, hex.
    pub licensee_hash: String,
    /// Issue time, RFC 3339 UTC.
    pub issued_at: String,
    /// Expiry time, RFC 3339 UTC.
    pub expires_at: String,
    /// Set license flags.
    pub flags: Vec<&'static str>,
    /// Seat limit (with SEATS_ENFORCED).
    pub seat_limit: u16,
    /// Query or inference limit (with QUERY_LIMITED).
    pub query_limit: u32,
    /// Custom terms (UTF-8, lossy).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub custom_terms: String,
}

impl LicenseReport {
    fn of(block: &envelope_license::LicenseBlock) -> Self {
        Self {
            license_id: block.license_id.to_string(),
            licensee_hash: block
                .licensee_hash
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
            issued_at: unix_time(block.issued_at),
            expires_at: unix_time(block.expires_at),
            flags: block.flags.names().collect(),
            seat_limit: block.seat_limit,
            query_limit: block.query_limit,
            custom_terms: String::from_utf8_lossy(&block.custom_terms).into_owned(),
        }
    }
}

/// Unix seconds as RFC 3339 UTC (or the raw number if out of the calendar's range).
pub fn unix_time(seconds: u64) -> String {
    i64::try_from(seconds)
        .ok()
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .map_or_else(|| format!("{seconds} (unix seconds)"), |t| t.to_string())
}

/// Reads the small framed sections after the payload (signature, license) from the file, by the
/// offsets the verified walk found.
fn read_span(path: &Path, span: envelope_core::Span) -> Result<Vec<u8>, envelope_core::Error> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut file = std::fs::File::open(path)?;
    file.seek(SeekFrom::Start(span.offset))?;
    let mut body = vec![0u8; usize::try_from(span.len).unwrap_or(0)];
    file.read_exact(&mut body)?;
    Ok(body)
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
    let mut report = report(path, &layout, index.as_ref());
    if let Some(span) = layout.span(envelope_core::Section::Signature) {
        let block = envelope_sign::SignatureBlock::parse(&read_span(path, span)?)?;
        report.signer = Some(format!("ed25519 {}", block.signer));
    }
    if let Some(span) = layout.span(envelope_core::Section::License) {
        let block = envelope_license::LicenseBlock::parse(&read_span(path, span)?)?;
        report.license = Some(LicenseReport::of(&block));
    }
    Ok(report)
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
        signer: None,
        license: None,
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
    if let Some(signer) = &report.signer {
        println!("  signer       {signer} (not verified: pass --trusted-keys to verify)");
    }
    if let Some(license) = &report.license {
        println!("  license      {}", license.license_id);
        println!("    licensee   sha256 {}", license.licensee_hash);
        println!("    issued     {}", license.issued_at);
        println!("    expires    {}", license.expires_at);
        let flags = if license.flags.is_empty() {
            "-".to_owned()
        } else {
            license.flags.join(" ")
        };
        println!("    flags      {flags}");
        println!(
            "    limits     {} seats, {} queries",
            license.seat_limit, license.query_limit
        );
        if !license.custom_terms.is_empty() {
            println!("    terms      {}", license.custom_terms);
        }
    }
    for check in &report.checks {
        println!("  {check}");
    }
}
