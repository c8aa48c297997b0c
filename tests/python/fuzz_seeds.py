"""Seed files for the interchange fuzz targets, written by independent programs (pyarrow, pandas,
the safetensors package). Run by `cargo xtask fuzz-seeds TARGET` (xtask/src/fuzz_seeds_interchange.rs),
which adds files written by our own writers; never by `cargo test`.

    fuzz_seeds.py TARGET DIR     write DIR/seed-py-*.{...} for TARGET

Targets: arrow_file, arrow_stream, parquet_reader, csv_reader, jsonl_reader, safetensors_import.
The csv_reader and jsonl_reader targets read their options from the first byte of an input: every
text seed gets a prefix byte (0x00: defaults; csv 0x01: ';' delimiter, 0x04: no header).
Seeds are small (a few KiB at most), so the fuzzer's default input size covers them.
"""

import datetime
import decimal
import io
import json
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq


def tables():
    n = 6
    def maybe(i, value):
        return None if i % 4 == 3 else value
    utc = datetime.timezone.utc
    flat = pa.table({
        "i64": pa.array([maybe(i, i * 1_000_003 - 7) for i in range(n)], pa.int64()),
        "i8": pa.array([maybe(i, i - 3) for i in range(n)], pa.int8()),
        "f64": pa.array([maybe(i, i / 7) for i in range(n)], pa.float64()),
        "s": pa.array([maybe(i, f"r{i} ü") for i in range(n)], pa.string()),
        "b": pa.array([maybe(i, i % 2 == 0) for i in range(n)], pa.bool_()),
        "d": pa.array([maybe(i, datetime.date(2024, 1, 1) + datetime.timedelta(days=i))
                       for i in range(n)], pa.date32()),
        "ts": pa.array([maybe(i, datetime.datetime(2024, 3, 31, tzinfo=utc)
                              + datetime.timedelta(hours=i)) for i in range(n)],
                       pa.timestamp("us", tz="Europe/Berlin")),
    })
    typed = pa.table({
        "dec": pa.array([maybe(i, decimal.Decimal(i) / 100) for i in range(n)], pa.decimal128(9, 2)),
        "big": pa.array([maybe(i, "x" * i) for i in range(n)], pa.large_string()),
        "bin": pa.array([maybe(i, bytes([i]) * 2) for i in range(n)], pa.binary()),
        "d64": pa.array([maybe(i, datetime.date(2020, 2, 28) + datetime.timedelta(days=i))
                         for i in range(n)], pa.date64()),
        "cat": pa.array([["z", "a", "m"][i % 3] for i in range(n)]).dictionary_encode(),
        "t": pa.array([maybe(i, datetime.time(10, i)) for i in range(n)], pa.time32("s")),
    })
    nested = pa.table({
        "list": pa.array([maybe(i, list(range(i % 3))) for i in range(n)], pa.list_(pa.int32())),
        "st": pa.array([maybe(i, {"x": i, "y": str(i)}) for i in range(n)],
                       pa.struct([("x", pa.int64()), ("y", pa.string())])),
        "map": pa.array([maybe(i, [("k", i)]) for i in range(n)], pa.map_(pa.string(), pa.int64())),
    })
    empty = pa.table({"a": pa.array([], pa.int64()), "b": pa.array([], pa.string())})
    return {"flat": flat, "typed": typed, "nested": nested, "empty": empty}


def write_ipc(directory, stream):
    for name, table in tables().items():
        suffix = "arrows" if stream else "arrow"
        path = os.path.join(directory, f"seed-py-{name}.{suffix}")
        opener = pa.ipc.new_stream if stream else pa.ipc.new_file
        with opener(path, table.schema) as writer:
            writer.write_table(table, max_chunksize=4)
    # A compressed one: refused by name (this build reads no IPC body compression).
    options = pa.ipc.IpcWriteOptions(compression="lz4")
    path = os.path.join(directory, f"seed-py-lz4.{'arrows' if stream else 'arrow'}")
    opener = pa.ipc.new_stream if stream else pa.ipc.new_file
    with opener(path, tables()["flat"].schema, options=options) as writer:
        writer.write_table(tables()["flat"])


