#!/usr/bin/env bash
# Side-by-side: `lineage snapshot` vs `find DIR -type f -print0 | sort -z | xargs -0 sha256sum`
# on (a) 2 GiB in 8 files and (b) 100,000 files of 1-4 KiB, generated under $BENCH_DIR.
# Needs hyperfine (apt-get install hyperfine) and GNU time (/usr/bin/time).
# Usage: crates/lineage/benches/compare.sh   (from the workspace root)
set -euo pipefail
BENCH_DIR="${BENCH_DIR:-/tmp/lineage-bench}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-/work/target-lineage}"
cargo build --release -p lineage-cli >&2
L="$CARGO_TARGET_DIR/release/lineage"

mkdir -p "$BENCH_DIR/big" "$BENCH_DIR/small"
if [ "$(find "$BENCH_DIR/big" -type f | wc -l)" -ne 8 ]; then
  for i in 0 1 2 3 4 5 6 7; do head -c $((256 << 20)) /dev/urandom > "$BENCH_DIR/big/part-$i.bin"; done
fi
if [ "$(find "$BENCH_DIR/small" -type f | wc -l)" -ne 100000 ]; then
  python3 - "$BENCH_DIR/small" <<'PY'
import os, random, sys
r, base = random.Random(1), sys.argv[1]
for i in range(100000):
    d = os.path.join(base, "d%03d" % (i // 1000))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%06d.bin" % i), "wb") as f:
        f.write(r.randbytes(r.randint(1024, 4096)))
PY
fi

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for set in big small; do
  hyperfine --warmup 1 --runs "${RUNS:-5}" \
    -n "lineage snapshot $set" "$L snapshot $BENCH_DIR/$set --tenant bench --version v1" \
    -n "find|sort|xargs sha256sum $set" "find $BENCH_DIR/$set -type f -print0 | sort -z | xargs -0 sha256sum > /dev/null"
done
for set in big small; do
  /usr/bin/time -v "$L" snapshot "$BENCH_DIR/$set" --tenant bench --version v1 2>&1 >/dev/null \
    | grep -E "Maximum resident|Elapsed" | sed "s/^/lineage $set: /"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
