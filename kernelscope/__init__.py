"""kernelscope: see what torch.compile did to your function, from FX graph to SASS.

The Python API (kernelscope/api.py, loaded on first use, so this import has no side effects and
imports no torch): ``kernelscope.capture(fn, *args, out=...)`` compiles ``fn`` in a child process
as ``kernelscope capture`` does; ``with kernelscope.record(out): ...`` records what the block
compiles in this process. Both write a bundle and return a ``BundleSummary``.
"""

__version__ = "0.1.0"

__all__ = ["__version__", "capture", "record"]


def capture(fn, *args, out=None, force=False, **capture_options):
    """Compile ``fn(*args)`` in a child process and write a bundle at ``out`` (see kernelscope.api.capture)."""
    from kernelscope import api

    return api.capture(fn, *args, out=out, force=force, **capture_options)


def record(out, *, force=False):
    """``with kernelscope.record(out): ...``: record what the block compiles (see kernelscope.api.record)."""
    from kernelscope import api

    return api.record(out, force=force)
