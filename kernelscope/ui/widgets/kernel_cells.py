"""What the kernel list shows of a kernel beside its row: its name as the table shows it, the bytes it moves,
and which kernels of a graph hand their result to the next one through memory (the list's ↓ marks)."""

from __future__ import annotations

from kernelscope.bundle.model import Bundle, Graph, Kernel
from kernelscope.bundle.symbolic import moved_per_call
from kernelscope.units import short_bytes


def kernel_moved(k: Kernel) -> int | None:
    r, w = k.bytes_read, k.bytes_written
    return None if r is None or w is None else r + w


def moved_cell(k: Kernel, graph: Graph | None) -> str:
    """Bytes moved per launch; for a symbolic kernel, per call of its graph (one value, or the range)."""
    moved = kernel_moved(k)
    per_call = moved_per_call(k, graph) if moved is None else []
    if per_call:
        lo, hi = min(per_call), max(per_call)
        return short_bytes(lo) if lo == hi else f"{short_bytes(lo)}–{short_bytes(hi)}"
    return short_bytes(moved)


def feeds_next(bundle: Bundle, graph: Graph, kernels: list[Kernel]) -> set[str]:
    """The kernels of one graph whose result the next kernel of the list reads through memory (not fused)."""
    from kernelscope.report.why import graph_pairs

    pairs = {(p.get("producer"), p.get("consumer")) for p in graph_pairs(bundle, graph)}
    return {a.id for a, b in zip(kernels, kernels[1:]) if (a.id, b.id) in pairs}


def display_name(k: Kernel) -> str:
    """The name as the table shows it: an extern call without the wrapper's namespace
    (``extern_kernels.mm`` -> ``mm``, ``torch.ops.aten.foo.default`` -> ``aten.foo``; the kind column
    says it is extern), a generated kernel as it is."""
    if k.lang != "extern":
        return k.name
    name = k.name.removeprefix("extern_kernels.").removeprefix("torch.ops.")
    return name.removesuffix(".default") or k.name
