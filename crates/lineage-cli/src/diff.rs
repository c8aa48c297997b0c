//! `lineage diff ID1 ID2`: which files and splits changed from one snapshot to another.

use anyhow::Result;
use clap::Args;
use cli_support::say;
use cli_support::terminal::Safe;
use serde_json::{Value as Json, json};

use crate::catalog::{CatalogArg, resolve, source_json, split_json};

/// Arguments of `lineage diff`.
#[derive(Args, Debug)]
pub(crate) struct DiffArgs {
    /// The earlier snapshot (ID or unique prefix).
    from: String,
    /// The later snapshot (ID or unique prefix).
    to: String,
    #[command(flatten)]
    catalog: CatalogArg,
}

/// Runs `lineage diff`.
pub(crate) fn run(a: &DiffArgs) -> Result<()> {
    let store = a.catalog.open_existing()?;
    let from = resolve(&store, &a.from)?;
    let to = resolve(&store, &a.to)?;
    let d = store.diff(from, to)?;
    if cli_support::run::mode().json {
        let changed: Vec<Json> = d
            .files_changed
            .iter()
            .map(|c| json!({"path": c.after.path.as_str(), "before": source_json(&c.before), "after": source_json(&c.after)}))
            .collect();
        let splits_changed: Vec<Json> = d
            .splits_changed
            .iter()
            .map(|c| json!({"split_name": c.after.name, "before": split_json(&c.before), "after": split_json(&c.after)}))
            .collect();
        say!(
            "{}",
            json!({
                "from": d.from.snapshot_id.to_hex(),
                "to": d.to.snapshot_id.to_hex(),
                "files_added": d.files_added.iter().map(source_json).collect::<Vec<_>>(),
                "files_removed": d.files_removed.iter().map(source_json).collect::<Vec<_>>(),
                "files_changed": changed,
                "splits_added": d.splits_added.iter().map(split_json).collect::<Vec<_>>(),
                "splits_removed": d.splits_removed.iter().map(split_json).collect::<Vec<_>>(),
                "splits_changed": splits_changed,
                "transforms_changed": d.transforms_changed,
            })
        )?;
        return Ok(());
    }
    for f in &d.files_added {
        say!("A file  {}", Safe(f.path.as_str()))?;
    }
    for f in &d.files_removed {
        say!("D file  {}", Safe(f.path.as_str()))?;
    }
    for c in &d.files_changed {
        say!("M file  {}", Safe(c.after.path.as_str()))?;
    }
    for s in &d.splits_added {
        say!("A split {} {}", Safe(&s.name), s.fraction)?;
    }
    for s in &d.splits_removed {
        say!("D split {} {}", Safe(&s.name), s.fraction)?;
    }
    for c in &d.splits_changed {
        say!(
            "M split {} {} -> {}",
            Safe(&c.after.name),
            c.before.fraction,
            c.after.fraction
        )?;
    }
    if d.transforms_changed {
        say!(
            "M transforms {} -> {}",
            d.from.transform_chain_hash,
            d.to.transform_chain_hash
        )?;
    }
    Ok(())
}
