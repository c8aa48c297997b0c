#!/usr/bin/env python3
"""Independent numpy extractor for the watermark of docs/watermark.md, reading an `.ald` file.

Written from docs/watermark.md (sections 2, 3, 5 and 11.1) alone: numpy for the per-value work
(SipHash-2-4 vectorised over a uint64 array, votes summed with bincount), `hmac`/`hashlib` for the
key derivations, and tests/python/ald/ald_reader.py (itself written from docs/ald.md) to decode the
file into an Arrow table. No Rust.

    python numpy_extract.py FILE.ald KEY [--buyer ID]

KEY is the 32-byte seller secret as 64 hex digits, or the path of a file holding it (32 raw bytes
or 64 hex digits). Prints `buyer <hex>` and exits 0 if a buyer's tag verifies, else prints
`no buyer` and exits 1. With `--buyer ID`, also says whether the buyer is HMAC(K, buyer || ID).
"""

import hashlib
import hmac
import math
import os
import struct
import sys

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ald"))
import ald_reader  # noqa: E402  (the independent .ald reader)

PAYLOAD_BITS = 320  # §2: 32-byte buyer hash || 8-byte tag
SEARCH = range(-22, -2 + 1)  # §5: candidates S-22 .. S-2
SEARCH_SAMPLE = 8192  # §5: k = max(1, ceil(len / 8192))
MARGIN_BITS = 5  # §3 precision rule: |x / Δ| < 2^(B - 5)
MIN_SLICE = 16  # §3: fewer finite values: not read
MIN_ENERGY = 1.5  # §5
CHASE_BITS = 16  # §5
INTEGER_MIN_EXPONENT = 5  # §3 integer slices: E >= 5
EXACT = 2 ** 53  # §3 integer slices: |x| <= 2^53, else like NaN
LABEL_BUYER = b"ml-envelope/watermark/v1/buyer"
LABEL_TAG = b"ml-envelope/watermark/v1/tag"
LABEL_CELL = b"ml-envelope/watermark/v1/cell"

U64 = np.uint64
C0, C1, C2, C3 = (U64(0x736F6D6570736575), U64(0x646F72616E646F6D),
                  U64(0x6C7967656E657261), U64(0x7465646279746573))


def derive(key, label, data):
    """§2: HMAC-SHA256(K, label || 0x00 || data)."""
    return hmac.new(key, label + b"\x00" + data, hashlib.sha256).digest()


def rotl(x, b):
    return (x << U64(b)) | (x >> U64(64 - b))


def siphash_u64(k, messages):
    """SipHash-2-4 of LE64(m) for every m of a uint64 array (one 8-byte block, then the length
    block 8 << 56)."""
    k0, k1 = struct.unpack("<QQ", k)
    k0, k1 = U64(k0), U64(k1)
    n = messages.shape
    v0 = np.full(n, k0 ^ C0, dtype=U64)
    v1 = np.full(n, k1 ^ C1, dtype=U64)
    v2 = np.full(n, k0 ^ C2, dtype=U64)
    v3 = np.full(n, k1 ^ C3, dtype=U64)

    def rounds(count):
        nonlocal v0, v1, v2, v3
        for _ in range(count):
            v0 = v0 + v1; v1 = rotl(v1, 13) ^ v0; v0 = rotl(v0, 32)
            v2 = v2 + v3; v3 = rotl(v3, 16) ^ v2
            v0 = v0 + v3; v3 = rotl(v3, 21) ^ v0
            v2 = v2 + v1; v1 = rotl(v1, 17) ^ v2; v2 = rotl(v2, 32)

    with np.errstate(over="ignore"):
        for m in (messages, np.full(n, U64(8 << 56), dtype=U64)):
            v3 = v3 ^ m
            rounds(2)
            v0 = v0 ^ m
        v2 = v2 ^ U64(0xFF)
        rounds(4)
    return v0 ^ v1 ^ v2 ^ v3


def exponent_of(y):
    """floor(log2(y)) for a positive normal y (frexp(y)[1] - 1)."""
    return math.frexp(y)[1] - 1


