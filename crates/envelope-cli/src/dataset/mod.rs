//! `alimentar` dataset commands: `convert`, `head`, `schema`, and the dataset part of `info`
//! ([`print_info`]). Argument parsing and printing only; the work is in the `ald` crate.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use ald::arrow_schema::{Schema, SchemaRef};
use ald::interchange::{FileKind, ReadOptions, Source};
use ald::{DatasetInfo, DatasetType, LoadOptions, Metadata, SaveOptions, StreamingDataset};
use anyhow::Context as _;
use clap::{Args, ValueEnum};
use cli_support::output::{self, Content, Force};
use cli_support::say;
use cli_support::terminal::Safe;
use envelope_core::Compression;
use envelope_crypto::{DecryptionKey, Password, RecipientSecretKey};
use envelope_sign::{Policy, TrustedKeys};
use serde_json::json;

use crate::security::{KeyOptions, Tool};

mod csv_options;
pub mod leaks;
pub use csv_options::CsvInputArgs;

/// Payload compression, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompressionArg {
    /// Stored as is.
    None,
    /// zstd level 3: the standard for distribution.
    ZstdL3,
    /// zstd level 19: archival, smallest.
    ZstdL19,
    /// LZ4 frames: fastest.
    Lz4,
}

impl From<CompressionArg> for Compression {
    fn from(arg: CompressionArg) -> Self {
        match arg {
            CompressionArg::None => Self::None,
            CompressionArg::ZstdL3 => Self::ZstdL3,
            CompressionArg::ZstdL19 => Self::ZstdL19,
            CompressionArg::Lz4 => Self::Lz4,
        }
    }
}

/// `alimentar convert IN -o OUT`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The input: .csv, .jsonl, .parquet, .arrow (Arrow IPC file) or .ald.
    pub input: PathBuf,
    /// The output (`-` for stdout, then name its kind with --to); its kind comes from its
    /// extension. Written atomically; an existing file is refused without --force.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// The output as a second argument (`convert IN OUT`, kept for existing scripts).
    #[arg(value_name = "OUT", hide = true, conflicts_with = "output")]
    pub output_positional: Option<PathBuf>,
    /// The output's kind when its name does not say it (`-o -`): csv, jsonl, parquet, arrow, ald.
    #[arg(long, value_name = "KIND")]
    pub to: Option<String>,
    /// Replace an existing output (`--force`).
    #[command(flatten)]
    pub force: Force,
    /// Compression of an .ald output's payload (each chunk separately with --streaming)
    /// [default: zstd-l3; none with --trueno-native].
    #[arg(long, value_enum)]
    pub compression: Option<CompressionArg>,
    /// Dataset type of an .ald output: a 000 §3.1 name (tabular, time-series, text-corpus, ...)
    /// or a numeric id.
    #[arg(long = "type", value_name = "TYPE", default_value = "tabular")]
    pub dataset_type: String,
    /// Write a STREAMING .ald: row groups that are compressed, stored and read one at a time.
    /// The default for every .ald output but --trueno-native (--whole to write one payload
    /// instead): converting holds one row group in memory, whatever the input size; reading
    /// opens the file lazily, checks each row group just before decoding it and loads the row
    /// groups on every core. With --trueno-native: the large-file form, one chunk holding every
    /// row, whose chunk index records sizes past 4 GiB (written without the flag too when the
    /// arrays need it).
    #[arg(long)]
    pub streaming: bool,
    /// Write an .ald output as one payload (not STREAMING): one compressed stream, which loads
    /// on one core. The whole table is then held in memory while converting.
    #[arg(long, conflicts_with = "streaming")]
    pub whole: bool,
    /// Write the zero-copy deployment form of an .ald output (TRUENO_NATIVE, 000 §10): each
    /// column stored uncompressed as one 64-byte-aligned array listed in a tensor index, so that
    /// `zerocopy_trueno::MappedDataset` maps the file and borrows columns in place, and `info`
    /// answers from the header and the index alone whatever the file's size. Decompresses once;
    /// every .ald reader still loads the file. Columns must be Float32, Float64, Int32, Int64 or
    /// UInt8 without nulls (a nullable column holding no null is accepted); the output is not
    /// compressed, and STREAMING (as one chunk of every row) only with --streaming or when the
    /// arrays exceed 4 GiB. Reads any input convert reads, .ald included.
    #[arg(long)]
    pub trueno_native: bool,
    /// The SIMD backend hint stored with each array with --trueno-native (auto, scalar, sse2,
    /// avx, avx2, avx512, neon, wasm-simd, gpu).
    #[arg(
        long,
        value_name = "HINT",
        default_value = "auto",
        requires = "trueno_native"
    )]
    pub backend: String,
    /// Rows per row group of a STREAMING .ald output [default: 65536]. Not with --whole, nor with
    /// --trueno-native, whose one chunk holds every row.
    #[arg(long, value_name = "N", conflicts_with = "whole")]
    pub chunk_rows: Option<usize>,
    /// A JSON dataset card for an .ald output: either a DatasetCard object (name, version,
    /// license, tags, description, sources, intended_uses, limitations, citation) or the whole
    /// metadata object (card, columns, compliance, query_pub_key).
    #[arg(long, value_name = "JSON")]
    pub card: Option<PathBuf>,
    /// The columns of a CSV or JSONL input instead of inferring them, as
    /// `name: Type[ not null], ...` with Arrow type names (`id: Int64 not null, name: Utf8`).
    #[arg(long, value_name = "COLUMNS")]
    pub schema: Option<String>,
    /// The schema the input must have, how to read a CSV input, how to open an .ald input.
    #[command(flatten)]
    pub read: ReadArgs,
}

