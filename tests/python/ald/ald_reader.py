"""An independent reader of `.ald` files, written from docs/envelope.md and docs/ald.md only.

It uses the standard library (struct, zlib's CRC32), `zstandard`, `google_crc32c` and `pyarrow`;
no Rust. It reads unencrypted files with compression none or zstd, whole or STREAMING, and
checks what the docs tell a reader to check. Encrypted files and LZ4 are refused (not needed by
the interop tests; the docs describe them in crypto.md and envelope.md §2.3).
"""

import struct
import zlib

import google_crc32c
import pyarrow as pa
import zstandard

HEADER = struct.Struct("<4sBBHIIIBBHQ")  # envelope.md §2
SUPPORTED = [(1, 0), (1, 1), (1, 2)]  # envelope.md §2.1
FLAG_ENCRYPTED, FLAG_SIGNED, FLAG_STREAMING, FLAG_LICENSED, FLAG_TRUENO = 1, 2, 4, 8, 16
SIZE_IN_CHUNK_INDEX = 0xFFFFFFFF
EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"  # ald.md §5
DATASET_TYPES = {
    0x0001: "TABULAR", 0x0002: "TIME_SERIES", 0x0003: "GRAPH", 0x0004: "SPATIAL",
    0x0010: "TEXT_CORPUS", 0x0011: "TEXT_CLASSIFICATION", 0x0012: "TEXT_PAIRS",
    0x0013: "SEQUENCE_LABELING", 0x0014: "QUESTION_ANSWERING", 0x0015: "SUMMARIZATION",
    0x0016: "TRANSLATION", 0x0020: "IMAGE_CLASSIFICATION", 0x0021: "OBJECT_DETECTION",
    0x0022: "SEGMENTATION", 0x0023: "IMAGE_PAIRS", 0x0024: "VIDEO",
    0x0030: "AUDIO_CLASSIFICATION", 0x0031: "SPEECH_RECOGNITION",
    0x0032: "SPEAKER_IDENTIFICATION", 0x0040: "USER_ITEM_RATINGS",
    0x0041: "IMPLICIT_FEEDBACK", 0x0042: "SEQUENTIAL_RECS", 0x0050: "IMAGE_TEXT",
    0x0051: "AUDIO_TEXT", 0x0052: "VIDEO_TEXT", 0x00FF: "CUSTOM",
}


class AldError(Exception):
    """A refused file; the first word is the Andon signal."""


def fail(signal, why):
    raise AldError(f"{signal}: {why}")


# --- MessagePack (the subset a metadata map uses; ald.md §3) --------------------------------

def unpack(data):
    value, end = _unpack(data, 0)
    if end != len(data):
        fail("InvalidFormat", "bytes after the metadata map")
    return value


def _take(data, at, n):
    if at + n > len(data):
        fail("InvalidFormat", "metadata cut short")
    return data[at:at + n], at + n


def _unpack(data, at):
    tag, at = _take(data, at, 1)
    t = tag[0]
    if t <= 0x7F:
        return t, at
    if t >= 0xE0:
        return t - 0x100, at
    if 0x80 <= t <= 0x8F:
        return _map(data, at, t & 0x0F)
    if 0x90 <= t <= 0x9F:
        return _array(data, at, t & 0x0F)
    if 0xA0 <= t <= 0xBF:
        raw, at = _take(data, at, t & 0x1F)
        return raw.decode("utf-8"), at
    fixed = {0xC0: None, 0xC2: False, 0xC3: True}
    if t in fixed:
        return fixed[t], at
    sizes = {0xCC: "B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: "b", 0xD1: ">h", 0xD2: ">i",
             0xD3: ">q", 0xCA: ">f", 0xCB: ">d"}
    if t in sizes:
        fmt = sizes[t]
        raw, at = _take(data, at, struct.calcsize(fmt))
        return struct.unpack(fmt, raw)[0], at
    lengths = {0xD9: "B", 0xDA: ">H", 0xDB: ">I", 0xC4: "B", 0xC5: ">H", 0xC6: ">I",
               0xDC: ">H", 0xDD: ">I", 0xDE: ">H", 0xDF: ">I"}
    if t in lengths:
        fmt = lengths[t]
        raw, at = _take(data, at, struct.calcsize(fmt))
        n = struct.unpack(fmt, raw)[0]
        if t in (0xD9, 0xDA, 0xDB):
            raw, at = _take(data, at, n)
            return raw.decode("utf-8"), at
        if t in (0xC4, 0xC5, 0xC6):
            return _take(data, at, n)
        if t in (0xDC, 0xDD):
            return _array(data, at, n)
        return _map(data, at, n)
    fail("InvalidFormat", f"MessagePack type 0x{t:02x} not used by .ald metadata")


