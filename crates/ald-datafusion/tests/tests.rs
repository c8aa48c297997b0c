//! SQL over `.ald` tables through DataFusion, checked against the same data as Parquet read by
//! DataFusion's own Parquet reader; keys and signatures from the session configuration; typed
//! errors for wrong keys, tampered and truncated files; exact statistics; what projection and
//! `LIMIT` save, read from the scan's metrics; and (`s3.rs`, against moto) the same over S3.

mod s3;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ald::arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array,
    RecordBatch, StringArray, TimestampMicrosecondArray,
};
use ald::{ArrowDataset, DatasetType, SaveOptions};
use ald_datafusion::{
    AldOptions, AldScanExec, AldTable, AldTableOptions, enable_ald_url_table, register_ald,
    register_ald_format, signal_of,
};
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::common::stats::Precision;
use datafusion::error::DataFusionError;
use datafusion::physical_plan::{ExecutionPlan, StatisticsArgs, StatisticsContext, collect};
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use envelope_core::{Compression, Signal};
use envelope_crypto::{
    Argon2Params, EncryptOptions, EncryptTo, OsRng, Password, RecipientSecretKey,
};
use envelope_sign::{SigningKey, SigningPublicKey};

const CITIES: [&str; 5] = ["Berlin", "Lagos", "Lima", "Osaka", "Perth"];

/// Rows `start..start + count` of the test table: every value a pure function of the row, floats
/// multiples of 1/4 (so sums are exact in any order), a null every few rows.
fn rows(start: i64, count: i64) -> RecordBatch {
    let ids: Vec<i64> = (start..start + count).collect();
    let pick = |i: i64, m: i64| usize::try_from(i.rem_euclid(m)).unwrap();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("id", Arc::new(Int64Array::from(ids.clone()))),
        (
            "city",
            Arc::new(StringArray::from_iter(
                ids.iter()
                    .map(|&i| (i % 11 != 3).then(|| CITIES[pick(i * 7, 5)])),
            )),
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
        (
            "paid",
            Arc::new(BooleanArray::from_iter(
                ids.iter().map(|&i| (i % 17 != 0).then_some(i % 3 == 0)),
            )),
        ),
        (
            "day",
            Arc::new(Date32Array::from_iter_values(
                ids.iter()
                    .map(|&i| 19_000 + i32::try_from(i.rem_euclid(400)).unwrap()),
            )),
        ),
        (
            "at",
            Arc::new(
                TimestampMicrosecondArray::from_iter_values(
                    ids.iter().map(|&i| 1_700_000_000_000_000 + i * 1_234_567),
                )
                .with_timezone("UTC"),
            ),
        ),
        (
            "price",
            Arc::new(
                Decimal128Array::from_iter(
                    ids.iter()
                        .map(|&i| (i % 7 != 1).then_some(i128::from(i) * 101 % 100_000)),
                )
                .with_precision_and_scale(12, 2)
                .unwrap(),
            ),
        ),
    ];
    RecordBatch::try_from_iter(columns).unwrap()
}

fn dataset(start: i64, count: i64) -> ArrowDataset {
    ArrowDataset::from_batch(rows(start, count))
}

fn save(compression: Compression, chunk_rows: Option<usize>) -> SaveOptions {
    let options = SaveOptions::new(DatasetType::Tabular, compression);
    match chunk_rows {
        Some(rows) => options.streaming(rows),
        None => options,
    }
}

fn write_ald(path: &Path, data: &ArrowDataset, options: &SaveOptions) -> PathBuf {
    std::fs::write(path, data.to_bytes(options).unwrap()).unwrap();
    path.to_owned()
}

/// The Parquet copy of `data`, written by ald's interchange (parquet 60).
fn write_parquet(path: &Path, data: &ArrowDataset) -> PathBuf {
    ald::interchange::write_file(path, data).unwrap();
    path.to_owned()
}

fn ctx() -> SessionContext {
    let ctx = SessionContext::new_with_config(
        SessionConfig::new()
            .with_target_partitions(3)
            .with_information_schema(true),
    );
    register_ald_format(&ctx);
    ctx
}

