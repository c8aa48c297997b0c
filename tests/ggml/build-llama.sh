#!/usr/bin/env bash
# Builds llama_probe (tests/ggml/llama_probe.cpp) against llama.cpp's own library: libllama and
# ggml built from a llama.cpp source tree with cmake and ninja, statically, CPU only (no tools,
# examples, tests, server, common, curl, OpenSSL or OpenMP: the probe needs the library alone).
# GGML_NATIVE=OFF: the code is built for the baseline of the target architecture, not for the
# building machine's CPU, so a probe built on one CI machine runs on another and two machines
# compute the same logits. Usage: build-llama.sh LLAMA_DIR BUILD_DIR OUT, with cmake and ninja
# found in $CMAKE and $NINJA (default: on PATH).
set -euo pipefail
llama="$1"; build="$2"; out="$3"
here="$(cd "$(dirname "$0")" && pwd)"
cmake="${CMAKE:-cmake}"
ninja="$(command -v "${NINJA:-ninja}")"
"$cmake" -S "$llama" -B "$build" -G Ninja -DCMAKE_MAKE_PROGRAM="$ninja" \
  -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -DGGML_OPENMP=OFF \
  -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_APP=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF >&2
"$cmake" --build "$build" --target llama -j "$(nproc)" >&2
c++ -std=c++17 -O2 -I"$llama/include" -I"$llama/ggml/include" "$here/llama_probe.cpp" \
  "$build/src/libllama.a" "$build/ggml/src/libggml.a" "$build/ggml/src/libggml-cpu.a" \
  "$build/ggml/src/libggml-base.a" -lpthread -lm -ldl -o "$out"
