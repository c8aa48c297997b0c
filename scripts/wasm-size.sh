#!/usr/bin/env bash
# The size budget of the npm package's wasm module (000/001 Appendix A: < 500 KB gzipped for a
# dataset loader, < 400 KB for a model loader), measured on the module as shipped
# (.ci/build-wasm-package: profile wasm-release, wasm-bindgen --target web, name section removed)
# for four builds: everything (default features), the dataset loader (`dataset`: Arrow IPC,
# zstd/LZ4, AES-GCM, Argon2id, X25519, Ed25519), the model loader (`model`), and the two
# smallest parts (`fold`, `lineage`). With binaryen's wasm-opt installed, also after
# `wasm-opt -Oz`. Then a breakdown of each loader's code by crate (scripts/wasm-size.mjs, from the
# name section of an unstripped copy).
#
#   scripts/wasm-size.sh            prints the markdown tables BENCHMARKS.md quotes
set -euo pipefail
cd "$(dirname "$0")/.."

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
target_dir="${CARGO_TARGET_DIR:-target}"

gz() { gzip -9 -c "$1" | wc -c; }
kb() { awk -v n="$1" 'BEGIN { printf "%.1f", n / 1000 }'; }

variants=("all:" "dataset:--no-default-features --features dataset"
  "model:--no-default-features --features model" "fold:--no-default-features --features fold"
  "lineage:--no-default-features --features lineage")

rows=()
for variant in "${variants[@]}"; do
  label="${variant%%:*}"
  flags="${variant#*:}"
  # shellcheck disable=SC2086 # the flags are words
  .ci/build-wasm-package --keep-names --out "$work/$label" $flags >/dev/null
  wasm="$work/$label/envelope_wasm_bg.wasm"
  # The breakdown needs function names: keep an unstripped copy, ship the stripped one.
  cp "$wasm" "$work/$label.named.wasm"
  wasm-bindgen --target web --remove-name-section --out-dir "$work/$label" --out-name envelope_wasm \
    "$target_dir/wasm32-unknown-unknown/wasm-release/envelope_wasm.wasm"
  js="$work/$label/envelope_wasm.js"
  raw=$(wc -c <"$wasm")
  row="| $label | $(kb "$raw") | $(kb "$(gz "$wasm")") | $(kb "$(gz "$js")")"
  if command -v wasm-opt >/dev/null 2>&1; then
    wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
      --enable-mutable-globals --enable-reference-types --enable-multivalue \
      "$wasm" -o "$work/$label.opt.wasm"
    row="$row | $(kb "$(wc -c <"$work/$label.opt.wasm")") | $(kb "$(gz "$work/$label.opt.wasm")")"
  else
    row="$row | - | -"
  fi
  rows+=("$row |")
done

echo "| build (features) | .wasm KB | .wasm gzip -9 KB | JS glue gzip KB | wasm-opt -Oz KB | wasm-opt -Oz gzip KB |"
echo "|---|---:|---:|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
for label in dataset model; do
  echo
  echo "Code of the \`$label\` build by crate (bytes before compression):"
  echo
  node scripts/wasm-size.mjs "$work/$label.named.wasm" 12
done