/// The rows of `sql`'s result, as printed, in order when the query orders them, else sorted.
async fn query(ctx: &SessionContext, sql: &str) -> Vec<String> {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let text = pretty_format_batches(&batches).unwrap().to_string();
    let mut lines: Vec<String> = text
        .lines()
        .filter(|line| line.starts_with('|'))
        .skip(1)
        .map(str::to_owned)
        .collect();
    if !sql.contains("ORDER BY") {
        lines.sort();
    }
    lines
}

/// The one integer `sql` returns.
async fn count(ctx: &SessionContext, sql: &str) -> i64 {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let column = batches[0].column(0);
    column
        .as_any()
        .downcast_ref::<datafusion::arrow::array::Int64Array>()
        .unwrap()
        .value(0)
}

async fn query_error(ctx: &SessionContext, sql: &str) -> DataFusionError {
    match ctx.sql(sql).await {
        Ok(frame) => frame.collect().await.expect_err(sql),
        Err(error) => error,
    }
}

/// The queries every table is checked with: `t` and, for the join, `u`.
const QUERIES: &[&str] = &[
    "SELECT * FROM t ORDER BY id",
    "SELECT id, city, fare FROM t WHERE qty > 5 AND paid ORDER BY id",
    "SELECT city, COUNT(*) AS n, SUM(fare) AS total, MIN(day) AS first, MAX(price) AS top, \
     COUNT(paid) AS known FROM t GROUP BY city ORDER BY city",
    "SELECT id, fare FROM t ORDER BY fare DESC NULLS LAST, id LIMIT 7",
    "SELECT id FROM t ORDER BY id LIMIT 5",
    "SELECT COUNT(*) FROM t",
    "SELECT COUNT(*) FROM t WHERE city IS NULL",
    "SELECT qty, SUM(price) FROM t WHERE at > TIMESTAMP '2023-11-14T22:20:00Z' GROUP BY qty \
     ORDER BY qty",
    "SELECT t.id, u.city FROM t JOIN u ON t.id = u.id + 1 WHERE t.qty < 3 ORDER BY t.id",
    "SELECT u.city, COUNT(*) FROM t JOIN u ON t.city = u.city GROUP BY u.city ORDER BY u.city",
];

/// Every query of [`QUERIES`] gives the same rows on the `.ald` tables as on their Parquet copies.
async fn assert_same_as_parquet(ald: &SessionContext, t: &Path, u: &Path) {
    let parquet = SessionContext::new();
    parquet
        .register_parquet("t", t.to_str().unwrap(), ParquetReadOptions::default())
        .await
        .unwrap();
    parquet
        .register_parquet("u", u.to_str().unwrap(), ParquetReadOptions::default())
        .await
        .unwrap();
    for sql in QUERIES {
        let expected = query(&parquet, sql).await;
        assert!(!expected.is_empty(), "{sql}");
        assert_eq!(query(ald, sql).await, expected, "{sql}");
    }
}

#[tokio::test]
async fn sql_on_one_streaming_file_equals_sql_on_its_parquet_copy() {
    let dir = tempfile::tempdir().unwrap();
    let data = dataset(0, 1000);
    let t = write_ald(
        &dir.path().join("t.ald"),
        &data,
        &save(Compression::ZstdL3, Some(128)),
    );
    let other = dataset(500, 300);
    let u = write_ald(
        &dir.path().join("u.ald"),
        &other,
        &save(Compression::None, None),
    );
    let ctx = ctx();
    let table = register_ald(&ctx, "t", t.to_str().unwrap(), AldTableOptions::default()).unwrap();
    assert_eq!(table.files()[0].chunks.len(), 8);
    register_ald(&ctx, "u", u.to_str().unwrap(), AldTableOptions::default()).unwrap();
    let t_parquet = write_parquet(&dir.path().join("t.parquet"), &data);
    let u_parquet = write_parquet(&dir.path().join("u.parquet"), &other);
    assert_same_as_parquet(&ctx, &t_parquet, &u_parquet).await;
}

