"""Text of ``show --fusion`` and ``show --compile`` (and the report's sections): why kernels stayed
apart and what the round trips cost; where the compile time went. Reads ``bundle.extra["fusion"]``
and ``bundle.extra["compile_time"]`` (written when the bundle is built). Pure: no torch, no textual.
"""

from __future__ import annotations

from typing import Any

from kernelscope.units import base_name, fmt_bytes, wrap_names


def fusion_data(bundle: Any) -> dict[str, Any]:
    """``extra["fusion"]`` with every not-fused pair of the bundle (format 2 keeps each graph's pairs in
    its detail file: all of them are read)."""
    data = bundle.extra.get("fusion") if isinstance(bundle.extra, dict) else None
    if not isinstance(data, dict):
        return {}
    if data.get("pairs_in") == "graph detail":
        return {**data, "pairs": sorted((p for g in bundle.graphs for p in graph_pairs(bundle, g)), key=_by_bytes)}
    return data


def has_pairs(bundle: Any) -> bool:
    """Whether the bundle lists any not-fused pair (without reading the graphs' detail files)."""
    data = bundle.extra.get("fusion") if isinstance(bundle.extra, dict) else None
    return isinstance(data, dict) and bool(data.get("pair_count") if data.get("pairs_in") else data.get("pairs"))


def graph_pairs(bundle: Any, graph: Any) -> list[dict[str, Any]]:
    """One graph's not-fused pairs, reading no other graph's detail."""
    data = bundle.extra.get("fusion") if isinstance(bundle.extra, dict) else None
    if not isinstance(data, dict):
        return []
    if data.get("pairs_in") == "graph detail":
        return [p for p in graph.fusion_pairs if isinstance(p, dict)]
    return [p for p in data.get("pairs") or [] if isinstance(p, dict) and p.get("graph") == graph.id]


def _by_bytes(p: dict[str, Any]) -> tuple:
    return (-(p.get("bytes") or 0), str(p.get("graph")), p.get("producer_launch") or 0, p.get("consumer_launch") or 0)


def pairs_of(bundle: Any, kernel: Any) -> list[dict[str, Any]]:
    """The not-fused pairs a kernel is part of (as producer or consumer), most bytes first; its own graph's
    detail is the only one read."""
    graph = next((g for g in bundle.graphs if g.id == kernel.graph), None)
    pairs = graph_pairs(bundle, graph) if graph is not None else []
    return sorted((p for p in pairs if kernel.id in (p.get("producer"), p.get("consumer"))), key=_by_bytes)


def grouped_pairs(pairs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], int, int | None]]:
    """Pairs of the same two kernels for the same reason (one per layer) as one row: (the first
    pair, how many, their bytes together), most bytes first."""
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for p in pairs:
        # by name: an extern call's id names its launch, and each layer calls it again
        groups.setdefault((p["graph"], p["producer_name"], p["consumer_name"], p["reason"]), []).append(p)
    rows = []
    for members in groups.values():
        sizes = [m["bytes"] for m in members]
        rows.append((members[0], len(members), None if None in sizes else sum(sizes)))
    rows.sort(key=lambda r: -(r[2] or 0))
    return rows


def story_line(pair: dict[str, Any]) -> str:
    """The seed story, continued on the user's code: what this round trip still costs, and why."""
    names = ", ".join(b["name"] for b in pair["buffers"])
    each = pair["bytes"] / pair["transfers"] if pair.get("bytes") else None
    return (f"you still pay {pair['transfers']} transfers of {fmt_bytes(each)} here ({names}: "
            f"{pair['producer_name']} -> {pair['consumer_name']}), because {pair['reason']}")


def fusion_lines(bundle: Any, limit: int = 40, width: int = 100, graph: Any = None) -> list[str]:
    """The not-fused pairs, grouped and ranked by bytes: the whole bundle's, or one ``graph``'s (a job's
    Info pane reads no other graph's detail)."""
    data = fusion_data(bundle) if graph is None else {**(bundle.extra.get("fusion") or {}),
                                                          "pairs": sorted(graph_pairs(bundle, graph), key=_by_bytes)}
    pairs = data.get("pairs", [])
    if not data:
        return ["Not fused: this bundle has no pairs of kernels joined by a buffer (or was built before "
                "kernelscope recorded them; capture again)"]
    total = sum(p["bytes"] or 0 for p in pairs)
    head = (f"Not fused: {len(pairs)} pair{'s' if len(pairs) != 1 else ''} of kernels joined by a buffer, "
            f"{fmt_bytes(total)} of round trips per call"
            + ("" if data.get("log") else " (no fusion log in this bundle: reasons only for library calls)"))
    out = [head, f"  (reasons: Inductor's scheduler, TORCH_LOGS=fusion: {data.get('fusions_logged', 0)} fusions, "
                 f"{data.get('refusals_logged', 0)} refusals logged; bytes: written once + read once, from the output code)"]
    groups = grouped_pairs(pairs)
    for i, (p, count, group_bytes) in enumerate(groups[:limit], 1):
        names = ", ".join(f"{b['name']} {b['dtype']}{list(b['shape'])}" + (f" (read by {b['readers']})" if b.get("readers", 1) > 1 else "")
                          for b in p["buffers"])
        times = f" x{count} launches" if count > 1 else ""
        out.append(f"{i:3}. {p['producer_name']} -> {p['consumer_name']}   {fmt_bytes(group_bytes)}, "
                   f"{p['transfers'] * count} transfers{times}   [{p['graph']}]")
        out.append(f"     buffer {names}" + (" (first launch)" if count > 1 else ""))
        out.extend(_wrap(f"     why: {p['reason']}", width, "          "))
        if p.get("scheduler"):
            out.append(f"     scheduler: {p['scheduler'][:width - 16]}")
    if len(groups) > limit:
        out.append(f"  … {len(groups) - limit} more (show --json)")
    if pairs:
        out.append("")
        out.extend(_wrap(story_line(pairs[0]), width, "  "))
    return out


