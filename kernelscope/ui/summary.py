"""Plain-text summaries the explorer shows: the one-line header and the info pane. No Textual."""

from __future__ import annotations

from kernelscope.bundle.model import Bundle, Graph, Kernel
from kernelscope.bundle.origin import run_state
from kernelscope.bundle.symbolic import is_symbolic
from kernelscope.compile_facts import no_fx_nodes_reason
from kernelscope.job_summary import is_job
from kernelscope.show import autotune_lines, cudagraph_line, guard_lines, per_call_lines, symbol_lines, variant_labels
from kernelscope.units import base_name, fmt_bytes, plural


def count_parts(b: Bundle) -> tuple[list[str], str]:
    """The counts a header must keep (graphs, kernels, breaks, recompiles) and the kernel kinds, which
    it may drop when narrow."""
    langs = b.kernel_langs()  # a job's manifest counts them (format 5), or one pass at C speed
    n_tr, n_cpp, n_ext = langs["triton"], langs["cpp"], langs["extern"]
    kinds = ", ".join(f"{n} {what}" for n, what in ((n_tr, "Triton"), (n_cpp, "C++"), (n_ext, "extern")) if n)
    parts = [plural(len(b.graphs), "graph"), plural(b.kernel_count(), "kernel"), plural(len(b.graph_breaks), "break")]
    failed = sum(1 for g in b.graphs if g.failure)  # a compile that raised: said at every width, as a count is
    if failed:
        parts[0] += f" ({failed} failed)"
    if b.recompiles:
        parts.append(plural(len(b.recompiles), "recompile"))
    return parts, kinds


def count_line(b: Bundle) -> str:
    parts, kinds = count_parts(b)
    if kinds:
        parts[1] += f" ({kinds})"
    return " · ".join(parts)


def title_line(b: Bundle, previous: Bundle | None = None, width: int | None = None) -> str:
    """``add_relu · cpu · mode=default │ 1 graph · 1 kernel (1 C++) · 0 breaks │ compiled in 13.3 s``.

    Within ``width`` cells it drops, in order, the compile time, the previous capture's counts, the
    kernel kinds and the capture flags; the name, counts (breaks included) and a failure stay."""
    t = b.target
    code_names = [g.code_name for g in b.graphs if g.code_name and not g.code_name.startswith("torch_dynamo_resume")]
    name = t.get("name") or (code_names or [u.function for u in b.recorded_lines() if u.function]
                             or [base_name(t.get("spec", "") or "capture")])[0]
    opts = b.options
    flags = []
    # A bundle never executed says so at every width: PREVIEW stays, only its explanation is detail.
    preview = f"PREVIEW {b.preview['arch']}" if b.preview else ""
    if opts:
        flags.append(opts.get("device") or "auto")
        flags.append(f"mode={opts.get('mode') or 'default'}")
        flags += [k for k in ("dynamic", "fullgraph", "backward") if opts.get(k)]
        if run_state(opts, quiet_default=True):
            flags.append(run_state(opts, quiet_default=True))
    elif t.get("kind") == "torch_trace":
        flags.append("from TORCH_TRACE")
    if t.get("origin") in ("run", "record"):
        flags.insert(0, f"from {t['origin']}")
    counts, kinds = count_parts(b)
    compile_s = b.timings.get("compile_and_first_call")
    failures = failure_wordings(b) if b.status != "ok" else [""]
    failed = failures[0]
    before = (f"before: {plural(len(previous.kernels), 'kernel')}, {plural(len(previous.graphs), 'graph')}"
              if previous is not None else "")

    def build(n_flags: int, with_kinds: bool, with_before: bool, with_time: bool) -> str:
        cs = list(counts)
        if with_kinds and kinds:
            cs[1] += f" ({kinds})"
        shown = flags[:n_flags]
        if preview:
            shown.insert(0, f"{preview} (generated, never run)" if n_flags == len(flags) else preview)
        segs = [" · ".join([name, *shown]), " · ".join(cs)]
        if with_time and compile_s:
            segs.append(f"compiled in {compile_s:.1f} s")
        if with_before and before:
            segs.append(before)
        if failed:
            segs.append(failed)
        return "  │  ".join(segs)

    tries = [(len(flags), True, True, True), (len(flags), True, True, False), (len(flags), False, True, False),
             (len(flags), False, False, False), (2, False, False, False), (1, False, False, False),
             (0, False, False, False)]
    text = build(*tries[0])
    if width is None:
        return text
    for failed in failures:  # the failure said shorter only once every detail is dropped
        for attempt in tries:
            text = build(*attempt)
            if len(text) <= width:
                return text
            if failed and len(text.replace("  │  ", " │ ")) <= width:
                return text.replace("  │  ", " │ ")
    return text.replace("  │  ", " │ ")


