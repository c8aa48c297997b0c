//! The `fold` command-line tool: a thin shell over the `fold` library (argument parsing, progress,
//! printing), following the conventions of docs/cli.md through `cli-support`. Every check and
//! every byte written comes from the library.

use std::io::IsTerminal as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use cli_support::keys::PasswordSource;
use cli_support::output::{self, Access, Content, Force};
use cli_support::run::GlobalArgs;
use cli_support::say;
use cli_support::terminal::Safe;
use fold::json::{self, Map, Value};
use fold::{Compression, Ecc, WriteOptions};

/// The environment variable a key file's password may come from.
const PASSWORD_ENV: &str = "FOLD_PASSWORD";

/// Inspect, extract, verify, pack and repair .fold / .mind containers (byte-compatible with
/// pyfolds): per-chunk CRC32C and SHA-256, optional Reed-Solomon ECC, a JSON index at the end.
///
/// Every command takes --json (one JSON document on stdout) and --quiet. Outputs are written
/// atomically and never replace an existing file without --force. Exit status: 0 success,
/// 1 failure (the message names the chunk and the rule, e.g. [§8.3 crc32c]), 2 usage.
/// Conventions: docs/cli.md.
#[derive(Parser)]
#[command(name = "fold", version, long_about)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the chunks: name, type, compression, stored and raw sizes, ECC. Reads the header and
    /// the index only.
    Ls {
        /// The container.
        file: PathBuf,
    },
    /// Write one chunk's raw (decompressed, verified, ECC-corrected) bytes to stdout or a file.
    /// A binary chunk is not written to a terminal.
    Cat {
        /// The container.
        file: PathBuf,
        /// The chunk name.
        chunk: String,
        /// Output file (`-` or absent: stdout), written atomically; an existing file is refused
        /// without --force. A device or FIFO (`-o /dev/null`) is written in place.
        #[arg(short, long, value_name = "OUT")]
        output: Option<PathBuf>,
        /// Replace an existing output.
        #[command(flatten)]
        force: Force,
    },
    /// Check every chunk by every rule (bounds, header/index agreement, ECC, CRC32C, SHA-256,
    /// chunk_hashes, manifest_hash, decompressed length) on two threads. Exits 1 on any failure,
    /// naming the chunk and the rule. The metadata signature (pyfolds') covers the index metadata
    /// only: chunk bytes are bound by chunk_hashes and manifest_hash, checked above it.
    Verify {
        /// The container.
        file: PathBuf,
        /// Also verify the Ed25519 metadata signature with this public key: SPKI PEM (pyfolds)
        /// or a public key file made by `alimentar keygen` / `apr keygen` (KEY.pub).
        #[arg(long, value_name = "PUB")]
        public_key: Option<PathBuf>,
        /// Also require the metadata signature to be by a key in one of the `*.pub` files of DIR.
        #[arg(long, value_name = "DIR", conflicts_with = "public_key")]
        trusted_keys: Option<PathBuf>,
        /// Also check that the ECC bytes match the data of every codeword (damage confined to ECC
        /// bytes passes CRC32C and SHA-256 but lowers the protection; `fold repair` fixes it).
        /// Costs one Reed-Solomon encoding pass over every ECC-protected chunk.
        #[arg(long)]
        ecc_parity: bool,
    },
    /// Build a container from files: NAME=TYPE:PATH, TYPE being 1 to 4 ASCII characters (TSAV,
    /// JSON, NPZ0, CSV, ...; shorter ones are padded with spaces as pyfolds pads them). Written to
    /// a temporary file, fsynced and renamed; an existing OUT is refused without --force.
    Pack(PackArgs),
    /// Rewrite FILE with every chunk ECC-corrected and verified; fails if any chunk cannot be
    /// repaired. The output is written atomically; an existing one is refused without --force.
    Repair {
        /// The damaged container.
        file: PathBuf,
        /// Where to write the repaired copy.
        #[arg(short, long, value_name = "OUT")]
        output: PathBuf,
        /// Replace an existing output.
        #[command(flatten)]
        force: Force,
    },
}