#[tokio::test]
async fn a_directory_of_files_is_one_table() {
    let dir = tempfile::tempdir().unwrap();
    let parts = dir.path().join("parts");
    std::fs::create_dir(&parts).unwrap();
    // Three files: STREAMING zstd, STREAMING LZ4 with a short last chunk, and one whole payload.
    write_ald(
        &parts.join("part-0.ald"),
        &dataset(0, 400),
        &save(Compression::ZstdL3, Some(100)),
    );
    write_ald(
        &parts.join("part-1.ald"),
        &dataset(400, 350),
        &save(Compression::Lz4, Some(64)),
    );
    write_ald(
        &parts.join("part-2.ald"),
        &dataset(750, 250),
        &save(Compression::None, None),
    );
    std::fs::write(parts.join("README.txt"), "not a dataset").unwrap();
    let ctx = ctx();
    let table = register_ald(
        &ctx,
        "t",
        &format!("{}/", parts.display()),
        AldTableOptions::default(),
    )
    .unwrap();
    assert_eq!(table.files().len(), 3);
    let u_data = dataset(100, 200);
    let u = write_ald(
        &dir.path().join("u.ald"),
        &u_data,
        &save(Compression::Lz4, Some(50)),
    );
    register_ald(&ctx, "u", u.to_str().unwrap(), AldTableOptions::default()).unwrap();
    let t_parquet = write_parquet(&dir.path().join("t.parquet"), &dataset(0, 1000));
    let u_parquet = write_parquet(&dir.path().join("u.parquet"), &u_data);
    assert_same_as_parquet(&ctx, &t_parquet, &u_parquet).await;

    // The same directory through CREATE EXTERNAL TABLE, and a file path in FROM.
    ctx.sql(&format!(
        "CREATE EXTERNAL TABLE t2 STORED AS ALD LOCATION '{}/'",
        parts.display()
    ))
    .await
    .unwrap();
    assert_eq!(
        query(&ctx, "SELECT COUNT(*) AS n, SUM(qty) AS q FROM t2").await,
        query(&ctx, "SELECT COUNT(*) AS n, SUM(qty) AS q FROM t").await
    );
    let url_ctx = enable_ald_url_table(ctx);
    let sql = format!(
        "SELECT id, city FROM '{}' ORDER BY id LIMIT 3",
        parts.join("part-1.ald").display()
    );
    assert_eq!(
        query(&url_ctx, &sql).await,
        query(
            &url_ctx,
            "SELECT id, city FROM t WHERE id >= 400 ORDER BY id LIMIT 3"
        )
        .await
    );
    // Other paths still go to DataFusion's own readers.
    let parquet_sql = format!("SELECT COUNT(*) FROM '{}'", u_parquet.display());
    assert_eq!(
        query(&url_ctx, &parquet_sql).await,
        query(&url_ctx, "SELECT COUNT(*) FROM u").await
    );
}

#[tokio::test]
async fn files_of_different_schemas_are_refused_as_one_table() {
    let dir = tempfile::tempdir().unwrap();
    write_ald(
        &dir.path().join("a.ald"),
        &dataset(0, 10),
        &save(Compression::None, None),
    );
    let other =
        RecordBatch::try_from_iter([("id", Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef)])
            .unwrap();
    write_ald(
        &dir.path().join("b.ald"),
        &ArrowDataset::from_batch(other),
        &save(Compression::None, None),
    );
    let error = register_ald(
        &ctx(),
        "t",
        dir.path().to_str().unwrap(),
        AldTableOptions::default(),
    )
    .unwrap_err();
    assert_eq!(signal_of(&error), Some(Signal::SchemaMismatch), "{error}");
    assert!(error.to_string().contains("b.ald"), "{error}");
    // A declared column list must be the files' schema.
    write_ald(
        &dir.path().join("c.ald"),
        &dataset(0, 10),
        &save(Compression::None, None),
    );
    let ctx = ctx();
    let c = dir.path().join("c.ald");
    let wrong = format!(
        "CREATE EXTERNAL TABLE w (id INT) STORED AS ALD LOCATION '{}'",
        c.display()
    );
    assert!(
        query_error(&ctx, &wrong)
            .await
            .to_string()
            .contains("SchemaMismatch")
    );
    let options = format!(
        "CREATE EXTERNAL TABLE o STORED AS ALD LOCATION '{}' OPTIONS ('password' 'x')",
        c.display()
    );
    assert!(
        query_error(&ctx, &options)
            .await
            .to_string()
            .contains("SET ald.")
    );
    // A URL of a scheme no store reads (object storage URLs are tests/s3.rs's).
    let remote = "CREATE EXTERNAL TABLE r STORED AS ALD LOCATION 'ftp://host/prefix/'";
    let error = query_error(&ctx, remote).await;
    assert_eq!(signal_of(&error), Some(Signal::Usage), "{error}");
}

