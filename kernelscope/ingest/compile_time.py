"""Where the compile time went, from a TORCH_TRACE: per compile (graph), per phase, per kernel. No torch.

Dynamo times its phases with ``chromium_event`` records (a "B" and an "E" per phase, ``args.compile_id``);
phases nest (Inductor runs inside AOTAutograd, which runs inside Dynamo's frame compile), so every
instant is given to the innermost phase that covers it: the phases of a compile add up exactly to the
time its events cover. A Triton kernel's compile time and autotune state come from the
``triton_kernel_info`` artifact; the autotune benchmark Inductor runs at the first call
(``CachingAutotuner.benchmark_all_configs``, named by kernel) counts as that compile's autotune.
``compilation_metrics`` gives guard counts and cache state. The result is plain JSON, stored in
``bundle.extra["compile_time"]`` when the bundle is built (capture and ``open`` alike).
"""

from __future__ import annotations

import heapq
import json
from typing import Any

# (phase a user reads, the chromium event names that are that phase), outermost last: an event
# not named here gives its time to the named phase around it.
PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Dynamo tracing", ("bytecode_tracing",)),
    ("guards", ("build_guards",)),
    ("AOTAutograd", ("create_aot_dispatcher_function", "aot_collect_metadata", "aot_trace_joint_graph",
                     "min_cut_rematerialization_partition")),
    ("graph passes", ("_recursive_pre_grad_passes", "_recursive_post_grad_passes", "_recursive_joint_graph_passes")),
    ("Inductor lowering", ("GraphLowering.run", "additional_fake_tensor_prop")),
    ("scheduling and fusion", ("Scheduler.__init__",)),
    ("code generation", ("Scheduler.codegen", "PythonWrapperCodegen.generate", "GraphLowering.codegen",
                         "GraphLowering.compile_to_fn")),
    ("C++/Triton compile", ("PyCodeCache.load_by_key_path", "async_compile.precompile", "async_compile.wait")),
    ("autotune", ("CachingAutotuner.benchmark_all_configs", "CachingAutotuner.coordinate_descent_tuning",
                  "mm_template_autotuning", "mm_template_precompiling", "benchmark_fused_nodes",
                  "benchmark_codegened_module")),
    ("garbage collection", ("gc",)),
    ("Inductor (rest)", ("inductor_compile", "fx_codegen_and_compile", "compile_fx.<locals>.fw_compiler_base",
                         "compile_fx.<locals>.bw_compiler", "compile_fx_inner")),
    ("Dynamo (rest)", ("dynamo", "entire_frame_compile", "entire_backward_compile", "backend_compile")),
)
PHASE_ORDER = [name for name, _ in PHASES]
_PHASE_OF = {event: name for name, events in PHASES for event in events}
AUTOTUNE_EVENT = "CachingAutotuner.benchmark_all_configs"


def base_compile_id(cid: str) -> str:
    """``1/0_1`` (a restarted attempt) -> ``1/0``: Dynamo's phase events name the frame compile only."""
    return cid.split("_", 1)[0]


def _phase_of(event_name: str) -> str | None:
    if event_name.startswith("compile_attempt_"):
        return "Dynamo (rest)"
    return _PHASE_OF.get(event_name)


