//! `.ald` tables on S3: `moto` in server mode on a free port of 127.0.0.1
//! (`test_support::MotoServer`, killed when the test ends, failed or not), `#[ignore]`d unless
//! `$INTEROP_PYTHON` has `moto[server]` (`.ci/run`). The same SQL over `s3://bucket/ald/` and,
//! through DataFusion's own Parquet reader (`ListingTable`), over the Parquet copies in
//! `s3://bucket/parquet/` gives the same rows; encrypted and signed objects are read under the
//! session's keys and policy; truncated and replaced objects are refused with typed errors.

use std::sync::Arc;

use ald::{ArrowDataset, SaveOptions};
use ald_datafusion::{
    AldTableOptions, enable_ald_url_table, register_ald, register_ald_async, signal_of,
};
use datafusion::prelude::SessionContext;
use envelope_core::{Compression, Signal};
use envelope_crypto::{EncryptTo, OsRng, RecipientSecretKey};
use envelope_sign::{SigningKey, SigningPublicKey};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt as _};

use super::{
    QUERIES, base64, ctx, dataset, encrypted, metric, query, query_error, run_plan, save, scan_of,
};

const BUCKET: &str = "tables";

/// moto with this file's bucket, and a client of it.
struct Moto {
    server: test_support::MotoServer,
    store: Arc<dyn ObjectStore>,
}

impl Moto {
    async fn start() -> Self {
        let server = test_support::MotoServer::start();
        let store: Arc<dyn ObjectStore> = Arc::new(
            AmazonS3Builder::new()
                .with_bucket_name(BUCKET)
                .with_endpoint(server.endpoint())
                .with_allow_http(true)
                .with_access_key_id("test")
                .with_secret_access_key("test")
                .with_region("us-east-1")
                .build()
                .unwrap(),
        );
        server.create_bucket(BUCKET);
        Self { server, store }
    }

    async fn put(&self, key: &str, bytes: Vec<u8>) {
        self.store
            .put(&Path::from(key), bytes.into())
            .await
            .unwrap();
    }

    /// A session whose runtime reads `s3://tables/` through this server (the store registered
    /// as a caller configures one; the `.ald` tables and DataFusion's Parquet reader share it).
    fn session(&self) -> SessionContext {
        let ctx = ctx();
        ctx.register_object_store(
            &url::Url::parse(&format!("s3://{BUCKET}")).unwrap(),
            Arc::clone(&self.store),
        );
        ctx
    }
}

fn parquet_bytes(data: &ArrowDataset) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("copy.parquet");
    ald::interchange::write_file(&path, data).unwrap();
    std::fs::read(path).unwrap()
}

/// The values of printed rows, without the padding their column's width adds.
fn cells(lines: Vec<String>) -> Vec<Vec<String>> {
    lines
        .iter()
        .map(|line| line.split('|').map(|cell| cell.trim().to_owned()).collect())
        .collect()
}

fn url(key: &str) -> String {
    format!("s3://{BUCKET}/{key}")
}

