"""Bench results as plain-text tables (pure): what ``kernelscope bench`` prints and the Bench view shows.

Every number names its source: the graphs (computed), the profiler, CUDA events / the wall clock,
do_bench, and the ceilings measured on the device. The sentences between the tables (the sum check,
the counts explained, the correctness verdict, the conditions of the run) are bench/wording.py's.
"""

from __future__ import annotations

from typing import Any

from kernelscope.bench.analysis import bar, fmt_rate, fmt_us, short_name
from kernelscope.bench.bundle_plan import record_lines
from kernelscope.bench.explain import FLAG_NOTES
from kernelscope.bench.wording import (
    ceiling_lines,
    compile_cache_note,
    correctness_lines,
    explained_lines,
    header_lines,
    host_lines,
    run_state_line,
    sum_check_lines,
)
from kernelscope.units import fmt_bytes


def counts_lines(counts: dict[str, Any]) -> list[str]:
    e, c = counts["eager"], counts["compiled"]
    out = ["Computed from the graphs (one call)",
           f"  {'':<10}{'kernels':>8}{'transfers':>11}{'read':>11}{'written':>11}"]
    for label, d in (("eager", e), ("compiled", c)):
        out.append(f"  {label:<10}{d['kernels']:>8}{d['transfers']:>11}{_bytes(d['bytes_read'], d.get('bytes_bound')):>11}"
                   f"{fmt_bytes(d['bytes_written']):>11}")
    out.append("  eager: " + "; ".join(e["sources"]) + "  (one op = one launch, reads its tensor inputs, writes its "
               "outputs; views are free)")
    out.append("  compiled: each kernel's buffer list from the output code; read = what its loads reach (a "
               "gather's rows, a slice's extent), <= an upper bound")
    for side in (e, c):
        for g in side["graphs"]:
            for note in g.get("notes", []):
                out.append(f"  note: {note}")
    return out


def _bytes(n: int | None, bound: bool | None = False) -> str:
    return ("<= " if bound and n is not None else "") + fmt_bytes(n)


def _pct(pct: float | None, flag: str = "") -> str:
    if pct is None:
        return "-"
    return f"{pct:.0f}%" + MARKS.get(flag, "")


MARKS = {"bound": "<", "cache": "*", "cache_measured": "*", "above_matmul": "^"}


def flag_lines(flags: set[str]) -> list[str]:
    return [f"  {MARKS[f]} {FLAG_NOTES[f]}" for f in ("bound", "cache", "cache_measured", "above_matmul")
            if f in flags]


def where_lines(rec: dict[str, Any], limit: int = 25) -> list[str]:
    rows = rec.get("where_time_goes")
    if not rows:
        return []
    total = (rec.get("sum_check") or {}).get("total_us")
    out = [f"Where the time goes (compiled, per call, device total {fmt_us(total)}; per kernel definition, "
           "slowest first)",
           f"  {'kernel':<46}{'time':>9}{'share':>7}{'launches':>9}{'moved':>12}{'GB/s':>8}{'%copy':>7}  TFLOP/s"]
    flags: set[str] = set()
    for r in rows[:limit]:
        name = ("(not a launch) " if r.get("unclaimed") else "(CUDA-graph input copies) " if r.get("input_copies")
                else "") + r["name"]
        share = f"{r['share_pct']:.1f}%" if r.get("share_pct") is not None else "-"
        gbps = fmt_rate(r.get("gbps"))
        tf = fmt_rate(r.get("tflops")) if r.get("tflops") else ""
        if r.get("flag"):
            flags.add(r["flag"])
        out.append(f"  {short_name(name, 45):<46}{fmt_us(r.get('us')):>9}{share:>7}{r['launches']:>9g}"
                   f"{_bytes(r.get('bytes'), r.get('bytes_bound')):>12}{gbps:>8}{_pct(r.get('pct_copy'), r.get('flag')):>7}"
                   f"  {tf}")
    if len(rows) > limit:
        rest = sum(r.get("us") or 0 for r in rows[limit:])
        out.append(f"  ... {len(rows) - limit} more definitions, {fmt_us(rest)} together")
    return out + flag_lines(flags)


