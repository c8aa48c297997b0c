#!/usr/bin/env python3
"""Derives the fail_* vectors from the known-answer files beside this script.

Each vector breaks exactly one rule of docs/envelope.md; its name is
fail_<what>.<Signal>.<ext>, where <Signal> is the Andon signal a reader must raise.
Where the broken rule sits behind the checksum, the CRC32 trailer is recomputed (zlib.crc32 is the
same CRC-32/ISO-HDLC the format uses), and for STREAMING files the chunk index's CRC-32C of the
bytes before it too, so the reader must catch the structural fault itself.
Run: python3 make_failing_vectors.py   (from this directory)
"""
import struct
import zlib
from pathlib import Path

here = Path(__file__).parent
plain = (here / "dataset_plain.ald").read_bytes()
model = (here / "model_signed_licensed.apr").read_bytes()
streaming = (here / "dataset_encrypted_streaming.ald").read_bytes()


def fix_crc(data: bytes) -> bytes:
    body = data[:-4]
    return body + struct.pack("<I", zlib.crc32(body))


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli, reflected 0x82F63B78), bit by bit: slow, short, obviously right."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def fix_prefix_crc(data: bytes) -> bytes:
    """Recomputes the prefix_crc32c of the tensor index (TRUENO_NATIVE) and of the chunk index
    (STREAMING), in file order (docs/envelope.md §4, §4.2)."""
    metadata_size, = struct.unpack_from("<I", data, 8)
    flags = data[21]
    schema_size = struct.unpack_from("<H", data, 22)[0] if data[:4] == b"ALDF" else 0
    at = 32 + metadata_size + schema_size
    for present in (flags & 0x10, flags & 0x04):  # TRUENO_NATIVE, STREAMING
        if not present:
            continue
        length, = struct.unpack_from("<I", data, at)
        field = at + 4 + length - 4
        masked = data[:21] + bytes([flags & ~0x0A]) + data[22:field]
        data = data[:field] + struct.pack("<I", crc32c(masked)) + data[field + 4:]
        at += 4 + length
    return data


def patch(data: bytes, offset: int, new: bytes) -> bytes:
    return data[:offset] + new + data[offset + len(new):]


vectors = {
    "fail_bad_magic.InvalidFormat.ald": patch(plain, 0, b"PK\x03\x04"),
    "fail_too_short.InvalidFormat.ald": plain[:20],
    "fail_version_2_0.UnsupportedVersion.apr": patch(model, 4, b"\x02\x00"),
    "fail_newer_minor.UnsupportedVersion.ald": patch(plain, 4, b"\x01\x09"),
    "fail_bit_flip_in_payload.ChecksumMismatch.ald": patch(plain, 100, bytes([plain[100] ^ 0x04])),
    "fail_truncated.ChecksumMismatch.apr": model[:-10],
    "fail_reserved_flag.InvalidFormat.apr": fix_crc(fix_prefix_crc(patch(model, 21, bytes([model[21] | 0x80])))),
    "fail_reserved_byte.InvalidFormat.apr": fix_crc(fix_prefix_crc(patch(model, 30, b"\x01"))),
    "fail_unknown_compression.InvalidFormat.ald": fix_crc(patch(plain, 20, b"\x07")),
    "fail_metadata_past_end.InvalidFormat.ald": fix_crc(patch(plain, 8, struct.pack("<I", 10_000))),
    "fail_trailing_bytes.InvalidFormat.ald": fix_crc(plain[:-4] + b"junk" + plain[-4:]),
    # The signature flag cleared on a signed file: the signature and license frames no longer
    # line up with the layout, so the walk finds bytes it cannot account for.
    "fail_signed_flag_cleared.InvalidFormat.apr": fix_crc(patch(model, 21, bytes([model[21] & ~0x02]))),
    # STREAMING dataset whose chunk index claims more rows than the header's num_rows.
    # (Both checksums recomputed, so only the row rule can catch it.)
    "fail_rows_disagree.InvalidFormat.ald": fix_crc(fix_prefix_crc(patch(streaming, 24, struct.pack("<Q", 7)))),
}

for name, data in vectors.items():
    (here / name).write_bytes(data)
print(f"wrote {len(vectors)} vectors")
