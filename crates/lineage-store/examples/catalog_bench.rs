//! Builds and collects a large lineage catalog, one phase per run, for `scripts/lineage-catalog-bench.sh`
//! (which measures each phase with `/usr/bin/time -v` and the catalog's size with `du`).
//!
//! ```text
//! catalog_bench publish DIR SNAPSHOTS FILES_PER_SNAPSHOT
//! catalog_bench objects DIR COUNT BATCH SNAPSHOTS FILES_PER_SNAPSHOT
//! catalog_bench gc DIR AT [dry-run]
//! ```
//!
//! `publish`: SNAPSHOTS snapshots of dataset `bench`, each of FILES_PER_SNAPSHOT files (recorded
//! by content hash; no file is read), cycling through four split sets and four transform chains;
//! odd snapshots are `ephemeral` and eligible from their index on, even ones `experimental` for
//! good. `objects`: COUNT artifacts in batches of BATCH, in chains of 10: a chain's first is
//! `experimental` for good and references a snapshot's root, each of the next 9 is `ephemeral`
//! (eligible from `index % 100`) and references the one before; every 1000th (a chain's last) is
//! pinned. So a GC keeps the chains' first objects, the pinned chains and the snapshots they
//! reach, and collects the rest of the chains. `gc`: one GC at
//! time AT.

#![allow(clippy::print_stderr, reason = "a benchmark that reports its timings")]

use std::path::Path;
use std::time::Instant;

use lineage::cbor::Value;
use lineage::hash::sha256;
use lineage::object::{LineageObject, ObjectRef, ObjectType};
use lineage::retention::{RetentionClass, RetentionMeta};
use lineage::{RelPath, SnapshotInputs, SplitDefs, TransformChain};
use lineage_store::{SnapshotRecord, SourceFile, Store};

type Failure = Box<dyn std::error::Error>;

fn arg<T: std::str::FromStr>(args: &[String], i: usize, what: &str) -> Result<T, Failure> {
    args.get(i)
        .and_then(|a| a.parse().ok())
        .ok_or_else(|| format!("argument {i} ({what}) missing or malformed").into())
}

fn variant(i: u64) -> Result<(SplitDefs, TransformChain), Failure> {
    let splits = SplitDefs::from_json(&format!(
        r#"[{{"split_name":"train","split_fraction":0.75,"split_seed":{}}},
            {{"split_name":"test","split_fraction":0.25,"split_seed":{}}}]"#,
        i % 4,
        i % 4
    ))?;
    let transforms = TransformChain::from_json(&format!(
        r#"[{{"seq":0,"op":"dedupe","v":{}}}]"#,
        (i / 4) % 4
    ))?;
    Ok((splits, transforms))
}

/// The root object of snapshot `i` (as `publish` made it).
fn root(i: u64, files: u64) -> Result<ObjectRef, Failure> {
    let (splits, transforms) = variant(i)?;
    let inputs = SnapshotInputs::new("bench", &format!("v{i}"), splits, transforms)?;
    let rec = record(inputs, i, files)?;
    Ok(ObjectRef {
        tenant_id: "bench".into(),
        object_type: ObjectType::Dataset,
        object_id: rec.snapshot_id(),
    })
}

fn record(inputs: SnapshotInputs, i: u64, files: u64) -> Result<SnapshotRecord, Failure> {
    let sources = (0..files)
        .map(|f| {
            Ok(SourceFile {
                path: RelPath::new(&format!("part-{f:05}.jsonl"))?,
                size_bytes: 1000 + f,
                content_hash: sha256(format!("{i}-{f}").as_bytes()),
            })
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    let retention = if i % 2 == 1 {
        RetentionMeta {
            retention_class: RetentionClass::Ephemeral,
            pin_root_refs: vec![],
            gc_eligible_after_utc: Some(i),
        }
    } else {
        RetentionMeta::default()
    };
    Ok(SnapshotRecord::new(
        "bench",
        inputs,
        sources,
        vec![],
        retention,
    )?)
}

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().collect();
    let phase: String = arg(&args, 1, "phase")?;
    let dir: String = arg(&args, 2, "DIR")?;
    let mut store = Store::open(Path::new(&dir))?;
    let start = Instant::now();
    match phase.as_str() {
        "publish" => {
            let n: u64 = arg(&args, 3, "SNAPSHOTS")?;
            let files: u64 = arg(&args, 4, "FILES_PER_SNAPSHOT")?;
            for i in 0..n {
                let (splits, transforms) = variant(i)?;
                let inputs = SnapshotInputs::new("bench", &format!("v{i}"), splits, transforms)?;
                store.publish(&record(inputs, i, files)?, i)?;
            }
            eprintln!("published {n} snapshots in {:.1?}", start.elapsed());
        }
        "objects" => {
            let n: u64 = arg(&args, 3, "COUNT")?;
            let batch: u64 = arg(&args, 4, "BATCH")?;
            let snapshots: u64 = arg(&args, 5, "SNAPSHOTS")?;
            let files: u64 = arg(&args, 6, "FILES_PER_SNAPSHOT")?;
            let mut previous: Option<ObjectRef> = None;
            let mut pending = Vec::new();
            let mut pins = Vec::new();
            for j in 0..n {
                let refs = match (&previous, j % 10) {
                    (Some(p), 1..) => vec![p.clone()],
                    _ => vec![root(j % snapshots.max(1), files)?],
                };
                let o = LineageObject {
                    tenant_id: "bench".into(),
                    object_type: ObjectType::Artifact,
                    payload: Value::Array(vec![Value::text("bench-artifact"), Value::Unsigned(j)]),
                    refs,
                };
                let meta = if j % 10 == 0 {
                    RetentionMeta::default()
                } else {
                    RetentionMeta {
                        retention_class: RetentionClass::Ephemeral,
                        pin_root_refs: vec![],
                        gc_eligible_after_utc: Some(j % 100),
                    }
                };
                previous = Some(o.as_ref_to());
                if j % 1000 == 999 {
                    pins.push(o.as_ref_to());
                }
                pending.push((o, meta));
                if pending.len() as u64 >= batch {
                    store.put_objects(&pending, 0)?;
                    pending.clear();
                }
            }
            store.put_objects(&pending, 0)?;
            for p in &pins {
                store.pin(p, "bench-release", 0)?;
            }
            eprintln!("stored {n} objects in {:.1?}", start.elapsed());
        }
        "gc" => {
            let at: u64 = arg(&args, 3, "AT")?;
            let dry = args.get(4).is_some_and(|a| a == "dry-run");
            let r = store.gc(at, dry)?;
            eprintln!(
                "gc{} at {at}: collected {} objects ({} bytes), {} snapshots, {} leftovers; kept {} in {:.1?}",
                if dry { " (dry run)" } else { "" },
                r.collected.len(),
                r.bytes_freed,
                r.snapshots_removed.len(),
                r.leftovers.len(),
                r.objects_kept,
                start.elapsed()
            );
        }
        other => return Err(format!("unknown phase {other:?}").into()),
    }
    Ok(())
}
