//! `alimentar info` / `apr inspect`: a report of any envelope file.
//!
//! The file is memory-mapped. A STREAMING or TRUENO_NATIVE file is opened lazily
//! (`Envelope::parse_lazy`): only the header and indexes are read and checked, by the CRC-32C the
//! last index carries, so the report takes the same few milliseconds for 100 MiB and for 10 GiB.
//! `--verify` reads every byte: the whole-file CRC32, and every aligned tensor's CRC-32C. Other
//! files are always verified whole (they have no index to stand in for the trailer).

use std::path::Path;

use anyhow::Context as _;
use cli_support::say;
use cli_support::terminal::Safe;
use envelope_core::{ChunkIndex, Envelope, Format, Layout, RangedEnvelope, Section};
use serde::Serialize;

use crate::security::{KeyOptions, Tool};

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
    /// The CRC32 trailer, and whether it was verified.
    pub crc32: String,
    /// Whether every byte of the file was checked (false for a lazy open of an indexed file).
    pub fully_verified: bool,
    /// Every section with its body offset and length.
    pub sections: Vec<SectionReport>,
    /// The key named in the signature block (verified only with `--trusted-keys`; see `checks`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signer: Option<String>,
    /// The license block, parsed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub license: Option<LicenseReport>,
    /// The aligned tensors or arrays of a TRUENO_NATIVE file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tensors: Option<Vec<TensorReport>>,
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

