#!/usr/bin/env bash
# Issue 21: publish and GC of a lineage catalog with SNAPSHOTS snapshots (FILES files each) and
# OBJECTS further lineage objects (artifacts in chains of 10 over the snapshots, each chain's
# first kept for good and the other 9 ephemeral, every 100th chain pinned), built by crates/lineage-store/examples/catalog_bench.rs one
# phase per process: time, peak RSS (/usr/bin/time -v) and disk (du) after each phase, then a
# GC dry run and a GC at a time when half the snapshots and most artifacts have expired.
# Prints a markdown table (BENCHMARKS.md, "## lineage catalog").
#
#   bash scripts/bench-lineage-catalog.sh
#
# Environment: SNAPSHOTS (10000), FILES (10), OBJECTS (1000000), BATCH (1000 objects per
# transaction), DIR (where the catalog is built; default a new directory under ${TMPDIR:-/tmp},
# removed on exit: point TMPDIR at /dev/shm to take the disk's fsync latency out, at a disk
# directory to include it; every object file is fsynced on its own, as the store always does).
set -euo pipefail
cd "$(dirname "$0")/.."
snapshots=${SNAPSHOTS:-10000}
files=${FILES:-10}
objects=${OBJECTS:-1000000}
batch=${BATCH:-1000}
cargo build --release -q -p lineage-store --example catalog_bench
bench=${CARGO_TARGET_DIR:-$PWD/target}/release/examples/catalog_bench
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-lineage-catalog.XXXXXX")
trap 'rm -rf "$work"' EXIT
cat="$work/catalog"

run() {
    local label=$1
    shift
    /usr/bin/time -v "$bench" "$@" 2>"$work/time.txt" || { cat "$work/time.txt"; exit 1; }
    local wall rss disk files_now
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time.txt")
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.txt")
    disk=$(du -sh "$cat" | cut -f1)
    files_now=$(find "$cat/objects" -type f | wc -l)
    printf '| %s | %s | %d MiB | %s | %s |\n' "$label" "$wall" "$((rss / 1024))" "$disk" "$files_now"
    grep -v '^\s' "$work/time.txt" | sed 's/^/    /' >&2
}

echo "| phase | wall | peak RSS | catalog on disk | object files |"
echo "|---|---|---|---|---|"
run "publish $snapshots snapshots x $files files" publish "$cat" "$snapshots" "$files"
run "store $objects objects ($batch per transaction)" objects "$cat" "$objects" "$batch" "$snapshots" "$files"
run "gc --dry-run at t=$((snapshots / 2))" gc "$cat" "$((snapshots / 2))" dry-run
run "gc at t=$((snapshots / 2))" gc "$cat" "$((snapshots / 2))"
run "gc again (nothing to do)" gc "$cat" "$((snapshots / 2))"