def _kernels(n: float) -> str:
    return f"{n:g} kernel{'' if n == 1 else 's'}"


def cudagraph_lines(rec: dict[str, Any]) -> list[str]:
    """reduce-overhead: was a CUDA graph replayed (cudaGraphLaunch in the profile), what the input
    copies cost, and the same call with its inputs in place; launches per call vs eager."""
    cg = rec.get("cudagraphs")
    if not cg:
        return []
    comp = cg.get("compiled") or {}
    n = comp.get("graph_launches_per_call", 0)
    out = ["CUDA graphs (reduce-overhead): " + ("the compiled call replays a recorded graph of its kernels" if n else
                                                "the compiled call launches its kernels one by one, no graph")]
    if n:
        out.append(f"  CUDA graph: replayed {comp['replays']} times in {comp['calls']} profiled calls ({n:g} "
                   f"cudaGraphLaunch per call)")
    else:
        reasons = "; ".join(cg.get("skips") or [])
        out.append("  CUDA graph: " + (f"skipped: {reasons}" if reasons else
                   "not replayed (no cudaGraphLaunch in the profiled calls) and Inductor logged no reason "
                   "(with graph partition, on by default, it drops the graph silently when no part of it can be "
                   "captured)"))
        return out
    for reason in cg.get("skips") or []:
        out.append(f"  Inductor skipped a graph: {reason}")
    copies = cg.get("copies")
    if copies:
        gbps = (2 * copies["bytes"] / (copies["us"] * 1e-6) / 1e9) if copies.get("bytes") and copies["us"] else None
        what = (f"{copies['tensors']} input tensors, {fmt_bytes(copies['bytes'])} copied per call"
                if copies.get("tensors") is not None else "the inputs")
        out.append(f"  input copies: {what} into the graph's static buffers before each replay: "
                   f"{_kernels(copies['kernels_per_call'])} ({', '.join(short_name(x['name'], 40) for x in copies['names'])}),"
                   f" {fmt_us(copies['us'])} per call" + (f", {fmt_rate(gbps)} GB/s" if gbps else "")
                   + "; not part of any kernel's time above")
    eager_n = rec["eager"].get("launches_per_call")
    out.append(f"  {'':<28}{'end-to-end':>11}{'back to back':>14}{'in kernels':>12}{'outside':>10}  launches per call")
    rows = [("eager", rec["eager"], f"{eager_n:g} kernel launches")]
    for side, label in (("compiled", "compiled, inputs copied"), ("compiled_static", "compiled, inputs in place")):
        d, g = rec.get(side), cg.get(side)
        if not d or not g:
            continue
        launches = (f"{g['graph_launches_per_call']:g} graph launch replaying {_kernels(g['graph_kernels_per_call'])}"
                    if g["graph_launches_per_call"] else "no graph launch")
        if g.get("copy_kernels_per_call"):
            launches += f" + {_kernels(g['copy_kernels_per_call'])} copying inputs"
        if g.get("other_kernels_per_call"):
            launches += f" + {_kernels(g['other_kernels_per_call'])} outside the graph"
        rows.append((label, d, launches))
    for label, d, launches in rows:
        out.append(f"  {label:<28}{fmt_us(d['e2e'].get('median_us')):>11}{fmt_us((d.get('loop') or {}).get('median_us')):>14}"
                   f"{fmt_us(d['kernel_us']):>12}{fmt_us(d['outside_us']):>10}  {launches}")
    st = rec.get("compiled_static")
    if st:
        for side in ("compiled", "eager"):
            a, b = rec[side]["e2e"].get("median_us"), st["e2e"].get("median_us")
            if a and b:
                out.append(f"  inputs in place vs {'inputs copied' if side == 'compiled' else 'eager'}: "
                           f"{a / b:.2f}x end-to-end ({fmt_us(a)} -> {fmt_us(b)})")
        eo, so = rec["eager"].get("outside_us"), st.get("outside_us")
        if eo is not None and so is not None:
            out.append(f"  host time per call outside the kernels: eager {fmt_us(eo)}, CUDA graph with inputs in "
                       f"place {fmt_us(so)}: {fmt_us(eo - so)} saved" if eo >= so else
                       f"  host time per call outside the kernels: eager {fmt_us(eo)}, CUDA graph with inputs in "
                       f"place {fmt_us(so)}: no host time saved at this size")
        how = (cg.get("static") or {}).get("how")
        if how:
            out.append(f"  inputs in place: {how}; the same kernels, no copies")
    return out


