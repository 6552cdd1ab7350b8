"""kernelscope: see what torch.compile did to your function, from FX graph to SASS.

The Python API (kernelscope/api.py, loaded on first use, so this import has no side effects and
imports no torch): ``kernelscope.capture(fn, *args, out=...)`` compiles ``fn`` in a child process
as ``kernelscope capture`` does; ``with kernelscope.record(out): ...`` records what the block
compiles in this process. Both write a bundle and return a ``BundleSummary``.
"""

# Under private names: a module's imports are its attributes, and dir(kernelscope) lists the API only.
import importlib as _importlib
import sys as _sys
import types as _types

__version__ = "0.1.0"

from kernelscope import capture  # the capture package, made callable below: kernelscope.capture(fn, *args, out=...)

__all__ = ["__version__", "capture", "record"]


class _CallablePackage(_types.ModuleType):
    """The capture package, callable: the attribute ``kernelscope.capture`` is the package as soon as any
    of its modules is imported, so the API's function cannot take that name; the package calls it."""

    def __call__(self, fn, *args, **kwargs):
        """``kernelscope.capture(fn, *args, out=..., **capture_options)``: see kernelscope.api.capture."""
        return _importlib.import_module("kernelscope.api").capture(fn, *args, **kwargs)


# Set here, at the top: the API sits above the capture layer (it prints with kernelscope.show), so the
# capture package must not name it. Any import of kernelscope.capture.* runs this file first.
_sys.modules[capture.__name__].__class__ = _CallablePackage


def record(out, *, force=False):
    """``with kernelscope.record(out): ...``: record what the block compiles (see kernelscope.api.record)."""
    # Loaded by name on the call: the CLI imports this package (for __version__) and must not reach the
    # API's torch-importing modules, in fact or in the import-linter's static graph.
    api = _importlib.import_module("kernelscope.api")
    return api.record(out, force=force)


def __dir__() -> list[str]:
    """``dir(kernelscope)``: the API and the module's dunders, not the submodules loaded so far (an import
    of kernelscope.api makes ``api``, ``bundle``, ``show`` ... attributes of this package) nor helpers."""
    return sorted(set(__all__) | {name for name in globals() if name.startswith("__") and name.endswith("__")})
