"""The report's content as plain data: one dict that the JSON format prints as is and the Markdown
and HTML formats render, so the three always say the same thing."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from kernelscope.bundle.artifacts import stage_order
from kernelscope.bundle.model import Bundle, Kernel
from kernelscope.bundle.symbolic import bytes_per_call, is_symbolic
from kernelscope.report.bench import BenchFacts, read_bench
from kernelscope.show import cudagraph_line, failed_guard_lines, guard_summary_lines, symbol_lines
from kernelscope.units import base_name, fmt_bytes, plural

REPORT_VERSION = 1




def where(file: str, line: int | None) -> str:
    """``file.py:12`` as a user reads it ('' when unknown)."""
    if not file:
        return ""
    return f"{base_name(file)}:{line}" if line is not None else base_name(file)


def _sum_known(values: list[int | None]) -> int | None:
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _triton_facts(k: Kernel) -> dict[str, Any] | None:
    if k.lang != "triton":
        return None
    chosen = next((v for v in k.triton if v.chosen), k.triton[0] if len(k.triton) == 1 else None)
    stages = sorted({s for v in k.triton for s in v.files}, key=stage_order)
    facts: dict[str, Any] = {"variants": len(k.triton), "stages": stages}
    if chosen is not None:
        for key in ("num_warps", "num_stages", "shared"):
            if key in chosen.metadata:
                facts[key] = chosen.metadata[key]
    return facts


def kernel_data(k: Kernel, bench: BenchFacts | None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": k.id,
        "graph": k.graph,
        "name": k.name,
        "kind": k.kind,
        "lang": k.lang,
        "launches": k.launches,
        "fused_nodes": list(k.fx_nodes),
        "fused_nodes_pre": list(k.fx_nodes_pre),
        "aten_ops": list(k.aten_ops),
        "user_lines": [{"where": where(u.file, u.line), "file": u.file, "line": u.line, "code": u.code}
                       for u in k.user_lines],
        "bytes_read": k.bytes_read,
        "bytes_bound": k.bytes_bound,
        "bytes_written": k.bytes_written,
        "call": k.call_text,
        "source": k.source,
        "triton": _triton_facts(k),
    }
    if bench is not None:
        row["time_ms"] = bench.kernel_time_ms(k)
        facts = bench.kernel_facts(k)
        for key in ("gbps", "pct_peak"):
            if key in facts:
                row[key] = facts[key]
    return row


def _bench_data(bench: BenchFacts) -> dict[str, Any]:
    def side(s) -> dict[str, Any]:
        return {"launches": s.launches, "ms": s.ms, "kernel_ms": s.kernel_ms,
                "kernels": {name: {"count": c, "ms": t} for name, (c, t) in s.kernels.items()}}

    data = {"device": bench.device, "method": bench.method, "eager": side(bench.eager),
            "compiled": side(bench.compiled)}
    if bench.eager.ms and bench.compiled.ms:
        data["speedup"] = bench.eager.ms / bench.compiled.ms
    if bench.run:
        data["where_time_goes"] = bench.run.get("where_time_goes") or []
        data["sum_check"] = bench.run.get("sum_check")
        data["counts_explained"] = bench.run.get("counts_explained")
        if bench.run.get("from_bundle"):  # benched from the bundle's own code, on synthetic inputs
            data["from_bundle"] = bench.run["from_bundle"]
    return data


def _per_call(b: Bundle, k: Kernel) -> list[dict[str, Any]]:
    g = next((x for x in b.graphs if x.id == k.graph), None)
    return bytes_per_call(k, g) if g is not None and g.calls and is_symbolic(k) else []


JOB_KERNELS = 40  # a job's report lists the kernels moving the most bytes; --all lists every one


def report_data(b: Bundle, every_kernel: bool = False) -> dict[str, Any]:
    """Everything a report shows, as JSON-ready data. A job-sized bundle (job_summary.is_job) is summarised
    from its index: per graph, then the ``JOB_KERNELS`` kernels moving the most bytes, without each graph's
    guards, symbols and not-fused pairs (which would read every graph's detail file); ``every_kernel``
    reports it whole, as any other bundle."""
    from kernelscope.job_summary import is_job, job_lines, moved

    job = is_job(b) and not every_kernel
    bench = read_bench(b)
    t = b.target
    shown = b.kernels
    if job:
        shown = sorted(b.kernels, key=lambda k: -(moved(k) or 0))[:JOB_KERNELS]
    kernels = [kernel_data(k, bench) for k in shown]
    for k, kd in zip(shown, kernels):
        kd["bytes_per_call"] = _per_call(b, k)
    kinds = Counter(k.kind for k in b.kernels)
    graphs = []
    for g in b.graphs:
        entry = {"id": g.id, "compile_id": g.compile_id, "kind": g.kind, "function": g.code_name,
                 "where": where(g.code_file, g.code_line),
                 "compiled_from": g.compiled_from() if g.called_elsewhere() else "",
                 "kernels": [k.name for k in b.kernels_of(g.id)],
                 "launches": sum(k.launches for k in b.kernels_of(g.id)),
                 "cudagraphs": dict(g.cudagraphs)}
        if not job:
            entry.update(symbols=list(g.symbols), calls=list(g.calls), guards=list(g.guards))
        graphs.append(entry)
    out = {
        "kernelscope_report": REPORT_VERSION,
        "bundle": b.root,
        "status": b.status,
        "error": b.error,
        "target": {
            "spec": t.get("spec", ""),
            "kind": t.get("kind", "function"),
            "function": t.get("name", ""),
            "where": where(t.get("file", ""), t.get("first_line")),
            "inputs": list(t.get("inputs", []) or []),
            # Every call's inputs (--args "A; B"): a report that names only the first hides the recompile.
            "calls": [list(c) for c in t.get("calls") or [] if isinstance(c, list)],
        },
        "options": dict(b.options),
        "environment": dict(b.environment),
        "summary": {
            "graphs": len(b.graphs),
            "kernels": len(b.kernels),
            "launches": sum(k.launches for k in b.kernels),
            "kinds": dict(sorted(kinds.items())),
            "triton_kernels": sum(1 for k in b.kernels if k.lang == "triton"),
            "graph_breaks": len(b.graph_breaks),
            "recompiles": len(b.recompiles),
            "bytes_read": _sum_known([k.bytes_read for k in b.kernels]),
            "bytes_written": _sum_known([k.bytes_written for k in b.kernels]),
        },
        "bench": _bench_data(bench) if bench is not None else None,
        "graphs": graphs,
        "kernels": kernels,
        "graph_breaks": [{"where": where(gb.file, gb.line), "file": gb.file, "line": gb.line, "reason": gb.reason,
                          "code": gb.code, "compile_id": gb.compile_id} for gb in b.graph_breaks],
        "recompiles": [{"where": where(r.file, r.line), "reason": r.reason, "compile_id": r.compile_id,
                        "failed_guard": dict(r.guard)} for r in b.recompiles],
        # Plain-text sections shared by the Markdown and HTML renderings (the same lines `show` prints).
        "dynamic_text": {"symbols": [] if job else symbol_lines(b), "guards": [] if job else guard_summary_lines(b),
                         "failed_guards": [failed_guard_lines(r) for r in b.recompiles],
                         "cudagraphs": cudagraph_line(b)},
        "autotune": [{"op": a.op, "dtypes": a.dtypes,
                      "choices": [{"name": c.name, "time_ms": c.time_ms, "percent": c.percent, "config": c.config}
                                  for c in a.choices]} for a in b.autotune],
        "notes": list(b.notes),
        **why_data(b, job=job),
    }
    if job:
        out["job"] = {"kernels_shown": len(shown), "kernels": len(b.kernels), "ranked_by": "bytes moved per call",
                      "text": job_lines(b)}
    if len({g.compile_id for g in b.graphs}) > 1:  # several compiles or ranks: where each came from, ranks side by side
        from kernelscope.bundle.io import read_text
        from kernelscope.job_view import job_text

        out["compiles_text"] = job_text(b, read_text)
    return out


def why_data(b: Bundle, job: bool = False) -> dict[str, Any]:
    """Why kernels stayed apart, device time per line, where the compile went: the data (for JSON)
    and the text `show --fusion / --lines / --compile` prints (for Markdown and HTML). A job's summary
    leaves the not-fused pairs to `show --fusion` (they are in every graph's detail file)."""
    from kernelscope.report import lines, why

    fusion, compile_time = ({} if job else why.fusion_data(b)), why.compile_data(b)
    got = lines.line_tables(b)
    text: dict[str, list[str]] = {}
    if fusion.get("pairs"):
        text["fusion"] = why.fusion_lines(b, limit=20)
    if got is not None:
        text["lines"] = lines.lines_text(b, limit=20).rstrip("\n").splitlines()
    if compile_time:
        text["compile"] = why.compile_lines(b, limit=10)
    return {"not_fused": fusion.get("pairs", [])[:100], "compile_time": compile_time,
            "line_times": [{"scope": t.scope, "total_us": t.total_us, "exclusive_us": t.exclusive_us,
                            "shared_once_us": t.shared_once_us, "no_line_us": t.no_line_us, "rest_us": t.rest_us,
                            "lines": [{"file": lt.file, "line": lt.line, "code": lt.code, "exclusive_us": lt.exclusive_us,
                                       "shared_us": lt.shared_us, "kernels": lt.kernels} for lt in t.lines[:50]]}
                           for t in (got[0] if got else [])],
            "why_text": text}


def options_text(options: dict[str, Any]) -> str:
    """``mode=max-autotune, device=cuda, backward`` (flags only when on)."""
    if not options:
        return ""
    parts = [f"mode={options.get('mode') or 'default'}"]
    if options.get("device"):
        parts.append(f"device={options['device']}")
    if options.get("dynamic") is not None:
        parts.append(f"dynamic={options['dynamic']}")
    parts += [name for name in ("fullgraph", "backward") if options.get(name)]
    return ", ".join(parts)


def environment_text(env: dict[str, Any]) -> str:
    """``torch 2.11.0, triton 3.6.0, python 3.12.3; NVIDIA H200 (sm_90)``."""
    if not env:
        return ""
    versions = ", ".join(f"{name} {env[name]}" for name in ("torch", "triton", "python", "cuda") if env.get(name))
    device = env.get("device_name") or ""
    if env.get("compute_capability"):
        device += f" (sm_{str(env['compute_capability']).replace('.', '')})"
    text = "; ".join(x for x in (versions, device.strip()) if x)
    preview = env.get("preview")
    if isinstance(preview, dict) and preview.get("arch"):
        text = f"PREVIEW {preview['arch']} (generated without that GPU, never run); {text}"
    if env.get("source") == "TORCH_TRACE":
        ranks = env.get("ranks") or []
        text = "opened from a TORCH_TRACE log" + (f" (ranks {', '.join(map(str, ranks))})" if ranks else "") + \
            (f"; {text}" if text else "")
    return text


def fmt_ms(ms: float | None) -> str:
    if ms is None:
        return ""
    return f"{ms * 1000:.1f} µs" if ms < 1 else f"{ms:.3f} ms"


def summary_facts(data: dict[str, Any], code: Callable[[Any], str], text: Callable[[Any], str],
                  link: Callable[[str, str], str] = lambda label, _: label) -> list[tuple[str, str]]:
    """(label, value) lines of a report's head, in one markup: ``code`` and ``text`` escape for it,
    ``link(label, section)`` links to a section (Markdown leaves it plain)."""
    t, s = data["target"], data["summary"]
    facts: list[tuple[str, str]] = []
    if t["function"]:
        facts.append(("Target", code(t["function"]) + (f" at {code(t['where'])}" if t["where"] else "")
                      + (f", {len(t['calls'])} calls with inputs "
                         + "; ".join(", ".join(code(i) for i in c) for c in t["calls"]) if len(t.get("calls") or []) > 1
                         else f", inputs {', '.join(code(i) for i in t['inputs'])}" if t["inputs"] else "")))
    elif t["spec"]:
        facts.append(("Target", code(t["spec"])))
        functions: list[str] = []
        for g in data["graphs"]:
            where_text = code(g["function"]) + (f" at {code(g['where'])}" if g["where"] else "")
            if g["function"] and where_text not in functions:
                functions.append(where_text)
        if functions:
            facts.append(("Compiled functions", ", ".join(functions)))
    sites = list(dict.fromkeys(g["compiled_from"] for g in data["graphs"] if g.get("compiled_from")))
    if sites:  # the lines of the user's code that reached the compiles (a script's call of its model)
        shown = [code(site.split("  ", 1)[0]) + (f" {code(site.split('  ', 1)[1])}" if "  " in site else "")
                 for site in sites[:5]]
        facts.append(("Compiled from", "; ".join(shown) + (f" and {len(sites) - 5} more" if len(sites) > 5 else "")))
    if options_text(data["options"]):
        facts.append(("Options", code(options_text(data["options"]))))
    if environment_text(data["environment"]):
        facts.append(("Environment", text(environment_text(data["environment"]))))
    kinds = ", ".join(f"{n} {text(kind)}" for kind, n in s["kinds"].items())
    graphs = link(plural(s['graphs'], 'graph'), "graphs")
    kernels = link(plural(s['kernels'], 'kernel'), "kernels")
    moved = (f"; moves {fmt_bytes(s['bytes_read'])} read, {fmt_bytes(s['bytes_written'])} written"
             if s["bytes_read"] is not None else "")
    facts.append(("Compiled", f"{graphs}, {kernels}" + (f" ({kinds})" if kinds else "")
                  + f", {plural(s['launches'], 'launch', 'launches')} per call{moved}"))
    breaks = link(str(s["graph_breaks"]), "graph-breaks") if s["graph_breaks"] else "0"
    recompiles = link(f"recompiles: {s['recompiles']}", "recompiles") if s["recompiles"] else ""
    facts.append(("Graph breaks", breaks + (f", {recompiles}" if recompiles else "")))
    return facts
