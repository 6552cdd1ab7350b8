"""The bench's findings in sentences (pure): where and how it ran (the device, its clocks and ceilings,
the host's speed, the grad mode), how the compile went, the per-launch sum check, the kernel counts
explained and the correctness verdict. bench/tables.py lays out the tables these lines sit between.
"""

from __future__ import annotations

from typing import Any

from kernelscope.bench.analysis import fmt_rate, fmt_us, short_name
from kernelscope.bundle.bench_record import measured_device


def compile_cache_note(rec: dict[str, Any]) -> str:
    """How the bench's compile went: Inductor's cache held the capture's graphs (capture/compile_cache.py),
    or it compiled anew; nothing where the bench did not count."""
    cache = rec.get("compile_cache")
    if not isinstance(cache, dict):
        return ""
    hits, misses = cache.get("hits") or 0, cache.get("misses") or 0
    if hits and not misses:
        took, now = rec.get("capture_compile_s"), rec.get("compile_s")
        then = ""
        if isinstance(took, (int, float)):
            # Never a slower load called the fast path: say it was not faster, and what the time holds.
            then = (f"; the capture's compile and first call took {took:.1f} s"
                    if not isinstance(now, (int, float)) or now < took else
                    f", yet took no less than the capture's compile and first call ({took:.1f} s): Dynamo's "
                    "trace, loading the kernels and the first call, on this host now")
        return f": Inductor's cache held the capture's compiled graph{'s' if hits > 1 else ''}{then}"
    if hits:
        return f": {hits} graph{'s' if hits > 1 else ''} from Inductor's cache, {misses} compiled anew"
    return ": compiled anew" if misses else ""


def sum_check_lines(rec: dict[str, Any]) -> list[str]:
    c = rec.get("sum_check")
    if not c:
        return []
    verdict = "OK" if c["ok"] else "MISMATCH"
    extras = [(what, c[key]) for key, what in (("copies_us", "CUDA-graph input copies"),
                                               ("memsets_us", "memsets no launch names")) if c.get(key)]
    copies = "".join(f" + {what} {fmt_us(us)}" for what, us in extras)
    if extras:
        copies += f" = {fmt_us(c['launches_us'] + sum(us for _, us in extras))}"
    line = (f"sum check {verdict}: per-launch times add up to {fmt_us(c['launches_us'])}{copies} per call, the "
            f"profiler's device total is {fmt_us(c['total_us'])} ({c['diff_pct']:+.1f}%, within 1% is OK); "
            f"{c['launches'] - c['untimed']} of {c['launches']} launches timed")
    out = [line]
    for u in rec.get("unclaimed") or []:
        out.append(f"  not a launch of the bundle: {u['per_call']:g}x {short_name(u['name'], 50)} {fmt_us(u['us'])} per call")
    return out


def explained_lines(rec: dict[str, Any]) -> list[str]:
    ex = rec.get("counts_explained")
    if not ex:
        return []
    out = ["Kernel counts per call: computed from the graphs vs measured by the profiler",
           f"  {'':<10}{'computed':>9}{'measured':>10}  why they differ"]
    for side in ("eager", "compiled"):
        d = ex[side]
        reasons = d["reasons"]
        out.append(f"  {side:<10}{d['computed']:>9}{d['measured']:>10g}  {reasons[0]}")
        out += [f"  {'':<29}{r}" for r in reasons[1:]]
    return out


def header_lines(rec: dict[str, Any]) -> list[str]:
    dev = rec.get("device") or {}
    v = rec.get("versions") or {}
    where = measured_device(dev) or "?"
    label = "GPU" if dev.get("device") == "cuda" else "CPU"
    out = [f"{label}: {where}  torch {v.get('torch')}  triton {v.get('triton')}  python {v.get('python')}"
           + (f"  cuda {v.get('cuda')}" if dev.get("device") == "cuda" else "")
           + f"  ({rec.get('ran_at', '')})"]
    clocks = rec.get("clocks") or {}
    parts = []
    for when in ("before", "after"):
        c = clocks.get(when) or {}
        smi = c.get("nvidia_smi")
        if smi:
            parts.append(f"{when}: SM {smi.get('clocks.sm')}/{smi.get('clocks.max.sm')} MHz, "
                         f"mem {smi.get('clocks.mem')} MHz, {smi.get('temperature.gpu')} C, {smi.get('power.draw')} W")
        elif c.get("cpu_mhz"):
            mhz = c["cpu_mhz"]
            parts.append(f"{when}: {min(mhz)}-{max(mhz)} MHz")
        elif c.get("nvidia_smi_error"):
            parts.append(f"{when}: nvidia-smi failed ({c['nvidia_smi_error'][:60]})")
    if parts:
        out.append("clocks " + "; ".join(parts))
    return out


def ceiling_lines(ceil: dict[str, Any]) -> list[str]:
    out = []
    copy = ceil.get("copy")
    if copy:
        out.append(f"copy ceiling {fmt_rate(copy['gbps'])} GB/s (measured {copy.get('measured_at', '')}: "
                   f"{copy['method']})")
    for key, mm in (ceil.get("matmul") or {}).items():
        if mm.get("tflops"):
            out.append(f"matmul ceiling {key} {fmt_rate(mm['tflops'])} TFLOP/s ({mm['method']})")
        else:  # a ceiling of 0 would make every % of it infinite: none is said to be none
            out.append(f"matmul ceiling {key}: none measured ({mm.get('method', '')})")
    return out


