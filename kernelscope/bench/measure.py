"""Measurements inside the bench child (imports torch): end-to-end time per call, profiler kernels,
correctness, the device's copy and matmul ceilings, the size sweep and the one-kernel rerun.

Public hooks only: torch.profiler, CUDA events, triton.testing.do_bench, torch.compile options and
Inductor's documented ``cpp.enable_kernel_profile`` flag (names C++ kernels in the CPU profile).
The one-kernel rerun builds Inductor's CachingAutotuner from the bundle's kernel module with a
single config; checked against torch 2.11 / triton 3.6 and torch 2.13 / triton 3.9.
"""

from __future__ import annotations

import ast
import bisect
import copy
import gc
import importlib.util
import json
import logging
import math
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

from kernelscope.bench import analysis
from kernelscope.capture import session
from kernelscope.units import fmt_bytes

ALLOC_OR_VIEW = {"empty", "empty_strided", "empty_like", "view", "as_strided", "reshape", "t", "transpose",
                 "permute", "expand", "detach", "alias", "resize_", "lift_fresh", "_reshape_alias", "unsqueeze",
                 "squeeze", "select", "slice", "_unsafe_view", "resolve_conj", "resolve_neg", "result_type",
                 "to", "_to_copy_noop", "set_", "record_stream", "zeros_like_noop"}
_CPP_EVENT = re.compile(r"^graph_\d+_(cpp_\w+)$")


class BenchFailure(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


# ---------------------------------------------------------------- the device

def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def clocks(device: str) -> dict[str, Any]:
    """Clock readings now: nvidia-smi (and torch.cuda.clock_rate) on a GPU, cpufreq on a CPU."""
    out: dict[str, Any] = {"time": time.strftime("%Y-%m-%dT%H:%M:%S")}
    if device == "cuda":
        index = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or "0"
        fields = "clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,temperature.gpu,power.draw,pstate"
        try:
            proc = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits",
                                   "-i", index], capture_output=True, text=True, timeout=10)
            values = [v.strip() for v in proc.stdout.strip().split("\n")[0].split(",")]
            if proc.returncode == 0 and len(values) == len(fields.split(",")):
                out["nvidia_smi"] = dict(zip(fields.split(","), values))
            else:
                out["nvidia_smi_error"] = (proc.stderr or proc.stdout).strip()[:200]
        except (OSError, subprocess.TimeoutExpired) as exc:
            out["nvidia_smi_error"] = f"{exc.__class__.__name__}: {exc}"[:200]
        try:
            out["torch_clock_rate_mhz"] = torch.cuda.clock_rate(0)
        except Exception as exc:  # needs pynvml
            out["torch_clock_rate_error"] = f"{exc.__class__.__name__}: {exc}"[:200]
    else:
        freqs = []
        for f in sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_cur_freq")):
            try:
                freqs.append(int(f.read_text().strip()) / 1000)
            except (OSError, ValueError):
                pass
        if freqs:
            out["cpu_mhz"] = [round(f) for f in freqs]
        else:
            try:
                mhz = [float(line.split(":")[1]) for line in Path("/proc/cpuinfo").read_text().split("\n")
                       if line.startswith("cpu MHz")]
                out["cpu_mhz"] = [round(m) for m in mhz]
            except (OSError, ValueError, IndexError):
                out["cpu_mhz"] = None
    return out


