#!/usr/bin/env bash
# Whole-command figures for issue 18, row 1 (BENCHMARKS.md, "`apr quantize`, whole command (issue
# 18)"): `apr quantize` against gguf-py's numpy quantizer (a Python process that reads the same
# f32 tensors and writes the quantized GGUF with gguf.GGUFWriter), on one 8192×8192 f32 tensor and
# on a model of many smaller tensors of the same total size. Wall time and peak RSS of each whole
# process (/usr/bin/time), best of RUNS, page cache warm, the two commands alternated.
#
# Usage: bash scripts/bench-quantize.sh
# Environment: INTEROP_PYTHON (a venv with numpy and gguf; default .venv/bin/python), ROWS and
# COLS (the one tensor; default 8192 8192), MANY (the second model: MANY tensors of ROWS/MANY × COLS,
# the same bytes in all; default 64), TYPES (default "q8_0 q4_0 q4_1"), RUNS (default 5), TMPDIR
# (scratch; removed at exit), CARGO_TARGET_DIR.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
python="${INTEROP_PYTHON:-$root/.venv/bin/python}"
rows="${ROWS:-8192}"
cols="${COLS:-8192}"
many="${MANY:-64}"
types="${TYPES:-q8_0 q4_0 q4_1}"
runs="${RUNS:-5}"
work="$(mktemp -d "${TMPDIR:-/tmp}/bench-quantize.XXXXXX")"
trap 'rm -rf "$work"' EXIT

(cd "$root" && cargo build --release --locked -q -p envelope-cli --bin apr)
apr="${CARGO_TARGET_DIR:-$root/target}/release/apr"

# The inputs: safetensors files of N(0, 0.02) f32 values, imported into .apr by `apr import`.
cat >"$work/make.py" <<'EOF'
import json, struct, sys
import numpy as np
out, count, rows, cols = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(7)
size = rows * cols * 4
header = {f"blk.{i}.ffn_up.weight": {"dtype": "F32", "shape": [rows, cols],
          "data_offsets": [i * size, (i + 1) * size]} for i in range(count)}
h = json.dumps(header).encode()
h += b" " * (-len(h) % 8)
with open(out, "wb") as f:
    f.write(struct.pack("<Q", len(h)))
    f.write(h)
    for _ in range(count):
        for r in range(0, rows, 1024):
            n = min(1024, rows - r)
            f.write((rng.standard_normal((n, cols), dtype=np.float32) * 0.02).tobytes())
EOF
# The competitor: gguf-py, whole process (read the f32 tensors, quantize, write the GGUF).
cat >"$work/gguf_quantize.py" <<'EOF'
import json, struct, sys
import numpy as np
import gguf
src, dst, kind = sys.argv[1], sys.argv[2], sys.argv[3]
qtype = {"q8_0": gguf.GGMLQuantizationType.Q8_0, "q4_0": gguf.GGMLQuantizationType.Q4_0,
         "q4_1": gguf.GGMLQuantizationType.Q4_1}[kind]
with open(src, "rb") as f:
    n = struct.unpack("<Q", f.read(8))[0]
    header = json.loads(f.read(n))
data = np.memmap(src, dtype=np.uint8, mode="r", offset=8 + n)
writer = gguf.GGUFWriter(dst, "llama")
for name, t in header.items():
    if name == "__metadata__":
        continue
    a, b = t["data_offsets"]
    x = data[a:b].view(np.float32).reshape(t["shape"])
    q = gguf.quants.quantize(x, qtype)
    writer.add_tensor(name, q, raw_shape=q.shape, raw_dtype=qtype)
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()
EOF

"$python" "$work/make.py" "$work/one.safetensors" 1 "$rows" "$cols"
"$python" "$work/make.py" "$work/many.safetensors" "$many" "$((rows / many))" "$cols"
"$apr" import "$work/one.safetensors" -o "$work/one.apr" >/dev/null
"$apr" import "$work/many.safetensors" -o "$work/many.apr" >/dev/null
input_bytes=$((rows * cols * 4))

# best "wall rss" of RUNS runs of a command (best wall, to the millisecond from the clock around
# the process, as /usr/bin/time rounds to 10 ms; the peak RSS of that run from /usr/bin/time).
best() {
  local best_wall="" best_rss="" wall rss start end
  for _ in $(seq "$runs"); do
    start=$(date +%s%N)
    /usr/bin/time -f '%M' -o "$work/time" "$@" >/dev/null 2>&1
    end=$(date +%s%N)
    wall=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.4f", (b - a) / 1e9}')
    read -r rss <"$work/time"
    if [ -z "$best_wall" ] || awk "BEGIN {exit !($wall < $best_wall)}"; then
      best_wall="$wall" best_rss="$rss"
    fi
  done
  echo "$best_wall $best_rss"
}

printf 'cores: %s; load average: %s; input: %s MiB of f32 per model\n\n' \
  "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$((input_bytes >> 20))"
printf '| model | type | apr quantize s | GB/s | peak RSS MiB | output MiB | gguf-py s | peak RSS MiB | apr speedup |'
[ -n "${BEFORE:-}" ] && printf ' before s | before RSS MiB |'
printf '\n|---|---|---:|---:|---:|---:|---:|---:|---:|'
[ -n "${BEFORE:-}" ] && printf -- '---:|---:|'
printf '\n'
for model in one many; do
  label="1 × ${rows}×${cols}"
  [ "$model" = many ] && label="$many × $((rows / many))×${cols}"
  for type in $types; do
    # Warm the page cache and check both commands work before timing.
    "$apr" quantize "$work/$model.apr" --type "$type" -o "$work/out.apr" --force >/dev/null 2>&1
    "$python" "$work/gguf_quantize.py" "$work/$model.safetensors" "$work/out.gguf" "$type"
    read -r apr_wall apr_rss <<<"$(best "$apr" quantize "$work/$model.apr" --type "$type" -o "$work/out.apr" --force)"
    read -r py_wall py_rss <<<"$(best "$python" "$work/gguf_quantize.py" "$work/$model.safetensors" "$work/out.gguf" "$type")"
    out_mib=$(($(stat -c %s "$work/out.apr") >> 20))
    before=""
    if [ -n "${BEFORE:-}" ]; then
      "$BEFORE" quantize "$work/$model.apr" --type "$type" -o "$work/before.apr" --force >/dev/null 2>&1
      cmp -s "$work/before.apr" "$work/out.apr" || echo "warning: $BEFORE wrote different bytes" >&2
      read -r old_wall old_rss <<<"$(best "$BEFORE" quantize "$work/$model.apr" --type "$type" -o "$work/before.apr" --force)"
      before="$(awk -v w="$old_wall" -v r="$old_rss" 'BEGIN {printf " %.3f | %d |", w, r / 1024}')"
    fi
    awk -v l="$label" -v t="$type" -v aw="$apr_wall" -v ar="$apr_rss" -v o="$out_mib" \
      -v pw="$py_wall" -v pr="$py_rss" -v b="$input_bytes" 'BEGIN {
        printf "| %s | %s | %.3f | %.2f | %d | %d | %.3f | %d | %.1f× |",
          l, t, aw, b / aw / 1e9, ar / 1024, o, pw, pr / 1024, pw / aw }'
    printf '%s\n' "$before"
  done
done
