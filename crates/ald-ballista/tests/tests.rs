//! `.ald` tables queried through a Ballista scheduler and two executors on loopback, in this
//! process: a `GROUP BY` (a hash shuffle between the executors) gives DataFusion's own answer and
//! both executors run tasks; encrypted files are read with the executors' keys, which no plan
//! carries; a file replaced after planning is refused on the executor; and a physical plan holding
//! an `.ald` scan survives DataFusion's protobuf round trip through the codec.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use ald::arrow_array::{ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray};
use ald::{ArrowDataset, DatasetType, SaveOptions};
use ald_ballista::local::{LocalCluster, remote_context};
use ald_ballista::{AldLogicalCodec, AldPhysicalCodec};
use ald_datafusion::{AldOptions, AldTableOptions, register_ald, register_ald_format};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::SessionContext;
use envelope_core::Compression;
use envelope_crypto::{EncryptOptions, EncryptTo, OsRng, RecipientSecretKey};

mod s3;

const CITIES: [&str; 5] = ["Berlin", "Lagos", "Lima", "Osaka", "Perth"];

/// Rows `start..start + count`: every value a pure function of the row; fares are multiples of
/// 1/4, so their sums are exact in any order.
fn rows(start: i64, count: i64) -> RecordBatch {
    let ids: Vec<i64> = (start..start + count).collect();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("id", Arc::new(Int64Array::from(ids.clone()))),
        (
            "city",
            Arc::new(StringArray::from_iter(ids.iter().map(|&i| {
                (i % 11 != 3).then(|| CITIES[usize::try_from((i * 7).rem_euclid(5)).unwrap()])
            }))),
        ),
        (
            "fare",
            Arc::new(Float64Array::from_iter(ids.iter().map(|&i| {
                (i % 13 != 5).then(|| f64::from(i32::try_from(i.rem_euclid(97)).unwrap()) * 0.25)
            }))),
        ),
        (
            "qty",
            Arc::new(Int32Array::from_iter_values(
                ids.iter()
                    .map(|&i| i32::try_from(i.rem_euclid(10)).unwrap()),
            )),
        ),
    ];
    RecordBatch::try_from_iter(columns).unwrap()
}

fn streaming(chunk_rows: usize) -> SaveOptions {
    SaveOptions::new(DatasetType::Tabular, Compression::ZstdL3).streaming(chunk_rows)
}

/// `files` STREAMING files of `chunks` chunks of `chunk_rows` rows each in `dir`.
fn write_table(dir: &Path, files: i64, chunks: i64, chunk_rows: i64) {
    let per_file = chunks * chunk_rows;
    for file in 0..files {
        let data = ArrowDataset::from_batch(rows(file * per_file, per_file));
        let options = streaming(usize::try_from(chunk_rows).unwrap());
        std::fs::write(
            dir.join(format!("part-{file}.ald")),
            data.to_bytes(&options).unwrap(),
        )
        .unwrap();
    }
}

const QUERY: &str = "SELECT city, COUNT(*) AS trips, SUM(qty) AS qty, SUM(fare) AS fare, \
                     MIN(id) AS first, MAX(id) AS last \
                     FROM trips GROUP BY city ORDER BY city NULLS FIRST";

async fn run(ctx: &SessionContext, sql: &str) -> datafusion::error::Result<String> {
    let batches = ctx.sql(sql).await?.collect().await?;
    Ok(pretty_format_batches(&batches)?.to_string())
}