/// `alimentar head FILE`.
#[derive(Debug, Args)]
pub struct HeadArgs {
    /// The .ald file (or any input `convert` reads), or the URL of an .ald object: s3://, gs://,
    /// az://, http(s):// (docs/remote.md; credentials and endpoint from the environment).
    pub file: PathBuf,
    /// How many rows.
    #[arg(long, short = 'n', default_value_t = 10)]
    pub rows: u64,
    /// The schema the file must have, how to read a CSV input, how to open an .ald file.
    #[command(flatten)]
    pub read: ReadArgs,
}

/// How `convert` and `head` read their input (one definition, so both take the same options).
#[derive(Debug, Args)]
pub struct ReadArgs {
    /// Refuse the input (SchemaMismatch) unless its columns are exactly these, written as
    /// `name: Type[ not null], ...` (as for --schema). For .ald inputs the check happens before
    /// any payload byte is read.
    #[arg(long, value_name = "COLUMNS")]
    pub expect_schema: Option<String>,
    /// How to read a CSV input, and how many rows infer its types.
    #[command(flatten)]
    pub csv: CsvInputArgs,
    /// How to open an encrypted or signed .ald input.
    #[command(flatten)]
    pub keys: KeyOptions,
}

/// `alimentar schema FILE` (with --json: `[{"name", "type", "nullable"}]`).
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// The .ald file (or any input `convert` reads), or the URL of an .ald object: s3://, gs://,
    /// az://, http(s):// (docs/remote.md).
    pub file: PathBuf,
    /// How to read a CSV input.
    #[command(flatten)]
    pub csv: CsvInputArgs,
}

/// The current time for license checks.
fn now_unix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// The key material `keys` names, read once.
enum Secret {
    Password(Password),
    Recipient(RecipientSecretKey),
}

struct Access {
    trusted: Option<TrustedKeys>,
    secret: Option<Secret>,
}

impl Access {
    fn read(keys: &KeyOptions, tool: Tool) -> anyhow::Result<Self> {
        let trusted = match &keys.trusted_keys {
            Some(dir) => Some(cli_support::keys::trusted_keys(dir)?),
            None => None,
        };
        let secret = if let Some(key) = &keys.key {
            let password = tool.password(&keys.password_source, "key file password", false)?;
            let identity = cli_support::keys::read_identity(key, &password)?;
            Some(Secret::Recipient(identity.recipient_secret_key()))
        } else if keys.password || keys.password_source.password_file.is_some() {
            Some(Secret::Password(tool.password(
                &keys.password_source,
                "password",
                false,
            )?))
        } else {
            None
        };
        Ok(Self { trusted, secret })
    }

