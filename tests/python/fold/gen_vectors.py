"""Generates the known-answer vectors under crates/fold/tests/data/ (run once, output checked in).

  python tests/python/fold/gen_vectors.py crates/fold/tests/data

- rs_vectors.json: reedsolo 1.7.0 RSCodec(nsym).encode(data) for several nsym and lengths
  (single- and multi-codeword; multi-codeword output is reedsolo's interleaved layout
  data0|parity0|data1|parity1...).
- pyfolds_*.fold: files written by pyfolds 1.0.2 FoldWriter (created_at fixed), with the payloads
  and settings in pyfolds_files.json; pyfolds_signed.fold is signed with pyfolds_signed.pub.pem's key.
"""

import json
import os
import random
import sys
import time

from foldpy import load_foldio

foldio = load_foldio()
from pyfolds.serialization import ecc as ecc_mod  # noqa: E402
import reedsolo  # noqa: E402

out = sys.argv[1]
rnd = random.Random(2024)

vectors = []
for nsym, n in [(1, 5), (2, 0), (8, 17), (16, 100), (16, 239), (32, 223), (64, 191), (32, 1000), (10, 600), (254, 3)]:
    data = bytes(rnd.randrange(256) for _ in range(n))
    vectors.append({"nsym": nsym, "data_hex": data.hex(), "encoded_hex": bytes(reedsolo.RSCodec(nsym).encode(data)).hex()})
with open(os.path.join(out, "rs_vectors.json"), "w") as f:
    json.dump({"source": "reedsolo 1.7.0 RSCodec(nsym).encode(data)", "vectors": vectors}, f, indent=1)

payloads = {
    "manifest": json.dumps({"model": "tiny", "layers": [1, 2, 3], "note": "ação"}, ensure_ascii=False).encode(),
    "weights": bytes(rnd.randrange(256) for _ in range(200)),
    "empty": b"",
    "a": b"{}",
}
files = {}


def write(name, compress, ecc, metadata, chunks, created_at=1700000000.123456):
    real = time.time
    time.time = lambda: created_at
    try:
        with foldio.FoldWriter(os.path.join(out, name), compress=compress, ecc=ecc) as w:
            for cname, ctype in chunks:
                w.add_chunk(cname, ctype, payloads[cname])
            w.finalize(metadata=metadata)
    finally:
        time.time = real
    files[name] = {"compress": compress, "ecc": getattr(ecc, "name", "none"), "created_at": created_at,
                   "metadata": metadata, "chunks": [{"name": c, "ctype": t, "payload_hex": payloads[c].hex()} for c, t in chunks]}


chunks = [("manifest", "JSON"), ("weights", "TSAV"), ("empty", "NPZ0")]
md = {"model_type": "Tiny", "tags": {"owner": "Zoë", "emoji": "🧠"}, "scale": 0.1, "eps": 1e-07, "big": 1e+16, "protection": "low"}
write("pyfolds_none.fold", "none", ecc_mod.NoECC(), md, chunks)
write("pyfolds_zstd.fold", "zstd", ecc_mod.NoECC(), md, chunks)
write("pyfolds_zstd_rs16.fold", "zstd", ecc_mod.ReedSolomonECC(16), md, chunks)
write("pyfolds_none_rs32.fold", "none", ecc_mod.ReedSolomonECC(32), md, chunks[:1] + chunks[2:])

# docs/fold.md's worked example.
write("pyfolds_doc_example.fold", "none", ecc_mod.ReedSolomonECC(4), {}, [("a", "JSON")], created_at=1.5)

# Signed metadata, as save_fold_or_mind builds it.
from cryptography.hazmat.primitives import serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ed25519  # noqa: E402

key = ed25519.Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
priv_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
with open(os.path.join(out, "pyfolds_signed.pub.pem"), "wb") as f:
    f.write(key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
with open(os.path.join(out, "pyfolds_signed.key.pem"), "w") as f:
    f.write(priv_pem)
smd = {"model_type": "Tiny", "tags": {"k": "vé"}, "expression": {"theta": 0.5}, "reproducibility": {"python_version": "3.11.2", "torch_initial_seed": 0}, "protection": "off"}
signed = {k: smd[k] for k in ("model_type", "tags", "reproducibility", "protection")}
canon = foldio._canonical_json(signed)
smd["signature"] = {"algorithm": "ed25519", "key_id": "test-key", "payload_sha256": foldio.sha256_hex(canon),
                    "value": foldio._sign_payload_ed25519(canon, priv_pem)}
write("pyfolds_signed.fold", "zstd", ecc_mod.NoECC(), smd, chunks[:1])

with open(os.path.join(out, "pyfolds_files.json"), "w") as f:
    json.dump({"source": "pyfolds 1.0.2 FoldWriter via tests/python/fold/gen_vectors.py", "files": files}, f, indent=1, ensure_ascii=False)