def device_facts(device: str) -> dict[str, Any]:
    env = session.environment(device)
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        env["l2_bytes"] = getattr(props, "L2_cache_size", None)
        env["uuid"] = str(getattr(props, "uuid", "")) or None
    else:
        env["l2_bytes"] = _cpu_cache_bytes()
        env["cpu_model"] = _cpu_model()
    return env


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().split("\n"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _cpu_cache_bytes() -> int | None:
    """The largest CPU cache (the last level), from sysfs."""
    best = None
    for f in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        try:
            text = f.read_text().strip()
            n = int(text[:-1]) * {"K": 1 << 10, "M": 1 << 20}.get(text[-1], 1) if text[-1] in "KM" else int(text)
            best = max(best or 0, n)
        except (OSError, ValueError):
            pass
    return best


def device_key(facts: dict[str, Any]) -> str:
    if facts.get("device") == "cuda":
        return f"cuda|{facts.get('device_name')}|{facts.get('uuid') or 'gpu0'}"
    return f"cpu|{facts.get('cpu_model')}|{facts.get('cpu_count')} cpus|{facts.get('torch_threads')} threads"


# ---------------------------------------------------------------- ceilings, measured once per device

def _time_us(fn, device: str, reps: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    sync(device)
    samples = []
    if device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(reps):
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1000.0)
    else:
        for _ in range(reps):
            t = time.perf_counter_ns()
            fn()
            samples.append((time.perf_counter_ns() - t) / 1000.0)
    return samples


def measure_copy_ceiling(device: str) -> dict[str, Any]:
    if device == "cuda":
        free, _ = torch.cuda.mem_get_info()
        nbytes = int(min(1 << 30, free // 4))
    else:
        nbytes = 1 << 27
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    stats = analysis.run_stats(_time_us(lambda: dst.copy_(src), device, reps=20 if device == "cuda" else 5))
    gbps = 2 * nbytes / (stats["median_us"] * 1e-6) / 1e9
    return {"gbps": round(gbps, 1), "method": f"dst.copy_(src) of {fmt_bytes(nbytes)}, bytes read + written, "
            f"median of {stats['runs']} runs", "spread_pct": stats["spread_pct"],
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "torch": torch.__version__}


def measure_matmul_ceiling(device: str, dtype_name: str) -> dict[str, Any]:
    dtype = session.TORCH_DTYPES[dtype_name]
    n = (8192 if dtype.itemsize <= 2 else 4096) if device == "cuda" else 1024
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    stats = analysis.run_stats(_time_us(lambda: a @ b, device, reps=10 if device == "cuda" else 3, warmup=2))
    tflops = 2 * n ** 3 / (stats["median_us"] * 1e-6) / 1e12
    return {"tflops": round(tflops, 2), "method": f"{n}x{n} @ {n}x{n} {dtype_name} (torch.matmul), median of "
            f"{stats['runs']} runs", "allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "torch": torch.__version__}


def ceilings(request: dict, facts: dict, events) -> dict[str, Any]:
    """Copy ceiling and the matmul ceilings asked for, from the cache or measured now (and cached)."""
    path = Path(request["ceilings_cache"])
    key = device_key(facts)
    cache = _read_cache(path)
    entry = cache.get(key, {}) if not request.get("remeasure") else {}
    changed = False
    device = request["device"]
    if "copy" not in entry:
        events.emit("ceiling", f"measuring the {device} copy ceiling (once; cached in {path})")
        entry["copy"] = measure_copy_ceiling(device)
        changed = True
    mm = entry.setdefault("matmul", {})
    for dtype_name in request.get("matmul_dtypes", []):
        tf32 = bool(torch.backends.cuda.matmul.allow_tf32) and dtype_name == "float32" and device == "cuda"
        mkey = f"{dtype_name}{'+tf32' if tf32 else ''}"
        if mkey not in mm and dtype_name in session.TORCH_DTYPES:
            events.emit("ceiling", f"measuring the {device} {mkey} matmul ceiling (once)")
            mm[mkey] = measure_matmul_ceiling(device, dtype_name)
            changed = True
    if changed:
        cache[key] = entry
        _write_cache(path, cache)
    return {"key": key, "cache": str(path), "fresh": changed, **entry}


def _read_cache(path: Path) -> dict[str, Any]:
    try:
        cache = json.loads(path.read_text(encoding="utf-8"))
        return cache if isinstance(cache, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_cache(path: Path, cache: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(cache, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass


def host_reference(request: dict) -> float | None:
    """The fastest host probe seen on this machine (cached beside the ceilings), or None."""
    if request.get("remeasure"):
        return None
    entry = _read_cache(Path(request["ceilings_cache"])).get(device_key(request["facts"]), {})
    value = (entry.get("host_probe") or {}).get("us")
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def store_host_reference(request: dict, value: float | None) -> None:
    """Keep the lowest host probe seen, so later runs gate on the same full speed."""
    if not value or (host_reference(request) or float("inf")) <= value:
        return
    path = Path(request["ceilings_cache"])
    cache = _read_cache(path)
    entry = cache.setdefault(device_key(request["facts"]), {})
    entry["host_probe"] = {"us": round(value, 1), "method": f"{PROBE_LOOPS} rounds of dict and integer operations "
                           "in Python, 5th percentile of a run's probes", "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    _write_cache(path, cache)


# ---------------------------------------------------------------- the target

def load_target(request: dict, device: str):
    try:
        return session.load_target(request["target"], device)
    except session.CaptureFailure as exc:
        raise BenchFailure(exc.kind, exc.message) from exc


def make_inputs(request: dict, module, device: str) -> tuple:
    try:
        if request.get("args"):
            return session.tensors(request["args"], device)
        return session.make_inputs(request, module, device)
    except session.CaptureFailure as exc:
        raise BenchFailure(exc.kind, exc.message) from exc


def tensors_of(value: Any) -> list[torch.Tensor]:
    return [v for v in session.flatten(value) if isinstance(v, torch.Tensor)]


class Step:
    """One call of the function as the capture ran it: forward, and backward when asked."""

    def __init__(self, fn, backward: bool, options: dict | None = None):
        self.fn = fn
        self.backward = backward
        self.options = options or {}
        self._ones: dict[tuple, torch.Tensor] = {}
        self.params = [p for p in fn.parameters() if p.requires_grad] if isinstance(fn, torch.nn.Module) else []

    def leaves(self, inputs: tuple) -> list[torch.Tensor]:
        return [t for t in inputs if isinstance(t, torch.Tensor) and t.requires_grad] + self.params

    def __call__(self, inputs: tuple):
        if not self.backward:
            with session.grad_context(self.options):
                return self.fn(*inputs)
        for t in self.leaves(inputs):
            t.grad = None  # no accumulation kernels: every call is the same first backward
        out = self.fn(*inputs)
        outs = [o for o in tensors_of(out) if o.requires_grad]
        if not outs:
            raise BenchFailure("args", "backward: no output requires grad, nothing to differentiate")
        grads = []
        for o in outs:  # made once, outside the timed calls' steady state
            key = (tuple(o.shape), o.dtype, o.device)
            if key not in self._ones:
                self._ones[key] = torch.ones_like(o)
            grads.append(self._ones[key])
        torch.autograd.backward(outs, grad_tensors=grads)
        return out


def apply_train_state(module, fn, options: dict) -> None:
    """module.eval() on the modules the target is or holds, when the bench runs in eval (as captured)."""
    if not options.get("eval"):
        return
    held = session.modules_of(fn, module)
    if not held:
        raise BenchFailure("args", "--eval: the target is not an nn.Module and holds none; drop --eval")
    for m in held:
        m.eval()


def compile_fn(fn, options: dict):
    mode = options.get("mode") or "default"
    return torch.compile(fn, mode=None if mode == "default" else mode, dynamic=options.get("dynamic"),
                         fullgraph=bool(options.get("fullgraph")))


def _classify(exc: BaseException, request: dict) -> BenchFailure:
    failure = session.classify(exc, request["target"].get("file", ""), {"device": request["device"],
                                                                         **request["options"]})
    return BenchFailure(failure.kind, failure.message)


def call_guarded(step: Step, inputs: tuple, request: dict):
    try:
        out = step(inputs)
        sync(request["device"])
        return out
    except BenchFailure:
        raise
    except Exception as exc:
        raise _classify(exc, request) from exc


# ---------------------------------------------------------------- timing and profiling

def input_bytes(inputs: tuple) -> int:
    return sum(t.numel() * t.element_size() for t in inputs if isinstance(t, torch.Tensor))


def rotation_sets(request: dict, module, device: str, first: tuple, cache_bytes: int | None) -> tuple[list, dict]:
    """Input sets to cycle through so that a small input is not served from cache on every call."""
    size = input_bytes(first)
    info: dict[str, Any] = {"input_bytes": size, "cache_bytes": cache_bytes, "sets": 1}
    if not cache_bytes or not size or size >= 2 * cache_bytes:
        info["why"] = "inputs larger than twice the cache: not rotated" if cache_bytes else "cache size unknown"
        return [first], info
    budget = 1 << 30 if device == "cuda" else 1 << 28
    sets = int(min(64, max(2, math.ceil(4 * cache_bytes / size)), max(1, budget // size)))
    out = [first] + [make_inputs(request, module, device) for _ in range(sets - 1)]
    info.update(sets=len(out), why=f"inputs fit in the {fmt_bytes(cache_bytes)} cache: {len(out)} sets rotated")
    return out, info


def _one_call_us(step: Step, inputs: tuple, device: str, events: tuple | None) -> float:
    if device == "cuda":
        start, end = events
        torch.cuda.synchronize()
        start.record()
        step(inputs)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1000.0
    t = time.perf_counter_ns()
    step(inputs)
    return (time.perf_counter_ns() - t) / 1000.0


# On a shared machine the host CPU's speed changes in phases (seen on the H200 box: up to 2x slower
# for seconds at a time, with no steal time and CPU time equal to wall time, i.e. the core itself ran
# slower). Per-call latency of a small call is mostly host work, so it follows those phases. Each timing
# block is preceded by a fixed pure-Python probe; a block counts when the probe ran within HOST_SLACK of
# the fastest probe this machine has shown, so two runs compare the host at the same speed. The blocks
# of a slow host are kept and reported beside them.
HOST_SLACK = 1.10
MIN_BLOCKS = 8
PROBE_LOOPS = 3000


def host_probe_us() -> float:
    """Time of a fixed pure-Python workload (dict and integer operations, like guards and launch code)."""
    t = time.perf_counter_ns()
    d: dict[int, int] = {}
    acc = 0
    for i in range(PROBE_LOOPS):
        d[i & 63] = i
        acc += d.get((i * 7) & 63, 0)
        acc ^= len(d)
    return (time.perf_counter_ns() - t) / 1000.0


class HostGate:
    """Timing blocks tagged with the host probe that preceded them; the samples of full-speed blocks."""

    def __init__(self, reference_us: float | None):
        self.cached_reference_us = reference_us
        self.blocks: dict[str, list[tuple[float, list[float]]]] = {}
        self._probes: list[float] = []

    def add(self, name: str, probe_us: float, samples: list[float]) -> None:
        self.blocks.setdefault(name, []).append((probe_us, samples))
        bisect.insort(self._probes, probe_us)

    def reference_us(self) -> float | None:
        """The fastest the host has run: the cached reference, or this run's 5th percentile if lower."""
        if not self._probes:
            return self.cached_reference_us
        own = self._probes[int(0.05 * (len(self._probes) - 1))]
        return own if self.cached_reference_us is None else min(own, self.cached_reference_us)

    def _full_speed(self, probe_us: float, ref: float | None) -> bool:
        return ref is not None and probe_us <= ref * HOST_SLACK

    def quiet(self, name: str) -> tuple[int, int]:
        """(samples, blocks) of ``name`` timed with the host at full speed."""
        ref = self.reference_us()
        sizes = [len(xs) for p, xs in self.blocks.get(name, []) if self._full_speed(p, ref)]
        return sum(sizes), len(sizes)

    def count(self, name: str) -> int:
        return sum(len(xs) for _, xs in self.blocks.get(name, []))

    def enough(self, name: str, minimum: int) -> bool:
        """``minimum`` samples from full-speed blocks, spread over several blocks (a few fast probes in
        a slow stretch are not a fast host)."""
        samples, blocks = self.quiet(name)
        return samples >= minimum and blocks >= min(MIN_BLOCKS, minimum)

    def samples(self, name: str, minimum: int) -> list[float]:
        """Full-speed samples when there are enough of them, else every sample."""
        ref = self.reference_us()
        blocks = self.blocks.get(name, [])
        if self.enough(name, minimum):
            return [x for p, xs in blocks if self._full_speed(p, ref) for x in xs]
        return [x for _, xs in blocks for x in xs]

    def report(self, name: str, minimum: int) -> dict[str, Any]:
        blocks = self.blocks.get(name, [])
        ref = self.reference_us()
        probes = sorted(p for p, _ in blocks)
        every = sorted(x for _, xs in blocks for x in xs)
        return {"blocks": len(blocks), "full_speed_blocks": self.quiet(name)[1],
                "gated": self.enough(name, minimum), "slack": HOST_SLACK,
                "probe_reference_us": round(ref, 1) if ref else None,
                "probe_median_us": round(probes[len(probes) // 2], 1) if probes else None,
                "all_median_us": round(every[len(every) // 2], 3) if every else None, "all_runs": len(every)}


def time_loop(steps: dict[str, Step], sets: list, device: str, gate: HostGate | None = None, calls: int = 200,
              batches: int = 7, max_batches: int = 24) -> dict[str, list[float]]:
    """Per-call time (µs) of back-to-back calls, as a training loop calls them: one pair of events
    around ``calls`` calls, no synchronisation in between, so host overhead overlaps device work.
    One figure per batch; batches alternate between the steps, each after a host probe, and go on
    (up to ``max_batches``) until ``batches`` of them ran with the host at full speed."""
    gate = gate or HostGate(None)
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for n in range(max_batches):
            if n >= batches and all(gate.enough(name, batches) for name in steps):
                break
            for name, step in steps.items():
                sync(device)
                probe = host_probe_us()
                if device == "cuda":
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    for i in range(calls):
                        step(sets[i % len(sets)])
                    end.record()
                    end.synchronize()
                    gate.add(name, probe, [start.elapsed_time(end) * 1000.0 / calls])
                else:
                    t = time.perf_counter_ns()
                    for i in range(calls):
                        step(sets[i % len(sets)])
                    gate.add(name, probe, [(time.perf_counter_ns() - t) / 1000.0 / calls])
    finally:
        if was_enabled:
            gc.enable()
    return {name: gate.samples(name, batches) for name in steps}


def pin_to_one_cpu() -> int | None:
    """Run the timing on one fixed CPU (the highest allowed): a process that migrates between cores,
    or lands on a slower one, changes host-side overhead from run to run."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {allowed[-1]})
        return allowed[-1]
    except (AttributeError, OSError):
        return None


def time_calls_pair(steps: dict[str, Step], sets: list, device: str, settings: dict,
                    gate: HostGate | None = None) -> dict[str, list[float]]:
    """Per-call latency (µs) of each step: the device is idle when each call starts, so guards,
    launches and Python overhead count. The steps are timed in alternating blocks of 25 calls, each
    after a host probe, so clock ramps and background load hit them alike; a warm-up of at least a
    quarter second per step (GPU clocks up) and the garbage collector off while timing. Timing goes
    on until each step has ``reps`` calls in full-speed blocks and the budget is spent, or 10x
    ``reps`` calls; a host that never reaches full speed stops it at 2x the budget (at least 1.5 s),
    and then every block counts (the report says so)."""
    gate = gate or HostGate(None)
    warmup, reps, budget = int(settings["warmup"]), int(settings["reps"]), float(settings["budget_s"])
    for step in steps.values():
        t_end = time.perf_counter() + 0.25
        i = 0
        while i < warmup or time.perf_counter() < t_end:
            step(sets[i % len(sets)])
            i += 1
        sync(device)
    events = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) if device == "cuda" else None
    t0 = time.perf_counter()
    deadline, give_up = t0 + budget * len(steps), t0 + max(1.5, 2 * budget * len(steps))
    block = 25
    i = 0
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        while True:
            quiet = [gate.quiet(name)[0] if gate.enough(name, reps) else 0 for name in steps]
            total = [gate.count(name) for name in steps]
            now = time.perf_counter()
            if min(quiet) >= reps and (now >= deadline or min(quiet) >= 10 * reps):
                break
            if min(total) >= reps and now >= give_up:
                break
            for name, step in steps.items():
                probe = host_probe_us()
                xs = []
                for _ in range(block):
                    xs.append(_one_call_us(step, sets[i % len(sets)], device, events))
                    i += 1
                gate.add(name, probe, xs)
    finally:
        if was_enabled:
            gc.enable()
    return {name: gate.samples(name, reps) for name in steps}


RUNTIME_LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
                    "cudaGraphLaunch", "cudaMemcpyAsync", "cudaMemsetAsync", "cudaLaunchCooperativeKernel")


def profile_calls(step: Step, sets: list, device: str, calls: int) -> tuple[list[tuple[str, float, Any, dict]],
                                                                         dict[str, int]]:
    """(kernel name, µs, group, info) in launch order over ``calls`` calls: device kernels on a GPU,
    top-level ATen ops and Inductor's C++ kernels on a CPU; and the host's launch calls counted by
    name (cudaLaunchKernel, cudaGraphLaunch: one per CUDA-graph replay). ``group`` names the top-level
    op that launched the kernel (see launch_group), so the kernels one extern call runs are timed as
    that one launch; ``info`` has that op's name ("op") and the runtime call that launched the kernel
    ("via": cudaLaunchKernel, or cudaGraphLaunch for a kernel a CUDA graph replayed) where known."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    with profile(activities=activities) as prof:
        for i in range(calls):
            step(sets[i % len(sets)])
            sync(device)
    rows: list[tuple[float, str, float, Any, dict]] = []
    events = prof.events()
    ops = {}
    runtime: dict[int, str] = {}  # correlation id -> the runtime call (a kernel carries its launch's id)
    launches: dict[str, int] = {}
    graph_ops: set[int] = set()  # the ops a cudaGraphLaunch ran under (a fallback when ids do not pair)
    if device == "cuda":
        for e in events:
            if e.device_type != torch.autograd.DeviceType.CPU:
                continue
            if e.name in RUNTIME_LAUNCHES:
                runtime[e.id] = e.name
                launches[e.name] = launches.get(e.name, 0) + 1
                if e.name == "cudaGraphLaunch" and getattr(e, "linked_correlation_id", 0):
                    graph_ops.add(e.linked_correlation_id)
            elif not e.is_async and e.id not in ops:
                ops[e.id] = e
    for e in events:
        if device == "cuda":
            if e.device_type != torch.autograd.DeviceType.CUDA:
                continue
            linked = getattr(e, "linked_correlation_id", 0) or 0
            group = launch_group(ops.get(linked))
            via = runtime.get(e.id, "") or ("cudaGraphLaunch" if linked in graph_ops else "")
            info = {"op": ops[group].name if group in ops else "", "via": via}
            rows.append((e.time_range.start, e.name, e.time_range.elapsed_us(), group, info))
            continue
        m = _CPP_EVENT.match(e.name)
        if m:
            rows.append((e.time_range.start, m.group(1), e.time_range.elapsed_us(), e.id, {}))
            continue
        if not e.name.startswith("aten::") or e.name[6:] in ALLOC_OR_VIEW:
            continue
        parent = e.cpu_parent
        while parent is not None and not parent.name.startswith("aten::"):
            parent = parent.cpu_parent
        if parent is None:
            rows.append((e.time_range.start, e.name, e.time_range.elapsed_us(), e.id, {}))
    rows.sort(key=lambda r: r[0])
    return [(name, us, group, info) for _, name, us, group, info in rows], launches


def launch_group(op) -> Any:
    """The top-level op that launched a device kernel: the CPU op the profiler linked it to (its
    correlation id), walked up to the outermost ATen op (aten::linear over aten::addmm); a Triton
    kernel's own record function stays itself. None when the profiler linked it to nothing."""
    if op is None:
        return None
    while op.cpu_parent is not None and op.cpu_parent.name.startswith("aten::"):
        op = op.cpu_parent
    return op.id


# ---------------------------------------------------------------- correctness

TOLERANCES = {"float32": (1e-3, 1e-4), "float64": (1e-7, 1e-9), "float16": (1e-2, 1e-2), "bfloat16": (1.6e-2, 1e-2)}


def compare(eager: list[torch.Tensor], compiled: list[torch.Tensor]) -> dict[str, Any]:
    out: dict[str, Any] = {"tensors": len(eager), "max_abs_err": 0.0, "max_rel_err": 0.0, "nan_eager": 0,
                           "nan_compiled": 0, "ok": True, "problems": []}
    if len(eager) != len(compiled):
        out.update(ok=False, problems=[f"eager returned {len(eager)} tensors, compiled {len(compiled)}"])
        return out
    for i, (e, c) in enumerate(zip(eager, compiled)):
        if e.shape != c.shape or e.dtype != c.dtype:
            out["ok"] = False
            out["problems"].append(f"output {i}: eager {e.dtype} {list(e.shape)}, compiled {c.dtype} {list(c.shape)}")
            continue
        e64, c64 = e.detach().double().cpu(), c.detach().double().cpu()
        ne, nc = torch.isnan(e64), torch.isnan(c64)
        out["nan_eager"] += int(ne.sum())
        out["nan_compiled"] += int(nc.sum())
        if not torch.equal(ne, nc):
            out["ok"] = False
            out["problems"].append(f"output {i}: NaN where eager has none (or the reverse)")
        finite = ~(ne | nc)
        if finite.any():
            diff = (e64[finite] - c64[finite]).abs()
            max_abs = float(diff.max())
            top = float(e64[finite].abs().max())
            out["max_abs_err"] = max(out["max_abs_err"], max_abs)
            out["max_rel_err"] = max(out["max_rel_err"], max_abs / top if top > 0 else 0.0)
            if e.is_floating_point():
                rtol, atol = TOLERANCES.get(str(e.dtype).replace("torch.", ""), (1e-3, 1e-4))
                if not torch.allclose(c64[finite], e64[finite], rtol=rtol, atol=atol):
                    out["ok"] = False
                    out["problems"].append(f"output {i}: differs beyond rtol={rtol:g} atol={atol:g}")
            elif max_abs != 0:
                out["ok"] = False
                out["problems"].append(f"output {i}: integer results differ")
    out["max_abs_err"] = float(f"{out['max_abs_err']:.3g}")
    out["max_rel_err"] = float(f"{out['max_rel_err']:.3g}")
    out["rel_err_is"] = "max |compiled - eager| / max |eager|, per tensor"
    return out


def correctness(request: dict, module, eager: Step, compiled: Step) -> dict[str, Any]:
    seed = int(time.time() * 1000) % (1 << 31)
    torch.manual_seed(seed)
    inputs = make_inputs(request, module, request["device"])
    results = []
    for step in (eager, compiled):
        out = call_guarded(step, inputs, request)
        tensors = [t.detach().clone() for t in tensors_of(out)]
        if step.backward:
            tensors += [t.grad.detach().clone() for t in step.leaves(inputs) if t.grad is not None]
        results.append(tensors)
    verdict = compare(results[0], results[1])
    verdict["seed"] = seed
    verdict["compared"] = "outputs" + (" and gradients" if eager.backward else "") + ", fresh random inputs"
    return verdict


# ---------------------------------------------------------------- sections

def run_section(request: dict, module, fn, events) -> dict[str, Any]:
    device, settings, options = request["device"], request["settings"], request["options"]
    backward = bool(options.get("backward"))
    inputs = make_inputs(request, module, device)
    apply_train_state(module, fn, options)
    eager = Step(fn, backward, options)
    skips, skips_before = SkipLog(), (_cudagraph_skips() if uses_cudagraphs(options, device) else 0)
    compiled = Step(compile_fn(fn, options), backward, options)
    result: dict[str, Any] = {"inputs": [session.describe(v) for v in inputs],
                              "grad_mode": options.get("grad_mode"), "eval": bool(options.get("eval"))}
    events.emit("compile", "torch.compile: first call")
    t = time.perf_counter()
    call_guarded(compiled, inputs, request)
    result["compile_s"] = round(time.perf_counter() - t, 3)
    events.emit("correct", "compiled vs eager on fresh random inputs")
    result["correctness"] = correctness(request, module, eager, compiled)
    sets, result["rotation"] = rotation_sets(request, module, device, inputs, request["facts"].get("l2_bytes"))
    events.emit("timing", "timing eager and compiled calls, alternating")
    result["pinned_cpu"] = pin_to_one_cpu()
    reference = host_reference(request)
    gate, loop_gate = HostGate(reference), HostGate(reference)
    try:
        timed = time_calls_pair({"eager": eager, "compiled": compiled}, sets, device, settings, gate)
        loop_gate.cached_reference_us = gate.reference_us()
        looped = time_loop({"eager": eager, "compiled": compiled}, sets, device, loop_gate)
        store_host_reference(request, loop_gate.reference_us())
    except BenchFailure:
        raise
    except Exception as exc:
        raise _classify(exc, request) from exc
    for name, step in (("eager", eager), ("compiled", compiled)):
        result[name] = _profiled(request, name, step, sets, timed[name], looped[name], gate, loop_gate, events)
    if uses_cudagraphs(options, device):
        result["cudagraphs"] = {"skips": skips.messages, "skip_counter": _cudagraph_skips() - skips_before,
                                "copied": copied_inputs(inputs, fn)}
        result["compiled_static"] = static_section(request, fn, sets[0], eager, events)
    skips.close()
    return result


def _profiled(request: dict, name: str, step: Step, sets: list, samples: list[float], looped: list[float],
              gate: HostGate, loop_gate: HostGate, events) -> dict[str, Any]:
    settings = request["settings"]
    try:
        events.emit(name, f"profiling {settings['profile_calls']} {name} calls")
        sequence, host_launches = profile_calls(step, sets, request["device"], int(settings["profile_calls"]))
    except BenchFailure:
        raise
    except Exception as exc:
        raise _classify(exc, request) from exc
    return {"e2e": {**analysis.run_stats(samples), "host": gate.report(name, int(settings["reps"]))},
            "loop": {**analysis.run_stats(looped), "host": loop_gate.report(name, 7)},
            "profile_calls": int(settings["profile_calls"]), "host_launches": host_launches,
            "sequence": [[n, round(us, 3), g, info] if info else [n, round(us, 3), g] for n, us, g, info in sequence]}


# ---------------------------------------------------------------- CUDA graphs (reduce-overhead)

CUDAGRAPH_MODES = ("reduce-overhead", "max-autotune")


def uses_cudagraphs(options: dict, device: str) -> bool:
    return device == "cuda" and (options.get("mode") or "") in CUDAGRAPH_MODES


def mark_static_inputs(inputs: tuple) -> int:
    """Mark each input tensor as living at a fixed address, so Inductor's CUDA graph reads it in place
    instead of copying it into the graph's own buffer before every replay (what a training loop that
    reuses its buffers gets). ``torch._dynamo.mark_static_address(t, guard=False)``: checked on torch
    2.11 and 2.13 (public in torch._dynamo, default guard=False: no data_ptr guard, a moved input
    re-records). Accepted on a CPU tensor (it only sets an attribute). Returns how many were marked."""
    marked = 0
    for t in inputs:
        if isinstance(t, torch.Tensor):
            torch._dynamo.mark_static_address(t, guard=False)
            marked += 1
    return marked


def copied_inputs(inputs: tuple, fn) -> dict[str, Any]:
    """What Inductor's CUDA graph copies before each replay: the call's tensor inputs (parameters and
    buffers of a module stay in place; inputs marked static too)."""
    tensors = [t for t in inputs if isinstance(t, torch.Tensor) and t.is_cuda
               and getattr(t, "_dynamo_static_input_type", None) is None]
    return {"tensors": len(tensors), "bytes": sum(t.numel() * t.element_size() for t in tensors)}


def _cudagraph_skips() -> int:
    from torch._dynamo.utils import counters

    return int(counters["inductor"]["cudagraph_skips"])


class SkipLog(logging.Handler):
    """Inductor's "skipping cudagraphs due to ..." warnings (the ``cudagraphs`` log, on by default at
    WARNING), collected while this bench compiles."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []
        self.logger = logging.getLogger("torch._inductor")
        self.logger.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            msg = record.getMessage()
        except Exception:
            return
        if "cudagraph" in msg and ("skipping" in msg or "disabling" in msg):
            first = msg.strip().split("\n")[0]
            if first not in self.messages:
                self.messages.append(first)

    def close(self) -> None:
        self.logger.removeHandler(self)
        super().close()


def _fresh_code(fn):
    """A wrapper with its own code object: Dynamo caches compiled frames per code object, so a second
    torch.compile of ``fn`` itself would reuse the first compile (and its copying CUDA graph)."""
    def in_place_call(*args):
        return fn(*args)
    return in_place_call


def static_section(request: dict, fn, first: tuple, eager: Step, events) -> dict[str, Any]:
    """The compiled call again, its inputs marked static and reused on every call (one input set, not
    rotated): the CUDA graph replays with no input copies."""
    device, settings, options = request["device"], request["settings"], request["options"]
    events.emit("static", "compiling again with the inputs marked static (in place, no CUDA-graph copies)")
    inputs = tuple(t.detach().clone().requires_grad_(t.requires_grad) if isinstance(t, torch.Tensor) else t
                   for t in first)
    marked = mark_static_inputs(inputs)
    step = Step(compile_fn(_fresh_code(fn), options), eager.backward, options)
    step.params = eager.params
    t = time.perf_counter()
    call_guarded(step, inputs, request)
    compile_s = round(time.perf_counter() - t, 3)
    gate, loop_gate = HostGate(host_reference(request)), HostGate(host_reference(request))
    try:
        timed = time_calls_pair({"compiled_static": step}, [inputs], device, settings, gate)
        loop_gate.cached_reference_us = gate.reference_us()
        looped = time_loop({"compiled_static": step}, [inputs], device, loop_gate)
    except BenchFailure:
        raise
    except Exception as exc:
        raise _classify(exc, request) from exc
    out = _profiled(request, "compiled_static", step, [inputs], timed["compiled_static"],
                    looped["compiled_static"], gate, loop_gate, events)
    out.update(compile_s=compile_s, marked=marked, copied=copied_inputs(inputs, fn),
               how="torch._dynamo.mark_static_address on each input tensor, one input set reused (not rotated)")
    return out


def scaled_specs(inputs: tuple, n: int) -> tuple[list[dict], int]:
    """Specs of ``inputs`` with dim 0 set to ``n`` on every tensor whose dim 0 equals the first tensor's."""
    tensors = [t for t in inputs if isinstance(t, torch.Tensor) and t.dim() > 0]
    if not tensors:
        raise BenchFailure("args", "--sweep needs a tensor input with at least one dimension")
    lead = tensors[0].shape[0]
    specs = []
    for v in inputs:
        if not isinstance(v, torch.Tensor):
            specs.append({"value": v})
            continue
        shape = list(v.shape)
        if shape and shape[0] == lead:
            shape[0] = n
        specs.append({"dtype": str(v.dtype).replace("torch.", ""), "shape": shape, "requires_grad": v.requires_grad})
    return specs, lead


def sweep_section(request: dict, module, fn, events) -> dict[str, Any]:
    device, settings, options = request["device"], request["settings"], request["options"]
    backward = bool(options.get("backward"))
    base = make_inputs(request, module, device)
    apply_train_state(module, fn, options)
    _, lead = scaled_specs(base, 1)
    sizes = request.get("sizes") or sorted({max(1, lead >> s) for s in (14, 12, 10, 8, 6, 4, 2, 0)})
    rows = []
    sweep_settings = dict(settings, reps=settings["sweep_reps"], budget_s=settings["sweep_budget_s"])
    for n in sizes:
        specs, _ = scaled_specs(base, n)
        sub = dict(request, args=specs)
        row: dict[str, Any] = {"size": n}
        try:
            inputs = make_inputs(sub, module, device)
            row["elements"] = sum(t.numel() for t in inputs if isinstance(t, torch.Tensor))
            row["input_bytes"] = input_bytes(inputs)
            row["inputs"] = [session.describe(v) for v in inputs]
            events.emit("sweep", f"size {n}: compiling")
            torch._dynamo.reset()  # each size compiled as a user with that size would get it
            compiled = Step(compile_fn(fn, options), backward, options)
            t = time.perf_counter()
            call_guarded(compiled, inputs, request)
            row["compile_s"] = round(time.perf_counter() - t, 3)
            sets, _ = rotation_sets(sub, module, device, inputs, request["facts"].get("l2_bytes"))
            events.emit("sweep", f"size {n}: timing eager and compiled")
            gate = HostGate(host_reference(request))
            timed = time_calls_pair({"eager": Step(fn, backward, options), "compiled": compiled}, sets, device, sweep_settings,
                                    gate)
            store_host_reference(request, gate.reference_us())
            for name in ("eager", "compiled"):
                stats = analysis.run_stats(timed[name])
                row[f"{name}_us"] = stats["median_us"]
                row[f"{name}_spread_pct"] = stats["spread_pct"]
            row["speedup"] = round(row["eager_us"] / row["compiled_us"], 3) if row["compiled_us"] else None
        except BenchFailure as exc:
            row["error"] = exc.message
        except Exception as exc:
            row["error"] = _classify(exc, request).message
        rows.append(row)
    dim = "dim 0 of every input whose dim 0 is " + str(lead)
    return {"rows": rows, "scaled": dim, "compiled_per_size": "torch._dynamo.reset() and a fresh torch.compile "
            "per size", "crossover": analysis.crossover(rows)}


# ---------------------------------------------------------------- one kernel

def _kernel_args(call_text: str, tensors: dict[str, torch.Tensor]) -> list[Any]:
    try:
        call = ast.parse(call_text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise BenchFailure("kernel", f"cannot read the kernel's recorded call {call_text!r}") from exc
    if not isinstance(call, ast.Call):
        raise BenchFailure("kernel", f"the kernel's recorded call is not a call: {call_text!r}")
    args: list[Any] = []
    for node in call.args:
        name = None
        if isinstance(node, ast.Name):
            name = node.id
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "reinterpret_tensor" and node.args \
                and isinstance(node.args[0], ast.Name):
            name = node.args[0].id
        if name is not None:
            if name not in tensors:
                raise BenchFailure("kernel", f"argument {name} of the recorded call has no recorded shape; "
                                   "cannot rerun this kernel alone")
            args.append(tensors[name])
            continue
        try:
            args.append(ast.literal_eval(node))
        except ValueError as exc:
            raise BenchFailure("kernel", f"argument {ast.unparse(node)!r} is symbolic (dynamic shapes); "
                               "rerun needs a capture with static shapes") from exc
    return args


def _make_buffers(buffers: list[dict], device: str) -> dict[str, torch.Tensor]:
    out: dict[str, torch.Tensor] = {}
    for b in buffers:
        if b["name"] in out:
            continue
        if any(not isinstance(d, int) for d in b["shape"] + b["stride"]) or b["dtype"] not in session.TORCH_DTYPES:
            raise BenchFailure("kernel", f"buffer {b['name']} has a symbolic shape or unknown dtype "
                               f"({b['dtype']}{b['shape']}); cannot rerun this kernel alone")
        dtype = session.TORCH_DTYPES[b["dtype"]]
        stride = b["stride"] or None
        t = torch.empty_strided(b["shape"], stride, dtype=dtype, device=device) if stride else \
            torch.empty(b["shape"], dtype=dtype, device=device)
        if dtype.is_floating_point:
            t.normal_()
        elif dtype == torch.bool:
            t.copy_(torch.rand(t.shape, device=device) > 0.5)
        else:
            t.zero_()  # integer buffers are often indices: zeros stay in range
        out[b["name"]] = t
    return out


def _load_kernel(source: Path, name: str, tag: str):
    spec = importlib.util.spec_from_file_location(f"kernelscope_kernel_{tag}_{name}", source)
    if spec is None or spec.loader is None:
        raise BenchFailure("kernel", f"{source}: cannot load the kernel module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise BenchFailure("kernel", f"loading {name}'s module raised {exc.__class__.__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else ''}") from exc
    kernel = getattr(module, name, None)
    if kernel is None or not hasattr(kernel, "run"):
        raise BenchFailure("kernel", f"{name}'s module does not define an Inductor kernel named {name}")
    return kernel


def _config_dict(config) -> dict[str, Any]:
    return {"kwargs": dict(config.kwargs), "num_warps": config.num_warps, "num_stages": config.num_stages}


def kernel_section(request: dict, events) -> dict[str, Any]:
    spec = request["kernel"]
    if request["device"] != "cuda":
        raise BenchFailure("device", f"{spec['name']}: rerunning a Triton kernel alone needs a CUDA GPU; "
                           "none here (the CPU bench times the whole function)")
    import triton
    from triton.testing import do_bench

    work = Path(request["work"])
    source = work / f"{spec['name']}.py"  # a private copy: the autotuner writes its cache beside its file
    source.write_text(spec["source_text"], encoding="utf-8")
    tensors = _make_buffers(spec["buffers"], "cuda")
    args = _kernel_args(spec["call_text"], tensors)
    writes = [b["name"] for b in spec["buffers"] if b["role"] in ("write", "readwrite")]
    stream = torch.cuda.current_stream().cuda_stream
    inplace = [b["name"] for b in spec["buffers"] if b["role"] == "readwrite"]
    saved = {n: tensors[n].clone() for n in inplace}

    def restore() -> None:
        for n, t in saved.items():
            tensors[n].copy_(t)

    results = []
    reference: dict[str, torch.Tensor] = {}
    chosen = None
    for tag in ("recorded", "changed"):
        kernel = _load_kernel(source, spec["name"], tag)
        if tag == "changed":
            config = copy.deepcopy(chosen)
            changes = dict(spec.get("changes") or {})
            for key in ("num_warps", "num_stages"):
                if key in changes:
                    setattr(config, key, int(changes.pop(key)))
            unknown = [k for k in changes if k not in config.kwargs]
            if unknown:
                raise BenchFailure("kernel", f"{spec['name']} has no block size {', '.join(unknown)}; its config has "
                                   f"{', '.join(config.kwargs) or 'no block sizes'}, num_warps, num_stages")
            config.kwargs.update({k: int(v) for k, v in changes.items()})
            kernel.configs = [config]
        events.emit("kernel", f"{spec['name']}: {tag} config")
        restore()
        try:
            kernel.run(*args, stream=stream)
            torch.cuda.synchronize()
        except Exception as exc:
            raise BenchFailure("kernel", f"{spec['name']} ({tag} config) failed: {exc.__class__.__name__}: "
                               f"{(str(exc).splitlines() or [''])[0][:300]}") from exc
        launcher = kernel.launchers[0]
        if tag == "recorded":
            chosen = launcher.config
            reference = {n: tensors[n].clone() for n in writes}
            same = None
        else:
            same = all(torch.allclose(tensors[n].double(), reference[n].double(), rtol=1e-5, atol=1e-6, equal_nan=True)
                       if tensors[n].is_floating_point() else torch.equal(tensors[n], reference[n]) for n in writes)

        def launch(kernel=kernel) -> None:
            kernel.run(*args, stream=stream)

        q = do_bench(launch, warmup=25, rep=int(request["settings"].get("kernel_rep_ms", 200)),
                     quantiles=[0.5, 0.1, 0.9])
        results.append({"config": tag, **_config_dict(launcher.config), "median_us": round(q[0] * 1000, 3),
                        "p10_us": round(q[1] * 1000, 3), "p90_us": round(q[2] * 1000, 3),
                        "n_regs": getattr(launcher, "n_regs", None), "n_spills": getattr(launcher, "n_spills", None),
                        "shared": getattr(launcher, "shared", None), "same_result": same})
    restore()
    return {"name": spec["name"], "kernel_id": spec.get("kernel_id", ""), "runs": results,
            "timer": "triton.testing.do_bench (L2 cleared before each run), median and p10/p90",
            "data": "random normal floats, zero integers, random bools; recorded shapes and strides",
            "triton": triton.__version__}


# ---------------------------------------------------------------- entry

def run(request: dict, events) -> dict[str, Any]:
    t0 = time.time()
    device = request["device"]
    events.emit("start", f"torch {torch.__version__} imported", elapsed=round(t0 - request.get("t_spawn", t0), 3))
    if device == "cuda" and not torch.cuda.is_available():
        raise BenchFailure("no_gpu", "the bench asked for cuda, but torch sees no CUDA GPU here; use --device cpu")
    if device == "cpu":
        import torch._inductor.config as inductor_config

        inductor_config.cpp.enable_kernel_profile = True  # C++ kernels named in the CPU profile
    facts = device_facts(device)
    request["facts"] = facts
    result: dict[str, Any] = {"device": facts, "clocks_before": clocks(device),
                              "versions": {"torch": torch.__version__, "triton": facts.get("triton"),
                                           "python": platform.python_version(), "cuda": torch.version.cuda,
                                           "driver": facts.get("driver")},
                              "settings": dict(request["settings"], options=request["options"], device=device)}
    result["ceilings"] = ceilings(request, facts, events)
    sections = request["sections"]
    module = fn = None
    if "run" in sections or "sweep" in sections:
        module, fn = load_target(request, device)
    if "run" in sections:
        result["run"] = run_section(request, module, fn, events)
    if "sweep" in sections:
        result["sweep"] = sweep_section(request, module, fn, events)
    if "kernel" in sections:
        result["kernel"] = kernel_section(request, events)
    result["clocks_after"] = clocks(device)
    result["seconds"] = round(time.time() - t0, 2)
    sys.stdout.flush()
    return result
