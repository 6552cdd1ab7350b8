"""The torch and triton internals the bench child names, in one place. Imports torch.

Checked against torch 2.11 / 2.13, triton 3.6 / 3.9.
A new torch: run tests/test_quarantine.py (CPU), then tests/test_bench_cpu.py and tests/gpu on a
GPU box; what breaks is named here, nowhere else. (The capture's are capture/torch_hooks.py.)

Private names used: Inductor's ``torch._inductor.codecache.PyCodeCache.modules`` (the output code
modules loaded, whose C++ kernels bench/cpp_kernel_names.py names in the CPU profile), ``torch._dynamo.reset()`` (a fresh compile per sweep size),
``torch._dynamo.mark_static_address(t, guard=False)`` and the ``_dynamo_static_input_type``
attribute it sets, Dynamo's ``counters["inductor"]["cudagraph_skips"]`` and its FX graph cache
hit / miss counters, the ``torch._inductor``
logger (its "skipping cudagraphs" warnings), and Inductor's CachingAutotuner (the class of a Triton
kernel in a kernel module: ``run(*args, stream=)``, ``configs``, ``launchers``; a launcher's
``config``, ``n_regs``, ``n_spills``, ``shared``; a triton.Config's ``kwargs``, ``num_warps``,
``num_stages``). ``l2_flushed_triton_launches`` wraps ``CachingAutotuner.run`` for the time of one
profiled pass (the output code launches every Triton kernel through it) and restores it.
For a bundle's C++ kernels: ``torch._inductor.cpu_vec_isa`` (``pick_vec_isa``, ``valid_vec_isa_list``,
an ISA's ``bit_width()``) and ``torch._inductor.config.cpp.simdlen`` (bench/cpu_vectors.py says why).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch

INDUCTOR_LOGGER = "torch._inductor"  # where "skipping cudagraphs due to ..." is logged
CACHING_AUTOTUNER = ("torch._inductor.runtime.triton_heuristics", "CachingAutotuner")
STATIC_INPUT_ATTR = "_dynamo_static_input_type"  # set on a tensor by mark_static_address


def output_code_modules() -> list[Any]:
    """The output code modules Inductor has loaded in this process (``PyCodeCache.modules``), oldest
    first; [] where torch keeps no such list (the C++ kernels then go unnamed in the profile)."""
    try:
        from torch._inductor.codecache import PyCodeCache

        return list(getattr(PyCodeCache, "modules", []))
    except Exception:
        return []


def reset_dynamo() -> None:
    torch._dynamo.reset()


def mark_static_address(t: torch.Tensor) -> None:
    """``torch._dynamo.mark_static_address(t, guard=False)``: public in torch._dynamo, default
    guard=False (no data_ptr guard, a moved input re-records). Accepted on a CPU tensor (it only sets
    an attribute)."""
    torch._dynamo.mark_static_address(t, guard=False)


def is_marked_static(t: torch.Tensor) -> bool:
    return getattr(t, STATIC_INPUT_ATTR, None) is not None


def fx_graph_cache_counts() -> dict[str, int] | None:
    """Inductor's FX graph cache hits and misses so far in this process (Dynamo's
    ``counters["inductor"]["fxgraph_cache_hit" / "fxgraph_cache_miss"]``); None where torch keeps none."""
    try:
        from torch._dynamo.utils import counters

        inductor = counters["inductor"]
        return {"hits": int(inductor["fxgraph_cache_hit"]), "misses": int(inductor["fxgraph_cache_miss"])}
    except Exception:
        return None


def counts_since(before: dict[str, int] | None) -> dict[str, int] | None:
    now = fx_graph_cache_counts()
    if before is None or now is None:
        return None
    return {k: now[k] - before.get(k, 0) for k in now}


def cudagraph_skips() -> int:
    from torch._dynamo.utils import counters

    return int(counters["inductor"]["cudagraph_skips"])


def is_inductor_kernel(kernel: Any) -> bool:
    return kernel is not None and hasattr(kernel, "run")


def run_kernel(kernel: Any, args: list, stream: int) -> None:
    kernel.run(*args, stream=stream)


def use_only_config(kernel: Any, config: Any) -> None:
    kernel.configs = [config]


def first_launcher(kernel: Any) -> Any:
    return kernel.launchers[0]


def config_dict(config: Any) -> dict[str, Any]:
    return {"kwargs": dict(config.kwargs), "num_warps": config.num_warps, "num_stages": config.num_stages}


def launcher_resources(launcher: Any) -> dict[str, Any]:
    return {"n_regs": getattr(launcher, "n_regs", None), "n_spills": getattr(launcher, "n_spills", None),
            "shared": getattr(launcher, "shared", None)}


def launch_fn(kernel: Any, args: list, stream: int):
    """A no-argument launch of ``kernel`` for do_bench (one call deep, as timed before)."""
    def launch() -> None:
        kernel.run(*args, stream=stream)
    return launch


@contextmanager
def l2_flushed_triton_launches(flush: Callable[[], None]) -> Iterator[bool]:
    """Inside, every Inductor Triton kernel launch (``CachingAutotuner.run``) runs ``flush()`` first;
    yields False (and changes nothing) where this torch has no such class."""
    try:
        cls = getattr(importlib.import_module(CACHING_AUTOTUNER[0]), CACHING_AUTOTUNER[1])
        original = cls.run
    except (ImportError, AttributeError):
        yield False
        return

    def run(self, *args, **kwargs):
        flush()
        return original(self, *args, **kwargs)

    cls.run = run
    try:
        yield True
    finally:
        cls.run = original


def register_inductor_prims() -> None:
    """Inductor's own prims (``torch.ops.prims.inductor_random``, ``inductor_seeds``: how it draws the
    random numbers of dropout) registered for eager use, as a bundle's AOT graph may call them; they
    are defined in ``torch._inductor.inductor_prims`` (checked against torch 2.11 / 2.13)."""
    try:
        import torch._inductor.inductor_prims  # noqa: F401
    except ImportError:
        pass


def cpu_vector_widths() -> tuple[int, list[int]] | None:
    """(the vector width in bits Inductor compiles C++ for here, the widths this CPU can run):
    ``torch._inductor.cpu_vec_isa.pick_vec_isa`` / ``valid_vec_isa_list`` (torch 2.11, 2.13)."""
    try:
        from torch._inductor import cpu_vec_isa

        picked = cpu_vec_isa.pick_vec_isa()
        return (picked.bit_width() if picked else 0), [isa.bit_width() for isa in cpu_vec_isa.valid_vec_isa_list()]
    except Exception:  # another torch: nothing known, the code is built as Inductor decides
        return None


def compile_cpu_vectors(bits: int) -> None:
    """Inductor's C++ built for vectors of ``bits`` (``torch._inductor.config.cpp.simdlen``)."""
    import torch._inductor.config as inductor_config

    inductor_config.cpp.simdlen = bits
