//! Integration tests of the store: the GC property test over random object graphs, two
//! processes publishing into one catalog at once, and processes killed mid-publish.
//!
//! The multi-process tests re-run this test binary as their children: `child_process` is their
//! entry point, selected with `--exact` and told what to do by `LINEAGE_STORE_CHILD`; run any
//! other way it returns at once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use lineage::cbor::Value;
use lineage::hash::sha256;
use lineage::object::{LineageObject, ObjectRef, ObjectType};
use lineage::retention::{RetentionClass, RetentionMeta};
use lineage::{Digest, RelPath, SnapshotInputs, SplitDefs, TransformChain};
use lineage_store::{SnapshotRecord, SourceFile, Store};
use proptest::prelude::*;

const CHILD_ENV: &str = "LINEAGE_STORE_CHILD";

fn meta(class: RetentionClass, after: Option<u64>) -> RetentionMeta {
    RetentionMeta {
        retention_class: class,
        pin_root_refs: vec![],
        gc_eligible_after_utc: after,
    }
}

/// A snapshot of `files` (path, content) with one of two split sets and transform chains.
fn record(
    dataset: &str,
    version: &str,
    files: &[(String, Vec<u8>)],
    variant: u8,
    retention: RetentionMeta,
) -> SnapshotRecord {
    let splits = if variant & 1 == 0 {
        SplitDefs::default()
    } else {
        SplitDefs::from_json(
            r#"[{"split_name":"train","split_fraction":0.5},{"split_name":"test","split_fraction":0.5}]"#,
        )
        .expect("splits")
    };
    let transforms = if variant & 2 == 0 {
        TransformChain::default()
    } else {
        TransformChain::from_json(r#"[{"seq":0,"op":"lowercase"}]"#).expect("transforms")
    };
    let inputs = SnapshotInputs::new("acme", version, splits, transforms).expect("inputs");
    let sources = files
        .iter()
        .map(|(p, c)| SourceFile {
            path: RelPath::new(p).expect("path"),
            size_bytes: c.len() as u64,
            content_hash: sha256(c),
        })
        .collect();
    SnapshotRecord::new(dataset, inputs, sources, vec![], retention).expect("record")
}

fn class_of(i: u8) -> RetentionClass {
    RetentionClass::ALL[usize::from(i % 4)]
}

/// One generated object: class, time, references to earlier objects (indexes), whether it is
/// pinned, and an optional `pin_root_refs` entry (index of any object).
type GenObject = (u8, Option<u64>, Vec<usize>, bool, Option<usize>);
/// One generated snapshot: variant, class, time, published.
type GenSnapshot = (u8, u8, Option<u64>, bool);

fn graph_strategy() -> impl Strategy<Value = (Vec<GenSnapshot>, Vec<GenObject>, u64)> {
    (
        prop::collection::vec(
            (0u8..4, 0u8..4, prop::option::of(0u64..20), any::<bool>()),
            0..4,
        ),
        prop::collection::vec(
            (
                0u8..4,
                prop::option::of(0u64..20),
                prop::collection::vec(0usize..64, 0..3),
                prop::bool::weighted(0.15),
                prop::option::weighted(0.1, 0usize..64),
            ),
            1..20,
        ),
        0u64..25,
    )
}

/// The graph as the catalog holds it, read with plain SQL (independently of the store's GC).
#[derive(Debug, Default)]
struct Graph {
    meta: BTreeMap<(String, String), RetentionMeta>,
    refs: BTreeMap<(String, String), Vec<(String, String)>>,
    pinned: BTreeSet<(String, String)>,
    /// Objects whose metadata carries `pin_root_refs`.
    pin_carriers: BTreeSet<(String, String)>,
    active: BTreeSet<(String, String)>,
}

fn read_graph(store: &Store, now: u64) -> Graph {
    let c = store.connection();
    let mut g = Graph::default();
    let mut st = c
        .prepare(
            "SELECT object_type, object_id, retention_class, gc_eligible_after_utc FROM objects",
        )
        .expect("sql");
    for row in st
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<i64>>(3)?,
            ))
        })
        .expect("sql")
    {
        let (t, id, class, after) = row.expect("row");
        g.meta.insert(
            (t, id),
            meta(
                RetentionClass::parse(&class).expect("class"),
                after.map(|a| u64::try_from(a).expect("time")),
            ),
        );
    }
    let mut st = c
        .prepare("SELECT from_type, from_id, to_type, to_id FROM object_refs")
        .expect("sql");
    for row in st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .expect("sql")
    {
        let (ft, fid, tt, tid): (String, String, String, String) = row.expect("row");
        g.refs.entry((ft, fid)).or_default().push((tt, tid));
    }
    let mut st = c
        .prepare("SELECT object_type, object_id FROM object_pin_refs")
        .expect("sql");
    for row in st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("sql")
    {
        g.pin_carriers.insert(row.expect("row"));
    }
    for sql in [
        "SELECT object_type, object_id FROM pins",
        "SELECT root_type, root_id FROM object_pin_refs",
    ] {
        let mut st = c.prepare(sql).expect("sql");
        for row in st
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .expect("sql")
        {
            g.pinned.insert(row.expect("row"));
        }
    }
    let mut st = c
        .prepare("SELECT snapshot_id, state, retention_class, gc_eligible_after_utc FROM snapshots")
        .expect("sql");
    for row in st
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<i64>>(3)?,
            ))
        })
        .expect("sql")
    {
        let (id, state, class, after) = row.expect("row");
        let m = meta(
            RetentionClass::parse(&class).expect("class"),
            after.map(|a| u64::try_from(a).expect("time")),
        );
        if state == "published" && !m.collectible_at(now) {
            g.active.insert(("dataset".to_owned(), id));
        }
    }
    g
}

fn closure(
    g: &Graph,
    roots: impl IntoIterator<Item = (String, String)>,
) -> BTreeSet<(String, String)> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<_> = roots.into_iter().collect();
    while let Some(k) = stack.pop() {
        if seen.insert(k.clone()) {
            stack.extend(g.refs.get(&k).into_iter().flatten().cloned());
        }
    }
    seen
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random DAGs of artifacts over random snapshots, random pins, times and a random clock:
    /// after a GC every pinned and active closure is whole, everything collected was unreachable,
    /// past its time and of a class that may go, nothing kept points at a collected object, and
    /// the store checks clean.
    #[test]
    fn gc_keeps_every_pinned_and_active_closure_and_collects_only_what_retention_allows(
        (snapshots, objects, now) in graph_strategy()
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store = Store::open(dir.path()).expect("open");
        let mut keys: Vec<ObjectRef> = Vec::new();
        for (i, (variant, class, after, published)) in snapshots.iter().enumerate() {
            let files = vec![(format!("f{i}"), vec![u8::try_from(i).expect("small")])];
            let rec = record("ds", &format!("v{i}"), &files, *variant, meta(class_of(*class), *after));
            if *published {
                store.publish(&rec, 0).expect("publish");
            } else {
                store.record_draft(&rec, 0).expect("draft");
            }
            keys.push(rec.lineage_objects().pop().expect("dataset object").as_ref_to());
        }
        for (i, (class, after, refs, pinned, pin_root)) in objects.iter().enumerate() {
            let mut m = meta(class_of(*class), *after);
            if let (Some(r), false) = (pin_root, keys.is_empty()) {
                let root = &keys[r % keys.len()];
                m.pin_root_refs.push((root.object_type, root.object_id));
            }
            let refs: BTreeSet<ObjectRef> = if keys.is_empty() {
                BTreeSet::new()
            } else {
                refs.iter().map(|r| keys[r % keys.len()].clone()).collect()
            };
            let o = LineageObject {
                tenant_id: "acme".into(),
                object_type: ObjectType::Artifact,
                payload: Value::Unsigned(i as u64),
                refs: refs.into_iter().collect(),
            };
            let key = store.put_object(&o, &m, 0).expect("put");
            if *pinned {
                store.pin(&key, "release", 0).expect("pin");
            }
            keys.push(key);
        }
        let g = read_graph(&store, now);
        let report = store.gc(now, false).expect("gc");

        let protected = closure(&g, g.pinned.iter().chain(&g.active).cloned());
        let collected: BTreeSet<(String, String)> = report
            .collected
            .iter()
            .map(|c| (c.object.object_type.as_str().to_owned(), c.object.object_id.to_hex()))
            .collect();
        // Every pinned or active closure survives, readable and verified.
        for k in &protected {
            let o = ObjectRef {
                tenant_id: "acme".into(),
                object_type: ObjectType::parse(&k.0).expect("type"),
                object_id: Digest::from_hex(&k.1).expect("id"),
            };
            prop_assert!(store.objects().get(&o).is_ok(), "{:?} lost", k);
            prop_assert!(!collected.contains(k));
        }
        // Everything collected was unreachable, past its time, of a class that may go.
        for k in &collected {
            let m = &g.meta[k];
            prop_assert!(!m.retention_class.is_permanent());
            prop_assert!(m.collectible_at(now));
            if let Some(t) = m.gc_eligible_after_utc {
                prop_assert!(now >= t);
            } else {
                prop_assert_eq!(m.retention_class, RetentionClass::Ephemeral);
            }
        }
        // Nothing kept refers to a collected object (no dangling reference), and the collection
        // is exactly the complement of everything a kept object or a root reaches.
        let kept_by_meta = g.meta.iter().filter(|(_, m)| !m.collectible_at(now)).map(|(k, _)| k.clone());
        let live = closure(&g, g.pinned.iter().chain(&g.active).cloned().chain(kept_by_meta));
        let expected: BTreeSet<_> = g.meta.keys().filter(|k| !live.contains(*k)).cloned().collect();
        prop_assert_eq!(&collected, &expected);
        // Rows and files agree, and the catalog is sound.
        let check = store.check().expect("check");
        prop_assert!(check.is_ok(), "{:?}", check);
        let (files, other) = store.objects().list().expect("list");
        prop_assert!(other.is_empty());
        prop_assert_eq!(files.len(), g.meta.len() - collected.len());
        // A second GC at the same time finds nothing more, unless a collected object carried
        // pin_root_refs (they protected their roots while it existed).
        if collected.is_disjoint(&g.pin_carriers) {
            prop_assert_eq!(store.gc(now, true).expect("dry run").collected.len(), 0);
        }
    }
}

