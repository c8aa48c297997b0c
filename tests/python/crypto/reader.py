#!/usr/bin/env python3
"""Independent reader for encrypted and signed .ald / .apr files.

Written from docs/envelope.md, docs/crypto.md and docs/signing.md alone (not from the Rust code),
with the Python `cryptography` and `argon2-cffi` packages. The Rust interop tests run it through
$INTEROP_PYTHON:

  reader.py decrypt FILE (--password PW | --secret-hex HEX | --key-file KEY --password PW)
      writes the decrypted, decompressed payload to stdout
  reader.py verify FILE --public-key-file PUB
      exit 0 if the signature verifies with an ed25519 key of PUB
  reader.py sign FILE --seed-hex HEX [--algorithm 0x02|0x01] -o OUT
      signs FILE with the Ed25519 key whose RFC 8032 secret is the seed (SHA-256 by default,
      SHA-512 with 0x01 as earlier builds wrote)
  reader.py open-message FILE --secret-hex HEX
      opens a sealed x25519-aes256gcm-v1 message (private queries), plaintext to stdout
  reader.py explain FILE [--password PW | --secret-hex HEX]
      prints the sections, the AAD and (with a key) the derived payload key
"""

import argparse
import base64
import hashlib
import struct
import sys
import zlib

from argon2.low_level import Type, hash_secret_raw
from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

ENCRYPTED, SIGNED, STREAMING, LICENSED, TRUENO = 0x01, 0x02, 0x04, 0x08, 0x10
MAGICS = {b"ALDF": "ald", b"APRN": "apr"}


class Refused(Exception):
    """A check failed; the message starts with the signal name."""


# --- envelope.md ---------------------------------------------------------------------------------

def walk(data):
    """Checks the CRC and returns the sections as {name: (start, end)} plus header fields."""
    if len(data) < 36 or data[:4] not in MAGICS:
        raise Refused("InvalidFormat: bad magic or too short")
    fmt = MAGICS[data[:4]]
    if zlib.crc32(data[:-4]) != struct.unpack("<I", data[-4:])[0]:
        raise Refused("ChecksumMismatch")
    metadata_size, payload_size, uncompressed = struct.unpack("<III", data[8:20])
    compression, flags = data[20], data[21]
    schema_size = struct.unpack("<H", data[22:24])[0] if fmt == "ald" else 0
    end = len(data) - 4
    at = 32
    sections = {"header": (0, 32)}

    def take(name, length):
        nonlocal at
        if at + length > end:
            raise Refused(f"InvalidFormat: {name} truncated")
        sections[name] = (at, at + length)
        at += length

    def frame(name):
        if at + 4 > end:
            raise Refused(f"InvalidFormat: {name} frame truncated")
        length = struct.unpack("<I", data[at:at + 4])[0]
        take(name + "_prefix", 4)
        take(name, length)

    take("metadata", metadata_size)
    take("schema", schema_size)
    if flags & TRUENO:
        frame("tensor_index")
    chunks = None
    if flags & STREAMING:
        frame("chunk_index")
        s, e = sections["chunk_index"]
        body = data[s:e]
        total_stored, total_plain, count = struct.unpack("<QQI", body[:20])
        if len(body) != 20 + 44 * count + 4:
            raise Refused("InvalidFormat: chunk index length")
        # Entries: five u64 and the chunk's CRC-32C (zero when encrypted); prefix_crc32c last.
        chunks = [struct.unpack("<QQQQQ", body[20 + 44 * i:60 + 44 * i]) for i in range(count)]
        payload_size, uncompressed = total_stored, total_plain
    if flags & ENCRYPTED:
        frame("encryption")
    take("payload", payload_size)
    if flags & SIGNED:
        frame("signature")
    if flags & LICENSED:
        frame("license")
    if at != end:
        raise Refused("InvalidFormat: trailing bytes")
    return {
        "format": fmt,
        "flags": flags,
        "compression": compression,
        "uncompressed": uncompressed,
        "sections": sections,
        "chunks": chunks,
    }


def decompress(compression, data, size):
    if compression == 0:
        out = data
    elif compression in (1, 2):
        import zstandard  # only needed for zstd files

        out = zstandard.ZstdDecompressor().decompress(data, max_output_size=size)
    else:
        raise Refused("Usage: this reader decompresses none and zstd only")
    if len(out) != size:
        raise Refused("InvalidFormat: decompressed size")
    return out


# --- crypto.md -----------------------------------------------------------------------------------

def hkdf(ikm, salt, info):
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=info).derive(ikm)


def x25519(secret32, public32):
    shared = X25519PrivateKey.from_private_bytes(secret32).exchange(X25519PublicKey.from_public_bytes(public32))
    if shared == bytes(32):
        raise Refused("DecryptionFailed: non-contributory shared secret")
    return shared


def x25519_public(secret32):
    return X25519PrivateKey.from_private_bytes(secret32).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def argon2id(password, salt, m, t, p):
    if not (1024 <= m <= 1 << 20 and 1 <= t <= 10 and 1 <= p <= 16 and m >= 8 * p):
        raise Refused("DecryptionFailed: Argon2id parameters outside the limits")
    return hash_secret_raw(password, salt, t, m, p, 32, Type.ID, version=19)


