//! Interoperability of `alimentar` with independent implementations, through Python
//! (`INTEROP_PYTHON`, a venv made by `.ci/setup-python`):
//! - pyarrow reads the Parquet and Arrow IPC files `alimentar` writes and gets the same table;
//! - `alimentar` reads Parquet written by pyarrow;
//! - `tests/python/ald/ald_reader.py`, written from docs/ald.md and docs/envelope.md without any
//!   Rust, parses uncompressed, zstd and STREAMING `.ald` files and gets the same table;
//! - data fidelity with the tools users already have (issue 13 §4, `tests/python/ald/fidelity.py`):
//!   named time zones from pandas through `head`, CSV, JSONL and Parquet; CSV types as pyarrow
//!   infers them; `Date64` and category order through Parquet for pyarrow, pandas and DuckDB;
//!   nested columns in JSONL as polars writes and reads them.

use std::path::{Path, PathBuf};
use std::process::Command;

const ALIMENTAR: &str = env!("CARGO_BIN_EXE_alimentar");

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/python/ald/interop.py")
}

fn python(args: &[&str]) -> String {
    run_python(&script(), args)
}

fn fidelity(args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/python/ald/fidelity.py");
    run_python(&script, args)
}

fn run_python(script: &Path, args: &[&str]) -> String {
    let interpreter = std::env::var("INTEROP_PYTHON")
        .expect("INTEROP_PYTHON names the interpreter of the interop venv");
    let output = Command::new(interpreter)
        .arg(script)
        .args(args)
        .output()
        .expect("the interpreter runs");
    assert!(
        output.status.success(),
        "interop.py {args:?}:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn alimentar(dir: &Path, args: &[&str]) -> String {
    let output = Command::new(ALIMENTAR)
        .current_dir(dir)
        .args(args)
        .output()
        .expect("alimentar runs");
    assert!(
        output.status.success(),
        "alimentar {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn sample_csv(dir: &Path) {
    let mut csv = String::from("id,score,name,ok,day,at\n");
    for i in 0..3000 {
        let score = if i % 7 == 3 {
            String::new()
        } else {
            format!("{:?}", f64::from(i) / 8.0)
        };
        let name = if i % 5 == 1 {
            String::new()
        } else {
            format!("\"n{i}, ü\"")
        };
        csv.push_str(&format!(
            "{i},{score},{name},{},2024-02-{:02},2024-02-01T10:{:02}:{:02}.{:03}\n",
            i % 3 == 0,
            i % 28 + 1,
            i / 60 % 60,
            i % 60,
            i % 1000
        ));
    }
    std::fs::write(dir.join("data.csv"), csv).unwrap();
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).to_str().unwrap().to_owned()
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn pyarrow_and_the_independent_reader_read_what_alimentar_writes() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    sample_csv(dir);
    std::fs::write(
        dir.join("card.json"),
        br#"{"name": "interop", "version": "1.0.0"}"#,
    )
    .unwrap();
    alimentar(
        dir,
        &[
            "convert",
            "data.csv",
            "plain.ald",
            "--compression",
            "none",
            "--card",
            "card.json",
        ],
    );
    alimentar(
        dir,
        &[
            "convert",
            "data.csv",
            "zstd.ald",
            "--compression",
            "zstd-l3",
        ],
    );
    alimentar(
        dir,
        &[
            "convert",
            "data.csv",
            "stream.ald",
            "--compression",
            "zstd-l19",
            "--streaming",
            "--chunk-rows",
            "256",
        ],
    );
    alimentar(dir, &["convert", "stream.ald", "data.parquet"]);
    alimentar(dir, &["convert", "plain.ald", "data.arrow"]);
    let files: Vec<String> = [
        "plain.ald",
        "zstd.ald",
        "stream.ald",
        "data.parquet",
        "data.arrow",
    ]
    .iter()
    .map(|name| path(dir, name))
    .collect();
    let mut args = vec!["same"];
    args.extend(files.iter().map(String::as_str));
    assert!(python(&args).starts_with("same 3000 rows in 5 files"));
    assert_eq!(
        python(&["chunks", &path(dir, "stream.ald")]).trim(),
        "12 row groups"
    );
    assert_eq!(
        python(&["card", &path(dir, "plain.ald"), "interop"]).trim(),
        "card ok"
    );
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn alimentar_reads_parquet_and_arrow_written_by_pyarrow() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    python(&["write-sample", dir.to_str().unwrap()]);
    alimentar(
        dir,
        &[
            "convert",
            "py.parquet",
            "py.ald",
            "--compression",
            "zstd-l3",
        ],
    );
    alimentar(
        dir,
        &[
            "convert",
            "py.arrow",
            "py-stream.ald",
            "--streaming",
            "--chunk-rows",
            "333",
            "--compression",
            "none",
        ],
    );
    alimentar(dir, &["convert", "py.ald", "back.parquet"]);
    alimentar(dir, &["convert", "py-stream.ald", "back.arrow"]);
    let files: Vec<String> = [
        "py.arrow",
        "py.parquet",
        "py.ald",
        "py-stream.ald",
        "back.parquet",
        "back.arrow",
    ]
    .iter()
    .map(|name| path(dir, name))
    .collect();
    let mut args = vec!["same"];
    args.extend(files.iter().map(String::as_str));
    assert!(python(&args).starts_with("same 2000 rows in 6 files"));
    assert_eq!(
        python(&["chunks", &path(dir, "py-stream.ald")]).trim(),
        "7 row groups"
    );
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn fidelity_named_time_zones_from_pandas_survive_head_csv_jsonl_and_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let path = dir.to_str().unwrap();
    fidelity(&["write-zones", path]);
    alimentar(dir, &["convert", "zones.parquet", "zones.csv"]);
    alimentar(dir, &["convert", "zones.parquet", "zones.jsonl"]);
    alimentar(dir, &["convert", "zones.parquet", "zones.ald"]);
    alimentar(dir, &["convert", "zones.ald", "back.parquet"]);
    let table = alimentar(dir, &["head", "zones.ald"]);
    assert!(table.contains("2024-03-31T03:30:00+02:00"), "{table}");
    std::fs::write(
        dir.join("head.json"),
        alimentar(dir, &["head", "zones.parquet", "--json"]),
    )
    .unwrap();
    assert_eq!(fidelity(&["check-zones", path]).trim(), "zones ok");
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn fidelity_csv_types_and_values_match_pyarrow() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let path = dir.to_str().unwrap();
    let names = fidelity(&["write-csv-types", path]);
    for name in names.split_whitespace() {
        let csv = format!("{name}.csv");
        let schema = alimentar(dir, &["schema", &csv, "--json"]);
        std::fs::write(dir.join(format!("{name}.schema.json")), schema).unwrap();
        alimentar(dir, &["convert", &csv, &format!("{name}.parquet")]);
    }
    let table = fidelity(&["check-csv-types", path]);
    // The pyarrow-vs-alimentar table, for the record (`cargo test -- --nocapture`).
    #[allow(
        clippy::print_stdout,
        reason = "the comparison table is the test's report"
    )]
    {
        println!("{table}");
    }
    assert!(table.trim_end().ends_with("columns"), "{table}");
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn fidelity_date64_and_category_order_survive_parquet_for_pyarrow_pandas_and_duckdb() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let path = dir.to_str().unwrap();
    fidelity(&["write-dict", path]);
    alimentar(dir, &["convert", "cat.arrow", "cat.ald"]);
    alimentar(dir, &["convert", "cat.ald", "cat.parquet"]);
    assert_eq!(
        fidelity(&["check-dict", path]).trim(),
        "dictionary and date64 ok"
    );
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn fidelity_nested_columns_in_jsonl_as_polars_writes_them_and_refused_in_csv() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let path = dir.to_str().unwrap();
    fidelity(&["write-nested", path]);
    alimentar(dir, &["convert", "nested.arrow", "nested.ald"]);
    alimentar(dir, &["convert", "nested.ald", "nested.jsonl"]);
    assert_eq!(fidelity(&["check-nested", path]).trim(), "nested ok");
    let refused = Command::new(ALIMENTAR)
        .current_dir(dir)
        .args(["convert", "nested.ald", "nested.csv"])
        .output()
        .unwrap();
    let message = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{message}");
    assert!(
        message.starts_with("alimentar: Usage: ")
            && message.contains("column \"list\" (List(Int32)) cannot be written as CSV"),
        "{message}"
    );
    assert!(!dir.join("nested.csv").exists());
}