/// `fold pack -o OUT NAME=TYPE:PATH...`.
#[derive(Args)]
struct PackArgs {
    /// The container to create.
    #[arg(short, long, value_name = "OUT")]
    output: Option<PathBuf>,
    /// Chunks as NAME=TYPE:PATH. (Without -o, the first argument is the container to create, as
    /// in `fold pack OUT NAME=TYPE:PATH...`, kept for existing scripts.)
    #[arg(required = true, value_name = "NAME=TYPE:PATH")]
    chunks: Vec<String>,
    /// Replace an existing output.
    #[command(flatten)]
    force: Force,
    /// Payload compression.
    #[arg(long, visible_alias = "compress", value_enum, default_value = "zstd")]
    compression: Compress,
    /// Reed-Solomon protection per chunk: off, low (rs(16)), med (rs(32)), high (rs(64)), or rs(N).
    #[arg(long, default_value = "off", value_parser = parse_ecc)]
    ecc: Ecc,
    /// A JSON object to store as the index metadata (chunk_hashes and manifest_hash are added).
    #[arg(long, value_name = "JSON")]
    metadata: Option<PathBuf>,
    /// created_at_unix to record (default: now). Fixing it makes the output reproducible.
    #[arg(long, value_name = "SECONDS")]
    created_at: Option<f64>,
    /// Sign the metadata (pyfolds' signature) with this private key file made by `keygen`; its
    /// password comes from --password-file, FOLD_PASSWORD or a prompt.
    #[arg(long, value_name = "KEY", conflicts_with = "sign_key")]
    key: Option<PathBuf>,
    /// Sign the metadata with this Ed25519 private key in PKCS#8 PEM, as pyfolds does.
    #[arg(long, value_name = "PEM")]
    sign_key: Option<PathBuf>,
    /// Where the --key file's password comes from.
    #[command(flatten)]
    password: PasswordSource,
    /// key_id recorded with the signature.
    #[arg(long, default_value = "default")]
    key_id: String,
}

#[derive(Clone, Copy, ValueEnum)]
enum Compress {
    Zstd,
    None,
}

fn parse_ecc(s: &str) -> Result<Ecc, String> {
    Ecc::from_protection(s)
        .or_else(|| Ecc::parse(s))
        .ok_or_else(|| format!("{s:?}: expected off, low, med, high or rs(N)"))
}

fn compression_name(flags: u64) -> &'static str {
    match Compression::from_flag(flags) {
        Some(Compression::None) => "none",
        Some(Compression::Zstd) => "zstd",
        None => "unknown",
    }
}

fn open(file: &Path) -> Result<fold::FoldReader<fold::MappedSource>> {
    fold::fs::open(file).with_context(|| file.display().to_string())
}

fn ls(file: &Path) -> Result<()> {
    let r = open(file)?;
    let idx = r.index();
    if cli_support::run::mode().json {
        let chunks = idx
            .chunks
            .iter()
            .map(|c| {
                Value::Object(vec![
                    ("name".into(), Value::String(c.name.clone())),
                    ("ctype".into(), Value::String(c.ctype_str().into())),
                    (
                        "compression".into(),
                        Value::String(compression_name(c.flags).into()),
                    ),
                    ("offset".into(), Value::from_u64(c.offset)),
                    ("comp_len".into(), Value::from_u64(c.comp_len)),
                    ("uncomp_len".into(), Value::from_u64(c.uncomp_len)),
                    ("ecc_algo".into(), Value::String(c.ecc.to_string())),
                    ("ecc_len".into(), Value::from_u64(c.ecc_len)),
                    ("sha256".into(), Value::String(hex::encode(c.sha256))),
                ])
            })
            .collect();
        let out = Value::Object(vec![
            ("version".into(), Value::String(idx.version.clone())),
            ("created_at_unix".into(), idx.created_at_unix.clone()),
            ("file_len".into(), Value::from_u64(r.file_len())),
            ("chunks".into(), Value::Array(chunks)),
        ]);
        say!("{}", out.to_python_json(false, false))?;
        return Ok(());
    }
    say!(
        "{:<24} {:<4} {:<5} {:>12} {:>12} {:<8} {:>8}",
        "NAME",
        "TYPE",
        "COMP",
        "STORED",
        "RAW",
        "ECC",
        "ECC_LEN"
    )?;
    for c in &idx.chunks {
        say!(
            "{:<24} {:<4} {:<5} {:>12} {:>12} {:<8} {:>8}",
            Safe(&c.name),
            Safe(c.ctype_str()),
            compression_name(c.flags),
            c.comp_len,
            c.uncomp_len,
            c.ecc.to_string(),
            c.ecc_len
        )?;
    }
    if !idx.version_supported() {
        cli_support::print::warn(format!(
            "index version {:?} is not one pyfolds knows",
            Safe(&idx.version)
        ));
    }
    Ok(())
}

