#!/usr/bin/env bash
# Issue 19 / 001 §1.1.1: the single binary's size on each deployment target. Prints a markdown
# table (BENCHMARKS.md, "## Deployment targets").
#
#   bash scripts/target-sizes.sh            # examples only (a few minutes)
#   WITH_CLIS=1 bash scripts/target-sizes.sh  # also the release CLIs for both Linux targets (long)
#
# Rows:
# - `embedded-apr` (examples/embedded-apr): two .apr files compiled in, read with `apr` without
#   default features (no_std + alloc, no compression): a tensor model verified and listed by name,
#   dtype and shape, a serde model decoded by `apr::load_from_bytes`; the same code on x86_64 and
#   aarch64 Linux and bare-metal thumbv7em-none-eabihf. For thumbv7em: flash (text + rodata + data) and RAM (bss:
#   the example's 64 KiB heap plus statics) as `size` reports them; for Linux: the stripped file.
# - apr's `embedded` example (crates/apr/examples/embedded.rs): a serde model through
#   `apr::load_from_bytes` with zstd (libzstd), std; Linux targets only (libzstd is C).
# - with WITH_CLIS=1: `alimentar`, `apr`, `fold`, `lineage`, stripped, both Linux targets.
# Release profile with symbols stripped and no debug info (CARGO_PROFILE_RELEASE_* overrides), at
# opt-level 3 (the workspace's) and, for thumbv7em, also "z" (size-optimized). Needs the targets
# and the aarch64 cross gcc that .ci/cross-targets installs. Builds go to
# ${CARGO_TARGET_DIR:-target}.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_PROFILE_RELEASE_DEBUG=false
export CARGO_PROFILE_RELEASE_STRIP=symbols
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
export AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
target_dir=${CARGO_TARGET_DIR:-target}

kib() { awk -v b="$1" 'BEGIN { printf "%.1f KiB", b / 1024 }'; }
mib() { awk -v b="$1" 'BEGIN { printf "%.2f MiB", b / 1048576 }'; }
file_size() { stat -c %s "$1"; }

# `size` (GNU binutils reads any ELF): text includes rodata; data; bss.
flash_ram() {
  size "$1" | awk 'NR == 2 { print $1 + $2, $3 }'
}

rows=()
for target in x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu; do
  cargo build --locked --release --quiet --target "$target" -p embedded-apr
  bytes=$(file_size "$target_dir/$target/release/embedded-apr")
  rows+=("| \`embedded-apr\` (apr without std: no_std) | \`$target\` | O3 | $(kib "$bytes") file (stripped) | - |")
done
for level in 3 z; do
  CARGO_PROFILE_RELEASE_OPT_LEVEL=$level cargo build --locked --release --quiet \
    --target thumbv7em-none-eabihf -p embedded-apr
  read -r flash ram < <(flash_ram "$target_dir/thumbv7em-none-eabihf/release/embedded-apr")
  rows+=("| \`embedded-apr\` (apr without std: no_std) | \`thumbv7em-none-eabihf\` | O$level | $(kib "$flash") flash | $(kib "$ram") RAM (64 KiB heap) |")
done
for target in x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu; do
  cargo build --locked --release --quiet --target "$target" -p apr --example embedded
  bytes=$(file_size "$target_dir/$target/release/examples/embedded")
  rows+=("| apr \`embedded\` example (apr, std, zstd) | \`$target\` | O3 | $(kib "$bytes") file (stripped) | - |")
done
if [ -n "${WITH_CLIS:-}" ]; then
  for target in x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu; do
    cargo build --locked --release --quiet --target "$target" \
      -p envelope-cli -p fold-cli -p lineage-cli
    for bin in alimentar apr fold lineage; do
      bytes=$(file_size "$target_dir/$target/release/$bin")
      rows+=("| \`$bin\` CLI | \`$target\` | O3 | $(mib "$bytes") file (stripped) | - |")
    done
  done
fi

echo "| Binary | Target | Opt | Size | RAM |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
