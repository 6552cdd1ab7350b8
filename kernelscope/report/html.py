"""A self-contained HTML report of a bundle: one file, no scripts, sections linked by anchors."""

from __future__ import annotations

import re
from html import escape
from typing import Any

from kernelscope.bundle.io import clip_text, read_text
from kernelscope.bundle.model import Bundle
from kernelscope.report.data import fmt_ms, summary_facts
from kernelscope.report.markdown import bench_rows, bench_run_lines
from kernelscope.units import fmt_bytes, plural

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#1f2328}
code,pre{font:12.5px ui-monospace,SFMono-Regular,Menlo,monospace}
pre{background:#f6f8fa;padding:.8em;overflow-x:auto;border-radius:6px}
table{border-collapse:collapse;margin:.5em 0 1.2em}th,td{border:1px solid #d0d7de;padding:3px 8px;vertical-align:top}
th{background:#f6f8fa;text-align:left}td.num{text-align:right;white-space:nowrap}
nav a{margin-right:1em}.kind{color:#6e7781}.failed{background:#ffebe9;padding:.5em;border-radius:6px}
section.kernel{border-top:1px solid #d0d7de;margin-top:1.5em}
"""


MAX_EMBEDDED_CHARS = 256 << 10  # a kernel source embedded in the page is cut here, with a note


def anchor(prefix: str, key: str) -> str:
    """An id attribute value for a graph or kernel (ids hold '/', '@')."""
    return prefix + "-" + re.sub(r"[^A-Za-z0-9_-]+", "-", key).strip("-")


def _c(text: Any) -> str:
    return f"<code>{escape(str(text))}</code>" if str(text) else ""


def _table(header: list[str], rows: list[list[str]], numeric: set[int] = frozenset()) -> list[str]:
    out = ["<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in header) + "</tr></thead><tbody>"]
    for r in rows:
        out.append("<tr>" + "".join(f"<td class=\"num\">{v}</td>" if i in numeric else f"<td>{v}</td>"
                                    for i, v in enumerate(r)) + "</tr>")
    out.append("</tbody></table>")
    return out


def _highlight(text: str, path: str) -> str:
    """Source as HTML; highlighted with inline styles when Pygments is installed."""
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import CppLexer, PythonLexer
    except ImportError:
        return f"<pre>{escape(text)}</pre>"
    lexer = CppLexer() if path.endswith((".cpp", ".h")) else PythonLexer()
    return highlight(text, lexer, HtmlFormatter(noclasses=True, nowrap=False))


def render_html(data: dict[str, Any], bundle: Bundle | None = None, sources: bool = True) -> str:
    """The HTML page of a report. With ``bundle`` (and ``sources``), kernel sources are embedded."""
    t = data["target"]
    title = f"kernelscope: {t['spec'] or '?'}"
    sections = [("summary", "Summary"), ("kernels", "Kernels"), ("graphs", "Graphs")]
    if data["bench"]:
        sections.insert(1, ("bench", "Eager vs compiled"))
    for key, label, present in (("graph-breaks", "Graph breaks", data["graph_breaks"]),
                                ("recompiles", "Recompiles", data["recompiles"]),
                                ("autotune", "Autotune", data["autotune"]), ("notes", "Notes", data["notes"])):
        if present:
            sections.append((key, label))
    sections.append(("kernel-details", "Kernel details"))
    out = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
           f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
           f"<h1>{escape(title)}</h1>",
           "<nav>" + "".join(f"<a href=\"#{k}\">{escape(v)}</a>" for k, v in sections) + "</nav>"]
    if data["status"] != "ok":
        out.append(f"<p class=\"failed\"><strong>Capture failed:</strong> {escape(data['error'])}</p>")

    out.append("<h2 id=\"summary\">Summary</h2><ul>")
    def link(label: str, section: str) -> str:
        return f"<a href=\"#{section}\">{label}</a>"

    out += [f"<li><strong>{label}:</strong> {value}</li>" for label, value in summary_facts(data, _c, escape, link)]
    out.append("</ul>")

    bench = data["bench"]
    if bench:
        out.append("<h2 id=\"bench\">Eager vs compiled" + (f" on {escape(bench['device'])}" if bench["device"] else "")
                   + "</h2>")
        out += _table(["", "eager", "compiled"], [[escape(a), escape(b), escape(c)] for a, b, c in bench_rows(bench)],
                      {1, 2})
        if bench.get("speedup"):
            out.append(f"<p>Compiled is <strong>{bench['speedup']:.2f}x</strong> eager end to end"
                       + (f" (measured with {escape(bench['method'])})" if bench["method"] else "") + ".</p>")
        run_text = [line for line in bench_run_lines(bench) if not line.startswith(("###", "```"))]
        if run_text:
            out.append("<h3>Where the time goes</h3><pre>" + escape("\n".join(run_text).strip()) + "</pre>")

    job = data.get("job")
    if job:
        out.append("<h2 id=\"job\">The job, per graph</h2><pre>" + escape("\n".join(job["text"])) + "</pre>")
        out.append(f"<h2 id=\"kernels\">Kernels: the {job['kernels_shown']} moving the most bytes of "
                   f"{job['kernels']}</h2><p><code>kernelscope report BUNDLE --all</code> lists every kernel.</p>")
    else:
        out.append("<h2 id=\"kernels\">Kernels</h2>")
    timed = bench is not None and any(k.get("time_ms") is not None for k in data["kernels"])
    rows = []
    for i, k in enumerate(data["kernels"], 1):
        link = f"<a href=\"#{anchor('k', k['id'])}\">{_c(k['name'])}</a>" + (f" x{k['launches']}" if k["launches"] > 1
                                                                             else "")
        row = [str(i), f"<a href=\"#{anchor('g', k['graph'])}\">{escape(k['graph'])}</a>", link,
               escape(k["kind"]), ", ".join(_c(n) for n in k["fused_nodes"]),
               ", ".join(_c(u["where"]) for u in k["user_lines"]),
               fmt_bytes(k["bytes_read"]), fmt_bytes(k["bytes_written"])]
        if timed:
            row.append(escape(fmt_ms(k.get("time_ms"))))
        rows.append(row)
    if rows:
        out += _table(["#", "graph", "kernel", "kind", "fused nodes", "user lines", "read", "written"]
                      + (["time"] if timed else []), rows, {0, 6, 7, 8})
    else:
        out.append("<p>No kernels: Inductor generated no code for this capture.</p>")

    if data.get("compiles_text"):
        out.append("<h2 id=\"compiles\">Compiles: where each came from</h2><pre>"
                   + escape("\n".join(data["compiles_text"])) + "</pre>")
    out.append("<h2 id=\"graphs\">Graphs</h2>")
    for g in data["graphs"]:
        where_text = f" {_c(g['function'])} at {_c(g['where'])}" if g["function"] else ""
        out.append(f"<h3 id=\"{anchor('g', g['id'])}\">{escape(g['id'])} <span class=\"kind\">"
                   f"({escape(g['kind'])}, compile {escape(g['compile_id'])})</span></h3>")
        ks = [k for k in data["kernels"] if k["graph"] == g["id"]]
        out.append(f"<p>{plural(len(ks), 'kernel')}, {plural(g['launches'], 'launch', 'launches')} per call{where_text}: "
                   + ", ".join(f"<a href=\"#{anchor('k', k['id'])}\">{_c(k['name'])}</a>" for k in ks) + "</p>")

    if data["graph_breaks"]:
        out.append("<h2 id=\"graph-breaks\">Graph breaks</h2><ol>")
        out += [f"<li>{_c(gb['where'] or '?')}: {escape(gb['reason'])}" + (f" ({_c(gb['code'])})" if gb["code"] else "")
                + "</li>" for gb in data["graph_breaks"]]
        out.append("</ol>")
    if data["recompiles"]:
        out.append("<h2 id=\"recompiles\">Recompiles</h2><ol>")
        dyn = data.get("dynamic_text") or {}
        failed = dyn.get("failed_guards") or [[] for _ in data["recompiles"]]
        out += [f"<li>{_c(r['where'] or '?')}: {escape(r['reason'])}"
                + (f"<pre>{escape(chr(10).join(x.strip() for x in f))}</pre>" if f else "") + "</li>"
                for r, f in zip(data["recompiles"], failed)]
        out.append("</ol>")
    dyn = data.get("dynamic_text") or {}
    for title, key in (("Symbols", "symbols"), ("Guards", "guards")):
        if dyn.get(key):
            out.append(f"<h2 id=\"{key}\">{title}</h2><pre>{escape(chr(10).join(dyn[key]))}</pre>")
    if dyn.get("cudagraphs"):
        out.append(f"<p><b>CUDA graphs:</b> {escape(dyn['cudagraphs'].split(': ', 1)[-1])}</p>")
    if data["autotune"]:
        out.append("<h2 id=\"autotune\">Autotune</h2>")
        for a in data["autotune"]:
            out.append(f"<h3>{_c(a['op'])}</h3>")
            out += _table(["choice", "time", "vs best", "config"],
                          [[_c(c["name"]), f"{c['time_ms']:.4f} ms" if c["time_ms"] is not None else "failed",
                            f"{c['percent']:.1f}%" if c["percent"] is not None else "", escape(c["config"])]
                           for c in a["choices"]], {1, 2})
    if data["notes"]:
        out.append("<h2 id=\"notes\">Notes</h2><ul>" + "".join(f"<li>{escape(n)}</li>" for n in data["notes"])
                   + "</ul>")

    for title, key in (("Not fused: round trips between kernels", "fusion"), ("Device time per line", "lines"),
                       ("Where the compile went", "compile")):
        if (data.get("why_text") or {}).get(key):
            out.append(f"<h2 id=\"why-{key}\">{title}</h2><pre>{escape(chr(10).join(data['why_text'][key]))}</pre>")
    out.append("<h2 id=\"kernel-details\">Kernel details</h2>")
    for k in data["kernels"]:
        out.append(f"<section class=\"kernel\" id=\"{anchor('k', k['id'])}\"><h3>{_c(k['name'])} "
                   f"<span class=\"kind\">{escape(k['kind'])}</span></h3><ul>")
        out.append(f"<li>graph <a href=\"#{anchor('g', k['graph'])}\">{escape(k['graph'])}</a>, "
                   f"{plural(k['launches'], 'launch', 'launches')}; <a href=\"#kernels\">back to the table</a></li>")
        for label, key in (("fused nodes (post-grad)", "fused_nodes"),
                           ("fused nodes (Dynamo graph)", "fused_nodes_pre"), ("ATen ops", "aten_ops")):
            if k[key]:
                out.append(f"<li>{label}: " + ", ".join(_c(n) for n in k[key]) + "</li>")
        for u in k["user_lines"]:
            out.append(f"<li>user line {_c(u['where'])}: {_c(u['code'])}</li>")
        if k["call"]:
            out.append(f"<li>call: {_c(k['call'])}</li>")
        if k["triton"]:
            tr = k["triton"]
            cfg = ", ".join(f"{key}={tr[key]}" for key in ("num_warps", "num_stages", "shared") if key in tr)
            out.append(f"<li>Triton: {plural(tr['variants'], 'compiled variant')}" + (f"; {escape(cfg)}" if cfg else "")
                       + (f"; stages {escape(', '.join(tr['stages']))}" if tr["stages"] else "") + "</li>")
        out.append("</ul>")
        if sources and bundle is not None and k["source"]:
            text = clip_text(read_text(bundle, k["source"]), max_chars=MAX_EMBEDDED_CHARS)
            if text:
                out.append("<details><summary>source</summary>" + _highlight(text, k["source"]) + "</details>")
        out.append("</section>")
    out.append(f"<p class=\"kind\">kernelscope report of {escape(data['bundle'])}</p></body></html>")
    return "\n".join(out) + "\n"