    fn options<'a>(&'a self, expected_schema: Option<&'a Schema>) -> LoadOptions<'a> {
        LoadOptions {
            expected_schema,
            now_unix: Some(now_unix()),
            signature: self
                .trusted
                .as_ref()
                .map(|trusted| Policy::RequireSignature { trusted }),
            key: self.secret.as_ref().map(|secret| match secret {
                Secret::Password(password) => DecryptionKey::Password(password),
                Secret::Recipient(key) => DecryptionKey::Recipient(key),
            }),
            limits: crate::limits(),
        }
    }
}

impl ConvertArgs {
    /// The output path, from `-o` or the legacy second argument.
    fn output_path(&self) -> anyhow::Result<&Path> {
        self.output
            .as_deref()
            .or(self.output_positional.as_deref())
            .ok_or_else(|| anyhow::anyhow!("Usage: name the output with -o OUT"))
    }

    /// The output's kind: `--to`, else its extension.
    fn output_kind(&self) -> anyhow::Result<FileKind> {
        match &self.to {
            Some(name) => Ok(FileKind::of(Path::new(&format!("output.{name}")))?),
            None => {
                let path = self.output_path()?;
                if path.as_os_str() == "-" {
                    anyhow::bail!("Usage: -o - writes to stdout: name the kind with --to KIND");
                }
                Ok(FileKind::of(path)?)
            }
        }
    }
}

/// Runs `convert`.
///
/// # Errors
/// The first failure, naming its Andon signal.
pub fn convert(tool: Tool, args: &ConvertArgs) -> anyhow::Result<()> {
    let output_path = args.output_path()?;
    let kind = args.output_kind()?;
    if args.trueno_native {
        check_trueno_options(args, kind)?;
    }
    let content = if matches!(kind, FileKind::Csv | FileKind::Jsonl) {
        Content::Text
    } else {
        Content::Binary
    };
    // Checked before the input is read: an existing output without --force is refused now, not
    // after a long conversion.
    let destination =
        output::destination(output_path, args.force, output::Access::Shared, content)?;
    let access = Access::read(&args.read.keys, tool)?;
    let expected = expected_schema(args.read.expect_schema.as_deref())?;
    let schema = args
        .schema
        .as_deref()
        .map(ald::interchange::parse_schema_text)
        .transpose()?;
    let (bar, input_progress) = csv_options::input_bar(
        &args.input,
        std::fs::metadata(&args.input).map_or(0, |meta| meta.len()),
    );
    let mut options = ReadOptions {
        schema,
        progress: Some(input_progress),
        ald: access.options(expected.as_deref()),
        ..ReadOptions::default()
    };
    args.read.csv.apply(&args.input, &mut options)?;
    let source = Source::open(&args.input, options)
        .with_context(|| format!("reading {}", args.input.display()))?;
    if let Some(expected) = &expected {
        ald::check_schema(expected, source.schema())?;
    }
    if args.trueno_native {
        return convert_trueno(args, &source, destination, &bar);
    }
    let mut save = SaveOptions::new(
        args.dataset_type.parse::<DatasetType>()?,
        args.compression.unwrap_or(CompressionArg::ZstdL3).into(),
    );
    // STREAMING whatever the size (issue 18): a whole payload is one compressed stream, which
    // only one core can decode, and which is slower to load than Parquet on large tables; row
    // groups load on every core and are each checked while still in cache (BENCHMARKS.md, ald).
    if !args.whole {
        save.chunk_rows = Some(args.chunk_rows.unwrap_or(ald::DEFAULT_CHUNK_ROWS));
    }
    if let Some(card) = &args.card {
        save.metadata = read_card(card)?;
    }
    let shown = destination.path().display().to_string();
    let rows = ald::interchange::convert_as(&source, destination, kind, &save, &mut |rows| {
        bar.set_message(format!("{rows} rows"));
    })
    .with_context(|| format!("converting {} to {shown}", args.input.display()))?;
    bar.finish_and_clear();
    crate::security::report_written(
        &format!("wrote {rows} rows to {shown} ({})", kind.name()),
        json!({ "ok": true, "output": shown, "kind": kind.name(), "rows": rows }),
    )
}

