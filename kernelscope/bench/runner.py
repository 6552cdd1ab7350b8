"""Parent side of a bench (no torch): build the request from a bundle, spawn the child, stream its
progress, turn its raw measurements into the stored record and save it in ``bundle.extra["bench"]``.

``bundle.extra["bench"]`` holds one record per kind of run: ``run`` (eager vs compiled), ``sweep``
and ``kernels`` (one-kernel reruns by kernel name). Each record carries its own device, clocks
before and after, versions and settings.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelscope.bench import analysis, bundle_plan
from kernelscope.bench.counts import count_bundle, counts_dict
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
from kernelscope.bundle.io import BundleError, read_bundle, read_text, save_manifest
from kernelscope.bundle.model import Bundle
from kernelscope.capture import compile_cache
from kernelscope.capture.job import ChildJob, make_work_dir
from kernelscope.capture.spec import TARGET_KEYS, calls_from_text
from kernelscope.target import TargetError

RECORD_VERSION = 1


@dataclass
class BenchSettings:
    device: str | None = None  # None: the device the bundle was captured on
    warmup: int = 10
    reps: int = 100  # at least this many timed calls per side ...
    budget_s: float = 0.5  # ... and more, up to 10x, while this budget (per side) lasts; long calls: >= 20 calls
    profile_calls: int = 10
    sweep: bool = False
    sizes: list[int] | None = None
    sweep_reps: int = 30
    sweep_budget_s: float = 0.3
    kernel: str | None = None
    changes: dict[str, int] = field(default_factory=dict)
    kernel_rep_ms: int = 200
    remeasure: bool = False
    timeout: float | None = None
    run_bundle_code: bool = False  # the user agreed to run a bundle's own output code and FX graphs
    save: bool = True  # store the record in the bundle (when the bundle can be written)
    grad_mode: str | None = None  # "grad", "no_grad", "inference_mode"; None: as the bundle was captured
    eval: bool | None = None  # module.eval() first; None: as the bundle was captured
    run_bundled_source: bool = False  # the user agreed to run the bundle's copy of the captured file

    def sections(self) -> list[str]:
        if self.kernel:
            return ["kernel"]
        return ["sweep"] if self.sweep else ["run"]


class BenchError(Exception):
    """A bench that could not run; one line for the user."""


@dataclass
class BenchResult:
    status: str  # "ok", "failed", "cancelled", "crashed"
    message: str = ""
    record: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    saved_to: str = ""  # the bundle.json the record went into; '' when not saved
    not_saved: str = ""  # why not, one line ("--no-save", "... is read-only")


def ceilings_cache_path() -> Path:
    from kernelscope.environment import cache_dir

    return cache_dir() / "ceilings.json"


def bundle_device(bundle: Bundle) -> str:
    # An opened trace records no device: its C++ kernels say CPU.
    return bundle.options.get("device") or bundle.environment.get("device") or (
        "cpu" if any(k.lang == "cpp" for k in bundle.kernels) else "cuda")


def _target_request(bundle: Bundle, run_bundled_source: bool = False) -> dict[str, Any]:
    t = bundle.target
    if not t.get("file") or not t.get("name"):
        kind = t.get("kind", "")
        raise BenchError(f"{bundle.root}: this bundle has no function to rerun"
                         f"{' (it was read from a ' + kind + ')' if kind else ''}; bench a capture of a "
                         "function, e.g. `kernelscope bench add_relu`")
    file = t["file"]
    if not Path(file).is_file():
        # A bundle moved to another machine carries a copy of the user's file: rerun that.
        copy = Path(bundle.root) / bundle.source["path"] if bundle.source.get("path") else None
        if copy is None or not copy.is_file():
            raise BenchError(f"{bundle.root}: the captured function's file {t['file']} is not on this machine")
        if not run_bundled_source:  # a received bundle's code is its sender's: never run it unasked
            raise BenchError(f"{bundle.root}: the captured function's file {t['file']} is not on this machine; "
                             f"the bundle carries a copy, {copy}, whose code its sender wrote: read it, then pass "
                             "--run-bundled-source to bench it")
        file = str(copy)
    args = None
    if t.get("args"):
        try:
            args = calls_from_text(t["args"])[0]
        except TargetError as exc:
            raise BenchError(f"{bundle.root}: recorded --args do not parse: {exc}") from exc
    target = {k: t.get(k) for k in TARGET_KEYS}
    target["file"] = file
    return {"target": target, "args": args}


def _kernel_request(bundle: Bundle, key: str, changes: dict[str, int]) -> dict[str, Any]:
    try:
        k = bundle.kernel(key)
    except KeyError as exc:
        raise BenchError(str(exc).strip("'\"")) from exc
    if k.lang != "triton":
        raise BenchError(f"{k.name} is a {k.lang} kernel; only Triton kernels can be rerun alone")
    text = read_text(bundle, k.source)
    if not text:
        raise BenchError(f"{k.name}: its source is not in the bundle")
    if not k.call_text:
        raise BenchError(f"{k.name}: the bundle does not record how it was launched")
    return {"name": k.name, "kernel_id": k.id, "source_text": text, "call_text": k.call_text,
            "buffers": [{"name": b.name, "role": b.role, "shape": b.shape, "stride": b.stride, "dtype": b.dtype,
                         "bytes": b.bytes} for b in k.buffers], "changes": changes}


def run_options(bundle: Bundle, s: BenchSettings) -> dict[str, Any]:
    """The compile options and the grad mode / train state the bench calls the function in: the
    bundle's recorded ones (the bench recompiles its target), unless the settings say otherwise."""
    opts = {k: bundle.options.get(k) for k in ("mode", "dynamic", "fullgraph", "backward")}
    rec = bundle.options
    grad = s.grad_mode or rec.get("grad_mode") or ("inference_mode" if rec.get("inference_mode") else
                                                   "no_grad" if rec.get("no_grad") else "grad")
    if opts.get("backward") and grad != "grad":
        raise BenchError(f"this bundle was captured with --backward: it cannot be benched under {grad}")
    opts["grad_mode"] = grad
    opts["no_grad"] = grad == "no_grad"
    opts["inference_mode"] = grad == "inference_mode"
    opts["eval"] = bool(s.eval if s.eval is not None else (rec.get("train") == "eval" or rec.get("eval")))
    return opts