fn cheap_password() -> (Password, Argon2Params) {
    let params = Argon2Params {
        m_cost_kib: 1024,
        t_cost: 1,
        p_cost: 1,
    };
    (Password::new("correct horse"), params)
}

fn encrypted(data: &ArrowDataset, options: &SaveOptions, to: EncryptTo<'_>) -> Vec<u8> {
    let parts = data.to_parts(options).unwrap();
    envelope_crypto::encrypt(&parts, to, EncryptOptions::default(), &mut OsRng)
        .unwrap()
        .to_bytes()
        .unwrap()
}

#[tokio::test]
async fn encrypted_files_are_read_with_keys_from_the_session_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let alice = RecipientSecretKey::generate(&mut OsRng);
    let (password, params) = cheap_password();
    let data = dataset(0, 600);
    let streaming = save(Compression::ZstdL3, Some(100));
    std::fs::write(
        dir.path().join("to_alice.ald"),
        encrypted(&data, &streaming, EncryptTo::Recipient(&alice.public_key())),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("password.ald"),
        encrypted(
            &data,
            &save(Compression::Lz4, None),
            EncryptTo::Password {
                password: &password,
                params,
            },
        ),
    )
    .unwrap();
    let plain = write_ald(
        &dir.path().join("plain.ald"),
        &data,
        &save(Compression::None, None),
    );
    let ctx = ctx();
    // Registration reads no payload: no key is needed yet.
    for name in ["to_alice", "password", "plain"] {
        let path = dir.path().join(format!("{name}.ald"));
        register_ald(
            &ctx,
            name,
            path.to_str().unwrap(),
            AldTableOptions::default(),
        )
        .unwrap();
    }
    let _ = plain;
    let expected = query(&ctx, "SELECT * FROM plain ORDER BY id").await;

    // Without a key: DecryptionFailed, from ald, through DataFusion.
    for table in ["to_alice", "password"] {
        let error = query_error(&ctx, &format!("SELECT * FROM {table}")).await;
        assert_eq!(signal_of(&error), Some(Signal::DecryptionFailed), "{error}");
        assert!(error.to_string().contains("DecryptionFailed"), "{error}");
    }
    // A wrong key of each kind: DecryptionFailed too.
    let wrong = RecipientSecretKey::generate(&mut OsRng);
    ctx.sql(&format!(
        "SET ald.x25519_secret = '{}'",
        base64(&wrong.to_bytes()[..])
    ))
    .await
    .unwrap();
    ctx.sql("SET ald.password = 'wrong horse'").await.unwrap();
    for table in ["to_alice", "password"] {
        let error = query_error(&ctx, &format!("SELECT * FROM {table}")).await;
        assert_eq!(signal_of(&error), Some(Signal::DecryptionFailed), "{error}");
    }
    // The right keys, set in SQL: the same rows as the plain file.
    ctx.sql(&format!(
        "SET ald.x25519_secret = '{}'",
        base64(&alice.to_bytes()[..])
    ))
    .await
    .unwrap();
    ctx.sql("SET ald.password = 'correct horse'").await.unwrap();
    for table in ["to_alice", "password"] {
        assert_eq!(
            query(&ctx, &format!("SELECT * FROM {table} ORDER BY id")).await,
            expected,
            "{table}"
        );
    }
    // The secrets never print.
    let shown = query(&ctx, "SHOW ALL").await.join("\n");
    assert!(!shown.contains("correct horse"), "{shown}");
    assert!(!shown.contains(&base64(&alice.to_bytes()[..])), "{shown}");

    // Keys set in code, on a session of its own.
    let coded = SessionContext::new_with_config(
        SessionConfig::new().with_option_extension(AldOptions::new().with_recipient(alice)),
    );
    let path = dir.path().join("to_alice.ald");
    register_ald(
        &coded,
        "t",
        path.to_str().unwrap(),
        AldTableOptions::default(),
    )
    .unwrap();
    assert_eq!(query(&coded, "SELECT * FROM t ORDER BY id").await, expected);
}

fn base64(bytes: &[u8]) -> String {
    use base64ct::{Base64, Encoding};
    Base64::encode_string(bytes)
}