/// `Usage` unless the options of `convert --trueno-native` fit together (checked before the
/// input is read).
fn check_trueno_options(args: &ConvertArgs, kind: FileKind) -> anyhow::Result<()> {
    if kind != FileKind::Ald {
        anyhow::bail!("Usage: --trueno-native writes .ald files; name the output FILE.ald");
    }
    if args.compression.is_some_and(|c| c != CompressionArg::None) {
        anyhow::bail!(
            "Usage: --trueno-native files are stored uncompressed (their arrays are read in place); drop --compression or pass --compression none"
        );
    }
    if args.chunk_rows.is_some() {
        anyhow::bail!(
            "Usage: a --trueno-native STREAMING dataset has one chunk holding every row (each column is one aligned array); drop --chunk-rows"
        );
    }
    crate::backend_hint(&args.backend)?;
    Ok(())
}

/// `convert --trueno-native`: the whole input in memory, written as a TRUENO_NATIVE `.ald` file
/// (its arrays are laid out after the index, so the table is needed whole).
fn convert_trueno(
    args: &ConvertArgs,
    source: &Source<'_>,
    destination: envelope_core::fs::Destination,
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<()> {
    let dataset_type = args.dataset_type.parse::<DatasetType>()?;
    let metadata = match &args.card {
        Some(card) => read_card(card)?,
        None => Metadata::default(),
    };
    let backend = crate::backend_hint(&args.backend)?;
    let shown = destination.path().display().to_string();
    let dataset = source
        .read_all()
        .with_context(|| format!("reading {}", args.input.display()))?;
    bar.set_message(format!("{} rows", dataset.num_rows()));
    let options = ald::aligned::TruenoOptions {
        backend,
        streaming: args.streaming,
    };
    let parts = ald::aligned::trueno_parts_with(&dataset, dataset_type, &metadata, &options)?;
    envelope_core::fs::save(destination, &parts).with_context(|| format!("writing {shown}"))?;
    bar.finish_and_clear();
    let streaming = matches!(parts.payload, envelope_core::Payload::Chunked { .. });
    let note = if streaming {
        ", STREAMING as one chunk"
    } else {
        ""
    };
    crate::security::report_written(
        &format!(
            "wrote {} rows to {shown} (.ald, TRUENO_NATIVE{note}: {} columns as 64-byte-aligned arrays, zero-copy)",
            dataset.num_rows(),
            dataset.schema().fields().len()
        ),
        json!({
            "ok": true,
            "output": shown,
            "kind": ".ald",
            "rows": dataset.num_rows(),
            "trueno_native": true,
            "streaming": streaming,
        }),
    )
}

fn expected_schema(text: Option<&str>) -> anyhow::Result<Option<SchemaRef>> {
    Ok(text.map(ald::interchange::parse_schema_text).transpose()?)
}

fn read_card(path: &Path) -> anyhow::Result<Metadata> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("Io: reading the card {}", path.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("Usage: the card {} is not JSON", path.display()))?;
    let whole = ["card", "columns", "compliance", "query_pub_key"]
        .iter()
        .any(|key| value.get(key).is_some());
    let metadata = if whole {
        serde_json::from_value(value)
    } else {
        serde_json::from_value(value).map(|card| Metadata {
            card: Some(card),
            ..Metadata::default()
        })
    }
    .with_context(|| format!("Usage: the card {} has the wrong shape", path.display()))?;
    Ok(metadata)
}

