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
use envelope_core::Compression;
use envelope_crypto::{DecryptionKey, Password, RecipientSecretKey};
use envelope_sign::{Policy, TrustedKeys};

use crate::security::{KeyOptions, Tool};

mod csv_options;
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

/// `alimentar convert IN OUT`.
#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The input: .csv, .jsonl, .parquet, .arrow (Arrow IPC file) or .ald.
    pub input: PathBuf,
    /// The output, same kinds; replaced atomically.
    pub output: PathBuf,
    /// Compression of an .ald output's payload (each chunk separately with --streaming)
    /// [default: zstd-l3; none with --trueno-native].
    #[arg(long, value_enum)]
    pub compression: Option<CompressionArg>,
    /// Dataset type of an .ald output: a 000 §3.1 name (tabular, time-series, text-corpus, ...)
    /// or a numeric id.
    #[arg(long = "type", value_name = "TYPE", default_value = "tabular")]
    pub dataset_type: String,
    /// Write a STREAMING .ald: row groups that are compressed, stored and read one at a time.
    /// Converting into a STREAMING file holds one row group in memory, whatever the input size;
    /// reading opens it lazily and loads its row groups on every core. The default for inputs
    /// larger than 64 MiB (--whole to write one payload instead). With --trueno-native: the
    /// large-file form, one chunk holding every row, whose chunk index records sizes past 4 GiB
    /// (written without the flag too when the arrays need it).
    #[arg(long)]
    pub streaming: bool,
    /// Write an .ald output as one payload (not STREAMING) even for an input larger than 64 MiB.
    /// The whole table is then held in memory while converting.
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
    /// Rows per row group with --streaming [default: 65536]. Not with --trueno-native, whose one
    /// chunk holds every row.
    #[arg(long, value_name = "N", requires = "streaming")]
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
    /// Refuse the input (SchemaMismatch) unless its columns are exactly these, written as for
    /// --schema. For .ald inputs the check happens before any payload byte is read.
    #[arg(long, value_name = "COLUMNS")]
    pub expect_schema: Option<String>,
    /// How to read a CSV input, and how many rows infer its types.
    #[command(flatten)]
    pub csv: CsvInputArgs,
    /// How to open an .ald input.
    #[command(flatten)]
    pub keys: KeyOptions,
}

/// `alimentar head FILE`.
#[derive(Debug, Args)]
pub struct HeadArgs {
    /// The .ald file (or any input `convert` reads).
    pub file: PathBuf,
    /// How many rows.
    #[arg(long, short = 'n', default_value_t = 10)]
    pub rows: u64,
    /// Print a JSON array of row objects instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Refuse the file (SchemaMismatch) unless its columns are exactly these, written as
    /// `name: Type[ not null], ...`.
    #[arg(long, value_name = "COLUMNS")]
    pub expect_schema: Option<String>,
    /// How to read a CSV input.
    #[command(flatten)]
    pub csv: CsvInputArgs,
    /// How to open an encrypted or signed file.
    #[command(flatten)]
    pub keys: KeyOptions,
}

/// `alimentar schema FILE`.
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// The .ald file (or any input `convert` reads).
    pub file: PathBuf,
    /// Print JSON (`[{"name", "type", "nullable"}]`) instead of one column per line.
    #[arg(long)]
    pub json: bool,
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
            Some(dir) => Some(
                envelope_sign::fs::trusted_keys_from_dir(dir)
                    .with_context(|| format!("reading trusted keys from {}", dir.display()))?,
            ),
            None => None,
        };
        let secret = if let Some(key) = &keys.key {
            let password = keys
                .password_source
                .read(tool, "key file password", false)?;
            let identity = envelope_sign::fs::read_identity(key, &password)
                .with_context(|| format!("opening the key file {}", key.display()))?;
            Some(Secret::Recipient(identity.recipient_secret_key()))
        } else if keys.password || keys.password_source.password_file.is_some() {
            Some(Secret::Password(
                keys.password_source.read(tool, "password", false)?,
            ))
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
        }
    }
}

