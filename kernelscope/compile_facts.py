"""The compile facts of a bundle as text lines, read by ``show``, the Info pane and the report alike: each
compile's symbols and their value in every call, a symbolic kernel's sizes and bytes per call, guards
(counted by group, or each one), the guard that failed at a recompile, CUDA graph status; why a kernel lists no FX nodes.
"""

from __future__ import annotations

from typing import Any

from kernelscope.bundle.model import Bundle, Graph, Kernel, Recompile
from kernelscope.bundle.symbolic import bytes_per_call, is_symbolic, shape_for
from kernelscope.units import base_name, fmt_bytes


def no_fx_nodes_reason(k: Kernel) -> str:
    """Why ``k`` lists no FX nodes (the kernel table's ``-``): where they are read from named none."""
    if k.lang == "extern":
        return ("none named: a library call the output code does not tie to an FX node (no provenance handle, "
                "no source-node comment)")
    return ("none named: neither Inductor's provenance tracking nor the output code's source-node comments "
            "name what it fused")


def _graph_of(b: Bundle, k: Kernel) -> Graph | None:
    return next((g for g in b.graphs if g.id == k.graph), None)


def _call_name(c: dict[str, Any]) -> str:
    return f"call {c['call'] + 1}" if isinstance(c.get("call"), int) else "hint"


def _values(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items())


def per_call_lines(k: Kernel, g: Graph | None, prefix: str = "") -> list[str]:
    """A symbolic kernel's sizes and bytes in each call of its graph: "call 2 (s77=128): read 512.0 KB ..."."""
    if g is None or not g.calls or not is_symbolic(k):
        return []
    out = []
    sym = [b for b in k.buffers if any(not isinstance(d, int) for d in b.shape)]
    if sym:
        out.append(prefix + "sizes: " + ", ".join(f"{b.name} [{', '.join(map(str, b.shape))}]" for b in sym))
    for c, moved in zip(g.calls, bytes_per_call(k, g)):
        shapes = " ".join(f"[{', '.join(map(str, shape_for(b.shape, c.get('values') or {})))}]" for b in sym[:2])
        out.append(f"{prefix}{_call_name(c)} ({_values(c.get('values') or {})}): read {fmt_bytes(moved['read'])}, "
                   f"write {fmt_bytes(moved['written'])}  {shapes}")
    return out


def _compiles(b: Bundle) -> list[Graph]:
    """One graph per Dynamo compile (a forward and its backward share symbols and guards)."""
    seen: set[str] = set()
    out = []
    for g in b.graphs:
        if g.compile_id not in seen:
            seen.add(g.compile_id)
            out.append(g)
    return out


def symbol_lines(b: Bundle, graphs: list[Graph] | None = None) -> list[str]:
    out = []
    for g in _compiles(b) if graphs is None else graphs:
        if not g.symbols:
            continue
        out.append(f"symbols of {g.compile_id} ({g.id}):")
        for s in g.symbols:
            fixed = f", specialized to {s['specialized']}" if s.get("specialized") is not None else ""
            where = f"  {base(s.get('file', ''))}:{s['line']}" if s.get("line") else ""
            out.append(f"  {s['name']:<6} {s.get('source', ''):<22} hint {s.get('hint')}, range {s.get('range')}"
                       f"{fixed}{where}")
        for c in g.calls:
            inputs = f"  inputs {', '.join(c.get('inputs') or [])}" if c.get("inputs") else ""
            out.append(f"  {_call_name(c)}: {_values(c.get('values') or {})}{inputs}")
    return out


def base(path: str) -> str:
    return base_name(path) or "?"


def guard_lines(b: Bundle, limit: int = 120, graphs: list[Graph] | None = None) -> list[str]:
    from collections import Counter

    out = []
    for g in _compiles(b) if graphs is None else graphs:
        if not g.guards:
            continue
        counts = Counter(x.get("group", "other") for x in g.guards)
        out.append(f"guards of {g.compile_id} ({g.id}): {len(g.guards)}: "
                   + ", ".join(f"{n} {grp}" for grp, n in counts.items()))
        for grp in counts:
            out.append(f"  {grp}:")
            for x in g.guards:
                if x.get("group") != grp:
                    continue
                text = x.get("text", "")
                text = text if len(text) <= limit else text[: limit - 1] + "…"
                where = f"  [{base(x['file'])}:{x['line']}]" if x.get("line") else ""
                out.append(f"    {x.get('kind', '')}: {text}{where}")
    return out


def guard_summary_lines(b: Bundle, example: int = 60) -> list[str]:
    """Each compile's guards by group and kind, with a count and one example each: a model guards
    every parameter (hundreds of lines); ``show --guards`` prints them all."""
    from collections import Counter

    out = []
    for g in _compiles(b):
        if not g.guards:
            continue
        out.append(f"guards of {g.compile_id} ({g.id}): {len(g.guards)} (`kernelscope show --guards` lists each)")
        groups = Counter(x.get("group", "other") for x in g.guards)
        for grp, n in groups.items():
            mine = [x for x in g.guards if x.get("group", "other") == grp]
            kinds = Counter(x.get("kind", "") or "?" for x in mine)
            text = mine[0].get("text", "")
            text = text if len(text) <= example else text[: example - 1] + "…"
            out.append(f"  {grp} {n}: " + ", ".join(f"{kind} {c}" for kind, c in kinds.items())
                       + (f"; e.g. {text}" if text else ""))
    return out


def failed_guard_lines(r: Recompile, prefix: str = "") -> list[str]:
    gd = r.guard or {}
    if not gd:
        return []
    out = []
    if gd.get("text"):
        where = f" at {base(gd['file'])}:{gd['line']}" if gd.get("line") else ""
        code = f"  {gd['code']}" if gd.get("code") else ""
        out.append(f"{prefix}failed guard of {gd.get('compile_id')} ({gd.get('group')}, {gd.get('kind')}){where}"
                   f"{code}")
        out.append(f"{prefix}  {gd['text']}")
    if gd.get("expected") is not None or gd.get("actual") is not None:
        what = f"{gd['what']}: " if gd.get("what") else ""
        out.append(f"{prefix}{what}expected {gd.get('expected')}, actual {gd.get('actual')}")
    return out


def cudagraph_line(b: Bundle) -> str:
    if b.graphs and all((g.cudagraphs or {}).get("status") == "n/a" for g in b.graphs):  # a job's thousand: one line
        return f"cuda graphs: n/a ({b.graphs[0].cudagraphs.get('reason', '')})"
    parts = []
    for g in b.graphs:
        cg = g.cudagraphs or {}
        if cg:
            parts.append(f"{g.id} {cg.get('status')}" + (f" ({cg['reason']})" if cg.get("reason") else ""))
    return "cuda graphs: " + "; ".join(parts) if parts else ""