def _intervals(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per compile id, the phases' intervals ``{name, phase, b, e, args}`` (µs), B matched to the next E
    of the same name (a stack per name: a phase may recurse)."""
    open_: dict[tuple[str, str], list[dict[str, Any]]] = {}
    out: dict[str, list[dict[str, Any]]] = {}
    for ev in sorted(events, key=lambda e: e["ts"]):
        cid = str(ev["args"].get("compile_id") or "")
        phase = _phase_of(ev["name"])
        if phase is None or not cid:
            continue
        key = (cid, ev["name"])
        if ev["ph"] == "X":
            dur = ev.get("dur")
            if isinstance(dur, (int, float)) and dur >= 0:
                out.setdefault(cid, []).append({"name": ev["name"], "phase": phase, "b": ev["ts"],
                                                "e": ev["ts"] + dur, "args": ev["args"]})
        elif ev["ph"] == "B":
            open_.setdefault(key, []).append(ev)
        elif open_.get(key):
            begin = open_[key].pop()
            out.setdefault(cid, []).append({"name": ev["name"], "phase": phase, "b": begin["ts"], "e": ev["ts"],
                                            "args": {**begin["args"], **ev["args"]}})
    return out


def innermost_phases(intervals: list[dict[str, Any]]) -> tuple[dict[str, float], float]:
    """Seconds per phase, each instant given to the innermost interval covering it (the latest to
    begin; of those, the first to end), and the seconds all of them cover: the phases add up to that
    total exactly. One sweep over the sorted ends with a heap of the open intervals: n log n, where
    looking up every interval per instant took minutes for 40,000 events."""
    points = sorted({x["b"] for x in intervals} | {x["e"] for x in intervals})
    starts = sorted(range(len(intervals)), key=lambda i: intervals[i]["b"])
    open_: list[tuple[float, float, int]] = []  # (-begin, end, index): the innermost on top
    per: dict[str, float] = {}
    covered = 0.0
    nxt = 0
    for lo, hi in zip(points, points[1:]):
        while nxt < len(starts) and intervals[starts[nxt]]["b"] <= lo:
            x = intervals[starts[nxt]]
            heapq.heappush(open_, (-x["b"], x["e"], starts[nxt]))
            nxt += 1
        while open_ and open_[0][1] <= lo:  # ended: the innermost is the latest begun still open
            heapq.heappop(open_)
        if not open_:
            continue
        inner = intervals[open_[0][2]]
        per[inner["phase"]] = per.get(inner["phase"], 0.0) + (hi - lo) / 1e6
        covered += (hi - lo) / 1e6
    return per, covered


def _kernel_infos(records: list[Any], compile_id) -> list[dict[str, Any]]:
    out = []
    for r in records:
        if r.kind != "artifact:triton_kernel_info":
            continue
        try:
            data = json.loads(r.payload)
        except (ValueError, RecursionError):
            continue
        if not isinstance(data, dict):
            continue
        for name, info in data.items():
            if not isinstance(info, dict):
                continue
            us = info.get("compile_time_us")
            configs = info.get("num_configs")
            if info.get("only_config") is not None:
                configs = 1
            out.append({"compile_id": base_compile_id(compile_id(r)), "name": str(name),
                        "compile_s": us / 1e6 if isinstance(us, (int, float)) and not isinstance(us, bool) else None,
                        "autotune_cache": str(info.get("autotune_cache_state") or ""),
                        "configs": configs if isinstance(configs, int) and not isinstance(configs, bool) else None})
    return out


def _metrics(records: list[Any], compile_id) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        if r.kind != "compilation_metrics":
            continue
        m = r.data.get("compilation_metrics") or {}
        own = compile_id(r)  # a job of several ranks names it rankN/...: torch's own field does not
        cid = base_compile_id(own if own.startswith("rank") else str(m.get("compile_id") or own))

        def num(key: str, m=m) -> Any:
            v = m.get(key)
            return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None

        hits = sum(num(k) or 0 for k in ("inductor_fx_local_cache_hit_count", "inductor_fx_remote_cache_hit_count"))
        misses = sum(num(k) or 0 for k in ("inductor_fx_local_cache_miss_count", "inductor_fx_remote_cache_miss_count"))
        out[cid] = {"function": str(m.get("co_name") or ""), "file": str(m.get("co_filename") or ""),
                    "line": num("co_firstlineno"), "frame_compile_s": num("entire_frame_compile_time_s"),
                    "guards": num("guard_count"), "shape_guards": num("shape_env_guard_count"),
                    "fx_cache": "hit" if hits and not misses else "miss" if misses else "",
                    "fail": str(m.get("fail_reason") or ""),
                    "restarts": [restart_reason(x) for x in (m.get("restart_reasons") or []) if isinstance(x, str)]}
    return out


def restart_reason(text: str) -> str:
    """Why Dynamo restarted a frame's analysis, in a line: the explanation torch gives, else its first line."""
    lines = [line.strip() for line in text.strip().splitlines()]
    return next((line[len("Explanation:"):].strip() for line in lines if line.startswith("Explanation:")),
                lines[0] if lines else "")


def compile_time_summary(events: list[dict[str, Any]], records: list[Any], bundle: Any, compile_id) -> dict[str, Any]:
    """``{"compiles": [...], "kernels": [...], "phases": {phase: s}, "total_s", "covered"}`` (see the
    module docstring); empty when the trace has no timed phases. ``compile_id(record)`` names a
    record's compile as the bundle's graphs do (ranks prefixed on a multi-rank job)."""
    by_cid = _intervals(events)
    if not by_cid:
        return {}
    if "None" in by_cid and any(g.compile_id == "" for g in bundle.graphs):  # AOTInductor: no Dynamo frame
        by_cid[""] = by_cid.pop("None")
    metrics = _metrics(records, compile_id)
    infos = _kernel_infos(records, compile_id)
    graphs_of: dict[str, list[Any]] = {}
    for g in bundle.graphs:
        graphs_of.setdefault(base_compile_id(g.compile_id), []).append(g)
    compiles, totals = [], {}
    autotune_by_kernel: dict[tuple[str, str, bool], float] = {}
    for cid in sorted(by_cid, key=lambda c: min(x["b"] for x in by_cid[c])):
        intervals = by_cid[cid]
        per, covered = innermost_phases(intervals)
        for x in intervals:
            if x["name"] == AUTOTUNE_EVENT and x["args"].get("kernel_name"):
                key = (cid, str(x["args"]["kernel_name"]), bool(x["args"].get("is_backward")))
                autotune_by_kernel[key] = autotune_by_kernel.get(key, 0.0) + (x["e"] - x["b"]) / 1e6
        inductor = [x for x in intervals if x["name"] == "inductor_compile"]
        cache = sorted({str(x["args"].get("cache_state")) for x in inductor if x["args"].get("cache_state")})
        for phase, s in per.items():
            totals[phase] = totals.get(phase, 0.0) + s
        m = metrics.get(cid, {})
        compiles.append({"compile_id": cid, "graphs": [g.id for g in graphs_of.get(cid, [])],
                         "function": m.get("function", ""), "file": m.get("file", ""), "line": m.get("line"),
                         "total_s": round(covered, 6), "frame_compile_s": m.get("frame_compile_s"),
                         "phases": {p: round(per[p], 6) for p in PHASE_ORDER if p in per},
                         "guards": m.get("guards"), "shape_guards": m.get("shape_guards"),
                         "inductor_cache": ", ".join(cache), "fx_cache": m.get("fx_cache", ""),
                         "fail": m.get("fail", ""), "restarts": m.get("restarts", []),
                         # torch's own timed events of this compile, as recorded: [name, begin µs, end µs]
                         "spans": [[x["name"], x["b"], x["e"]] for x in sorted(intervals, key=lambda x: (x["b"], -x["e"]))]})
    kernels = _kernel_rows(infos, autotune_by_kernel, bundle)
    return {"compiles": compiles, "kernels": kernels,
            "phases": {p: round(totals[p], 6) for p in PHASE_ORDER if p in totals},
            "total_s": round(sum(c["total_s"] for c in compiles), 6),
            "source": "TORCH_TRACE chromium_event phases, triton_kernel_info, compilation_metrics"}


def _kernel_rows(infos: list[dict[str, Any]], autotune: dict[tuple[str, str, bool], float], bundle: Any) -> list[dict[str, Any]]:
    """One row per compiled Triton kernel: compile + autotune seconds, slowest first, with the bundle
    kernel (id, lines) it became."""
    cid_of = {g.id: base_compile_id(g.compile_id) for g in bundle.graphs}
    free: dict[tuple[str, str], list[Any]] = {}  # (name, compile id) -> the kernels not matched yet, in order
    by_name: dict[str, Any] = {}
    for k in bundle.kernels:
        by_name.setdefault(k.name, k)
        if k.graph in cid_of:
            free.setdefault((k.name, cid_of[k.graph]), []).append(k)
    for ks in free.values():
        ks.reverse()  # popped from the end: the first in the bundle's order first
    rows = []
    for info in infos:
        cands = free.get((info["name"], info["compile_id"]))
        k = cands.pop() if cands else None
        backward = bool(k is not None and k.graph.endswith("backward"))
        tune = autotune.pop((info["compile_id"], info["name"], backward), None)
        lines = _lines(k)
        rows.append({**info, "kernel_id": k.id if k else "", "autotune_s": round(tune, 6) if tune is not None else None,
                     "total_s": round((info["compile_s"] or 0.0) + (tune or 0.0), 6), "lines": lines})
    for (cid, name, _backward), tune in autotune.items():  # benchmarked kernels with no compile record
        k = by_name.get(name)
        rows.append({"compile_id": cid, "name": name, "compile_s": None, "autotune_cache": "", "configs": None,
                     "kernel_id": k.id if k else "", "autotune_s": round(tune, 6), "total_s": round(tune, 6),
                     "lines": _lines(k)})
    rows.sort(key=lambda r: -r["total_s"])
    return rows


def _lines(kernel: Any) -> list[str]:
    """Where a kernel came from: your lines, else its library lines (at most 3)."""
    if kernel is None:
        return []
    return [f"{u.file}:{u.line}" for u in (kernel.user_lines or kernel.library_lines)][:3]
