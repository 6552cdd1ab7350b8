"""A bundle diff as text for the terminal, Markdown for a review, or JSON for scripts."""

from __future__ import annotations

from collections import Counter
from typing import Any

from kernelscope.bundle.model import Bundle, Kernel
from kernelscope.report.bench import BenchFacts
from kernelscope.report.data import environment_text, fmt_ms, options_text
from kernelscope.report.diff import (
    ADDED,
    REMOVED,
    SAME,
    STATUS_ORDER,
    BundleDiff,
    KernelChange,
    diffs_for,
    option_changes,
)
from kernelscope.report.markdown import cell, code, table


def _label(b: Bundle) -> str:
    bits = [x for x in (options_text(b.options), environment_text(b.environment)) if x]
    return "; ".join(bits)


def _time_delta(a: float | None, b: float | None) -> str:
    if a is None and b is None:
        return ""
    text = f"{fmt_ms(a) or '-'} -> {fmt_ms(b) or '-'}"
    if a and b:
        text += f" ({(b - a) / a * 100:+.0f}%)"
    return text


def overview_rows(d: BundleDiff) -> list[tuple[str, str, str]]:
    """(what, A, B) rows: counts a reviewer compares first, then bench results when both have them."""
    a, b = d.a, d.b
    rows = [
        ("graphs", str(len(a.graphs)), str(len(b.graphs))),
        ("kernels", str(len(a.kernels)), str(len(b.kernels))),
        ("launches per call", str(sum(k.launches for k in a.kernels)), str(sum(k.launches for k in b.kernels))),
        ("Triton kernels", str(sum(k.lang == "triton" for k in a.kernels)),
         str(sum(k.lang == "triton" for k in b.kernels))),
        ("extern calls", str(sum(k.lang == "extern" for k in a.kernels)),
         str(sum(k.lang == "extern" for k in b.kernels))),
        ("graph breaks", str(len(a.graph_breaks)), str(len(b.graph_breaks))),
    ]
    if a.recompiles or b.recompiles:
        rows.append(("recompiles", str(len(a.recompiles)), str(len(b.recompiles))))
    ba, bb = d.bench_a, d.bench_b
    if ba and bb:
        for label, get in (("eager time per call", lambda f: f.eager.ms),
                           ("compiled time per call", lambda f: f.compiled.ms),
                           ("compiled device time in kernels", lambda f: f.compiled.kernel_ms)):
            va, vb = get(ba), get(bb)
            if va is not None or vb is not None:
                rows.append((label, fmt_ms(va) or "-", fmt_ms(vb) or "-"))
    return rows


def _bench_note(ba: BenchFacts | None, bb: BenchFacts | None) -> str:
    if ba and bb:
        return ""
    if ba or bb:
        return f"bench results only in {'A' if ba else 'B'}; no time deltas"
    return ""


def _kernel_line(k: Kernel) -> str:
    nodes = ", ".join(k.fx_nodes) or ", ".join(k.fx_nodes_pre)
    return f"{k.name} ({k.kind}" + (f"; fused {nodes}" if nodes else "") + ")"


def _kernel_lines(e: KernelChange) -> list[str]:
    """The entry's kernels, A's marked -, B's +; a kernel the same on both sides (an extern call whose
    sizes changed) once, marked =, not as removed and added."""
    a, b = [_kernel_line(k) for k in e.a], [_kernel_line(k) for k in e.b]
    same = Counter(a) & Counter(b)
    out = []
    for side, mark in ((a, "-"), (b, "+")):
        left = same.copy()
        for line in side:
            if left[line] > 0:
                left[line] -= 1
                if mark == "-":  # said once, where A's kernels are
                    out.append(f"  = {line}")
            else:
                out.append(f"  {mark} {line}")
    return out


