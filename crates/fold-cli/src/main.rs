//! The `fold` command-line tool: a thin shell over the `fold` library (argument parsing, progress,
//! printing). Every check and every byte written comes from the library.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a CLI reports on stdout / stderr"
)]

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand, ValueEnum};
use fold::json::{self, Map, Value};
use fold::{Compression, Ecc, WriteOptions};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Inspect, extract, verify, pack and repair `.fold` / `.mind` containers (pyfolds-compatible).
#[derive(Parser)]
#[command(name = "fold", version, about, long_about = None)]
struct Cli {
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
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Write one chunk's raw (decompressed, verified, ECC-corrected) bytes to stdout or a file.
    Cat {
        /// The container.
        file: PathBuf,
        /// The chunk name.
        chunk: String,
        /// Output file (written atomically); stdout when absent.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Check every chunk by every rule (bounds, header/index agreement, ECC, CRC32C, SHA-256,
    /// chunk_hashes, manifest_hash, decompressed length) on two threads. Exits 1 on any failure,
    /// naming the chunk and the rule.
    Verify {
        /// The container.
        file: PathBuf,
        /// Also verify the Ed25519 metadata signature with this public key (SPKI PEM).
        #[arg(long)]
        public_key: Option<PathBuf>,
        /// Print a JSON report.
        #[arg(long)]
        json: bool,
        /// Also check that the ECC bytes match the data of every codeword (damage confined to ECC
        /// bytes passes CRC32C and SHA-256 but lowers the protection; `fold repair` fixes it).
        /// Costs one Reed-Solomon encoding pass over every ECC-protected chunk.
        #[arg(long)]
        ecc_parity: bool,
    },
    /// Build a container from files: NAME=TYPE:PATH, TYPE being 4 ASCII characters (TSAV, JSON,
    /// NPZ0, ...). Written to a temporary file, fsynced and renamed.
    Pack {
        /// The container to create.
        out: PathBuf,
        /// Chunks as NAME=TYPE:PATH.
        #[arg(required = true)]
        chunks: Vec<String>,
        /// Payload compression.
        #[arg(long, value_enum, default_value = "zstd")]
        compress: Compress,
        /// Reed-Solomon protection per chunk: off, low (rs(16)), med (rs(32)), high (rs(64)), or rs(N).
        #[arg(long, default_value = "off", value_parser = parse_ecc)]
        ecc: Ecc,
        /// A JSON object to store as the index metadata (chunk_hashes and manifest_hash are added).
        #[arg(long)]
        metadata: Option<PathBuf>,
        /// created_at_unix to record (default: now). Fixing it makes the output reproducible.
        #[arg(long)]
        created_at: Option<f64>,
        /// Sign the metadata with this Ed25519 private key (PKCS#8 PEM), as pyfolds does.
        #[arg(long)]
        sign_key: Option<PathBuf>,
        /// key_id recorded with the signature.
        #[arg(long, default_value = "default")]
        key_id: String,
    },
    /// Rewrite FILE with every chunk ECC-corrected and verified; fails if any chunk cannot be
    /// repaired. The output is written atomically.
    Repair {
        /// The damaged container.
        file: PathBuf,
        /// Where to write the repaired copy.
        #[arg(short, long)]
        output: PathBuf,
    },
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

fn progress(total: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        Some(total),
        if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        },
    );
    bar.set_style(
        ProgressStyle::with_template("{msg} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(what.to_owned());
    bar
}

fn atomic_write(path: &Path, write: impl FnOnce(&mut std::fs::File) -> Result<()>) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    write(tmp.as_file_mut())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)?;
    Ok(())
}

fn compression_name(flags: u64) -> &'static str {
    match Compression::from_flag(flags) {
        Some(Compression::None) => "none",
        Some(Compression::Zstd) => "zstd",
        None => "unknown",
    }
}

