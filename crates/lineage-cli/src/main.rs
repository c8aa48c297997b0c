//! `lineage`: dataset snapshot IDs and lineage commitments (spec 004) from the command line.
//!
//! A thin shell over the `lineage` crate: argument parsing, the progress bar, printing, following
//! docs/cli.md through `cli-support`. Every failure is printed with the contract's failure code
//! and exits with status 1 (2 for usage errors, as clap does). The catalog commands (`publish`,
//! `show`, `log`, `diff`, `gc`) each live in their own module over `lineage-store`.

mod catalog;
mod diff;
mod gc;
mod log;
mod plan;
mod publish;
mod records;
mod remote;
mod show;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::{Args, Parser, Subcommand};
use cli_support::output::{self, Access, Content, Destination, Force};
use cli_support::run::GlobalArgs;
use cli_support::say;
use cli_support::terminal::Safe;
use lineage::fs::{BuildOutcome, HashOptions, SymlinkPolicy, hash_tree, walk};
use lineage::plan::AccessPlan;
use lineage::trace::{RunOutcome, run_trace};
use lineage::{
    AccessPlanInputs, DatasetDigest, Digest, SnapshotInputs, SplitDefs, TransformChain,
    build_snapshot, data_access_plan_hash,
};
use serde_json::json;

/// Dataset lineage (UML_OS.Data.Lineage_v1): content-addressed snapshot IDs.
///
/// `dataset_snapshot_id` commits to every file (path and bytes) under DIR, the split
/// definitions, the transform chain, the tenant and the version tag. The byte-level rules are in
/// docs/lineage.md. Exit status: 0 success, 1 failure (the message starts with the contract's
/// failure code, e.g. SPLIT_FRACTION_SUM), 2 usage error, 3 stopped by --stop-after (resume with
/// the same --checkpoint). Every command takes --json and --quiet; conventions: docs/cli.md.
///
/// `publish`, `show`, `log`, `diff` and `gc` work on a catalog directory: --catalog DIR, else
/// $LINEAGE_CATALOG, else ./.lineage.
#[derive(Parser, Debug)]
#[command(name = "lineage", version, long_about)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Hash DIR and print the lineage report: every commitment (dataset_root_hash,
    /// split_hashes, transform_chain_hash, dataset_snapshot_id, lineage_root_hash), the run's
    /// access plan (data_access_plan_hash and its inputs) and replay token, and the metrics.
    /// With --certificate, also write the signed execution certificate binding them.
    Snapshot {
        #[command(flatten)]
        snap: SnapshotArgs,
        #[command(flatten)]
        cert: plan::CertificateArgs,
    },
    /// Print which split each sample of DIR goes to, in canonical order: files in path order,
    /// records in storage order within each file. A record-oriented file (.csv, .jsonl,
    /// .ndjson, .parquet, .ald) holds one sample per record (text: "split<TAB>path<TAB>record"),
    /// any other file is one sample ("split<TAB>path"); --samples files makes every file one.
    Split {
        /// Dataset root directory.
        dir: PathBuf,
        /// What a sample is: `records` (004 §II.F: records of record-oriented files, other
        /// files whole) or `files` (every file one sample).
        #[arg(long, value_enum, default_value_t = SampleUnit::Records)]
        samples: SampleUnit,
        /// JSON array of split entries: [{"split_name": "train", "split_fraction": 0.8,
        /// "split_seed": 7}, ...] (seed optional, but shared by all entries if present).
        #[arg(long)]
        splits: PathBuf,
        /// Treat symlinks as files holding their target path instead of failing.
        #[arg(long)]
        symlinks_as_target_path: bool,
    },
    /// Print data_access_plan_hash (world_size_policy "rank_contiguous_shard_v1",
    /// epoch_seed_rule "epoch_seed_rule_v2"). Every input is 64 hex digits.
    Plan {
        /// kernel_replay_token.
        #[arg(long)]
        kernel_replay_token: String,
        /// manifest_hash.
        #[arg(long)]
        manifest_hash: String,
        /// dataset_key: normally the dataset_snapshot_id printed by `lineage snapshot`.
        #[arg(long)]
        dataset_key: String,
        /// sampler_config_hash.
        #[arg(long)]
        sampler_config_hash: String,
    },
    /// Check an execution certificate: its form, its Ed25519 signature under a trusted key,
    /// and optionally the hashes it binds. Exit 1 (CERTIFICATE_INVALID or
    /// SNAPSHOT_HASH_MISMATCH) unless all hold.
    VerifyCertificate(plan::VerifyCertificateArgs),
    /// Recompute the snapshot ID of DIR and exit 1 (SNAPSHOT_HASH_MISMATCH) unless it equals
    /// --expect. Takes the same inputs as `snapshot`.
    Verify {
        #[command(flatten)]
        snap: SnapshotArgs,
        /// The expected dataset_snapshot_id (64 hex digits).
        #[arg(long)]
        expect: String,
    },
    /// Record a snapshot of DIR (or of a `show --json` document) in the catalog and publish it:
    /// from then on it cannot change.
    Publish(publish::PublishArgs),
    /// Print everything the catalog records about a snapshot.
    Show(show::ShowArgs),
    /// Print the history of a dataset (its snapshots, oldest first).
    Log(log::LogArgs),
    /// Print which files and splits changed between two snapshots.
    Diff(diff::DiffArgs),
    /// Delete the objects retention allows (unreachable from every pinned root and active
    /// snapshot, past gc_eligible_after_utc, of a class that may go).
    Gc(gc::GcArgs),
}

