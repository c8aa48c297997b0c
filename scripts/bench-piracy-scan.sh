#!/usr/bin/env bash
# Issue 16's scan figure: `alimentar piracy scan` over a directory of 100 `.ald` files of 10 MB
# each (50 marked for a buyer, 50 clean), whole command and peak memory, beside the independent
# numpy extractor (tests/python/watermark/numpy_extract.py) on the same files and one core's
# memory read bandwidth. Prints the BENCHMARKS.md rows.
#
#   scripts/bench-piracy-scan.sh [WORKDIR]     (needs .venv from .ci/setup-python; ~2 GB of disk)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=${1:-$(mktemp -d)}
python=${INTEROP_PYTHON:-$root/.venv/bin/python}
cargo build --release -q -p envelope-cli
alimentar=$root/target/release/alimentar
mkdir -p "$work" && cd "$work"
rm -rf suspects && mkdir suspects
export ALIMENTAR_PASSWORD=bench

# One table of four f64 columns, 327,680 rows: 10.5 MB of payload (stored uncompressed, as random
# doubles barely compress).
"$python" - <<'EOF'
import numpy as np
rng = np.random.default_rng(16)
n = 327_680
cols = {
    "price": rng.normal(50, 10, n),
    "score": rng.random(n),
    "income": rng.lognormal(10, 1, n),
    "temp": rng.standard_t(3, n) + 20,
}
with open("table.csv", "w") as out:
    out.write(",".join(cols) + "\n")
    np.savetxt(out, np.column_stack(list(cols.values())), delimiter=",", fmt="%.17g")
EOF
"$alimentar" --quiet convert table.csv clean.ald --compression none --force
"$alimentar" --quiet keygen -o seller.key --force --argon2-m-kib 1024 --argon2-t 1
"$alimentar" --quiet watermark clean.ald --buyer buyer-17 --seller-key seller.key -o marked.ald --force
"$alimentar" --quiet piracy secret --seller-key seller.key -o seller.hex --force
for i in $(seq -w 1 50); do
    cp clean.ald "suspects/clean-$i.ald"
    cp marked.ald "suspects/marked-$i.ald"
done
size=$(du -sm suspects | cut -f1)
cores=$(nproc)

timed() { # label, command...: wall seconds and peak RSS of one run (after one warm-up run)
    local label=$1; shift
    "$@" > /dev/null 2>&1
    /usr/bin/time -f "%e %M" -o time.txt "$@" > out.json 2> /dev/null
    read -r seconds kb < time.txt
    echo "$label|$seconds|$((kb / 1024))"
}

echo "files: 100, $(stat -c %s clean.ald) bytes each, ${size} MB in all, ${cores} cores"
timed "scan, ${cores} jobs" "$alimentar" piracy scan suspects --watermark-secret seller.hex --json
found=$("$python" -c "import json; d=json.load(open('out.json')); print(d['found'], d['scanned'])")
echo "found/scanned: $found"
timed "scan, 1 job" "$alimentar" piracy scan suspects --watermark-secret seller.hex --jobs 1 --json
timed "extract, one marked file" "$alimentar" piracy extract marked.ald --watermark-secret seller.hex
timed "extract, one clean file" "$alimentar" piracy extract clean.ald --watermark-secret seller.hex
timed "numpy reader, one marked file" "$python" "$root/tests/python/watermark/numpy_extract.py" marked.ald "$(cat seller.hex)"
timed "numpy reader, one clean file" sh -c "'$python' '$root/tests/python/watermark/numpy_extract.py' clean.ald $(cat seller.hex) || true"
"$python" - <<'EOF'
import time
import numpy as np
a = np.ones(1 << 27)  # 1 GiB of f64
a.sum()
best = min((lambda t: (a.sum(), time.perf_counter() - t)[1])(time.perf_counter()) for _ in range(5))
print(f"memory read bandwidth, one core (numpy sum of 1 GiB)|{a.nbytes / best / 1e6:.0f} MB/s|")
EOF
