"""Data fidelity of `alimentar` against the tools users already have (issue 13 §4): pyarrow,
pandas, polars and DuckDB write inputs and read outputs. Run by
crates/envelope-cli/tests/alimentar_interop.rs (the `fidelity_*` tests) with INTEROP_PYTHON.

    fidelity.py write-zones DIR          pandas/pyarrow: DIR/zones.parquet (UTC, Europe/Berlin, +02:00)
    fidelity.py check-zones DIR          alimentar's zones.csv/.jsonl/head.json/back.parquet hold the same instants
    fidelity.py write-csv-types DIR      CSV files covering pyarrow's type inference
    fidelity.py check-csv-types DIR      pyarrow's types and values vs alimentar's (DIR/*.schema.json, *.parquet)
    fidelity.py write-dict DIR           pyarrow/pandas: DIR/cat.arrow (date64, ordered categories)
    fidelity.py check-dict DIR           alimentar's cat.parquet: dates and category order for pyarrow, pandas, DuckDB
    fidelity.py write-nested DIR         pyarrow: DIR/nested.arrow (list, struct, maps, union)
    fidelity.py check-nested DIR         alimentar's nested.jsonl is what polars writes and reads back
"""

import datetime
import json
import os
import sys

import duckdb
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq


def fail(message):
    raise SystemExit(message)


# ---- named time zones -------------------------------------------------------------------------

INSTANTS = ["2024-03-31 00:30", "2024-03-31 01:30", None, "2024-10-27 00:30", "2024-10-27 01:30"]


def write_zones(directory):
    utc = pd.to_datetime(pd.Series(INSTANTS), format="ISO8601").dt.tz_localize("UTC")
    frame = pd.DataFrame({"utc": utc, "berlin": utc.dt.tz_convert("Europe/Berlin")})
    table = pa.Table.from_pandas(frame, preserve_index=False)
    fixed = pa.array(utc).cast(pa.timestamp("us", tz="UTC")).cast(pa.timestamp("us", tz="+02:00"))
    table = table.append_column("fixed", fixed)
    pq.write_table(table, os.path.join(directory, "zones.parquet"))
    print(table.schema)


def expected_instants():
    return pd.to_datetime(pd.Series(INSTANTS), format="ISO8601").dt.tz_localize("UTC")


def same_instants(label, values):
    got = pd.to_datetime(pd.Series(values), utc=True, format="ISO8601")
    want = expected_instants()
    if not got.reset_index(drop=True).equals(want.reset_index(drop=True)):
        fail(f"{label}: {list(got)} != {list(want)}")


def check_zones(directory):
    columns = ["utc", "berlin", "fixed"]
    # CSV: pyarrow reads the offsets as UTC instants; pandas too.
    csv = pcsv.read_csv(os.path.join(directory, "zones.csv"))
    frame = pd.read_csv(os.path.join(directory, "zones.csv"))
    for column in columns:
        if csv.schema.field(column).type != pa.timestamp("s", tz="UTC"):
            fail(f"csv {column}: pyarrow infers {csv.schema.field(column).type}")
        same_instants(f"csv {column} (pyarrow)", csv.column(column).to_pylist())
        same_instants(f"csv {column} (pandas)", frame[column].tolist())
    # JSONL: nulls are left out, so absent keys are nulls.
    rows = [json.loads(line) for line in open(os.path.join(directory, "zones.jsonl"))]
    for column in columns:
        same_instants(f"jsonl {column}", [row.get(column) for row in rows])
    # alimentar head --json: the same text.
    rows = json.load(open(os.path.join(directory, "head.json")))
    for column in columns:
        same_instants(f"head {column}", [row.get(column) for row in rows])
    berlin = [row.get("berlin") for row in rows]
    if berlin[0] != "2024-03-31T01:30:00+01:00" or berlin[1] != "2024-03-31T03:30:00+02:00":
        fail(f"head berlin shows local time with its offset: {berlin}")
    # .ald -> Parquet: the zone names survive for pyarrow and pandas, DuckDB reads instants.
    back = pq.read_table(os.path.join(directory, "back.parquet"))
    original = pq.read_table(os.path.join(directory, "zones.parquet"))
    for column in columns:
        if back.schema.field(column).type != original.schema.field(column).type:
            fail(f"parquet {column}: {back.schema.field(column).type} != {original.schema.field(column).type}")
    if not back.equals(original.replace_schema_metadata(back.schema.metadata)):
        fail("parquet: values differ")
    pandas_back = pd.read_parquet(os.path.join(directory, "back.parquet"))
    pandas_original = pd.read_parquet(os.path.join(directory, "zones.parquet"))
    if list(pandas_back.dtypes) != list(pandas_original.dtypes) or not pandas_back.equals(pandas_original):
        fail(f"pandas: {list(pandas_back.dtypes)} != {list(pandas_original.dtypes)}")
    if str(pandas_back["berlin"].dtype.tz) != "Europe/Berlin":
        fail(f"pandas dtype {pandas_back['berlin'].dtype}")
    types = duckdb.sql(f"select typeof(utc), typeof(berlin), typeof(fixed) from "
                       f"'{os.path.join(directory, 'back.parquet')}' limit 1").fetchall()[0]
    if any(kind != "TIMESTAMP WITH TIME ZONE" for kind in types):
        fail(f"duckdb types {types}")
    print("zones ok")


