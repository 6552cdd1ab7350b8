"""The device the bench runs on (facts, clocks, a cache key) and its copy and matmul ceilings,
measured once per device and cached. Imports torch."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from kernelscope.capture import session
from kernelscope.capture.inputs import TORCH_DTYPES
from kernelscope.units import fmt_bytes

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


STATISTIC = "best"  # a ceiling is the fastest the device did; entries measured otherwise are measured again
BUDGET_S = 0.5  # runs of a ceiling: at least MIN_RUNS, then until this much time is spent
MIN_RUNS = 5


def pin_to_one_cpu() -> int | None:
    """Run the timing on one fixed CPU (the highest allowed): a process that migrates between cores,
    or lands on a slower one, changes host-side overhead from run to run. Returns the CPU, None where
    the affinity cannot be set."""
    try:
        allowed = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {allowed[-1]})
        return allowed[-1]
    except (AttributeError, OSError):
        return None


@contextmanager
def on_the_timing_cpu(device: str) -> Iterator[str]:
    """On a CPU, the ceilings are measured on the one CPU the bench then times kernels on
    (pin_to_one_cpu), so a kernel and its ceiling ran alike; the affinity is given back afterwards.
    Yields the phrase the method says it with."""
    allowed, cpu = None, None
    if device != "cuda":
        try:
            allowed = os.sched_getaffinity(0)
        except (AttributeError, OSError):
            allowed = None
        cpu = pin_to_one_cpu() if allowed else None
    try:
        yield f", on CPU {cpu} as the kernels are timed" if cpu is not None else ""
    finally:
        if allowed and cpu is not None:
            try:
                os.sched_setaffinity(0, allowed)
            except OSError:
                pass


def _best_us(fn, device: str) -> tuple[float, int]:
    """The fastest of at least MIN_RUNS runs, more while BUDGET_S lasts (a busy host slows some runs,
    never speeds one up); and how many ran."""
    samples = _time_us(fn, device, reps=MIN_RUNS, warmup=2)
    end = time.perf_counter() + BUDGET_S
    while time.perf_counter() < end and len(samples) < 200:
        samples += _time_us(fn, device, reps=1, warmup=0)
    return min(samples), len(samples)


def measure_copy_ceiling(device: str) -> dict[str, Any]:
    if device == "cuda":
        free, _ = torch.cuda.mem_get_info()
        nbytes = int(min(1 << 30, free // 4))
    else:
        nbytes = 1 << 27
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    dst = torch.empty_like(src)
    with on_the_timing_cpu(device) as where:
        us, runs = _best_us(lambda: dst.copy_(src), device)
    gbps = 2 * nbytes / (us * 1e-6) / 1e9
    return {"gbps": float(f"{gbps:.3g}"), "method": f"dst.copy_(src) of {fmt_bytes(nbytes)}, bytes read + written, "
            f"best of {runs} runs{where}", "statistic": STATISTIC,
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "torch": torch.__version__}


def measure_matmul_ceiling(device: str, dtype_name: str) -> dict[str, Any]:
    dtype = TORCH_DTYPES[dtype_name]
    n = (8192 if dtype.itemsize <= 2 else 4096) if device == "cuda" else 1024
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    with on_the_timing_cpu(device) as where:
        us, runs = _best_us(lambda: a @ b, device)
    tflops = 2 * n ** 3 / (us * 1e-6) / 1e12
    return {"tflops": float(f"{tflops:.3g}"), "method": f"{n}x{n} @ {n}x{n} {dtype_name} (torch.matmul), best of "
            f"{runs} runs{where}", "statistic": STATISTIC, "allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "torch": torch.__version__}


def ceilings(request: dict, facts: dict, events) -> dict[str, Any]:
    """Copy ceiling and the matmul ceilings asked for, from the cache or measured now (and cached)."""
    path = Path(request["ceilings_cache"])
    key = device_key(facts)
    cache = read_cache(path)
    entry = cache.get(key, {}) if not request.get("remeasure") else {}
    changed = False
    device = request["device"]
    if (entry.get("copy") or {}).get("statistic") != STATISTIC:
        events.emit("ceiling", f"measuring the {device} copy ceiling (once; cached in {path})")
        entry["copy"] = measure_copy_ceiling(device)
        changed = True
    mm = entry.setdefault("matmul", {})
    for stale in [k for k, v in mm.items() if (v or {}).get("statistic") != STATISTIC]:
        del mm[stale]  # measured another way (a median of 3): measured again when a bench asks for it
        changed = True
    for dtype_name in request.get("matmul_dtypes", []):
        tf32 = bool(torch.backends.cuda.matmul.allow_tf32) and dtype_name == "float32" and device == "cuda"
        mkey = f"{dtype_name}{'+tf32' if tf32 else ''}"
        if (mm.get(mkey) or {}).get("statistic") != STATISTIC and dtype_name in TORCH_DTYPES:
            events.emit("ceiling", f"measuring the {device} {mkey} matmul ceiling (once)")
            mm[mkey] = measure_matmul_ceiling(device, dtype_name)
            changed = True
    if changed:
        cache[key] = entry
        write_cache(path, cache)
    return {"key": key, "cache": str(path), "fresh": changed, **entry}


def read_cache(path: Path) -> dict[str, Any]:
    try:
        cache = json.loads(path.read_text(encoding="utf-8"))
        return cache if isinstance(cache, dict) else {}
    except (OSError, ValueError):
        return {}


def write_cache(path: Path, cache: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(cache, indent=1), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass
