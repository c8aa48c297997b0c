//! Unit tests of [`Store`]: publish and show, immutability (in Rust and in the triggers), a
//! publish stopped at every step, GC of expired snapshots, migrations.

use lineage::cbor::Value;
use lineage::hash::sha256;
use lineage::object::{LineageObject, ObjectRef, ObjectType};
use lineage::retention::{RetentionClass, RetentionMeta};
use lineage::{RelPath, SnapshotInputs, SplitDefs, TransformChain};

use super::*;

const T0: u64 = 1_700_000_000;

fn file(path: &str, content: &[u8]) -> SourceFile {
    SourceFile {
        path: RelPath::new(path).expect("path"),
        size_bytes: len_u64(content.len()),
        content_hash: sha256(content),
    }
}

fn record(
    dataset: &str,
    version: &str,
    files: &[(&str, &[u8])],
    class: RetentionClass,
    after: Option<u64>,
) -> SnapshotRecord {
    let splits = SplitDefs::from_json(
        r#"[{"split_name":"train","split_fraction":0.75,"split_seed":3},
            {"split_name":"test","split_fraction":0.25,"split_seed":3}]"#,
    )
    .expect("splits");
    let transforms = TransformChain::from_json(
        r#"[{"seq":0,"op":"dedupe"},{"seq":18446744073709551615,"op":"x"}]"#,
    )
    .expect("transforms");
    let inputs = SnapshotInputs::new("acme", version, splits, transforms).expect("inputs");
    SnapshotRecord::new(
        dataset,
        inputs,
        files.iter().map(|(p, c)| file(p, c)).collect(),
        vec![sha256(b"plan")],
        RetentionMeta {
            retention_class: class,
            pin_root_refs: vec![],
            gc_eligible_after_utc: after,
        },
    )
    .expect("record")
}

fn open() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("cat")).expect("open");
    (dir, store)
}

fn count(store: &Store, table: &str) -> i64 {
    store
        .connection()
        .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
        .expect("count")
}

#[test]
fn a_published_snapshot_reads_back_whole_and_recomputes_to_its_id() -> Result<()> {
    let (_d, mut store) = open();
    let rec = record(
        "words",
        "v1",
        &[("b.txt", b"2"), ("a.txt", b"1")],
        RetentionClass::Experimental,
        None,
    );
    assert_eq!(store.publish(&rec, T0)?, PublishOutcome::Published);
    let e = store.snapshot(rec.snapshot_id())?;
    assert_eq!(e.summary.state, PublishState::Published);
    assert_eq!(e.summary.published_utc, Some(T0));
    assert_eq!(e.sources.len(), 2);
    assert_eq!(e.sources[0].path.as_str(), "a.txt");
    assert_eq!(e.transforms.len(), 2);
    assert_eq!(e.transforms[1].seq, u64::MAX);
    assert_eq!(e.splits[0].seed, Some(3));
    assert_eq!(e.plan_hashes, vec![sha256(b"plan")]);
    assert_eq!(e.to_record()?, rec);
    // Every lineage object is stored, verified, and recorded with its edges.
    for o in rec.lineage_objects() {
        assert_eq!(store.objects().get(&o.as_ref_to())?, o.payload);
    }
    assert_eq!(count(&store, "objects"), 5);
    assert_eq!(count(&store, "object_refs"), 4);
    assert!(store.check()?.is_ok());
    // Same snapshot, same name: nothing to do.
    assert_eq!(
        store.publish(&rec, T0 + 1)?,
        PublishOutcome::AlreadyPublished
    );
    Ok(())
}

#[test]
fn a_published_snapshot_refuses_every_change_in_rust() -> Result<()> {
    let (_d, mut store) = open();
    let rec = record(
        "words",
        "v1",
        &[("a.txt", b"1")],
        RetentionClass::Experimental,
        None,
    );
    store.publish(&rec, T0)?;
    let again = record(
        "other-name",
        "v1",
        &[("a.txt", b"1")],
        RetentionClass::Experimental,
        None,
    );
    assert!(matches!(
        store.publish(&again, T0),
        Err(Error::SnapshotPublished { .. })
    ));
    assert!(matches!(
        store.record_draft(&rec, T0),
        Err(Error::SnapshotPublished { .. })
    ));
    assert!(matches!(
        store.publish_draft(rec.snapshot_id(), T0),
        Err(Error::SnapshotPublished { .. })
    ));
    // The version names this snapshot: other content under it is refused.
    let other = record(
        "words",
        "v1",
        &[("a.txt", b"changed")],
        RetentionClass::Experimental,
        None,
    );
    assert!(matches!(
        store.publish(&other, T0),
        Err(Error::VersionExists { .. })
    ));
    Ok(())
}

#[test]
fn the_triggers_refuse_writes_to_a_published_snapshot_in_sql() -> Result<()> {
    let (_d, mut store) = open();
    let rec = record(
        "words",
        "v1",
        &[("a.txt", b"1")],
        RetentionClass::Ephemeral,
        Some(0),
    );
    store.publish(&rec, T0)?;
    let id = rec.snapshot_id().to_hex();
    let c = store.connection();
    let refused = [
        format!("UPDATE snapshots SET version = 'v2' WHERE snapshot_id = '{id}'"),
        format!(
            "UPDATE snapshots SET state = 'draft', published_utc = NULL WHERE snapshot_id = '{id}'"
        ),
        format!("DELETE FROM snapshots WHERE snapshot_id = '{id}'"),
        format!(
            "INSERT INTO snapshot_sources VALUES ('{id}', 'b.txt', 1, '{}')",
            "0".repeat(64)
        ),
        format!("UPDATE snapshot_sources SET size_bytes = 9 WHERE snapshot_id = '{id}'"),
        format!("DELETE FROM snapshot_sources WHERE snapshot_id = '{id}'"),
        format!("DELETE FROM snapshot_splits WHERE snapshot_id = '{id}'"),
        format!("UPDATE snapshot_splits SET split_fraction = 0.5 WHERE snapshot_id = '{id}'"),
        format!(
            "INSERT INTO snapshot_transforms VALUES ('{id}', 9, '9', '{}')",
            "0".repeat(64)
        ),
        format!("DELETE FROM snapshot_transforms WHERE snapshot_id = '{id}'"),
        format!(
            "INSERT INTO snapshot_plans VALUES ('{id}', '{}')",
            "1".repeat(64)
        ),
        format!("DELETE FROM snapshot_plans WHERE snapshot_id = '{id}'"),
        format!(
            "INSERT INTO object_refs VALUES ('acme', 'dataset', '{id}', 'split', '{}')",
            "2".repeat(64)
        ),
        "UPDATE objects SET retention_class = 'golden'".to_owned(),
        format!(
            "INSERT INTO snapshots (snapshot_id, tenant_id, dataset_name, version, created_utc,
                 state, published_utc, dataset_root_hash, split_hashes, transform_chain_hash,
                 lineage_root_hash, source_count, transform_count, snapshot_size_bytes,
                 retention_class)
             VALUES ('{}', 'acme', 'd', 'v9', 0, 'published', 0, '', '', '', '', 1, 0, 0,
                     'experimental')",
            "3".repeat(64)
        ),
    ];
    for sql in &refused {
        let e = c.execute_batch(sql).map_err(Error::sql("test"));
        let Err(e) = e else {
            panic!("not refused: {sql}");
        };
        assert!(
            e.to_string().contains("SNAPSHOT_PUBLISHED")
                || e.to_string().contains("OBJECT_IMMUTABLE"),
            "{sql}: {e}"
        );
    }
    assert!(store.check()?.is_ok());
    Ok(())
}

#[test]
fn a_draft_can_be_rerecorded_then_published_once() -> Result<()> {
    let (_d, mut store) = open();
    let rec = record(
        "words",
        "v1",
        &[("a.txt", b"1")],
        RetentionClass::Experimental,
        None,
    );
    store.record_draft(&rec, T0)?;
    store.record_draft(&rec, T0 + 1)?;
    assert_eq!(store.summary(rec.snapshot_id())?.state, PublishState::Draft);
    // A draft's rows may change.
    store
        .connection()
        .execute_batch(&format!(
            "DELETE FROM snapshot_plans WHERE snapshot_id = '{}'",
            rec.snapshot_id()
        ))
        .map_err(Error::sql("test"))?;
    store.publish_draft(rec.snapshot_id(), T0 + 2)?;
    let s = store.summary(rec.snapshot_id())?;
    assert_eq!(
        (s.state, s.published_utc),
        (PublishState::Published, Some(T0 + 2))
    );
    assert!(matches!(
        store.publish_draft(Digest([9; 32]), T0),
        Err(Error::SnapshotNotFound { .. })
    ));
    Ok(())
}

#[test]
fn a_publish_stopped_at_any_step_leaves_the_old_state() -> Result<()> {
    for stop_at in 0..9 {
        let (_d, mut store) = open();
        let old = record(
            "words",
            "v1",
            &[("a.txt", b"1")],
            RetentionClass::Experimental,
            None,
        );
        store.publish(&old, T0)?;
        let new = record(
            "words",
            "v2",
            &[("a.txt", b"1"), ("b", b"2")],
            RetentionClass::Experimental,
            None,
        );
        let mut step = 0;
        let result = store.record_with(&new, T0, true, &mut |_| {
            step += 1;
            if step > stop_at {
                Err(Error::InvalidArgument {
                    what: "test",
                    reason: "stopped",
                })
            } else {
                Ok(())
            }
        });
        if stop_at < 8 {
            assert!(result.is_err(), "stop {stop_at}");
            assert!(matches!(
                store.summary(new.snapshot_id()),
                Err(Error::SnapshotNotFound { .. })
            ));
            assert_eq!(count(&store, "snapshots"), 1);
            assert_eq!(count(&store, "objects"), 5);
            // What the stopped publish stored is named by no row; the GC removes it.
            let gc = store.gc(T0, false)?;
            assert!(gc.collected.is_empty());
            // The splits and transforms were stored by the old publish; the new dataset object
            // (the fifth object) is the one file written before the stop.
            let written = usize::from(stop_at >= 4);
            assert_eq!(gc.leftovers.len(), written, "stop {stop_at}");
        } else {
            assert_eq!(result?, PublishOutcome::Published);
            assert_eq!(count(&store, "snapshots"), 2);
        }
        assert!(store.check()?.is_ok());
        assert!(store.gc(T0, true)?.leftovers.is_empty());
    }
    Ok(())
}

#[test]
fn gc_collects_an_expired_snapshot_but_keeps_what_an_active_one_shares() -> Result<()> {
    let (_d, mut store) = open();
    let expired = record(
        "words",
        "v1",
        &[("a.txt", b"1")],
        RetentionClass::Ephemeral,
        Some(T0 + 10),
    );
    let active = record(
        "words",
        "v2",
        &[("a.txt", b"2")],
        RetentionClass::Experimental,
        None,
    );
    store.publish(&expired, T0)?;
    store.publish(&active, T0)?;
    // The two share their split and transform objects: 4 shared + 2 dataset objects.
    assert_eq!(count(&store, "objects"), 6);
    let before = store.gc(T0 + 9, false)?;
    assert!(before.collected.is_empty());
    let dry = store.gc(T0 + 10, true)?;
    assert_eq!(dry.collected.len(), 1);
    assert_eq!(count(&store, "objects"), 6);
    let gc = store.gc(T0 + 10, false)?;
    assert_eq!(gc.collected, dry.collected);
    assert_eq!(gc.collected[0].object.object_id, expired.snapshot_id());
    assert_eq!(gc.snapshots_removed, vec![expired.snapshot_id()]);
    assert!(matches!(
        store.summary(expired.snapshot_id()),
        Err(Error::SnapshotNotFound { .. })
    ));
    assert!(matches!(
        store.objects().get(&gc.collected[0].object),
        Err(Error::ObjectMissing { .. })
    ));
    assert_eq!(count(&store, "snapshot_sources"), 1);
    assert!(store.check()?.is_ok());
    // The active snapshot's closure is whole.
    for o in active.lineage_objects() {
        store.objects().get(&o.as_ref_to())?;
    }
    Ok(())
}

#[test]
fn pins_and_pin_root_refs_keep_their_closure() -> Result<()> {
    let (_d, mut store) = open();
    let gone = RetentionMeta {
        retention_class: RetentionClass::Ephemeral,
        pin_root_refs: vec![],
        gc_eligible_after_utc: None,
    };
    let obj = |n: u64, refs: Vec<ObjectRef>| LineageObject {
        tenant_id: "acme".into(),
        object_type: ObjectType::Artifact,
        payload: Value::Unsigned(n),
        refs,
    };
    let leaf = store.put_object(&obj(1, vec![]), &gone, T0)?;
    let release = store.put_object(&obj(2, vec![leaf.clone()]), &gone, T0)?;
    let other = store.put_object(&obj(3, vec![]), &gone, T0)?;
    let mut pinner_meta = gone.clone();
    pinner_meta
        .pin_root_refs
        .push((ObjectType::Artifact, other.object_id));
    store.put_object(&obj(4, vec![]), &pinner_meta, T0)?;
    store.pin(&release, "model-release-7", T0)?;
    let gc = store.gc(T0, false)?;
    // Only the pinner itself goes (its pin_root_refs kept `other` this time).
    assert_eq!(gc.collected.len(), 1);
    assert_eq!(gc.collected[0].object.object_id, sha256(&[0x04]));
    store.objects().get(&leaf)?;
    assert!(store.unpin(&release, "model-release-7")?);
    let gc = store.gc(T0, false)?;
    assert_eq!(gc.collected.len(), 3);
    assert_eq!(count(&store, "objects"), 0);
    assert!(store.check()?.is_ok());
    // Cross-tenant and dangling references are refused.
    let mut foreign = obj(5, vec![]);
    foreign.refs.push(ObjectRef {
        tenant_id: "other".into(),
        object_type: ObjectType::Artifact,
        object_id: leaf.object_id,
    });
    assert!(matches!(
        store.put_object(&foreign, &gone, T0),
        Err(Error::Lineage(lineage::Error::CrossTenantReference { .. }))
    ));
    assert!(matches!(
        store.put_object(&obj(6, vec![leaf]), &gone, T0),
        Err(Error::Lineage(lineage::Error::MissingLineageRef { .. }))
    ));
    Ok(())
}

