"""Compiled frames with no generated code, each a graph row of kind "dynamo" (``Graph.no_code`` says why).

A frame compiled by another backend (``aot_eager``, ``eager``, a custom one) leaves its Dynamo graph, its
guards and ``compilation_metrics`` in the trace, and no Inductor output code; a compile that failed (a
backend that raised, a Dynamo error) leaves the graph Dynamo captured before it failed, and its exception
in ``compilation_metrics`` (``fail_type``, ``fail_reason``, ``fail_user_frame_*``, ``exception_stack_trace``)
and in a ``dynamo_error`` artifact (the traceback). Neither says which backend ran unless it raised
(``backend='NAME' raised:``): the row says what the trace shows (AOTAutograd graphs: aot_eager or a custom AOT
backend; a Dynamo graph alone: eager or a custom backend). Pure: no torch.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kernelscope.bundle.model import FX_AOT, FX_AOT_JOINT, FX_DYNAMO, Graph
from kernelscope.bundle.no_code import failure_text
from kernelscope.ingest import fx
from kernelscope.ingest.records import Gathered

_BACKEND = re.compile(r"backend='([^']+)' raised")


def failure_of(metrics: dict[str, Any], error: str) -> dict[str, Any]:
    """A failed compile's exception: its type, its whole message, and the user line it points at (the
    frame torch names, else the innermost frame of the user's code in its traceback); {} when it did not fail."""
    reason = metrics.get("fail_reason")
    if not reason and not error:
        return {}
    kind = str(metrics.get("fail_type") or "")
    message = str(reason or "").strip()
    if not message and error:  # only the traceback: its last line is "Type: message"
        last = error.strip().splitlines()[-1]
        kind, _, message = last.partition(": ") if ": " in last else (kind, "", last)
    out: dict[str, Any] = {"type": kind or "error", "message": message}
    file, line = metrics.get("fail_user_frame_filename"), metrics.get("fail_user_frame_lineno")
    if isinstance(file, str) and file and isinstance(line, int) and not isinstance(line, bool):
        out.update(file=file, line=line)
    traces = [t for t in (metrics.get("exception_stack_trace") or []) if isinstance(t, str)] + [error]
    user = [f for text in traces for f in fx.stack_frames(text) if not f.library]
    if user:
        at = next((f for f in user if "file" in out and f.file == out["file"] and f.line == out["line"]), user[-1])
        out.update(file=at.file, line=at.line, function=at.function, code=at.code)
    return out


def no_code_reason(g: Gathered, cid: str, failure: dict[str, Any]) -> str:
    """Why a compiled frame has no kernels, in a line."""
    if failure:
        m = _BACKEND.search(failure.get("message", ""))
        return f"compile failed: backend {m.group(1)} raised" if m else f"compile failed: {failure['type']}"
    metrics = g.metrics.get(cid) or {}
    aot = any(key[0] == cid for key in g.aot_graphs) or cid in g.joint_graphs
    if cid in g.post_grad or metrics.get("inductor_compile_time_s") or metrics.get("inductor_cumulative_compile_time_us"):
        return "Inductor ran, but the trace holds no output code for it (a cache hit that logged none, or a cut log)"
    if aot:
        return "backend aot_eager (or another AOTAutograd backend, not Inductor): no generated code"
    if metrics:
        return "backend eager (or a custom backend, not Inductor): Dynamo graph only, no generated code"
    return "no generated code in the trace (the log ends before this compile finished?)"


def add_codeless_graphs(staging: Path, g: Gathered, code_cids: set[str], seen_ids: set[str], write, slug,
                        place_code) -> list[Graph]:
    """A graph of kind "dynamo" for each compile that captured a Dynamo graph or failed without output code:
    its FX graphs written as a compiled graph's are; ``place_code(graph, cid)`` fills where it came from."""
    failed = {cid for cid, m in g.metrics.items() if m.get("fail_reason") or m.get("fail_type")} | set(g.errors)
    cids = [c for c in dict.fromkeys([*g.dynamo_graphs, *sorted(failed)]) if c not in code_cids]
    out = []
    for cid in cids:
        failure = failure_of(g.metrics.get(cid) or {}, g.errors.get(cid, ""))
        gid = slug(cid, "dynamo")
        gid = fx.unique_id(gid, seen_ids)
        graph = Graph(id=gid, compile_id=cid, kind="dynamo", failure=failure,
                      no_code=no_code_reason(g, cid, failure))
        place_code(graph, cid)
        base = f"graphs/{gid}"
        if cid in g.dynamo_graphs:
            graph.files[FX_DYNAMO] = write(staging, f"{base}/fx_dynamo.txt", g.dynamo_graphs[cid])
        if cid in g.joint_graphs:
            graph.files[FX_AOT_JOINT] = write(staging, f"{base}/fx_aot_joint.txt", g.joint_graphs[cid])
        aot = next(((kind, text) for (c, kind), text in g.aot_graphs.items() if c == cid), None)
        if aot:
            graph.files[FX_AOT] = write(staging, f"{base}/fx_aot_{aot[0]}.txt", aot[1])
        out.append(graph)
    for cid, metrics in g.metrics.items():  # a compile that failed after its code was generated: said whole
        if cid in code_cids and (failure := failure_of(metrics, g.errors.get(cid, ""))):
            g.bundle.notes.append(f"compile {cid} failed: {failure_text(failure)}")
    return out

