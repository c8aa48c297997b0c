//! The golden-vector driver shared by the tests (which compare every case's result with its
//! `expect`) and by the generator that rewrites the `expect` fields (`cargo xtask regenerate
//! lineage`, examples/regenerate_*_vectors.rs): the case format of
//! `tests/python/lineage/lineage_ref.py`, run through this crate.

use std::path::{Path, PathBuf};

use lineage::certificate::CertificatePayload;
use lineage::plan::{AccessPlan, PlanOverrides, SamplerConfig};
use lineage::trace::{RunOutcome, replay_token, run_trace};
use lineage::{
    AccessPlanInputs, Digest, Error, Snapshot, SnapshotInputs, SplitDefs, TransformChain,
    build_snapshot, data_access_plan_hash, dataset_root_hash,
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
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    let data = if let Some(dir) = dir {
        #[cfg(feature = "fs")]
        {
            lineage::fs::dataset_root_hash_dir(Path::new(dir))?
        }
        #[cfg(not(feature = "fs"))]
        unreachable!("{dir}")
    } else {
        files = case["files"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|f| {
                let p = f[0].as_str().unwrap_or_default().to_owned();
                let b = hex::decode(f[1].as_str().unwrap_or_default()).unwrap_or_default();
                (p, b)
            })
            .collect();
        dataset_root_hash(files.clone())?
    };
    let snap = build_snapshot(&inputs, &data)?;
    let names = inputs.splits.entries();
    let by_records = case["samples"].as_str() == Some("records");
    let counts = if by_records {
        Some(sample_counts(&data.paths, &files)?)
    } else {
        None
    };
    let total = counts
        .as_ref()
        .map_or(snap.metrics.source_count, |c| c.iter().sum());
    let assignment: Vec<&str> = inputs
        .splits
        .assign(total)
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
    if let Some(counts) = counts {
        out["sample_counts"] = json!(counts);
    }
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
    if let Some(run) = case.get("run").filter(|r| !r.is_null() && dir.is_none()) {
        out["run"] = run_outputs(run, &inputs.tenant_id, &snap, &files)?;
    }
    Ok(out)
}

/// Samples per file in canonical order (the case's files, in memory): the records of the text
/// formats this crate counts, one for any other file. Parquet and `.ald` vectors live with the
/// CLI that counts them (`crates/lineage-cli/tests/data`).
fn sample_counts(
    paths: &[lineage::RelPath],
    files: &[(String, Vec<u8>)],
) -> Result<Vec<u64>, Error> {
    paths
        .iter()
        .map(|path| {
            let Some(format) = lineage::records::RecordFormat::of_path(path.as_str()) else {
                return Ok(1);
            };
            let bytes = files
                .iter()
                .find(|(p, _)| p == path.as_str())
                .map(|(_, b)| b.as_slice())
                .unwrap_or_default();
            format
                .counter()
                .map(|c| c.count(bytes))
                .ok_or_else(|| Error::RecordSource {
                    path: path.as_str().to_owned(),
                    format: format.as_str(),
                    reason: "counted by the lineage CLI, not in these vectors".to_owned(),
                })
        })
        .collect()
}

/// The outputs of a complete run over the case's files (the `run` result of the case format):
/// replay token, sampler configuration hash, the default access plan, the trace, and the bytes
/// an execution certificate signs.
fn run_outputs(
    run: &Json,
    tenant: &str,
    snap: &Snapshot,
    files: &[(String, Vec<u8>)],
) -> Result<Json, Error> {
    let run_id = run["run_id"].as_str().unwrap_or_default();
    let sampler = match run["sampler_config_json"].as_str() {
        Some(text) => SamplerConfig::from_json(text)?,
        None => SamplerConfig::default(),
    };
    let plan = AccessPlan::new(snap, tenant, run_id, &sampler, PlanOverrides::default());
    let token = replay_token(tenant, run_id);
    // Every file hashed in this run, in canonical (sample_index) order: UTF-8 byte order of
    // the paths, which str's Ord is.
    let mut sorted: Vec<&(String, Vec<u8>)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let hashes: Vec<Digest> = sorted
        .iter()
        .map(|(_, bytes)| lineage::hash::sha256(bytes))
        .collect();
    let complete = RunOutcome::Complete {
        snapshot: snap,
        data_access_plan_hash: plan.hash,
    };
    let payload = CertificatePayload {
        tenant_id: tenant.to_owned(),
        run_id: run_id.to_owned(),
        replay_token: token,
        dataset_snapshot_id: snap.dataset_snapshot_id,
        data_access_plan_hash: plan.hash,
        lineage_root_hash: snap.lineage_root_hash,
    };
    Ok(json!({
        "replay_token": token.to_hex(),
        "sampler_config_hash": plan.inputs.sampler_config_hash.to_hex(),
        "data_access_plan_hash": plan.hash.to_hex(),
        "trace": hex::encode(run_trace(complete, &hashes, tenant, run_id)),
        "certificate_message": hex::encode(payload.signed_message()),
    }))
}

pub(crate) fn golden_files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .map(|rd| rd.filter_map(Result::ok).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == "json"));
    v.sort();
    v
}
