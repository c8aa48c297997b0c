//! The golden-vector driver shared by the tests (which compare every case's result with its
//! `expect`) and by the generator that rewrites the `expect` fields (`cargo xtask regenerate
//! lineage`, examples/regenerate_*_vectors.rs): the case format of
//! `tests/python/lineage/lineage_ref.py`, run through this crate.

use std::path::{Path, PathBuf};

use lineage::{
    AccessPlanInputs, Digest, Error, SnapshotInputs, SplitDefs, TransformChain, build_snapshot,
    data_access_plan_hash, dataset_root_hash,
};
use serde_json::{Value as Json, json};

pub(crate) fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Runs one case in the shared case format (see `tests/data/README.md`), exactly as the Python
/// reference does, and returns the result object (without `id`).
pub(crate) fn run_case(case: &Json) -> Json {
    match try_case(case) {
        Ok(v) => v,
        Err(e) => json!({"ok": false, "failure_code": e.failure_code().as_str()}),
    }
}

pub(crate) fn try_case(case: &Json) -> Result<Json, Error> {
    let splits = match case["splits_json"].as_str() {
        Some(t) => SplitDefs::from_json(t)?,
        None => SplitDefs::default(),
    };
    let transforms = match case["transforms_json"].as_str() {
        Some(t) => TransformChain::from_json(t)?,
        None => TransformChain::default(),
    };
    let inputs = SnapshotInputs::new(
        case["tenant_id"].as_str().unwrap_or_default(),
        case["version"].as_str().unwrap_or_default(),
        splits,
        transforms,
    )?;
    #[cfg(feature = "fs")]
    let dir = case["dir"].as_str();
    #[cfg(not(feature = "fs"))]
    let dir: Option<&str> = None;
    let data = if let Some(dir) = dir {
        #[cfg(feature = "fs")]
        {
            lineage::fs::dataset_root_hash_dir(Path::new(dir))?
        }
        #[cfg(not(feature = "fs"))]
        unreachable!("{dir}")
    } else {
        let files: Vec<(String, Vec<u8>)> = case["files"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| {
                let p = f[0].as_str().unwrap_or_default().to_owned();
                let b = hex::decode(f[1].as_str().unwrap_or_default()).unwrap_or_default();
                (p, b)
            })
            .collect();
        dataset_root_hash(files)?
    };
    let snap = build_snapshot(&inputs, &data)?;
    let names = inputs.splits.entries();
    let assignment: Vec<&str> = inputs
        .splits
        .assign(snap.metrics.source_count)
        .into_iter()
        .map(|i| names[i].name.as_str())
        .collect();
    let mut out = json!({
        "ok": true,
        "dataset_root_hash": snap.dataset_root_hash.to_hex(),
        "split_hashes": snap.split_hashes.to_hex(),
        "transform_chain_hash": snap.transform_chain_hash.to_hex(),
        "dataset_snapshot_id": snap.dataset_snapshot_id.to_hex(),
        "lineage_root_hash": snap.lineage_root_hash.to_hex(),
        "source_count": snap.metrics.source_count,
        "transform_count": snap.metrics.transform_count,
        "snapshot_size_bytes": snap.metrics.snapshot_size_bytes,
        "assignment": assignment,
    });
    if let Some(plan) = case.get("plan").filter(|p| !p.is_null()) {
        let h = |k: &str| Digest::from_hex(plan[k].as_str().unwrap_or_default());
        let p = AccessPlanInputs {
            kernel_replay_token: h("kernel_replay_token")?,
            manifest_hash: h("manifest_hash")?,
            dataset_key: snap.dataset_snapshot_id,
            sampler_config_hash: h("sampler_config_hash")?,
        };
        out["data_access_plan_hash"] = json!(data_access_plan_hash(&p).to_hex());
    }
    Ok(out)
}

pub(crate) fn golden_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .map(|rd| rd.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "json"));
    v.sort();
    v
}
