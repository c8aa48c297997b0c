"""Loads pyfolds' container modules (foldio.py, ecc.py) without torch.

pyfolds' package __init__ imports its neural-network code, which needs torch; the container code
only imports torch at module level and never calls it for raw chunks. So: a stub `torch` module,
and empty parent packages so that `pyfolds/__init__.py` is not executed.
"""

import importlib.util
import pathlib
import sys
import types
import warnings


def load_foldio():
    if "torch" not in sys.modules:
        torch = types.ModuleType("torch")
        torch.__version__ = "0.0.0+stub"

        def _unavailable(*_args, **_kwargs):
            raise RuntimeError("torch stub: not available in interop tests")

        torch.load = _unavailable
        torch.save = _unavailable
        torch.initial_seed = lambda: 0
        sys.modules["torch"] = torch
    spec = importlib.util.find_spec("pyfolds")
    if spec is None or spec.origin is None:
        raise SystemExit("pyfolds is not installed in this interpreter")
    root = pathlib.Path(spec.origin).parent
    for name, path in (("pyfolds", root), ("pyfolds.serialization", root / "serialization")):
        if name not in sys.modules:
            pkg = types.ModuleType(name)
            pkg.__path__ = [str(path)]
            sys.modules[name] = pkg
    # The pure-Python CRC32C fallback warns on every call when google-crc32c is absent.
    warnings.filterwarnings("ignore", message="google-crc32c")
    import pyfolds.serialization.foldio as foldio  # noqa: E402

    return foldio