/// Runs `convert`.
///
/// # Errors
/// The first failure, naming its Andon signal.
pub fn convert(tool: Tool, args: &ConvertArgs) -> anyhow::Result<()> {
    if args.trueno_native {
        check_trueno_options(args)?;
    }
    let access = Access::read(&args.keys, tool)?;
    let expected = expected_schema(args.expect_schema.as_deref())?;
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
    args.csv.apply(&args.input, &mut options)?;
    let source = Source::open(&args.input, options)
        .with_context(|| format!("reading {}", args.input.display()))?;
    if let Some(expected) = &expected {
        ald::check_schema(expected, source.schema())?;
    }
    if args.trueno_native {
        return convert_trueno(args, &source, &bar);
    }
    let mut save = SaveOptions::new(
        args.dataset_type.parse::<DatasetType>()?,
        args.compression.unwrap_or(CompressionArg::ZstdL3).into(),
    );
    if args.streaming || (!args.whole && large_input(&args.input)) {
        save.chunk_rows = Some(args.chunk_rows.unwrap_or(ald::DEFAULT_CHUNK_ROWS));
    }
    if let Some(card) = &args.card {
        save.metadata = read_card(card)?;
    }
    let rows = ald::interchange::convert(&source, &args.output, &save, &mut |rows| {
        bar.set_message(format!("{rows} rows"));
    })
    .with_context(|| {
        format!(
            "converting {} to {}",
            args.input.display(),
            args.output.display()
        )
    })?;
    bar.finish_and_clear();
    say(&format!(
        "wrote {} rows to {} ({})",
        rows,
        args.output.display(),
        FileKind::of(&args.output)?.name()
    ));
    Ok(())
}

/// Inputs larger than this are converted into STREAMING `.ald` files unless `--whole` says
/// otherwise: bounded memory while converting, lazy opening and loading on every core afterwards.
const AUTO_STREAMING_INPUT_BYTES: u64 = 64 << 20;

/// Whether `input` is large enough to be written STREAMING by default.
fn large_input(input: &std::path::Path) -> bool {
    std::fs::metadata(input).is_ok_and(|meta| meta.len() > AUTO_STREAMING_INPUT_BYTES)
}