#[tokio::test]
async fn a_required_signature_is_checked_under_trusted_keys_from_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let publisher = SigningKey::from_bytes(&[9; 32]);
    let stranger = SigningKey::from_bytes(&[1; 32]);
    let bytes = dataset(0, 300)
        .to_bytes(&save(Compression::ZstdL3, Some(50)))
        .unwrap();
    let signed = dir.path().join("signed.ald");
    std::fs::write(&signed, envelope_sign::sign(&bytes, &publisher).unwrap()).unwrap();
    let by_stranger = dir.path().join("stranger.ald");
    std::fs::write(
        &by_stranger,
        envelope_sign::sign(&bytes, &stranger).unwrap(),
    )
    .unwrap();
    let unsigned = dir.path().join("unsigned.ald");
    std::fs::write(&unsigned, &bytes).unwrap();

    let ctx = ctx();
    let key = SigningPublicKey::of(&publisher);
    ctx.sql(&format!("SET ald.trusted_keys = 'ed25519 {key}'"))
        .await
        .unwrap();
    ctx.sql("SET ald.require_signature = true").await.unwrap();
    register_ald(
        &ctx,
        "t",
        signed.to_str().unwrap(),
        AldTableOptions::default(),
    )
    .unwrap();
    assert_eq!(
        query(&ctx, "SELECT COUNT(*) AS n, SUM(qty) AS q FROM t")
            .await
            .len(),
        1
    );
    for refused in [&by_stranger, &unsigned] {
        let error = register_ald(
            &ctx,
            "r",
            refused.to_str().unwrap(),
            AldTableOptions::default(),
        )
        .unwrap_err();
        assert_eq!(signal_of(&error), Some(Signal::SignatureInvalid), "{error}");
    }
    // A table registered before the policy: the scan checks the policy of the session running it.
    let lax = self::ctx();
    register_ald(
        &lax,
        "u",
        unsigned.to_str().unwrap(),
        AldTableOptions::default(),
    )
    .unwrap();
    assert_eq!(
        query(&lax, "SELECT COUNT(*) FROM u WHERE qty > 1")
            .await
            .len(),
        1
    );
    lax.sql(&format!("SET ald.trusted_keys = 'ed25519 {key}'"))
        .await
        .unwrap();
    lax.sql("SET ald.require_signature = true").await.unwrap();
    let error = query_error(&lax, "SELECT COUNT(*) FROM u WHERE qty > 1").await;
    assert_eq!(signal_of(&error), Some(Signal::SignatureInvalid), "{error}");
}

/// The stored bytes of chunk `chunk` of a STREAMING file, as a range of the file.
fn chunk_range(path: &Path, chunk: usize) -> std::ops::Range<usize> {
    let dataset = ald::StreamingDataset::open(path, &ald::LoadOptions::default()).unwrap();
    let range = dataset.chunk_file_range(chunk).unwrap();
    usize::try_from(range.start).unwrap()..usize::try_from(range.end).unwrap()
}