def _array(data, at, n):
    items = []
    for _ in range(n):
        item, at = _unpack(data, at)
        items.append(item)
    return items, at


def _map(data, at, n):
    out = {}
    for _ in range(n):
        key, at = _unpack(data, at)
        value, at = _unpack(data, at)
        out[key] = value
    return out, at


# --- the envelope (envelope.md §1-§4) -------------------------------------------------------

def _frame(data, at, end, what):
    if at + 4 > end:
        fail("InvalidFormat", f"{what} frame length cut short")
    (n,) = struct.unpack_from("<I", data, at)
    if at + 4 + n > end:
        fail("InvalidFormat", f"{what} runs past the end")
    return data[at + 4:at + 4 + n], at + 4 + n


def _chunk_index(body):
    # envelope.md §4: totals, count, 44-byte entries, prefix CRC-32C.
    if len(body) < 24:
        fail("InvalidFormat", "chunk index too short")
    payload_size, uncompressed_size, count = struct.unpack_from("<QQI", body, 0)
    if len(body) != 24 + 44 * count:
        fail("InvalidFormat", "chunk index length for its chunk_count")
    entries, stored_at, row_at = [], 0, 0
    for i in range(count):
        offset, stored, plain, first, rows, crc = struct.unpack_from("<QQQQQI", body, 20 + 44 * i)
        if offset != stored_at or first != row_at:
            fail("InvalidFormat", f"chunk {i} not contiguous")
        entries.append((offset, stored, plain, first, rows, crc))
        stored_at += stored
        row_at += rows
    if stored_at != payload_size or sum(e[2] for e in entries) != uncompressed_size:
        fail("InvalidFormat", "chunk index totals")
    return payload_size, uncompressed_size, entries


def _decompress(compression, stored, size):
    if compression == 0:
        if len(stored) != size:
            fail("InvalidFormat", "stored size differs from the uncompressed size")
        return stored
    if compression in (1, 2):  # zstd levels 3 and 19: the same frames
        out = zstandard.ZstdDecompressor().decompress(stored, max_output_size=size)
        if len(out) != size:
            fail("InvalidFormat", "zstd output size differs from the declared size")
        return out
    fail("InvalidFormat", f"compression 0x{compression:02x} not supported by this reader")