/// What `lineage split` takes as a sample.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum SampleUnit {
    /// The records of record-oriented files; other files whole.
    Records,
    /// Every file whole.
    Files,
}

#[derive(Args, Debug)]
struct SnapshotArgs {
    /// Dataset root directory. Every regular file below it is a source; empty directories are
    /// ignored; symlinks fail unless --symlinks-as-target-path. Or a prefix in object storage
    /// (s3://bucket/prefix, gs://, az://): every object under it is a source, named by its key
    /// relative to the prefix, and the IDs are those of a local copy (docs/lineage.md §3.6;
    /// store configuration from the environment as in docs/remote.md).
    dir: PathBuf,
    /// tenant_id (the namespace of every lineage object).
    #[arg(long)]
    tenant: String,
    /// dataset_version_or_tag.
    #[arg(long)]
    version: String,
    /// JSON array of split entries (default: one split "all", fraction 1.0, no seed).
    #[arg(long)]
    splits: Option<PathBuf>,
    /// JSON array of transform objects, each with an integer "seq" (default: empty chain).
    #[arg(long)]
    transforms: Option<PathBuf>,
    /// Checkpoint file: resumed from if it exists, updated while hashing, removed on success.
    /// Keep it outside DIR (it would change the file list). A checkpoint is refused
    /// (CHECKPOINT_MISMATCH) if any file it covers changed since it was hashed.
    #[arg(long)]
    checkpoint: Option<PathBuf>,
    /// Files between checkpoint writes.
    #[arg(long, default_value_t = 10_000)]
    checkpoint_every: u64,
    /// Stop after this many files (writing the checkpoint) and exit 3: for planned interruption.
    #[arg(long, requires = "checkpoint")]
    stop_after: Option<u64>,
    /// Hashing threads (default: all cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Objects fetched at once when DIR is in object storage (each holds one network buffer:
    /// this bounds memory and connections).
    #[arg(long, default_value_t = remote::DEFAULT_CONCURRENCY, value_parser = clap::value_parser!(u16).range(1..=1024))]
    concurrency: u16,
    /// Treat symlinks as files holding their target path instead of failing.
    #[arg(long)]
    symlinks_as_target_path: bool,
    /// Write the lineage trace to FILE as a CBOR sequence (RFC 8742) of canonical maps:
    /// run_header, one iter per file, run_end; or an error record on failure. Written atomically;
    /// an existing FILE is refused without --force.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Replace an existing --trace file.
    #[command(flatten)]
    force: Force,
    /// run_id: the replay token (trace records, the plan's default kernel_replay_token) and
    /// the certificate name the run by it.
    #[arg(long, default_value = "lineage-cli")]
    run_id: String,
    /// How the run reads the snapshot (its data_access_plan_hash).
    #[command(flatten)]
    plan: plan::PlanArgs,
}

/// Exit status when a build stopped on `--stop-after`.
const EXIT_STOPPED: u8 = 3;