/// The same query in plain DataFusion, in this process.
async fn local_answer(dir: &Path, sql: &str) -> String {
    let ctx = SessionContext::new();
    register_ald_format(&ctx);
    register_ald(
        &ctx,
        "trips",
        dir.to_str().unwrap(),
        AldTableOptions::default(),
    )
    .unwrap();
    run(&ctx, sql).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_group_by_runs_on_two_executors_and_gives_datafusions_answer() {
    let dir = tempfile::tempdir().unwrap();
    // 4 files of 3 chunks: 12 units of scan work, so 12 scan tasks.
    write_table(dir.path(), 4, 3, 20_000);
    let cluster = LocalCluster::start(2, 1, AldOptions::new()).await.unwrap();
    let ctx = remote_context(&cluster.scheduler_url(), AldOptions::new()).unwrap();
    register_ald(
        &ctx,
        "trips",
        dir.path().to_str().unwrap(),
        AldTableOptions::default(),
    )
    .unwrap();
    let started = Instant::now();
    let distributed = run(&ctx, QUERY).await.unwrap();
    let elapsed = started.elapsed();
    let expected = local_answer(dir.path(), QUERY).await;
    assert_eq!(distributed, expected);
    assert!(distributed.contains("| Berlin |"), "{distributed}");

    let tasks = cluster.tasks();
    assert_eq!(tasks.len(), 2);
    for executor in &tasks {
        assert!(
            executor.total() > 0,
            "an executor ran no task: {tasks:?} ({elapsed:?})"
        );
    }
    // At least the scan stage and the stage after the shuffle; the scan stage has one task per
    // unit of scan work (12 chunks).
    let mut per_stage = std::collections::BTreeMap::<usize, usize>::new();
    for executor in &tasks {
        for (&stage, &count) in &executor.by_stage {
            *per_stage.entry(stage).or_default() += count;
        }
    }
    assert!(per_stage.len() >= 2, "{tasks:?}");
    assert!(per_stage.values().any(|&count| count == 12), "{tasks:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn encrypted_tables_are_read_with_the_executors_keys_which_no_plan_carries() {
    let dir = tempfile::tempdir().unwrap();
    let key = RecipientSecretKey::generate(&mut OsRng);
    for file in 0..2 {
        let data = ArrowDataset::from_batch(rows(file * 3_000, 3_000));
        let parts = data.to_parts(&streaming(1_000)).unwrap();
        let bytes = envelope_crypto::encrypt(
            &parts,
            EncryptTo::Recipient(&key.public_key()),
            EncryptOptions::default(),
            &mut OsRng,
        )
        .unwrap()
        .to_bytes()
        .unwrap();
        std::fs::write(dir.path().join(format!("part-{file}.ald")), bytes).unwrap();
    }
    let sql = "SELECT city, SUM(qty) AS qty FROM trips GROUP BY city ORDER BY city NULLS FIRST";
    let local = {
        let ctx = SessionContext::new_with_config(
            datafusion::prelude::SessionConfig::new()
                .with_option_extension(AldOptions::new().with_recipient(key.clone())),
        );
        register_ald(
            &ctx,
            "trips",
            dir.path().to_str().unwrap(),
            AldTableOptions::default(),
        )
        .unwrap();
        run(&ctx, sql).await.unwrap()
    };

    // The executors hold the key; the client has none (registration reads no payload).
    let keyed = LocalCluster::start(2, 1, AldOptions::new().with_recipient(key.clone()))
        .await
        .unwrap();
    let ctx = remote_context(&keyed.scheduler_url(), AldOptions::new()).unwrap();
    register_ald(
        &ctx,
        "trips",
        dir.path().to_str().unwrap(),
        AldTableOptions::default(),
    )
    .unwrap();
    assert_eq!(run(&ctx, sql).await.unwrap(), local);

    // Executors without the key refuse the files, whatever key the client holds: the client's
    // secret is not in the plan or in the settings it sends.
    let keyless = LocalCluster::start(1, 1, AldOptions::new()).await.unwrap();
    let ctx = remote_context(
        &keyless.scheduler_url(),
        AldOptions::new().with_recipient(key),
    )
    .unwrap();
    register_ald(
        &ctx,
        "trips",
        dir.path().to_str().unwrap(),
        AldTableOptions::default(),
    )
    .unwrap();
    let error = run(&ctx, sql).await.unwrap_err().to_string();
    assert!(error.contains("DecryptionFailed"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_file_replaced_after_planning_is_refused_on_the_executor() {
    let dir = tempfile::tempdir().unwrap();
    write_table(dir.path(), 2, 2, 500);
    let cluster = LocalCluster::start(1, 1, AldOptions::new()).await.unwrap();
    let ctx = remote_context(&cluster.scheduler_url(), AldOptions::new()).unwrap();
    register_ald(
        &ctx,
        "trips",
        dir.path().to_str().unwrap(),
        AldTableOptions::default(),
    )
    .unwrap();
    // Same schema, other chunking: the chunk index the plan carries no longer matches.
    let data = ArrowDataset::from_batch(rows(0, 1_000));
    std::fs::write(
        dir.path().join("part-1.ald"),
        data.to_bytes(&streaming(300)).unwrap(),
    )
    .unwrap();
    let error = run(&ctx, QUERY).await.unwrap_err().to_string();
    // Ballista hands the executor's error back as its Debug text: ald-datafusion's `Changed`.
    assert!(
        error.contains("Changed") && error.contains("its chunk index"),
        "{error}"
    );
}

#[tokio::test]
async fn a_physical_plan_with_an_ald_scan_survives_the_protobuf_round_trip() {
    use datafusion_proto::bytes::{
        physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
    };
    let dir = tempfile::tempdir().unwrap();
    write_table(dir.path(), 2, 3, 400);
    let ctx = SessionContext::new();
    register_ald_format(&ctx);
    register_ald(
        &ctx,
        "trips",
        dir.path().to_str().unwrap(),
        AldTableOptions::default(),
    )
    .unwrap();
    let sql = "SELECT city, SUM(fare) AS fare FROM trips WHERE qty > 2 GROUP BY city \
               ORDER BY city NULLS FIRST LIMIT 3";
    let plan = ctx
        .sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let codec = AldPhysicalCodec::default();
    let bytes = physical_plan_to_bytes_with_extension_codec(Arc::clone(&plan), &codec).unwrap();
    let back =
        physical_plan_from_bytes_with_extension_codec(&bytes, &ctx.task_ctx(), &codec).unwrap();
    let shown = |plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>| {
        datafusion::physical_plan::displayable(plan.as_ref())
            .indent(true)
            .to_string()
    };
    assert_eq!(shown(&back), shown(&plan));
    assert!(shown(&back).contains("AldScanExec: files=2, units=6"));
    let batches = datafusion::physical_plan::collect(back, ctx.task_ctx())
        .await
        .unwrap();
    assert_eq!(
        pretty_format_batches(&batches).unwrap().to_string(),
        run(&ctx, sql).await.unwrap()
    );
    // And the logical codec carries the table itself (the client's side of a Ballista query).
    let logical = ctx.sql(sql).await.unwrap().into_optimized_plan().unwrap();
    let logical_codec = AldLogicalCodec::default();
    let bytes = datafusion_proto::bytes::logical_plan_to_bytes_with_extension_codec(
        &logical,
        &logical_codec,
    )
    .unwrap();
    let back = datafusion_proto::bytes::logical_plan_from_bytes_with_extension_codec(
        &bytes,
        &ctx.task_ctx(),
        &logical_codec,
    )
    .unwrap();
    assert_eq!(format!("{back}"), format!("{logical}"));
}
