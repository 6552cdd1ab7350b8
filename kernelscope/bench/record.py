"""The stored bench record (no torch): the child's raw measurements turned into what
``bundle.extra["bench"]`` keeps (per-call figures, every compiled launch timed and rated against the
ceilings, the sum check, where the time goes, the counts explained, CUDA-graph replays), merged into
the bundle and saved. bench/runner.py builds the request and runs the child; this reads what it wrote.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from kernelscope.bench import analysis, bundle_plan
from kernelscope.bench.counts import compiled_side
from kernelscope.bench.explain import explain_counts, rate_flag
from kernelscope.bench.launches import (
    GRAPH_LAUNCH,
    copy_summary,
    named_times,
    split_graph_replay,
    sum_check,
    where_time_goes,
)
from kernelscope.bench.launches import match as match_launches
from kernelscope.bundle.io import BundleError, read_bundle, save_manifest
from kernelscope.bundle.model import Bundle

RECORD_VERSION = 1


def bundle_device(bundle: Bundle) -> str:
    # An opened trace records no device: its C++ kernels say CPU.
    return bundle.options.get("device") or bundle.environment.get("device") or (
        "cpu" if any(k.lang == "cpp" for k in bundle.kernels) else "cuda")


def _header(raw: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    return {"version": RECORD_VERSION, "ran_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "device": raw["device"],
            "clocks": {"before": raw.get("clocks_before"), "after": raw.get("clocks_after")},
            "versions": raw.get("versions"), "settings": raw.get("settings"), "seconds": raw.get("seconds")}


def _ceiling_view(raw: dict[str, Any]) -> dict[str, Any]:
    c = raw.get("ceilings") or {}
    return {"copy": c.get("copy"), "matmul": c.get("matmul", {}), "cache": c.get("cache"), "key": c.get("key")}


def build_record(bundle: Bundle, request: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
    """What is stored for the sections the child measured: {"run": ..., "sweep": ..., "kernels": {...}}."""
    out: dict[str, Any] = {}
    header = _header(raw, request)
    ceil = _ceiling_view(raw)
    if "run" in raw:
        out["run"] = {**header, "ceilings": ceil, **_run_record(bundle, raw["run"], ceil, request["device"])}
    if "sweep" in raw:
        out["sweep"] = {**header, **raw["sweep"]}
    if "kernel" in raw:
        out["kernels"] = {raw["kernel"]["name"]: {**header, "ceilings": ceil,
                                                  **_kernel_record(bundle, raw["kernel"], ceil)}}
    return out


def _run_record(bundle: Bundle, run: dict[str, Any], ceil: dict[str, Any], device: str) -> dict[str, Any]:
    alone = run.get("from_bundle")  # the bundle's own code ran: eager is its AOT/post-grad graphs
    counts = bundle_plan.computed_counts(bundle)  # a bundle benched alone has no function: eager from its AOT graphs
    named = {k.name for k in bundle.kernels if k.lang in ("triton", "cpp")}
    rec: dict[str, Any] = {"counts": counts, "inputs": run.get("inputs"), "compile_s": run.get("compile_s"),
                           "compile_cache": run.get("compile_cache"),
                           # the capture's own compile, where it compiled what the bench ran (not a preview's)
                           "capture_compile_s": (None if bundle.preview or alone or bundle_device(bundle) != device
                                                 else (bundle.timings or {}).get("compile_and_first_call")),
                           "correctness": run.get("correctness"), "rotation": run.get("rotation"),
                           "pinned_cpu": run.get("pinned_cpu"),
                           "captured_on": device if alone else bundle_device(bundle), "notes": []}
    if alone:
        rec["from_bundle"] = alone
        rec["notes"].append(alone.get("synthetic", bundle_plan.SYNTHETIC))
    for side in ("eager", "compiled", "compiled_static"):
        if side not in run:
            continue
        data = run[side]
        calls = data["profile_calls"]
        seq = [(r[0], r[1]) for r in data["sequence"]]
        kernels = analysis.per_call_kernels(seq, calls)
        kernel_us = round(sum(k["us_per_call"] for k in kernels), 3)
        e2e = data["e2e"]
        outside = round(e2e["median_us"] - kernel_us, 3) if e2e.get("median_us") else None
        if outside is not None and outside < 0:
            outside = None  # the table marks it and says why
        rec[side] = {"e2e": e2e, "loop": data.get("loop") or {}, "kernels": kernels,
                     "launches_per_call": round(len(seq) / calls, 3), "kernel_us": kernel_us,
                     "outside_us": outside, "profile_calls": calls,
                     "host_launches": {k: round(v / calls, 3) for k, v in (data.get("host_launches") or {}).items()}}
    # Per compiled launch: the device kernels its op ran (every launch, repeated ones too), bytes from
    # the bundle, rate against the ceilings.
    copy_gbps = (ceil.get("copy") or {}).get("gbps")
    launches = compiled_side(bundle).launches
    calls = run["compiled"]["profile_calls"]
    replayed, copy_events = split_graph_replay(run["compiled"]["sequence"], named)
    # On a CPU a profiled call the OS preempted is 1000x slower than the rest: one launch's time is
    # its median over the calls there (and the total, the medians' sum); on a GPU the mean, which
    # adds up to the profiler's device total.
    matched = match_launches([x.name for x in launches], named, replayed, calls, median=device != "cuda")
    copies = copy_summary(copy_events, calls, (run.get("cudagraphs") or {}).get("copied"))
    per_launch = []
    for launch, m in zip(launches, matched["per_launch"]):
        us = m["us"]
        moved = (launch.bytes_read or 0) + (launch.bytes_written or 0) if launch.bytes_read is not None \
            and launch.bytes_written is not None else None
        gbps = analysis.rate(moved, us)
        pct = analysis.percent(gbps, copy_gbps)
        row = {"kernel_id": launch.kernel_id, "name": launch.name, "kind": launch.op, "measured_as": m["kernels"],
               "us": round(us, 3) if us is not None else None, "bytes_read": launch.bytes_read,
               "bytes_written": launch.bytes_written, "moved": moved, "moved_bound": launch.bytes_bound,
               "gbps": _sig(gbps), "pct_copy": _round(pct), "flops": launch.flops,
               "flag": rate_flag(pct, launch.bytes_bound)}
        if launch.flops and us:
            tflops = launch.flops / (us * 1e-6) / 1e12
            dtype = next((t.dtype for t in launch.transfers if t.role == "write"), "")
            mm = ceil.get("matmul", {})
            top = next((v for k, v in mm.items() if k.split("+")[0] == dtype), None)
            row.update(tflops=float(f"{tflops:.3g}"), pct_matmul=_round(analysis.percent(tflops, (top or {}).get("tflops"))),
                       matmul_ceiling=(top or {}).get("tflops"))
        per_launch.append(row)
    flushed = run.get("compiled_flushed") or {}
    if flushed.get("sequence"):
        times = named_times([x.name for x in launches], named, [(r[0], float(r[1])) for r in flushed["sequence"]],
                            flushed["calls"])
        for row, us in zip(per_launch, times):
            if us is not None and row["us"] is not None:
                row["us_flushed"] = round(us, 3)
                row["pct_copy_flushed"] = _round(analysis.percent(analysis.rate(row["moved"], us), copy_gbps))
                if row["flag"] == "cache":
                    row["flag"] = "cache_measured"  # both figures shown: no guess
    rec["l2_flushed"] = {k: flushed[k] for k in ("how", "skipped") if k in flushed}
    total = matched["total_us"] + (copies["us"] if copy_events else 0.0)
    rec["sum_check"] = sum_check([r["us"] for r in per_launch], total,
                                 copies_us=copies["us"] if copy_events else 0.0,
                                 memsets_us=sum(u["us"] for u in matched["unclaimed"] if u.get("memset")))
    captured_on = ("a preview for " + bundle.preview["arch"] if bundle.preview else
                   "a capture on " + bundle_device(bundle))
    if bundle.preview or bundle_device(bundle) != device:
        # The bundle's launches are another compile's (a preview's Triton kernels, a GPU capture's):
        # nothing the bench measured is one of them, so per-launch times and their sum would be 0.
        rec["per_launch_skipped"] = (f"per-launch times: not matched: the bundle's launches are those of {captured_on}, "
                                     f"the bench compiled for {device} and measured that compile's kernels "
                                     "(listed per call above)")
        per_launch = [dict(r, us=None, gbps=None, pct_copy=None, flag="") for r in per_launch]
        rec["sum_check"] = None
    rec["unclaimed"] = [{**u, "us": round(u["us"], 3)} for u in matched["unclaimed"]]
    rec["where_time_goes"] = where_time_goes(per_launch, total, matched["unclaimed"], copies if copy_events else None)
    if "cudagraphs" in run:
        rec["cudagraphs"] = cudagraph_record(run, rec, copies if copy_events else None)
    for row in rec["where_time_goes"]:
        row["pct_copy"] = _round(analysis.percent(row.get("gbps"), copy_gbps))
        row["flag"] = rate_flag(row["pct_copy"], row.get("bytes_bound"))
    rec["per_kernel"] = per_launch  # before explain_counts, which reads each launch's measured kernels
    rec["counts_explained"] = explain_counts(rec["counts"], rec, matched["unclaimed"], bundle)
    ran = {"grad_mode": run.get("grad_mode"), "train": "eval" if run.get("eval") else "train",
           "holds_modules": run.get("holds_modules", True)}
    rec["run_state"] = ran
    recorded = bundle.options.get("grad_mode")
    if recorded and ran["grad_mode"] and recorded != ran["grad_mode"]:
        rec["notes"].append(f"the bundle was captured under {recorded}, the bench ran under {ran['grad_mode']}: "
                            "its compile may differ from the bundle's kernels (capture again with the same flags)")
    rec["per_kernel"] = per_launch
    rec["timer"] = ("CUDA events around each call, device idle at the start (guards, launches and Python count)"
                    if device == "cuda" else "wall clock (time.perf_counter_ns) around each call")
    rec["per_launch_statistic"] = ("mean of the profiled calls" if device == "cuda" else
                                   "median of the profiled calls (a preempted call does not count)")
    rec["kernel_source"] = ("torch.profiler device kernels" if device == "cuda" else
                            "torch.profiler CPU: top-level ATen ops, Inductor C++ kernels (a record_function around each)")
    return rec


def cudagraph_record(run: dict[str, Any], rec: dict[str, Any], copies: dict[str, Any] | None) -> dict[str, Any]:
    """Whether the compiled call replayed a CUDA graph (cudaGraphLaunch calls in the profile: one per
    replay), Inductor's skip reasons, the input copies before each replay, and the same call with its
    inputs in place."""
    cg = run["cudagraphs"]
    skips = [re.sub(r"^(?:skipping|disabling) cudagraphs? due to ", "", m).rstrip(". :").removesuffix(". Found from")
             for m in cg.get("skips") or []]
    out: dict[str, Any] = {"skips": skips, "skip_counter": cg.get("skip_counter", 0),
                           "copies": copies, "copied": cg.get("copied")}
    for side in ("compiled", "compiled_static"):
        if side not in rec:
            continue
        d = rec[side]
        calls = d["profile_calls"]
        graph_launches = d["host_launches"].get(GRAPH_LAUNCH, 0)
        replayed, side_copies = split_graph_replay(run[side]["sequence"], set())
        in_graph = sum(1 for r in run[side]["sequence"] if len(r) > 3 and (r[3] or {}).get("via") == GRAPH_LAUNCH)
        out[side] = {"graph_launches_per_call": graph_launches, "replays": round(graph_launches * calls),
                     "calls": calls, "graph_kernels_per_call": round(in_graph / calls, 3),
                     "copy_kernels_per_call": round(len(side_copies) / calls, 3),
                     "other_kernels_per_call": round((len(replayed) - in_graph) / calls, 3)}
    static = run.get("compiled_static") or {}
    if static:
        out["static"] = {"how": static.get("how"), "marked": static.get("marked"), "copied": static.get("copied"),
                         "compile_s": static.get("compile_s")}
    return out


def _kernel_record(bundle: Bundle, raw: dict[str, Any], ceil: dict[str, Any]) -> dict[str, Any]:
    k = bundle.kernel(raw["kernel_id"] or raw["name"])
    moved = (k.bytes_read or 0) + (k.bytes_written or 0) if k.bytes_read is not None else None
    copy_gbps = (ceil.get("copy") or {}).get("gbps")
    for r in raw["runs"]:
        gbps = analysis.rate(moved, r.get("median_us"))
        r["gbps"] = _sig(gbps)
        r["pct_copy"] = _round(analysis.percent(gbps, copy_gbps))
    return {**raw, "bytes_moved": moved}


def _round(x: float | None) -> float | None:
    return float(f"{x:.3g}") if x is not None else None


def _sig(x: float | None) -> float | None:
    return float(f"{x:.4g}") if x else None


def merge(bench: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """``bundle.extra["bench"]`` with a new record merged in (kernels by name, the rest replaced)."""
    bench = dict(bench or {})
    for key, value in record.items():
        if key == "kernels":
            kernels = dict(bench.get("kernels") or {})
            kernels.update(value)
            bench["kernels"] = kernels
        else:
            bench[key] = value
    return bench


def store(bundle_path: Path, record: dict[str, Any]) -> None:
    """Merge ``record`` into the bundle's ``extra["bench"]`` (read fresh, written atomically)."""
    bundle = read_bundle(bundle_path)
    bundle.extra["bench"] = merge(bundle.extra.get("bench") or {}, record)
    try:
        save_manifest(bundle, bundle_path)
    except OSError as exc:
        raise BundleError(f"{bundle_path}: cannot store the bench results ({exc})") from exc