# ---- CSV type inference -----------------------------------------------------------------------

CSV_FILES = {
    "numbers": "int,neg,plus,big,hex,padded,float,special,exp,na_int,nan_float\n"
               "1,-2,+3,9223372036854775808,0x1F, 7 ,1.5,inf,1e5,NA,nan\n"
               "007,0,4,1,0xff,8,2,-Infinity,1E-3,5,2.5\n"
               "3,-0,5,2,0x0,9,.5,nAn,2e+1,#N/A,NaN\n",
    "flags": "bool,bool01,mixedcase,yesno,empty,nulls_only\n"
             "true,1,tRue,yes,,NA\n"
             "False,0,FALSE,no,,null\n"
             "TRUE,true,true,yes,,NULL\n",
    "temporal": "date,time,ts,ts_t,ts_minutes,ts_frac,ts_z,ts_off4,ts_off2,ts_frac_z,mixed_zone,date_then_ts,bad_date\n"
                "2024-01-01,10:00,2024-01-01 10:00:00,2024-01-01T10:00:00,2024-01-01T10:00,2024-01-01T10:00:00.5,"
                "2024-01-01T10:00:00Z,2024-01-01T10:00:00+0200,2024-01-01T10:00:00+02,2024-01-01T10:00:00.125Z,"
                "2024-01-01T10:00:00Z,2024-01-01,2023-02-29\n"
                "2024-02-29,23:59:59,2024-01-02 00:00:00,2024-01-02T00:00:00,2024-01-02T00:00,2024-01-02T00:00:00.123456789,"
                "2024-01-02T00:00:00Z,2024-01-02T00:00:00-0530,2024-01-02T00:00:00-05,2024-01-02T00:00:00Z,"
                "2024-01-02T00:00:00,2024-01-02T10:00:00,2024-01-01\n",
    "text": "word,quoted,unicode,numeric_text\n"
            "a,\"x, \"\"y\"\"\",ü,1\n"
            "b,\"multi\nline\",✓,a\n"
            ",\"\",,2\n",
}


def write_csv_types(directory):
    for name, text in CSV_FILES.items():
        with open(os.path.join(directory, f"{name}.csv"), "w") as f:
            f.write(text)
    print(" ".join(CSV_FILES))


# alimentar's type names (Arrow Rust's Display) as pyarrow prints them.
RUST_TO_PYARROW = {
    "Int64": "int64", "Float64": "double", "Boolean": "bool", "Utf8": "string", "Null": "null",
    "Date32": "date32[day]", "Time32(s)": "time32[s]", "Timestamp(s)": "timestamp[s]",
    "Timestamp(ns)": "timestamp[ns]", 'Timestamp(s, "UTC")': "timestamp[s, tz=UTC]",
    'Timestamp(ns, "UTC")': "timestamp[ns, tz=UTC]",
}