def fmt_range(lo: float | None, hi: float | None) -> str:
    """'13.9-14.3 ms', '30.1 µs-16.0 ms': a percentile range, at most 16 characters."""
    if lo is None or hi is None:
        return "-"
    a, b = fmt_us(lo), fmt_us(hi)
    ua, ub = a.rsplit(" ", 1)[-1], b.rsplit(" ", 1)[-1]
    return f"{a.rsplit(' ', 1)[0]}-{b}" if ua == ub else f"{a}-{b}"


def run_lines(rec: dict[str, Any]) -> list[str]:
    cpu = (rec.get("device") or {}).get("device") != "cuda"
    out = header_lines(rec)
    ran = run_state_line(rec.get("run_state") or {})
    if ran:
        out.append(ran)
    measured_on = (rec.get("device") or {}).get("device")
    captured_on = rec.get("captured_on")
    if captured_on and measured_on and captured_on != measured_on:
        dev = "the CPU" if cpu else "the GPU"
        kind = "C++" if cpu else "Triton"
        out.append(f"re-captured for {dev}: this bundle was captured on {captured_on}, so the bench compiled the "
                   f"function again on {measured_on}; the kernels it measured are that compile's {kind} kernels, "
                   f"the counts and the kernel table's names are the {captured_on} capture's")
    out += ceiling_lines(rec.get("ceilings") or {})
    out.append("inputs " + ", ".join(rec.get("inputs") or []) + f"   ({(rec.get('rotation') or {}).get('why', '')})")
    out += record_lines(rec)  # a bench of the bundle alone: what ran, on which synthetic inputs
    out.append("")
    out += counts_lines(rec["counts"])
    out.append("")
    out.append(f"Measured per call{' (CPU)' if cpu else ''}: {rec.get('timer', '')}")
    # 75 columns: the bench view at 80 shows the runs column whole (78 cut its last digit).
    out.append(f"  {'':<9}{'launches':>9}{'end-to-end':>12}{'p10-p90':>17}{'in kernels':>12}{'outside':>9}"
               f"{'runs':>5}")
    over = []
    for side in ("eager", "compiled"):
        d = rec[side]
        e2e = d["e2e"]
        kernels = fmt_us(d["kernel_us"])
        if e2e.get("median_us") and d["kernel_us"] > e2e["median_us"]:
            kernels += "*"
            over.append(side)
        out.append(f"  {side:<9}{d['launches_per_call']:>9g}{fmt_us(e2e.get('median_us')):>12}"
                   f"{fmt_range(e2e.get('p10_us'), e2e.get('p90_us')):>17}"
                   f"{kernels:>12}{fmt_us(d['outside_us']):>9}{e2e.get('runs', 0):>5}")
    if over:
        out.append(f"  * {' and '.join(over)}: in kernels exceeds end-to-end: the profiler's times include its own "
                   "cost per op (the end-to-end runs are not profiled), so outside is not shown; the per-op times "
                   "compare with each other, not with end-to-end")
    eg, cp = rec["eager"]["e2e"].get("median_us"), rec["compiled"]["e2e"].get("median_us")
    if eg and cp:
        verdict = "compiled is faster" if cp < eg else "compiling does not pay at this size"
        out.append(f"  speedup {eg / cp:.2f}x: {verdict}   (compile + first call {rec.get('compile_s')} s"
                   f"{compile_cache_note(rec)})")
    out.append("  end-to-end: median of the runs, p10-p90 the range of the middle 80%; in kernels: " + rec.get("kernel_source", "") +
               "; outside = end-to-end - in kernels")
    if rec["eager"].get("loop", {}).get("median_us") and rec["compiled"].get("loop", {}).get("median_us"):
        le, lc = rec["eager"]["loop"], rec["compiled"]["loop"]
        out.append(f"  back to back (a loop of calls, no sync between them): eager {fmt_us(le['median_us'])}, "
                   f"compiled {fmt_us(lc['median_us'])} per call, speedup {le['median_us'] / lc['median_us']:.2f}x "
                   f"(median of {le['runs']} batches)")
    out += host_lines(rec)
    for side in ("eager", "compiled"):
        out.append("")
        out.append(f"{side} kernels{' (CPU ops)' if cpu else ''}, per call (profiler, "
                   f"{rec[side]['profile_calls']} calls)")
        for k in rec[side]["kernels"]:
            out.append(f"  {k['per_call']:>4g}x {fmt_us(k['us_per_call']):>9}  {short_name(k['name'], 66)}")
    out.append("")
    if rec.get("per_launch_skipped"):
        out.append(rec["per_launch_skipped"])
        for section in (explained_lines(rec), cudagraph_lines(rec)):
            if section:
                out += ["", *section]
        return out + correctness_lines(rec)
    out.append("compiled launches: bytes from the bundle's buffers, time from the profiler (the device kernels "
               f"each launch's op ran, {rec.get('per_launch_statistic') or 'mean of the profiled calls'})")
    rows = rec.get("per_kernel", [])
    flushed = any(r.get("us_flushed") is not None for r in rows)
    out.append(f"  {'kernel':<44}{'time':>9}{'L2 flushed' if flushed else '':>{14 if flushed else 0}}{'read':>11}"
               f"{'written':>10}{'GB/s':>8}{'%copy':>7}  FLOP/s")
    flags: set[str] = set()
    for r in rec.get("per_kernel", []):
        if r.get("flag"):
            flags.add(r["flag"])
        flops = ""
        if r.get("tflops") is not None:
            flops = f"{fmt_rate(r['tflops'])} TF"
            if r.get("pct_matmul") is not None:
                flops += f" {r['pct_matmul']:.0f}% of mm"
                if r["pct_matmul"] > 100:
                    flops += "^"
                    flags.add("above_matmul")
        gbps = fmt_rate(r.get("gbps"))
        pct = _pct(r.get("pct_copy"), r.get("flag", ""))
        cold = ""
        if flushed:
            cold = "" if r.get("us_flushed") is None else fmt_us(r["us_flushed"]) + (
                f" {r['pct_copy_flushed']:.0f}%" if r.get("pct_copy_flushed") is not None else "")
            cold = f"{cold:>14}"
        out.append(f"  {short_name(r['name'], 43):<44}{fmt_us(r.get('us')):>9}{cold}"
                   f"{_bytes(r.get('bytes_read'), r.get('moved_bound')):>11}"
                   f"{fmt_bytes(r.get('bytes_written')):>10}{gbps:>8}{pct:>7}  {flops}")
        if r.get("measured_as") and r["measured_as"] != [r["name"]]:
            out.append(f"    measured as: {', '.join(short_name(n, 60) for n in r['measured_as'])}")
    out += flag_lines(flags)
    l2 = rec.get("l2_flushed") or {}
    if l2.get("how") and flushed:
        out.append(f"  L2 flushed: {l2['how']}; time: as in the call (what the sums add up)")
    elif l2.get("skipped"):
        out.append(f"  no L2-flushed times: {l2['skipped']}")
    for section in (sum_check_lines(rec), where_lines(rec), explained_lines(rec), cudagraph_lines(rec)):
        if section:
            out += ["", *section]
    return out + correctness_lines(rec)


