//! `cargo xtask fuzz-seeds TARGET`: seed files for the interchange fuzz targets (`arrow_file`,
//! `arrow_stream`, `parquet_reader`, `csv_reader`, `jsonl_reader`, `safetensors_import`), written
//! into `fuzz/corpus/TARGET/`.
//!
//! Seeds come from two kinds of writers, so the fuzzer starts from real files of both:
//! - independent programs: pyarrow, pandas and the `safetensors` package
//!   (`tests/python/fuzz_seeds.py`, run with `--python`, `$INTEROP_PYTHON` or `.venv/bin/python`);
//! - our own writers: `alimentar convert` of those files into the target's format, and the `apr`
//!   round trip (import, quantize, export) of the sample SafeTensors model.
//!
//! Issue 13 §1: seeds are never written by `cargo test`; this command writes them on request, and
//! what the fuzzer keeps (after `cargo fuzz cmin`) is checked in and replayed by `cargo test`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use crate::cargo::{capture, cargo, project_root};

/// The interchange targets and the extension of their input files.
pub(crate) const TARGETS: [(&str, &str); 6] = [
    ("arrow_file", "arrow"),
    ("arrow_stream", "arrows"),
    ("parquet_reader", "parquet"),
    ("csv_reader", "csv"),
    ("jsonl_reader", "jsonl"),
    ("safetensors_import", "safetensors"),
];

/// Options of `fuzz-seeds`.
#[derive(Debug)]
pub(crate) struct Options {
    targets: Vec<&'static str>,
    python: Option<PathBuf>,
}

impl Options {
    /// Parses `TARGET|all [--python PATH]`; `None` for `--help`.
    ///
    /// # Errors
    /// An unknown target or flag.
    pub(crate) fn parse(args: &[&str]) -> Result<Option<Self>> {
        let mut targets = Vec::new();
        let mut python = None;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match *arg {
                "--help" | "-h" => return Ok(None),
                "--python" => {
                    let path = args.next().context("--python needs a path")?;
                    python = Some(PathBuf::from(path));
                }
                "all" => targets.extend(TARGETS.iter().map(|(name, _)| *name)),
                name => match TARGETS.iter().find(|(target, _)| *target == name) {
                    Some((target, _)) => targets.push(*target),
                    None => bail!(
                        "unknown fuzz target `{name}` (interchange targets: {})",
                        TARGETS.map(|(name, _)| name).join(", ")
                    ),
                },
            }
        }
        if targets.is_empty() {
            bail!("name a target or `all`");
        }
        Ok(Some(Self { targets, python }))
    }
}

fn python(options: &Options, root: &Path) -> OsString {
    options
        .python
        .clone()
        .map(OsString::from)
        .or_else(|| std::env::var_os("INTEROP_PYTHON"))
        .unwrap_or_else(|| root.join(".venv/bin/python").into_os_string())
}

/// Writes the seeds of every target in `options`.
///
/// # Errors
/// If Python or a tool cannot be run, or a writer that must succeed fails.
pub(crate) fn run(options: &Options) -> Result<bool> {
    let root = project_root();
    let python = python(options, &root);
    let script = root.join("tests/python/fuzz_seeds.py");
    let scratch = tempdir(&root)?;
    // Tables written by pyarrow, converted below by our own writers into each format.
    py(&python, &script, "parquet_reader", &scratch, &root)?;
    for target in &options.targets {
        let corpus = root.join("fuzz/corpus").join(target);
        std::fs::create_dir_all(&corpus)?;
        py(&python, &script, target, &corpus, &root)?;
        let ours = if *target == "safetensors_import" {
            apr_round_trip(&root, &scratch, &corpus)?
        } else {
            alimentar_conversions(target, &root, &scratch, &corpus)?
        };
        println!(
            "{target}: {ours} seeds from our own writers in {}",
            corpus.display()
        );
    }
    std::fs::remove_dir_all(&scratch)?;
    Ok(true)
}

