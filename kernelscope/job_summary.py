"""The summary of a whole job's bundle (``show``, ``open --no-ui``, ``run`` of a big bundle): per graph first,
then the kernels that move the most bytes; every kernel only with ``show --all``.

Read from the bundle's index alone (format 2: no graph's detail file is opened), so it costs the same for
a 15,000-kernel job as its index does to read. Pure: no torch, no textual.
"""

from __future__ import annotations

from collections import Counter

from kernelscope.bundle.kernel_file import bytes_moved
from kernelscope.bundle.model import Bundle, Kernel
from kernelscope.bundle.no_code import no_code_lines
from kernelscope.units import base_name, fmt_bytes, plural

# A bundle past either of these reads as a job: its summary comes first, each kernel on request.
JOB_GRAPHS = 6
JOB_KERNELS = 300
GRAPH_ROWS = 60  # graphs listed before "... N more"
TOP_KERNELS = 10


def is_job(b: Bundle) -> bool:
    return len(b.graphs) > JOB_GRAPHS or b.kernel_count() > JOB_KERNELS  # a format-5 kernel file is not read


def moved(k: Kernel) -> int | None:
    """Bytes a kernel moves per call of its graph (every launch), None when a size is symbolic."""
    return bytes_moved(k.bytes_read, k.bytes_written, k.launches)


def job_lines(b: Bundle) -> list[str]:
    """The job's graphs, one row each (kernels, launches, bytes moved, what Dynamo compiled), and totals."""
    by_graph: dict[str, list[Kernel]] = {}
    for k in b.kernels:
        by_graph.setdefault(k.graph, []).append(k)
    ranks = {g.compile_id.split("/", 1)[0] for g in b.graphs if g.compile_id.startswith("rank")}
    # A frame is a rank's frame id: rank0/1/0 and rank1/1/0 are two (compile ids rankN/frame/compile).
    frames = {g.compile_id.rsplit("/", 1)[0] if g.compile_id.startswith("rank") else g.compile_id.split("/")[0]
              for g in b.graphs}
    kinds = Counter(g.kind for g in b.graphs)
    launches = sum(k.launches for k in b.kernels)
    sizes = [moved(k) for k in b.kernels]
    total = sum(s for s in sizes if s is not None)
    unknown = sum(1 for s in sizes if s is None)
    out = [f"job: {plural(len(ranks), 'rank') + ', ' if len(ranks) > 1 else ''}"
           f"{plural(len(frames), 'compiled frame')}, {plural(len(b.graphs), 'graph')} "
           f"({', '.join(f'{n} {kind}' for kind, n in kinds.items())}), {plural(len(b.kernels), 'kernel')}, "
           f"{plural(launches, 'launch', 'launches')}, {fmt_bytes(total)} moved per call of every graph"
           + (f" (+{plural(unknown, 'kernel')} of symbolic size)" if unknown else "")]
    out.append("")
    width = max((len(g.id) for g in b.graphs[:GRAPH_ROWS]), default=8)
    out.append(f"graphs ({len(b.graphs)}):")
    out.append(f"  {'graph':<{width}} {'kind':<9} {'kernels':>7} {'launches':>8} {'moved':>10}  compiled")
    for g in b.graphs[:GRAPH_ROWS]:
        ks = by_graph.get(g.id, [])
        g_moved = sum(m for k in ks if (m := moved(k)) is not None)
        where = f"{g.code_name} at {base_name(g.code_file)}:{g.code_line}" if g.code_name else ""
        out.append(f"  {g.id:<{width}} {g.kind:<9} {len(ks):>7} {sum(k.launches for k in ks):>8} "
                   f"{fmt_bytes(g_moved):>10}  {where}".rstrip())
        out += no_code_lines(g, f"  {'':<{width}} ", whole=False)
    if len(b.graphs) > GRAPH_ROWS:
        out.append(f"  … {plural(len(b.graphs) - GRAPH_ROWS, 'more graph')} (`kernelscope show --all` lists every one)")
    sites: dict[str, list] = {}
    for g in b.graphs:
        if g.called_elsewhere():
            sites.setdefault(g.compiled_from(), []).append(g)
    if sites:
        out.append("")
        out.append(f"compiled from ({plural(len(sites), 'line')} of your code; `kernelscope show --all` lists each graph's):")
        for site, gs in sorted(sites.items(), key=lambda item: -len(item[1]))[:GRAPH_ROWS]:
            frames = len({g.compile_id.split("/")[0] for g in gs})
            out.append(f"  {site}")
            out.append(f"      {plural(len(gs), 'graph')} of {plural(frames, 'compiled frame')}: "
                       + ", ".join(sorted({g.code_name for g in gs if g.code_name}))[:120])
    ranked = sorted((k for k in b.kernels if moved(k) is not None), key=lambda k: -(moved(k) or 0))[:TOP_KERNELS]
    if ranked:
        out.append("")
        out.append(f"kernels moving the most bytes ({len(ranked)} of {len(b.kernels)}; "
                   "`kernelscope show --all` lists every kernel, `--kernel NAME` one):")
        for k in ranked:
            line = next(iter(k.user_lines or []), None)
            where = f"  {base_name(line.file)}:{line.line}" if line is not None else ""
            times = f" x{k.launches}" if k.launches > 1 else ""
            out.append(f"  {fmt_bytes(moved(k)):>10}  {k.name}{times}  [{k.graph}]{where}")
    out += _first_rows("graph breaks", b.graph_breaks, lambda gb: f"{base_name(gb.file)}:{gb.line}: {gb.reason}")
    out += _first_rows("recompiles", b.recompiles, lambda r: f"{r.compile_id} {base_name(r.file)}:{r.line}: {r.reason}")
    return out


def _first_rows(title: str, items: list, row) -> list[str]:
    """A titled section: ``row(item)`` of the first TOP_KERNELS items and how many more there are ([] for none)."""
    if not items:
        return []
    more = [f"  … {len(items) - TOP_KERNELS} more"] if len(items) > TOP_KERNELS else []
    return ["", f"{title} ({len(items)}):", *(f"  {row(item)}" for item in items[:TOP_KERNELS]), *more]