enum Outcome {
    Done,
    Stopped,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    cli.global.install();
    let outcome = run(cli.command).map(|outcome| match outcome {
        Outcome::Done => ExitCode::SUCCESS,
        Outcome::Stopped => ExitCode::from(EXIT_STOPPED),
    });
    cli_support::run::finish("lineage", outcome, |error| {
        error
            .downcast_ref::<lineage::Error>()
            .map(|le| le.failure_code().as_str().to_owned())
            .or_else(|| {
                error
                    .downcast_ref::<lineage_store::Error>()
                    .map(|se| se.code().to_owned())
            })
    })
}

pub(crate) fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

fn load_splits(path: Option<&Path>) -> Result<SplitDefs> {
    Ok(match path {
        Some(p) => SplitDefs::from_json(&read_text(p)?)?,
        None => SplitDefs::default(),
    })
}

fn policy(as_target: bool) -> SymlinkPolicy {
    if as_target {
        SymlinkPolicy::HashTargetPath
    } else {
        SymlinkPolicy::Refuse
    }
}

fn hash_dir(a: &SnapshotArgs, file_hashes: &mut Vec<Digest>) -> Result<Option<DatasetDigest>> {
    if remote::is_remote(&a.dir) {
        return hash_remote(a, file_hashes).map(Some);
    }
    let tree = walk(&a.dir, policy(a.symlinks_as_target_path))?;
    let opts = HashOptions {
        threads: a.threads,
        checkpoint: a.checkpoint.clone(),
        checkpoint_every_files: a.checkpoint_every,
        stop_after_files: a.stop_after,
    };
    let total = u64::try_from(tree.len()).unwrap_or(u64::MAX);
    let bar = cli_support::progress::items(total, "files", "hashing");
    let tracing = a.trace.is_some();
    let outcome = hash_tree(&tree, &opts, &mut |p| {
        if tracing {
            file_hashes.push(p.file_hash);
        }
        bar.set_position(p.files_done);
        if p.files_done % 256 == 0 || p.files_done == p.files_total {
            bar.set_message(format!("{} MiB", p.bytes_done >> 20));
        }
    })?;
    bar.finish_and_clear();
    Ok(match outcome {
        BuildOutcome::Complete(d) => Some(d),
        BuildOutcome::Stopped { cursor } => {
            cli_support::print::note(format!(
                "lineage: stopped after {cursor} of {total} files; checkpoint written, rerun with the same --checkpoint to resume"
            ));
            None
        }
    })
}

/// [`hash_dir`] for a prefix in object storage.
fn hash_remote(a: &SnapshotArgs, file_hashes: &mut Vec<Digest>) -> Result<DatasetDigest> {
    if a.checkpoint.is_some() {
        anyhow::bail!(
            "--checkpoint resumes a local walk by the files' inode and times, which objects do not have; it is not available for object storage"
        );
    }
    let url = a.dir.to_str().unwrap_or_default();
    let bar = cli_support::progress::items(0, "objects", "hashing");
    let tracing = a.trace.is_some();
    let digest = remote::hash_prefix(url, a.threads, usize::from(a.concurrency), &mut |p| {
        if tracing {
            file_hashes.push(p.file_hash);
        }
        bar.set_length(p.files_total);
        bar.set_position(p.files_done);
        if p.files_done % 256 == 0 || p.files_done == p.files_total {
            bar.set_message(format!("{} MiB", p.bytes_done >> 20));
        }
    })?;
    bar.finish_and_clear();
    Ok(digest)
}

/// Takes the snapshot of `a.dir`, writes its trace (`--trace`) and, with `cert`, its signed
/// execution certificate. `None` when stopped by --stop-after.
fn snapshot(a: &SnapshotArgs, cert: Option<&plan::CertificateArgs>) -> Result<Option<plan::Run>> {
    // Existing output files without --force, and a key file that does not open, are refused
    // before any byte is hashed.
    let trace = a
        .trace
        .as_deref()
        .map(|path| output::destination(path, a.force, Access::Shared, Content::Binary))
        .transpose()?;
    let certificate = cert
        .and_then(|c| c.certificate.as_deref())
        .map(|path| output::destination(path, a.force, Access::Shared, Content::Binary))
        .transpose()?;
    let key = cert
        .map(plan::CertificateArgs::signing_key)
        .transpose()?
        .flatten();
    let mut file_hashes = Vec::new();
    let result = snapshot_inner(a, &mut file_hashes);
    if let Some(trace) = trace {
        write_trace(trace, a, &result, &file_hashes)?;
    }
    let run = result?;
    if let (Some(run), Some(destination), Some(key)) = (&run, certificate, key) {
        plan::write_certificate(destination, run, &a.tenant, &a.run_id, &key)?;
    }
    Ok(run)
}