#[tokio::test]
async fn tampered_and_truncated_files_give_typed_errors_and_no_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_ald(
        &dir.path().join("t.ald"),
        &dataset(0, 500),
        &save(Compression::ZstdL3, Some(100)),
    );
    let ctx = ctx();
    register_ald(
        &ctx,
        "t",
        path.to_str().unwrap(),
        AldTableOptions::default(),
    )
    .unwrap();
    // A flipped byte in chunk 3 (the file replaced after registration, as an attacker would).
    let mut bytes = std::fs::read(&path).unwrap();
    let range = chunk_range(&path, 3);
    bytes[range.start + range.len() / 2] ^= 0x20;
    let tampered = dir.path().join("tampered.ald");
    std::fs::write(&tampered, &bytes).unwrap();
    std::fs::rename(&tampered, &path).unwrap();
    let error = query_error(&ctx, "SELECT SUM(qty) FROM t").await;
    assert_eq!(signal_of(&error), Some(Signal::ChecksumMismatch), "{error}");
    assert!(error.to_string().contains("ChecksumMismatch"), "{error}");
    // A LIMIT the scan serves from chunk 0 reads only that verified chunk, and is right.
    assert_eq!(
        query(&ctx, "SELECT id FROM t LIMIT 3").await,
        ["| 0  |", "| 1  |", "| 2  |"]
    );

    // Truncated: refused when registered, and when scanned if cut after registration.
    let whole = write_ald(
        &dir.path().join("whole.ald"),
        &dataset(0, 500),
        &save(Compression::None, Some(100)),
    );
    let bytes = std::fs::read(&whole).unwrap();
    let cut = dir.path().join("cut.ald");
    std::fs::write(&cut, &bytes[..bytes.len() - 700]).unwrap();
    let error = register_ald(
        &ctx,
        "cut",
        cut.to_str().unwrap(),
        AldTableOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(
            signal_of(&error),
            Some(Signal::InvalidFormat | Signal::ChecksumMismatch)
        ),
        "{error}"
    );
    assert!(error.to_string().contains("cut.ald"), "{error}");
    register_ald(
        &ctx,
        "whole",
        whole.to_str().unwrap(),
        AldTableOptions::default(),
    )
    .unwrap();
    std::fs::write(dir.path().join("short.ald"), &bytes[..bytes.len() / 2]).unwrap();
    std::fs::rename(dir.path().join("short.ald"), &whole).unwrap();
    let error = query_error(&ctx, "SELECT * FROM whole").await;
    assert!(signal_of(&error).is_some(), "{error}");

    // Not an .ald file at all.
    let junk = dir.path().join("junk.ald");
    std::fs::write(&junk, b"PAR1 not a dataset").unwrap();
    let error = register_ald(
        &ctx,
        "junk",
        junk.to_str().unwrap(),
        AldTableOptions::default(),
    )
    .unwrap_err();
    assert_eq!(signal_of(&error), Some(Signal::InvalidFormat), "{error}");
}

/// The physical plan of `sql` after running it (its metrics filled), and the rows it returned.
async fn run_plan(ctx: &SessionContext, sql: &str) -> (Arc<dyn ExecutionPlan>, usize) {
    let plan = ctx
        .sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let rows: usize = collect(Arc::clone(&plan), ctx.task_ctx())
        .await
        .unwrap()
        .iter()
        .map(datafusion::arrow::array::RecordBatch::num_rows)
        .sum();
    (plan, rows)
}

fn scan_of(plan: &Arc<dyn ExecutionPlan>) -> Option<&AldScanExec> {
    if let Some(scan) = plan.downcast_ref::<AldScanExec>() {
        return Some(scan);
    }
    plan.children().into_iter().find_map(scan_of)
}

fn metric(scan: &AldScanExec, name: &str) -> usize {
    scan.metrics()
        .and_then(|metrics| metrics.sum_by_name(name))
        .map_or(0, |value| value.as_usize())
}

#[tokio::test]
async fn statistics_are_exact_from_headers_and_chunk_indexes() {
    let dir = tempfile::tempdir().unwrap();
    write_ald(
        &dir.path().join("a.ald"),
        &dataset(0, 1000),
        &save(Compression::ZstdL3, Some(128)),
    );
    write_ald(
        &dir.path().join("b.ald"),
        &dataset(1000, 77),
        &save(Compression::None, None),
    );
    let ctx = ctx();
    let table = register_ald(
        &ctx,
        "t",
        dir.path().to_str().unwrap(),
        AldTableOptions::default(),
    )
    .unwrap();
    // What ald itself says of the files.
    let mut rows = 0;
    let mut decoded = 0;
    for file in table.files() {
        let dataset =
            ald::StreamingDataset::open(&file.path, &ald::LoadOptions::default()).unwrap();
        rows += dataset.num_rows();
        decoded += (0..dataset.num_chunks())
            .map(|chunk| dataset.chunk_entry(chunk).unwrap().uncompressed_size)
            .sum::<u64>();
    }
    assert_eq!(rows, 1077);
    let stats = table.exact_statistics();
    assert_eq!(stats.num_rows, Precision::Exact(1077));
    assert_eq!(
        stats.total_byte_size,
        Precision::Exact(usize::try_from(decoded).unwrap())
    );
    let provided = datafusion::catalog::TableProvider::statistics(table.as_ref()).unwrap();
    assert_eq!(provided.num_rows, Precision::Exact(1077));

    // The scan's statistics: the whole plan, and each partition.
    let plan = ctx
        .sql("SELECT * FROM t")
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap();
    let scan = scan_of(&plan).unwrap();
    let context = StatisticsContext::new();
    let whole = context.compute(scan, &StatisticsArgs::new()).unwrap();
    assert_eq!(whole.num_rows, Precision::Exact(1077));
    assert_eq!(
        whole.total_byte_size,
        Precision::Exact(usize::try_from(decoded).unwrap())
    );
    let partitions = scan.partition_units().len();
    assert_eq!(partitions, 3);
    let per_partition: usize = (0..partitions)
        .map(|p| {
            let stats = context
                .compute(scan, &StatisticsArgs::new().with_partition(Some(p)))
                .unwrap();
            *stats.num_rows.get_value().unwrap()
        })
        .sum();
    assert_eq!(per_partition, 1077);
    // Units: every chunk of a (8) and the whole of b (1).
    let units: usize = scan.partition_units().iter().map(Vec::len).sum();
    assert_eq!(units, 9);
    // COUNT(*) is answered from the exact row count, without a scan.
    assert_eq!(count(&ctx, "SELECT COUNT(*) FROM t").await, 1077);
    let (plan, _) = run_plan(&ctx, "SELECT COUNT(*) FROM t").await;
    assert!(scan_of(&plan).is_none(), "{plan:?}");
}