def matmul_dtypes(bundle: Bundle) -> list[str]:
    _, compiled = count_bundle(bundle)
    dtypes = []
    for launch in compiled.launches:
        if launch.flops:
            writes = [t.dtype for t in launch.transfers if t.role == "write"]
            if writes and writes[0] not in dtypes:
                dtypes.append(writes[0])
    return dtypes


class Bench(ChildJob):
    """One bench of a bundle in a child process. ``run()`` blocks; ``cancel()`` works from any thread."""

    def __init__(self, bundle_path: str | os.PathLike, settings: BenchSettings | None = None, *,
                 python: str | None = None, on_event: Callable[[dict[str, Any]], None] | None = None):
        self.bundle_path = Path(bundle_path)
        self.settings = settings or BenchSettings()
        super().__init__(python, on_event)

    def request(self, bundle: Bundle, work: Path, event_fd: int) -> dict[str, Any]:
        s = self.settings
        plan = self._plan_alone(bundle)
        device = s.device or (plan[0].device if plan else bundle_device(bundle))
        req: dict[str, Any] = {
            "work": str(work), "result": str(work / "result.json"), "event_fd": event_fd, "t_spawn": time.time(),
            "device": device, "sections": s.sections(), "options": run_options(bundle, s),
            "settings": {"warmup": s.warmup, "reps": s.reps, "budget_s": s.budget_s, "profile_calls": s.profile_calls,
                         "sweep_reps": s.sweep_reps, "sweep_budget_s": s.sweep_budget_s,
                         "kernel_rep_ms": s.kernel_rep_ms},
            "sizes": s.sizes, "ceilings_cache": str(ceilings_cache_path()), "remeasure": s.remeasure,
            "matmul_dtypes": matmul_dtypes(bundle) if "run" in s.sections() else [],
            "target": {}, "args": None,
            # Inductor's cache entries of earlier captures (capture/compile_cache.py): the bench's compile
            # of a captured function loads the capture's code instead of compiling it again
            "compile_cache": str(compile_cache.folder()),
        }
        if "kernel" in s.sections():
            req["kernel"] = _kernel_request(bundle, s.kernel or "", s.changes)
        elif plan:
            req.update(plan[1])
        else:
            req.update(_target_request(bundle, s.run_bundled_source))
        return req

    def _plan_alone(self, bundle: Bundle) -> tuple[bundle_plan.BundlePlan, dict[str, Any]] | None:
        """A bundle with no function to rerun is benched from its own code (bench/bundle_plan.py)."""
        self.record_bundle = bundle
        if "run" not in self.settings.sections() or bundle_plan.has_function(bundle):
            return None
        try:
            plan = bundle_plan.bundle_request(bundle, self.settings.device, self.settings.run_bundle_code)
        except bundle_plan.PlanError as exc:
            raise BenchError(str(exc)) from exc
        self.record_bundle = bundle_plan.subset(bundle, plan[0])  # counts and launches of the graphs it runs
        return plan

    def run(self) -> BenchResult:
        t0 = time.time()
        bundle = read_bundle(self.bundle_path)
        work = make_work_dir("kernelscope-bench-")
        try:
            child = self._run_child("kernelscope.bench.child", work, lambda fd: self.request(bundle, work, fd),
                                    self.settings.timeout)
            request = child.request
            if child.timed_out:
                return BenchResult("failed", f"bench timed out after {self.settings.timeout:g} s (the child was "
                                   "stopped); nothing was stored", events=self.events, seconds=time.time() - t0)
            if self.cancelled:
                return BenchResult("cancelled", "bench cancelled; nothing was stored", events=self.events,
                                   seconds=time.time() - t0)
            result_path = work / "result.json"
            raw = json.loads(result_path.read_text(encoding="utf-8")) if result_path.is_file() else None
            if raw is None or "error" in (raw or {}):
                message = raw["error"] if raw else _crash_message(child.rc, child.stderr)
                return BenchResult("failed" if raw else "crashed", message, events=self.events,
                                   seconds=time.time() - t0)
            record = build_record(getattr(self, "record_bundle", bundle), request, raw)
            result = BenchResult("ok", "", record, self.events, time.time() - t0)
            if not self.settings.save:
                result.not_saved = "not saved (--no-save)"
            elif not writable(self.bundle_path):
                result.not_saved = f"not saved: {self.bundle_path} is read-only"
            else:
                try:
                    store(self.bundle_path, record)
                except BundleError as exc:
                    result.not_saved = f"not saved: {exc}"
                else:
                    result.saved_to = str(self.bundle_path / "bundle.json")
            return result
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _crash_message(rc: int, stderr: str) -> str:
    tail = [line for line in stderr.strip().split("\n") if line.strip()]
    return f"the bench process exited with status {rc}" + (f": {tail[-1][:300]}" if tail else "")


