"""A Markdown report of a bundle, written to read well pasted into a pull request (GitHub tables)."""

from __future__ import annotations

import re
from typing import Any

from kernelscope.report.data import fmt_ms, summary_facts
from kernelscope.show import compact_configs
from kernelscope.units import fmt_bytes, plural

MAX_NODES_IN_CELL = 8


def code(text: Any) -> str:
    """An inline code span that survives any content (backticks, pipes in a table cell)."""
    text = str(text).replace("\n", " ").replace("|", "\\|")
    if not text:
        return ""
    # The fence is one backtick longer than the longest run inside, so a name holding backticks can
    # never close the span early and smuggle a link or markup into the report.
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest or text.startswith(" ") and text.endswith(" ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def cell(text: Any) -> str:
    """Plain text for a table cell: no line breaks, pipes escaped, Markdown punctuation neutralised."""
    text = str(text).replace("\n", " ").replace("\\", "\\\\").replace("|", "\\|")
    for ch in "*`[]<>":
        text = text.replace(ch, "\\" + ch)
    # An underscore inside a word never starts emphasis; only escape the others (keeps x86_64 readable).
    return re.sub(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", r"\\_", text)


def table(header: list[str], rows: list[list[str]], align: list[str] | None = None) -> list[str]:
    align = align or ["l"] * len(header)
    marks = {"l": "---", "r": "---:", "c": ":---:"}
    out = ["| " + " | ".join(header) + " |", "| " + " | ".join(marks[a] for a in align) + " |"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _nodes(names: list[str]) -> str:
    shown = ", ".join(code(n) for n in names[:MAX_NODES_IN_CELL])
    more = len(names) - MAX_NODES_IN_CELL
    return shown + (f" +{more} more" if more > 0 else "")


def bench_rows(bench: dict[str, Any]) -> list[list[str]]:
    e, c = bench["eager"], bench["compiled"]
    rows = []
    if e["launches"] is not None or c["launches"] is not None:
        rows.append(["kernel launches per call", str(e["launches"] or ""), str(c["launches"] or "")])
    if e["ms"] is not None or c["ms"] is not None:
        rows.append(["end-to-end time per call", fmt_ms(e["ms"]), fmt_ms(c["ms"])])
    if e["kernel_ms"] is not None or c["kernel_ms"] is not None:
        rows.append(["device time in kernels", fmt_ms(e["kernel_ms"]), fmt_ms(c["kernel_ms"])])
    if e["ms"] and c["ms"] and e["kernel_ms"] is not None and c["kernel_ms"] is not None:
        rows.append(["time outside kernels", fmt_ms(max(e["ms"] - e["kernel_ms"], 0)),
                     fmt_ms(max(c["ms"] - c["kernel_ms"], 0))])
    return rows


def _bytes_cell(k: dict[str, Any], key: str, per_call_key: str) -> str:
    """Bytes per launch; a symbolic kernel's per call of its graph (one value or the range), never `?`
    where the calls' sizes give them."""
    if k[key] is not None:
        return fmt_bytes(k[key])
    known = [c[per_call_key] for c in k.get("bytes_per_call") or [] if c.get(per_call_key) is not None]
    if not known:
        return fmt_bytes(None)
    lo, hi = min(known), max(known)
    return (fmt_bytes(lo) if lo == hi else f"{fmt_bytes(lo)}–{fmt_bytes(hi)}") + " per call"


def _dynamic_sections(dyn: dict[str, Any]) -> list[str]:
    """The Symbols and Guards sections and the CUDA graphs line, as `show` prints them."""
    out: list[str] = []
    for title, key in (("Symbols", "symbols"), ("Guards", "guards")):
        if dyn.get(key):
            out += [f"### {title}", "", "```text", *dyn[key], "```", ""]
    if dyn.get("cudagraphs"):
        out += [f"**CUDA graphs:** {cell(dyn['cudagraphs'].split(': ', 1)[-1])}", ""]
    return out


def bench_run_lines(bench: dict[str, Any]) -> list[str]:
    """Where the time goes, the per-launch sum check and the counts explained, as `kernelscope bench` prints them."""
    from kernelscope.bench.tables import explained_lines, sum_check_lines, where_lines

    rec = {"where_time_goes": bench.get("where_time_goes"), "sum_check": bench.get("sum_check"),
           "counts_explained": bench.get("counts_explained")}
    from kernelscope.bench.bundle_plan import record_lines

    alone = record_lines({"from_bundle": bench.get("from_bundle")})  # what ran, on which synthetic inputs
    text = [*alone, *([""] if alone else []), *where_lines(rec, limit=40), "", *sum_check_lines(rec), "",
            *explained_lines(rec)]
    if not any(line.strip() for line in text):
        return []
    return ["### Where the time goes", "", "```text", *text, "```", ""]


def render_markdown(data: dict[str, Any]) -> str:
    """The Markdown text of a report (``data`` from report_data)."""
    t = data["target"]
    out: list[str] = [f"## kernelscope: {code(t['spec'] or '?')}", ""]
    if data["status"] != "ok":
        out += [f"> **Capture failed:** {cell(data['error'])}", ""]
    out += [f"- **{label}:** {value}" for label, value in summary_facts(data, code, cell)]
    out.append("")

    bench = data["bench"]
    if bench:
        rows = bench_rows(bench)
        if rows:
            head = "### Eager vs compiled" + (f" on {cell(bench['device'])}" if bench["device"] else "")
            out += [head, ""] + table(["", "eager", "compiled"], rows, ["l", "r", "r"]) + [""]
            if bench.get("speedup"):
                out += [f"Compiled is **{bench['speedup']:.2f}x** eager end to end"
                        + (f" (measured with {cell(bench['method'])})." if bench["method"] else "."), ""]
        out += bench_run_lines(bench)

    job = data.get("job")
    if job:
        out += ["### The job, per graph", "", "```text", *job["text"], "```", ""]
        out += [f"### Kernels: the {job['kernels_shown']} moving the most bytes of {job['kernels']}", "",
                "`kernelscope report BUNDLE --all` lists every kernel, with each graph's guards and the "
                "not-fused pairs (`kernelscope show BUNDLE --fusion` ranks those).", ""]
    else:
        out += ["### Kernels", ""]
    if data["kernels"]:
        many_graphs = len(data["graphs"]) > 1
        timed = bench is not None and any(k.get("time_ms") is not None for k in data["kernels"])
        header = ["#"] + (["graph"] if many_graphs else []) + ["kernel", "kind", "fused nodes", "user lines",
                                                                "read", "written"] + (["time"] if timed else [])
        align = ["r"] + (["l"] if many_graphs else []) + ["l", "l", "l", "l", "r", "r"] + (["r"] if timed else [])
        rows = []
        for i, k in enumerate(data["kernels"], 1):
            name = code(k["name"]) + (f" x{k['launches']}" if k["launches"] > 1 else "")
            row = [str(i)] + ([code(k["graph"])] if many_graphs else [])
            row += [name, cell(k["kind"]), _nodes(k["fused_nodes"]),
                    ", ".join(code(u["where"]) for u in k["user_lines"]),
                    ("<= " if k.get("bytes_bound") else "") + _bytes_cell(k, "bytes_read", "read"),
                    _bytes_cell(k, "bytes_written", "written")]
            if timed:
                row.append(fmt_ms(k.get("time_ms")))
            rows.append(row)
        out += table(header, rows, align) + [""]
        lines = {(u["where"], u["code"]) for k in data["kernels"] for u in k["user_lines"] if u["code"]}
        if lines:
            out += ["User lines:", ""] + [f"- {code(w)}: {code(c)}" for w, c in sorted(lines)] + [""]
    else:
        out += ["No kernels: Inductor generated no code for this capture.", ""]

    if data.get("compiles_text"):
        lines = data["compiles_text"]
        fence = "`" * max(3, 1 + max((len(r) for x in lines for r in re.findall(r"`+", str(x))), default=0))
        out += ["### Compiles: where each came from" + (", ranks side by side" if "rank" in lines[0] else ""), "",
                f"{fence}text", *lines, fence, ""]
    if data["graph_breaks"]:
        out += [f"### Graph breaks ({len(data['graph_breaks'])})", ""]
        for gb in data["graph_breaks"]:
            out.append(f"1. {code(gb['where'] or '?')}: {cell(gb['reason'])}" + (f" ({code(gb['code'])})"
                                                                                  if gb["code"] else ""))
        out.append("")
    if data["recompiles"]:
        out += [f"### Recompiles ({len(data['recompiles'])})", ""]
        dyn = data.get("dynamic_text") or {}
        for r, failed in zip(data["recompiles"], dyn.get("failed_guards") or [[] for _ in data["recompiles"]]):
            out.append(f"1. {code(r['where'] or '?')}: {cell(r['reason'])}")
            out += [f"   - {code(line.strip())}" for line in failed]
        out.append("")
    out += _dynamic_sections(data.get("dynamic_text") or {})
    for a in data["autotune"]:
        out += [f"### Autotune {code(a['op'])}", ""]
        shown = a["choices"][:5]
        rows = [[code(c["name"]), f"{c['time_ms']:.4f} ms" if c["time_ms"] is not None else "failed",
                 f"{c['percent']:.1f}%" if c["percent"] is not None else "", cell(config)]
                for c, config in zip(shown, compact_configs([c["config"] for c in a["choices"]]))]
        more = len(a["choices"]) - 5
        out += table(["choice", "time", "vs best", "config"], rows, ["l", "r", "r", "l"])
        out += (["", f"{plural(more, 'more choice', 'more choices')} in the bundle."] if more > 0 else []) + [""]
    for title, key in (("Not fused: round trips between kernels", "fusion"), ("Device time per line", "lines"),
                       ("Where the compile went", "compile")):
        if (data.get("why_text") or {}).get(key):
            lines = data["why_text"][key]
            # Fenced one backtick longer than any run in its lines: a name cannot close the block early.
            fence = "`" * max(3, 1 + max((len(r) for x in lines for r in re.findall(r"`+", str(x))), default=0))
            out += [f"### {title}", "", f"{fence}text", *lines, fence, ""]
    if data["notes"]:
        out += ["### Notes", ""] + [f"- {cell(n)}" for n in data["notes"]] + [""]
    out.append("<sub>kernelscope report" + (f" of {cell(data['bundle'])}" if data["bundle"] else "") + "</sub>")
    return "\n".join(out) + "\n"