/// Runs `head`: only the chunks holding the first rows are decoded.
///
/// # Errors
/// The first failure, naming its Andon signal.
pub fn head(tool: Tool, args: &HeadArgs) -> anyhow::Result<()> {
    let expected = expected_schema(args.read.expect_schema.as_deref())?;
    let file = &args.file;
    let batch = if let Some(url) = remote_url(file) {
        // An object in a store (docs/remote.md): the same checks in the same order as below,
        // over the file's head and tail and the chunks holding the rows.
        let access = Access::read(&args.read.keys, tool)?;
        let options = access.options(expected.as_deref());
        let dataset = open_remote(url, &options)?;
        let count = args.rows.min(dataset.dataset().num_rows());
        // Remote errors name the location themselves.
        dataset.rows(0, count)?
    } else if FileKind::of(file)? == FileKind::Ald {
        let access = Access::read(&args.read.keys, tool)?;
        let options = access.options(expected.as_deref());
        let dataset =
            StreamingDataset::open(file, &options).with_context(|| file.display().to_string())?;
        let count = args.rows.min(dataset.num_rows());
        match options.key {
            Some(key) if dataset.file().is_encrypted() => {
                dataset.with_key(key)?.get_rows(0, count)?
            }
            _ => dataset.get_rows(0, count)?,
        }
    } else {
        let mut options = ReadOptions::default();
        args.read.csv.apply(file, &mut options)?;
        let source = Source::open(file, options).with_context(|| file.display().to_string())?;
        if let Some(expected) = &expected {
            ald::check_schema(expected, source.schema())?;
        }
        source.head(args.rows)?
    };
    let mut out = std::io::stdout().lock();
    if cli_support::run::mode().json {
        ald::interchange::write_json_rows(&batch, &mut out)?;
        writeln!(out)?;
    } else {
        ald::interchange::write_text_table(&batch, &mut out, &cli_support::terminal::escape)?;
    }
    Ok(())
}

/// Runs `schema`: reads the schema section only (for .ald files; other inputs as `convert`).
///
/// # Errors
/// The first failure, naming its Andon signal.
pub fn schema(args: &SchemaArgs) -> anyhow::Result<()> {
    let remote;
    let source;
    let schema = if let Some(url) = remote_url(&args.file) {
        // Header, metadata, schema and chunk index only: two requests for most files.
        remote = open_remote(url, &LoadOptions::default())?;
        remote.schema()
    } else {
        let mut options = ReadOptions::default();
        args.csv.apply(&args.file, &mut options)?;
        source =
            Source::open(&args.file, options).with_context(|| args.file.display().to_string())?;
        source.schema()
    };
    if cli_support::run::mode().json {
        cli_support::print::json(&serde_json::to_value(ald::FieldSummary::of_schema(schema))?)?;
    } else {
        for field in schema.fields() {
            let null = if field.is_nullable() { "" } else { " not null" };
            say!("{}: {}{null}", Safe(field.name()), field.data_type())?;
        }
    }
    Ok(())
}

/// The URL `file` names, if it names an object in a store (`s3://`, `gs://`, `az://`,
/// `http(s)://`) rather than a local file (docs/remote.md). `file://` URLs and plain paths are
/// local files, read through a memory map as always.
fn remote_url(file: &Path) -> Option<&str> {
    file.to_str()
        .filter(|text| remote_file::Location::is_remote(text))
}

/// Opens the `.ald` object at `url` with range requests (credentials and endpoint from the
/// environment, as object_store reads them: `AWS_ENDPOINT_URL`, `AWS_ALLOW_HTTP`, ...).
fn open_remote(
    url: &str,
    options: &LoadOptions<'_>,
) -> anyhow::Result<remote_file::BlockingDataset> {
    // Remote errors name the location themselves.
    Ok(remote_file::BlockingDataset::open(
        url,
        options,
        remote_file::ReadOptions::default(),
    )?)
}