def sweep_lines(rec: dict[str, Any], width: int = 24) -> list[str]:
    cpu = (rec.get("device") or {}).get("device") != "cuda"
    out = header_lines(rec)
    out.append(f"Sweep{' (CPU)' if cpu else ''}: {rec.get('scaled')}; {rec.get('compiled_per_size')}")
    rows = rec.get("rows", [])
    top = 1.15 * max([r.get("speedup") or 0 for r in rows] + [1.0])  # room to show the 1x mark
    out.append(f"  {'size':>10}{'elements':>12}{'eager':>10}{'compiled':>10}{'speedup':>9}  (bar: speedup, | = 1x)")
    one = int(round(width * 1.0 / top))
    for r in rows:
        if r.get("error"):
            out.append(f"  {r['size']:>10}  error: {r['error']}")
            continue
        s = r.get("speedup") or 0
        b = bar(s, top, width)
        b = (b + " " * width)[:width]
        b = b[:one] + "|" + b[one + 1:] if one < width else b
        out.append(f"  {r['size']:>10}{r.get('elements', 0):>12}{fmt_us(r.get('eager_us')):>10}"
                   f"{fmt_us(r.get('compiled_us')):>10}{s:>8.2f}x  {b}")
    cross = rec.get("crossover")
    if cross:
        out.append(f"  compiling pays from size {cross['size']} ({cross['elements']} elements) upward")
    elif rows:
        out.append("  compiling did not pay at any size measured")
    return out