/// Whether `bytes` would print as plain text: UTF-8 without control characters other than
/// newline, tab and carriage return (escape sequences would drive the terminal).
fn is_plain_text(bytes: &[u8]) -> bool {
    std::str::from_utf8(bytes).is_ok_and(|text| {
        text.chars()
            .all(|c| matches!(c, '\n' | '\t' | '\r') || !cli_support::terminal::is_unsafe(c))
    })
}

fn cat(file: &Path, chunk: &str, output: Option<&Path>, force: Force) -> Result<()> {
    let path = output.unwrap_or(Path::new("-"));
    // Checked before the chunk is read; the terminal check waits for the bytes (a text chunk may
    // go to a terminal, as `cat` does).
    let destination = output::destination(path, force, Access::Shared, Content::Text)?;
    let r = open(file)?;
    let context = || format!("{}: chunk {:?}", file.display(), chunk);
    if !destination.is_stdout() {
        // The library writes a file while hashing the chunk and renames it into place only once
        // every check held; a device or FIFO gets the bytes only after the checks.
        let shown = destination.path().display().to_string();
        fold::fs::extract_chunk(&r, chunk, destination).map_err(|error| match error {
            fold::Error::Io(_) => anyhow::Error::new(error).context(format!("writing {shown}")),
            error => anyhow::Error::new(error).context(context()),
        })?;
        return Ok(());
    }
    // Verified in place and borrowed from the mapping (a stored chunk is not copied); nothing
    // reaches stdout before every check held.
    let bytes = r.read_chunk_cow(chunk).with_context(context)?;
    if std::io::stdout().is_terminal() && !is_plain_text(&bytes) {
        bail!(
            "Usage: chunk {:?} is binary; not written to a terminal (redirect stdout or use -o FILE)",
            Safe(chunk).to_string()
        );
    }
    // Through a handle of its own, not the line-buffered `Stdout`, which would search all the
    // bytes for the last newline before writing them.
    output_file::write(destination, |out| std::io::Write::write_all(out, &bytes))?;
    Ok(())
}

/// What the metadata signature was checked against.
enum SignatureCheck {
    /// One public key: PEM (SPKI) or a project public key file.
    Key(fold::signature::VerifyingKey),
    /// Any key of a trusted-keys directory.
    Trusted(envelope_sign::TrustedKeys),
}

fn read_public_key(path: &Path) -> Result<fold::signature::VerifyingKey> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("Io: reading the public key {}", path.display()))?;
    if text.contains("-----BEGIN") {
        use ed25519_dalek::pkcs8::DecodePublicKey as _;
        return fold::signature::VerifyingKey::from_public_key_pem(&text).map_err(|_| {
            anyhow::anyhow!("Usage: {} is not an Ed25519 SPKI PEM key", path.display())
        });
    }
    let keys = cli_support::keys::read_public_keys(path)?;
    let [key] = keys.signing.as_slice() else {
        bail!(
            "Usage: {} must hold exactly one ed25519 key (use --trusted-keys DIR for several)",
            path.display()
        );
    };
    fold::signature::VerifyingKey::from_bytes(key.as_bytes())
        .map_err(|_| anyhow::anyhow!("Usage: {} holds an invalid ed25519 key", path.display()))
}