def parse_block(body):
    if len(body) < 6:
        raise Refused("DecryptionFailed: malformed block")
    mode, suite = body[0], body[1]
    segment = struct.unpack("<I", body[2:6])[0]
    if suite != 0x01 or not (1024 <= segment <= 16 << 20):
        raise Refused("DecryptionFailed: malformed block")
    if mode == 0 and len(body) == 34:
        m, t, p = struct.unpack("<III", body[6:18])
        return {"mode": 0, "segment": segment, "m": m, "t": t, "p": p, "salt": body[18:34]}
    if mode == 1 and len(body) == 46:
        return {"mode": 1, "segment": segment, "eph": body[6:38], "hash": body[38:46]}
    if mode == 2 and len(body) >= 8:
        count = struct.unpack("<H", body[6:8])[0]
        if 1 <= count <= 1024 and len(body) == 8 + 88 * count:
            entries = []
            for i in range(count):
                e = body[8 + 88 * i:8 + 88 * (i + 1)]
                entries.append((e[:32], e[32:40], e[40:88]))
            return {"mode": 2, "segment": segment, "entries": entries}
    raise Refused("DecryptionFailed: malformed block")


def payload_key(fmt, block, password=None, secret=None):
    label = f"{fmt}-v1-encrypt".encode()
    if block["mode"] == 0:
        if password is None:
            raise Refused("DecryptionFailed: password mode needs --password")
        return argon2id(password, block["salt"], block["m"], block["t"], block["p"])
    if secret is None:
        raise Refused("DecryptionFailed: recipient mode needs a secret key")
    me = x25519_public(secret)
    my_hash = hashlib.sha256(me).digest()[:8]
    if block["mode"] == 1:
        if block["hash"] != my_hash:
            raise Refused("DecryptionFailed: not a recipient")
        return hkdf(x25519(secret, block["eph"]), block["eph"] + me, label)
    for eph, h, wrapped in block["entries"]:
        if h != my_hash:
            continue
        wrap_key = hkdf(x25519(secret, eph), eph + me, f"{fmt}-v1-encrypt-wrap".encode())
        try:
            return AESGCM(wrap_key).decrypt(bytes(12), wrapped, b"")
        except InvalidTag:
            continue
    raise Refused("DecryptionFailed: not a recipient")


def aad(data, payload_start):
    before = bytearray(data[:payload_start])
    before[21] &= ~(SIGNED | LICENSED) & 0xFF
    return hashlib.sha256(bytes(before)).digest()


