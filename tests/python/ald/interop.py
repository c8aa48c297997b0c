"""Interop checks between `alimentar` and pyarrow, run by crates/envelope-cli/tests/alimentar_interop.rs.

    interop.py same FILE FILE...       every file (.ald via ald_reader, .parquet, .arrow) holds the same table
    interop.py chunks FILE.ald         each row group of a STREAMING file decodes alone and they add up
    interop.py write-sample DIR        pyarrow writes DIR/py.parquet and DIR/py.arrow (the same table)
    interop.py card FILE.ald NAME      the metadata map's card has this name
"""

import datetime
import decimal
import sys

import pyarrow as pa
import pyarrow.parquet as pq

import ald_reader


def load(path):
    if path.endswith(".ald"):
        return ald_reader.read(path)[0]
    if path.endswith(".parquet"):
        return pq.read_table(path)
    if path.endswith(".arrow"):
        with pa.ipc.open_file(path) as reader:
            return reader.read_all()
    raise SystemExit(f"unknown kind: {path}")


def logical(table):
    """The table with dictionary columns decoded: Parquet readers split dictionaries by row group,
    so equal columns may be encoded with different dictionaries."""
    columns = []
    for field, column in zip(table.schema, table.columns):
        if pa.types.is_dictionary(field.type):
            column = column.cast(field.type.value_type)
        columns.append(column)
    names = table.column_names
    return pa.table(columns, names=names).combine_chunks()


def same(paths):
    first = logical(load(paths[0]))
    for path in paths[1:]:
        other = logical(load(path))
        if not first.equals(other):
            raise SystemExit(f"{paths[0]} and {path} differ:\n{first.schema}\n{other.schema}\n"
                             f"{first.slice(0, 3)}\n{other.slice(0, 3)}")
    print(f"same {first.num_rows} rows in {len(paths)} files")


def chunks(path):
    table, _, info = ald_reader.read(path)
    groups = [ald_reader.read_chunk(path, i) for i in range(len(info["chunk_rows"]))]
    joined = pa.concat_tables(groups).combine_chunks()
    if not joined.equals(table.combine_chunks()):
        raise SystemExit("row groups do not add up to the table")
    print(f"{len(groups)} row groups")


def write_sample(directory):
    n = 2000
    def maybe(i, value):
        return None if i % 7 == 3 else value
    table = pa.table({
        "i8": pa.array([maybe(i, i % 100 - 50) for i in range(n)], pa.int8()),
        "i64": pa.array([maybe(i, i * 1_000_003) for i in range(n)], pa.int64()),
        "u32": pa.array([maybe(i, i * 7) for i in range(n)], pa.uint32()),
        "f32": pa.array([maybe(i, i / 3) for i in range(n)], pa.float32()),
        "f64": pa.array([maybe(i, i / 7) for i in range(n)], pa.float64()),
        "s": pa.array([maybe(i, f"row {i} ü ✓") for i in range(n)], pa.string()),
        "big": pa.array([maybe(i, "x" * (i % 13)) for i in range(n)], pa.large_string()),
        "bin": pa.array([maybe(i, bytes([i % 256]) * 3) for i in range(n)], pa.binary()),
        "b": pa.array([maybe(i, i % 3 == 0) for i in range(n)], pa.bool_()),
        "d": pa.array([maybe(i, datetime.date(2020, 1, 1) + datetime.timedelta(days=i))
                       for i in range(n)], pa.date32()),
        "ts": pa.array([maybe(i, datetime.datetime(2024, 5, 1, tzinfo=datetime.timezone.utc)
                              + datetime.timedelta(seconds=i)) for i in range(n)],
                       pa.timestamp("us", tz="UTC")),
        "dec": pa.array([maybe(i, decimal.Decimal(i) / 100) for i in range(n)],
                        pa.decimal128(12, 2)),
        "list": pa.array([maybe(i, list(range(i % 4))) for i in range(n)], pa.list_(pa.int32())),
        "cat": pa.array([maybe(i, ["red", "green", "blue"][i % 3]) for i in range(n)],
                        pa.string()).dictionary_encode(),
    })
    pq.write_table(table, f"{directory}/py.parquet", row_group_size=300, compression="zstd")
    with pa.ipc.new_file(f"{directory}/py.arrow", table.schema) as writer:
        writer.write_table(table, max_chunksize=500)
    print(f"wrote {n} rows")


def card(path, name):
    _, metadata, _ = ald_reader.read(path)
    if metadata.get("card", {}).get("name") != name:
        raise SystemExit(f"card: {metadata!r}")
    print("card ok")


def main(argv):
    command, args = argv[1], argv[2:]
    if command == "same":
        same(args)
    elif command == "chunks":
        chunks(args[0])
    elif command == "write-sample":
        write_sample(args[0])
    elif command == "card":
        card(args[0], args[1])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
