"""Why the computed and measured figures differ (pure): kernel counts side by side with the
difference named, and the flag a rate above the copy ceiling must carry."""

from __future__ import annotations

from typing import Any

from kernelscope.bench.launches import is_memset


def rate_flag(pct_copy: float | None, bound: bool | None) -> str:
    """'' for a plain figure; 'bound' when the bytes are an upper bound (a gather: repeated rows are
    read once); 'cache' for a figure above the measured copy ceiling with exact bytes (the data came
    from cache, not memory: reuse between or within kernels)."""
    if bound:
        return "bound"
    if pct_copy is not None and pct_copy > 100:
        return "cache"
    return ""


FLAG_NOTES = {
    "bound": "<= bytes are an upper bound (a gather reads at most its index count of rows; repeated ids are "
             "read once), so the rate is at most this",
    "cache": "above the copy ceiling: the bytes are exact, so part of them came from cache (reuse between or "
             "within kernels), not from memory",
    "cache_measured": "above the copy ceiling as in the call: part of its input came from L2 (written by the "
                      "kernel before it); 'L2 flushed' is the same launch with L2 flushed first, its input from memory",
    "above_matmul": "above the matmul ceiling, which is one square matmul of that dtype (the fastest of its runs, "
                    "'matmul ceiling' above): this launch's shape or library path ran faster than the square one "
                    "did, or the host was busier when the ceiling was measured; --remeasure measures it again",
}


def explain_counts(counts: dict[str, Any], rec: dict[str, Any], unclaimed: list[dict[str, Any]],
                   bundle: Any = None) -> dict[str, Any]:
    """Computed (from the graphs) and measured (profiler, per call) kernel counts for eager and
    compiled, with each part of the difference named."""
    out: dict[str, Any] = {}
    # eager: ops of the graph vs device kernels (or top-level ATen ops on a CPU)
    computed = counts["eager"]["kernels"]
    measured = rec["eager"]["launches_per_call"]
    kernels = rec["eager"]["kernels"]
    memsets = sum(k["per_call"] for k in kernels if is_memset(k["name"]))
    reasons = []
    if memsets:
        reasons.append(f"{memsets:g} memset/memcpy kernels per call (zeroing or copying buffers; no op of the graph)")
    rest = measured - memsets - computed
    device = rec.get("device")
    on_cpu = isinstance(device, dict) and device.get("device") == "cpu"
    if rest > 0:
        several = ("top-level ATen calls the graph does not list as ops (the CPU profiler counts calls, not kernels)" if on_cpu
                   else "library ops that run several kernels (cuBLAS split-K + reduce, attention, layer norm "
                        "forward)")
        reasons.append(f"{rest:g} more kernels than ops: {several} or ops the graph shows as one call")
    elif rest < 0:
        reasons.append(f"{-rest:g} ops launched nothing measured: views and reshapes of contiguous tensors, "
                       "ops on Python numbers, or ops fused inside another library call (linear = addmm)")
    out["eager"] = {"computed": computed, "measured": measured, "reasons": reasons or ["they agree"]}
    # compiled: the bundle's launches vs device kernels, from the per-launch match
    rows = rec.get("per_kernel") or []
    computed = counts["compiled"]["kernels"]
    measured = rec["compiled"]["launches_per_call"]
    untimed = [r for r in rows if r.get("us") is None]
    several = [r for r in rows if len(r.get("measured_as") or []) > 1]
    extra = sum(len(r["measured_as"]) - 1 for r in several)
    reasons = []
    if several:
        names = sorted({r["name"] for r in several})
        reasons.append(f"+{extra:g}: {len(several)} launches ran several device kernels each ("
                       + ", ".join(names[:3]) + (" ..." if len(names) > 3 else "") + ": library kernels such as "
                       "cuBLAS split-K + reduce, or a workspace memset)")
    mode = ((bundle.options if bundle is not None else {}) or {}).get("mode") or ""
    copies = (rec.get("cudagraphs") or {}).get("copies")
    if copies and copies.get("kernels_per_call"):
        what = f"{copies['tensors']} input tensors" if copies.get("tensors") is not None else "the inputs"
        reasons.append(f"+{copies['kernels_per_call']:g}: CUDA-graph input copies ({what} copied into the graph's "
                       f"static buffers before each replay: {', '.join(n['name'][:50] for n in copies['names'])})")
    for u in unclaimed:
        what = ("a CUDA-graph input copy" if "memcpy" in u["name"].lower() and "reduce-overhead" in mode else
                "a memset/memcpy the output code does not list as a launch" if u.get("memset") else
                "a kernel no launch of the bundle claimed")
        reasons.append(f"+{u['per_call']:g}: {u['name'][:60]} ({what})")
    if untimed:
        reasons.append(f"-{len(untimed)}: launches no device kernel was matched to ("
                       + ", ".join(sorted({r['name'] for r in untimed})[:3]) + "): they ran nothing on the device, "
                       "or ran under other names")
    out["compiled"] = {"computed": computed, "measured": measured, "reasons": reasons or ["they agree"]}
    return out