fn check_signature(
    r: &fold::FoldReader<fold::MappedSource>,
    how: &SignatureCheck,
) -> fold::Result<()> {
    let metadata = &r.index().metadata;
    match how {
        SignatureCheck::Key(key) => fold::signature::verify_with(metadata, key),
        SignatureCheck::Trusted(trusted) => {
            let mut last = Err(fold::Error::Signature(fold::SignatureProblem::Invalid));
            for key in trusted.keys() {
                last = fold::signature::verify_with(metadata, key);
                if last.is_ok() {
                    break;
                }
            }
            last
        }
    }
}

fn verify(
    file: &Path,
    public_key: Option<&Path>,
    trusted_keys: Option<&Path>,
    ecc_parity: bool,
) -> Result<ExitCode> {
    let signature_check = match (public_key, trusted_keys) {
        (Some(path), _) => Some(SignatureCheck::Key(read_public_key(path)?)),
        (None, Some(dir)) => Some(SignatureCheck::Trusted(cli_support::keys::trusted_keys(
            dir,
        )?)),
        (None, None) => None,
    };
    let r = open(file)?;
    let total = r
        .index()
        .chunks
        .iter()
        .map(|c| c.comp_len + c.ecc_len)
        .sum();
    let bar = cli_support::progress::bytes(total, "verify");
    let report = r.verify_all(&|n| bar.inc(n));
    bar.finish_and_clear();
    let signature = signature_check.as_ref().map(|how| check_signature(&r, how));
    // Codewords with damaged parity, per chunk that otherwise verified (only with --ecc-parity).
    let mut parity: Vec<(String, Vec<u64>)> = Vec::new();
    if ecc_parity {
        for c in report.chunks.iter().filter(|c| c.result.is_ok()) {
            let damaged = r.damaged_parity(&c.name)?;
            if !damaged.is_empty() {
                parity.push((c.name.clone(), damaged));
            }
        }
    }
    let ok = report.is_ok() && signature.as_ref().is_none_or(Result::is_ok) && parity.is_empty();
    let err_value = |e: &fold::Error| {
        Value::Object(vec![
            ("rule".into(), Value::String(e.rule().into())),
            ("message".into(), Value::String(e.to_string())),
        ])
    };
    if cli_support::run::mode().json {
        let chunks = report
            .chunks
            .iter()
            .map(|c| {
                let mut m: Map = vec![("name".into(), Value::String(c.name.clone()))];
                match &c.result {
                    Ok(fixed) => {
                        m.push(("ok".into(), Value::Bool(true)));
                        m.push(("ecc_corrected".into(), Value::from_u64(*fixed as u64)));
                    }
                    Err(e) => {
                        m.push(("ok".into(), Value::Bool(false)));
                        m.push(("error".into(), err_value(e)));
                    }
                }
                Value::Object(m)
            })
            .collect();
        let mut out: Map = vec![
            ("ok".into(), Value::Bool(ok)),
            (
                "manifest_hash".into(),
                match &report.manifest {
                    Ok(()) => Value::Bool(true),
                    Err(e) => err_value(e),
                },
            ),
            ("chunks".into(), Value::Array(chunks)),
        ];
        if ecc_parity {
            out.push((
                "ecc_parity_damaged".into(),
                Value::Object(
                    parity
                        .iter()
                        .map(|(n, cw)| {
                            let list = cw.iter().map(|&i| Value::from_u64(i)).collect();
                            (n.clone(), Value::Array(list))
                        })
                        .collect(),
                ),
            ));
        }
        if let Some(s) = &signature {
            out.push((
                "signature".into(),
                match s {
                    Ok(()) => Value::Bool(true),
                    Err(e) => err_value(e),
                },
            ));
            // pyfolds' signature scope: these metadata fields only, never the chunk bytes.
            let covers = fold::signature::SIGNED_FIELDS
                .iter()
                .map(|f| Value::String(format!("metadata.{f}")))
                .collect();
            out.push(("signature_covers".into(), Value::Array(covers)));
        }
        say!("{}", Value::Object(out).to_python_json(false, false))?;
    } else {
        for c in &report.chunks {
            match &c.result {
                Ok(0) => say!("ok    {}", Safe(&c.name))?,
                Ok(n) => say!(
                    "ok    {} ({n} bytes corrected by ECC; run `fold repair`)",
                    Safe(&c.name)
                )?,
                Err(e) => say!("FAIL  {} {}", Safe(&c.name), Safe(&with_rule(e)))?,
            }
        }
        if let Err(e) = &report.manifest {
            say!("FAIL  (metadata) {}", Safe(&with_rule(e)))?;
        }
        for (name, cw) in &parity {
            say!(
                "FAIL  {} [ecc parity] ECC bytes of codewords {cw:?} do not match the data \
                 (data intact; run `fold repair`)",
                Safe(name)
            )?;
        }
        match &signature {
            Some(Ok(())) => say!(
                "ok    (signature) over metadata {} only; it does not cover the chunk bytes, \
                 chunk_hashes or manifest_hash, so it does not vouch for the chunks",
                fold::signature::SIGNED_FIELDS.join(", ")
            )?,
            Some(Err(e)) => say!("FAIL  (signature) {}", Safe(&with_rule(e)))?,
            None => {}
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// A chunk type as pyfolds stores it: 4 ASCII bytes, a shorter name padded with spaces.
fn chunk_type(spec: &str, ctype: &str) -> Result<String> {
    if ctype.is_empty() || ctype.len() > 4 || !ctype.bytes().all(|b| b.is_ascii_graphic()) {
        bail!(
            "Usage: {spec:?}: TYPE must be 1 to 4 printable ASCII characters (TSAV, JSON, CSV, ...)"
        );
    }
    Ok(format!("{ctype:<4}"))
}

fn pack(args: &PackArgs) -> Result<()> {
    let (out, chunks) = match &args.output {
        Some(out) => (out.as_path(), args.chunks.as_slice()),
        None => match args.chunks.split_first() {
            Some((first, rest)) if !first.contains('=') && !rest.is_empty() => {
                (Path::new(first), rest)
            }
            _ => bail!("Usage: name the container with -o OUT"),
        },
    };
    let destination = output::destination(out, args.force, Access::Shared, Content::Binary)?;
    let mut parsed = Vec::new();
    for spec in chunks {
        let (name, rest) = spec
            .split_once('=')
            .with_context(|| format!("Usage: {spec:?}: expected NAME=TYPE:PATH"))?;
        let (ctype, path) = rest
            .split_once(':')
            .with_context(|| format!("Usage: {spec:?}: expected NAME=TYPE:PATH"))?;
        parsed.push((
            name.to_owned(),
            chunk_type(spec, ctype)?,
            PathBuf::from(path),
        ));
    }
    let mut md: Map = match &args.metadata {
        Some(p) => {
            let text = std::fs::read_to_string(p).with_context(|| format!("{}", p.display()))?;
            match json::parse(&text) {
                Ok(Value::Object(m)) => m,
                Ok(_) => bail!("Usage: {}: metadata must be a JSON object", p.display()),
                Err(e) => bail!(
                    "Usage: {}: invalid JSON ({:?} at byte {})",
                    p.display(),
                    e.kind,
                    e.position
                ),
            }
        }
        None => Vec::new(),
    };
    if let Some(k) = &args.sign_key {
        let pem = std::fs::read_to_string(k)
            .with_context(|| format!("Io: reading the key {}", k.display()))?;
        fold::signature::sign(&mut md, &pem, &args.key_id)
            .with_context(|| k.display().to_string())?;
    }
    if let Some(key) = &args.key {
        let password = args
            .password
            .read(PASSWORD_ENV, "key file password", false)?;
        let identity = cli_support::keys::read_identity(key, &password)?;
        fold::signature::sign_with(&mut md, &identity.signing_key(), &args.key_id);
    }
    let compression = match args.compression {
        Compress::Zstd => Compression::Zstd,
        Compress::None => Compression::None,
    };
    let opts = WriteOptions::new(compression, args.ecc);
    let total = parsed
        .iter()
        .map(|(_, _, p)| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum();
    let bar = cli_support::progress::bytes(total, "pack");
    let shown = destination.path().display().to_string();
    let mut file = fold::fs::AtomicFoldFile::create(destination, opts)
        .with_context(|| format!("writing {shown}"))?;
    for (name, ctype, path) in &parsed {
        let payload = std::fs::read(path).with_context(|| format!("Io: {}", path.display()))?;
        file.writer()
            .add_chunk(name, ctype, &payload)
            .with_context(|| format!("chunk {name:?}"))?;
        bar.inc(payload.len() as u64);
    }
    file.commit(md, args.created_at.unwrap_or_else(fold::fs::now_unix))
        .with_context(|| format!("writing {shown}"))?;
    bar.finish_and_clear();
    report(
        &format!("packed {} chunks into {shown}", parsed.len()),
        serde_json::json!({ "ok": true, "output": shown, "chunks": parsed.len() }),
    )
}

fn repair(file: &Path, out: &Path, force: Force) -> Result<()> {
    let destination = output::destination(out, force, Access::Shared, Content::Binary)?;
    let r = open(file)?;
    let shown = destination.path().display().to_string();
    let fixed = output_file::write(destination, |w| -> Result<u64> {
        Ok(r.repair_into(w)? as u64)
    })
    .with_context(|| format!("repairing {}", file.display()))?;
    report(
        &format!("repaired: {fixed} bytes corrected, written to {shown}"),
        serde_json::json!({ "ok": true, "output": shown, "bytes_corrected": fixed }),
    )
}

/// What a writing command says when done: a note on stderr, or with --json an object on stdout.
fn report(text: &str, value: serde_json::Value) -> Result<()> {
    if cli_support::run::mode().json {
        cli_support::print::json(&value)?;
    } else {
        cli_support::print::note(Safe(text));
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    cli.global.install();
    let result = match &cli.command {
        Command::Ls { file } => ls(file).map(|()| ExitCode::SUCCESS),
        Command::Cat {
            file,
            chunk,
            output,
            force,
        } => cat(file, chunk, output.as_deref(), *force).map(|()| ExitCode::SUCCESS),
        Command::Verify {
            file,
            public_key,
            trusted_keys,
            ecc_parity,
        } => verify(
            file,
            public_key.as_deref(),
            trusted_keys.as_deref(),
            *ecc_parity,
        ),
        Command::Pack(args) => pack(args).map(|()| ExitCode::SUCCESS),
        Command::Repair {
            file,
            output,
            force,
        } => repair(file, output, *force).map(|()| ExitCode::SUCCESS),
    };
    cli_support::run::finish("fold", result, rule_of)
}

/// The `.fold` rule of the first fold error in the chain, as `code` in `--json` errors.
fn rule_of(error: &anyhow::Error) -> Option<String> {
    error.chain().find_map(|cause| {
        cause
            .downcast_ref::<fold::Error>()
            .map(|error| error.rule().to_owned())
    })
}

/// `[rule] message`, without repeating the section number when the message starts with it
/// (`[§7.8 ecc] chunk "w": ...`, not `[§7.8 ecc] §7.8 chunk "w": ...`).
fn with_rule(error: &fold::Error) -> String {
    let rule = error.rule();
    let text = error.to_string();
    let section = rule.split(' ').next().unwrap_or_default();
    let message = text
        .strip_prefix(section)
        .filter(|_| section.starts_with('§'))
        .map_or(text.as_str(), str::trim_start);
    format!("[{rule}] {message}")
}