/// One aligned tensor (or dataset array) of a TRUENO_NATIVE file.
#[derive(Debug, Serialize)]
pub struct TensorReport {
    /// Name.
    pub name: String,
    /// Element type.
    pub dtype: &'static str,
    /// Shape, outermost first.
    pub shape: Vec<u64>,
    /// Strides in elements.
    pub strides: Vec<u64>,
    /// Offset from the payload start (a multiple of 64).
    pub offset: u64,
    /// Bytes.
    pub size_bytes: u64,
    /// Backend hint.
    pub backend: &'static str,
    /// CRC-32C of the tensor's bytes, hex.
    pub crc32c: String,
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

/// Opens the file at `path` as `expected` and describes it: lazily for STREAMING and
/// TRUENO_NATIVE files, in full otherwise (see the module docs).
///
/// # Errors
/// The envelope error of the first failed check, or an I/O error.
pub fn inspect(path: &Path, expected: Format) -> Result<Report, envelope_core::Error> {
    inspect_with(path, expected, false)
}

/// [`inspect`], reading every byte when `verify` is set.
///
/// # Errors
/// As [`inspect`].
pub fn inspect_with(
    path: &Path,
    expected: Format,
    verify: bool,
) -> Result<Report, envelope_core::Error> {
    let map = mapped_file::MappedFile::open(path)?;
    inspect_bytes(&path.display().to_string(), map, expected, verify)
}

/// [`inspect_with`] over the bytes of a file named `name` (a path, or a URL whose object was
/// fetched whole).
///
/// # Errors
/// As [`inspect`].
pub fn inspect_bytes<B: AsRef<[u8]>>(
    name: &str,
    bytes: B,
    expected: Format,
    verify: bool,
) -> Result<Report, envelope_core::Error> {
    let envelope = if verify {
        Envelope::parse(bytes, expected)?
    } else {
        Envelope::parse_lazy(bytes, expected)?
    }
    .with_limits(crate::limits());
    let mut report = report(name, &envelope);
    if let Some(body) = envelope.section(Section::TensorIndex) {
        let index = zerocopy_trueno::TensorIndex::parse(expected, body)?;
        report.tensors = Some(index.entries().iter().map(TensorReport::of).collect());
        if verify {
            let bytes = envelope.into_inner();
            zerocopy_trueno::AlignedTensors::open(
                bytes.as_ref(),
                expected,
                zerocopy_trueno::Integrity::PerTensor,
            )?
            .verify_all()?;
        }
    }
    Ok(report)
}

/// The report of a file opened from its head and tail over object storage (docs/remote.md):
/// what [`inspect`] reports of the same file opened lazily, from the same verified sections.
///
/// # Errors
/// `InvalidFormat` for a tensor index that breaks its rules.
pub fn inspect_ranged<B: AsRef<[u8]>>(
    name: &str,
    envelope: &RangedEnvelope<B>,
) -> Result<Report, envelope_core::Error> {
    let mut report = report_of(
        name,
        envelope.layout(),
        false,
        |section| envelope.section(section),
        envelope.uncompressed_size(),
        envelope.chunk_index().map(ChunkIndex::len),
    );
    if let Some(body) = envelope.section(Section::TensorIndex) {
        let index = zerocopy_trueno::TensorIndex::parse(envelope.header().format(), body)?;
        report.tensors = Some(index.entries().iter().map(TensorReport::of).collect());
    }
    Ok(report)
}

impl TensorReport {
    fn of(entry: &zerocopy_trueno::TensorEntry) -> Self {
        Self {
            name: entry.name.clone(),
            dtype: entry.dtype.name(),
            shape: entry.shape.clone(),
            strides: entry.strides.clone(),
            offset: entry.offset,
            size_bytes: entry.size_bytes,
            backend: entry.backend.name(),
            crc32c: format!("{:08x}", entry.crc32c),
        }
    }
}

fn report<B: AsRef<[u8]>>(name: &str, envelope: &Envelope<B>) -> Report {
    report_of(
        name,
        envelope.layout(),
        envelope.is_fully_verified(),
        |section| envelope.section(section),
        envelope.uncompressed_size(),
        envelope.chunk_index().map(ChunkIndex::len),
    )
}

/// The report of a file from what both openers have: its layout, whether every byte was
/// checked, its sections' bodies, its decoded payload size and chunk count.
fn report_of<'a>(
    name: &str,
    layout: &Layout,
    fully_verified: bool,
    section: impl Fn(Section) -> Option<&'a [u8]>,
    uncompressed_size: u64,
    chunks: Option<usize>,
) -> Report {
    let header = layout.header();
    let payload = layout.span(Section::Payload).unwrap_or_default();
    let signer = section(Section::Signature)
        .and_then(|body| envelope_sign::SignatureBlock::parse(body).ok())
        .map(|block| format!("ed25519 {}", block.signer));
    let license = section(Section::License)
        .and_then(|body| envelope_license::LicenseBlock::parse(body).ok())
        .map(|block| LicenseReport::of(&block));
    Report {
        path: name.to_owned(),
        format: header.format().to_string(),
        version: header.version().to_string(),
        type_id: format!("{:#06x}", header.type_id()),
        flags: header.flags().names(),
        compression: header.compression().name(),
        file_size: layout.file_len(),
        payload_size: payload.len,
        uncompressed_size,
        num_rows: (header.format() == Format::Dataset).then_some(header.num_rows()),
        chunks,
        crc32: if fully_verified {
            format!("{:08x} (verified)", layout.checksum())
        } else {
            format!(
                "{:08x} (not read: header and index verified by their CRC-32C; --verify checks every byte)",
                layout.checksum()
            )
        },
        fully_verified,
        sections: layout
            .sections()
            .into_iter()
            .map(|(section, span, _)| SectionReport {
                name: section.name(),
                offset: span.offset,
                length: span.len,
            })
            .collect(),
        signer,
        license,
        tensors: None,
        checks: Vec::new(),
    }
}

/// Inspects `path` and prints the report as text or, with `--json`, as one JSON object. With key
/// options or `--trusted-keys`, also checks the signature and authenticates the encrypted payload
/// ([`crate::security::deep_checks`]); any failure makes the command fail.
///
/// # Errors
/// As [`inspect`], then the first failed deep check.
pub fn run(path: &Path, tool: Tool, keys: &KeyOptions) -> anyhow::Result<()> {
    run_with(path, tool, false, keys)
}

