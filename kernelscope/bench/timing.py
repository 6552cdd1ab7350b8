"""Host timing: the host-speed gate (HostGate) and its cached reference, per-call and looped timing
of eager and compiled calls. Imports torch."""

from __future__ import annotations

import bisect
import gc
import math
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
        # The full-speed samples a figure needs before it uses only them, per name, as the timing
        # that filled the gate chose it (it never waits for them: a busy host makes every block count).
        self.minimums: dict[str, int] = {}

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
        minimum = self.minimums.get(name, minimum)
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
                "needed_runs": self.minimums.get(name, minimum),
                "probe_reference_us": round(ref, 1) if ref else None,
                "probe_median_us": round(probes[len(probes) // 2], 1) if probes else None,
                "all_median_us": round(every[len(every) // 2], 3) if every else None, "all_runs": len(every)}


LOOP_BATCH_S = 0.05  # one back-to-back batch lasts about this long (at least 3 calls, at most 200)


def loop_calls(per_call_us: float | None) -> int:
    """Calls per back-to-back batch: about LOOP_BATCH_S of them."""
    if not per_call_us or per_call_us <= 0:
        return 200
    return int(min(200, max(3, math.ceil(LOOP_BATCH_S * 1e6 / per_call_us))))


def time_loop(steps: dict[str, Step], sets: list, device: str, gate: HostGate | None = None,
              per_call_us: dict[str, float] | None = None, batches: int = 7,
              budget_s: float = 1.0) -> dict[str, list[float]]:
    """Per-call time (µs) of back-to-back calls, as a training loop calls them: one pair of events
    around a batch of calls (about LOOP_BATCH_S), no synchronisation in between, so host overhead
    overlaps device work. ``batches`` figures per step, alternating, each after a host probe; the
    full-speed ones are used when they are at least half, else all (the report says which). Past
    ``budget_s`` per step (a host far slower in a loop than per call) it stops after 3 batches."""
    gate = gate or HostGate(None)
    calls = {name: loop_calls((per_call_us or {}).get(name)) for name in steps}
    for name in steps:
        gate.minimums[name] = max(3, (batches + 1) // 2)
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    deadline = time.perf_counter() + budget_s * len(steps)
    try:
        for b in range(batches):
            if b >= 3 and time.perf_counter() > deadline:
                break
            for name, step in steps.items():
                sync(device)
                probe = host_probe_us()
                n = calls[name]
                if device == "cuda":
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    for i in range(n):
                        step(sets[i % len(sets)])
                    end.record()
                    end.synchronize()
                    gate.add(name, probe, [start.elapsed_time(end) * 1000.0 / n])
                else:
                    t = time.perf_counter_ns()
                    for i in range(n):
                        step(sets[i % len(sets)])
                    gate.add(name, probe, [(time.perf_counter_ns() - t) / 1000.0 / n])
    finally:
        if was_enabled:
            gc.enable()
    return {name: gate.samples(name, batches) for name in steps}


MIN_RUNS = 20  # timed calls per step however long a call is
BLOCK_S = 0.05  # one block of per-call timings lasts about this long (1 to 25 calls)


def time_calls_pair(steps: dict[str, Step], sets: list, device: str, settings: dict,
                    gate: HostGate | None = None) -> dict[str, list[float]]:
    """Per-call latency (µs) of each step: the device is idle when each call starts, so guards,
    launches and Python overhead count. The steps are timed in alternating blocks (up to 25 calls,
    about BLOCK_S each), each after a host probe, so clock ramps and background load hit them alike;
    a warm-up of at least a quarter second per step (GPU clocks up) and the garbage collector off
    while timing. Timing stops when each step has ``reps`` calls and the budget (per step) is spent,
    or 10x ``reps`` calls, or, for long calls, when the budget is spent with at least MIN_RUNS
    calls. It never waits for a fast host: the figures use the full-speed blocks when they hold at
    least half the calls, else every block, and the report says which."""
    gate = gate or HostGate(None)
    warmup, reps, budget = int(settings["warmup"]), int(settings["reps"]), float(settings["budget_s"])
    warm_us: dict[str, float] = {}
    for name, step in steps.items():
        t_end = time.perf_counter() + 0.25
        i = 0
        t = time.perf_counter()
        while i < warmup or time.perf_counter() < t_end:
            step(sets[i % len(sets)])
            i += 1
        sync(device)
        warm_us[name] = (time.perf_counter() - t) * 1e6 / max(1, i)
    events = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) if device == "cuda" else None
    blocks = {name: int(min(25, max(1, BLOCK_S * 1e6 // max(us, 1.0)))) for name, us in warm_us.items()}
    t0 = time.perf_counter()
    deadline = t0 + budget * len(steps)
    i = 0
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        while True:
            total = min(gate.count(name) for name in steps)
            now = time.perf_counter()
            if total >= 10 * reps or (now >= deadline and total >= min(reps, MIN_RUNS)):
                break
            for name, step in steps.items():
                probe = host_probe_us()
                xs = []
                for _ in range(blocks[name]):
                    xs.append(_one_call_us(step, sets[i % len(sets)], device, events))
                    i += 1
                gate.add(name, probe, xs)
    finally:
        if was_enabled:
            gc.enable()
    for name in steps:
        gate.minimums[name] = max(MIN_RUNS if gate.count(name) >= 2 * MIN_RUNS else 1, gate.count(name) // 2)
    return {name: gate.samples(name, reps) for name in steps}
