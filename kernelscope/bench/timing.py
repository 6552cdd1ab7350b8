"""Host timing: the host-speed gate (HostGate) and its cached reference, per-call and looped timing
of eager and compiled calls. Imports torch."""

from __future__ import annotations

import bisect
import gc
import os
import time
from pathlib import Path
from typing import Any

import torch

from kernelscope.bench.ceilings import device_key, read_cache, sync, write_cache
from kernelscope.bench.step import Step


def host_reference(request: dict) -> float | None:
    """The fastest host probe seen on this machine (cached beside the ceilings), or None."""
    if request.get("remeasure"):
        return None
    entry = read_cache(Path(request["ceilings_cache"])).get(device_key(request["facts"]), {})
    value = (entry.get("host_probe") or {}).get("us")
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def store_host_reference(request: dict, value: float | None) -> None:
    """Keep the lowest host probe seen, so later runs gate on the same full speed."""
    if not value or (host_reference(request) or float("inf")) <= value:
        return
    path = Path(request["ceilings_cache"])
    cache = read_cache(path)
    entry = cache.setdefault(device_key(request["facts"]), {})
    entry["host_probe"] = {"us": round(value, 1), "method": f"{PROBE_LOOPS} rounds of dict and integer operations "
                           "in Python, 5th percentile of a run's probes", "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    write_cache(path, cache)



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