/// [`run`], reading every byte when `verify` is set.
///
/// # Errors
/// As [`run`].
pub fn run_with(path: &Path, tool: Tool, verify: bool, keys: &KeyOptions) -> anyhow::Result<()> {
    let mut report =
        inspect_with(path, tool.format, verify).with_context(|| path.display().to_string())?;
    report.checks = crate::security::deep_checks(tool, path, keys)?;
    if cli_support::run::mode().json {
        cli_support::print::json(&serde_json::to_value(&report)?)?;
    } else {
        print_text(&report)?;
    }
    Ok(())
}

/// The format's own part of an `info`/`inspect` report (`alimentar`'s dataset, `apr`'s model): its
/// name (the JSON member, and the label of the text line), what it is ("an .ald dataset"), and
/// the part itself or why the file's contents could not be read as one.
pub struct FormatPart<T> {
    /// `"dataset"` or `"model"`.
    pub name: &'static str,
    /// What a readable file holds, for the message when it does not (`"an .apr model"`).
    pub kind: &'static str,
    /// The part, or the reason it could not be read.
    pub read: Result<T, String>,
}

/// `alimentar info` and `apr inspect`: the envelope report of `path`, the deep checks asked for,
/// then the format's own part from `read` (called after the checks), printed by `print`. With
/// `--json`, one object: the envelope report with a member named after the part (or
/// `NAME_error` with the reason). A file whose envelope is valid but whose contents are not the
/// format's (written by another tool) is still reported, with the part replaced by the reason.
///
/// # Errors
/// The first failed envelope or deep check, naming its signal and the file; an error of `read`.
pub fn report_with<T: Serialize>(
    tool: Tool,
    path: &Path,
    verify: bool,
    keys: &KeyOptions,
    read: impl FnOnce() -> anyhow::Result<FormatPart<T>>,
    print: impl FnOnce(&T) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let mut report =
        inspect_with(path, tool.format, verify).with_context(|| path.display().to_string())?;
    report.checks = crate::security::deep_checks(tool, path, keys)?;
    let part = read()?;
    emit(&report, &part, print)
}

