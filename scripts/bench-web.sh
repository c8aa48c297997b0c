#!/usr/bin/env bash
# Issue 19: load time of a ~50 MB .ald in Chromium (envelope-wasm: CRC, signature, decryption, zstd,
# Arrow IPC handed to apache-arrow) against apache-arrow reading the same table as an Arrow IPC
# file. The table is samples/sales.csv's columns over ROWS rows (order_id, price, quantity,
# discount; seeded random values), written by our `alimentar` into: table.arrow (Arrow IPC file,
# uncompressed: apache-arrow in the browser reads no compressed IPC), plain.ald (STREAMING,
# zstd-l3, row groups of 65536), signed.ald (plain.ald signed) and encrypted.ald (password-encrypted
# with the CLI's default Argon2id cost, then signed). Headless Debian chromium via playwright-core
# (examples/web/bench/bench.mjs); median of RUNS runs after a warm-up. Prints the BENCHMARKS.md table.
#
#   bash scripts/bench-web.sh       ROWS=3600000 RUNS=5 (env); needs packages/envelope-wasm/pkg
#                                   built, `npm ci` in examples/web and /usr/bin/chromium
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
rows=${ROWS:-3600000}
runs=${RUNS:-5}
target=${CARGO_TARGET_DIR:-$root/target}
nice cargo build --release -q --locked -p envelope-cli
alimentar=$target/release/alimentar
# Served by examples/web/serve.mjs, which serves the repository only; gitignored.
work=$root/examples/web/test/artifacts/bench
export ALIMENTAR_PASSWORD="bench password"
# KEEP=1 keeps the files for another run (which then reuses them); otherwise they are removed.
if [ "${KEEP:-0}" = 1 ] && [ -f "$work/publisher.json" ]; then
  ls -l "$work"
  node examples/web/bench/bench.mjs "$work" "$runs"
  exit
fi
rm -rf "$work"
mkdir -p "$work"
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT

python3 - "$rows" "$work/table.csv" <<'PY'
import random, sys
rows, path = int(sys.argv[1]), sys.argv[2]
rng = random.Random(19)
with open(path, "w") as out:
    out.write("order_id,price,quantity,discount\n")
    for start in range(0, rows, 100_000):
        out.write("".join(
            f"{i},{rng.uniform(1, 100):.6f},{rng.randint(1, 20)},{rng.uniform(0, 0.5):.6f}\n"
            for i in range(start, min(rows, start + 100_000))))
PY
"$alimentar" convert -q "$work/table.csv" -o "$work/plain.ald" --streaming --compression zstd-l3 --chunk-rows 65536
"$alimentar" convert -q "$work/plain.ald" -o "$work/table.arrow"
rm "$work/table.csv"
printf 'bench key password\n' > "$work/key.pw"
"$alimentar" keygen -q -o "$work/publisher.key" --password-file "$work/key.pw"
"$alimentar" sign -q "$work/plain.ald" -o "$work/signed.ald" --key "$work/publisher.key" --password-file "$work/key.pw"
"$alimentar" encrypt -q "$work/plain.ald" -o "$work/encrypted.ald" --password
"$alimentar" sign -q "$work/encrypted.ald" --key "$work/publisher.key" --password-file "$work/key.pw"
python3 - "$work/publisher.key.pub" "$work/publisher.json" <<'PY'
import base64, json, sys
key = next(l.split()[1] for l in open(sys.argv[1]) if l.startswith("ed25519 "))
json.dump({"publisher": base64.b64decode(key).hex()}, open(sys.argv[2], "w"))
PY
ls -l "$work"
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
node examples/web/bench/bench.mjs "$work" "$runs"
