//! Integration tests: golden vectors (`tests/data/`), the Python interop check, property tests,
//! and the filesystem walker with checkpoint/resume.

mod fuzz_check;
mod vectors;

use std::path::{Path, PathBuf};

use vectors::{data_dir, golden_files, run_case};

#[cfg(feature = "fs")]
use lineage::fs::{BuildOutcome, HashOptions, SymlinkPolicy, hash_tree, walk};
use lineage::{
    Digest, Error, SnapshotInputs, SplitDefs, TransformChain, build_snapshot, dataset_root_hash,
};
use proptest::prelude::*;
use serde_json::{Value as Json, json};

/// Table-driven check of every vector; `cargo xtask regenerate lineage` rewrites the `expect`
/// fields (then confirm them with the Python reference before checking in).
#[test]
fn golden_vectors_match_including_fail_cases() {
    let files = golden_files();
    assert!(
        files.len() >= 8,
        "golden vectors missing in {}",
        data_dir().display()
    );
    for path in files {
        let text = std::fs::read_to_string(&path).expect("read vector");
        let vector: Json = serde_json::from_str(&text).expect("vector is JSON");
        let got = run_case(&vector["input"]);
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        assert_eq!(
            name.starts_with("fail_"),
            got["ok"] == json!(false),
            "{name}: fail_ prefix must match a failing case, got {got}"
        );
        assert_eq!(got, vector["expect"], "{name}");
    }
}

/// SplitMix64: a tiny deterministic generator for the interop cases (test-only).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = usize::try_from(self.below(u64::try_from(i + 1).unwrap_or(1))).unwrap_or(0);
            v.swap(i, j);
        }
    }
}

const SEGMENTS: &[&str] = &[
    "a",
    "b",
    "train",
    "Z",
    "ü",
    "水",
    "x.txt",
    "data-01.bin",
    "A B",
    ".hidden",
    "a..b",
    "😀",
];
const FLOATS: &[&str] = &[
    "0.5",
    "0.1",
    "1.5",
    "65504.0",
    "32768.0",
    "65472.0",
    "1e-7",
    "5.960464477539063e-08",
    "-0.0",
    "1e300",
    "3.4028234663852886e+38",
    "100000.0",
    "-4.1",
    "2.5e-5",
    "0.3333333333333333",
];
const INTS: &[&str] = &[
    "0",
    "1",
    "23",
    "24",
    "255",
    "256",
    "65535",
    "65536",
    "4294967296",
    "18446744073709551615",
    "-1",
    "-24",
    "-25",
    "-18446744073709551616",
];

fn gen_value(r: &mut Rng, depth: u32) -> String {
    let pick = |r: &mut Rng, xs: &[&str]| {
        xs[usize::try_from(r.below(xs.len() as u64)).unwrap_or(0)].to_owned()
    };
    match r.below(if depth > 1 { 5 } else { 7 }) {
        0 => pick(r, FLOATS),
        1 => pick(r, INTS),
        2 => format!("\"{}\"", pick(r, SEGMENTS)),
        3 => ["true", "false", "null"][usize::try_from(r.below(3)).unwrap_or(0)].to_owned(),
        4 => format!("\"s{}\"", r.below(1000)),
        5 => {
            let n = r.below(3);
            let items: Vec<String> = (0..n).map(|_| gen_value(r, depth + 1)).collect();
            format!("[{}]", items.join(","))
        }
        _ => {
            let n = r.below(3);
            let items: Vec<String> = (0..n)
                .map(|i| format!("\"k{i}{}\":{}", r.below(50), gen_value(r, depth + 1)))
                .collect();
            format!("{{{}}}", items.join(","))
        }
    }
}

