"""Times gguf.quants (numpy) quantize/dequantize on the f32 values in argv[1], best of 3, for the
apr quantize benchmark (crates/apr/benches/quantize.rs). Prints one line per operation, in GB/s
of f32 bytes (input for quantize, output for dequantize)."""
import sys
import time

import numpy as np
from gguf import GGMLQuantizationType as T, quants

values = np.fromfile(sys.argv[1], dtype="<f4")
size = values.nbytes


def best(fn):
    times = []
    for _ in range(3):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


for name, qtype in (("q8_0", T.Q8_0), ("q4_0", T.Q4_0), ("q4_1", T.Q4_1)):
    q = quants.quantize(values, qtype)
    tq = best(lambda: quants.quantize(values, qtype))
    td = best(lambda: quants.dequantize(q, qtype))
    print(f"gguf.quants {name}/quantize   {tq * 1e3:9.1f} ms  {size / tq / 1e9:6.3f} GB/s")
    print(f"gguf.quants {name}/dequantize {td * 1e3:9.1f} ms  {size / td / 1e9:6.3f} GB/s")
