#!/usr/bin/env bash
# Issue 20: `lineage snapshot` of a tree in object storage against the same tree on local disk.
# A tree of LARGE files of LARGE_MIB MiB and SMALL files of a few KiB (1 GiB in all by default)
# is written to a temporary directory, uploaded by boto3 to a moto S3 server on loopback, then
# snapshotted from disk and from s3://bench/tree at several --concurrency values: wall time,
# throughput, peak RSS (/usr/bin/time -v). The snapshot IDs must be equal (the script stops if
# not). Prints a markdown table (BENCHMARKS.md, "lineage snapshot of object storage").
#
#   INTEROP_PYTHON=.venv/bin/python bash scripts/bench-lineage-s3.sh
#
# Environment: LARGE (240), LARGE_MIB (4), SMALL (4000), CONCURRENCY ("1 4 16 64"), TMPDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${INTEROP_PYTHON:?set INTEROP_PYTHON to a python with moto[server] and boto3 (.ci/setup-python)}
large=${LARGE:-240}
large_mib=${LARGE_MIB:-4}
small=${SMALL:-4000}
concurrency=${CONCURRENCY:-1 4 16 64}
cargo build --release -q -p lineage-cli
lineage=${CARGO_TARGET_DIR:-$PWD/target}/release/lineage
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-lineage-s3.XXXXXX")
port=$("$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$python" -m moto.server -H 127.0.0.1 -p "$port" >/dev/null 2>&1 &
moto=$!
trap 'kill $moto 2>/dev/null; rm -rf "$work"' EXIT
export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true AWS_ACCESS_KEY_ID=test \
    AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1

"$python" - "$work/tree" "$large" "$large_mib" "$small" "$AWS_ENDPOINT_URL" <<'PY'
import os, sys, time, boto3, botocore
root, large, large_mib, small, endpoint = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
rng = os.urandom
for i in range(large):
    os.makedirs(f"{root}/large/{i % 16:02d}", exist_ok=True)
    with open(f"{root}/large/{i % 16:02d}/{i:05d}.bin", "wb") as f:
        f.write(rng(large_mib << 20))
for i in range(small):
    os.makedirs(f"{root}/small/{i % 64:02d}", exist_ok=True)
    with open(f"{root}/small/{i % 64:02d}/{i:06d}.txt", "wb") as f:
        f.write(rng(1024 + (i * 7919) % 8192))
for _ in range(600):
    try:
        s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                          aws_secret_access_key="test", region_name="us-east-1")
        s3.create_bucket(Bucket="bench")
        break
    except botocore.exceptions.EndpointConnectionError:
        time.sleep(0.1)
for dirpath, _, files in os.walk(root):
    for name in files:
        path = os.path.join(dirpath, name)
        s3.upload_file(path, "bench", "tree/" + os.path.relpath(path, root))
PY
bytes=$(find "$work/tree" -type f -printf "%s\n" | awk "{ s += \$1 } END { print s }")
files=$(find "$work/tree" -type f | wc -l)
echo "tree: $files files, $((bytes >> 20)) MiB; $(nproc) cores" >&2

run() {
    local label=$1
    shift
    /usr/bin/time -v "$lineage" --json --quiet snapshot "$@" --tenant bench --version v1 \
        >"$work/out.json" 2>"$work/time.txt" || { cat "$work/time.txt"; exit 1; }
    local wall rss seconds id
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time.txt")
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.txt")
    seconds=$(echo "$wall" | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
    id=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["dataset_snapshot_id"])' "$work/out.json")
    printf '| %s | %s | %.0f MB/s | %d MiB | `%s…` |\n' "$label" "$wall" \
        "$(echo "$bytes $seconds" | awk '{ print $1 / $2 / 1e6 }')" "$((rss / 1024))" "${id:0:16}"
    echo "$id" >>"$work/ids"
}

# The server's floor: every object fetched whole by curl, 16 at a time, nothing hashed: what moto
# (Python, on the same cores) costs per request and per byte.
start=$(date +%s.%N)
(cd "$work/tree" && find . -type f | sed "s|^\./|$AWS_ENDPOINT_URL/bench/tree/|") |
    xargs -P 16 -n 16 curl -sf --aws-sigv4 aws:amz:us-east-1:s3 --user test:test \
        -o /dev/null -o /dev/null -o /dev/null -o /dev/null -o /dev/null -o /dev/null -o /dev/null \
        -o /dev/null -o /dev/null -o /dev/null -o /dev/null -o /dev/null -o /dev/null -o /dev/null \
        -o /dev/null -o /dev/null -w '%{size_download}\n' >"$work/sizes.txt"
floor=$(echo "$start $(date +%s.%N)" | awk '{ print $2 - $1 }')
got=$(awk '{ s += $1 } END { print s }' "$work/sizes.txt")
[ "$got" = "$bytes" ] || { echo "curl fetched $got bytes, not $bytes" >&2; exit 1; }
echo "server floor: curl GETs every object whole, 16 at a time: $floor s ($(echo "$files $floor" | awk '{ printf "%.0f", $1 / $2 }') requests/s, $(echo "$bytes $floor" | awk '{ printf "%.0f", $1 / $2 / 1e6 }') MB/s)"
echo
echo "| source | wall | throughput | peak RSS | dataset_snapshot_id |"
echo "|---|---|---|---|---|"
run "local disk ($files files)" "$work/tree"
for c in $concurrency; do
    run "s3://bench/tree, --concurrency $c" s3://bench/tree --concurrency "$c"
done
if [ "$(sort -u "$work/ids" | wc -l)" -ne 1 ]; then
    echo "snapshot IDs differ:" >&2
    cat "$work/ids" >&2
    exit 1
fi