fn tempdir(root: &Path) -> Result<PathBuf> {
    let dir = root
        .join("target")
        .join(format!("fuzz-seeds-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn py(python: &OsString, script: &Path, target: &str, dir: &Path, root: &Path) -> Result<()> {
    let run = capture(
        std::process::Command::new(python)
            .arg(script)
            .arg(target)
            .arg(dir),
        root,
    )?;
    if !run.ok {
        bail!(
            "fuzz_seeds.py {target} failed:\n{}{}",
            run.stdout,
            run.stderr
        );
    }
    print!("{}", run.stdout);
    Ok(())
}

fn tool(root: &Path, binary: &str, args: &[&std::ffi::OsStr]) -> Result<bool> {
    let run = capture(
        cargo()
            .args([
                "run",
                "--quiet",
                "-p",
                "envelope-cli",
                "--bin",
                binary,
                "--",
            ])
            .args(args),
        root,
    )?;
    if !run.ok {
        println!("  ({binary} {args:?}: {})", run.stderr.trim());
    }
    Ok(run.ok)
}

/// `alimentar convert` of every pyarrow Parquet table into `target`'s format (tables a format
/// cannot hold, such as nested columns in CSV, are skipped). Text seeds get the options byte
/// 0x00 (defaults) the text targets read first.
fn alimentar_conversions(
    target: &str,
    root: &Path,
    scratch: &Path,
    corpus: &Path,
) -> Result<usize> {
    let extension = TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, extension)| *extension)
        .context("a known target")?;
    let mut written = 0;
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(scratch)?
        .map(|entry| entry.map(|entry| entry.path()))
        .collect::<std::io::Result<_>>()?;
    inputs.retain(|path| {
        path.extension().is_some_and(|ext| ext == "parquet")
            && path.to_string_lossy().contains("-zstd")
    });
    inputs.sort();
    for input in inputs {
        let stem = input
            .file_stem()
            .and_then(|stem| stem.to_str())
            .context("a file name")?
            .replace("seed-py-", "");
        let output = corpus.join(format!("seed-ours-{stem}.{extension}"));
        if !tool(
            root,
            "alimentar",
            &["convert".as_ref(), input.as_os_str(), output.as_os_str()],
        )? {
            continue;
        }
        if matches!(extension, "csv" | "jsonl") {
            let mut bytes = vec![0u8];
            bytes.extend(std::fs::read(&output)?);
            std::fs::write(&output, bytes)?;
        }
        written += 1;
    }
    Ok(written)
}

/// The sample model through `apr`: imported, quantized to Q8_0 and exported as SafeTensors (our
/// writer, with the `apr.*` metadata a quantized export carries), and the sample itself.
fn apr_round_trip(root: &Path, scratch: &Path, corpus: &Path) -> Result<usize> {
    let sample = root.join("samples/model/tiny-mlp.safetensors");
    std::fs::copy(&sample, corpus.join("seed-sample-tiny-mlp.safetensors"))?;
    let model = scratch.join("m.apr");
    let quantized = scratch.join("q.apr");
    let exported = scratch.join("exported");
    let steps: [&[&std::ffi::OsStr]; 3] = [
        &[
            "import".as_ref(),
            sample.as_os_str(),
            "-o".as_ref(),
            model.as_os_str(),
        ],
        &[
            "quantize".as_ref(),
            model.as_os_str(),
            "--type".as_ref(),
            "q8_0".as_ref(),
            "-o".as_ref(),
            quantized.as_os_str(),
        ],
        &[
            "export".as_ref(),
            quantized.as_os_str(),
            "--format".as_ref(),
            "safetensors".as_ref(),
            "-o".as_ref(),
            exported.as_os_str(),
        ],
    ];
    for step in steps {
        if !tool(root, "apr", step)? {
            bail!("apr {step:?} failed");
        }
    }
    let mut written = 1;
    for entry in std::fs::read_dir(&exported)? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "safetensors") {
            std::fs::copy(&path, corpus.join("seed-ours-q8_0.safetensors"))?;
            written += 1;
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_unknown_ones_are_refused() {
        let options = Options::parse(&["all"]).unwrap().unwrap();
        assert_eq!(options.targets.len(), TARGETS.len());
        let one = Options::parse(&["csv_reader", "--python", "/usr/bin/python3"])
            .unwrap()
            .unwrap();
        assert_eq!(one.targets, ["csv_reader"]);
        assert!(Options::parse(&["ald_reader"]).is_err());
        assert!(Options::parse(&[]).is_err());
        assert!(Options::parse(&["--help"]).unwrap().is_none());
    }
}
