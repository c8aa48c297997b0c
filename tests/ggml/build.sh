#!/usr/bin/env bash
# Builds gguf_probe from a ggml source tree (the `ggml/` directory of llama.cpp) into OUT.
# Only ggml's base library is compiled (no CPU backend, no BLAS): the GGUF loader and the
# reference quantizers live there. Usage: build.sh GGML_DIR OUT
set -euo pipefail
ggml="$1"; out="$2"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printf '#pragma once\n#define GGML_VERSION "vendored"\n#define GGML_COMMIT "vendored"\n' > "$work/ggml-version.h"
flags=(-O2 -D_GNU_SOURCE -I"$work" -I"$ggml/include" -I"$ggml/src")
for f in ggml.c ggml-alloc.c ggml-quants.c; do
  cc -std=c11 "${flags[@]}" -c "$ggml/src/$f" -o "$work/c-${f%.c}.o" &
done
for f in ggml.cpp ggml-backend.cpp ggml-backend-meta.cpp ggml-opt.cpp ggml-threading.cpp gguf.cpp; do
  c++ -std=c++17 "${flags[@]}" -c "$ggml/src/$f" -o "$work/cpp-${f%.cpp}.o" &
done
wait
c++ -std=c++17 "${flags[@]}" "$here/gguf_probe.cpp" "$work"/*.o -o "$out" -lpthread -lm
