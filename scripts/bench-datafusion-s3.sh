#!/usr/bin/env bash
# Issue 20: DataFusion over object storage. The same rows as an .ald set (STREAMING, zstd level 3)
# and as Parquet (ald's interchange writer: zstd level 1, 1 Mi-row row groups), both uploaded to
# moto (a Python S3 server) on 127.0.0.1, queried through DataFusion in the same run:
# (full) an aggregate over every column, (column) SUM of one column, (filter) a selective WHERE.
# Each (format, query) runs in a process of its own (crates/ald-datafusion/examples/s3_scan.rs):
# best of RUNS wall seconds, MB/s of the Arrow bytes of the columns the query uses, peak RSS of the
# process (/usr/bin/time: registration and every run), requests and bytes fetched (an
# object-store wrapper registered in DataFusion's RuntimeEnv, the same for both formats), bytes
# needed (.ald: the stored bytes of the chunks read, the scan's metric; Parquet: the compressed
# column chunks of the columns used, from the footers). Prints the BENCHMARKS.md table.
#
#   bash scripts/bench-datafusion-s3.sh
#
# Environment: INTEROP_PYTHON (a venv with moto[server]; default .venv/bin/python), FILES (8),
# ROWS (1900000 rows per file: ~1 GiB of Arrow data in all), CHUNK_ROWS (262144), RUNS (3),
# ALD_COMPRESSION (the .ald files' codec: zstd, the CLI's default; lz4; none).
# Data is generated once into a directory under ${TMPDIR:-/tmp}, removed on exit with moto.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
files=${FILES:-8}
rows=${ROWS:-1900000}
chunk_rows=${CHUNK_ROWS:-262144}
runs=${RUNS:-3}
python=${INTEROP_PYTHON:-$root/.venv/bin/python}
target=${CARGO_TARGET_DIR:-$root/target}
nice cargo build --release -q -p ald-datafusion --example s3_scan
bench=$target/release/examples/s3_scan
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-datafusion-s3.XXXXXX")
moto_pid=""
cleanup() {
    if [ -n "$moto_pid" ]; then kill "$moto_pid" 2>/dev/null || true; wait "$moto_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$python" -m moto.server -H 127.0.0.1 -p "$port" > "$work/moto.log" 2>&1 &
moto_pid=$!
for _ in $(seq 600); do
    if "$python" -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null; then break; fi
    sleep 0.1
done
export AWS_ENDPOINT_URL=http://127.0.0.1:$port AWS_ALLOW_HTTP=true AWS_ACCESS_KEY_ID=test \
    AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 BENCH_BUCKET=bench
"$python" -c "import urllib.request as r; r.urlopen(r.Request('$AWS_ENDPOINT_URL/bench', method='PUT'))"

"$bench" generate "$work/data" "$files" "$rows" "$chunk_rows"
"$bench" upload "$work/data"
ald_bytes=$(du -cb "$work"/data/ald/*.ald | tail -1 | cut -f1)
parquet_bytes=$(du -cb "$work"/data/parquet/*.parquet | tail -1 | cut -f1)
logical=$(awk '{ s += $2 } END { print s }' "$work/data/logical.txt")

echo "$files files x $rows rows (.ald: ${ALD_COMPRESSION:-zstd}); Arrow data $((logical / 1048576)) MiB; .ald $((ald_bytes / 1048576)) MiB; Parquet $((parquet_bytes / 1048576)) MiB"
echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), best of $runs, moto $("$python" -c 'import moto; print(moto.__version__)') on 127.0.0.1"
# The server's floor, nothing decoded: every object of a format fetched by curl, two requests at
# a time (the queries' concurrency on 2 cores), (whole) in one GET each, and (.ald's pattern) as
# a scan requests it: a 64 KiB head and tail, then the payload in CHUNKS ranges. moto reads the
# whole object to answer a range GET (its cost grows with the object, not the range), so this
# floor says how much of a scan's wall time is the server.
chunks=$(( (rows + chunk_rows - 1) / chunk_rows ))
floor() { # label, then lines of "range url" on standard input
    local label=$1 best=1000000 wall got
    cat >"$work/requests.txt"
    for _ in $(seq "$runs"); do
        start=$(date +%s.%N)
        xargs -P 2 -L 1 sh -c 'curl -sf --aws-sigv4 aws:amz:us-east-1:s3 --user test:test -r "$0" -o /dev/null -w "%{size_download}\n" "$1"' \
            <"$work/requests.txt" >"$work/sizes.txt"
        wall=$(echo "$start $(date +%s.%N)" | awk '{ print $2 - $1 }')
        best=$(echo "$best $wall" | awk '{ print ($2 < $1) ? $2 : $1 }')
    done
    got=$(awk '{ s += $1 } END { print s }' "$work/sizes.txt")
    echo "server floor, $label: $(wc -l <"$work/requests.txt") requests, $got bytes, best of $runs: $best s"
}
for format in ald parquet; do
    for file in "$work"/data/$format/*; do
        echo "0- $AWS_ENDPOINT_URL/bench/$format/$(basename "$file")"
    done | floor "$format objects whole"
done
for file in "$work"/data/ald/*; do
    url=$AWS_ENDPOINT_URL/bench/ald/$(basename "$file")
    size=$(stat -c %s "$file")
    echo "0-65535 $url"
    echo "$((size - 65536))- $url"
    awk -v size="$size" -v n="$chunks" -v url="$url" 'BEGIN {
        step = int(size / n); for (i = 0; i < n; i++) {
            end = (i == n - 1) ? size - 1 : (i + 1) * step - 1; printf "%d-%d %s\n", i * step, end, url } }'
done | floor ".ald scan pattern (head + tail + $chunks ranges per object)"
echo
echo "| query | format | wall | MB/s (logical) | peak RSS | CPU (whole process) | requests | bytes fetched | bytes needed | rows |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for query in full column filter; do
    for format in ald parquet; do
        /usr/bin/time -f "%M %P" -o "$work/time.txt" "$bench" query "$work/data" "$format" "$query" "$runs" > "$work/line.txt"
        read -r _ _ wall rate requests fetched needed out _ < "$work/line.txt"
        read -r kb cpu < <(tail -1 "$work/time.txt")
        awk -v q="$query" -v f="$format" -v w="$wall" -v r="$rate" -v kb="$kb" -v n="$requests" \
            -v b="$fetched" -v d="$needed" -v o="$out" -v c="$cpu" 'BEGIN {
            printf "| %s | %s | %.2f s | %.0f | %.0f MiB | %s | %d | %.1f MB | %.1f MB | %d |\n",
                q, f, w, r, kb / 1024, c, n, b / 1e6, d / 1e6, o }'
    done
done