fn ls(file: &Path, as_json: bool) -> Result<ExitCode> {
    let r = fold::fs::open(file).with_context(|| format!("{}", file.display()))?;
    let idx = r.index();
    if as_json {
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
                    ("sha256".into(), Value::String(fold::hex_lower(&c.sha256))),
                ])
            })
            .collect();
        let out = Value::Object(vec![
            ("version".into(), Value::String(idx.version.clone())),
            ("created_at_unix".into(), idx.created_at_unix.clone()),
            ("file_len".into(), Value::from_u64(r.file_len())),
            ("chunks".into(), Value::Array(chunks)),
        ]);
        println!("{}", out.to_python_json(false, false));
    } else {
        println!(
            "{:<24} {:<4} {:<5} {:>12} {:>12} {:<8} {:>8}",
            "NAME", "TYPE", "COMP", "STORED", "RAW", "ECC", "ECC_LEN"
        );
        for c in &idx.chunks {
            println!(
                "{:<24} {:<4} {:<5} {:>12} {:>12} {:<8} {:>8}",
                c.name,
                c.ctype_str(),
                compression_name(c.flags),
                c.comp_len,
                c.uncomp_len,
                c.ecc.to_string(),
                c.ecc_len
            );
        }
        if !idx.version_supported() {
            eprintln!(
                "warning: index version {:?} is not one pyfolds knows",
                idx.version
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn cat(file: &Path, chunk: &str, output: Option<&Path>) -> Result<ExitCode> {
    let r = fold::fs::open(file).with_context(|| format!("{}", file.display()))?;
    let bytes = r
        .read_chunk(chunk)
        .with_context(|| format!("{}", file.display()))?;
    match output {
        Some(p) => atomic_write(p, |f| Ok(f.write_all(&bytes)?))?,
        None => std::io::stdout().lock().write_all(&bytes)?,
    }
    Ok(ExitCode::SUCCESS)
}

fn verify(
    file: &Path,
    public_key: Option<&Path>,
    as_json: bool,
    ecc_parity: bool,
) -> Result<ExitCode> {
    let r = fold::fs::open(file).with_context(|| format!("{}", file.display()))?;
    let total = r
        .index()
        .chunks
        .iter()
        .map(|c| c.comp_len + c.ecc_len)
        .sum();
    let bar = progress(total, "verify");
    let report = r.verify_all(&|n| bar.inc(n));
    bar.finish_and_clear();
    let signature = match public_key {
        Some(p) => {
            let pem = std::fs::read_to_string(p).with_context(|| format!("{}", p.display()))?;
            Some(r.verify_signature(&pem))
        }
        None => None,
    };
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
    if as_json {
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
        println!("{}", Value::Object(out).to_python_json(false, false));
    } else {
        for c in &report.chunks {
            match &c.result {
                Ok(0) => println!("ok    {}", c.name),
                Ok(n) => println!(
                    "ok    {} ({n} bytes corrected by ECC; run `fold repair`)",
                    c.name
                ),
                Err(e) => println!("FAIL  {} {}", c.name, with_rule(e)),
            }
        }
        if let Err(e) = &report.manifest {
            println!("FAIL  (metadata) {}", with_rule(e));
        }
        for (name, cw) in &parity {
            println!(
                "FAIL  {name} [ecc parity] ECC bytes of codewords {cw:?} do not match the data \
                 (data intact; run `fold repair`)"
            );
        }
        match &signature {
            Some(Ok(())) => println!(
                "ok    (signature) over metadata {} only; it does not cover the chunk bytes, \
                 chunk_hashes or manifest_hash, so it does not vouch for the chunks",
                fold::signature::SIGNED_FIELDS.join(", ")
            ),
            Some(Err(e)) => println!("FAIL  (signature) {}", with_rule(e)),
            None => {}
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[allow(clippy::too_many_arguments, reason = "one argument per CLI flag")]
fn pack(
    out: &Path,
    chunks: &[String],
    compress: Compress,
    ecc: Ecc,
    metadata: Option<&Path>,
    created_at: Option<f64>,
    sign_key: Option<&Path>,
    key_id: &str,
) -> Result<ExitCode> {
    let mut parsed = Vec::new();
    for spec in chunks {
        let (name, rest) = spec
            .split_once('=')
            .with_context(|| format!("{spec:?}: expected NAME=TYPE:PATH"))?;
        let (ctype, path) = rest
            .split_once(':')
            .with_context(|| format!("{spec:?}: expected NAME=TYPE:PATH"))?;
        parsed.push((name.to_owned(), ctype.to_owned(), PathBuf::from(path)));
    }
    let mut md: Map = match metadata {
        Some(p) => {
            let text = std::fs::read_to_string(p).with_context(|| format!("{}", p.display()))?;
            match json::parse(&text) {
                Ok(Value::Object(m)) => m,
                Ok(_) => bail!("{}: metadata must be a JSON object", p.display()),
                Err(e) => bail!(
                    "{}: invalid JSON ({:?} at byte {})",
                    p.display(),
                    e.kind,
                    e.position
                ),
            }
        }
        None => Vec::new(),
    };
    if let Some(k) = sign_key {
        let pem = std::fs::read_to_string(k).with_context(|| format!("{}", k.display()))?;
        fold::signature::sign(&mut md, &pem, key_id)?;
    }
    let opts = WriteOptions {
        compression: match compress {
            Compress::Zstd => Compression::Zstd,
            Compress::None => Compression::None,
        },
        ecc,
        ..WriteOptions::default()
    };
    let total = parsed
        .iter()
        .map(|(_, _, p)| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum();
    let bar = progress(total, "pack");
    let mut file = fold::fs::AtomicFoldFile::create(out, opts)?;
    for (name, ctype, path) in &parsed {
        let payload = std::fs::read(path).with_context(|| format!("{}", path.display()))?;
        file.writer()
            .add_chunk(name, ctype, &payload)
            .with_context(|| format!("chunk {name:?}"))?;
        bar.inc(payload.len() as u64);
    }
    file.commit(md, created_at.unwrap_or_else(fold::fs::now_unix))?;
    bar.finish_and_clear();
    Ok(ExitCode::SUCCESS)
}

fn repair(file: &Path, output: &Path) -> Result<ExitCode> {
    let r = fold::fs::open(file).with_context(|| format!("{}", file.display()))?;
    let mut fixed = 0;
    atomic_write(output, |f| {
        let mut w = std::io::BufWriter::new(f);
        fixed = r.repair_into(&mut w)?;
        w.flush()?;
        Ok(())
    })
    .with_context(|| format!("repairing {}", file.display()))?;
    eprintln!(
        "repaired: {fixed} bytes corrected, written to {}",
        output.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Ls { file, json } => ls(file, *json),
        Command::Cat {
            file,
            chunk,
            output,
        } => cat(file, chunk, output.as_deref()),
        Command::Verify {
            file,
            public_key,
            json,
            ecc_parity,
        } => verify(file, public_key.as_deref(), *json, *ecc_parity),
        Command::Pack {
            out,
            chunks,
            compress,
            ecc,
            metadata,
            created_at,
            sign_key,
            key_id,
        } => pack(
            out,
            chunks,
            *compress,
            *ecc,
            metadata.as_deref(),
            *created_at,
            sign_key.as_deref(),
            key_id,
        ),
        Command::Repair { file, output } => repair(file, output),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("fold: error: {e:#}");
            ExitCode::FAILURE
        }
    }
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