def write_parquet(directory):
    for name, table in tables().items():
        for compression in ["none", "snappy", "zstd"]:
            path = os.path.join(directory, f"seed-py-{name}-{compression}.parquet")
            pq.write_table(table, path, compression=compression, row_group_size=4)
    flat = tables()["flat"]
    pq.write_table(flat, os.path.join(directory, "seed-py-v2-plain.parquet"),
                   data_page_version="2.0", use_dictionary=False, compression="none")
    pq.write_table(flat, os.path.join(directory, "seed-py-gzip.parquet"), compression="gzip")
    pq.write_table(flat, os.path.join(directory, "seed-py-stats-off.parquet"),
                   write_statistics=False, compression="none")


def write_csv(directory):
    def put(name, prefix, data):
        with open(os.path.join(directory, f"seed-py-{name}.csv"), "wb") as f:
            f.write(bytes([prefix]) + data)
    for name in ["flat", "typed"]:
        out = io.BytesIO()
        pcsv.write_csv(tables()[name], out)
        put(name, 0, out.getvalue())
    put("zones", 0, b"z,offset,naive,date,time\n2024-01-01T00:00:00Z,2024-01-01T00:00:00+0200,"
        b"2024-01-01 10:00:00,2024-02-29,10:00\n,2024-01-01T00:00:00.5-05:00,2024-01-01T10,,23:59:59\n")
    put("nulls", 0, b"a,b,c\nNA,1,x\n#N/A,nan,\nnull,-inf,NULL\n0x1F,1e5,\"q\"\"uote\"\n")
    put("semicolon", 1, b"a;b\n1;2\n3;4\n")
    put("noheader", 4, b"1,true,2024-01-01\n2,False,2024-01-02\n")
    put("bom", 0, b"\xef\xbb\xbfid,name\n1,\"multi\nline\"\n")


def write_jsonl(directory):
    import pandas as pd
    frame = pd.DataFrame({
        "i": [1, 2, None], "s": ["a", None, "c\u00e9"], "f": [0.5, float("nan"), 2.0],
        "t": pd.to_datetime(["2024-01-01", None, "2024-03-31 00:30"], format="ISO8601").tz_localize("UTC"),
        "l": [[1, 2], [], None],
    })
    with open(os.path.join(directory, "seed-py-pandas.jsonl"), "wb") as f:
        f.write(b"\x00" + frame.to_json(orient="records", lines=True, date_format="iso").encode())
    rows = [{"z": 1, "a": {"b": [1, {"c": None}]}, "\u00e9\"": True},
            {"a": {"b": []}, "z": 2.5, "new": "x"}]
    with open(os.path.join(directory, "seed-py-nested.jsonl"), "wb") as f:
        f.write(b"\x00" + "\n".join(json.dumps(row) for row in rows).encode() + b"\n")
    with open(os.path.join(directory, "seed-py-sampled.jsonl"), "wb") as f:
        f.write(b"\x01" + "\n".join(json.dumps(row) for row in rows).encode() + b"\n")


def write_safetensors(directory):
    from safetensors.numpy import save
    rng = np.random.default_rng(7)
    files = {
        "f32": {"w": rng.standard_normal((4, 3)).astype(np.float32),
                "b": np.zeros(3, np.float32)},
        "f16": {"w": rng.standard_normal((2, 8)).astype(np.float16)},
        "ints": {"q": np.arange(-4, 4, dtype=np.int8).reshape(2, 4),
                 "u": np.arange(6, dtype=np.uint8)},
        "scalar": {"s": np.array(1.5, np.float32)},
        "i64": {"n": np.arange(3, dtype=np.int64)},
        "empty": {},
    }
    for name, tensors in files.items():
        metadata = {"format": "np"} if name != "empty" else None
        data = save(tensors, metadata=metadata)
        with open(os.path.join(directory, f"seed-py-{name}.safetensors"), "wb") as f:
            f.write(data)


def main(argv):
    target, directory = argv[1], argv[2]
    os.makedirs(directory, exist_ok=True)
    writers = {
        "arrow_file": lambda d: write_ipc(d, stream=False),
        "arrow_stream": lambda d: write_ipc(d, stream=True),
        "parquet_reader": write_parquet,
        "csv_reader": write_csv,
        "jsonl_reader": write_jsonl,
        "safetensors_import": write_safetensors,
    }
    if target not in writers:
        raise SystemExit(f"unknown target {target!r}: {', '.join(writers)}")
    writers[target](directory)
    print(f"{target}: {len(os.listdir(directory))} files in {directory}")


if __name__ == "__main__":
    main(sys.argv)