def kernel_lines(rec: dict[str, Any]) -> list[str]:
    out = header_lines(rec)
    out.append(f"One kernel: {rec['name']}  ({rec.get('timer')}; {rec.get('data')})")
    out.append(f"  {'config':<9}{'block sizes':<26}{'warps':>6}{'stages':>7}{'time':>10}{'GB/s':>8}{'%copy':>7}"
               f"{'regs':>6}  same result")
    for r in rec["runs"]:
        blocks = " ".join(f"{k}={v}" for k, v in r["kwargs"].items())
        gbps = fmt_rate(r.get("gbps"))
        pct = f"{r['pct_copy']:.0f}%" if r.get("pct_copy") is not None else "-"
        same = "" if r.get("same_result") is None else ("yes" if r["same_result"] else "NO")
        out.append(f"  {r['config']:<9}{blocks:<26}{r['num_warps']:>6}{r['num_stages']:>7}{fmt_us(r['median_us']):>10}"
                   f"{gbps:>8}{pct:>7}{r.get('n_regs') if r.get('n_regs') is not None else '-':>6}  {same}")
    runs = rec["runs"]
    if len(runs) == 2 and runs[0]["median_us"] and runs[1]["median_us"]:
        out.append(f"  changed / recorded time: {runs[1]['median_us'] / runs[0]['median_us']:.2f}x   "
                   f"bytes moved {fmt_bytes(rec.get('bytes_moved'))}")
    return out


def bench_text(bench: dict[str, Any] | None, counts: dict[str, Any] | None = None) -> str:
    """Everything stored, or the computed counts alone when no bench has run."""
    bench = bench or {}
    out: list[str] = []
    if "run" in bench:
        out += run_lines(bench["run"])
    elif counts is not None:
        out += counts_lines(counts)
        out.append("")
        out.append("No bench has run on this capture: `kernelscope bench BUNDLE` (or r in the Bench view) measures it.")
    if "sweep" in bench:
        out += ["", *sweep_lines(bench["sweep"])]
    for rec in (bench.get("kernels") or {}).values():
        out += ["", *kernel_lines(rec)]
    return "\n".join(out)
