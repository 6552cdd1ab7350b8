"""Parent side of a bench (no torch): build the request from a bundle, spawn the child, stream its
progress, and have its raw measurements turned into the stored record (bench/record.py) and saved in
``bundle.extra["bench"]``.

``bundle.extra["bench"]`` holds one record per kind of run: ``run`` (eager vs compiled), ``sweep``
and ``kernels`` (one-kernel reruns by kernel name). Each record carries its own device, clocks
before and after, versions and settings.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelscope.bench import bundle_plan
from kernelscope.bench.counts import compiled_side
from kernelscope.bench.record import build_record, bundle_device, store
from kernelscope.bench.record import merge as merge  # re-exported: the Bench view merges a record it shows
from kernelscope.bundle.io import BundleError, read_bundle, read_text
from kernelscope.bundle.model import Bundle
from kernelscope.capture import compile_cache
from kernelscope.capture.job import ChildJob, make_work_dir
from kernelscope.capture.spec import TARGET_KEYS, calls_from_text
from kernelscope.target import TargetError


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
    dtypes = []
    for launch in compiled_side(bundle).launches:
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




def writable(bundle_path: Path) -> bool:
    """Whether the bench record can go into this bundle: its folder (the manifest is replaced through a
    temporary file beside it) and its bundle.json are writable. The mode bits count too: root may
    write anything, but a folder someone made read-only means "leave it as it is"."""

    def can_write(path: Path) -> bool:
        return os.access(path, os.W_OK) and bool(path.stat().st_mode & 0o222)

    manifest = Path(bundle_path) / "bundle.json"
    return can_write(Path(bundle_path)) and (not manifest.exists() or can_write(manifest))


