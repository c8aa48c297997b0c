"""Whole-file verification, `fold verify` (release CLI, two threads) against pyfolds, interleaved
run by run so both see the same machine load.

  python tests/python/fold/bench_verify_side_by_side.py FOLD_BINARY FILE [RUNS]

FILE: fold_1GiB.fold from `cargo bench -p fold --bench fold`. The Rust figure includes process
start-up (a few ms); the pyfolds figure is in-process (imports excluded), reading every chunk with
read_chunk_bytes(verify=True) as pyfolds' own verification does.
"""

import statistics
import subprocess
import sys
import time

from foldpy import load_foldio

foldio = load_foldio()
binary, path = sys.argv[1], sys.argv[2]
runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5


def pyfolds_verify():
    with foldio.FoldReader(path, use_mmap=True) as r:
        for name in r.list_chunks():
            r.read_chunk_bytes(name, verify=True)


rust, py = [], []
for _ in range(runs):
    t = time.perf_counter()
    subprocess.run([binary, "verify", path], check=True, stdout=subprocess.DEVNULL)
    rust.append(time.perf_counter() - t)
    t = time.perf_counter()
    pyfolds_verify()
    py.append(time.perf_counter() - t)
print("fold verify (s):", [round(x, 3) for x in rust], "median", round(statistics.median(rust), 3))
print("pyfolds     (s):", [round(x, 3) for x in py], "median", round(statistics.median(py), 3))
print("speed-up (median): %.2fx" % (statistics.median(py) / statistics.median(rust)))