def _wrap(text: str, width: int, indent: str) -> list[str]:
    return wrap_names(text, width, indent)


def compile_data(bundle: Any) -> dict[str, Any]:
    data = bundle.section("compile_time") if isinstance(bundle.extra, dict) else None
    return data if isinstance(data, dict) else {}


def bar(share: float, width: int = 20) -> str:
    full = max(0, min(width, round(share * width)))
    return "█" * full + "·" * (width - full)


def compile_lines(bundle: Any, limit: int = 15, compile_id: str | None = None) -> list[str]:
    """Where the compile time went: per phase, per compile and per kernel (slowest first); with
    ``compile_id``, the compiles and kernels of that one (a job's Info pane, graph by graph)."""
    data = compile_data(bundle)
    if not data:
        return ["Compile time: this bundle's trace has no timed phases (chromium_event records); capture again "
                "with this kernelscope, or `open` a TORCH_TRACE that has them"]
    total = data.get("total_s") or 0.0
    captured = (bundle.timings or {}).get("compile_and_first_call")
    out = [f"Compile time: {total:.2f} s in the trace's timed phases"
           + (f" (the capture's compile and first call: {captured:.2f} s)" if captured else "")]
    out.append("  per phase (each instant given to the innermost phase; they add up to the total)")
    for phase, s in sorted(data.get("phases", {}).items(), key=lambda x: -x[1]):
        share = s / total if total else 0.0
        out.append(f"  {phase:<24} {s:8.2f} s {100 * share:5.1f}%  {bar(share)}")
    compiles = data.get("compiles", [])
    kernels = every = data.get("kernels", [])
    if compile_id is not None:  # a graph's "1/0_1" (attempt 1 of compile 1/0) is the trace's compile "1/0"
        from kernelscope.ingest.compile_time import base_compile_id

        frame = base_compile_id(compile_id)
        compiles = [c for c in compiles if base_compile_id(str(c.get("compile_id"))) == frame]
        kernels = [k for k in kernels if base_compile_id(str(k.get("compile_id"))) == frame]
        out.append(f"  (the whole job's phases above; graph {compile_id}'s compile and kernels below: "
                   "`kernelscope show --compile` lists every compile)")
    for c in compiles:
        cache = ", ".join(x for x in (f"Inductor cache {c['inductor_cache']}" if c.get("inductor_cache") else "",
                                      f"FX graph cache {c['fx_cache']}" if c.get("fx_cache") else "") if x)
        guards = f"{c['guards']} guards" if c.get("guards") is not None else ""
        if c.get("shape_guards"):
            guards += f" ({c['shape_guards']} on shapes)"
        where = f"{c.get('function') or '?'} ({base_name(c.get('file'))}:{c.get('line')})" if c.get("file") else ""
        name = c["compile_id"] or ", ".join(c.get("graphs") or [])  # AOTInductor's graph has no compile id
        out.append(f"graph {name}{' ' + where if where else ''}: {c['total_s']:.2f} s  "
                   + "  ".join(x for x in (guards, cache) if x) + (f"  failed: {c['fail']}" if c.get("fail") else ""))
        out.append("    " + ", ".join(f"{p} {s:.2f}s" for p, s in sorted(c["phases"].items(), key=lambda x: -x[1])[:6]))
    if kernels:
        out.append(f"per kernel (Triton compile + autotune, slowest first; {len(kernels)} kernels)")
        for k in kernels[:limit]:
            tune = f"autotune {k['autotune_s']:.2f} s" if k.get("autotune_s") is not None else ""
            configs = f"{k['configs']} config{'s' if k['configs'] != 1 else ''}" if k.get("configs") else ""
            comp = f"compile {k['compile_s']:.2f} s" if k.get("compile_s") is not None else ""
            extra = ", ".join(x for x in (comp, tune, configs, k.get("autotune_cache") and f"autotune cache {k['autotune_cache']}") if x)
            lines = " ".join(base_name(x) for x in k.get("lines", []))
            out.append(f"  {k['name']:<48} {k['total_s']:7.2f} s  {extra}" + (f"  {lines}" if lines else ""))
        if len(kernels) > limit:
            out.append(f"  … {len(kernels) - limit} more kernels")
        out.append(f"  sum {sum(k['total_s'] for k in kernels):.2f} s (compiles run in parallel workers: "
                   "their sum may exceed the 'C++/Triton compile' phase)")
    elif not bundle.kernels:  # another backend's frames, failed compiles, a trace of timed phases only
        out.append("per kernel: no kernel was generated")
    elif every:
        out.append(f"per kernel: none of the trace's {len(every)} timed kernels is graph {compile_id}'s")
    else:
        out.append("per kernel: the trace has no per-kernel compile times (C++ kernels compile in one go: "
                   f"{data.get('phases', {}).get('C++/Triton compile', 0.0):.2f} s in 'C++/Triton compile')")
    return out