/// How [`report_remote_with`] reads the format's part of an object.
pub enum RemotePart<'a> {
    /// The object fetched whole: its bytes, as a local file's.
    Whole(&'a [u8]),
    /// Opened from its head and tail: the verified envelope.
    Ranged(&'a RangedEnvelope<Vec<u8>>),
}

/// [`report_with`] of an object in a store (`s3://`, `gs://`, `az://`, `http(s)://`;
/// docs/remote.md): the same report, checks and part, from the object's head and tail (two
/// requests for most files). A file only its whole-file CRC32 verifies, `--verify`, and the deep
/// checks (`--trusted-keys`, a key) read every byte: the object is then fetched whole (one more
/// request, pinned to the version opened) and reported by the local code over those bytes.
///
/// # Errors
/// As [`report_with`]; the store's (`Io`, `Usage` for a location that is not one).
pub fn report_remote_with<T: Serialize>(
    tool: Tool,
    url: &str,
    verify: bool,
    keys: &KeyOptions,
    read: impl FnOnce(RemotePart<'_>) -> anyhow::Result<FormatPart<T>>,
    print: impl FnOnce(&T) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    // Remote errors name the location themselves.
    let opened =
        remote_file::BlockingEnvelope::open(url, tool.format, remote_file::ReadOptions::default())?;
    let deep = keys.trusted_keys.is_some() || keys.wants_decryption();
    match opened.remote().envelope() {
        Some(envelope) if !verify && !deep => {
            let report = inspect_ranged(url, envelope).with_context(|| url.to_owned())?;
            let part = read(RemotePart::Ranged(envelope))?;
            emit(&report, &part, print)
        }
        _ => {
            let bytes = opened.fetch_whole()?;
            let mut report = inspect_bytes(url, &bytes[..], tool.format, verify)
                .with_context(|| url.to_owned())?;
            report.checks = crate::security::deep_checks_of(tool, url, bytes.to_vec(), keys)?;
            let part = read(RemotePart::Whole(&bytes))?;
            emit(&report, &part, print)
        }
    }
}

/// Prints the report and the format's part (see [`report_with`]).
fn emit<T: Serialize>(
    report: &Report,
    part: &FormatPart<T>,
    print: impl FnOnce(&T) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    if cli_support::run::mode().json {
        let mut value = serde_json::to_value(report)?;
        if let serde_json::Value::Object(map) = &mut value {
            match &part.read {
                Ok(read) => map.insert(part.name.to_owned(), serde_json::to_value(read)?),
                Err(error) => map.insert(format!("{}_error", part.name), error.clone().into()),
            };
        }
        cli_support::print::json(&value)?;
        return Ok(());
    }
    print_text(report)?;
    match &part.read {
        Ok(read) => print(read)?,
        Err(error) => say!(
            "  {:<13}not readable as {}: {}",
            part.name,
            part.kind,
            Safe(error)
        )?,
    }
    Ok(())
}

/// Flag names separated by spaces, or `-` for none.
fn names_or_dash(names: &[&str]) -> String {
    if names.is_empty() {
        "-".to_owned()
    } else {
        names.join(" ")
    }
}

/// Prints `report` for people; every string that came from the file is escaped for the terminal.
///
/// # Errors
/// Writing to stdout.
pub fn print_text(report: &Report) -> std::io::Result<()> {
    say!("{}", Safe(&report.path))?;
    say!("  format       {} {}", report.format, report.version)?;
    say!("  type         {}", report.type_id)?;
    say!("  flags        {}", names_or_dash(&report.flags))?;
    say!("  compression  {}", report.compression)?;
    say!("  size         {} bytes", report.file_size)?;
    say!(
        "  payload      {} bytes stored, {} bytes decoded",
        report.payload_size,
        report.uncompressed_size
    )?;
    if let Some(rows) = report.num_rows {
        say!("  rows         {rows}")?;
    }
    if let Some(chunks) = report.chunks {
        say!("  chunks       {chunks}")?;
    }
    say!("  crc32        {}", report.crc32)?;
    say!("  sections")?;
    for section in &report.sections {
        say!(
            "    {:<14} offset {:>12}  length {:>12}",
            section.name,
            section.offset,
            section.length
        )?;
    }
    if let Some(tensors) = &report.tensors {
        say!(
            "  tensors      {} (64-byte aligned, zero-copy)",
            tensors.len()
        )?;
        for t in tensors {
            say!(
                "    {:<28} {:<5} {:<18} offset {:>12}  {:>12} bytes  {}",
                Safe(&t.name),
                t.dtype,
                format!("{:?}", t.shape),
                t.offset,
                t.size_bytes,
                t.backend
            )?;
        }
    }
    if let Some(signer) = &report.signer {
        let verified = report.checks.iter().any(|c| c.starts_with("signature"));
        let note = if verified {
            ""
        } else {
            " (not verified: pass --trusted-keys to verify)"
        };
        say!("  signer       {signer}{note}")?;
    }
    if let Some(license) = &report.license {
        say!("  license      {}", license.license_id)?;
        say!("    licensee   sha256 {}", license.licensee_hash)?;
        say!("    issued     {}", license.issued_at)?;
        say!("    expires    {}", license.expires_at)?;
        say!("    flags      {}", names_or_dash(&license.flags))?;
        say!(
            "    limits     {} seats, {} queries",
            license.seat_limit,
            license.query_limit
        )?;
        if !license.custom_terms.is_empty() {
            say!("    terms      {}", Safe(&license.custom_terms))?;
        }
    }
    for check in &report.checks {
        say!("  {check}")?;
    }
    Ok(())
}
