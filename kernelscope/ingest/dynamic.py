"""Dynamic shapes, guards and CUDA graphs for each graph of a bundle (called once by build_bundle)."""

from __future__ import annotations

from kernelscope.bundle.model import Bundle
from kernelscope.ingest import guards as guards_mod
from kernelscope.ingest import shapes
from kernelscope.ingest.tracelog import TraceRecord


def annotate(bundle: Bundle, records: list[TraceRecord], stderr_text: str, user_file: str,
             strings: dict[int, str], cid_of, dynamo_graphs: dict[str, str]) -> None:
    """Fill graph.symbols, graph.guards, graph.calls, graph.cudagraphs and recompile.guard."""
    user_file = user_file or next((g.code_file for g in bundle.graphs if g.code_file), "")
    by_cid: dict[str, list[TraceRecord]] = {}
    guard_trees: dict[str, str] = {}
    metric_skips: dict[str, str] = {}
    for r in records:
        cid = cid_of(r)
        by_cid.setdefault(cid, []).append(r)
        if r.kind == "dynamo_cpp_guards_str":
            guard_trees[cid] = r.payload
        elif r.kind == "compilation_metrics":
            reason = (r.data.get("compilation_metrics") or {}).get("cudagraph_skip_reason")
            if reason:
                metric_skips[cid] = str(reason)
    guards_by_cid = {cid: guards_mod.parse_guard_tree(text, user_file) for cid, text in guard_trees.items()}
    for g in bundle.graphs:
        g.guards = [dict(x) for x in guards_by_cid.get(g.compile_id, [])]
        g.symbols = shapes.symbols_of(by_cid.get(g.compile_id, []), strings, user_file)
        shapes.narrow_ranges(g.symbols, g.guards)
    shapes.assign_calls(bundle, dynamo_graphs)
    graphs_by_cid: dict[str, str] = {}
    for g in bundle.graphs:
        graphs_by_cid.setdefault(g.compile_id, g.id)
    for rc in bundle.recompiles:
        guards_mod.link_recompile(rc, guards_by_cid, graphs_by_cid)
    guards_mod.cudagraph_status(bundle, guards_mod.parse_cudagraph_log(stderr_text), metric_skips)
