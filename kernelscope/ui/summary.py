"""Plain-text summaries the explorer shows: the one-line header and the info pane. No Textual."""

from __future__ import annotations

from kernelscope.bundle.model import Bundle, Kernel
from kernelscope.show import autotune_lines, cudagraph_line, fmt_bytes, guard_lines, per_call_lines, symbol_lines
from kernelscope.ui.xref import base_name


def count_line(b: Bundle) -> str:
    n_tr = sum(1 for k in b.kernels if k.lang == "triton")
    n_cpp = sum(1 for k in b.kernels if k.lang == "cpp")
    n_ext = sum(1 for k in b.kernels if k.lang == "extern")
    parts = [f"{len(b.graphs)} graph{'s' if len(b.graphs) != 1 else ''}", f"{len(b.kernels)} kernels"]
    kinds = [f"{n} {what}" for n, what in ((n_tr, "Triton"), (n_cpp, "C++"), (n_ext, "extern")) if n]
    if kinds:
        parts[-1] += f" ({', '.join(kinds)})"
    parts.append(f"{len(b.graph_breaks)} break{'s' if len(b.graph_breaks) != 1 else ''}")
    if b.recompiles:
        parts.append(f"{len(b.recompiles)} recompiles")
    return " · ".join(parts)


def title_line(b: Bundle, previous: Bundle | None = None) -> str:
    """``add_relu · cpu · mode=default │ 1 graph · 1 kernels (1 C++) · 0 breaks │ 13.3 s``."""
    t = b.target
    code_names = [g.code_name for g in b.graphs if g.code_name and not g.code_name.startswith("torch_dynamo_resume")]
    functions = [u.function for k in b.kernels for u in k.user_lines if u.function]
    name = t.get("name") or (code_names + functions or [base_name(t.get("spec", "") or "capture")])[0]
    opts = b.options
    flags = []
    if opts:
        flags.append(opts.get("device") or "auto")
        flags.append(f"mode={opts.get('mode') or 'default'}")
        flags += [k for k in ("dynamic", "fullgraph", "backward") if opts.get(k)]
    elif t.get("kind") == "torch_trace":
        flags.append("from TORCH_TRACE")
    text = " · ".join([name, *flags]) + "  │  " + count_line(b)
    compile_s = b.timings.get("compile_and_first_call")
    if compile_s:
        text += f"  │  compiled in {compile_s:.1f} s"
    if previous is not None:
        text += f"  │  before: {len(previous.kernels)} kernels, {len(previous.graphs)} graphs"
    if b.status != "ok":
        text += f"  │  ✗ FAILED: {b.error}"
    return text


def kernel_facts(k: Kernel) -> list[str]:
    out = [f"kernel      {k.name}" + (f"  ×{k.launches} launches" if k.launches > 1 else ""),
           f"kind        {k.kind} ({k.lang})", f"graph       {k.graph}"]
    if k.call_text:
        out.append(f"launch      {k.call_text}")
    out.append(f"moved       read {fmt_bytes(k.bytes_read)}, wrote {fmt_bytes(k.bytes_written)} per launch")
    for buf in k.buffers:
        shape = "×".join(map(str, buf.shape)) or "scalar"
        out.append(f"  {buf.role:<10}{buf.name:<14}{buf.dtype or '?':<10}{shape:<16}{fmt_bytes(buf.bytes)}")
    if k.fx_nodes:
        out.append(f"fx nodes    {', '.join(k.fx_nodes)}" + (f"  ({k.provenance})" if k.provenance else ""))
    if k.fx_nodes_pre:
        out.append(f"dynamo      {', '.join(k.fx_nodes_pre)}")
    if k.aten_ops:
        out.append(f"aten ops    {', '.join(k.aten_ops)}")
    for u in k.user_lines:
        out.append(f"user line   {base_name(u.file)}:{u.line}  {u.code}")
    for v in k.triton:
        md = v.metadata
        shared = md.get("shared")
        facts = [f"warps={md.get('num_warps')}", f"stages={md.get('num_stages')}"]
        if shared is not None:
            facts.append(f"shared={shared} B")
        if md.get("n_regs") is not None:
            facts.append(f"regs={md.get('n_regs')}")
        if md.get("n_spills") is not None:
            facts.append(f"spills={md.get('n_spills')}")
        stages = ",".join(v.files)
        out.append(f"triton      {' '.join(facts)}{'  (chosen)' if v.chosen else ''}  [{stages}]")
    return out


def info_text(b: Bundle, kernel: Kernel | None) -> str:
    out: list[str] = []
    if kernel is not None:
        graph = next((g for g in b.graphs if g.id == kernel.graph), None)
        out += ["── selected kernel ──", *kernel_facts(kernel), *per_call_lines(kernel, graph, "  "), ""]
    out.append("── capture ──")
    t = b.target
    out.append(f"target      {t.get('spec', '?')}")
    if t.get("inputs"):
        out.append(f"inputs      {', '.join(t['inputs'])}")
    out.append(f"status      {b.status}" + (f": {b.error}" if b.error else ""))
    if b.options:
        out.append("options     " + ", ".join(f"{k}={v}" for k, v in b.options.items()))
    if b.timings:
        out.append("")
        out.append("── compile time by phase ──")
        total = sum(b.timings.values()) or 1.0
        for phase, secs in b.timings.items():
            bar = "█" * max(0, round(24 * secs / total))
            out.append(f"{phase:<24}{secs:8.2f} s  {bar}")
    if b.environment:
        out.append("")
        out.append("── environment ──")
        for key, value in b.environment.items():
            if value not in (None, "", [], {}):
                out.append(f"{key:<14}{value}")
    dynamic = symbol_lines(b) + guard_lines(b, limit=70) + ([cudagraph_line(b)] if cudagraph_line(b) else [])
    if dynamic:
        out += ["", "── shapes, guards, CUDA graphs ──", *dynamic]
    if b.autotune:
        out.append("")
        out.append("── autotune ──")
        out += autotune_lines(b, limit=6)
    if b.notes:
        out.append("")
        out += [f"note: {n}" for n in b.notes]
    out += ["", f"bundle      {b.root}"]
    return "\n".join(out) + "\n"
