"""Runs llama.cpp's own converter, convert_hf_to_gguf.py, from a llama.cpp tree (the pinned
sdist's, .ci/setup-llama: $LLAMA_CPP_DIR) with that tree's gguf-py, unchanged but for one lookup.

Usage: convert.py LLAMA_CPP_DIR [--tokenizer-pre NAME] CONVERTER_ARGS...

--tokenizer-pre NAME replaces `TextModel.get_vocab_base_pre` (conversion/base.py), which names
the BPE pre-tokenizer written as `tokenizer.ggml.pre`, by a function returning NAME. The real
lookup identifies PUBLISHED tokenizers: it encodes a fixed text and looks the SHA-256 of the token
ids up in a table of known models (Llama 3's, Qwen2's, ...), and refuses any other. A tokenizer
trained in the test has its own vocabulary, so its ids can match no entry, even though it splits
text exactly as the one it mirrors (tests/python/llama/make_model.py builds it with that model's
pre-tokenizer regex and byte-level encoding; the test checks llama.cpp's tokens against
transformers'). NAME is that model's entry (`llama-bpe`, `qwen2`). Nothing else is patched.
"""

import runpy
import sys
from pathlib import Path


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit("usage: convert.py LLAMA_CPP_DIR [--tokenizer-pre NAME] CONVERTER_ARGS...")
    llama = Path(sys.argv[1]).resolve()
    args = sys.argv[2:]
    pre = None
    if args[0] == "--tokenizer-pre":
        pre, args = args[1], args[2:]
    # The tree's own gguf-py (not the PyPI gguf package the venv also has) and its conversion/.
    sys.path[:0] = [str(llama / "gguf-py"), str(llama)]
    if pre is not None:
        from conversion import base

        base.TextModel.get_vocab_base_pre = lambda self, tokenizer: pre
    script = llama / "convert_hf_to_gguf.py"
    sys.argv = [str(script), *args]
    runpy.run_path(str(script), run_name="__main__")


if __name__ == "__main__":
    main()