#[tokio::test]
async fn projection_hands_over_only_the_columns_asked_for_and_limit_stops_decoding() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_ald(
        &dir.path().join("t.ald"),
        &dataset(0, 1000),
        &save(Compression::ZstdL3, Some(100)),
    );
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
    register_ald_format(&ctx);
    register_ald(
        &ctx,
        "t",
        path.to_str().unwrap(),
        AldTableOptions::default(),
    )
    .unwrap();

    let (plan, rows) = run_plan(&ctx, "SELECT id, fare FROM t WHERE qty > 4").await;
    let scan = scan_of(&plan).unwrap();
    assert_eq!(rows, 500);
    // The filter needs qty: three of eight columns cross, for each of the 10 chunks.
    assert_eq!(scan.projection().len(), 3);
    assert_eq!(metric(scan, "chunks_decoded"), 10);
    assert_eq!(metric(scan, "columns_bridged"), 30);
    assert_eq!(plan.schema().fields().len(), 2);

    let (plan, rows) = run_plan(&ctx, "SELECT * FROM t").await;
    assert_eq!(rows, 1000);
    assert_eq!(metric(scan_of(&plan).unwrap(), "columns_bridged"), 80);

    // LIMIT: the scan is planned for the chunks that hold the rows, and decodes only those.
    let (plan, rows) = run_plan(&ctx, "SELECT id, city FROM t LIMIT 150").await;
    let scan = scan_of(&plan).unwrap();
    assert_eq!(rows, 150);
    assert_eq!(scan.partition_units(), [vec![(0, 0), (0, 1)]]);
    assert_eq!(metric(scan, "chunks_decoded"), 2);
    assert_eq!(metric(scan, "rows_decoded"), 150);
    // EXPLAIN says what is pushed down and what is decoded.
    let explain = query(&ctx, "EXPLAIN SELECT id FROM t LIMIT 5")
        .await
        .join("\n");
    assert!(
        explain.contains("AldScanExec: files=1, units=1"),
        "{explain}"
    );
    assert!(explain.contains("projection=[id]"), "{explain}");
    assert!(explain.contains("decode=1 of 8 columns"), "{explain}");

    // A LIMIT above a filter (not pushed into the scan): the consumer stops the decoding thread.
    let (plan, rows) = run_plan(&ctx, "SELECT id FROM t WHERE qty = 3 LIMIT 5").await;
    assert_eq!(rows, 5);
    let decoded = metric(scan_of(&plan).unwrap(), "chunks_decoded");
    assert!(decoded < 10, "{decoded} chunks decoded for 5 rows");
}

/// The test table with a dictionary column of text (`zone`) after the others.
fn with_zone(start: i64, count: i64) -> ArrowDataset {
    let batch = rows(start, count);
    let zones: ald::arrow_array::DictionaryArray<ald::arrow_array::types::Int32Type> = (start
        ..start + count)
        .map(|i| (i % 9 != 4).then(|| ["north", "south", "east"][usize::try_from(i % 3).unwrap()]))
        .collect();
    let mut columns: Vec<(String, ArrayRef)> = batch
        .schema()
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(field, column)| (field.name().clone(), Arc::clone(column)))
        .collect();
    columns.push(("zone".to_owned(), Arc::new(zones)));
    ArrowDataset::from_batch(RecordBatch::try_from_iter(columns).unwrap())
}

