#!/usr/bin/env bash
# Whole-command figures for issue 17 (BENCHMARKS.md, "Hugging Face checkpoints in and out"):
# `apr import` of a multi-GiB sharded checkpoint and `apr export --format gguf` against llama.cpp's
# `convert_hf_to_gguf.py` on the same directory, and `apr quantize` against `llama-quantize` built
# from the same llama.cpp sources. Wall time and peak RSS of each whole process (`/usr/bin/time`).
#
# Usage: scripts/bench-llm-import.sh [WORKDIR]   (default /tmp/llm-bench; needs ~11 GB free)
# Environment: INTEROP_PYTHON (a venv with numpy, safetensors, sentencepiece, torch: .ci/setup-python),
# LLAMA_CPP (an unpacked llama.cpp tree: the one .ci/setup-llama unpacks), LLAMA_QUANTIZE (the
# llama-quantize binary; built here from LLAMA_CPP when unset), CHECKPOINT_ARGS (passed to
# scripts/make-llama-checkpoint.py; default: TinyLlama-1.1B shapes in f16, 1 GiB shards).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-/tmp/llm-bench}"
python="${INTEROP_PYTHON:-$root/.venv/bin/python}"
llama="${LLAMA_CPP:?set LLAMA_CPP to an unpacked llama.cpp tree (.ci/setup-llama prints it)}"
mkdir -p "$work"
ckpt="$work/checkpoint"

if [ ! -f "$ckpt/model.safetensors.index.json" ]; then
  # shellcheck disable=SC2086
  "$python" "$root/scripts/make-llama-checkpoint.py" "$ckpt" ${CHECKPOINT_ARGS:-}
fi
if [ -z "${LLAMA_QUANTIZE:-}" ]; then
  cmake="$(dirname "$python")/cmake"
  "$cmake" -S "$llama" -B "$work/llama-build" -G Ninja -DCMAKE_MAKE_PROGRAM="$(dirname "$python")/ninja" \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DGGML_OPENMP=OFF >/dev/null
  "$cmake" --build "$work/llama-build" --target llama-quantize -j"$(nproc)" >/dev/null
  LLAMA_QUANTIZE="$work/llama-build/bin/llama-quantize"
fi
cargo build --release --locked -q -p envelope-cli --bin apr
apr="$root/target/release/apr"

printf '%s\n' "checkpoint: $(du -sb "$ckpt" | cut -f1) bytes in $(ls "$ckpt"/*.safetensors | wc -l) shards; $(nproc) cores"
printf '%-52s %8s %9s %9s\n' "command" "wall (s)" "RSS MB" "anon MB"
# Peak RSS (/usr/bin/time: every resident page, including the pages of mapped input files, which
# the kernel drops under memory pressure) and peak anonymous RSS (sampled from /proc every 20 ms:
# the memory a process really holds; a mapped reader's bound is here).
measure() { # label command...
  local label="$1"; shift
  sync
  /usr/bin/time -f '%e %M' -o "$work/time" "$@" >"$work/log" 2>&1 &
  local pid=$! anon=0 kb child
  sleep 0.02
  child="$(pgrep -P "$pid" | head -1 || true)"
  while kill -0 "$pid" 2>/dev/null; do
    kb="$(awk '/^RssAnon:/ {print $2}' "/proc/${child:-$pid}/status" 2>/dev/null || true)"
    if [ -n "$kb" ] && [ "$kb" -gt "$anon" ]; then anon="$kb"; fi
    sleep 0.02
  done
  wait "$pid" || { cat "$work/log"; exit 1; }
  read -r wall rss <"$work/time"
  printf '%-52s %8.1f %9.0f %9.0f\n' "$label" "$wall" "$((rss / 1024))" "$((anon / 1024))"
}
rm -f "$work"/*.apr "$work"/*.gguf
measure "apr import DIR (f16 kept)" "$apr" import "$ckpt" -o "$work/m.apr"
measure "apr export --format gguf" "$apr" export "$work/m.apr" --format gguf -o "$work/apr.gguf"
rm -f "$work/apr.gguf"
measure "convert_hf_to_gguf.py --outtype f16" env PYTHONPATH="$llama/gguf-py" "$python" \
  "$llama/convert_hf_to_gguf.py" "$ckpt" --outtype f16 --outfile "$work/convert.gguf"
measure "apr quantize --type q8_0" "$apr" quantize "$work/m.apr" --type q8_0 -o "$work/q8.apr"
measure "llama-quantize F16 GGUF -> Q8_0 ($(nproc) threads)" "$LLAMA_QUANTIZE" "$work/convert.gguf" "$work/convert-q8.gguf" Q8_0
measure "llama-quantize F16 GGUF -> Q8_0 (1 thread)" "$LLAMA_QUANTIZE" "$work/convert.gguf" "$work/convert-q8.gguf" Q8_0 1
measure "apr quantize --type q4_0" "$apr" quantize "$work/m.apr" --type q4_0 -o "$work/q4.apr" --force
measure "llama-quantize F16 GGUF -> Q4_0 ($(nproc) threads)" "$LLAMA_QUANTIZE" "$work/convert.gguf" "$work/convert-q4.gguf" Q4_0
rm -f "$work"/*.apr "$work"/*.gguf