# ---------------------------------------------------------------- the stored record

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
    counts = counts_dict(bundle, eager_from=bundle_plan.EAGER_SOURCES) if alone else counts_dict(bundle)
    _, compiled_count = count_bundle(bundle)
    named = {k.name for k in bundle.kernels if k.lang in ("triton", "cpp")}
    rec: dict[str, Any] = {"counts": counts, "inputs": run.get("inputs"), "compile_s": run.get("compile_s"),
                           "compile_cache": run.get("compile_cache"),
                           "capture_compile_s": (bundle.timings or {}).get("compile_and_first_call"),
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
    launches = compiled_count.launches
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
            row.update(tflops=round(tflops, 3), pct_matmul=_round(analysis.percent(tflops, (top or {}).get("tflops"))),
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
                                 copies_us=copies["us"] if copy_events else 0.0)
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
                            "torch.profiler CPU: top-level ATen ops, Inductor C++ kernels (cpp.enable_kernel_profile)")
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


def writable(bundle_path: Path) -> bool:
    """Whether the bench record can go into this bundle: its folder (the manifest is replaced through a
    temporary file beside it) and its bundle.json are writable. The mode bits count too: root may
    write anything, but a folder someone made read-only means "leave it as it is"."""

    def can_write(path: Path) -> bool:
        return os.access(path, os.W_OK) and bool(path.stat().st_mode & 0o222)

    manifest = Path(bundle_path) / "bundle.json"
    return can_write(Path(bundle_path)) and (not manifest.exists() or can_write(manifest))


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
