"""pyfolds side of the Rust interop tests (crates/fold/tests/interop.rs).

  write SPEC OUT       write OUT with pyfolds' FoldWriter from a JSON spec:
                       {"compress": "zstd"|"none", "ecc": "off"|"low"|"med"|"high"|"rs(N)",
                        "created_at": float, "metadata": {...},
                        "sign": {"private_key_pem": "...", "key_id": "..."} (optional),
                        "chunks": [{"name", "ctype", "payload_hex"}]}
  read FILE            read every chunk with verify=True (manifest warning = failure), print JSON
                       {"chunks": {name: sha256 of raw payload}, "version": ...}
  verify-sig FILE PEM  check metadata.signature as load_fold_or_mind does
  keygen DIR           write an Ed25519 key pair (private.pem, public.pem)
  rs SPEC              reedsolo RSCodec(nsym) encode/decode: {"nsym", "data_hex", "corrupt": [[i, xor]]}
"""

import hashlib
import hmac
import json
import sys
import time
import warnings

from foldpy import load_foldio

foldio = load_foldio()
from pyfolds.serialization import ecc as ecc_mod  # noqa: E402


def codec(name):
    if name.startswith("rs("):
        return ecc_mod.ReedSolomonECC(int(name[3:-1]))
    return ecc_mod.ecc_from_protection(name)


def write(spec_path, out):
    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    metadata = spec.get("metadata", {})
    sign = spec.get("sign")
    if sign:
        signed_payload = {
            "model_type": metadata["model_type"],
            "tags": metadata["tags"],
            "reproducibility": metadata["reproducibility"],
            "protection": metadata["protection"],
        }
        canon = foldio._canonical_json(signed_payload)
        metadata["signature"] = {
            "algorithm": "ed25519",
            "key_id": sign.get("key_id") or "default",
            "payload_sha256": foldio.sha256_hex(canon),
            "value": foldio._sign_payload_ed25519(canon, sign["private_key_pem"]),
        }
    real_time = time.time
    time.time = lambda: spec["created_at"]
    try:
        with foldio.FoldWriter(out, compress=spec.get("compress", "zstd"), ecc=codec(spec.get("ecc", "off"))) as w:
            for c in spec["chunks"]:
                w.add_chunk(c["name"], c["ctype"], bytes.fromhex(c["payload_hex"]))
            w.finalize(metadata=metadata)
    finally:
        time.time = real_time


def read(path):
    warnings.filterwarnings("error", message="Manifest hash")
    out = {}
    with foldio.FoldReader(path, use_mmap=True) as r:
        for name in r.list_chunks():
            out[name] = hashlib.sha256(r.read_chunk_bytes(name, verify=True)).hexdigest()
        version = r.index.get("version")
    print(json.dumps({"chunks": out, "version": version}))


def verify_sig(path, pem_path):
    with open(pem_path, encoding="utf-8") as f:
        pem = f.read()
    with foldio.FoldReader(path) as r:
        md = r.index.get("metadata", {})
    sig = md.get("signature")
    if not sig or sig.get("algorithm") != "ed25519":
        raise SystemExit("signature missing or unsupported")
    payload = {
        "model_type": md.get("model_type"),
        "tags": md.get("tags", {}),
        "reproducibility": md.get("reproducibility", {}),
        "protection": md.get("protection"),
    }
    canon = foldio._canonical_json(payload)
    if not hmac.compare_digest(sig.get("payload_sha256", ""), foldio.sha256_hex(canon)):
        raise SystemExit("payload_sha256 mismatch")
    if not foldio._verify_payload_signature_ed25519(canon, sig.get("value", ""), pem):
        raise SystemExit("signature invalid")
    print("ok")


def keygen(d):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    k = ed25519.Ed25519PrivateKey.generate()
    with open(f"{d}/private.pem", "wb") as f:
        f.write(k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()))
    with open(f"{d}/public.pem", "wb") as f:
        f.write(k.public_key().public_bytes(serialization.Encoding.PEM,
                                            serialization.PublicFormat.SubjectPublicKeyInfo))


def rs(spec_path):
    import reedsolo

    with open(spec_path, encoding="utf-8") as f:
        spec = json.load(f)
    c = reedsolo.RSCodec(spec["nsym"])
    data = bytes.fromhex(spec["data_hex"])
    enc = bytearray(c.encode(data))
    for i, x in spec.get("corrupt", []):
        enc[i] ^= x
    try:
        dec = bytes(c.decode(bytes(enc))[0]).hex()
    except reedsolo.ReedSolomonError:
        dec = None
    print(json.dumps({"encoded_hex": bytes(c.encode(data)).hex(), "decoded_hex": dec}))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "write":
        write(sys.argv[2], sys.argv[3])
    elif cmd == "read":
        read(sys.argv[2])
    elif cmd == "verify-sig":
        verify_sig(sys.argv[2], sys.argv[3])
    elif cmd == "keygen":
        keygen(sys.argv[2])
    elif cmd == "rs":
        rs(sys.argv[2])
    else:
        raise SystemExit(f"unknown command {cmd}")