def same_values(a, b):
    """Equal lists, NaN equal to NaN."""
    def key(value):
        return "NaN" if isinstance(value, float) and value != value else value
    return [key(v) for v in a] == [key(v) for v in b]


def check_csv_types(directory):
    rows = []
    differences = []
    for name in CSV_FILES:
        ours = json.load(open(os.path.join(directory, f"{name}.schema.json")))
        theirs = pcsv.read_csv(os.path.join(directory, f"{name}.csv"))
        converted = pq.read_table(os.path.join(directory, f"{name}.parquet"))
        for field, column in zip(ours, theirs.schema):
            mine = RUST_TO_PYARROW.get(field["type"], field["type"])
            rows.append((name, column.name, str(column.type), mine))
            if field["name"] != column.name or mine != str(column.type):
                differences.append(f"{name}.{column.name}: pyarrow {column.type}, alimentar {mine}")
                continue
            # Values: pyarrow keeps "" in text columns where alimentar reads null (docs/ald.md §9).
            a = theirs.column(column.name)
            b = converted.column(column.name)
            if pa.types.is_string(column.type):
                a, b = a.fill_null(""), b.fill_null("")
            if b.type != column.type:
                b = b.cast(column.type)  # Parquet stores seconds as milliseconds
            if not same_values(a.to_pylist(), b.to_pylist()):
                differences.append(f"{name}.{column.name}: values {a.to_pylist()} != {b.to_pylist()}")
    width = max(len(f"{f}.{c}") for f, c, _, _ in rows)
    print(f"{'column':<{width}}  {'pyarrow 26':<24} alimentar")
    for file, column, theirs, mine in rows:
        mark = "" if theirs == mine else "  <- differs"
        print(f"{file + '.' + column:<{width}}  {theirs:<24} {mine}{mark}")
    if differences:
        fail("\n".join(differences))
    print(f"csv types ok: {len(rows)} columns")


# ---- Date64 and dictionary order through Parquet ----------------------------------------------

LEVELS = ["low", "mid", "high", "unused"]


def write_dict(directory):
    frame = pd.DataFrame({
        "level": pd.Categorical(["high", "low", None, "high", "mid"], categories=LEVELS, ordered=True),
        "color": pd.Categorical(["red", "blue", "red", None, "green"], categories=["green", "red", "blue"]),
    })
    table = pa.Table.from_pandas(frame, preserve_index=False)
    days = [datetime.date(2024, 2, 28), None, datetime.date(1969, 12, 31), datetime.date(2000, 1, 1),
            datetime.date(2024, 2, 29)]
    table = table.append_column("day", pa.array(days, pa.date64()))
    with pa.ipc.new_file(os.path.join(directory, "cat.arrow"), table.schema) as writer:
        writer.write_table(table)
    print(table.schema)


def check_dict(directory):
    path = os.path.join(directory, "cat.parquet")
    table = pq.read_table(path)
    day = table.column("day")
    if not pa.types.is_date(day.type):
        fail(f"pyarrow reads day as {day.type}")
    want = [datetime.date(2024, 2, 28), None, datetime.date(1969, 12, 31), datetime.date(2000, 1, 1),
            datetime.date(2024, 2, 29)]
    if day.to_pylist() != want:
        fail(f"pyarrow day values {day.to_pylist()}")
    kind, values = duckdb.sql(f"select typeof(day), list(day) from '{path}' group by 1").fetchall()[0]
    if kind != "DATE" or [v for v in values if v is not None] != [d for d in want if d is not None]:
        fail(f"duckdb reads day as {kind}: {values}")
    level = table.column("level")
    if level.type != pa.dictionary(pa.int8(), pa.string(), ordered=True) and not (
            pa.types.is_dictionary(level.type) and level.type.ordered):
        fail(f"pyarrow reads level as {level.type}")
    for chunk in level.chunks:
        if chunk.dictionary.to_pylist() != LEVELS:
            fail(f"pyarrow dictionary {chunk.dictionary.to_pylist()}")
    frame = pd.read_parquet(path)
    if list(frame["level"].cat.categories) != LEVELS or not frame["level"].cat.ordered:
        fail(f"pandas categories {list(frame['level'].cat.categories)} ordered={frame['level'].cat.ordered}")
    if list(frame["color"].cat.categories) != ["green", "red", "blue"]:
        fail(f"pandas categories {list(frame['color'].cat.categories)}")
    if frame["level"].tolist()[:2] != ["high", "low"] or not pd.isna(frame["level"][2]):
        fail(f"pandas values {frame['level'].tolist()}")
    print("dictionary and date64 ok")


