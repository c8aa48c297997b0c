//! `lineage publish`: record a snapshot in the catalog and publish it (immutable from then on).
//!
//! Its input is either a dataset directory with the inputs `lineage snapshot` takes, or a
//! snapshot's full JSON as `lineage show --json` prints it (`--from FILE`), whose commitments are
//! recomputed and must match.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use clap::Args;
use cli_support::say;
use cli_support::terminal::Safe;
use lineage::fs::{BuildOutcome, HashOptions, SymlinkPolicy, hash_tree, walk};
use lineage::retention::{RetentionClass, RetentionMeta};
use lineage::{Digest, RelPath, SnapshotInputs, SplitDefs, TransformChain};
use lineage_store::{PublishOutcome, SnapshotRecord, SourceFile};
use serde_json::{Value as Json, json};

use crate::catalog::{CatalogArg, now_utc, parse_time, summary_json};

/// Arguments of `lineage publish`.
#[derive(Args, Debug)]
pub(crate) struct PublishArgs {
    /// Dataset root directory (as for `lineage snapshot`). Not with --from.
    #[arg(required_unless_present = "from", conflicts_with = "from")]
    dir: Option<PathBuf>,
    /// Publish the snapshot described by FILE: the JSON `lineage show --json` prints (its
    /// sources, splits, transforms, tenant, version, dataset, retention and plan hashes). Its
    /// commitments are recomputed and must equal those in FILE.
    #[arg(long, value_name = "FILE")]
    from: Option<PathBuf>,
    /// The dataset's name in the catalog (`lineage log NAME`). Default: DIR's file name.
    #[arg(long)]
    dataset: Option<String>,
    /// tenant_id.
    #[arg(long, required_unless_present = "from")]
    tenant: Option<String>,
    /// dataset_version_or_tag (unique per tenant and dataset).
    #[arg(long, required_unless_present = "from")]
    version: Option<String>,
    /// JSON array of split entries (default: one split "all", fraction 1.0, no seed).
    #[arg(long, conflicts_with = "from")]
    splits: Option<PathBuf>,
    /// JSON array of transform objects, each with an integer "seq" (default: empty chain).
    #[arg(long, conflicts_with = "from")]
    transforms: Option<PathBuf>,
    /// A data_access_plan_hash to record with the snapshot (64 hex digits; repeatable).
    #[arg(long = "plan-hash", value_name = "HEX")]
    plan_hashes: Vec<String>,
    /// retention_class: golden, certified_release, experimental (default) or ephemeral.
    #[arg(long, value_parser = parse_class)]
    retention_class: Option<RetentionClass>,
    /// gc_eligible_after_utc: Unix seconds or an RFC 3339 time (2027-01-31T00:00:00Z).
    #[arg(long, value_parser = parse_time)]
    gc_eligible_after: Option<u64>,
    /// Hashing threads (default: all cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// Treat symlinks as files holding their target path instead of failing.
    #[arg(long)]
    symlinks_as_target_path: bool,
    #[command(flatten)]
    catalog: CatalogArg,
}

fn parse_class(s: &str) -> Result<RetentionClass, String> {
    RetentionClass::parse(s).map_err(|e| e.to_string())
}

fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

fn plan_hashes(given: &[String]) -> Result<Vec<Digest>> {
    given
        .iter()
        .map(|h| Digest::from_hex(h).context("--plan-hash must be 64 hex digits"))
        .collect()
}

/// Hashes DIR and returns its files with their sizes and content hashes, in path order.
fn hash_sources(dir: &Path, threads: usize, as_target: bool) -> Result<Vec<SourceFile>> {
    let policy = if as_target {
        SymlinkPolicy::HashTargetPath
    } else {
        SymlinkPolicy::Refuse
    };
    let tree = walk(dir, policy)?;
    let paths = tree.paths();
    let total = u64::try_from(tree.len()).unwrap_or(u64::MAX);
    let bar = cli_support::progress::items(total, "files", "hashing");
    let mut hashes: Vec<(Digest, u64)> = Vec::with_capacity(paths.len());
    let mut bytes_before = 0u64;
    let opts = HashOptions {
        threads,
        ..HashOptions::default()
    };
    // Progress comes in path order from one thread; each file's size is the growth of
    // bytes_done it brings.
    let outcome = hash_tree(&tree, &opts, &mut |p| {
        hashes.push((p.file_hash, p.bytes_done.saturating_sub(bytes_before)));
        bytes_before = p.bytes_done;
        bar.set_position(p.files_done);
    })?;
    bar.finish_and_clear();
    if !matches!(outcome, BuildOutcome::Complete(_)) || hashes.len() != paths.len() {
        bail!(
            "IO: {}: the dataset was not hashed completely",
            dir.display()
        );
    }
    Ok(paths
        .into_iter()
        .zip(hashes)
        .map(|(path, (content_hash, size_bytes))| SourceFile {
            path,
            size_bytes,
            content_hash,
        })
        .collect())
}

fn record_from_dir(a: &PublishArgs, dir: &Path) -> Result<SnapshotRecord> {
    // 004 §6: inputs validated before any byte is hashed.
    let splits = match &a.splits {
        Some(p) => SplitDefs::from_json(&read_text(p)?)?,
        None => SplitDefs::default(),
    };
    let transforms = match &a.transforms {
        Some(p) => TransformChain::from_json(&read_text(p)?)?,
        None => TransformChain::default(),
    };
    let (Some(tenant), Some(version)) = (&a.tenant, &a.version) else {
        bail!("Usage: --tenant and --version are required with DIR");
    };
    let inputs = SnapshotInputs::new(tenant, version, splits, transforms)?;
    let dataset = match &a.dataset {
        Some(d) => d.clone(),
        None => dir
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().and_then(|n| n.to_str()).map(str::to_owned))
            .context("Usage: cannot name the dataset after DIR; pass --dataset NAME")?,
    };
    let retention = RetentionMeta {
        retention_class: a.retention_class.unwrap_or_default(),
        pin_root_refs: vec![],
        gc_eligible_after_utc: a.gc_eligible_after,
    };
    let sources = hash_sources(dir, a.threads, a.symlinks_as_target_path)?;
    Ok(SnapshotRecord::new(
        &dataset,
        inputs,
        sources,
        plan_hashes(&a.plan_hashes)?,
        retention,
    )?)
}