def host_lines(rec: dict[str, Any]) -> list[str]:
    """How fast the host ran while timing: which blocks the figures above come from."""
    hosts = {side: (rec[side].get("e2e") or {}).get("host") for side in ("eager", "compiled")}
    if not all(hosts.values()):
        return []
    ref = hosts["eager"].get("probe_reference_us")
    slack = round(100 * (hosts["eager"].get("slack", 1.0) - 1))
    parts = []
    for side, h in hosts.items():
        share = 100 * h["full_speed_blocks"] / h["blocks"] if h["blocks"] else 0
        parts.append(f"{side} {h['full_speed_blocks']}/{h['blocks']} blocks ({share:.0f}%)")
    out = [f"  host speed: a Python probe before each block of calls (fastest seen here {ref} µs); blocks with "
           f"the host within {slack}% of that: " + ", ".join(parts)]
    gated = [side for side, h in hosts.items() if h["gated"]]
    every = [side for side, h in hosts.items() if not h["gated"]]
    if gated:
        out.append(f"  end-to-end of {' and '.join(gated)}: from those blocks (all blocks: "
                   + ", ".join(f"{side} {fmt_us(hosts[side]['all_median_us'])}" for side in gated) + ")")
    if every:
        out.append(f"  end-to-end of {' and '.join(every)}: every block (fewer than half ran at full speed; the "
                   "bench does not wait for a quiet host, so end-to-end may be slower than this machine can do"
                   + ("; per-launch times and sums are device-side and do not depend on it)"
                      if (rec.get("device") or {}).get("device") == "cuda" else ")"))
    return out


def run_state_line(ran: dict[str, Any]) -> str:
    """'ran under no_grad, eval (...)', only the parts that apply: the grad mode where it is not plain
    grad or the call has modules with parameters, the train state where the target holds modules."""
    if not ran.get("grad_mode"):
        return ""
    modules = ran.get("holds_modules", True)  # records from before this field: as they printed
    parts = []
    if ran["grad_mode"] != "grad" or modules:
        parts.append(ran["grad_mode"])
    if modules:
        parts.append(ran.get("train") or "train")
    if not parts:
        return ""
    return (f"ran under {', '.join(parts)} (as --no-grad / --inference-mode / --eval, or the bundle's recorded "
            "options, say)")


def correctness_lines(rec: dict[str, Any]) -> list[str]:
    """The correctness verdict, what was compared, its problems, and the record's notes."""
    out = []
    c = rec.get("correctness") or {}
    if c:
        out.append("")
        out.append(verdict_line(c))
        out.append(f"  compared {c.get('compared')} (seed {c.get('seed')}); NaN eager {c.get('nan_eager')} / "
                   f"compiled {c.get('nan_compiled')}")
        problems = c.get("problems") or []
        for p in problems[:8]:
            out.append(f"  {p}")
        if len(problems) > 8:  # a training graph has dozens of outputs: the first say what is wrong
            out.append(f"  … and {len(problems) - 8} more (bundle.json: extra.bench.run.correctness.problems)")
    for note in rec.get("notes", []):
        out.append(f"note: {note}")
    return out


def verdict_line(c: dict[str, Any]) -> str:
    """One line: the verdict, both errors against float64 (or the fallback and why) and the rule."""
    if c.get("judged") is False:  # outputs that differ by design (random numbers drawn apart): no verdict
        return f"correctness NOT JUDGED: {c.get('not_judged') or 'the outputs differ by design'}"
    status = "OK" if c.get("ok") else "MISMATCH"
    head = f"correctness {status}: "
    if c.get("compiled_rmse") is not None:
        ref = c.get("reference") if c.get("reference") not in (None, "none") else "float64"
        errors = (f"compiled rmse {c['compiled_rmse']:.3g} (max abs {c['compiled_max_abs']:.3g}), eager rmse "
                  f"{c['eager_rmse']:.3g} (max abs {c['eager_max_abs']:.3g})")
        if isinstance(c.get("reference_rms"), (int, float)):  # records before this field say no scale
            errors += f", on values of rms {c['reference_rms']:.3g}"
        if c.get("ok") and c.get("allclose_tol") is not None:
            # Every tensor matched eager closely: that decided, and the float64 errors are what it looked like.
            n = c.get("within_allclose") or c.get("tensors")
            return (head + f"compiled matches eager within {c['allclose_tol']:g} (allclose) in all {n} tensors "
                    f"compared; against a {ref} run the furthest ({c.get('worst')}): {errors}")
        tail = ""
        if c.get("within_allclose"):
            tail = (f"; {c['by_rmse_rule']} tensor{'s' if c['by_rmse_rule'] != 1 else ''} judged by it, "
                    f"{c['within_allclose']} matched eager within allclose first")
        return head + f"vs a {ref} run ({c.get('worst')}): {errors}; rule: {c.get('rule')}{tail}"
    if c.get("rule"):
        why = f" ({c['no_reference']})" if c.get("no_reference") else ""
        return (head + f"compiled vs eager: max abs err {c.get('max_abs_err'):.3g}, max rel err "
                f"{c.get('max_rel_err'):.3g}; no float64 reference{why}; rule: {c['rule']}")
    return (head + f"max abs err {c.get('max_abs_err'):.3g}, max rel err {c.get('max_rel_err'):.3g} "
            f"({c.get('rel_err_is')})")
