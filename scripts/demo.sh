#!/usr/bin/env bash
# The main job on the bundled sample (samples/): build the CLIs, then write, inspect, verify and
# read real files with them. Every step's output is printed; the script stops at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }

step "build the command-line tools (release)"
cargo build --release --locked -p envelope-cli -p fold-cli -p lineage-cli
bin=target/release
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

step "lineage: content-addressed IDs of samples/dataset (files, splits, transform chain)"
"$bin/lineage" snapshot samples/dataset --tenant demo --version v1 \
  --splits samples/splits.json --transforms samples/transforms.json
snapshot_id="$("$bin/lineage" snapshot samples/dataset --tenant demo --version v1 \
  --splits samples/splits.json --transforms samples/transforms.json --json \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["dataset_snapshot_id"])')"

step "lineage: which split each sample file goes to"
"$bin/lineage" split samples/dataset --splits samples/splits.json

step "lineage: verify the snapshot ID, then see a one-byte change caught"
"$bin/lineage" verify samples/dataset --tenant demo --version v1 \
  --splits samples/splits.json --transforms samples/transforms.json --expect "$snapshot_id"
cp -r samples/dataset "$out/dataset-changed"
printf '5.1,3.5,1.4,0.2,setosa\n' >> "$out/dataset-changed/measurements/part-0.csv"
if "$bin/lineage" verify "$out/dataset-changed" --tenant demo --version v1 \
  --splits samples/splits.json --transforms samples/transforms.json --expect "$snapshot_id"; then
  echo "expected a mismatch" >&2; exit 1
fi

step "fold: pack the CSV parts into a container with zstd and Reed-Solomon ECC"
"$bin/fold" pack "$out/dataset.fold" --compress zstd --ecc med \
  part0=CSV0:samples/dataset/measurements/part-0.csv \
  part1=CSV0:samples/dataset/measurements/part-1.csv \
  part2=CSV0:samples/dataset/measurements/part-2.csv \
  notes=TEXT:samples/dataset/notes/collection.md
"$bin/fold" ls "$out/dataset.fold"
"$bin/fold" verify "$out/dataset.fold"
"$bin/fold" cat "$out/dataset.fold" notes

step "fold: damage 2 bytes inside a chunk; verify corrects them from the ECC, repair rewrites the file"
damage() { # damage FILE OFFSET COUNT: invert COUNT bytes from OFFSET
  python3 - "$@" <<'PY'
import sys
path, offset, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = bytearray(open(path, "rb").read())
for at in range(offset, offset + count):
    data[at] ^= 0xFF
open(path, "wb").write(data)
PY
}
# The first chunk's stored bytes start after the 28-byte global header and its 32-byte chunk header.
damage "$out/dataset.fold" 70 2
"$bin/fold" verify "$out/dataset.fold"
"$bin/fold" repair "$out/dataset.fold" -o "$out/repaired.fold"
"$bin/fold" verify "$out/repaired.fold"

step "fold: damage beyond the ECC's capacity is refused, naming the chunk and the rule"
damage "$out/repaired.fold" 62 120
if "$bin/fold" verify "$out/repaired.fold"; then echo "expected verify to fail" >&2; exit 1; fi

step "alimentar: convert a CSV part to a STREAMING .ald dataset (zstd, row groups of 8); describe and read it"
"$bin/alimentar" convert samples/dataset/measurements/part-0.csv "$out/data.ald" \
  --compression zstd-l3 --streaming --chunk-rows 8 --type tabular
"$bin/alimentar" info "$out/data.ald"
"$bin/alimentar" schema "$out/data.ald"
"$bin/alimentar" head "$out/data.ald" --rows 5

step "alimentar: out to Parquet and back in; pyarrow-compatible files both ways"
"$bin/alimentar" convert "$out/data.ald" "$out/data.parquet"
"$bin/alimentar" convert "$out/data.parquet" "$out/roundtrip.csv"
cmp samples/dataset/measurements/part-0.csv "$out/roundtrip.csv" && echo "CSV -> .ald -> Parquet -> CSV: identical"

step "alimentar: the zero-copy deployment form (TRUENO_NATIVE): one 64-byte-aligned array per column, listed by info"
"$bin/alimentar" convert samples/numeric/measurements.csv "$out/numeric.ald" --trueno-native && "$bin/alimentar" info "$out/numeric.ald" --verify

step "alimentar: keys for a publisher and a buyer; license the dataset, encrypt it for the buyer, sign it"
printf 'publisher demo password\n' > "$out/publisher.pw"
printf 'alice demo password\n' > "$out/alice.pw"
"$bin/alimentar" keygen -o "$out/publisher.key" --password-file "$out/publisher.pw"
"$bin/alimentar" keygen -o "$out/alice.key" --password-file "$out/alice.pw"
mkdir -p "$out/trusted" && cp "$out/publisher.key.pub" "$out/trusted/"
"$bin/alimentar" license "$out/data.ald" --licensee alice@example.com --expires 2099-12-31 \
  --key "$out/publisher.key" --password-file "$out/publisher.pw" --terms "research use only"
"$bin/alimentar" encrypt "$out/data.ald" --recipient "$out/alice.key.pub"
"$bin/alimentar" sign "$out/data.ald" --key "$out/publisher.key" --password-file "$out/publisher.pw"
"$bin/alimentar" verify "$out/data.ald" --trusted-keys "$out/trusted"
"$bin/alimentar" info "$out/data.ald" --trusted-keys "$out/trusted"

step "alimentar: the buyer decrypts it, after the signature is checked against the trusted keys"
"$bin/alimentar" head "$out/data.ald" --rows 3 --key "$out/alice.key" \
  --password-file "$out/alice.pw" --trusted-keys "$out/trusted"