fn text<'a>(v: &'a Json, key: &str) -> Result<&'a str> {
    v.get(key)
        .and_then(Json::as_str)
        .with_context(|| format!("INVALID_JSON: `{key}` must be a string"))
}

fn array<'a>(v: &'a Json, key: &str) -> Result<&'a [Json]> {
    v.get(key)
        .and_then(Json::as_array)
        .map(Vec::as_slice)
        .with_context(|| format!("INVALID_JSON: `{key}` must be an array"))
}

/// The record a `lineage show --json` document describes; flags given on the command line
/// (dataset, tenant, version, plan hashes, retention) override or add to it.
fn record_from_json(a: &PublishArgs, path: &Path) -> Result<SnapshotRecord> {
    let v: Json = serde_json::from_str(&read_text(path)?)
        .with_context(|| format!("INVALID_JSON: {}", path.display()))?;
    let tenant = a
        .tenant
        .as_deref()
        .map_or_else(|| text(&v, "tenant_id"), Ok)?;
    let version = a
        .version
        .as_deref()
        .map_or_else(|| text(&v, "version"), Ok)?;
    let dataset = a
        .dataset
        .as_deref()
        .map_or_else(|| text(&v, "dataset"), Ok)?;
    // Splits and transforms go through the same strict readers as files given with --splits.
    let splits = SplitDefs::from_json(&Json::Array(array(&v, "splits")?.to_vec()).to_string())?;
    let transforms =
        TransformChain::from_json(&Json::Array(array(&v, "transforms")?.to_vec()).to_string())?;
    let mut sources = Vec::new();
    for s in array(&v, "sources")? {
        sources.push(SourceFile {
            path: RelPath::new(text(s, "path")?)?,
            size_bytes: s
                .get("size_bytes")
                .and_then(Json::as_u64)
                .context("INVALID_JSON: a source's `size_bytes` must be an unsigned integer")?,
            content_hash: Digest::from_hex(text(s, "content_hash")?)?,
        });
    }
    let mut plans = plan_hashes(&a.plan_hashes)?;
    if let Some(given) = v.get("plan_hashes").and_then(Json::as_array) {
        for h in given {
            let h = h
                .as_str()
                .context("INVALID_JSON: `plan_hashes` must hold strings")?;
            plans.push(Digest::from_hex(h)?);
        }
    }
    let retention_json = v.get("retention");
    let class = match (
        a.retention_class,
        retention_json.and_then(|r| r.get("retention_class")),
    ) {
        (Some(c), _) => c,
        (None, Some(Json::String(c))) => RetentionClass::parse(c)?,
        (None, _) => RetentionClass::default(),
    };
    let after = a.gc_eligible_after.or_else(|| {
        retention_json
            .and_then(|r| r.get("gc_eligible_after_utc"))
            .and_then(Json::as_u64)
    });
    let inputs = SnapshotInputs::new(tenant, version, splits, transforms)?;
    let record = SnapshotRecord::new(
        dataset,
        inputs,
        sources,
        plans,
        RetentionMeta {
            retention_class: class,
            pin_root_refs: vec![],
            gc_eligible_after_utc: after,
        },
    )?;
    // 004 §0.K: abort on a snapshot hash mismatch.
    let s = record.snapshot();
    for (key, computed) in [
        ("dataset_snapshot_id", s.dataset_snapshot_id),
        ("dataset_root_hash", s.dataset_root_hash),
        ("split_hashes", s.split_hashes),
        ("transform_chain_hash", s.transform_chain_hash),
        ("lineage_root_hash", s.lineage_root_hash),
    ] {
        if let Some(given) = v.get(key).and_then(Json::as_str) {
            let expected = Digest::from_hex(given)?;
            if expected != computed {
                return Err(lineage::Error::SnapshotHashMismatch {
                    expected,
                    found: computed,
                })
                .with_context(|| format!("{}: `{key}`", path.display()));
            }
        }
    }
    Ok(record)
}

/// Runs `lineage publish`.
pub(crate) fn run(a: &PublishArgs) -> Result<()> {
    let record = match (&a.from, &a.dir) {
        (Some(from), _) => record_from_json(a, from)?,
        (None, Some(dir)) => record_from_dir(a, dir)?,
        (None, None) => bail!("Usage: give DIR or --from FILE"),
    };
    let mut store = a.catalog.open()?;
    let outcome = store.publish(&record, now_utc())?;
    let summary = store.summary(record.snapshot_id())?;
    let already = outcome == PublishOutcome::AlreadyPublished;
    if cli_support::run::mode().json {
        let mut v = summary_json(&summary);
        if let Json::Object(m) = &mut v {
            m.insert("ok".into(), json!(true));
            m.insert("already_published".into(), json!(already));
            m.insert(
                "catalog".into(),
                json!(a.catalog.catalog.display().to_string()),
            );
        }
        say!("{v}")?;
    } else {
        say!(
            "{} {} {}/{} {}",
            if already {
                "already published"
            } else {
                "published"
            },
            summary.snapshot_id,
            Safe(&summary.tenant_id),
            Safe(&summary.dataset_name),
            Safe(&summary.version)
        )?;
    }
    Ok(())
}
