//! Prints every intermediate encoding and hash of the worked example in `docs/lineage.md`
//! (`cargo run -p lineage --example worked_example`).
#![allow(clippy::print_stdout, reason = "an example that prints")]

use lineage::cbor::Value;
use lineage::hash::{node_hash, sha256};
use lineage::object::{LINEAGE_NODE_TAG, lineage_leaf_hash};
use lineage::snapshot::snapshot_lineage_objects;
use lineage::{
    AccessPlanInputs, Digest, RelPath, SnapshotInputs, SplitDefs, TransformChain, build_snapshot,
    data_access_plan_hash, dataset_root_hash,
};

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn main() -> Result<(), lineage::Error> {
    let files: [(&str, &[u8]); 3] = [
        ("d.txt", b"dog\n"),
        ("a.txt", b"hello"),
        ("b/c.bin", &[0, 1, 2]),
    ];
    let splits_json = r#"[{"split_name":"train","split_fraction":0.5,"split_seed":7},
                          {"split_name":"test","split_fraction":0.5,"split_seed":7}]"#;
    let transforms_json =
        r#"[{"seq":1,"op":"lowercase"},{"seq":0,"op":"dedupe","threshold":0.25}]"#;

    println!("## dataset_root_hash");
    let mut sorted = files;
    sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let mut leaves = Vec::new();
    for (p, bytes) in sorted {
        let fh = sha256(bytes);
        let pre = Value::Array(vec![
            Value::text("dataset_leaf_v1"),
            Value::text(p),
            fh.to_cbor(),
        ]);
        let enc = pre.to_canonical_bytes();
        let leaf = sha256(&enc);
        println!(
            "path {p}\n  file_hash {fh}\n  leaf preimage {}\n  leaf {leaf}",
            hex(&enc)
        );
        leaves.push(leaf);
    }
    let n01 = node_hash("dataset_node_v1", leaves[0], leaves[1]);
    let n22 = node_hash("dataset_node_v1", leaves[2], leaves[2]);
    let pre = Value::Array(vec![
        Value::text("dataset_node_v1"),
        leaves[0].to_cbor(),
        leaves[1].to_cbor(),
    ]);
    println!(
        "node(leaf0, leaf1) preimage {}\n  = {n01}",
        hex(&pre.to_canonical_bytes())
    );
    println!("node(leaf2, leaf2) = {n22}");
    let root = node_hash("dataset_node_v1", n01, n22);
    println!("root = node(n01, n22) = {root}");
    let data = dataset_root_hash(files)?;
    assert_eq!(data.root_hash, root);

    println!("\n## split_hashes");
    let splits = SplitDefs::from_json(splits_json)?;
    for s in splits.entries() {
        println!(
            "entry {} -> {}",
            s.name,
            hex(&s.to_cbor().to_canonical_bytes())
        );
    }
    print_list_commitment(
        "split_defs_v1",
        splits.entries().iter().map(lineage::SplitDef::to_cbor),
        "split_hashes",
        splits.split_hashes(),
    );
    for i in 0..3u64 {
        let pre = Value::Array(vec![Value::Unsigned(7), Value::Unsigned(i)]);
        println!(
            "shuffle_key(7, {i}) preimage {} = {}",
            hex(&pre.to_canonical_bytes()),
            lineage::split::shuffle_key(7, i)
        );
    }
    println!("counts(3) {:?}", splits.counts(3));
    let assign = splits.assign(3);
    for (p, s) in data.paths.iter().zip(&assign) {
        println!("  {} -> {}", p.as_str(), splits.entries()[*s].name);
    }

    println!("\n## transform_chain_hash");
    let chain = TransformChain::from_json(transforms_json)?;
    print_list_commitment(
        "transform_chain_v1",
        chain.transforms().iter().map(lineage::Transform::to_cbor),
        "transform_chain_hash",
        chain.transform_chain_hash(),
    );

    println!("\n## dataset_snapshot_id");
    let inputs = SnapshotInputs {
        tenant_id: "acme".into(),
        version: "v1".into(),
        splits: splits.clone(),
        transforms: chain.clone(),
    };
    let snap = build_snapshot(&inputs, &data)?;
    let pre = Value::Array(vec![
        Value::text("acme"),
        snap.dataset_root_hash.to_cbor(),
        snap.split_hashes.to_cbor(),
        snap.transform_chain_hash.to_cbor(),
        Value::text("v1"),
    ]);
    println!(
        "preimage {}\ndataset_snapshot_id {}",
        hex(&pre.to_canonical_bytes()),
        snap.dataset_snapshot_id
    );

    println!("\n## lineage_root_hash");
    let mut objs: Vec<_> = snapshot_lineage_objects(&inputs, data.root_hash)
        .into_iter()
        .map(|o| {
            (
                o.object_type.as_str(),
                o.object_id(),
                o.lineage_object_hash(),
                o,
            )
        })
        .collect();
    objs.sort_by(|a, b| (a.0.as_bytes(), a.1).cmp(&(b.0.as_bytes(), b.1)));
    let mut leaves = Vec::new();
    for (t, id, h, o) in &objs {
        let pre = Value::Array(vec![
            Value::text("lineage_object_v1"),
            Value::text(t),
            id.to_cbor(),
            o.payload.clone(),
        ]);
        let leaf = lineage_leaf_hash(o.object_type, *id, *h);
        println!(
            "{t} object_id {id}\n  lineage_object preimage {}\n  lineage_object_hash {h}\n  leaf {leaf}",
            hex(&pre.to_canonical_bytes())
        );
        leaves.push(leaf);
    }
    println!(
        "lineage_root_hash {} (check {})",
        snap.lineage_root_hash,
        lineage::hash::merkle_root(LINEAGE_NODE_TAG, &leaves).unwrap_or_default()
    );

    println!("\n## data_access_plan_hash");
    let plan = AccessPlanInputs {
        kernel_replay_token: sha256(b"kernel"),
        manifest_hash: sha256(b"manifest"),
        dataset_key: snap.dataset_snapshot_id,
        sampler_config_hash: sha256(b"sampler"),
    };
    let pre = Value::Array(vec![
        plan.kernel_replay_token.to_cbor(),
        plan.manifest_hash.to_cbor(),
        plan.dataset_key.to_cbor(),
        plan.sampler_config_hash.to_cbor(),
        Value::text("rank_contiguous_shard_v1"),
        Value::text("epoch_seed_rule_v2"),
    ]);
    println!(
        "preimage {}\ndata_access_plan_hash {}",
        hex(&pre.to_canonical_bytes()),
        data_access_plan_hash(&plan)
    );
    let _ = (RelPath::new("x")?, Digest::default());
    Ok(())
}

/// Prints the preimage `[tag, [items...]]` of a list commitment, then the commitment.
fn print_list_commitment(
    tag: &str,
    items: impl Iterator<Item = Value>,
    name: &str,
    commitment: lineage::Digest,
) {
    let pre = Value::Array(vec![Value::text(tag), Value::Array(items.collect())]);
    println!(
        "preimage {}\n{name} {commitment}",
        hex(&pre.to_canonical_bytes())
    );
}