fn snapshot_inner(a: &SnapshotArgs, file_hashes: &mut Vec<Digest>) -> Result<Option<plan::Run>> {
    // 004 §6: validate the inputs before hashing any byte.
    let splits = load_splits(a.splits.as_deref())?;
    let transforms = match &a.transforms {
        Some(p) => TransformChain::from_json(&read_text(p)?)?,
        None => TransformChain::default(),
    };
    let inputs = SnapshotInputs::new(&a.tenant, &a.version, splits, transforms)?;
    let (sampler, overrides) = a.plan.resolve()?;
    let Some(data) = hash_dir(a, file_hashes)? else {
        return Ok(None);
    };
    let snapshot = build_snapshot(&inputs, &data)?;
    let plan = AccessPlan::new(&snapshot, &a.tenant, &a.run_id, &sampler, overrides);
    Ok(Some(plan::Run {
        snapshot,
        plan,
        replay_token: lineage::trace::replay_token(&a.tenant, &a.run_id),
    }))
}

/// Writes the run's trace (`lineage::trace::run_trace`). A run stopped by --stop-after writes
/// none; a failure that is not the contract's (I/O) leaves the trace empty.
fn write_trace(
    destination: Destination,
    a: &SnapshotArgs,
    result: &Result<Option<plan::Run>>,
    file_hashes: &[Digest],
) -> Result<()> {
    let outcome = match result {
        Ok(Some(run)) => Some(RunOutcome::Complete {
            snapshot: &run.snapshot,
            data_access_plan_hash: run.plan.hash,
        }),
        Ok(None) => return Ok(()),
        Err(e) => e.downcast_ref::<lineage::Error>().map(RunOutcome::Failed),
    };
    let out = outcome
        .map(|o| run_trace(o, file_hashes, &a.tenant, &a.run_id))
        .unwrap_or_default();
    let shown = destination.path().display().to_string();
    output_file::write(destination, |file| std::io::Write::write_all(file, &out))
        .with_context(|| format!("writing trace {shown}"))
}

/// The lineage report of a run (004 §6 step 4), as `(name, value)` pairs in printing order:
/// the snapshot's commitments, the access plan with its inputs, the replay token, the metrics.
fn report(run: &plan::Run) -> Vec<(&'static str, serde_json::Value)> {
    let (s, p) = (&run.snapshot, &run.plan);
    vec![
        ("dataset_root_hash", json!(s.dataset_root_hash.to_hex())),
        ("split_hashes", json!(s.split_hashes.to_hex())),
        (
            "transform_chain_hash",
            json!(s.transform_chain_hash.to_hex()),
        ),
        ("dataset_snapshot_id", json!(s.dataset_snapshot_id.to_hex())),
        ("lineage_root_hash", json!(s.lineage_root_hash.to_hex())),
        ("data_access_plan_hash", json!(p.hash.to_hex())),
        (
            "kernel_replay_token",
            json!(p.inputs.kernel_replay_token.to_hex()),
        ),
        ("manifest_hash", json!(p.inputs.manifest_hash.to_hex())),
        (
            "sampler_config_hash",
            json!(p.inputs.sampler_config_hash.to_hex()),
        ),
        ("replay_token", json!(run.replay_token.to_hex())),
        ("source_count", json!(s.metrics.source_count)),
        ("transform_count", json!(s.metrics.transform_count)),
        ("snapshot_size_bytes", json!(s.metrics.snapshot_size_bytes)),
    ]
}

