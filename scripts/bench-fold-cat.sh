#!/usr/bin/env bash
# Issue 18, row 3: `fold cat big.fold c7`, one chunk of a 1 GiB container, whole process, beside
# SHA-256 alone on the chunk's bytes (`openssl dgst -sha256` and `sha256sum` of a file holding
# just the chunk) in the same run. Outputs: stdout to /dev/null, stdout redirected to a file,
# `-o FILE` (temporary file, fsync, rename, directory fsync) and `-o /dev/null`. Best of RUNS
# wall times, the commands interleaved round by round so that they see the same machine load;
# peak RSS from /usr/bin/time. Prints a markdown table (BENCHMARKS.md, "## fold").
#
#   bash scripts/bench-fold-cat.sh
#
# Environment: CHUNK_MIB (16), CHUNKS (64), RUNS (15), ECC (off; e.g. med: every chunk with
# rs(32), which makes packing slow), FOLD (a fold binary; default: built here with
# `cargo build --release -p fold-cli`). Scratch files (about CHUNKS x CHUNK_MIB MiB plus two
# chunks) go under ${TMPDIR:-/tmp} and are removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
chunk_mib=${CHUNK_MIB:-16}
chunks=${CHUNKS:-64}
runs=${RUNS:-15}
ecc=${ECC:-off}
if [[ -z ${FOLD:-} ]]; then
    cargo build --release -q -p fold-cli
    FOLD=${CARGO_TARGET_DIR:-$PWD/target}/release/fold
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-fold-cat.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"

# Random bytes (incompressible, stored uncompressed): every chunk holds the same CHUNK_MIB MiB,
# so `chunk.bin` is also exactly the bytes of c7 that the competitors hash.
head -c $((chunk_mib << 20)) /dev/urandom >chunk.bin
specs=()
for ((i = 0; i < chunks; i++)); do specs+=("c$i=TSAV:chunk.bin"); done
"$FOLD" --quiet pack --compression none --ecc "$ecc" --created-at 1700000000 -o big.fold "${specs[@]}"
name=c$((chunks > 7 ? 7 : chunks - 1))
"$FOLD" cat big.fold "$name" -o check.bin
cmp -s check.bin chunk.bin || { echo "fold cat output differs from the chunk" >&2; exit 1; }
rm -f check.bin
cat big.fold chunk.bin >/dev/null # page cache warm

labels=(
    "openssl dgst -sha256 (chunk file)"
    "sha256sum (chunk file)"
    "fold cat >/dev/null"
    "fold cat >FILE"
    "fold cat -o FILE"
    "fold cat -o /dev/null"
)
commands=(
    "openssl dgst -sha256 chunk.bin >/dev/null"
    "sha256sum chunk.bin >/dev/null"
    "'$FOLD' cat big.fold $name >/dev/null"
    "'$FOLD' cat big.fold $name >out.bin"
    "'$FOLD' cat big.fold $name -o out.bin"
    "'$FOLD' cat big.fold $name -o /dev/null"
)
best=()
for ((k = 0; k < ${#commands[@]}; k++)); do best[k]=999999999; done
for ((r = 0; r < runs; r++)); do
    for ((k = 0; k < ${#commands[@]}; k++)); do
        # The previous output is removed before the clock starts: freeing (and, on a `discard`
        # mount, trimming) it is not the command's work.
        rm -f out.bin
        start=$EPOCHREALTIME
        eval "${commands[k]}"
        end=$EPOCHREALTIME
        us=$((10#${end/./} - 10#${start/./}))
        ((us < best[k])) && best[k]=$us
    done
done
rss=()
for ((k = 0; k < ${#commands[@]}; k++)); do
    rm -f out.bin
    rss[k]=$(eval "/usr/bin/time -f %M -o rss.txt ${commands[k]}" && cat rss.txt)
done
rm -f out.bin rss.txt

ms() { awk -v us="$1" 'BEGIN { printf "%.1f", us / 1000 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
openssl_us=${best[0]}
echo "fold cat of one ${chunk_mib} MiB chunk ($name, ECC $ecc) of a ${chunks}-chunk container, best of $runs;" \
    "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "| command (whole process) | best wall | vs openssl | vs sha256sum | peak RSS |"
echo "|---|---|---|---|---|"
for ((k = 0; k < ${#commands[@]}; k++)); do
    echo "| ${labels[k]} | $(ms "${best[k]}") ms | $(ratio "${best[k]}" "$openssl_us") |" \
        "$(ratio "${best[k]}" "${best[1]}") | $((rss[k] / 1024)) MiB |"
done