/// Spawns this test binary as a child running `child_process` with `task`.
fn spawn_child(task: &str) -> Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "child_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, task)
        .spawn()
        .expect("spawn child")
}

/// Entry point of the child processes of the multi-process tests (see the module docs). Tasks:
/// `publish|DIR|WORKER|N` publishes N snapshots (and N ephemeral artifacts, and a GC every 8),
/// `forever|DIR|WORKER` publishes until killed, `churn|DIR|WORKER` publishes expiring snapshots
/// and artifacts and collects them until killed.
#[test]
fn child_process() {
    let Ok(task) = std::env::var(CHILD_ENV) else {
        return;
    };
    let parts: Vec<&str> = task.split('|').collect();
    let dir = Path::new(parts[1]);
    let worker = parts[2];
    if parts[0] == "churn" {
        churn(dir, worker);
        return;
    }
    let n: u64 = parts.get(3).map_or(u64::MAX, |n| n.parse().expect("count"));
    let mut store = Store::open(dir).expect("open");
    let mut i = 0;
    while i < n {
        // Shared split/transform objects across workers, distinct datasets per worker.
        let files: Vec<(String, Vec<u8>)> = (0..5)
            .map(|f| {
                (
                    format!("part-{f}"),
                    format!("{worker}-{i}-{f}").into_bytes(),
                )
            })
            .collect();
        let rec = record(
            &format!("ds-{worker}"),
            &format!("v{i}"),
            &files,
            u8::try_from(i % 4).expect("small"),
            meta(RetentionClass::Experimental, None),
        );
        store.publish(&rec, 1000 + i).expect("publish");
        let junk = LineageObject {
            tenant_id: "acme".into(),
            object_type: ObjectType::Artifact,
            payload: Value::Text(format!("{worker}-{i}")),
            refs: vec![rec.lineage_objects().pop().expect("dataset").as_ref_to()],
        };
        store
            .put_object(&junk, &meta(RetentionClass::Ephemeral, None), 1000 + i)
            .expect("put");
        if i % 8 == 7 {
            store.gc(1000 + i, false).expect("gc");
        }
        i += 1;
    }
}

/// Publishes snapshots that expire at once and artifacts over them, and collects them, forever.
fn churn(dir: &Path, worker: &str) {
    let mut store = Store::open(dir).expect("open");
    for i in 0u64.. {
        let files: Vec<(String, Vec<u8>)> = (0..3)
            .map(|f| (format!("f{f}"), format!("{worker}-{i}-{f}").into_bytes()))
            .collect();
        let rec = record(
            &format!("churn-{worker}"),
            &format!("v{i}"),
            &files,
            u8::try_from(i % 4).expect("small"),
            meta(RetentionClass::Ephemeral, Some(i)),
        );
        store.publish(&rec, i).expect("publish");
        let root = rec.lineage_objects().pop().expect("dataset").as_ref_to();
        let batch: Vec<_> = (0..20u64)
            .map(|k| {
                (
                    LineageObject {
                        tenant_id: "acme".into(),
                        object_type: ObjectType::Artifact,
                        payload: Value::Array(vec![Value::Unsigned(i), Value::Unsigned(k)]),
                        refs: vec![root.clone()],
                    },
                    meta(RetentionClass::Ephemeral, None),
                )
            })
            .collect();
        store.put_objects(&batch, i).expect("put");
        store.gc(i, false).expect("gc");
    }
}

