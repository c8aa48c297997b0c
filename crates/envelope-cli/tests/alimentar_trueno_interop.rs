//! Interoperability of TRUENO_NATIVE `.ald` files (000 §10) with an independent reader: a Python
//! script below, written from docs/envelope.md §2 and §4 and docs/zerocopy.md §2, §3 and §10
//! alone (struct, zlib, `google_crc32c`, numpy, pyarrow; no Rust), parses the file `alimentar
//! convert --trueno-native` writes, in both forms (without STREAMING, and with it: one chunk of
//! every row, docs/zerocopy.md §10.1, found through the chunk index of docs/envelope.md §4),
//! checks what those pages tell a reader to check, and must get the table pyarrow reads from the
//! Arrow IPC file `alimentar` writes from the same CSV.
//!
//! Needs `INTEROP_PYTHON` (a venv made by `.ci/setup-python`), as the other interop tests.

use crate::support::{ALIMENTAR, CommandLine, Scratch};

/// The independent reader. Prints `ok ROWS COLUMNS` or exits non-zero naming the failed rule.
const READER: &str = r#"
import struct, sys, zlib
import google_crc32c
import numpy as np
import pyarrow as pa

HEADER = struct.Struct("<4sBBHIIIBBHQ")          # envelope.md §2
TRUENO = 16                                       # flag bit 4
STREAMING = 4                                     # flag bit 2
CHUNK = struct.Struct("<QQQQQI")                  # envelope.md §4, one entry
DTYPES = {0: "<f4", 1: "<f8", 2: "<i4", 3: "<i8", 4: "u1"}   # zerocopy.md §3, .ald column
ARROW = {pa.float32(): 0, pa.float64(): 1, pa.int32(): 2, pa.int64(): 3, pa.uint8(): 4}

def fail(rule):
    sys.exit("refused: " + rule)

def fnv1a64(data):
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h