/// Three STREAMING files under `ald/` (zstd, none, and LZ4 encrypted to `alice`), their Parquet
/// copies under `parquet/`, a signed copy of the first under `signed/`.
async fn upload(moto: &Moto, alice: &RecipientSecretKey, publisher: &SigningKey) -> u64 {
    let parts: [(&str, i64, i64, SaveOptions, bool); 3] = [
        ("a", 0, 400, save(Compression::ZstdL3, Some(64)), false),
        ("b", 400, 350, save(Compression::None, Some(100)), false),
        ("c", 750, 250, save(Compression::Lz4, Some(80)), true),
    ];
    let mut stored = 0;
    for (name, start, count, options, encrypt) in parts {
        let data = dataset(start, count);
        let bytes = if encrypt {
            encrypted(&data, &options, EncryptTo::Recipient(&alice.public_key()))
        } else {
            data.to_bytes(&options).unwrap()
        };
        if name == "a" {
            let signed = envelope_sign::sign(&bytes, publisher).unwrap();
            moto.put("signed/a.ald", signed).await;
        }
        let opened =
            ald::StreamingDataset::from_bytes(&bytes[..], &ald::LoadOptions::default()).unwrap();
        stored += (0..opened.num_chunks())
            .map(|chunk| opened.chunk_entry(chunk).unwrap().stored_size)
            .sum::<u64>();
        moto.put(&format!("ald/{name}.ald"), bytes).await;
        moto.put(&format!("parquet/{name}.parquet"), parquet_bytes(&data))
            .await;
    }
    // Not a table file: ignored by the prefix listing.
    moto.put("ald/README.txt", b"three .ald files".to_vec())
        .await;
    stored
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs $INTEROP_PYTHON with moto[server] (.ci/run)"]
async fn sql_over_ald_on_s3_equals_sql_over_its_parquet_copies_on_s3() {
    let moto = Moto::start().await;
    let alice = RecipientSecretKey::generate(&mut OsRng);
    let publisher = SigningKey::from_bytes(&[9; 32]);
    let stored = upload(&moto, &alice, &publisher).await;

    // The .ald tables: one registered from Rust (a blocking call), one from SQL.
    let ald = moto.session();
    ald.sql(&format!(
        "SET ald.x25519_secret = '{}'",
        base64(&alice.to_bytes()[..])
    ))
    .await
    .unwrap();
    let table = register_ald(&ald, "t", &url("ald/"), AldTableOptions::default()).unwrap();
    assert!(table.is_remote());
    assert_eq!(
        table
            .files()
            .iter()
            .map(|file| file.path.display().to_string())
            .collect::<Vec<_>>(),
        [url("ald/a.ald"), url("ald/b.ald"), url("ald/c.ald")]
    );
    ald.sql(&format!(
        "CREATE EXTERNAL TABLE u STORED AS ALD LOCATION '{}'",
        url("ald/")
    ))
    .await
    .unwrap();

    // The reference: DataFusion's own Parquet reader (ListingTable) over the same bucket, through
    // the same registered store.
    let parquet = moto.session();
    for name in ["t", "u"] {
        parquet
            .sql(&format!(
                "CREATE EXTERNAL TABLE {name} STORED AS PARQUET LOCATION '{}'",
                url("parquet/")
            ))
            .await
            .unwrap();
    }
    for sql in QUERIES {
        let expected = query(&parquet, sql).await;
        assert!(!expected.is_empty(), "{sql}");
        assert_eq!(query(&ald, sql).await, expected, "{sql}");
    }

    // What a full scan cost: every chunk's stored bytes needed; fetched, those plus each
    // object's head and tail (64 KiB each, cut to the object) and nothing else.
    let (plan, rows) = run_plan(&ald, "SELECT * FROM t").await;
    assert_eq!(rows, 1000);
    let scan = scan_of(&plan).expect("an AldScanExec");
    let chunks = metric(scan, "chunks_decoded");
    assert_eq!(chunks, 7 + 4 + 4);
    assert_eq!(metric(scan, "bytes_needed") as u64, stored);
    // Per object: two requests to open it again, one per chunk.
    assert_eq!(metric(scan, "requests"), 3 * 2 + chunks);
    let fetched = metric(scan, "bytes_fetched") as u64;
    assert!(fetched > stored, "{fetched} {stored}");
    assert!(fetched <= stored + 3 * 2 * 64 * 1024, "{fetched} {stored}");
    let explained = query(&ald, "EXPLAIN ANALYZE SELECT SUM(qty) FROM t")
        .await
        .join("\n");
    for shown in [
        "requests=",
        "bytes_fetched=",
        "bytes_needed=",
        "AldScanExec",
    ] {
        assert!(explained.contains(shown), "{shown}: {explained}");
    }

    // Paths in FROM: a prefix of .ald objects is an AldTable, a prefix of Parquet files is
    // DataFusion's.
    let urls = enable_ald_url_table(moto.session());
    urls.sql(&format!(
        "SET ald.x25519_secret = '{}'",
        base64(&alice.to_bytes()[..])
    ))
    .await
    .unwrap();
    for sql in [
        "SELECT city, COUNT(*), SUM(fare), MAX(price) FROM '{}' WHERE qty > 2 GROUP BY city \
         ORDER BY city",
        "SELECT id, fare FROM '{}' WHERE city = 'Lima' ORDER BY fare DESC NULLS LAST, id LIMIT 9",
    ] {
        let over = |prefix: &str| sql.replace("{}", &url(prefix));
        let expected = query(&urls, &over("parquet/")).await;
        assert!(!expected.is_empty(), "{sql}");
        assert_eq!(
            cells(query(&urls, &over("ald/")).await),
            cells(expected.clone()),
            "{sql}"
        );
        // Through the registered table: the same values (the columns' names, so widths, differ).
        assert_eq!(
            cells(query(&ald, &sql.replace("'{}'", "t")).await),
            cells(expected),
            "{sql}"
        );
    }
    assert_eq!(
        query(
            &urls,
            &format!("SELECT COUNT(*) FROM '{}'", url("ald/b.ald"))
        )
        .await,
        ["| 350      |"]
    );

    // Under a required signature, the signed object is read and the unsigned ones refused.
    let strict = moto.session();
    let key = SigningPublicKey::of(&publisher);
    strict
        .sql(&format!("SET ald.trusted_keys = 'ed25519 {key}'"))
        .await
        .unwrap();
    strict
        .sql("SET ald.require_signature = true")
        .await
        .unwrap();
    register_ald_async(&strict, "s", &url("signed/"), AldTableOptions::default())
        .await
        .unwrap();
    assert_eq!(
        query(&strict, "SELECT COUNT(*), SUM(qty) FROM s").await,
        query(&parquet, "SELECT COUNT(*), SUM(qty) FROM t WHERE id < 400").await
    );
    let error = register_ald_async(&strict, "r", &url("ald/"), AldTableOptions::default())
        .await
        .unwrap_err();
    assert_eq!(signal_of(&error), Some(Signal::SignatureInvalid), "{error}");
    assert!(error.to_string().contains(&url("ald/a.ald")), "{error}");

    // A prefix without .ald objects: a clear Usage error naming it.
    for empty in ["parquet/", "nothing/here/"] {
        let error = register_ald(&ald, "e", &url(empty), AldTableOptions::default()).unwrap_err();
        assert_eq!(signal_of(&error), Some(Signal::Usage), "{error}");
        assert!(
            error
                .to_string()
                .contains(&format!("Usage: no .ald file in {}", url(empty))),
            "{error}"
        );
    }
    let error = query_error(
        &ald,
        &format!(
            "CREATE EXTERNAL TABLE e STORED AS ALD LOCATION '{}'",
            url("nothing/")
        ),
    )
    .await;
    assert_eq!(signal_of(&error), Some(Signal::Usage), "{error}");
    drop(moto.server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs $INTEROP_PYTHON with moto[server] (.ci/run)"]
async fn truncated_and_replaced_objects_are_refused_with_typed_errors() {
    let moto = Moto::start().await;
    let bytes = dataset(0, 500)
        .to_bytes(&save(Compression::ZstdL3, Some(100)))
        .unwrap();
    let ctx = moto.session();

    // Truncated before registration: refused then.
    moto.put("cut/t.ald", bytes[..bytes.len() - 700].to_vec())
        .await;
    let error = register_ald(&ctx, "cut", &url("cut/"), AldTableOptions::default()).unwrap_err();
    assert!(
        matches!(
            signal_of(&error),
            Some(Signal::InvalidFormat | Signal::ChecksumMismatch)
        ),
        "{error}"
    );
    assert!(error.to_string().contains(&url("cut/t.ald")), "{error}");

    // Truncated after registration: the scan refuses it (its size is not the one planned from).
    moto.put("short/t.ald", bytes.clone()).await;
    register_ald(
        &ctx,
        "short",
        &url("short/t.ald"),
        AldTableOptions::default(),
    )
    .unwrap();
    moto.put("short/t.ald", bytes[..bytes.len() / 2].to_vec())
        .await;
    let error = query_error(&ctx, "SELECT * FROM short").await;
    assert!(signal_of(&error).is_some(), "{error}");

    // Replaced by another valid file of the same schema and size between planning and scan:
    // refused (its ETag is not the one planned from), never its rows.
    let other = dataset(1000, 500)
        .to_bytes(&save(Compression::ZstdL3, Some(100)))
        .unwrap();
    moto.put("replaced/t.ald", bytes.clone()).await;
    register_ald(
        &ctx,
        "replaced",
        &url("replaced/"),
        AldTableOptions::default(),
    )
    .unwrap();
    let plan = ctx
        .sql("SELECT SUM(id) FROM replaced")
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    moto.put("replaced/t.ald", other).await;
    let error = datafusion::physical_plan::collect(plan, ctx.task_ctx())
        .await
        .unwrap_err();
    assert_eq!(signal_of(&error), Some(Signal::InvalidFormat), "{error}");
    assert!(
        error
            .to_string()
            .contains("changed since the table was registered"),
        "{error}"
    );
}