fn wait_ok(mut child: Child, what: &str) {
    let status = child.wait().expect("wait");
    assert!(status.success(), "{what}: {status}");
}

#[test]
fn two_processes_publish_into_one_catalog_concurrently() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().display().to_string();
    const N: u64 = 40;
    let a = spawn_child(&format!("publish|{root}|a|{N}"));
    let b = spawn_child(&format!("publish|{root}|b|{N}"));
    wait_ok(a, "worker a");
    wait_ok(b, "worker b");
    let mut store = Store::open(dir.path()).expect("open");
    let check = store.check().expect("check");
    assert!(check.is_ok(), "{check:?}");
    for worker in ["a", "b"] {
        let log = store.log(&format!("ds-{worker}")).expect("log");
        assert_eq!(log.len() as u64, N, "worker {worker}");
        for s in &log {
            let e = store.snapshot(s.snapshot_id).expect("snapshot");
            assert_eq!(e.sources.len(), 5);
            assert_eq!(e.to_record().expect("record").snapshot_id(), s.snapshot_id);
        }
    }
    // Every ephemeral artifact goes; every snapshot stays.
    let gc = store.gc(10_000, false).expect("gc");
    assert!(gc.snapshots_removed.is_empty());
    assert!(store.check().expect("check").is_ok());
    let artifacts: i64 = store
        .connection()
        .query_row(
            "SELECT count(*) FROM objects WHERE object_type = 'artifact'",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(artifacts, 0);
}

#[test]
fn a_process_killed_mid_gc_leaves_no_row_without_its_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().display().to_string();
    for round in 0..4u64 {
        let mut child = spawn_child(&format!("churn|{root}|c{round}"));
        std::thread::sleep(Duration::from_millis(150 + 170 * round));
        child.kill().expect("kill");
        let _ = child.wait();
        let store = Store::open(dir.path()).expect("open after kill");
        let check = store.check().expect("check");
        assert!(check.is_ok(), "round {round}: {check:?}");
    }
    let mut store = Store::open(dir.path()).expect("open");
    store.gc(u64::MAX >> 2, false).expect("gc");
    assert!(store.check().expect("check").is_ok());
    assert!(
        store
            .gc(u64::MAX >> 2, true)
            .expect("dry run")
            .leftovers
            .is_empty()
    );
}

#[test]
fn processes_opening_a_new_catalog_at_once_all_succeed() {
    for _ in 0..3 {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().display().to_string();
        let children: Vec<Child> = (0..6)
            .map(|w| spawn_child(&format!("publish|{root}|o{w}|1")))
            .collect();
        for (w, c) in children.into_iter().enumerate() {
            wait_ok(c, &format!("opener {w}"));
        }
        assert!(
            Store::open(dir.path())
                .expect("open")
                .check()
                .expect("check")
                .is_ok()
        );
    }
}

fn snapshot_count(dir: &Path) -> i64 {
    let Ok(store) = Store::open(dir) else {
        return 0;
    };
    store
        .connection()
        .query_row("SELECT count(*) FROM snapshots", [], |r| r.get(0))
        .unwrap_or(0)
}

#[test]
fn a_process_killed_mid_publish_leaves_the_old_or_the_new_state() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().display().to_string();
    let mut last = 0;
    for round in 0..4u64 {
        let mut child = spawn_child(&format!("forever|{root}|k{round}"));
        let start = Instant::now();
        while snapshot_count(dir.path()) < last + 3 && start.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(5));
        }
        // Somewhere inside a later publish (each takes a few milliseconds).
        std::thread::sleep(Duration::from_millis(3 + 7 * round));
        child.kill().expect("kill");
        let _ = child.wait();
        let store = Store::open(dir.path()).expect("open after kill");
        let check = store.check().expect("check");
        assert!(check.is_ok(), "round {round}: {check:?}");
        let drafts: i64 = store
            .connection()
            .query_row(
                "SELECT count(*) FROM snapshots WHERE state <> 'published'",
                [],
                |r| r.get(0),
            )
            .expect("count");
        assert_eq!(drafts, 0, "round {round}");
        last = snapshot_count(dir.path());
        let rounds = i64::try_from(round).expect("small") + 1;
        assert!(last >= 3 * rounds, "round {round}: {last}");
    }
    // What the killed publishes left unnamed is removed by a GC, and nothing else is.
    let mut store = Store::open(dir.path()).expect("open");
    let before = last;
    store.gc(0, false).expect("gc");
    assert_eq!(snapshot_count(dir.path()), before);
    assert!(store.check().expect("check").is_ok());
    assert!(store.gc(0, true).expect("dry run").leftovers.is_empty());
}