def read(path):
    data = open(path, "rb").read()
    (magic, major, minor, _type, metadata_size, payload_size, uncompressed_size, compression,
     flags, schema_size, num_rows) = HEADER.unpack_from(data, 0)
    if magic != b"ALDF": fail("magic")
    if zlib.crc32(data[:-4]) != struct.unpack_from("<I", data, len(data) - 4)[0]: fail("crc32")
    if flags not in (TRUENO, TRUENO | STREAMING) or compression != 0:
        fail("flags: TRUENO_NATIVE (and STREAMING) only, uncompressed")
    if payload_size != uncompressed_size: fail("sizes")
    at = HEADER.size + metadata_size
    schema = pa.ipc.read_schema(pa.py_buffer(data[at:at + schema_size]))
    at += schema_size
    (body_len,) = struct.unpack_from("<I", data, at)
    body = data[at + 4:at + 4 + body_len]
    at += 4 + body_len
    if google_crc32c.value(data[:at - 4]) != struct.unpack_from("<I", body, body_len - 4)[0]:
        fail("prefix_crc32c")
    chunk = None
    if flags & STREAMING:
        (chunks_len,) = struct.unpack_from("<I", data, at)
        chunks = data[at + 4:at + 4 + chunks_len]
        at += 4 + chunks_len
        total, total_uncompressed, chunk_count = struct.unpack_from("<QQI", chunks, 0)
        if chunks_len != 24 + 44 * chunk_count: fail("chunk index length")
        if google_crc32c.value(data[:at - 4]) != struct.unpack_from("<I", chunks, chunks_len - 4)[0]:
            fail("chunk index prefix_crc32c")
        # zerocopy.md §10.1: exactly one chunk, every row, the whole payload, uncompressed.
        if chunk_count != 1: fail("one chunk")
        chunk = CHUNK.unpack_from(chunks, 20)
        stored_offset, stored_size, chunk_uncompressed, first_item, item_count, _ = chunk
        if (stored_offset, first_item, item_count) != (0, 0, num_rows): fail("the chunk's rows")
        if not stored_size == chunk_uncompressed == total == total_uncompressed: fail("chunk sizes")
        # envelope.md §4: the header holds the totals below 0xFFFFFFFF, else exactly 0xFFFFFFFF.
        if payload_size != (total if total < 0xFFFFFFFF else 0xFFFFFFFF): fail("header sizes")
        payload_size = total
    if at % 64: fail("payload not on a 64-byte boundary")
    payload = data[at:at + payload_size]
    if at + payload_size != len(data) - 4: fail("bytes after the payload")
    if chunk is not None and google_crc32c.value(payload) != chunk[5]: fail("chunk crc32c")
    (count,) = struct.unpack_from("<I", body, 0)
    pos, entries = 4, []
    for _ in range(count):
        name_hash, dtype, ndims, alignment, backend = struct.unpack_from("<QBBBB", body, pos)
        pos += 12
        shape = struct.unpack_from(f"<{ndims}Q", body, pos); pos += 8 * ndims
        strides = struct.unpack_from(f"<{ndims}Q", body, pos); pos += 8 * ndims
        offset, size_bytes, crc, name_len = struct.unpack_from("<QQIH", body, pos); pos += 22
        name = body[pos:pos + name_len]; pos += name_len
        if fnv1a64(name) != name_hash: fail("name_hash")
        if alignment not in (32, 64) or backend > 8: fail("alignment or backend")
        entries.append((name.decode(), dtype, shape, strides, offset, size_bytes, crc))
    padding = body[pos:body_len - 4]
    if len(padding) >= 64 or any(padding): fail("index padding")
    if len(entries) != len(schema): fail("one array per column")
    columns = []
    for field, (name, dtype, shape, strides, offset, size_bytes, crc) in zip(schema, entries):
        if name != field.name: fail("names in schema order")
        if ARROW.get(field.type) != dtype: fail("dtype of the column's Arrow type")
        if shape != (num_rows,) or strides != (1,): fail("shape [num_rows], stride 1")
        if offset % 64: fail("array offset")
        itemsize = np.dtype(DTYPES[dtype]).itemsize
        if size_bytes != num_rows * itemsize or offset + size_bytes > len(payload): fail("size")
        raw = payload[offset:offset + size_bytes]
        if google_crc32c.value(raw) != crc: fail("array crc32c")
        columns.append(pa.array(np.frombuffer(raw, dtype=DTYPES[dtype]), type=field.type))
    return pa.Table.from_arrays(columns, schema=schema)

with pa.OSFile(sys.argv[1], "rb") as source:
    reference = pa.ipc.open_file(source).read_all()
for path in sys.argv[2:]:
    table = read(path)
    if not table.equals(reference):
        sys.exit(f"{path}: tables differ:\n{table}\n{reference}")
    print(f"ok {table.num_rows} {table.num_columns}")
"#;

#[test]
#[ignore = "interop: needs INTEROP_PYTHON (run by .ci/run)"]
fn an_independent_python_reader_gets_the_same_table_from_a_trueno_file() {
    let ws = Scratch::new();
    // Int64, Float64 and a UInt8/Int32/Float32 trio through --schema; 1001 rows.
    let mut csv = String::from("id,x,small,mid,single\n");
    for i in 0..1001 {
        csv.push_str(&format!(
            "{i},{:?},{},{},{:?}\n",
            f64::from(i) / 8.0 - 20.0,
            i % 256,
            i * -7919,
            f64::from(i % 97) * 0.5
        ));
    }
    ws.write("table.csv", csv);
    let schema = "id: Int64 not null, x: Float64, small: UInt8, mid: Int32, single: Float32";
    for (output, options) in [
        ("zero.ald", "--trueno-native"),
        ("chunked.ald", "--trueno-native --streaming"),
        ("reference.arrow", ""),
    ] {
        let mut args = format!("convert table.csv {output} {options} --schema").to_args();
        args.push(schema.to_owned());
        ws.ok(ALIMENTAR, args);
    }
    let stdout = crate::support::python(
        ws.dir(),
        ["-c", READER, "reference.arrow", "zero.ald", "chunked.ald"],
    );
    assert_eq!(stdout, "ok 1001 5\nok 1001 5\n");
}