/// `lineage split`: every sample with its split, in canonical sample order.
fn split(dir: &Path, unit: SampleUnit, splits: &Path, symlinks_as_target_path: bool) -> Result<()> {
    let defs = load_splits(Some(splits))?;
    let tree = walk(dir, policy(symlinks_as_target_path))?;
    let paths = tree.paths();
    let layout = match unit {
        SampleUnit::Records => {
            lineage::fs::sample_layout(&tree, &mut records::count_from_metadata)?
        }
        SampleUnit::Files => lineage::records::SampleLayout::new(paths.iter().map(|_| 1))?,
    };
    let assign = defs.assign(layout.total());
    let names: Vec<&str> = defs.entries().iter().map(|d| d.name.as_str()).collect();
    // A file is listed by record when it is record-oriented and samples are records.
    let by_record: Vec<bool> = paths
        .iter()
        .map(|p| {
            unit == SampleUnit::Records
                && lineage::records::RecordFormat::of_path(p.as_str()).is_some()
        })
        .collect();
    let samples = (0..layout.total()).filter_map(|sample| {
        let (file, record) = layout.locate(sample)?;
        let split = names[*assign.get(usize::try_from(sample).ok()?)?];
        Some((
            paths[file].as_str(),
            by_record[file].then_some(record),
            split,
        ))
    });
    if cli_support::run::mode().json {
        let rows: Vec<_> = samples
            .map(|(path, record, split)| match record {
                Some(record) => json!({"path": path, "record": record, "split": split}),
                None => json!({"path": path, "split": split}),
            })
            .collect();
        say!(
            "{}",
            json!({
                "split_hashes": defs.split_hashes().to_hex(),
                "samples": match unit { SampleUnit::Records => "records", SampleUnit::Files => "files" },
                "sample_count": layout.total(),
                "assignment": rows,
            })
        )?;
    } else {
        for (path, record, split) in samples {
            match record {
                Some(record) => say!("{}\t{}\t{record}", Safe(split), Safe(path))?,
                None => say!("{}\t{}", Safe(split), Safe(path))?,
            }
        }
    }
    Ok(())
}

fn run(cmd: Command) -> Result<Outcome> {
    match cmd {
        Command::Publish(a) => publish::run(&a).map(|()| Outcome::Done),
        Command::Show(a) => show::run(&a).map(|()| Outcome::Done),
        Command::Log(a) => log::run(&a).map(|()| Outcome::Done),
        Command::Diff(a) => diff::run(&a).map(|()| Outcome::Done),
        Command::Gc(a) => gc::run(&a).map(|()| Outcome::Done),
        Command::Snapshot { snap, cert } => {
            let Some(run) = snapshot(&snap, Some(&cert))? else {
                return Ok(Outcome::Stopped);
            };
            let report = report(&run);
            if cli_support::run::mode().json {
                let object: serde_json::Map<_, _> =
                    report.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
                say!("{}", serde_json::Value::Object(object))?;
            } else {
                for (k, v) in report {
                    match v {
                        serde_json::Value::String(text) => say!("{k:<22}{text}")?,
                        other => say!("{k:<22}{other}")?,
                    }
                }
            }
            Ok(Outcome::Done)
        }
        Command::VerifyCertificate(args) => {
            plan::verify_certificate(&args)?;
            Ok(Outcome::Done)
        }
        Command::Split {
            dir,
            samples,
            splits,
            symlinks_as_target_path,
        } => {
            split(&dir, samples, &splits, symlinks_as_target_path)?;
            Ok(Outcome::Done)
        }
        Command::Plan {
            kernel_replay_token,
            manifest_hash,
            dataset_key,
            sampler_config_hash,
        } => {
            let hex = |what: &str, s: &str| {
                Digest::from_hex(s).with_context(|| format!("--{what} must be 64 hex digits"))
            };
            let p = AccessPlanInputs {
                kernel_replay_token: hex("kernel-replay-token", &kernel_replay_token)?,
                manifest_hash: hex("manifest-hash", &manifest_hash)?,
                dataset_key: hex("dataset-key", &dataset_key)?,
                sampler_config_hash: hex("sampler-config-hash", &sampler_config_hash)?,
            };
            let h = data_access_plan_hash(&p);
            if cli_support::run::mode().json {
                say!("{}", json!({"data_access_plan_hash": h.to_hex()}))?;
            } else {
                say!("data_access_plan_hash {h}")?;
            }
            Ok(Outcome::Done)
        }
        Command::Verify { snap, expect } => {
            let expected = Digest::from_hex(&expect).context("--expect must be 64 hex digits")?;
            let Some(run) = snapshot(&snap, None)? else {
                return Ok(Outcome::Stopped);
            };
            let s = run.snapshot;
            lineage::snapshot::verify_snapshot_id(expected, &s)?;
            if cli_support::run::mode().json {
                say!(
                    "{}",
                    json!({"ok": true, "dataset_snapshot_id": s.dataset_snapshot_id.to_hex()})
                )?;
            } else {
                say!("OK {}", s.dataset_snapshot_id)?;
            }
            Ok(Outcome::Done)
        }
    }
}
