//! `.ald` tables on S3 through Ballista: `moto` in server mode on loopback
//! (`test_support::MotoServer`, `#[ignore]`d unless `$INTEROP_PYTHON` has `moto[server]`,
//! `.ci/run`). The client registers `s3://tables/ald/`; the plan carries each object's store URL,
//! key and ETag, never a credential; the scheduler plans from the chunk indexes the client read;
//! two executors read their tasks' chunks by range through their own stores, and the answer is
//! plain DataFusion's over the same files on disk. An object replaced after planning is refused
//! on the executor by its ETag.

use std::sync::Arc;

use ald_ballista::local::{ExecutorTasks, LocalCluster, remote_context};
use ald_datafusion::{AldOptions, AldTableOptions, enable_ald_url_table, register_ald_async};
use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt as _};

use super::{QUERY, local_answer, run, write_table};

const BUCKET: &str = "tables";

/// A client of `server`'s bucket (each process of a deployment builds its own).
fn store(server: &test_support::MotoServer) -> Arc<dyn ObjectStore> {
    Arc::new(
        AmazonS3Builder::new()
            .with_bucket_name(BUCKET)
            .with_endpoint(server.endpoint())
            .with_allow_http(true)
            .with_access_key_id("test")
            .with_secret_access_key("test")
            .with_region("us-east-1")
            .build()
            .unwrap(),
    )
}

fn bucket_url() -> url::Url {
    url::Url::parse(&format!("s3://{BUCKET}")).unwrap()
}

/// Every file of `dir` uploaded under `prefix`.
async fn upload(store: &Arc<dyn ObjectStore>, dir: &std::path::Path, prefix: &str) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let key = format!("{prefix}{}", path.file_name().unwrap().to_str().unwrap());
        let bytes = std::fs::read(&path).unwrap();
        store.put(&Path::from(key), bytes.into()).await.unwrap();
    }
}

/// A moto server with bucket `tables`, and `files` STREAMING files of `chunks` chunks of
/// `chunk_rows` rows written to a temporary directory and uploaded under `ald/`.
async fn server_with_table(
    files: i64,
    chunks: i64,
    chunk_rows: i64,
) -> (test_support::MotoServer, tempfile::TempDir) {
    let server = test_support::MotoServer::start();
    server.create_bucket(BUCKET);
    let dir = tempfile::tempdir().unwrap();
    write_table(dir.path(), files, chunks, chunk_rows);
    upload(&store(&server), dir.path(), "ald/").await;
    (server, dir)
}

/// `s3://tables/ald/` registered on `ctx` as `trips`.
async fn register_trips(ctx: &datafusion::prelude::SessionContext) {
    register_ald_async(ctx, "trips", "s3://tables/ald/", AldTableOptions::default())
        .await
        .unwrap();
}

/// A cluster of two executors whose runtimes read `s3://tables/` through their own client of
/// `server`, and a client session of it with its own client too.
async fn cluster_and_client(
    server: &test_support::MotoServer,
) -> (LocalCluster, datafusion::prelude::SessionContext) {
    let stores = Arc::new(DefaultObjectStoreRegistry::new());
    stores.register_store(&bucket_url(), store(server));
    let cluster = LocalCluster::start_with_stores(2, 1, AldOptions::new(), Some(stores))
        .await
        .unwrap();
    let ctx = remote_context(&cluster.scheduler_url(), AldOptions::new()).unwrap();
    ctx.register_object_store(&bucket_url(), store(server));
    (cluster, ctx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs $INTEROP_PYTHON with moto[server] (.ci/run)"]
async fn a_prefix_on_s3_is_queried_by_two_executors_reading_by_range() {
    // 4 objects of 3 chunks: 12 units of scan work, so 12 scan tasks.
    let (server, dir) = server_with_table(4, 3, 20_000).await;
    let expected = local_answer(dir.path(), QUERY).await;

    let (cluster, ctx) = cluster_and_client(&server).await;
    register_trips(&ctx).await;
    assert_eq!(run(&ctx, QUERY).await.unwrap(), expected);
    let tasks = cluster.tasks();
    assert!(
        tasks.iter().all(|executor| executor.total() > 0),
        "an executor ran no task: {tasks:?}"
    );
    let mut per_stage = std::collections::BTreeMap::<usize, usize>::new();
    for executor in &tasks {
        for (&stage, &count) in &executor.by_stage {
            *per_stage.entry(stage).or_default() += count;
        }
    }
    assert!(per_stage.values().any(|&count| count == 12), "{tasks:?}");

    // The URL itself as a table, as in DataFusion SQL on one machine, and still run by the
    // cluster (its executors run another 12 scan tasks).
    let before: usize = tasks.iter().map(ExecutorTasks::total).sum();
    let ctx = enable_ald_url_table(ctx);
    let by_url = QUERY.replace("FROM trips", "FROM 's3://tables/ald/'");
    assert_eq!(run(&ctx, &by_url).await.unwrap(), expected);
    let after: usize = cluster.tasks().iter().map(ExecutorTasks::total).sum();
    assert!(after >= before + 12, "{before} tasks, then {after}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs $INTEROP_PYTHON with moto[server] (.ci/run)"]
async fn executors_read_through_their_own_stores_not_the_clients() {
    let (data, _dir) = server_with_table(1, 2, 500).await;
    let elsewhere = test_support::MotoServer::start();
    elsewhere.create_bucket(BUCKET);
    // The client reads `data`; the executors' `s3://tables/` is another server's empty bucket.
    let stores = Arc::new(DefaultObjectStoreRegistry::new());
    stores.register_store(&bucket_url(), store(&elsewhere));
    let cluster = LocalCluster::start_with_stores(1, 1, AldOptions::new(), Some(stores))
        .await
        .unwrap();
    let ctx = remote_context(&cluster.scheduler_url(), AldOptions::new()).unwrap();
    ctx.register_object_store(&bucket_url(), store(&data));
    register_trips(&ctx).await;
    let error = run(&ctx, QUERY).await.unwrap_err().to_string();
    assert!(
        error.contains("s3://tables/ald/part-0.ald") && error.contains("NotFound"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs $INTEROP_PYTHON with moto[server] (.ci/run)"]
async fn an_object_replaced_after_planning_is_refused_on_the_executor_by_its_etag() {
    let (server, dir) = server_with_table(2, 2, 500).await;
    let client = store(&server);
    let (_cluster, ctx) = cluster_and_client(&server).await;
    register_trips(&ctx).await;
    // Same size, same chunk index and CRCs, every structural check passing: only the ETag tells
    // this object from the one planned from (a chunk rewritten, its CRC-32C forged).
    let good = std::fs::read(dir.path().join("part-1.ald")).unwrap();
    let format = envelope_core::Format::Dataset;
    let chunk = test_support::stored_chunk(&good, format, 1);
    let replaced = test_support::forge_chunk(&good, format, 1, &vec![0x5a; chunk.len()]);
    assert_eq!(replaced.len(), good.len());
    client
        .put(&Path::from("ald/part-1.ald"), replaced.into())
        .await
        .unwrap();
    let error = run(&ctx, QUERY).await.unwrap_err().to_string();
    // Ballista hands the executor's error back as its Debug text: ald-datafusion's `Changed`.
    assert!(
        error.contains("Changed") && error.contains("its ETag"),
        "{error}"
    );
}
