#!/usr/bin/env python3
"""Independent implementation of the dataset-lineage commitments, written from docs/lineage.md.

Uses only `cbor2` (canonical encoding) and `hashlib`; shares no code with the Rust crate.

Usage:
    lineage_ref.py run CASES.json      # prints a JSON array of results, one per case
    lineage_ref.py golden DIR          # checks every *.json golden vector in DIR, exit 1 on mismatch
    lineage_ref.py certificate FILE    # checks an execution certificate's form and Ed25519
                                       # signature (package `cryptography`), prints its payload
    lineage_ref.py shard SPECS.json    # for each {"units", "world_size", "batch_size",
                                       # "shuffle_seed", "drop_last", "epoch"}: the units each
                                       # rank reads (docs/lineage.md §6.3), as a JSON array

A case is an object:
    {"id": str, "tenant_id": str, "version": str,
     "files": [[path, hex_bytes], ...]   or   "dir": "/path/to/tree",
     "splits_json": str | null, "transforms_json": str | null,
     "plan": {"kernel_replay_token": hex, "manifest_hash": hex, "sampler_config_hash": hex} | null,
     "run": {"run_id": str, "sampler_config_json": str | null} | null,
     "samples": "files" | "records"}  (default "files")
With "samples": "records", a record-oriented file (.csv, .jsonl, .ndjson, .parquet, .ald) holds
one sample per record and the result adds "sample_counts" (per file, canonical order); the
"assignment" is then one split name per sample.
With "run" (and "files"), the result has "run": the replay token, the sampler configuration's
hash, the run's default access plan hash, the trace of a complete run (hex of the CBOR sequence)
and the bytes an execution certificate signs (hex), as docs/lineage.md §6.1, §6.2 and §8 define them.
A result is {"id", "ok": true, <commitments as lowercase hex>, "assignment": [split name per
file in canonical order], metrics} or {"id", "ok": false, "failure_code": str}.
"""

import hashlib
import json
import math
import os
import stat
import sys

# The pure-Python encoder: the C extension of cbor2 5.6.5 (what `cbor2.dumps` uses) emits
# binary32 for some values binary16 holds exactly (65504.0, 32768.0), which RFC 8949 §4.2.1
# forbids. The pure-Python encoder gets them right; the self-test below guards that.
from cbor2._encoder import dumps as _cbor_dumps

EPS_EQ = 1e-10
U64_MAX = 2**64 - 1


def cbor(obj):
    """CBOR_CANONICAL(obj)."""
    return _cbor_dumps(obj, canonical=True)


assert cbor(65504.0).hex() == "f97bff", "cbor2 pure-Python encoder lost binary16 precision"
assert cbor(1.1).hex() == "fb3ff199999999999a"
assert cbor({"bb": 1, "a": 2, "c": 3}).hex() == "a361610261630362626201"


def sha256(b):
    return hashlib.sha256(b).digest()


def H(obj):
    return sha256(cbor(obj))


class LineageError(Exception):
    def __init__(self, code):
        super().__init__(code)
        self.code = code


# --- JSON input (docs: "JSON inputs") ---------------------------------------------------------