# ---- nested types in JSONL --------------------------------------------------------------------

def nested_table():
    union = pa.UnionArray.from_sparse(
        pa.array([0, 1, 0], pa.int8()),
        [pa.array([1, None, 3], pa.int64()), pa.array([None, "two", None], pa.string())],
        ["n", "s"])
    return pa.table({
        "list": pa.array([[1, 2], [], None], pa.list_(pa.int32())),
        "struct": pa.array([{"x": 1.5, "y": "a"}, None, {"x": None, "y": "c"}],
                           pa.struct([("x", pa.float64()), ("y", pa.string())])),
        "nested": pa.array([[{"k": [1]}], [{"k": []}], []], pa.list_(pa.struct([("k", pa.list_(pa.int64()))]))),
        "smap": pa.array([[("a", 1), ("b", 2)], [], None], pa.map_(pa.string(), pa.int64())),
        "imap": pa.array([[(1, "one")], None, [(2, None)]], pa.map_(pa.int32(), pa.string())),
        "union": union,
    })


def write_nested(directory):
    table = nested_table()
    with pa.ipc.new_file(os.path.join(directory, "nested.arrow"), table.schema) as writer:
        writer.write_table(table)
    print(table.schema)


def check_nested(directory):
    ours = [json.loads(line) for line in open(os.path.join(directory, "nested.jsonl"))]
    table = nested_table()
    # Lists and structs: exactly what polars writes for the same columns, nulls included.
    flat = pl.from_arrow(table.select(["list", "struct", "nested"]))
    polars_rows = [json.loads(line) for line in flat.write_ndjson().splitlines()]
    for mine, theirs in zip(ours, polars_rows):
        for key, value in theirs.items():
            if key not in mine or mine[key] != value:
                fail(f"{key}: alimentar {mine.get(key, '(absent)')}, polars {value}")
    # Read back by polars with the original types.
    back = pl.read_ndjson(os.path.join(directory, "nested.jsonl"), schema=flat.schema)
    if back.select(flat.columns).to_dicts() != flat.to_dicts():
        fail(f"polars reads back {back.to_dicts()}")
    # Maps with string keys are objects; other maps are key/value entries; unions their value.
    if [row.get("smap") for row in ours] != [{"a": 1, "b": 2}, {}, None]:
        fail(f"smap {[row.get('smap') for row in ours]}")
    if [row.get("imap") for row in ours] != [[{"key": 1, "value": "one"}], None, [{"key": 2, "value": None}]]:
        fail(f"imap {[row.get('imap') for row in ours]}")
    if [row.get("union") for row in ours] != table.column("union").to_pylist():
        fail(f"union {[row.get('union') for row in ours]}")
    print("nested ok")


def main(argv):
    command, directory = argv[1], argv[2]
    commands = {
        "write-zones": write_zones, "check-zones": check_zones,
        "write-csv-types": write_csv_types, "check-csv-types": check_csv_types,
        "write-dict": write_dict, "check-dict": check_dict,
        "write-nested": write_nested, "check-nested": check_nested,
    }
    if command not in commands:
        raise SystemExit(__doc__)
    commands[command](directory)


if __name__ == "__main__":
    main(sys.argv)
