#!/usr/bin/env python3
"""Independent verifier of leak-tracing evidence, written from docs/watermark.md §14 alone.

    python verify_evidence.py EVIDENCE.json FILE [TRUSTED.pub]

Checks the Ed25519 signature (Python `cryptography`) over
"ml-envelope/watermark-evidence/v1" || 0x00 || the evidence as sorted, compact JSON, that the
evidence holds no JSON floats, that FILE's BLAKE3 (the `blake3` package) is `dataset_hash`, and,
given a public key file (docs/signing.md §5), that the signer is that key. Prints `ok BUYER_HASH`
and exits 0, or prints the failed check and exits 1.
"""

import base64
import json
import sys

import blake3
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

DOMAIN = b"ml-envelope/watermark-evidence/v1\x00"


def fail(why):
    print(f"refused: {why}")
    sys.exit(1)


def no_floats(value):
    if isinstance(value, float):
        fail("the evidence holds a float; numbers must be strings")
    if isinstance(value, list):
        for item in value:
            no_floats(item)
    if isinstance(value, dict):
        for item in value.values():
            no_floats(item)


def ed25519_of_pub_file(path):
    """The base64 Ed25519 key of a public key file: `ed25519 <base64>` lines (signing.md §5)."""
    for line in open(path, encoding="utf-8"):
        parts = line.split()
        if len(parts) == 2 and parts[0] == "ed25519":
            return parts[1]
    fail(f"{path} has no ed25519 line")


def main():
    evidence_path, file_path = sys.argv[1], sys.argv[2]
    document = json.load(open(evidence_path, encoding="utf-8"))
    evidence, signature = document["evidence"], document["signature"]
    if evidence.get("format") != "ml-envelope/watermark-evidence/v1":
        fail("not watermark evidence v1")
    no_floats(evidence)
    if signature.get("algorithm") != "ed25519":
        fail("unknown signature algorithm")
    if signature["public_key"] != evidence["seller_public_key"]:
        fail("signature.public_key is not the evidence's seller_public_key")
    message = DOMAIN + json.dumps(
        evidence, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")
    key = Ed25519PublicKey.from_public_bytes(base64.b64decode(signature["public_key"]))
    try:
        key.verify(bytes.fromhex(signature["signature"]), message)
    except InvalidSignature:
        fail("bad signature")
    digest = blake3.blake3(open(file_path, "rb").read()).hexdigest()
    if evidence["dataset_hash"] != {"algorithm": "BLAKE3", "hex": digest}:
        fail(f"the file's BLAKE3 {digest} is not the evidence's")
    if len(sys.argv) > 3 and ed25519_of_pub_file(sys.argv[3]) != signature["public_key"]:
        fail("the signer is not the trusted key")
    print(f"ok {evidence['buyer_hash']}")


if __name__ == "__main__":
    main()