def _no_dupes(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise LineageError("INVALID_JSON")
        d[k] = v
    return d


def _no_constants(_name):
    raise LineageError("INVALID_JSON")


def _check_json_value(v):
    if isinstance(v, bool) or v is None:
        return
    if isinstance(v, int):
        if not (-(2**64) <= v <= U64_MAX):
            raise LineageError("INVALID_JSON")
    elif isinstance(v, float):
        if not math.isfinite(v):
            raise LineageError("NON_FINITE")
    elif isinstance(v, str):
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise LineageError("INVALID_JSON") from None
    elif isinstance(v, list):
        for x in v:
            _check_json_value(x)
    elif isinstance(v, dict):
        for k, x in v.items():
            _check_json_value(k)
            _check_json_value(x)


def _float(lit):
    f = float(lit)
    if not math.isfinite(f):
        raise LineageError("NON_FINITE")
    return f


def _int(lit):
    i = int(lit)
    if not (-(2**64) <= i <= U64_MAX):
        raise LineageError("INVALID_JSON")
    return i


def parse_json(text):
    try:
        v = json.loads(text, object_pairs_hook=_no_dupes, parse_constant=_no_constants,
                       parse_float=_float, parse_int=_int)
    except LineageError:
        raise
    except ValueError:
        raise LineageError("INVALID_JSON") from None
    _check_json_value(v)
    return v


def is_uint(v):
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= U64_MAX


# --- dataset_root_hash --------------------------------------------------------------------------

def check_path(p):
    if p == "" or p.startswith("/") or "\0" in p:
        raise LineageError("INVALID_PATH")
    for seg in p.split("/"):
        if seg in ("", ".", ".."):
            raise LineageError("INVALID_PATH")


def merkle(node_tag, leaves):
    level = list(leaves)
    if not level:
        raise LineageError("EMPTY_DATASET")
    while len(level) > 1:
        if len(level) % 2:
            level.append(level[-1])
        level = [H([node_tag, level[i], level[i + 1]]) for i in range(0, len(level), 2)]
    return level[0]


def dataset_root(files):
    """files: list of (path str, bytes). Returns (root, sorted paths, total size)."""
    seen = {}
    for p, b in files:
        check_path(p)
        if p in seen:
            raise LineageError("DUPLICATE_PATH")
        seen[p] = b
    if not seen:
        raise LineageError("EMPTY_DATASET")
    paths = sorted(seen, key=lambda s: s.encode("utf-8"))
    leaves = [H(["dataset_leaf_v1", p, sha256(seen[p])]) for p in paths]
    return merkle("dataset_node_v1", leaves), paths, sum(len(b) for b in seen.values())


def walk_dir(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        names = list(filenames)
        for d in dirnames:
            if os.path.islink(os.path.join(dirpath, d)):
                names.append(d)
        for name in names:
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
                raise LineageError("UNSUPPORTED_FILE_TYPE")
            with open(full, "rb") as f:
                out.append((rel, f.read()))
    return out


# --- splits ------------------------------------------------------------------------------------

def parse_splits(text):
    v = parse_json(text)
    if not isinstance(v, list):
        raise LineageError("INVALID_SPLIT_DEF")
    entries = []
    for e in v:
        if not isinstance(e, dict):
            raise LineageError("INVALID_SPLIT_DEF")
        e = dict(e)
        name = e.pop("split_name", None)
        if not isinstance(name, str):
            raise LineageError("INVALID_SPLIT_DEF")
        frac = e.pop("split_fraction", None)
        if isinstance(frac, bool) or not isinstance(frac, (int, float)):
            raise LineageError("INVALID_SPLIT_DEF")
        if isinstance(frac, int) and frac < 0:
            raise LineageError("INVALID_SPLIT_DEF")
        frac = float(frac)
        seed = None
        if "split_seed" in e:
            seed = e.pop("split_seed")
            if not is_uint(seed):
                raise LineageError("INVALID_SPLIT_DEF")
        if e:
            raise LineageError("INVALID_SPLIT_DEF")
        entries.append((name, frac, seed))
    return validate_splits(entries)


def validate_splits(entries):
    if not entries:
        raise LineageError("INVALID_SPLIT_DEF")
    for name, frac, _ in entries:
        if name == "":
            raise LineageError("INVALID_SPLIT_DEF")
        if not math.isfinite(frac):
            raise LineageError("NON_FINITE")
        if not (0.0 <= frac <= 1.0):
            raise LineageError("INVALID_SPLIT_DEF")
    entries = sorted(entries, key=lambda e: e[0].encode("utf-8"))
    for a, b in zip(entries, entries[1:]):
        if a[0] == b[0]:
            raise LineageError("DUPLICATE_SPLIT_NAME")
    seed = entries[0][2]
    if any(e[2] != seed for e in entries):
        raise LineageError("SPLIT_SEED_CONFLICT")
    total = 0.0
    for e in entries:
        total += e[1]
    if abs(total - 1.0) > EPS_EQ:
        raise LineageError("SPLIT_FRACTION_SUM")
    return entries


DEFAULT_SPLITS = [("all", 1.0, None)]


def split_entry(e):
    m = {"split_name": e[0], "split_fraction": float(e[1])}
    if e[2] is not None:
        m["split_seed"] = e[2]
    return m


def split_hashes(entries):
    return H(["split_defs_v1", [split_entry(e) for e in entries]])


def split_counts(entries, n):
    counts, remaining = [], n
    for i, e in enumerate(entries):
        if i == len(entries) - 1:
            c = remaining
        else:
            c = min(math.floor(e[1] * float(n)), remaining)
        remaining -= c
        counts.append(c)
    return counts


def assign(entries, n):
    seed = entries[0][2]
    order = list(range(n))
    if seed is not None:
        order.sort(key=lambda i: (H([seed, i]), i))
    out = [None] * n
    pos = 0
    for idx, c in enumerate(split_counts(entries, n)):
        for i in order[pos:pos + c]:
            out[i] = entries[idx][0]
        pos += c
    return out


# --- samples: records of record-oriented files (docs/lineage.md §3.5) -------------------------

def record_format(path):
    name = path.rsplit("/", 1)[-1]
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        return None
    return {"jsonl": "jsonl", "ndjson": "jsonl", "csv": "csv", "parquet": "parquet",
            "ald": "ald"}.get(ext.lower())


def count_records(fmt, data):
    """Records of one file, each format read by an independent reader."""
    if fmt == "jsonl":
        return sum(1 for line in data.split(b"\n") if line.strip(b" \t\r"))
    if fmt == "csv":
        import csv
        import io
        rows = [r for r in csv.reader(io.StringIO(data.decode("utf-8"), newline="")) if r]
        return max(len(rows) - 1, 0)
    if fmt == "parquet":
        import io
        import pyarrow.parquet as pq
        try:
            return pq.ParquetFile(io.BytesIO(data)).metadata.num_rows
        except Exception:
            raise LineageError("INVALID_RECORD_SOURCE") from None
    if fmt == "ald":
        # The 32-byte header (docs/envelope.md §2): magic, then num_rows at offset 24; the
        # whole-file CRC32 trailer is checked first.
        import struct
        import zlib
        if len(data) < 36 or data[:4] != b"ALDF":
            raise LineageError("INVALID_RECORD_SOURCE")
        if zlib.crc32(data[:-4]) != struct.unpack("<I", data[-4:])[0]:
            raise LineageError("INVALID_RECORD_SOURCE")
        return struct.unpack("<Q", data[24:32])[0]
    raise ValueError(fmt)


def sample_counts(files, paths):
    by_path = dict(files)
    out = []
    for p in paths:
        fmt = record_format(p)
        out.append(1 if fmt is None else count_records(fmt, by_path[p]))
    return out


# --- transforms --------------------------------------------------------------------------------

def parse_transforms(text):
    v = parse_json(text)
    if not isinstance(v, list):
        raise LineageError("INVALID_TRANSFORM")
    for t in v:
        if not isinstance(t, dict) or "seq" not in t or not is_uint(t["seq"]):
            raise LineageError("INVALID_TRANSFORM")
    v = sorted(v, key=lambda t: t["seq"])
    for a, b in zip(v, v[1:]):
        if a["seq"] == b["seq"]:
            raise LineageError("TRANSFORM_SEQ_TIE")
    return v


def transform_chain_hash(transforms):
    return H(["transform_chain_v1", transforms])


# --- snapshot, lineage, plan -------------------------------------------------------------------

def check_name(s):
    if not isinstance(s, str) or s == "" or "\0" in s:
        raise LineageError("INVALID_ARGUMENT")


def lineage_root(objects):
    """objects: list of (object_type, payload). Single tenant, no refs to resolve here."""
    leaves = []
    for t, payload in objects:
        oid = sha256(cbor(payload))
        oh = H(["lineage_object_v1", t, oid, payload])
        leaves.append((t.encode("utf-8"), oid, H(["lineage_leaf_v1", t, oid, oh])))
    keys = [(a, b) for a, b, _ in leaves]
    if len(set(keys)) != len(keys):
        raise LineageError("INVALID_LINEAGE_SET")
    leaves.sort(key=lambda x: (x[0], x[1]))
    return merkle("lineage_node_v1", [x[2] for x in leaves])


def run_case(case):
    splits = DEFAULT_SPLITS
    if case.get("splits_json") is not None:
        splits = parse_splits(case["splits_json"])
    transforms = []
    if case.get("transforms_json") is not None:
        transforms = parse_transforms(case["transforms_json"])
    tenant, version = case["tenant_id"], case["version"]
    check_name(tenant)
    check_name(version)
    if "dir" in case:
        files = walk_dir(case["dir"])
    else:
        files = [(p, bytes.fromhex(h)) for p, h in case["files"]]
    root, paths, size = dataset_root(files)
    sh = split_hashes(splits)
    th = transform_chain_hash(transforms)
    snap_pre = [tenant, root, sh, th, version]
    snap = H(snap_pre)
    objects = [("split", split_entry(e)) for e in splits]
    objects += [("transform", t) for t in transforms]
    objects.append(("dataset", snap_pre))
    out = {
        "ok": True,
        "dataset_root_hash": root.hex(),
        "split_hashes": sh.hex(),
        "transform_chain_hash": th.hex(),
        "dataset_snapshot_id": snap.hex(),
        "lineage_root_hash": lineage_root(objects).hex(),
        "source_count": len(paths),
        "transform_count": len(transforms),
        "snapshot_size_bytes": size,
        "assignment": assign(splits, len(paths)),
    }
    if case.get("samples", "files") == "records":
        counts = sample_counts(files, paths)
        out["sample_counts"] = counts
        out["assignment"] = assign(splits, sum(counts))
    if case.get("run") is not None and "files" in case:
        out["run"] = run_outputs(case, tenant, files, root, paths, th, snap,
                                 bytes.fromhex(out["lineage_root_hash"]))
    plan = case.get("plan")
    if plan is not None:
        out["data_access_plan_hash"] = H([
            bytes.fromhex(plan["kernel_replay_token"]),
            bytes.fromhex(plan["manifest_hash"]),
            snap,
            bytes.fromhex(plan["sampler_config_hash"]),
            "rank_contiguous_shard_v1",
            "epoch_seed_rule_v2",
        ]).hex()
    return out


# --- a run: replay token, sampler configuration, access plan, trace, certificate ---------------

def replay_token(tenant, run_id):
    return H(["lineage_replay_token_v1", tenant, run_id])


def sampler_config_hash(config):
    return H(["sampler_config_v1", config])


DEFAULT_SAMPLER = {"world_size": 1, "batch_size": 1, "drop_last": False}


def run_outputs(case, tenant, files, root, paths, th, snap, lineage_root_hash):
    run_spec = case["run"]
    run_id = run_spec["run_id"]
    config = DEFAULT_SAMPLER
    if run_spec.get("sampler_config_json") is not None:
        config = parse_json(run_spec["sampler_config_json"])
        if not isinstance(config, dict):
            raise LineageError("INVALID_ARGUMENT")
    token = replay_token(tenant, run_id)
    sampler = sampler_config_hash(config)
    # Defaults: the run's replay token, the dataset root as the manifest hash.
    plan = H([token, root, snap, sampler, "rank_contiguous_shard_v1", "epoch_seed_rule_v2"])
    by_path = dict(files)
    trace = cbor({"record": "run_header", "source_hashes": [root],
                  "transform_chain_hash": th, "replay_token": token})
    for step, p in enumerate(paths):
        trace += cbor({"record": "iter", "step": step, "hash": sha256(by_path[p]),
                       "status": "ok"})
    trace += cbor({"record": "run_end", "dataset_snapshot_id": snap,
                   "data_access_plan_hash": plan, "replay_token": token})
    payload = {"tenant_id": tenant, "run_id": run_id, "replay_token": token,
               "dataset_snapshot_id": snap, "data_access_plan_hash": plan,
               "lineage_root_hash": lineage_root_hash}
    return {
        "replay_token": token.hex(),
        "sampler_config_hash": sampler.hex(),
        "data_access_plan_hash": plan.hex(),
        "trace": trace.hex(),
        "certificate_message": cbor(["lineage_execution_certificate_v1", payload]).hex(),
    }


def rank_units(spec):
    """rank_contiguous_shard_v1 over the epoch_seed_rule_v2 order: a list per rank."""
    n, world, batch = spec["units"], spec["world_size"], spec["batch_size"]
    seed = spec.get("shuffle_seed")
    order = list(range(n))
    if seed is not None:
        epoch_seed = int.from_bytes(H(["epoch_seed_v2", seed, spec["epoch"]])[:8], "big")
        order.sort(key=lambda i: (H([epoch_seed, i]), i))
    ranks = []
    for r in range(world):
        if spec["drop_last"]:
            per = n // (world * batch) * batch
            start, end = r * per, (r + 1) * per
        else:
            base, extra = divmod(n, world)
            start = r * base + min(r, extra)
            end = start + base + (1 if r < extra else 0)
        ranks.append(order[start:end])
    return ranks


CERTIFICATE_FIELDS = {"certificate", "payload", "public_key", "signature"}
PAYLOAD_FIELDS = {"tenant_id", "run_id", "replay_token", "dataset_snapshot_id",
                  "data_access_plan_hash", "lineage_root_hash"}


def check_certificate(data):
    """The payload of a valid certificate (hashes as hex, the signer's key as hex), else an
    exception naming what failed. Uses `cryptography` for Ed25519 (RFC 8032)."""
    import cbor2
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    cert = cbor2.loads(data)
    if cbor(cert) != data:
        raise ValueError("not the canonical encoding")
    if not isinstance(cert, dict) or set(cert) != CERTIFICATE_FIELDS:
        raise ValueError("not exactly the certificate fields")
    if cert["certificate"] != "lineage_execution_certificate_v1":
        raise ValueError("wrong tag")
    payload = cert["payload"]
    if not isinstance(payload, dict) or set(payload) != PAYLOAD_FIELDS:
        raise ValueError("not exactly the payload fields")
    for k in PAYLOAD_FIELDS - {"tenant_id", "run_id"}:
        if not isinstance(payload[k], bytes) or len(payload[k]) != 32:
            raise ValueError(f"{k} is not 32 bytes")
    key = cert["public_key"]
    message = cbor(["lineage_execution_certificate_v1", payload])
    Ed25519PublicKey.from_public_bytes(key).verify(cert["signature"], message)
    out = {k: (v.hex() if isinstance(v, bytes) else v) for k, v in payload.items()}
    out["public_key"] = key.hex()
    return out


def run(case):
    try:
        out = run_case(case)
    except LineageError as e:
        out = {"ok": False, "failure_code": e.code}
    out["id"] = case.get("id")
    return out


def main(argv):
    if len(argv) == 3 and argv[1] == "run":
        with open(argv[2], encoding="utf-8") as f:
            cases = json.load(f)
        json.dump([run(c) for c in cases], sys.stdout, sort_keys=True)
        sys.stdout.write("\n")
        return 0
    if len(argv) == 3 and argv[1] == "golden":
        bad = 0
        names = sorted(n for n in os.listdir(argv[2]) if n.endswith(".json"))
        for name in names:
            with open(os.path.join(argv[2], name), encoding="utf-8") as f:
                vector = json.load(f)
            got = run(vector["input"])
            got.pop("id")
            if got != vector["expect"]:
                bad += 1
                print(f"MISMATCH {name}: expected {vector['expect']}, got {got}", file=sys.stderr)
        print(f"{len(names) - bad}/{len(names)} golden vectors match")
        return 1 if bad else 0
    if len(argv) == 3 and argv[1] == "shard":
        with open(argv[2], encoding="utf-8") as f:
            specs = json.load(f)
        json.dump([rank_units(s) for s in specs], sys.stdout)
        sys.stdout.write("\n")
        return 0
    if len(argv) == 3 and argv[1] == "certificate":
        with open(argv[2], "rb") as f:
            data = f.read()
        json.dump(check_certificate(data), sys.stdout, sort_keys=True)
        sys.stdout.write("\n")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