class Slice:
    """One column's readable values (§11.1), as binary64, with its format's rules (§3)."""

    def __init__(self, name, values, mantissa_bits, integer):
        self.name = name
        self.x = values  # float64, NaN where not finite or not exact
        self.limit = 2.0 ** (mantissa_bits - MARGIN_BITS)
        self.integer = integer


def slices_of(table):
    """§11.1: every Float32/Float64 and integer-valued top-level column, non-null values in row
    order, one slice each."""
    out = []
    for field, column in zip(table.schema, table.columns):
        t = field.type
        values = column.drop_null()
        if pa.types.is_float64(t):
            out.append(Slice(field.name, values.to_numpy().astype(np.float64), 52, False))
        elif pa.types.is_float32(t):
            out.append(Slice(field.name, values.to_numpy().astype(np.float64), 23, False))
        elif (pa.types.is_integer(t) or pa.types.is_timestamp(t) or pa.types.is_date(t)
              or pa.types.is_time(t) or pa.types.is_duration(t)):
            # The stored integer (for example milliseconds since 1970).
            width = t.bit_width
            storage = pa.int64() if width == 64 else pa.int32()
            if pa.types.is_unsigned_integer(t):
                raw = values.to_numpy().astype(np.uint64)
                exact = raw <= np.uint64(EXACT)
                x = np.where(exact, raw, 0).astype(np.float64)
            else:
                if not pa.types.is_integer(t):
                    values = pa.chunked_array([c.view(storage) for c in values.chunks], storage)
                raw = values.to_numpy().astype(np.int64)
                exact = (raw >= -EXACT) & (raw <= EXACT)
                x = np.where(exact, raw, 0).astype(np.float64)
            x[~exact] = np.nan  # §3: beyond 2^53 in magnitude, treated like NaN
            out.append(Slice(field.name, x, 52, True))
    return out