def read(path):
    """Returns (pyarrow.Table, metadata dict, info dict) for the `.ald` file at `path`."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < HEADER.size + 4:
        fail("InvalidFormat", "shorter than a header and a checksum")
    (magic, major, minor, type_id, metadata_size, payload_size, uncompressed_size, compression,
     flags, schema_size, num_rows) = HEADER.unpack_from(data, 0)
    if magic != b"ALDF":
        fail("InvalidFormat", "bad magic")
    if (major, minor) not in SUPPORTED:
        fail("UnsupportedVersion", f"{major}.{minor}")
    (stored_crc,) = struct.unpack_from("<I", data, len(data) - 4)
    if zlib.crc32(data[:-4]) != stored_crc:
        fail("ChecksumMismatch", "CRC32 trailer")
    if flags & 0xE0:
        fail("InvalidFormat", "reserved flag bits")
    if flags & FLAG_ENCRYPTED:
        fail("DecryptionFailed", "this reader does not decrypt")
    if flags & FLAG_TRUENO:
        fail("InvalidFormat", "TRUENO_NATIVE is not supported by this reader")
    if type_id not in DATASET_TYPES:
        fail("InvalidFormat", f"dataset_type 0x{type_id:04x}")
    end = len(data) - 4
    at = HEADER.size
    metadata_bytes = data[at:at + metadata_size]
    at += metadata_size
    schema = data[at:at + schema_size]
    at += schema_size
    if at > end:
        fail("InvalidFormat", "metadata or schema runs past the end")
    index = None
    if flags & FLAG_STREAMING:
        body, at = _frame(data, at, end, "chunk index")
        index = _chunk_index(body)
        payload_size, uncompressed_size = index[0], index[1]
    if payload_size == SIZE_IN_CHUNK_INDEX:
        fail("InvalidFormat", "a size in the chunk index without a chunk index")
    payload = data[at:at + payload_size]
    at += payload_size
    for flag, what in ((FLAG_SIGNED, "signature"), (FLAG_LICENSED, "license")):
        if flags & flag:
            _, at = _frame(data, at, end, what)
    if at != end:
        fail("InvalidFormat", "bytes between the last section and the CRC32")

    # ald.md §4: exactly one schema message.
    if len(schema) < 8 or schema[:4] != b"\xff\xff\xff\xff" or \
            struct.unpack_from("<I", schema, 4)[0] + 8 != len(schema):
        fail("InvalidFormat", "schema section is not one encapsulated IPC message")
    metadata = unpack(metadata_bytes) if metadata_bytes else {}
    if not isinstance(metadata, dict):
        fail("InvalidFormat", "metadata is not a map")

    if index is None:
        decoded = _decompress(compression, payload, uncompressed_size)
        chunk_rows = [num_rows]
    else:
        pieces = []
        for offset, stored, plain, _first, _rows, crc in index[2]:
            chunk = payload[offset:offset + stored]
            # envelope.md §4: each unencrypted chunk's CRC-32C, written by every writer.
            if google_crc32c.value(chunk) != crc:
                fail("ChecksumMismatch", "a chunk's CRC-32C")
            pieces.append(_decompress(compression, chunk, plain))
        decoded = b"".join(pieces)
        chunk_rows = [entry[4] for entry in index[2]]
    # ald.md §5: schema section ‖ decoded payload ‖ end-of-stream marker is an IPC stream.
    table = pa.ipc.open_stream(pa.py_buffer(schema + decoded + EOS)).read_all()
    if table.num_rows != num_rows:
        fail("InvalidFormat", "rows differ from num_rows")
    info = {
        "version": f"{major}.{minor}",
        "dataset_type": DATASET_TYPES[type_id],
        "num_rows": num_rows,
        "compression": compression,
        "chunk_rows": chunk_rows,
    }
    return table, metadata, info


def read_chunk(path, number):
    """One row group of a STREAMING file, decoded alone (ald.md §6)."""
    with open(path, "rb") as f:
        data = f.read()
    table, _, _ = read(path)  # full checks first
    (_, _, _, _, metadata_size, _, _, compression, flags, schema_size, _) = HEADER.unpack_from(data, 0)
    at = HEADER.size + metadata_size
    schema = data[at:at + schema_size]
    at += schema_size
    body, at = _frame(data, at, len(data) - 4, "chunk index")
    _, _, entries = _chunk_index(body)
    offset, stored, plain, _, rows, _ = entries[number]
    chunk = _decompress(compression, data[at + offset:at + offset + stored], plain)
    group = pa.ipc.open_stream(pa.py_buffer(schema + chunk + EOS)).read_all()
    assert group.num_rows == rows
    del table
    return group
