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

use std::ffi::OsStr;

use crate::support::{ALIMENTAR, Scratch};

/// Runs one of the interop scripts under `tests/python/ald/` with `args`.
fn script(name: &str, args: &[&str]) -> String {
    let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    String::from_utf8(test_support::python_ok(&format!("ald/{name}"), &args)).unwrap()
}

fn python(args: &[&str]) -> String {
    script("interop.py", args)
}

/// `alimentar convert` from each file of `chain` to the next.
fn convert_along(ws: &Scratch, chain: &[&str]) {
    for pair in chain.windows(2) {
        ws.ok(ALIMENTAR, format!("convert {} {}", pair[0], pair[1]));
    }
}

/// A scratch directory holding the files `fidelity.py write-WHAT` makes there.
fn written_by_fidelity(what: &str) -> Scratch {
    let ws = Scratch::new();
    script(
        "fidelity.py",
        &[&format!("write-{what}"), ws.dir().to_str().unwrap()],
    );
    ws
}

/// `fidelity.py check-WHAT` on the directory: its report.
fn fidelity_check(ws: &Scratch, what: &str) -> String {
    let report = script(
        "fidelity.py",
        &[&format!("check-{what}"), ws.dir().to_str().unwrap()],
    );
    report.trim().to_owned()
}

fn sample_csv(ws: &Scratch) {
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
    ws.write("data.csv", csv);
}

/// `interop.py same FILES...`: every file holds the same table; returns its report.
fn same(ws: &Scratch, names: &str) -> String {
    let files: Vec<String> = names.split_whitespace().map(|name| ws.path(name)).collect();
    let mut args = vec!["same"];
    args.extend(files.iter().map(String::as_str));
    python(&args)
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn pyarrow_and_the_independent_reader_read_what_alimentar_writes() {
    let ws = Scratch::new();
    sample_csv(&ws);
    ws.write("card.json", br#"{"name": "interop", "version": "1.0.0"}"#);
    for args in [
        "convert data.csv plain.ald --compression none --card card.json",
        "convert data.csv zstd.ald --compression zstd-l3",
        "convert data.csv stream.ald --compression zstd-l19 --streaming --chunk-rows 256",
        "convert stream.ald data.parquet",
        "convert plain.ald data.arrow",
    ] {
        ws.ok(ALIMENTAR, args);
    }
    let report = same(&ws, "plain.ald zstd.ald stream.ald data.parquet data.arrow");
    assert!(report.starts_with("same 3000 rows in 5 files"), "{report}");
    assert_eq!(
        python(&["chunks", &ws.path("stream.ald")]).trim(),
        "12 row groups"
    );
    assert_eq!(
        python(&["card", &ws.path("plain.ald"), "interop"]).trim(),
        "card ok"
    );
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn alimentar_reads_parquet_and_arrow_written_by_pyarrow() {
    let ws = Scratch::new();
    python(&["write-sample", ws.dir().to_str().unwrap()]);
    for args in [
        "convert py.parquet py.ald --compression zstd-l3",
        "convert py.arrow py-stream.ald --streaming --chunk-rows 333 --compression none",
        "convert py.ald back.parquet",
        "convert py-stream.ald back.arrow",
    ] {
        ws.ok(ALIMENTAR, args);
    }
    let files = "py.arrow py.parquet py.ald py-stream.ald back.parquet back.arrow";
    let report = same(&ws, files);
    assert!(report.starts_with("same 2000 rows in 6 files"), "{report}");
    assert_eq!(
        python(&["chunks", &ws.path("py-stream.ald")]).trim(),
        "7 row groups"
    );
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn fidelity_named_time_zones_from_pandas_survive_head_csv_jsonl_and_parquet() {
    let ws = written_by_fidelity("zones");
    for output in ["zones.csv", "zones.jsonl", "zones.ald"] {
        ws.ok(ALIMENTAR, format!("convert zones.parquet {output}"));
    }
    ws.ok(ALIMENTAR, "convert zones.ald back.parquet");
    let table = ws.ok(ALIMENTAR, "head zones.ald");
    assert!(table.contains("2024-03-31T03:30:00+02:00"), "{table}");
    ws.write("head.json", ws.ok(ALIMENTAR, "head zones.parquet --json"));
    assert_eq!(fidelity_check(&ws, "zones"), "zones ok");
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn fidelity_csv_types_and_values_match_pyarrow() {
    let ws = Scratch::new();
    let names = script(
        "fidelity.py",
        &["write-csv-types", ws.dir().to_str().unwrap()],
    );
    for name in names.split_whitespace() {
        let schema = ws.ok(ALIMENTAR, format!("schema {name}.csv --json"));
        ws.write(&format!("{name}.schema.json"), schema);
        ws.ok(ALIMENTAR, format!("convert {name}.csv {name}.parquet"));
    }
    let table = fidelity_check(&ws, "csv-types");
    // The pyarrow-vs-alimentar table, for the record (`cargo test -- --nocapture`).
    #[allow(
        clippy::print_stdout,
        reason = "the comparison table is the test's report"
    )]
    {
        println!("{table}");
    }
    assert!(table.ends_with("columns"), "{table}");
}

/// Dictionary columns keep their category order and `Date64` stays `Date64` through Parquet for
/// pyarrow, pandas and DuckDB; nested columns survive JSONL as polars writes and reads them.
#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn fidelity_date64_category_order_and_nested_columns_survive_parquet_and_jsonl() {
    for (what, chain, report) in [
        (
            "dict",
            ["cat.arrow", "cat.ald", "cat.parquet"],
            "dictionary and date64 ok",
        ),
        (
            "nested",
            ["nested.arrow", "nested.ald", "nested.jsonl"],
            "nested ok",
        ),
    ] {
        let ws = written_by_fidelity(what);
        convert_along(&ws, &chain);
        assert_eq!(fidelity_check(&ws, what), report);
    }
}

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn nested_columns_from_polars_are_refused_in_csv_naming_the_column() {
    let ws = written_by_fidelity("nested");
    convert_along(&ws, &["nested.arrow", "nested.ald"]);
    // A column the output format cannot hold fails the operation (exit 1), its signal is Usage.
    let refused = ws.run(ALIMENTAR, "convert nested.ald nested.csv");
    let message = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{message}");
    assert!(
        message.starts_with("alimentar: Usage: ")
            && message.contains("column \"list\" (List(Int32)) cannot be written as CSV"),
        "{message}"
    );
    assert!(!ws.exists("nested.csv"));
}