/// One random case and a permuted twin (files, split entries, transforms and object keys in
/// another order), which must give identical commitments.
fn gen_case(r: &mut Rng, id: usize) -> (Json, Json) {
    let nfiles = 1 + r.below(12);
    let mut files = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    while files.len() < usize::try_from(nfiles).unwrap_or(1) {
        let depth = 1 + r.below(3);
        let segs: Vec<&str> = (0..depth)
            .map(|_| SEGMENTS[usize::try_from(r.below(SEGMENTS.len() as u64)).unwrap_or(0)])
            .collect();
        let path = segs.join("/");
        // A path may not also be a directory prefix of another (as on a real filesystem it
        // could not); harmless here, kept anyway for realism.
        if !seen.insert(path.clone()) {
            continue;
        }
        let len = usize::try_from(r.below(64)).unwrap_or(0);
        let bytes: Vec<u8> = (0..len)
            .map(|_| u8::try_from(r.below(256)).unwrap_or(0))
            .collect();
        files.push(json!([path, hex::encode(bytes)]));
    }
    let splits = if r.below(4) == 0 {
        None
    } else {
        let n = 1 + r.below(4);
        let den = [10u64, 3, 7, 100, 1000][usize::try_from(r.below(5)).unwrap_or(0)];
        let mut parts: Vec<u64> = (0..n).map(|_| r.below(den + 1)).collect();
        let sum: u64 = parts.iter().sum();
        // Force the parts to sum to den: give the slack to the last part.
        if sum > den {
            parts = vec![0; usize::try_from(n).unwrap_or(1)];
        }
        let s: u64 = parts.iter().take(parts.len() - 1).sum();
        let last = parts.len() - 1;
        parts[last] = den - s.min(den);
        let seed = match r.below(3) {
            0 => None,
            1 => Some(r.below(100)),
            _ => Some(r.next()),
        };
        #[expect(clippy::cast_precision_loss, reason = "small test numbers")]
        let entries: Vec<String> = parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let frac = *p as f64 / den as f64;
                let seed = seed
                    .map(|s| format!(",\"split_seed\":{s}"))
                    .unwrap_or_default();
                format!(
                    "{{\"split_name\":\"{}{i}\",\"split_fraction\":{frac:?}{seed}}}",
                    ["train", "test", "val", "ü"][i % 4]
                )
            })
            .collect();
        Some(entries)
    };
    let transforms = if r.below(4) == 0 {
        None
    } else {
        let n = r.below(5);
        let mut seqs: Vec<u64> = (0..n).map(|i| i * 3 + r.below(3)).collect();
        if r.below(2) == 0 {
            seqs.push(u64::MAX);
        }
        Some(
            seqs.iter()
                .map(|s| {
                    let extra: Vec<String> = (0..r.below(4))
                        .map(|i| format!("\"p{i}\":{}", gen_value(r, 0)))
                        .collect();
                    let mut keys = vec![
                        format!("\"seq\":{s}"),
                        format!("\"op\":\"op{}\"", r.below(9)),
                    ];
                    keys.extend(extra);
                    keys
                })
                .collect::<Vec<Vec<String>>>(),
        )
    };
    let plan = (r.below(2) == 0).then(|| {
        json!({
            "kernel_replay_token": hex::encode([1u8; 32]),
            "manifest_hash": hex::encode([u8::try_from(r.below(256)).unwrap_or(0); 32]),
            "sampler_config_hash": hex::encode([3u8; 32]),
        })
    });
    let build = |files: &[Json],
                 splits: Option<&Vec<String>>,
                 transforms: Option<&Vec<Vec<String>>>,
                 suffix: &str| {
        json!({
            "id": format!("case{id}{suffix}"),
            "tenant_id": if id.is_multiple_of(5) { "ténant-ü".to_owned() } else { format!("tenant{}", id % 3) },
            "version": format!("v{}", id % 4),
            "files": files,
            "splits_json": splits.map(|s| format!("[{}]", s.join(","))),
            "transforms_json": transforms.map(|t| format!("[{}]", t.iter().map(|k| format!("{{{}}}", k.join(","))).collect::<Vec<_>>().join(","))),
            "plan": plan,
        })
    };
    let a = build(&files, splits.as_ref(), transforms.as_ref(), "");
    let mut files2 = files.clone();
    r.shuffle(&mut files2);
    let mut splits2 = splits.clone();
    if let Some(s) = splits2.as_mut() {
        r.shuffle(s);
    }
    let mut transforms2 = transforms.clone();
    if let Some(t) = transforms2.as_mut() {
        r.shuffle(t);
        for keys in t.iter_mut() {
            r.shuffle(keys);
        }
    }
    let b = build(&files2, splits2.as_ref(), transforms2.as_ref(), "-permuted");
    (a, b)
}