def failure_wordings(b: Bundle) -> list[str]:
    """A failure said in whole words, longest first: the error, without its parenthesis, from each of
    its ``: `` on (``RuntimeError: loss went NaN at step 3``), then a pointer to the Info pane."""
    error = " ".join((b.error or "").split())
    out = [f"✗ FAILED: {error}"] if error else []
    plain = error.split(" (", 1)[0] if error.endswith(")") else error
    while plain:
        out.append(f"✗ FAILED: {plain}")
        plain = plain.partition(": ")[2]
    return [*dict.fromkeys(out), "✗ FAILED (7 Info says why)", "✗ FAILED"]


FACT_WIDTH = 34  # the value column of a fact: the Info pane beside two others at 160 columns shows 46 cells


def wrapped_fact(label: str, value: str, suffix: str = "", width: int = FACT_WIDTH) -> list[str]:
    """``label`` and ``value`` (then ``suffix``) as lines of at most 12 + ``width`` cells: a long kernel
    name or launch breaks after an ``_`` or ``, `` (the pane does not wrap, and the name's end is what
    tells kernels apart), its continuation lines under the value."""
    lines, rest = [], value
    while len(rest) > width:
        # Between arguments first (``arg1_`` / ``1`` split a name), else after an ``_`` that a word
        # follows (not ``arg1_`` before its number), else after any ``_``.
        comma = rest.rfind(", ", 0, width) + 2
        call = max(rest.rfind("(", 0, width - 1), rest.rfind("/", 0, width - 1)) + 1  # after a call or a folder
        word = max((i + 1 for i in range(width) if rest[i] == "_" and not rest[i + 1].isdigit()), default=0)
        under = rest.rfind("_", 0, width) + 1
        cut = next((c for c in (comma, call) if c > 4), 0) or next((c for c in (word, under) if c > width // 3), width)
        lines.append(rest[:cut].rstrip())
        rest = rest[cut:]
    lines.append(rest)
    if suffix:
        if len(lines[-1]) + len(suffix) <= width:
            lines[-1] += suffix
        else:
            lines.append(suffix.strip())
    return [f"{label:<12}{lines[0]}", *(" " * 12 + line for line in lines[1:])]


def wrapped_words(label: str, text: str, width: int = FACT_WIDTH + 12) -> list[str]:
    """``label`` then ``text`` wrapped at words under the value column (a sentence, not a name)."""
    import textwrap

    return textwrap.wrap(text, width, initial_indent=f"{label:<12}", subsequent_indent=" " * 12,
                         break_long_words=False, break_on_hyphens=False)


def kernel_facts(k: Kernel) -> list[str]:
    out = wrapped_fact("kernel", k.name, f"  ×{k.launches} launches" if k.launches > 1 else "")
    out += [f"kind        {k.kind} ({k.lang})", f"graph       {k.graph}"]
    if k.call_text:
        out += wrapped_fact("launch", k.call_text)
    symbolic = k.bytes_read is None and is_symbolic(k)
    if symbolic:
        out.append("moved       symbolic sizes: bytes per call below")
    else:
        out.append(f"moved       read {'<= ' if k.bytes_bound else ''}{fmt_bytes(k.bytes_read)}, "
                   f"wrote {fmt_bytes(k.bytes_written)} per launch")
    for buf in k.buffers:
        shape = "×".join(map(str, buf.shape)) or "scalar"
        part = (f" (reads {'<= ' if buf.read_bound else ''}{fmt_bytes(buf.read_bytes)}: {buf.read_how})"
                if buf.read_bytes is not None else "")
        size = "per call" if buf.bytes is None and symbolic else fmt_bytes(buf.bytes)
        out.append(f"  {buf.role:<10}{buf.name:<14}{buf.dtype or '?':<10}{shape:<16}{size}{part}")
    if k.fx_nodes:
        out.append(f"fx nodes    {', '.join(k.fx_nodes)}" + (f"  ({k.provenance})" if k.provenance else ""))
    else:  # the kernel table's "-", said in words
        out += wrapped_words("fx nodes", no_fx_nodes_reason(k))
    if k.fx_nodes_pre:
        out.append(f"dynamo      {', '.join(k.fx_nodes_pre)}")
    if k.aten_ops:
        out.append(f"aten ops    {', '.join(k.aten_ops)}")
    for u in k.user_lines:
        out.append(f"user line   {base_name(u.file)}:{u.line}  {u.code}")
    for u in k.library_lines:
        out.append(f"library     {base_name(u.file)}:{u.line}  {u.code}")
    if len(k.launch_info) > 1:
        out.append(f"launches    {len(k.launch_info)}, each with its own nodes:")
        for n, li in enumerate(k.launch_info, start=1):
            out.append(f"  {n:>2}. {', '.join(li.fx_nodes) or '-'}")
    for v, label in zip(k.triton, variant_labels(k.triton)):
        md = v.metadata
        shared = md.get("shared")
        facts = [label]
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
    return kernel_info(b, kernel) + capture_info(b)


def kernel_info(b: Bundle, kernel: Kernel | None) -> str:
    """The info pane's part about the selected kernel ("" for none); the capture's part follows it."""
    if kernel is None:
        return ""
    graph = next((g for g in b.graphs if g.id == kernel.graph), None)
    out = ["── selected kernel ──", *kernel_facts(kernel), *per_call_lines(kernel, graph, "  "), ""]
    return "\n".join(out) + "\n"


def graph_info(b: Bundle, graph: Graph | None) -> str:
    """The selected graph: where its compile came from, and a job's shapes and guards of it (its detail file
    alone; a capture lists every compile's in its own part). The same for each kernel of the graph, so
    the Info pane keeps it per graph."""
    if graph is None:
        return ""
    out = []
    if graph.called_elsewhere():
        out += [f"── graph {graph.id} ──", f"compiled from {graph.compiled_from()}", ""]
    if is_job(b):
        dynamic = symbol_lines(b, [graph]) + guard_lines(b, limit=70, graphs=[graph])
        if dynamic:
            out += [f"── shapes and guards of graph {graph.id} ──", *dynamic, ""]
    return "\n".join(out) + "\n" if out else ""


def capture_info(b: Bundle) -> str:
    """The info pane's part about the whole capture (the same for every kernel: built once per bundle)."""
    out: list[str] = []
    out.append("── capture ──")
    t = b.target
    # Sentences and commands wrap at words: the pane does not wrap, and beside two others it is 46 cells.
    out += wrapped_words("target", str(t.get("spec", "?")))
    if t.get("inputs"):
        out += wrapped_words("inputs", ", ".join(t["inputs"]))
    out += wrapped_words("status", f"{b.status}" + (f": {b.error}" if b.error else ""))
    if b.options:
        out += wrapped_words("options", ", ".join(f"{k}={v}" for k, v in b.options.items() if v is not None))
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
        shown = {k: v for k, v in b.environment.items() if v not in (None, "", [], {})}
        width = max([14, *(len(k) + 2 for k in shown)])
        for key, value in shown.items():
            out.append(f"{key:<{width}}{value}")
    if is_job(b):  # every graph's detail file would be read: the selected kernel's graph shows its own
        dynamic = ["each graph's shapes and guards: under the selected kernel (`kernelscope show --guards` "
                   "lists every compile's)"]
    else:
        dynamic = symbol_lines(b) + guard_lines(b, limit=70)
    dynamic += [cudagraph_line(b)] if cudagraph_line(b) else []
    if dynamic:
        out += ["", "── shapes, guards, CUDA graphs ──", *dynamic]
    if b.autotune:
        out.append("")
        out.append("── autotune ──")
        out += autotune_lines(b, limit=6)
    printed = printed_lines(b)
    if printed:
        out += ["", f"── your function printed ({b.files.get('stdout')}) ──", *printed]
    if b.notes:
        out.append("")
        out += [f"note: {n}" for n in b.notes]
    out += ["", *wrapped_fact("bundle", str(b.root))]
    return "\n".join(out) + "\n"


def why_info(b: Bundle, kernel: Kernel | None, graph: Graph | None = None) -> str:
    """The Info pane's last part: the selected kernel's not-fused pairs, the capture's round trips
    ranked by bytes, device time per line (after a bench), where the compile went (bars)."""
    if kernel is not None:
        graph = next((g for g in b.graphs if g.id == kernel.graph), graph)
    return why_kernel_info(b, kernel) + why_shared_info(b, graph)


def why_kernel_info(b: Bundle, kernel: Kernel | None) -> str:
    """The selected kernel's not-fused pairs."""
    from kernelscope.report import why

    out: list[str] = []
    mine = why.pairs_of(b, kernel) if kernel is not None else []
    if mine:
        out.append("── not fused: this kernel ──")
        for p in mine[:8]:
            other = p["consumer_name"] if p["producer"] == kernel.id else p["producer_name"]
            arrow = "->" if p["producer"] == kernel.id else "<-"
            buf = ", ".join(x["name"] for x in p["buffers"])
            out.append(f"{arrow} {other}  {buf}  {fmt_bytes(p['bytes'])}, {p['transfers']} transfers")
            out.append(f"   why: {p['reason']}")
        out.append("")
    return "\n".join(out) + ("\n" if out else "")


def why_shared_info(b: Bundle, graph: Graph | None, *, compile_time: bool = True, line_times: bool = True) -> str:
    """What follows the kernel's pairs, the same for every kernel of ``graph``: the round trips ranked by
    bytes (a job's: this graph's), device time per line (unless ``line_times`` is False: a benched job's,
    worked out meanwhile), where the compile went (unless ``compile_time`` is False: the Info pane's first
    draw of a job, whose compile-time rows are read meanwhile)."""
    from kernelscope.report import lines, why

    out: list[str] = []
    if why.has_pairs(b):
        if not is_job(b):
            out.append("── not fused (round trips, most bytes first) ──")
            out += why.fusion_lines(b, limit=8, width=100)
            out.append("")
        elif graph is not None:  # a job: this graph's pairs (`show --fusion` ranks the whole job's)
            out.append(f"── not fused in graph {graph.id} (round trips, most bytes first) ──")
            out += why.fusion_lines(b, limit=8, width=100, graph=graph)
            out.append("")
    if not line_times and not lines.line_tables_ready(b):
        out += ["── device time per line: working it out from every graph's launches… ──", ""]
    elif lines.line_tables(b) is not None:
        out.append("── device time per line ──")
        out += lines.lines_text(b, limit=10).rstrip("\n").splitlines()
        out.append("")
    if not compile_time:
        out.append("── where the compile went (trace): reading… ──")
    elif why.compile_data(b):
        out.append("── where the compile went (trace) ──")
        # A job's: this graph's compile (every compile of hundreds would be drawn again for each graph).
        out += why.compile_lines(b, limit=8, compile_id=graph.compile_id if graph is not None and is_job(b) else None)
    return "\n".join(out) + ("\n" if out else "")


def printed_lines(b: Bundle, limit: int = 40) -> list[str]:
    """What the user's function printed (the capture's stdout), the first ``limit`` lines: a print()
    that caused a graph break, or the user's own debugging, seen where the capture is read."""
    from kernelscope.bundle.io import BundleError, printable, read_text

    try:
        text = read_text(b, b.files.get("stdout")) if b.root else ""
    except BundleError:
        return []
    lines = printable(text).splitlines()
    more = [f"… {len(lines) - limit} more lines: kernelscope show BUNDLE --artifact stdout"] if len(lines) > limit else []
    return lines[:limit] + more
