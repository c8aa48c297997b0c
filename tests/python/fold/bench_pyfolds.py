"""pyfolds / reedsolo side of the fold benchmarks (BENCHMARKS.md, `## fold`).

  python tests/python/fold/bench_pyfolds.py DIR

DIR holds fold_1GiB.fold and fold_100MiB.fold, created by `cargo bench -p fold --bench fold`
(same FOLD_BENCH_DIR). Prints the median wall time of each operation, the same operations the
criterion benches time: open + read_chunk_bytes(verify=True) of one 16 MiB chunk, verification of
every chunk of the 1 GiB file, writing a 1 GiB container (FoldWriter, fsync), hashlib SHA-256 of
16 MiB, and reedsolo RSCodec(32) encode / decode throughput.
"""

import hashlib
import os
import statistics
import sys
import time

from foldpy import load_foldio

foldio = load_foldio()
import reedsolo  # noqa: E402

d = sys.argv[1]
big = os.path.join(d, "fold_1GiB.fold")
small = os.path.join(d, "fold_100MiB.fold")
MIB = 1 << 20


def median_time(fn, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def report(label, seconds, nbytes):
    print(f"{label:<44} {seconds * 1e3:10.2f} ms  {nbytes / seconds / 1e6:9.1f} MB/s", flush=True)


print("google_crc32c:", foldio.google_crc32c is not None and foldio.google_crc32c.implementation)
data = os.urandom(16 * MIB)
report("sha256 16 MiB (hashlib)", median_time(lambda: hashlib.sha256(data).digest(), 20), 16 * MIB)


def read_one(path, name):
    with foldio.FoldReader(path, use_mmap=True) as r:
        return r.read_chunk_bytes(name, verify=True)


report("read+verify 16 MiB chunk of 100 MiB file", median_time(lambda: read_one(small, "chunk03"), 20), 16 * MIB)
report("read+verify 16 MiB chunk of 1 GiB file", median_time(lambda: read_one(big, "chunk40"), 20), 16 * MIB)


def verify_all():
    with foldio.FoldReader(big, use_mmap=True) as r:
        for name in r.list_chunks():
            r.read_chunk_bytes(name, verify=True)


report("verify all 64 chunks of 1 GiB file", median_time(verify_all, 5), 1 << 30)

with foldio.FoldReader(big, use_mmap=True) as r:
    payloads = [r.read_chunk_bytes(f"chunk{i:02}", verify=False) for i in range(4)]
out = os.path.join(d, "pyfolds_write_bench.fold")


def write():
    with foldio.FoldWriter(out, compress="none") as w:
        for i in range(64):
            w.add_chunk(f"chunk{i:02}", "TSAV", payloads[i % 4])
        w.finalize(metadata={})


report("write 1 GiB, 64 chunks (fsync)", median_time(write, 5), 1 << 30)
os.remove(out)

rs = reedsolo.RSCodec(32)
block = os.urandom(64 * 1024)
report("reedsolo rs(32) encode 64 KiB", median_time(lambda: rs.encode(block), 3), len(block))
enc = bytearray(rs.encode(block))
report("reedsolo rs(32) decode clean 64 KiB", median_time(lambda: rs.decode(bytes(enc)), 3), len(block))
for start in range(0, len(enc), 255):
    n = min(255, len(enc) - start)
    for k in range(16):
        enc[start + k * n // 16] ^= 0x5A
report("reedsolo rs(32) decode 16 err/codeword 64 KiB", median_time(lambda: rs.decode(bytes(enc)), 3), len(block))