fn python() -> Option<PathBuf> {
    std::env::var_os("INTEROP_PYTHON").map(PathBuf::from)
}

fn reference_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/python/lineage/lineage_ref.py")
}

/// The Python reference's results of `cases` (`lineage_ref.py run`), one per case.
fn python_results(cases: &[Json]) -> Vec<Json> {
    let input = tempfile::NamedTempFile::new().expect("temp");
    std::fs::write(input.path(), serde_json::to_vec(cases).expect("json")).expect("write cases");
    let out = run_python(&["run".as_ref(), input.path().as_os_str()]);
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<Json> = serde_json::from_slice(&out.stdout).expect("python output is JSON");
    assert_eq!(results.len(), cases.len());
    results
}

fn run_python(args: &[&std::ffi::OsStr]) -> std::process::Output {
    let py = python().expect("INTEROP_PYTHON must name a Python with cbor2 installed");
    std::process::Command::new(py)
        .arg(reference_script())
        .args(args)
        .output()
        .expect("run the Python reference")
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn python_reference_computes_the_same_ids_for_random_and_permuted_inputs() {
    let mut r = Rng(0x6c69_6e65_6167_6521);
    let mut cases = Vec::new();
    for id in 0..150 {
        let (a, b) = gen_case(&mut r, id);
        let (ra, rb) = (run_case(&a), run_case(&b));
        assert_eq!(
            ra, rb,
            "permutation changed the result of case {id}: {a} vs {b}"
        );
        cases.push(a);
        cases.push(b);
    }
    // A real directory walked by both sides.
    let dir = tempfile::tempdir().expect("tempdir");
    if cfg!(feature = "fs") {
        for (p, b) in [
            ("z.txt", "zz"),
            ("a/b/c.bin", "\u{0}\u{1}"),
            ("a/ü.txt", "ü"),
            ("m/.hidden", ""),
            ("a b/x", "x"),
        ] {
            let full = dir.path().join(p);
            std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
            std::fs::write(full, b).expect("write");
        }
        std::fs::create_dir_all(dir.path().join("empty/dir")).expect("mkdir");
        cases.push(json!({
            "id": "dir", "tenant_id": "t", "version": "v", "dir": dir.path().to_str().expect("utf-8 tempdir"),
            "splits_json": r#"[{"split_name":"a","split_fraction":0.4,"split_seed":3},{"split_name":"b","split_fraction":0.6,"split_seed":3}]"#,
            "transforms_json": null, "plan": null,
        }));
    }
    let results = python_results(&cases);
    let mut ok = 0;
    for (case, mut py) in cases.iter().zip(results) {
        py.as_object_mut().expect("object").remove("id");
        let rust = run_case(case);
        assert_eq!(rust, py, "case {}: {case}", case["id"]);
        ok += usize::from(rust["ok"] == json!(true));
    }
    assert!(
        ok > cases.len() / 2,
        "too few successful cases ({ok}) to mean anything"
    );
}

/// Record counts of random CSV and JSON Lines files (quotes, CR, LF, commas, blanks in any
/// order) equal Python's: its `csv` module and its own line reading.
#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn python_counts_the_same_records_in_random_text_sources() {
    const ALPHABET: &[u8] = b"a,\"\r\n \t{}";
    let mut r = Rng(0x7265_636f_7264_7321);
    let mut cases = Vec::new();
    for id in 0..200 {
        let files: Vec<Json> = (0..3)
            .map(|i| {
                let len = r.below(40);
                let bytes: Vec<u8> = (0..len)
                    .map(|_| ALPHABET[usize::try_from(r.below(ALPHABET.len() as u64)).unwrap_or(0)])
                    .collect();
                let ext = ["csv", "jsonl", "ndjson"][usize::try_from(r.below(3)).unwrap_or(0)];
                json!([format!("f{i}.{ext}"), hex::encode(bytes)])
            })
            .collect();
        cases.push(json!({
            "id": format!("records-{id}"), "tenant_id": "t", "version": "v", "files": files,
            "splits_json": r#"[{"split_name":"a","split_fraction":0.5,"split_seed":9},{"split_name":"b","split_fraction":0.5,"split_seed":9}]"#,
            "transforms_json": null, "samples": "records",
        }));
    }
    let results = python_results(&cases);
    let mut records = 0;
    for (case, mut py) in cases.iter().zip(results) {
        py.as_object_mut().expect("object").remove("id");
        let rust = run_case(case);
        assert_eq!(rust, py, "case {}: {case}", case["id"]);
        records += rust["sample_counts"]
            .as_array()
            .map_or(0, |c| c.iter().filter_map(Json::as_u64).sum::<u64>());
    }
    assert!(
        records > 200,
        "too few records ({records}) to mean anything"
    );
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn python_reference_reproduces_every_golden_vector() {
    let out = run_python(&["golden".as_ref(), data_dir().as_os_str()]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn snapshot_of(
    files: &[(String, Vec<u8>)],
    splits: &str,
    transforms: &str,
) -> Result<Digest, Error> {
    let inputs = SnapshotInputs::new(
        "t",
        "v",
        SplitDefs::from_json(splits)?,
        TransformChain::from_json(transforms)?,
    )?;
    let data = dataset_root_hash(files.iter().map(|(p, b)| (p.as_str(), b.as_slice())))?;
    Ok(build_snapshot(&inputs, &data)?.dataset_snapshot_id)
}

fn arb_files() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
    proptest::collection::btree_map(
        "[a-c]{1,3}(/[a-c]{1,3}){0,2}",
        proptest::collection::vec(any::<u8>(), 0..40),
        1..12,
    )
    .prop_map(|m| m.into_iter().collect())
}

const SPLITS: &str = r#"[{"split_name":"train","split_fraction":0.75,"split_seed":5},{"split_name":"test","split_fraction":0.25,"split_seed":5}]"#;
const TRANSFORMS: &str = r#"[{"seq":0,"op":"a"},{"seq":1,"op":"b","k":0.5}]"#;

proptest! {
    #[test]
    fn snapshot_id_is_invariant_under_source_order(files in arb_files(), seed in any::<u64>()) {
        let mut shuffled = files.clone();
        let mut r = Rng(seed);
        r.shuffle(&mut shuffled);
        prop_assert_eq!(snapshot_of(&files, SPLITS, TRANSFORMS)?, snapshot_of(&shuffled, SPLITS, TRANSFORMS)?);
    }

    #[test]
    fn snapshot_id_changes_when_any_byte_changes(files in arb_files(), which in any::<prop::sample::Index>(), pos in any::<prop::sample::Index>(), flip in 1u8..=255) {
        let mut changed = files.clone();
        let f = &mut changed[which.index(files.len())].1;
        if f.is_empty() { f.push(flip) } else { let i = pos.index(f.len()); f[i] ^= flip; }
        prop_assert_ne!(snapshot_of(&files, SPLITS, TRANSFORMS)?, snapshot_of(&changed, SPLITS, TRANSFORMS)?);
    }

    #[test]
    fn snapshot_id_changes_when_a_path_changes(files in arb_files(), which in any::<prop::sample::Index>()) {
        let mut changed = files.clone();
        let i = which.index(files.len());
        changed[i].0 = format!("{}x", changed[i].0);
        prop_assume!(!files.iter().any(|(p, _)| *p == changed[i].0));
        prop_assert_ne!(snapshot_of(&files, SPLITS, TRANSFORMS)?, snapshot_of(&changed, SPLITS, TRANSFORMS)?);
    }

    #[test]
    fn snapshot_id_changes_with_splits_and_transforms(files in arb_files(), seed in 0u64..1000, frac in 1u32..99, seq in 2u64..1000) {
        let base = snapshot_of(&files, SPLITS, TRANSFORMS)?;
        let s1 = format!(r#"[{{"split_name":"train","split_fraction":0.75,"split_seed":{}}},{{"split_name":"test","split_fraction":0.25,"split_seed":{}}}]"#, seed + 6, seed + 6);
        prop_assert_ne!(base, snapshot_of(&files, &s1, TRANSFORMS)?);
        let f = f64::from(frac) / 100.0;
        prop_assume!(f != 0.75);
        let s2 = format!(r#"[{{"split_name":"train","split_fraction":{f:?}}},{{"split_name":"test","split_fraction":{:?}}}]"#, 1.0 - f);
        if SplitDefs::from_json(&s2).is_ok() {
            prop_assert_ne!(base, snapshot_of(&files, &s2, TRANSFORMS)?);
        }
        let t1 = format!(r#"[{{"seq":0,"op":"a"}},{{"seq":{seq},"op":"b","k":0.5}}]"#);
        prop_assert_ne!(base, snapshot_of(&files, SPLITS, &t1)?);
        let t2 = r#"[{"seq":1,"op":"a"},{"seq":0,"op":"b","k":0.5}]"#;
        prop_assert_ne!(base, snapshot_of(&files, SPLITS, t2)?);
    }

    #[test]
    fn transform_chain_hash_is_invariant_under_input_order(n in 0usize..8, seed in any::<u64>()) {
        let mut items: Vec<String> = (0..n).map(|i| format!(r#"{{"seq":{},"v":{i}}}"#, i * 7)).collect();
        let a = TransformChain::from_json(&format!("[{}]", items.join(",")))?.transform_chain_hash();
        Rng(seed).shuffle(&mut items);
        let b = TransformChain::from_json(&format!("[{}]", items.join(",")))?.transform_chain_hash();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn split_assignment_counts_follow_floor_and_remainder(n in 0u64..500, a in 0u32..=100, seed in proptest::option::of(any::<u64>())) {
        let fa = f64::from(a) / 100.0;
        let s = |name: &str, f: f64| lineage::SplitDef { name: name.into(), fraction: f, seed };
        let defs = SplitDefs::new(vec![s("a", fa), s("b", 1.0 - fa)])?;
        let assign = defs.assign(n);
        #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss, reason = "test arithmetic")]
        let want_a = (fa * n as f64).floor() as u64;
        prop_assert_eq!(assign.iter().filter(|&&x| x == 0).count() as u64, want_a);
        prop_assert_eq!(assign.len() as u64, n);
    }

    #[test]
    fn untrusted_bytes_never_panic_the_parsers(bytes in proptest::collection::vec(any::<u8>(), 0..200), text in "\\PC{0,80}") {
        let _ = lineage::cbor::decode(&bytes);
        let _ = lineage::Checkpoint::from_bytes(&bytes);
        let _ = lineage::json::parse(&text);
        let _ = SplitDefs::from_json(&text);
        let _ = TransformChain::from_json(&text);
        if let Ok(s) = std::str::from_utf8(&bytes) {
            let _ = lineage::json::parse(s);
        }
    }

    #[test]
    fn json_like_text_never_panics_the_parsers(text in r#"[\[\]{}",:0-9eE.+\-a-z \\u]{0,60}"#) {
        let _ = lineage::json::parse(&text);
        let _ = SplitDefs::from_json(&text);
        let _ = TransformChain::from_json(&text);
    }

    #[test]
    fn cbor_decode_inverts_encode_for_json_values(n in any::<u64>(), f in any::<f64>(), s in ".{0,20}") {
        use lineage::cbor::{Value, decode};
        prop_assume!(!f.is_nan());
        let v = Value::Array(vec![Value::Unsigned(n), Value::Negative(n), Value::Float(f), Value::text(&s),
            Value::Map([(s.clone(), Value::Bytes(s.as_bytes().to_vec()))].into_iter().collect())]);
        let back = decode(&v.to_canonical_bytes())?;
        prop_assert_eq!(back, v);
    }
}

/// `Error::Io` for a failed setup step on `path` (these tests return the crate's own error).
#[cfg(feature = "fs")]
fn io(path: &str) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.into(),
        source,
    }
}

#[cfg(feature = "fs")]
fn write_tree(root: &Path, files: &[(String, Vec<u8>)]) {
    for (p, b) in files {
        let full = root.join(p);
        std::fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
        std::fs::write(full, b).expect("write");
    }
}

#[cfg(feature = "fs")]
#[test]
fn directory_hash_equals_in_memory_hash_whatever_the_creation_order() -> Result<(), Error> {
    let files: Vec<(String, Vec<u8>)> = (0..50u8)
        .map(|i| (format!("d{}/f{i:02}", i % 4), vec![i; usize::from(i)]))
        .collect();
    let want = dataset_root_hash(files.iter().map(|(p, b)| (p.as_str(), b.as_slice())))?;
    let mut rev = files.clone();
    rev.reverse();
    for order in [&files, &rev] {
        let dir = tempfile::tempdir().map_err(io("tmp"))?;
        write_tree(dir.path(), order);
        assert_eq!(lineage::fs::dataset_root_hash_dir(dir.path())?, want);
    }
    Ok(())
}

#[cfg(feature = "fs")]
#[test]
fn interrupted_build_resumes_from_its_checkpoint_to_the_same_root() -> Result<(), Error> {
    let files: Vec<(String, Vec<u8>)> = (0..300u16)
        .map(|i| {
            (
                format!("s/{i:04}"),
                i.to_be_bytes().repeat(usize::from(i % 9)),
            )
        })
        .collect();
    let dir = tempfile::tempdir().map_err(io("tmp"))?;
    write_tree(&dir.path().join("data"), &files);
    let want = lineage::fs::dataset_root_hash_dir(&dir.path().join("data"))?;
    let cp = dir.path().join("build.ckpt");
    let tree = walk(&dir.path().join("data"), SymlinkPolicy::Refuse)?;
    let mut opts = HashOptions {
        threads: 2,
        checkpoint: Some(cp.clone()),
        checkpoint_every_files: 50,
        stop_after_files: Some(77),
    };
    assert_eq!(
        hash_tree(&tree, &opts, &mut |_| {})?,
        BuildOutcome::Stopped { cursor: 77 }
    );
    assert!(cp.exists());
    opts.stop_after_files = Some(210);
    assert_eq!(
        hash_tree(&tree, &opts, &mut |_| {})?,
        BuildOutcome::Stopped { cursor: 210 }
    );
    opts.stop_after_files = None;
    assert_eq!(
        hash_tree(&tree, &opts, &mut |_| {})?,
        BuildOutcome::Complete(want)
    );
    assert!(!cp.exists(), "a finished build removes its checkpoint");
    Ok(())
}

#[cfg(feature = "fs")]
#[test]
fn checkpoint_of_a_changed_tree_is_refused() -> Result<(), Error> {
    let dir = tempfile::tempdir().map_err(io("tmp"))?;
    write_tree(dir.path(), &[("a".into(), vec![1]), ("b".into(), vec![2])]);
    let cp = dir.path().join("../lineage-test.ckpt");
    let cp = std::path::absolute(cp).map_err(io("abs"))?;
    let opts = HashOptions {
        threads: 1,
        checkpoint: Some(cp.clone()),
        checkpoint_every_files: 0,
        stop_after_files: Some(1),
    };
    hash_tree(
        &walk(dir.path(), SymlinkPolicy::Refuse)?,
        &opts,
        &mut |_| {},
    )?;
    std::fs::write(dir.path().join("c"), b"3").map_err(io("c"))?;
    let r = hash_tree(
        &walk(dir.path(), SymlinkPolicy::Refuse)?,
        &opts,
        &mut |_| {},
    );
    let _ = std::fs::remove_file(&cp);
    assert!(matches!(r, Err(Error::CheckpointMismatch { .. })));
    Ok(())
}

#[cfg(all(unix, feature = "fs"))]
#[test]
fn symlinks_fail_by_default_and_hash_their_target_path_on_request() -> Result<(), Error> {
    let dir = tempfile::tempdir().map_err(io("tmp"))?;
    write_tree(dir.path(), &[("a".into(), b"x".to_vec())]);
    std::os::unix::fs::symlink("a", dir.path().join("link")).map_err(io("link"))?;
    assert!(matches!(
        walk(dir.path(), SymlinkPolicy::Refuse),
        Err(Error::UnsupportedFileType { .. })
    ));
    let tree = walk(dir.path(), SymlinkPolicy::HashTargetPath)?;
    let BuildOutcome::Complete(d) = hash_tree(&tree, &HashOptions::default(), &mut |_| {})? else {
        panic!("not complete")
    };
    assert_eq!(
        d,
        dataset_root_hash([("a", &b"x"[..]), ("link", &b"a"[..])])?
    );
    Ok(())
}

#[cfg(feature = "fs")]
#[test]
fn empty_directory_is_an_empty_dataset() -> Result<(), Error> {
    let dir = tempfile::tempdir().map_err(io("tmp"))?;
    std::fs::create_dir(dir.path().join("sub")).map_err(io("sub"))?;
    assert!(matches!(
        walk(dir.path(), SymlinkPolicy::Refuse),
        Err(Error::EmptyDataset)
    ));
    Ok(())
}

/// A stopped build over `files` in `dir/data`, its checkpoint at `dir/build.ckpt` covering the
/// first `covered` files.
#[cfg(feature = "fs")]
fn stopped_build(dir: &Path, files: &[(String, Vec<u8>)], covered: u64) -> HashOptions {
    write_tree(&dir.join("data"), files);
    let opts = HashOptions {
        threads: 2,
        checkpoint: Some(dir.join("build.ckpt")),
        checkpoint_every_files: 0,
        stop_after_files: Some(covered),
    };
    let tree = walk(&dir.join("data"), SymlinkPolicy::Refuse).expect("walk");
    assert_eq!(
        hash_tree(&tree, &opts, &mut |_| {}).expect("build"),
        BuildOutcome::Stopped { cursor: covered }
    );
    HashOptions {
        stop_after_files: None,
        ..opts
    }
}

#[cfg(feature = "fs")]
fn resume(dir: &Path, opts: &HashOptions) -> Result<BuildOutcome, Error> {
    hash_tree(
        &walk(&dir.join("data"), SymlinkPolicy::Refuse)?,
        opts,
        &mut |_| {},
    )
}

/// A checkpoint never vouches for bytes it did not hash: a file it covers that was replaced
/// (another inode, same size and bytes count) or rewritten in place (its modification time put
/// back) makes the resumed build refuse the checkpoint, rather than reuse the old hashes.
#[cfg(feature = "fs")]
#[test]
fn checkpoint_covering_a_changed_file_is_refused() {
    let files: Vec<(String, Vec<u8>)> = (0..6u8).map(|i| (format!("f{i}"), vec![i; 10])).collect();
    // Untouched: resumes to the root of a fresh build.
    let dir = tempfile::tempdir().expect("tmp");
    let opts = stopped_build(dir.path(), &files, 4);
    let want = lineage::fs::dataset_root_hash_dir(&dir.path().join("data")).expect("fresh");
    assert_eq!(
        resume(dir.path(), &opts).expect("resume"),
        BuildOutcome::Complete(want)
    );
    // Every covered file replaced by a new one (new inode) with other bytes of the same length.
    let dir = tempfile::tempdir().expect("tmp");
    let opts = stopped_build(dir.path(), &files, 4);
    for (name, _) in &files[..4] {
        let path = dir.path().join("data").join(name);
        let fresh = dir.path().join("fresh");
        std::fs::write(&fresh, [0xee; 10]).expect("write");
        std::fs::rename(&fresh, &path).expect("rename");
    }
    assert!(matches!(
        resume(dir.path(), &opts),
        Err(Error::CheckpointMismatch { .. })
    ));
    // One covered file rewritten in place, its modification time restored.
    let dir = tempfile::tempdir().expect("tmp");
    let opts = stopped_build(dir.path(), &files, 4);
    let path = dir.path().join("data/f1");
    let mtime = std::fs::metadata(&path)
        .and_then(|m| m.modified())
        .expect("mtime");
    std::fs::write(&path, [0xee; 10]).expect("rewrite");
    std::fs::File::options()
        .write(true)
        .open(&path)
        .and_then(|f| f.set_modified(mtime))
        .expect("set mtime");
    assert!(matches!(
        resume(dir.path(), &opts),
        Err(Error::CheckpointMismatch { .. })
    ));
}

/// Checkpoints are written through a new temporary file: a symlink planted where the old
/// implementation put its temporary file (`<checkpoint>.tmp`) is neither followed nor
/// overwritten, and the checkpoint itself is read without following a symlink or blocking.
#[cfg(all(unix, feature = "fs"))]
#[test]
fn checkpoint_files_are_never_written_or_read_through_a_planted_path() {
    let dir = tempfile::tempdir().expect("tmp");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"precious").expect("victim");
    std::os::unix::fs::symlink(&victim, dir.path().join("build.ckpt.tmp")).expect("plant");
    let files: Vec<(String, Vec<u8>)> = (0..4u8).map(|i| (format!("f{i}"), vec![i])).collect();
    let opts = stopped_build(dir.path(), &files, 2);
    assert_eq!(std::fs::read(&victim).expect("victim"), b"precious");
    assert!(
        lineage::fs::read_checkpoint(&dir.path().join("build.ckpt"))
            .expect("read")
            .is_some()
    );
    let no_checkpoint_here = |path: &Path| {
        let opts = HashOptions {
            checkpoint: Some(path.to_path_buf()),
            ..opts.clone()
        };
        assert!(
            matches!(resume(dir.path(), &opts), Err(Error::Io { .. })),
            "{}",
            path.display()
        );
    };
    // A symlink (to the real checkpoint, or to /dev/zero): not followed.
    let link = dir.path().join("link.ckpt");
    std::os::unix::fs::symlink(dir.path().join("build.ckpt"), &link).expect("link");
    no_checkpoint_here(&link);
    let zero = dir.path().join("zero.ckpt");
    std::os::unix::fs::symlink("/dev/zero", &zero).expect("link");
    no_checkpoint_here(&zero);
    // A FIFO: opened without blocking, then refused as not a regular file.
    let fifo = dir.path().join("fifo.ckpt");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
        0,
    )
    .expect("mkfifo");
    no_checkpoint_here(&fifo);
    // A file larger than any checkpoint: refused without reading it whole.
    let big = dir.path().join("big.ckpt");
    std::fs::write(&big, vec![0u8; 1 << 20]).expect("big");
    no_checkpoint_here(&big);
}

/// Between the walk and the hashing, a listed file swapped for a FIFO (which would block a plain
/// `open`) or for a symlink out of the tree, or a listed directory swapped for a symlink to
/// another directory, is refused: nothing outside the tree is read, and nothing blocks.
#[cfg(all(unix, feature = "fs"))]
#[test]
fn files_swapped_after_the_walk_are_refused_not_followed() {
    let outside = tempfile::tempdir().expect("tmp");
    std::fs::write(outside.path().join("secret"), b"not yours").expect("secret");
    let swap = |edit: &dyn Fn(&Path)| {
        let dir = tempfile::tempdir().expect("tmp");
        write_tree(
            dir.path(),
            &[
                ("a".into(), b"a".to_vec()),
                ("sub/secret".into(), b"s".to_vec()),
            ],
        );
        let tree = walk(dir.path(), SymlinkPolicy::Refuse).expect("walk");
        edit(dir.path());
        hash_tree(&tree, &HashOptions::default(), &mut |_| {})
    };
    let fifo = swap(&|root| {
        std::fs::remove_file(root.join("a")).expect("rm");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("a"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::RUSR | rustix::fs::Mode::WUSR,
            0,
        )
        .expect("mkfifo");
    });
    assert!(
        matches!(fifo, Err(Error::UnsupportedFileType { ref path, kind: "special file" }) if path == "a"),
        "{fifo:?}"
    );
    let link = swap(&|root| {
        std::fs::remove_file(root.join("a")).expect("rm");
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("a")).expect("ln");
    });
    assert!(
        matches!(
            link,
            Err(Error::UnsupportedFileType {
                kind: "symlink",
                ..
            })
        ),
        "{link:?}"
    );
    let dir_link = swap(&|root| {
        std::fs::remove_dir_all(root.join("sub")).expect("rm");
        std::os::unix::fs::symlink(outside.path(), root.join("sub")).expect("ln");
    });
    assert!(
        matches!(
            dir_link,
            Err(Error::UnsupportedFileType {
                kind: "symlink",
                ..
            })
        ),
        "{dir_link:?}"
    );
}

/// Replays the fuzz corpora (fuzz/corpus/lineage_json, lineage_cbor) on stable: no input may
/// panic or break a round trip.
#[test]
fn fuzz_corpora_replay_without_panic() {
    for (target, check) in [
        ("lineage_json", fuzz_check::lineage_json as fn(&[u8])),
        ("lineage_cbor", fuzz_check::lineage_cbor),
    ] {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fuzz/corpus")
            .join(target);
        let mut seen = 0;
        for entry in std::fs::read_dir(&dir).expect("corpus") {
            check(&std::fs::read(entry.expect("entry").path()).expect("read"));
            seen += 1;
        }
        assert!(seen > 0, "empty corpus at {}", dir.display());
    }
}
