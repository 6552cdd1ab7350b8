"""Inductor's C++ kernels named in the CPU profile, without changing what Inductor compiles. Imports torch.

A C++ kernel carries a profiler record of its own only when Inductor generates it with
``cpp.enable_kernel_profile``; that flag is part of Inductor's cache key, so a bench that set it never
found the capture's compiled graph in the shared cache (``compiled anew`` after every capture on the
CPU) and ran other code than the capture shows. Instead, while a call is profiled, each ``cpp_*``
kernel of the output code modules is wrapped in a ``record_function`` named as Inductor names it
(``graph_N_cpp_...``, what bench/profiling.py matches); the output code looks its kernels up in its
module's globals at every call, so the wrapper is seen, and it is taken off again after profiling.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import torch


def cpp_kernels(module: ModuleType) -> dict[str, Any]:
    """The C++ kernels an output code module calls, by name."""
    return {n: getattr(module, n) for n in dir(module)
            if n.startswith("cpp_") and callable(getattr(module, n, None))}


def _recorded(fn, label: str):
    def run(*args, **kwargs):
        with torch.profiler.record_function(label):
            return fn(*args, **kwargs)
    return run


@contextmanager
def named(modules: list[ModuleType]) -> Iterator[int]:
    """Every C++ kernel of ``modules`` in a profiler record of its name while inside (yields how many)."""
    kernels = [(m, name, fn) for m in modules for name, fn in cpp_kernels(m).items()]
    try:
        for m, name, fn in kernels:
            setattr(m, name, _recorded(fn, f"graph_0_{name}"))
        yield len(kernels)
    finally:
        for m, name, fn in kernels:
            setattr(m, name, fn)