/// What `info` adds for datasets: the dataset type, card, columns, license, claimed signer and
/// chunk count (see [`ald::fs::inspect`]), as text lines or as the `dataset` JSON object.
///
/// # Errors
/// As [`ald::fs::inspect`].
pub fn dataset_info(path: &Path) -> anyhow::Result<DatasetInfo> {
    // The same lazy opening as the envelope report: header, metadata and schema (and the chunk
    // index) are checked by their CRC-32C; nothing after them is read.
    let map = mapped_file::MappedFile::open(path)?;
    let envelope = envelope_core::Envelope::parse_lazy(&map[..], envelope_core::Format::Dataset)?
        .with_limits(crate::limits());
    Ok(DatasetInfo::of(&envelope)?)
}

/// `alimentar info`: the shared envelope report (header, flags, sections, signer, license, aligned
/// arrays), the deep checks asked for, then the dataset's card, schema and chunks. With `--json`,
/// one object: the envelope report with a `dataset` member ([`DatasetInfo`]).
///
/// A file whose envelope is valid but whose metadata or schema is not an `.ald` dataset's
/// (written by another tool) is still reported, with the dataset part replaced by the reason
/// (`dataset_error` in JSON), as `apr inspect` does for models.
///
/// # Errors
/// The first failed envelope or deep check, naming its signal and the file.
pub fn info(path: &Path, verify: bool, keys: &KeyOptions) -> anyhow::Result<()> {
    if let Some(url) = remote_url(path) {
        // An object in a store (docs/remote.md): the same report and dataset part from its head
        // and tail (or from its bytes, when it is read whole).
        let read = |part: crate::inspect::RemotePart<'_>| {
            let read = match part {
                crate::inspect::RemotePart::Whole(bytes) => {
                    envelope_core::Envelope::parse_lazy(bytes, envelope_core::Format::Dataset)
                        .map_err(ald::Error::from)
                        .and_then(|envelope| {
                            DatasetInfo::of(&envelope.with_limits(crate::limits()))
                        })
                }
                crate::inspect::RemotePart::Ranged(envelope) => {
                    DatasetInfo::of_ranged(&envelope.clone().with_limits(crate::limits()))
                }
            };
            Ok(crate::inspect::FormatPart {
                name: "dataset",
                kind: "an .ald dataset",
                read: read.map_err(|error| format!("{:#}", anyhow::Error::from(error))),
            })
        };
        return crate::inspect::report_remote_with(
            Tool::ALIMENTAR,
            url,
            verify,
            keys,
            read,
            print_info,
        );
    }
    let read = || {
        Ok(crate::inspect::FormatPart {
            name: "dataset",
            kind: "an .ald dataset",
            read: dataset_info(path).map_err(|error| format!("{error:#}")),
        })
    };
    crate::inspect::report_with(Tool::ALIMENTAR, path, verify, keys, read, print_info)
}

/// Prints `info` as text (JSON callers serialize [`DatasetInfo`] themselves). Every string from
/// the file is escaped for the terminal.
///
/// # Errors
/// Writing to stdout.
pub fn print_info(info: &DatasetInfo) -> std::io::Result<()> {
    say!(
        "dataset type  {} ({})",
        Safe(info.dataset_type),
        info.dataset_type_id
    )?;
    say!("rows          {}", info.num_rows)?;
    say!("chunks        {}", info.num_chunks)?;
    if let Some(card) = &info.metadata.card {
        say!("name          {} {}", Safe(&card.name), Safe(&card.version))?;
        if let Some(license) = &card.license {
            say!("license       {}", Safe(license))?;
        }
        if !card.description.is_empty() {
            say!(
                "description   {}",
                Safe(card.description.lines().next().unwrap_or_default())
            )?;
        }
    }
    say!("columns")?;
    for column in &info.columns {
        say!("  {}", Safe(&column.to_string()))?;
    }
    if let Some(license) = &info.license {
        say!(
            "license block {} licensee {} expires {} flags {}",
            license.license_id,
            license.licensee_hash,
            license.expires_at,
            license.flags.join(",")
        )?;
    }
    if let Some(signer) = &info.claimed_signer {
        say!("signed by     {signer} (claimed; verify with --trusted-keys)")?;
    }
    Ok(())
}
