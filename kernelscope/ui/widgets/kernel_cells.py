"""What the kernel list shows of a kernel beside its row: its name as the table shows it, the bytes it moves,
its device time after a bench, which kernels of a graph hand their result to the next one through memory
(the list's ↓ marks), and the list as TSV."""

from __future__ import annotations

from rich.text import Text

from kernelscope.bundle.model import Bundle, Graph, Kernel
from kernelscope.bundle.symbolic import moved_per_call
from kernelscope.job_view import short_time
from kernelscope.units import base_name, fmt_bytes, plural, short_bytes, shorten_kernel_name, shorten_middle


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


def time_cell(us: float | None) -> str:
    """A device time as the list shows it (``12.3 µs``, ``1.84 ms``: a column of four digits); '' where
    nothing was timed."""
    return "" if us is None else short_time(us)


def graph_time_cell(kernels: list[Kernel], times: dict[str, float]) -> str:
    """A graph row's time: its kernels' times summed, ``≥`` before it where some of them have none."""
    timed = [times[k.id] for k in kernels if k.id in times]
    return ("" if len(timed) == len(kernels) else "≥") + time_cell(sum(timed)) if timed else ""


def tsv_lines(kernels: list[Kernel]) -> list[str]:
    """The kernels as TSV rows under a header, numbered in list order (what `c` copies)."""
    lines = ["#\tkind\tnodes\tread\twritten\tuser lines\tkernel\tgraph"]
    for n, k in enumerate(kernels, 1):
        lines.append(f"{n}\t{k.kind}\t{k.node_count}\t{fmt_bytes(k.bytes_read)}\t{fmt_bytes(k.bytes_written)}\t"
                     + ",".join(f"{base_name(u.file)}:{u.line}" for u in k.user_lines) + f"\t{k.name}\t{k.graph}")
    return lines


# Long names lose their decoration (``triton_poi_fused_``: the kind column says it), then their middle
# (``add_…_relu_0``), so that the numbers after them stay in view at any width.
def name_cell(k: Kernel, width: int | None = None) -> Text:
    """A kernel's name cell within ``width`` cells (None: whole), its launch count after it (``×3``)."""
    suffix = f" ×{k.launches}" if k.launches > 1 else ""
    shown = display_name(k)
    name = Text(shorten_kernel_name(shown, max(width - len(suffix), 8)) if width else shown,
                style="italic" if k.lang == "extern" else "bold")
    if suffix:
        name.append(suffix, style="dim")
    return name


GRAPH_LABEL_STYLE = "bold italic"


def graph_label_text(g: Graph, n: int, fold: str, width: int | None = None) -> str:
    """A graph's row label (``▾ forward graph 1/0 · 22 kernels``) within ``width`` cells, as text (a job's
    thousand graph rows are measured by it before any is drawn; drawn in GRAPH_LABEL_STYLE)."""
    if not width:
        return f"{fold}{g.kind} graph {g.compile_id} · {plural(n, 'kernel')}"
    # Narrower, words go before the graph's id and count do: what tells one row from the next stays whole.
    forms = [f"{g.kind} graph {g.compile_id} · {plural(n, 'kernel')}", f"{g.kind} {g.compile_id} · {n}",
             f"{g.kind[:3]} {g.compile_id} · {n}", f"{g.compile_id} · {n}"]
    text = next((fold + f for f in forms if len(fold + f) <= width), None)
    return text if text is not None else fold + shorten_middle(g.compile_id, max(width - len(fold), 4))
