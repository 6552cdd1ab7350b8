"""kernelscope: see what torch.compile did to your function, from FX graph to SASS.

The Python API (kernelscope/api.py, loaded on first use, so this import has no side effects and
imports no torch): ``kernelscope.capture(fn, *args, out=...)`` compiles ``fn`` in a child process
as ``kernelscope capture`` does; ``with kernelscope.record(out): ...`` records what the block
compiles in this process. Both write a bundle and return a ``BundleSummary``.
"""

import importlib

__version__ = "0.1.0"

from kernelscope import capture  # the capture package, callable: kernelscope.capture(fn, *args, out=...)

__all__ = ["__version__", "capture", "record"]


def record(out, *, force=False):
    """``with kernelscope.record(out): ...``: record what the block compiles (see kernelscope.api.record)."""
    # Loaded by name on the call: the CLI imports this package (for __version__) and must not reach the
    # API's torch-importing modules, in fact or in the import-linter's static graph.
    api = importlib.import_module("kernelscope.api")
    return api.record(out, force=force)