def scale(finite):
    """§3: IQR over the sorted finite values, or the range if the IQR is 0; None if unusable."""
    n = len(finite)
    if n < MIN_SLICE:
        return None
    v = np.sort(finite)
    iqr = v[3 * (n - 1) // 4] - v[(n - 1) // 4]
    s = iqr if iqr > 0 else v[-1] - v[0]
    return s if s > 0 and math.isfinite(s) else None


class Grid:
    """§3: the cells of exponent E under key K."""

    def __init__(self, key, e, limit):
        self.e = e
        self.step = 2.0 ** e
        self.limit = limit
        self.cell_key = derive(key, LABEL_CELL, struct.pack("<i", e))[:16]

    def votes(self, x):
        """(cell index j, position p, vote s) of every readable value of x."""
        u = x / self.step
        with np.errstate(invalid="ignore"):
            ok = np.abs(u) < self.limit  # NaN fails too
        u = u[ok]
        jf = np.floor(u)
        f = u - jf
        j = jf.astype(np.int64)
        cells, inverse = np.unique(j, return_inverse=True)
        h = siphash_u64(self.cell_key, cells.view(U64))
        position = (((h & U64(0xFFFFFFFF)) * U64(PAYLOAD_BITS)) >> U64(32)).astype(np.int64)
        big_u = (h >> U64(32)).astype(np.float64) / 2.0 ** 32
        t0 = 0.125 + big_u / 2 + np.where(big_u >= 0.5, 0.25, 0.0)
        t1 = np.where(t0 + 0.5 < 1.0, t0 + 0.5, t0 - 0.5)
        t0, t1 = t0[inverse], t1[inverse]
        s = np.clip(2.0 * (np.abs(f - t1) - np.abs(f - t0)), -1.0, 1.0)
        return inverse, position[inverse], s


def energy(grid, sample):
    """§5: per-cell mean votes, then Σ_p (Σ m_c)² / Σ_p Σ m_c²."""
    cell, position, s = grid.votes(sample)
    if len(s) == 0:
        return 0.0
    counts = np.bincount(cell)
    used = counts > 0
    means = np.bincount(cell, weights=s)[used] / counts[used]
    cell_position = np.zeros(len(counts), dtype=np.int64)
    cell_position[cell] = position
    cell_position = cell_position[used]
    sums = np.bincount(cell_position, weights=means, minlength=PAYLOAD_BITS)
    squares = np.bincount(cell_position, weights=means * means, minlength=PAYLOAD_BITS)
    denominator = squares.sum()
    return float((sums * sums).sum() / denominator) if denominator > 0 else 0.0


def read_slice(key, sl, total):
    """§5: exponent search on a strided sample, then every readable value's vote into total.
    Returns (exponent, votes) or None if the slice adds no votes."""
    finite = sl.x[np.isfinite(sl.x)]
    sc = scale(finite)
    if sc is None:
        return None
    s_exp = exponent_of(sc)
    k = max(1, -(-len(sl.x) // SEARCH_SAMPLE))
    sample = sl.x[::k]
    sample = np.sort(sample[np.isfinite(sample)])
    best = None
    for offset in SEARCH:
        e = s_exp + offset
        if not -1000 <= e <= 1000 or (sl.integer and e < INTEGER_MIN_EXPONENT):
            continue
        en = energy(Grid(key, e, sl.limit), sample)
        if best is None or en > best[0]:  # ties: the smaller E (first seen)
            best = (en, e)
    if best is None or best[0] < MIN_ENERGY:
        return None
    grid = Grid(key, best[1], sl.limit)
    _, position, s = grid.votes(finite)
    total["sum"] += np.bincount(position, weights=s, minlength=PAYLOAD_BITS)
    total["votes"] += int(np.count_nonzero(s))
    return best[1], int(np.count_nonzero(s))


def decode(key, total):
    """§5 decoding: signs, then the Chase search over the 16 least reliable positions."""
    if total["votes"] == 0:
        return None
    sums = total["sum"]
    bits = (sums < 0).astype(np.uint8)
    payload = bytearray(np.packbits(bits).tobytes())  # most significant bit first
    order = sorted(range(PAYLOAD_BITS), key=lambda p: (abs(sums[p]), p))[:CHASE_BITS]
    tagger = hmac.new(key, LABEL_TAG + b"\x00", hashlib.sha256)
    for pattern in range(1 << CHASE_BITS):
        candidate = bytearray(payload)
        for i, p in enumerate(order):
            if pattern >> i & 1:
                candidate[p // 8] ^= 0x80 >> (p % 8)
        mac = tagger.copy()
        mac.update(bytes(candidate[:32]))
        if mac.digest()[:8] == bytes(candidate[32:]):
            return bytes(candidate[:32]), bin(pattern).count("1")
    return None


def seller_key(arg):
    text = arg
    if not (len(arg) == 64 and all(c in "0123456789abcdefABCDEF" for c in arg)):
        with open(arg, "rb") as f:
            raw = f.read()
        if len(raw) == 32:
            return raw
        text = raw.decode("ascii").strip()
    key = bytes.fromhex(text)
    if len(key) != 32:
        raise SystemExit("the seller key is 32 bytes (64 hex digits)")
    return key


def main():
    args = sys.argv[1:]
    buyer_id = None
    if "--buyer" in args:
        at = args.index("--buyer")
        buyer_id = args[at + 1].encode()
        del args[at:at + 2]
    if len(args) != 2:
        raise SystemExit(__doc__)
    path, key = args[0], seller_key(args[1])
    table, _, _ = ald_reader.read(path)
    total = {"sum": np.zeros(PAYLOAD_BITS), "votes": 0}
    read = []
    for sl in slices_of(table):
        found = read_slice(key, sl, total)
        if found is not None:
            read.append(f"{sl.name}: exponent {found[0]}, {found[1]} votes")
    found = decode(key, total)
    if found is None:
        print("no buyer")
        sys.exit(1)
    buyer, flipped = found
    print(f"buyer {buyer.hex()} ({'; '.join(read)}; {flipped} bits corrected)")
    if buyer_id is not None:
        expected = derive(key, LABEL_BUYER, buyer_id)
        print("matches the buyer id" if buyer == expected else "does NOT match the buyer id")
        sys.exit(0 if buyer == expected else 1)


if __name__ == "__main__":
    main()
