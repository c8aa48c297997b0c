#!/usr/bin/env python3
"""Independent extractor for the watermark of docs/watermark.md, written from that document.

Pure Python (hmac, hashlib, struct): no numpy, no Rust. Reads one value per line, uses the
example seller key 00 01 .. 1f, and prints the buyer hash if the tag verifies, then checks it
against HMAC(K, "ml-envelope/watermark/v1/buyer" || 0x00 || b"buyer-42").

    python3 reference_extract.py leaked.txt
"""
import hashlib
import hmac
import math
import struct
import sys

M64 = (1 << 64) - 1
PAYLOAD_BITS = 320
SEARCH = range(-22, -2 + 1)
SEARCH_SAMPLE = 8192
MANTISSA_BITS = 52
MARGIN_BITS = 5
MIN_ENERGY = 1.5
CHASE_BITS = 16


def rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M64


def siphash24(key, msg):
    k0, k1 = struct.unpack("<QQ", key)
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rnd():
        v[0] = (v[0] + v[1]) & M64; v[1] = rotl(v[1], 13) ^ v[0]; v[0] = rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & M64; v[3] = rotl(v[3], 16) ^ v[2]
        v[0] = (v[0] + v[3]) & M64; v[3] = rotl(v[3], 21) ^ v[0]
        v[2] = (v[2] + v[1]) & M64; v[1] = rotl(v[1], 17) ^ v[2]; v[2] = rotl(v[2], 32)

    end = len(msg) // 8 * 8
    for i in range(0, end, 8):
        m = struct.unpack("<Q", msg[i:i + 8])[0]
        v[3] ^= m; rnd(); rnd(); v[0] ^= m
    last = (len(msg) & 0xFF) << 56
    for i, c in enumerate(msg[end:]):
        last |= c << (8 * i)
    v[3] ^= last; rnd(); rnd(); v[0] ^= last
    v[2] ^= 0xFF
    for _ in range(4):
        rnd()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def derive(key, label, data):
    return hmac.new(key, label + b"\x00" + data, hashlib.sha256).digest()


def exponent_of(y):
    return math.frexp(y)[1] - 1  # floor(log2 y) for a positive normal y


def scale(values):
    s = sorted(values)
    n = len(s)
    iqr = s[3 * (n - 1) // 4] - s[(n - 1) // 4]
    return iqr if iqr > 0 else s[-1] - s[0]


class Grid:
    def __init__(self, key, e):
        self.e = e
        self.step = 2.0 ** e
        self.limit = 2.0 ** (MANTISSA_BITS - MARGIN_BITS)
        self.cell_key = derive(key, b"ml-envelope/watermark/v1/cell", struct.pack("<i", e))[:16]
        self.cache = {}

    def locate(self, x):
        u = x / self.step
        if not abs(u) < self.limit:
            return None
        j = math.floor(u)
        return j, u - j

    def cell(self, j):
        if j not in self.cache:
            h = siphash24(self.cell_key, struct.pack("<q", j))
            position = ((h & 0xFFFFFFFF) * PAYLOAD_BITS) >> 32
            u = (h >> 32) / 2.0 ** 32
            dither = 0.125 + 0.5 * u + (0.25 if u >= 0.5 else 0.0)
            self.cache[j] = (position, dither)
        return self.cache[j]

    def vote(self, x):
        located = self.locate(x)
        if located is None:
            return None
        j, f = located
        position, t0 = self.cell(j)
        t1 = t0 + 0.5 if t0 + 0.5 < 1.0 else t0 - 0.5
        return j, position, max(-1.0, min(1.0, 2.0 * (abs(f - t1) - abs(f - t0))))


def energy(grid, sorted_values):
    cells = {}
    for x in sorted_values:
        v = grid.vote(x)
        if v is not None:
            j, position, vote = v
            total, count, _ = cells.get(j, (0.0, 0, position))
            cells[j] = (total + vote, count + 1, position)
    sums = [0.0] * PAYLOAD_BITS
    squares = [0.0] * PAYLOAD_BITS
    for total, count, position in cells.values():
        mean = total / count
        sums[position] += mean
        squares[position] += mean * mean
    denominator = sum(squares)
    return sum(s * s for s in sums) / denominator if denominator > 0 else 0.0


def extract(values, key):
    values = [v for v in values if math.isfinite(v)]
    stride = max(1, -(-len(values) // SEARCH_SAMPLE))
    sample = sorted(values[::stride])
    s = exponent_of(scale(values))
    best = max(((energy(Grid(key, s + o), sample), -(s + o)) for o in SEARCH))
    if best[0] < MIN_ENERGY:
        return None
    grid = Grid(key, -best[1])
    sums = [0.0] * PAYLOAD_BITS
    for x in values:
        v = grid.vote(x)
        if v is not None:
            sums[v[1]] += v[2]
    payload = bytearray(40)
    for p in range(PAYLOAD_BITS):
        if sums[p] < 0:
            payload[p // 8] |= 0x80 >> (p % 8)
    order = sorted(range(PAYLOAD_BITS), key=lambda p: (abs(sums[p]), p))[:CHASE_BITS]
    for pattern in range(1 << CHASE_BITS):
        candidate = bytearray(payload)
        for k, p in enumerate(order):
            if pattern >> k & 1:
                candidate[p // 8] ^= 0x80 >> (p % 8)
        buyer, tag = bytes(candidate[:32]), bytes(candidate[32:])
        if derive(key, b"ml-envelope/watermark/v1/tag", buyer)[:8] == tag:
            return buyer, grid.e, bin(pattern).count("1")
    return None


def main():
    key = bytes(range(32))
    values = [float(line) for line in open(sys.argv[1]) if line.strip()]
    found = extract(values, key)
    expected = derive(key, b"ml-envelope/watermark/v1/buyer", b"buyer-42")
    if found is None:
        print("no buyer")
        sys.exit(1)
    buyer, e, flipped = found
    print(f"buyer {buyer.hex()} (cell exponent {e}, {flipped} bits corrected)")
    print("matches buyer-42" if buyer == expected else "DOES NOT match buyer-42")
    sys.exit(0 if buyer == expected else 1)


if __name__ == "__main__":
    main()