"$bin/alimentar" decrypt "$out/data.ald" --key "$out/alice.key" --password-file "$out/alice.pw" \
  --trusted-keys "$out/trusted" -o "$out/data-plain.ald"
"$bin/alimentar" info "$out/data-plain.ald"

step "alimentar: one changed byte (with the CRC recomputed, as an attacker would) fails the signature"
python3 - "$out/data.ald" <<'PY'
import struct, sys, zlib
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
data[40] ^= 0x01  # a metadata byte
data[-4:] = struct.pack("<I", zlib.crc32(bytes(data[:-4])))
open(path, "wb").write(data)
PY
if "$bin/alimentar" verify "$out/data.ald" --trusted-keys "$out/trusted"; then
  echo "expected SignatureInvalid" >&2; exit 1
fi

step "alimentar: mark a copy of samples/sales.csv for alice, license it to her (the license checks the mark)"
"$bin/alimentar" watermark samples/sales.csv --buyer alice@example.com \
  --seller-key "$out/publisher.key" --password-file "$out/publisher.pw" -o "$out/sales-alice.ald"
"$bin/alimentar" license "$out/sales-alice.ald" --licensee alice@example.com --expires 2099-12-31 \
  --watermarked --key "$out/publisher.key" --password-file "$out/publisher.pw"
if "$bin/alimentar" license "$out/data-plain.ald" --licensee alice@example.com --expires 2099-12-31 \
  --watermarked --key "$out/publisher.key" --password-file "$out/publisher.pw" -o "$out/claim.ald"; then
  echo "expected WatermarkNotFound: an unmarked file may not claim a watermark" >&2; exit 1
fi

step "alimentar: a leaked CSV export, half its rows, names its buyer; the publisher proves it in signed evidence"
"$bin/alimentar" convert "$out/sales-alice.ald" "$out/leaked.csv"
awk 'NR == 1 || NR % 2 == 0' "$out/leaked.csv" > "$out/leaked-half.csv"
printf 'bob@example.com\nalice@example.com\n' > "$out/buyers.txt"
"$bin/alimentar" piracy extract "$out/leaked-half.csv" --buyers "$out/buyers.txt" \
  --seller-key "$out/publisher.key" --password-file "$out/publisher.pw"
"$bin/alimentar" piracy prove "$out/leaked-half.csv" --buyer alice@example.com \
  --seller-key "$out/publisher.key" --password-file "$out/publisher.pw" -o "$out/evidence.json"
"$bin/alimentar" piracy verify "$out/evidence.json" --file "$out/leaked-half.csv" --trusted-keys "$out/trusted"
"$bin/alimentar" piracy detect "$out/leaked-half.csv"

step "apr: import a SafeTensors model (written by the Python safetensors package), quantize it (Q8_0)"
"$bin/apr" import samples/model/tiny-mlp.safetensors -o "$out/mlp.apr" --type neural-sequential \
  --compression zstd-l3
"$bin/apr" quantize "$out/mlp.apr" --type q8_0 -o "$out/mlp-q8.apr"
"$bin/apr" inspect "$out/mlp-q8.apr" --quantization

step "apr: export to GGUF v3 and to SafeTensors"
"$bin/apr" export "$out/mlp-q8.apr" --format gguf -o "$out/mlp-q8.gguf"
"$bin/apr" export "$out/mlp-q8.apr" --format safetensors -o "$out/mlp-q8-safetensors"
ls -l "$out/mlp-q8.gguf" "$out/mlp-q8-safetensors"

step "apr: a Hugging Face checkpoint (two shards, SentencePiece tokenizer) in; a GGUF llama.cpp runs and a directory transformers loads out"
"$bin/apr" import samples/tiny-llama -o "$out/llama.apr"
"$bin/apr" quantize "$out/llama.apr" --type q8_0 -o "$out/llama-q8.apr"
"$bin/apr" export "$out/llama-q8.apr" --format gguf -o "$out/llama-q8.gguf"
"$bin/apr" export "$out/llama-q8.apr" --format safetensors --dtype f16 -o "$out/llama-hf"
ls "$out/llama-hf"

step "apr: the zero-copy deployment form (64-byte aligned tensors; inspect reads only the index)"
"$bin/apr" convert "$out/mlp.apr" "$out/mlp-aligned.apr" --trueno-native --backend avx2
"$bin/apr" inspect "$out/mlp-aligned.apr"
"$bin/apr" inspect "$out/mlp-aligned.apr" --verify --json > /dev/null && echo "every byte verified"

step "apr: license the model to a buyer until 2099 and sign it; encrypt for alice; verify"
"$bin/apr" license "$out/mlp-q8.apr" --licensee buyer@example.com --expires 2099-12-31 \
  --key "$out/publisher.key" --password-file "$out/publisher.pw" --seats 3 -o "$out/mlp-sold.apr"
"$bin/apr" encrypt "$out/mlp-sold.apr" --recipient "$out/alice.key.pub"
"$bin/apr" sign "$out/mlp-sold.apr" --key "$out/publisher.key" --password-file "$out/publisher.pw"
"$bin/apr" inspect "$out/mlp-sold.apr" --trusted-keys "$out/trusted" \
  --key "$out/alice.key" --password-file "$out/alice.pw"

step "alimentar / apr: verify and inspect envelope files (header, flags, sections, CRC32)"
"$bin/alimentar" info crates/envelope-core/tests/data/dataset_plain.ald
"$bin/apr" inspect crates/envelope-core/tests/data/model_signed_licensed.apr --json
if "$bin/alimentar" info crates/envelope-core/tests/data/fail_bit_flip_in_payload.ChecksumMismatch.ald; then
  echo "expected a checksum failure" >&2; exit 1
fi

step "done: every step behaved as expected"
