//! `lineage gc [--dry-run]`: delete the objects retention lets go (docs/lineage.md §16).

use anyhow::Result;
use clap::Args;
use cli_support::say;
use cli_support::terminal::Safe;
use serde_json::json;

use crate::catalog::{CatalogArg, now_utc, parse_time};

/// Arguments of `lineage gc`.
#[derive(Args, Debug)]
pub(crate) struct GcArgs {
    /// Report what would be collected; delete nothing.
    #[arg(long)]
    dry_run: bool,
    /// Judge retention as of this time (Unix seconds or RFC 3339) instead of now.
    #[arg(long, value_parser = parse_time)]
    at: Option<u64>,
    #[command(flatten)]
    catalog: CatalogArg,
}

/// Runs `lineage gc`.
pub(crate) fn run(a: &GcArgs) -> Result<()> {
    let mut store = a.catalog.open_existing()?;
    let r = store.gc(a.at.unwrap_or_else(now_utc), a.dry_run)?;
    if cli_support::run::mode().json {
        let collected: Vec<_> = r
            .collected
            .iter()
            .map(|c| {
                json!({
                    "tenant_id": c.object.tenant_id,
                    "object_type": c.object.object_type.as_str(),
                    "object_id": c.object.object_id.to_hex(),
                    "size_bytes": c.size_bytes,
                })
            })
            .collect();
        say!(
            "{}",
            json!({
                "dry_run": r.dry_run,
                "now_utc": r.now_utc,
                "collected": collected,
                "snapshots_removed": r.snapshots_removed.iter().map(|d| d.to_hex()).collect::<Vec<_>>(),
                "leftovers": r.leftovers,
                "objects_kept": r.objects_kept,
                "bytes_freed": r.bytes_freed,
            })
        )?;
        return Ok(());
    }
    let verb = if r.dry_run {
        "would collect"
    } else {
        "collected"
    };
    for c in &r.collected {
        say!(
            "{verb} {} {} {}",
            Safe(&c.object.tenant_id),
            c.object.object_type.as_str(),
            c.object.object_id
        )?;
    }
    for s in &r.snapshots_removed {
        say!("{verb} snapshot {s}")?;
    }
    for k in &r.leftovers {
        say!("{verb} leftover {}", Safe(k))?;
    }
    say!(
        "{verb} {} objects ({} bytes), {} snapshots, {} leftovers; kept {} objects",
        r.collected.len(),
        r.bytes_freed,
        r.snapshots_removed.len(),
        r.leftovers.len(),
        r.objects_kept
    )?;
    Ok(())
}
