//! What the catalog commands (`publish`, `show`, `log`, `diff`, `gc`) share: the `--catalog`
//! option, times, and the JSON forms of snapshots.

use std::path::PathBuf;

use anyhow::{Context as _, Result, bail};
use clap::Args;
use lineage::cbor::Value;
use lineage::retention::RetentionMeta;
use lineage::{Digest, SplitDef};
use lineage_store::store::CATALOG_FILE;
use lineage_store::{SnapshotEntry, SnapshotSummary, SourceFile, Store};
use serde_json::{Value as Json, json};

/// `--catalog DIR`.
#[derive(Args, Debug, Clone)]
pub(crate) struct CatalogArg {
    /// The catalog directory (SQLite catalog and object store; `publish` creates it).
    #[arg(
        long,
        value_name = "DIR",
        env = "LINEAGE_CATALOG",
        default_value = ".lineage"
    )]
    pub(crate) catalog: PathBuf,
}

impl CatalogArg {
    /// Opens the catalog, creating it if needed (for commands that write).
    pub(crate) fn open(&self) -> Result<Store> {
        Ok(Store::open(&self.catalog)?)
    }

    /// Opens an existing catalog (for commands that only read: nothing is created).
    pub(crate) fn open_existing(&self) -> Result<Store> {
        if !self.catalog.join(CATALOG_FILE).is_file() {
            bail!(
                "IO: {}: no lineage catalog here (`lineage publish` creates one; pass --catalog DIR or set LINEAGE_CATALOG)",
                self.catalog.display()
            );
        }
        self.open()
    }
}

/// The current time, Unix seconds.
pub(crate) fn now_utc() -> u64 {
    jiff::Timestamp::now().as_second().try_into().unwrap_or(0)
}

/// Unix seconds, or an RFC 3339 time (`2027-01-31T00:00:00Z`).
pub(crate) fn parse_time(s: &str) -> Result<u64, String> {
    if let Ok(n) = s.parse::<u64>() {
        return Ok(n);
    }
    let t: jiff::Timestamp = s
        .parse()
        .map_err(|e| format!("expected Unix seconds or an RFC 3339 time: {e}"))?;
    u64::try_from(t.as_second()).map_err(|_| "a time before 1970".to_owned())
}

/// An RFC 3339 rendering of Unix seconds, for people.
pub(crate) fn show_time(t: u64) -> String {
    i64::try_from(t)
        .ok()
        .and_then(|s| jiff::Timestamp::from_second(s).ok())
        .map_or_else(|| t.to_string(), |ts| ts.to_string())
}

/// Resolves an ID or unique prefix given on the command line.
pub(crate) fn resolve(store: &Store, given: &str) -> Result<Digest> {
    Ok(store.resolve_snapshot(given)?)
}

fn retention_json(m: &RetentionMeta) -> Json {
    json!({
        "retention_class": m.retention_class.as_str(),
        "gc_eligible_after_utc": m.gc_eligible_after_utc,
    })
}

/// A catalog row as JSON.
pub(crate) fn summary_json(s: &SnapshotSummary) -> Json {
    json!({
        "dataset_snapshot_id": s.snapshot_id.to_hex(),
        "tenant_id": s.tenant_id,
        "dataset": s.dataset_name,
        "version": s.version,
        "state": s.state.as_str(),
        "created_utc": s.created_utc,
        "published_utc": s.published_utc,
        "dataset_root_hash": s.dataset_root_hash.to_hex(),
        "split_hashes": s.split_hashes.to_hex(),
        "transform_chain_hash": s.transform_chain_hash.to_hex(),
        "lineage_root_hash": s.lineage_root_hash.to_hex(),
        "source_count": s.source_count,
        "transform_count": s.transform_count,
        "snapshot_size_bytes": s.snapshot_size_bytes,
        "retention": retention_json(&s.retention),
    })
}

pub(crate) fn source_json(f: &SourceFile) -> Json {
    json!({
        "path": f.path.as_str(),
        "size_bytes": f.size_bytes,
        "content_hash": f.content_hash.to_hex(),
    })
}

pub(crate) fn split_json(d: &SplitDef) -> Json {
    let mut m = serde_json::Map::new();
    m.insert("split_name".into(), json!(d.name));
    m.insert("split_fraction".into(), json!(d.fraction));
    if let Some(seed) = d.seed {
        m.insert("split_seed".into(), json!(seed));
    }
    Json::Object(m)
}

/// A CBOR value read from the catalog (a transform body, which came from JSON) as JSON.
pub(crate) fn cbor_json(v: &Value) -> Result<Json> {
    Ok(match v {
        Value::Unsigned(n) => json!(n),
        Value::Negative(n) => {
            let i = i64::try_from(*n)
                .ok()
                .and_then(|n| (-1i64).checked_sub(n))
                .context("INVALID_ARGUMENT: an integer below -2^63 has no JSON form here")?;
            json!(i)
        }
        Value::Bytes(b) => json!(b.iter().map(|x| format!("{x:02x}")).collect::<String>()),
        Value::Text(s) => json!(s),
        Value::Array(items) => Json::Array(items.iter().map(cbor_json).collect::<Result<_>>()?),
        Value::Map(m) => Json::Object(
            m.iter()
                .map(|(k, v)| Ok((k.clone(), cbor_json(v)?)))
                .collect::<Result<_>>()?,
        ),
        Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(Json::Number)
            .context("NON_FINITE: a transform holds a non-finite number")?,
        Value::Bool(b) => json!(b),
        Value::Null => Json::Null,
    })
}

/// Everything recorded about a snapshot as JSON: what `lineage show --json` prints and what
/// `lineage publish --from` reads back.
pub(crate) fn entry_json(e: &SnapshotEntry) -> Result<Json> {
    let mut v = summary_json(&e.summary);
    let transforms = e
        .transforms
        .iter()
        .map(|t| cbor_json(&t.body))
        .collect::<Result<Vec<_>>>()?;
    if let Json::Object(m) = &mut v {
        m.insert(
            "sources".into(),
            Json::Array(e.sources.iter().map(source_json).collect()),
        );
        m.insert(
            "splits".into(),
            Json::Array(e.splits.iter().map(split_json).collect()),
        );
        m.insert("transforms".into(), Json::Array(transforms));
        m.insert(
            "plan_hashes".into(),
            Json::Array(e.plan_hashes.iter().map(|h| json!(h.to_hex())).collect()),
        );
    }
    Ok(v)
}
