"""Independent implementations the apr interop tests compare against.

The Python `gguf` package (llama.cpp's gguf-py: `gguf.quants`, `gguf.GGUFReader`) and the
Python `safetensors` package, driven from crates/apr/tests/interop.rs:

  oracle.py quantize VALUES.f32 OUT_DIR     raw little-endian f32 in; for q8_0, q4_0, q4_1 writes
                                            OUT_DIR/<type>.bin (gguf.quants.quantize) and
                                            OUT_DIR/<type>.deq.f32 (gguf.quants.dequantize of our
                                            bytes, read from OUT_DIR/<type>.ours if present)
  oracle.py read-gguf FILE                  JSON: kv (scalars and strings), tensors (name, shape
                                            as numpy shape, ggml type, sha256 of the data bytes)
  oracle.py read-safetensors FILE           JSON: name -> dtype, shape, sha256 of the bytes
  oracle.py write-safetensors FILE          writes a small file with numpy dtypes f32/f16/i8/u8
"""
import hashlib
import json
import os
import sys

import numpy as np


def quantize(values_path, out_dir):
    from gguf import GGMLQuantizationType as T, quants

    values = np.fromfile(values_path, dtype="<f4")
    for name, qtype in (("q8_0", T.Q8_0), ("q4_0", T.Q4_0), ("q4_1", T.Q4_1)):
        with np.errstate(all="ignore"):
            q = quants.quantize(values, qtype)
        q.tofile(os.path.join(out_dir, name + ".bin"))
        ours = os.path.join(out_dir, name + ".ours")
        if os.path.exists(ours):
            blocks = np.fromfile(ours, dtype=np.uint8)
            with np.errstate(all="ignore"):
                deq = quants.dequantize(blocks, qtype)
            deq.astype("<f4").tofile(os.path.join(out_dir, name + ".deq.f32"))


def scalar(value):
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8")
    if isinstance(value, np.generic):
        return value.item()
    return value


def read_gguf(path):
    from gguf import GGUFReader

    reader = GGUFReader(path)
    kv = {}
    for field in reader.fields.values():
        if field.name.startswith("GGUF."):
            continue
        kv[field.name] = scalar(field.contents())
    tensors = []
    # The rules ggml's own loader (gguf_init_from_file in ggml/src/gguf.cpp) enforces and the
    # Python reader does not: names under GGML_MAX_NAME (64) bytes with the NUL, at most
    # GGML_MAX_DIMS (4) dimensions, ne[0] a multiple of the type's block size, tensor data
    # contiguous in the order listed with each tensor padded to general.alignment, and the
    # keys llama.cpp needs.
    from gguf.constants import GGML_QUANT_SIZES

    violations = []
    if "general.architecture" not in kv:
        violations.append("general.architecture missing")
    expected = int(reader.data_offset)
    quantized = False
    for tensor in reader.tensors:
        block, _ = GGML_QUANT_SIZES[tensor.tensor_type]
        quantized |= block > 1
        if len(tensor.name.encode()) >= 64:
            violations.append(f"{tensor.name}: name of 64 bytes or more")
        if len(tensor.shape) > 4:
            violations.append(f"{tensor.name}: more than 4 dimensions")
        if int(tensor.shape[0]) % block:
            violations.append(f"{tensor.name}: ne[0] not a multiple of {block}")
        if tensor.data_offset != expected:
            violations.append(f"{tensor.name}: data at {tensor.data_offset}, expected {expected}")
        size = int(tensor.n_bytes)
        alignment = int(reader.alignment)
        expected = int(tensor.data_offset) + size + (-size % alignment)
    if quantized and kv.get("general.quantization_version") != 2:
        violations.append("general.quantization_version is not 2")
    if expected != len(reader.data):
        violations.append(f"file ends at {len(reader.data)}, data ends at {expected}")
    for tensor in reader.tensors:
        tensors.append(
            {
                "name": tensor.name,
                "shape": [int(d) for d in tensor.shape],
                "type": int(tensor.tensor_type),
                "sha256": hashlib.sha256(np.ascontiguousarray(tensor.data).tobytes()).hexdigest(),
            }
        )
    print(json.dumps({"kv": kv, "tensors": tensors, "ggml_violations": violations}))


def read_safetensors(path):
    from safetensors.numpy import load_file

    out = {}
    for name, array in load_file(path).items():
        out[name] = {
            "dtype": str(array.dtype),
            "shape": list(array.shape),
            "sha256": hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest(),
        }
    print(json.dumps(out, sort_keys=True))


def write_safetensors(path):
    from safetensors.numpy import save_file

    rng = np.random.default_rng(7)
    save_file(
        {
            "embed.weight": rng.standard_normal((8, 64)).astype(np.float32),
            "layer.0.weight": rng.standard_normal((4, 32)).astype(np.float16),
            "layer.0.bias": rng.integers(-128, 127, size=(5,), dtype=np.int8),
            "mask": rng.integers(0, 255, size=(2, 3), dtype=np.uint8),
        },
        path,
        metadata={"source": "oracle.py"},
    )
    read_safetensors(path)


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    {
        "quantize": quantize,
        "read-gguf": read_gguf,
        "read-safetensors": read_safetensors,
        "write-safetensors": write_safetensors,
    }[command](*args)
