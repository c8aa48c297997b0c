#!/usr/bin/env bash
# Regenerates the demo page's sample files in examples/web/samples/ (or in DIR, the first argument)
# with our own command-line tools, so every byte the page opens was written by `alimentar` and `apr`:
#   sales.ald           samples/sales.csv (4000 rows) as a STREAMING .ald with a dataset card,
#                       encrypted with the password below (Argon2id, the CLI's default cost) and then
#                       signed by a publisher key made for the purpose (its private half is deleted)
#   sales-tampered.ald  the same file with one payload byte changed and the CRC32 recomputed, as an
#                       attacker would: only the signature catches it (SignatureInvalid)
#   model-q8.apr        samples/model/tiny-mlp.safetensors imported, quantized to Q8_0, signed
#   publisher.json      the publisher's Ed25519 public key (hex), the page's trusted key
# The password of sales.ald is "demo password" (also in examples/web/README.md). Keys, salts and
# nonces are fresh on each run, so the files differ byte-wise between runs but not in content.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
out="${1:-$repo/examples/web/samples}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# The debug build is the one `cargo test` leaves behind, so CI reuses it.
cargo build --locked -q -p envelope-cli --manifest-path "$repo/Cargo.toml"
bin="${CARGO_TARGET_DIR:-$repo/target}/debug"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printf 'publisher key password\n' > "$work/publisher.pw"
printf 'demo password\n' > "$work/data.pw"
"$bin/alimentar" keygen -q -o "$work/publisher.key" --password-file "$work/publisher.pw"

cat > "$work/sales-card.json" <<'JSON'
{"name": "sales", "version": "1.0.0", "license": "CC0-1.0", "tags": ["demo", "tabular"],
 "description": "4000 synthetic orders (price, quantity, discount) from samples/sales.csv, shipped signed and password-encrypted for the envelope-wasm demo page"}
JSON
printf '{"name": "tiny-mlp", "version": "1.0.0", "license": "CC0-1.0"}\n' > "$work/model-card.json"
"$bin/alimentar" convert -q "$repo/samples/sales.csv" -o "$work/sales.ald" --compression zstd-l3 \
  --streaming --chunk-rows 1000 --card "$work/sales-card.json"
"$bin/alimentar" encrypt -q "$work/sales.ald" --password --password-file "$work/data.pw"
"$bin/alimentar" sign -q "$work/sales.ald" --key "$work/publisher.key" --password-file "$work/publisher.pw"

"$bin/apr" import -q "$repo/samples/model/tiny-mlp.safetensors" -o "$work/model.apr" \
  --type neural-sequential --card "$work/model-card.json"
"$bin/apr" quantize -q "$work/model.apr" --type q8_0 -o "$work/model-q8.apr"
"$bin/apr" sign -q "$work/model-q8.apr" --key "$work/publisher.key" --password-file "$work/publisher.pw"

# The tampered copy: one byte in the middle of the payload, then the trailing CRC32 recomputed so
# the cheap check passes and the signature is what fails.
python3 - "$work/sales.ald" "$work/sales-tampered.ald" "$work/publisher.key.pub" "$work/publisher.json" <<'PY'
import base64, json, struct, sys, zlib
src, dst, pub, manifest = sys.argv[1:5]
data = bytearray(open(src, "rb").read())
data[len(data) * 2 // 3] ^= 0x01
data[-4:] = struct.pack("<I", zlib.crc32(bytes(data[:-4])))
open(dst, "wb").write(data)
ed25519 = next(line.split()[1] for line in open(pub) if line.startswith("ed25519 "))
json.dump({"publisher": base64.b64decode(ed25519).hex()},
          open(manifest, "w"), indent=2)
open(manifest, "a").write("\n")
PY

for f in sales.ald sales-tampered.ald model-q8.apr publisher.json; do cp "$work/$f" "$out/$f"; done
"$bin/alimentar" verify -q "$out/sales.ald" --trusted-keys "$work" >/dev/null
if "$bin/alimentar" verify -q "$out/sales-tampered.ald" --trusted-keys "$work" 2>/dev/null; then
  echo "make-samples: the tampered copy still verifies" >&2; exit 1
fi
ls -l "$out"
