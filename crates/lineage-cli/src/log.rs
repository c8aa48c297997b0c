//! `lineage log DATASET`: the history of a dataset, oldest first.

use anyhow::Result;
use clap::Args;
use cli_support::say;
use cli_support::terminal::Safe;
use serde_json::Value as Json;

use crate::catalog::{CatalogArg, show_time, summary_json};

/// Arguments of `lineage log`.
#[derive(Args, Debug)]
pub(crate) struct LogArgs {
    /// The dataset's name in the catalog (as given to `lineage publish --dataset`).
    dataset: String,
    #[command(flatten)]
    catalog: CatalogArg,
}

/// Runs `lineage log`.
pub(crate) fn run(a: &LogArgs) -> Result<()> {
    let store = a.catalog.open_existing()?;
    let log = store.log(&a.dataset)?;
    if cli_support::run::mode().json {
        say!("{}", Json::Array(log.iter().map(summary_json).collect()))?;
        return Ok(());
    }
    for s in &log {
        say!(
            "{}  {}  {:<9}  {}  {} files  {} bytes  {}",
            s.snapshot_id,
            show_time(s.published_utc.unwrap_or(s.created_utc)),
            s.state.as_str(),
            Safe(&s.version),
            s.source_count,
            s.snapshot_size_bytes,
            Safe(&s.tenant_id),
        )?;
    }
    Ok(())
}