/// `SELECT one_column`: only that column is decoded (`ald`'s projected chunk decode), its rows are
/// the Parquet copy's, and `EXPLAIN` says what is read and what is decoded; for STREAMING and
/// whole files, compressed or not, and encrypted.
#[tokio::test]
async fn one_column_is_decoded_alone_and_equals_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let data = with_zone(0, 700);
    let alice = RecipientSecretKey::generate(&mut OsRng);
    let streaming = save(Compression::ZstdL3, Some(100));
    write_ald(&dir.path().join("zstd.ald"), &data, &streaming);
    write_ald(
        &dir.path().join("plain.ald"),
        &data,
        &save(Compression::None, None),
    );
    std::fs::write(
        dir.path().join("sealed.ald"),
        encrypted(&data, &streaming, EncryptTo::Recipient(&alice.public_key())),
    )
    .unwrap();
    let reference = write_parquet(&dir.path().join("t.parquet"), &data);
    let parquet = SessionContext::new();
    parquet
        .register_parquet(
            "t",
            reference.to_str().unwrap(),
            ParquetReadOptions::default(),
        )
        .await
        .unwrap();
    let ctx = SessionContext::new_with_config(
        SessionConfig::new()
            .with_target_partitions(2)
            .with_option_extension(AldOptions::new().with_recipient(alice)),
    );
    register_ald_format(&ctx);
    let names: Vec<String> = data
        .schema()
        .fields()
        .iter()
        .map(|field| field.name().clone())
        .collect();
    for (table, units) in [("zstd", 7), ("plain", 1), ("sealed", 7)] {
        let path = dir.path().join(format!("{table}.ald"));
        register_ald(
            &ctx,
            table,
            path.to_str().unwrap(),
            AldTableOptions::default(),
        )
        .unwrap();
        for name in &names {
            let expected = query(&parquet, &format!("SELECT \"{name}\" FROM t")).await;
            let sql = format!("SELECT \"{name}\" FROM {table}");
            assert_eq!(query(&ctx, &sql).await, expected, "{sql}");
            let (plan, rows) = run_plan(&ctx, &sql).await;
            assert_eq!(rows, 700);
            let scan = scan_of(&plan).unwrap();
            assert_eq!(scan.projection().len(), 1, "{sql}");
            assert_eq!(metric(scan, "chunks_decoded"), units, "{sql}");
            assert_eq!(metric(scan, "columns_bridged"), units, "{sql}");
            let explain = query(&ctx, &format!("EXPLAIN {sql}")).await.join("\n");
            assert!(
                explain.contains(&format!("projection=[{name}]")),
                "{explain}"
            );
            assert!(
                explain.contains("read=whole chunks (checksum, decryption, decompression)"),
                "{explain}"
            );
            assert!(explain.contains("decode=1 of 9 columns"), "{explain}");
        }
        // Two columns in another order than the file's, and none at all.
        let sql = format!("SELECT zone, id FROM {table}");
        assert_eq!(
            query(&ctx, &sql).await,
            query(&parquet, "SELECT zone, id FROM t").await
        );
        assert_eq!(
            count(
                &ctx,
                &format!("SELECT COUNT(*) FROM {table} WHERE zone IS NULL")
            )
            .await,
            count(&parquet, "SELECT COUNT(*) FROM t WHERE zone IS NULL").await
        );
    }
}

#[tokio::test]
async fn an_empty_table_and_an_empty_file_scan_to_no_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_ald(
        &dir.path().join("empty.ald"),
        &dataset(0, 0),
        &save(Compression::None, None),
    );
    let ctx = ctx();
    let table = register_ald(
        &ctx,
        "t",
        path.to_str().unwrap(),
        AldTableOptions::default(),
    )
    .unwrap();
    assert_eq!(table.exact_statistics().num_rows, Precision::Exact(0));
    assert!(query(&ctx, "SELECT * FROM t").await.is_empty());
    assert_eq!(count(&ctx, "SELECT COUNT(*) FROM t").await, 0);
    let _ = AldTable::try_new;
}