#[test]
fn diff_names_the_files_and_splits_that_changed() -> Result<()> {
    let (_d, mut store) = open();
    let a = record(
        "words",
        "v1",
        &[("a", b"1"), ("b", b"2"), ("c", b"3")],
        RetentionClass::Experimental,
        None,
    );
    let inputs = SnapshotInputs::new(
        "acme",
        "v2",
        SplitDefs::from_json(
            r#"[{"split_name":"train","split_fraction":0.5,"split_seed":3},
                                 {"split_name":"val","split_fraction":0.5,"split_seed":3}]"#,
        )?,
        a.inputs().transforms.clone(),
    )?;
    let b = SnapshotRecord::new(
        "words",
        inputs,
        vec![file("a", b"1"), file("b", b"two"), file("d", b"4")],
        vec![],
        RetentionMeta::default(),
    )?;
    store.publish(&a, T0)?;
    store.publish(&b, T0 + 1)?;
    let d = store.diff(a.snapshot_id(), b.snapshot_id())?;
    let paths = |v: &[SourceFile]| {
        v.iter()
            .map(|f| f.path.as_str().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(paths(&d.files_added), ["d"]);
    assert_eq!(paths(&d.files_removed), ["c"]);
    assert_eq!(d.files_changed.len(), 1);
    assert_eq!(d.files_changed[0].after.path.as_str(), "b");
    assert_eq!(d.splits_added[0].name, "val");
    assert_eq!(d.splits_removed[0].name, "test");
    assert_eq!(d.splits_changed[0].before.fraction, 0.75);
    assert!(!d.transforms_changed);
    let log = store.log("words")?;
    assert_eq!(
        log.iter().map(|s| s.version.as_str()).collect::<Vec<_>>(),
        ["v1", "v2"]
    );
    assert!(store.log("nothing")?.is_empty());
    Ok(())
}

#[test]
fn a_catalog_from_a_newer_build_is_refused() -> Result<()> {
    let (d, store) = open();
    store
        .connection()
        .execute_batch("PRAGMA user_version = 99")
        .map_err(Error::sql("test"))?;
    drop(store);
    assert!(matches!(
        Store::open(d.path().join("cat")),
        Err(Error::CatalogVersion { found: 99, .. })
    ));
    Ok(())
}

#[test]
fn a_missing_object_file_is_reported_by_check() -> Result<()> {
    let (d, mut store) = open();
    let rec = record(
        "words",
        "v1",
        &[("a.txt", b"1")],
        RetentionClass::Experimental,
        None,
    );
    store.publish(&rec, T0)?;
    let dataset = rec
        .lineage_objects()
        .pop()
        .expect("dataset object")
        .as_ref_to();
    let path = d
        .path()
        .join("cat")
        .join(OBJECTS_DIR)
        .join(crate::cas::object_key(&dataset)?);
    fs::remove_file(&path).map_err(Error::io(&path))?;
    let report = store.check()?;
    assert_eq!(report.objects.len(), 1);
    assert!(
        report.objects[0].starts_with("OBJECT_MISSING"),
        "{report:?}"
    );
    Ok(())
}

#[test]
fn a_batch_may_reference_its_own_earlier_objects_and_fails_whole() -> Result<()> {
    let (_d, mut store) = open();
    let m = RetentionMeta::default();
    let a = LineageObject {
        tenant_id: "acme".into(),
        object_type: ObjectType::Policy,
        payload: Value::text("a"),
        refs: vec![],
    };
    let b = LineageObject {
        refs: vec![a.as_ref_to()],
        payload: Value::text("b"),
        ..a.clone()
    };
    let refs = store.put_objects(&[(a.clone(), m.clone()), (b.clone(), m.clone())], T0)?;
    assert_eq!(refs, vec![a.as_ref_to(), b.as_ref_to()]);
    // A reference to a later object of the batch is missing: no row of the batch is written.
    let c = LineageObject {
        payload: Value::text("c"),
        refs: vec![],
        ..a.clone()
    };
    let d = LineageObject {
        payload: Value::text("d"),
        refs: vec![c.as_ref_to()],
        ..a
    };
    assert!(matches!(
        store.put_objects(&[(d, m.clone()), (c, m)], T0),
        Err(Error::Lineage(lineage::Error::MissingLineageRef { .. }))
    ));
    assert_eq!(count(&store, "objects"), 2);
    Ok(())
}