def render_text(d: BundleDiff, stages: bool = False) -> str:
    out = [f"A: {d.a.target.get('spec', '?')}  ({d.a.root})", f"   {_label(d.a)}",
           f"B: {d.b.target.get('spec', '?')}  ({d.b.root})", f"   {_label(d.b)}"]
    differs = option_changes(d.a, d.b)
    if differs:
        out += ["the captures differ, A -> B:"] + [f"  {line}" for line in differs]
    out.append("")
    rows = overview_rows(d)
    width = max(len(r[0]) for r in rows)
    out.append(f"{'':<{width}}  {'A':>10}  {'B':>10}")
    for what, va, vb in rows:
        mark = "  *" if va != vb else ""
        out.append(f"{what:<{width}}  {va:>10}  {vb:>10}{mark}")
    if _bench_note(d.bench_a, d.bench_b):
        out.append(_bench_note(d.bench_a, d.bench_b))
    counts = d.counts()
    out += ["", "kernels: " + ", ".join(f"{counts[s]} {s}" for s in STATUS_ORDER)]
    for g in d.graphs_only_a:
        out.append(f"graph {g.id} ({g.kind}) only in A")
    for g in d.graphs_only_b:
        out.append(f"graph {g.id} ({g.kind}) only in B")
    for e in d.entries:
        out.append("")
        time = _time_delta(e.time_a_ms, e.time_b_ms)
        out.append(f"{e.status.upper():<9}{e.title()}" + (f"   [{time}]" if time else ""))
        if e.status != SAME:
            out += _kernel_lines(e)
        out += [f"    {c}" for c in e.changes]
        if e.status in (ADDED, REMOVED, SAME):
            continue
        for t in diffs_for(d, e):
            if t.unified and (t.label == "source" or stages):
                out.append("")
                out += ["    " + line for line in t.unified.rstrip("\n").split("\n")]
    if not stages and any(t.unified and t.label != "source" for e in d.entries for t in (e.diffs or [])):
        out += ["", "(stage diffs summarised; --stages prints them)"]
    return "\n".join(out) + "\n"


def render_markdown(d: BundleDiff, stages: bool = False) -> str:
    out = [f"## kernelscope diff: {code(d.a.target.get('spec', '?'))} vs {code(d.b.target.get('spec', '?'))}", ""]
    out += [f"- **A:** {cell(_label(d.a)) or code(d.a.root)}", f"- **B:** {cell(_label(d.b)) or code(d.b.root)}"]
    differs = option_changes(d.a, d.b)
    if differs:
        out.append("- **The captures differ, A -> B:** " + "; ".join(cell(line) for line in differs))
    out.append("")
    out += table(["", "A", "B"], [[cell(w), va, vb if va == vb else f"**{vb}**"] for w, va, vb in overview_rows(d)],
                 ["l", "r", "r"]) + [""]
    if _bench_note(d.bench_a, d.bench_b):
        out += [cell(_bench_note(d.bench_a, d.bench_b)), ""]
    counts = d.counts()
    out += ["### Kernels: " + ", ".join(f"{counts[s]} {s}" for s in STATUS_ORDER), ""]
    timed = any(e.time_a_ms is not None or e.time_b_ms is not None for e in d.entries)
    rows = []
    for e in d.entries:
        row = [e.status, "<br>".join(code(k.name) for k in e.a), "<br>".join(code(k.name) for k in e.b),
               "<br>".join(cell(c) for c in e.changes)]
        if timed:
            row.append(cell(_time_delta(e.time_a_ms, e.time_b_ms)))
        rows.append(row)
    out += table(["", "A", "B", "what changed"] + (["time"] if timed else []), rows) + [""]
    for e in d.entries:
        shown = [t for t in diffs_for(d, e) if t.unified and (t.label == "source" or stages)] \
            if e.status not in (ADDED, REMOVED, SAME) else []
        if not shown:
            continue
        for t in shown:
            fence = "````" if "```" in t.unified else "```"
            out += [f"<details><summary>{t.label} diff: {cell(e.title())} (+{t.added} -{t.removed})</summary>", "",
                    fence + "diff", t.unified.rstrip("\n"), fence, "", "</details>", ""]
    return "\n".join(out) + "\n"


def _entry_data(d: BundleDiff, e: KernelChange) -> dict[str, Any]:
    data: dict[str, Any] = {"status": e.status, "a": [k.id for k in e.a], "b": [k.id for k in e.b],
                            "a_names": [k.name for k in e.a], "b_names": [k.name for k in e.b],
                            "changes": e.changes, "time_a_ms": e.time_a_ms, "time_b_ms": e.time_b_ms}
    if e.status not in (ADDED, REMOVED, SAME):
        data["diffs"] = [{"label": t.label, "a": t.a_title, "b": t.b_title, "added": t.added, "removed": t.removed,
                          "note": t.note, "unified": t.unified} for t in diffs_for(d, e)]
    return data


def diff_data(d: BundleDiff) -> dict[str, Any]:
    return {
        "a": {"bundle": d.a.root, "spec": d.a.target.get("spec", ""), "label": _label(d.a)},
        "b": {"bundle": d.b.root, "spec": d.b.target.get("spec", ""), "label": _label(d.b)},
        "differs": option_changes(d.a, d.b),
        "overview": [{"what": w, "a": va, "b": vb} for w, va, vb in overview_rows(d)],
        "counts": d.counts(),
        "graphs_only_a": [g.id for g in d.graphs_only_a],
        "graphs_only_b": [g.id for g in d.graphs_only_b],
        "kernels": [_entry_data(d, e) for e in d.entries],
    }
