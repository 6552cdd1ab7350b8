"""Where the compile time went (ingest/compile_time.py) at the size of a real job: the innermost-phase
sweep gives each instant to the same phase as looking up every interval per instant did, and a compile of
40,000 begin/end events is attributed in one pass (it was quadratic: minutes)."""

from __future__ import annotations

import random
import time
from types import SimpleNamespace

from kernelscope.ingest.compile_time import compile_time_summary, innermost_phases


def _reference(intervals):
    """The definition: every elementary span to the innermost interval covering it (latest begun, then first
    to end, then first listed)."""
    points = sorted({x["b"] for x in intervals} | {x["e"] for x in intervals})
    per, covered = {}, 0.0
    for lo, hi in zip(points, points[1:]):
        mid = (lo + hi) / 2
        around = [x for x in intervals if x["b"] <= mid < x["e"]]
        if around:
            inner = max(around, key=lambda x: (x["b"], -x["e"]))
            per[inner["phase"]] = per.get(inner["phase"], 0.0) + (hi - lo) / 1e6
            covered += (hi - lo) / 1e6
    return per, covered


def test_the_sweep_matches_the_definition_on_nested_overlapping_and_tied_intervals():
    rng = random.Random(7)
    for _ in range(200):
        intervals = []
        for _ in range(rng.randint(1, 25)):
            b = rng.randint(0, 50)
            intervals.append({"phase": rng.choice("abcde"), "b": b, "e": b + rng.randint(0, 20)})
        per, covered = innermost_phases(intervals)
        want, want_covered = _reference(intervals)
        assert abs(covered - want_covered) < 1e-9
        assert per.keys() == want.keys() and all(abs(per[k] - want[k]) < 1e-9 for k in want)


def _events(n_pairs: int) -> list[dict]:
    """A frame compile holding n_pairs nested and sequential B/E phase pairs, as Dynamo writes them."""
    events = [{"name": "entire_frame_compile", "ph": "B", "ts": 0, "args": {"compile_id": "0/0"}}]
    t = 1
    names = ["GraphLowering.run", "Scheduler.__init__", "Scheduler.codegen", "async_compile.wait"]
    for i in range(n_pairs):
        events.append({"name": "inductor_compile", "ph": "B", "ts": t, "args": {"compile_id": "0/0"}})
        events.append({"name": names[i % 4], "ph": "B", "ts": t + 1, "args": {"compile_id": "0/0"}})
        events.append({"name": names[i % 4], "ph": "E", "ts": t + 3, "args": {"compile_id": "0/0"}})
        events.append({"name": "inductor_compile", "ph": "E", "ts": t + 4, "args": {"compile_id": "0/0"}})
        t += 5
    events.append({"name": "entire_frame_compile", "ph": "E", "ts": t, "args": {"compile_id": "0/0"}})
    return events


def test_forty_thousand_phase_events_are_attributed_and_add_up():
    events = _events(10_000)  # 40,002 B/E events
    bundle = SimpleNamespace(graphs=[], kernels=[])
    t0 = time.perf_counter()
    summary = compile_time_summary(events, [], bundle, lambda r: "0/0")
    seconds = time.perf_counter() - t0
    (c,) = summary["compiles"]
    assert abs(c["total_s"] - 50_001e-6) < 1e-9
    assert abs(sum(c["phases"].values()) - c["total_s"]) < 1e-9
    # each pair: 2 µs of its inner phase, 2 µs of Inductor around it, 1 µs of the frame between pairs
    assert abs(c["phases"]["Inductor lowering"] - 2_500 * 2e-6) < 1e-9
    assert abs(c["phases"]["Inductor (rest)"] - 10_000 * 2e-6) < 1e-9
    assert seconds < 60, f"{seconds:.0f} s for 40,000 events: the attribution is not linear"