def open_stream(key, ad, segment, chunk, ciphertext):
    sealed = segment + 16
    n = max(1, -(-len(ciphertext) // sealed))
    plain_len = len(ciphertext) - 16 * n
    if plain_len < 0 or max(1, -(-plain_len // segment)) != n:
        raise Refused("DecryptionFailed: impossible ciphertext length")
    gcm = AESGCM(key)
    out = bytearray()
    for j in range(n):
        piece = ciphertext[j * sealed:(j + 1) * sealed]
        nonce = struct.pack(">I", chunk) + j.to_bytes(7, "big") + bytes([1 if j == n - 1 else 0])
        try:
            out += gcm.decrypt(nonce, piece, ad)
        except InvalidTag:
            raise Refused("DecryptionFailed: authentication failed") from None
    return bytes(out)


def decrypt(data, password=None, secret=None):
    info = walk(data)
    if not info["flags"] & ENCRYPTED:
        raise Refused("Usage: not encrypted")
    s, e = info["sections"]["encryption"]
    block = parse_block(data[s:e])
    key = payload_key(info["format"], block, password, secret)
    p0, p1 = info["sections"]["payload"]
    ad = aad(data, p0)
    if info["chunks"] is None:
        plain = open_stream(key, ad, block["segment"], 0, data[p0:p1])
        return decompress(info["compression"], plain, info["uncompressed"])
    out = b""
    for ordinal, (offset, stored, size, _first, _count) in enumerate(info["chunks"]):
        plain = open_stream(key, ad, block["segment"], ordinal, data[p0 + offset:p0 + offset + stored])
        out += decompress(info["compression"], plain, size)
    return out


def open_message(sealed, secret):
    """crypto.md §6: 0x01 || ephemeral_pub || ciphertext || tag."""
    if len(sealed) < 49 or sealed[0] != 0x01:
        raise Refused("DecryptionFailed: malformed message")
    eph = sealed[1:33]
    key = hkdf(x25519(secret, eph), eph + x25519_public(secret), b"x25519-aes256gcm-v1")
    try:
        return AESGCM(key).decrypt(bytes(12), sealed[33:], sealed[:33])
    except InvalidTag:
        raise Refused("DecryptionFailed: authentication failed") from None


# --- signing.md ----------------------------------------------------------------------------------

# signing.md §2-3: the algorithm byte names the digest of the signed regions. 0x02 (SHA-256) is
# written; 0x01 (SHA-512) was written by earlier versions and is still verified.
DIGESTS = {0x01: hashlib.sha512, 0x02: hashlib.sha256}


def signed_message(data, info, algorithm):
    s, e = info["sections"]["signature"]
    digest = DIGESTS[algorithm](data[:s] + data[e:len(data) - 4]).digest()
    return f"{info['format']}-v1-sign".encode() + b"\0" + digest


def verify(data, trusted):
    info = walk(data)
    if not info["flags"] & SIGNED:
        raise Refused("SignatureInvalid: missing")
    s, e = info["sections"]["signature"]
    body = data[s:e]
    if len(body) != 97 or body[0] not in DIGESTS:
        raise Refused("SignatureInvalid: malformed")
    signer, signature = body[1:33], body[33:97]
    if signer not in trusted:
        raise Refused("SignatureInvalid: untrusted key")
    try:
        Ed25519PublicKey.from_public_bytes(signer).verify(
            signature, signed_message(data, info, body[0]))
    except InvalidSignature:
        raise Refused("SignatureInvalid: mismatch") from None
    return signer


def sign(data, seed, algorithm=0x02):
    """Re-encodes `data` with a signature block (replacing any) and signs it."""
    info = walk(data)
    p0, p1 = info["sections"]["payload"]
    rest_start = info["sections"]["signature"][1] if info["flags"] & SIGNED else p1
    head = bytearray(data[:p1])
    head[21] |= SIGNED
    placeholder = bytes(head) + struct.pack("<I", 97) + bytes(97) + data[rest_start:len(data) - 4]
    placeholder += struct.pack("<I", zlib.crc32(placeholder))
    info = walk(placeholder)
    key = Ed25519PrivateKey.from_private_bytes(seed)
    signer = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    body = bytes([algorithm]) + signer + key.sign(signed_message(placeholder, info, algorithm))
    s, e = info["sections"]["signature"]
    out = placeholder[:s] + body + placeholder[e:len(placeholder) - 4]
    return out + struct.pack("<I", zlib.crc32(out))


def read_public_key_file(path):
    keys = {"ed25519": [], "x25519": []}
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        kind, value = line.split(" ", 1)
        raw = base64.b64decode(value.strip(), validate=True)
        if kind not in keys or len(raw) != 32:
            raise Refused("Usage: bad public key file line")
        keys[kind].append(raw)
    return keys


def open_key_file(path, password):
    """The seed of a private key file (signing.md §4)."""
    f = open(path, "rb").read()
    if len(f) != 162 or f[:8] != b"ENVLPKEY" or f[8] != 1 or f[9] != 1:
        raise Refused("DecryptionFailed: malformed key file")
    m, t, p = struct.unpack("<III", f[10:22])
    key = argon2id(password, f[22:38], m, t, p)
    try:
        seed = AESGCM(key).decrypt(f[38:50], f[114:162], f[:114])
    except InvalidTag:
        raise Refused("DecryptionFailed: wrong password or altered key file") from None
    ed_pub = Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    if ed_pub != f[50:82] or x25519_public(x25519_from_seed(seed)) != f[82:114]:
        raise Refused("DecryptionFailed: public keys do not match the seed")
    return seed


def x25519_from_seed(seed):
    return hkdf(seed, None, b"envelope-x25519-from-seed-v1")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["decrypt", "verify", "sign", "open-message", "explain"])
    parser.add_argument("file")
    parser.add_argument("--password")
    parser.add_argument("--secret-hex")
    parser.add_argument("--key-file")
    parser.add_argument("--public-key-file")
    parser.add_argument("--seed-hex")
    parser.add_argument("--algorithm", type=lambda text: int(text, 0), default=0x02,
                        help="sign: the algorithm byte, 0x02 (SHA-256) or 0x01 (SHA-512, as earlier builds)")
    parser.add_argument("-o", "--output")
    args = parser.parse_args()
    data = open(args.file, "rb").read()
    password = args.password.encode() if args.password is not None else None
    secret = bytes.fromhex(args.secret_hex) if args.secret_hex else None
    if args.key_file:
        secret = x25519_from_seed(open_key_file(args.key_file, password))
        password = None
    try:
        if args.command == "decrypt":
            sys.stdout.buffer.write(decrypt(data, password, secret))
        elif args.command == "open-message":
            sys.stdout.buffer.write(open_message(data, secret))
        elif args.command == "verify":
            trusted = read_public_key_file(args.public_key_file)["ed25519"]
            signer = verify(data, trusted)
            print(f"ok: signed by ed25519 {base64.b64encode(signer).decode()}")
        elif args.command == "sign":
            open(args.output, "wb").write(sign(data, bytes.fromhex(args.seed_hex), args.algorithm))
        else:
            info = walk(data)
            for name, (s, e) in info["sections"].items():
                print(f"{name:<20} {s:>8} .. {e:<8} ({e - s} bytes)")
            if info["flags"] & ENCRYPTED:
                p0 = info["sections"]["payload"][0]
                print(f"aad                  {aad(data, p0).hex()}")
                s, e = info["sections"]["encryption"]
                block = parse_block(data[s:e])
                if password is not None or secret is not None:
                    print(f"payload key          {payload_key(info['format'], block, password, secret).hex()}")
    except Refused as error:
        print(f"reader.py: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
