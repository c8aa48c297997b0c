//! `lineage show ID`: everything the catalog records about a snapshot.

use anyhow::Result;
use clap::Args;
use cli_support::say;
use cli_support::terminal::Safe;

use crate::catalog::{CatalogArg, entry_json, resolve, show_time};

/// Arguments of `lineage show`.
#[derive(Args, Debug)]
pub(crate) struct ShowArgs {
    /// The dataset_snapshot_id (or a unique prefix of at least 4 hex digits).
    id: String,
    /// Also list every file (text output; `--json` always lists them).
    #[arg(long)]
    files: bool,
    #[command(flatten)]
    catalog: CatalogArg,
}

/// Runs `lineage show`.
pub(crate) fn run(a: &ShowArgs) -> Result<()> {
    let store = a.catalog.open_existing()?;
    let id = resolve(&store, &a.id)?;
    let e = store.snapshot(id)?;
    if cli_support::run::mode().json {
        say!("{}", entry_json(&e)?)?;
        return Ok(());
    }
    let s = &e.summary;
    let published = s.published_utc.map_or_else(|| "-".to_owned(), show_time);
    let after = s
        .retention
        .gc_eligible_after_utc
        .map_or_else(|| "-".to_owned(), show_time);
    for (k, v) in [
        ("dataset_snapshot_id", s.snapshot_id.to_hex()),
        ("tenant_id", Safe(&s.tenant_id).to_string()),
        ("dataset", Safe(&s.dataset_name).to_string()),
        ("version", Safe(&s.version).to_string()),
        ("state", s.state.as_str().to_owned()),
        ("created", show_time(s.created_utc)),
        ("published", published),
        (
            "retention_class",
            s.retention.retention_class.as_str().to_owned(),
        ),
        ("gc_eligible_after", after),
        ("dataset_root_hash", s.dataset_root_hash.to_hex()),
        ("split_hashes", s.split_hashes.to_hex()),
        ("transform_chain_hash", s.transform_chain_hash.to_hex()),
        ("lineage_root_hash", s.lineage_root_hash.to_hex()),
        ("source_count", s.source_count.to_string()),
        ("transform_count", s.transform_count.to_string()),
        ("snapshot_size_bytes", s.snapshot_size_bytes.to_string()),
    ] {
        say!("{k:<22}{v}")?;
    }
    for d in &e.splits {
        let seed = d.seed.map_or_else(String::new, |s| format!(" seed {s}"));
        say!(
            "split                 {} {}{seed}",
            Safe(&d.name),
            d.fraction
        )?;
    }
    for t in &e.transforms {
        say!("transform             seq {} {}", t.seq, t.object_id)?;
    }
    for p in &e.plan_hashes {
        say!("data_access_plan_hash {p}")?;
    }
    if a.files {
        for f in &e.sources {
            say!(
                "{}  {:>12}  {}",
                f.content_hash,
                f.size_bytes,
                Safe(f.path.as_str())
            )?;
        }
    }
    Ok(())
}
