"""Compares two GGUF files the way llama.cpp sees them, with the gguf-py of a llama.cpp tree
(the pinned sdist's, $LLAMA_CPP_DIR, the converter's own reader and writer).

Usage: gguf_diff.py LLAMA_CPP_DIR A.gguf B.gguf. Prints one JSON object:
{"tensors": N, "keys": M, "differences": [...]} where each difference is a sentence naming the
tensor or key: a tensor in one file only, or of another type, shape or bytes; a metadata key in
one file only, or of another type or value. Compared: every tensor (by name, whatever the order),
and every metadata key but the `general.*` ones that name and describe the file (name, basename,
size label, ...) and apr's own `apr.*` (the model card apr writes, which llama.cpp never reads):
`general.architecture`, `general.type`, `general.file_type` and `general.quantization_version`
are compared, as are all the architecture's and tokenizer's keys.
"""

import json
import sys
from pathlib import Path

COMPARED_GENERAL = {
    "general.architecture",
    "general.type",
    "general.file_type",
    "general.quantization_version",
}


def main() -> None:
    if len(sys.argv) != 4:
        raise SystemExit("usage: gguf_diff.py LLAMA_CPP_DIR A.gguf B.gguf")
    sys.path.insert(0, str(Path(sys.argv[1]) / "gguf-py"))
    from gguf import GGUFReader

    a, b = GGUFReader(sys.argv[2]), GGUFReader(sys.argv[3])
    differences = []

    ta = {t.name: t for t in a.tensors}
    tb = {t.name: t for t in b.tensors}
    for name in sorted(ta.keys() | tb.keys()):
        if name not in tb or name not in ta:
            differences.append(f"tensor {name}: only in {'A' if name in ta else 'B'}")
            continue
        x, y = ta[name], tb[name]
        if x.tensor_type != y.tensor_type:
            differences.append(f"tensor {name}: type {x.tensor_type.name} vs {y.tensor_type.name}")
        elif list(x.shape) != list(y.shape):
            differences.append(f"tensor {name}: shape {list(x.shape)} vs {list(y.shape)}")
        elif x.data.tobytes() != y.data.tobytes():
            differences.append(f"tensor {name}: {x.tensor_type.name} bytes differ")

    def compared(reader):
        return {
            name: field
            for name, field in reader.fields.items()
            if not name.startswith(("GGUF.", "apr."))
            and (not name.startswith("general.") or name in COMPARED_GENERAL)
        }

    fa, fb = compared(a), compared(b)
    for name in sorted(fa.keys() | fb.keys()):
        if name not in fb or name not in fa:
            differences.append(f"key {name}: only in {'A' if name in fa else 'B'}")
            continue
        x, y = fa[name], fb[name]
        types_x = [t.name for t in x.types]
        types_y = [t.name for t in y.types]
        if types_x != types_y:
            differences.append(f"key {name}: type {types_x} vs {types_y}")
        elif x.contents() != y.contents():
            shown = [repr(v.contents())[:200] for v in (x, y)]
            differences.append(f"key {name}: {shown[0]} vs {shown[1]}")

    json.dump({"tensors": len(ta), "keys": len(fa), "differences": differences}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