/// `Usage` unless the options of `convert --trueno-native` fit together (checked before the
/// input is read).
fn check_trueno_options(args: &ConvertArgs) -> anyhow::Result<()> {
    if FileKind::of(&args.output)? != FileKind::Ald {
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
    bar: &indicatif::ProgressBar,
) -> anyhow::Result<()> {
    let dataset_type = args.dataset_type.parse::<DatasetType>()?;
    let metadata = match &args.card {
        Some(card) => read_card(card)?,
        None => Metadata::default(),
    };
    let backend = crate::backend_hint(&args.backend)?;
    let dataset = source
        .read_all()
        .with_context(|| format!("reading {}", args.input.display()))?;
    bar.set_message(format!("{} rows", dataset.num_rows()));
    let options = ald::aligned::TruenoOptions {
        backend,
        streaming: args.streaming,
    };
    let parts = ald::aligned::trueno_parts_with(&dataset, dataset_type, &metadata, &options)?;
    envelope_core::fs::save(&args.output, &parts)?;
    bar.finish_and_clear();
    let streaming = if matches!(parts.payload, envelope_core::Payload::Chunked { .. }) {
        ", STREAMING as one chunk"
    } else {
        ""
    };
    say(&format!(
        "wrote {} rows to {} (.ald, TRUENO_NATIVE{streaming}: {} columns as 64-byte-aligned arrays, zero-copy)",
        dataset.num_rows(),
        args.output.display(),
        dataset.schema().fields().len()
    ));
    Ok(())
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
    let expected = expected_schema(args.expect_schema.as_deref())?;
    let batch = if FileKind::of(&args.file)? == FileKind::Ald {
        let access = Access::read(&args.keys, tool)?;
        let options = access.options(expected.as_deref());
        let dataset = StreamingDataset::open(&args.file, &options)?;
        let count = args.rows.min(dataset.num_rows());
        match options.key {
            Some(key) if dataset.file().is_encrypted() => {
                dataset.with_key(key)?.get_rows(0, count)?
            }
            _ => dataset.get_rows(0, count)?,
        }
    } else {
        let mut options = ReadOptions::default();
        args.csv.apply(&args.file, &mut options)?;
        let source = Source::open(&args.file, options)?;
        if let Some(expected) = &expected {
            ald::check_schema(expected, source.schema())?;
        }
        source.head(args.rows)?
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        ald::interchange::write_json_rows(&batch, &mut out)?;
        writeln!(out)?;
    } else {
        ald::interchange::write_text_table(&batch, &mut out)?;
    }
    Ok(())
}

/// Runs `schema`: reads the schema section only (for .ald files; other inputs as `convert`).
///
/// # Errors
/// The first failure, naming its Andon signal.
pub fn schema(args: &SchemaArgs) -> anyhow::Result<()> {
    let mut options = ReadOptions::default();
    args.csv.apply(&args.file, &mut options)?;
    let source = Source::open(&args.file, options)?;
    let schema = source.schema();
    if args.json {
        let fields: Vec<serde_json::Value> = schema
            .fields()
            .iter()
            .map(|field| {
                serde_json::json!({
                    "name": field.name(),
                    "type": field.data_type().to_string(),
                    "nullable": field.is_nullable(),
                })
            })
            .collect();
        say(&serde_json::to_string_pretty(&fields)?);
    } else {
        for field in schema.fields() {
            let null = if field.is_nullable() { "" } else { " not null" };
            say(&format!("{}: {}{null}", field.name(), field.data_type()));
        }
    }
    Ok(())
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
    let envelope = envelope_core::Envelope::parse_lazy(&map[..], envelope_core::Format::Dataset)?;
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
/// The first failed envelope or deep check, naming its signal.
pub fn info(path: &Path, json: bool, verify: bool, keys: &KeyOptions) -> anyhow::Result<()> {
    let tool = Tool::ALIMENTAR;
    let mut report = crate::inspect::inspect_with(path, tool.format, verify)?;
    report.checks = crate::security::deep_checks(tool, path, keys)?;
    let info = dataset_info(path).map_err(|error| format!("{error:#}"));
    if json {
        let mut value = serde_json::to_value(&report)?;
        if let serde_json::Value::Object(map) = &mut value {
            match &info {
                Ok(info) => map.insert("dataset".to_owned(), serde_json::to_value(info)?),
                Err(error) => map.insert("dataset_error".to_owned(), error.clone().into()),
            };
        }
        say(&serde_json::to_string_pretty(&value)?);
        return Ok(());
    }
    crate::inspect::print_text(&report);
    match &info {
        Ok(info) => print_info(info),
        Err(error) => say(&format!(
            "  dataset      not readable as an .ald dataset: {error}"
        )),
    }
    Ok(())
}

/// Prints `info` as text (JSON callers serialize [`DatasetInfo`] themselves).
pub fn print_info(info: &DatasetInfo) {
    say(&format!(
        "dataset type  {} ({})",
        info.dataset_type, info.dataset_type_id
    ));
    say(&format!("rows          {}", info.num_rows));
    say(&format!("chunks        {}", info.num_chunks));
    if let Some(card) = &info.metadata.card {
        say(&format!("name          {} {}", card.name, card.version));
        if let Some(license) = &card.license {
            say(&format!("license       {license}"));
        }
        if !card.description.is_empty() {
            say(&format!(
                "description   {}",
                card.description.lines().next().unwrap_or_default()
            ));
        }
    }
    say("columns");
    for column in &info.columns {
        say(&format!("  {column}"));
    }
    if let Some(license) = &info.license {
        say(&format!(
            "license block {} licensee {} expires {} flags {}",
            license.license_id,
            license.licensee_hash,
            license.expires_at,
            license.flags.join(",")
        ));
    }
    if let Some(signer) = &info.claimed_signer {
        say(&format!(
            "signed by     {signer} (claimed; verify with --trusted-keys)"
        ));
    }
}

#[allow(clippy::print_stdout, reason = "a CLI prints its results")]
fn say(line: &str) {
    println!("{line}");
}
