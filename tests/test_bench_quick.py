"""A bench in seconds and CPU numbers that add up, without a compile: per-call timing of a slow
call stops at its budget instead of waiting for a fast host, back-to-back batches are sized by time,
the spread prints as a percentile range that fits its column, "in kernels" larger than end-to-end is
marked and explained, the grad/eval note appears only where it applies, and per-launch times read
from an L2-flushed pass match launches by name and order."""

from __future__ import annotations

import time

from kernelscope.bench import tables
from kernelscope.bench.launches import named_times
from kernelscope.bench.timing import HostGate, loop_calls, time_calls_pair, time_loop


class SlowStep:
    """A call that takes ``seconds`` (sleeping: no CPU used) and counts its calls."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.calls = 0

    def __call__(self, inputs):
        self.calls += 1
        time.sleep(self.seconds)


def test_a_slow_call_is_timed_for_its_budget_not_for_reps():
    steps = {"eager": SlowStep(0.01), "compiled": SlowStep(0.01)}
    gate = HostGate(None)
    timed = time_calls_pair(steps, [()], "cpu", {"warmup": 2, "reps": 100, "budget_s": 0.05}, gate)
    # 100 reps of 10 ms would be 2 s; the budget stops it at the minimum of 20 calls per side
    assert 20 <= len(timed["eager"]) < 40 and 20 <= len(timed["compiled"]) < 40
    report = gate.report("eager", 100)
    assert report["needed_runs"] <= len(timed["eager"])  # gated on what was collected, never waited for


def test_back_to_back_batches_are_sized_by_time():
    assert loop_calls(15000.0) == 4  # a 15 ms call: 4 calls make a 50 ms batch
    assert loop_calls(10.0) == 200 and loop_calls(None) == 200
    step = SlowStep(0.005)
    out = time_loop({"compiled": step}, [()], "cpu", HostGate(None), {"compiled": 5000.0}, batches=3)
    assert len(out["compiled"]) == 3 and step.calls == 3 * loop_calls(5000.0)


def test_spread_is_a_percentile_range_that_fits_its_column():
    assert tables.fmt_range(13900.0, 14300.0) == "13.9-14.3 ms"
    assert tables.fmt_range(30.1, 16000.0) == "30.1 µs-16.0 ms"
    assert max(len(tables.fmt_range(lo, hi)) for lo, hi in ((0.5, 9.9), (31.5, 15950.0), (999, 99999))) <= 16


def _record(e2e_us: float, kernel_us: float) -> dict:
    side = {"e2e": {"median_us": e2e_us, "p10_us": e2e_us * 0.9, "p90_us": e2e_us * 2, "runs": 100},
            "launches_per_call": 2, "kernel_us": kernel_us, "outside_us": None, "kernels": [], "profile_calls": 10}
    return {"device": {"device": "cpu"}, "counts": {"eager": {}, "compiled": {}}, "eager": side, "compiled": side,
            "run_state": {"grad_mode": "grad", "train": "train", "holds_modules": False}, "per_kernel": []}


def test_cpu_table_marks_in_kernels_above_end_to_end_and_drops_the_grad_note_of_a_function(monkeypatch):
    monkeypatch.setattr(tables, "counts_lines", lambda counts: [])
    text = "\n".join(tables.run_lines(_record(31.5, 41.6)))
    row = next(line for line in text.splitlines() if line.startswith("  eager "))
    assert "31.5 µs" in row and "28.4-63.0 µs" in row and "41.6 µs*" in row
    assert "* eager and compiled: in kernels exceeds end-to-end: the profiler's times include its own cost" in text
    assert "ran under" not in text  # a plain function under grad: nothing to say


def test_grad_note_says_only_what_applies():
    assert tables.run_state_line({"grad_mode": "no_grad", "train": "train", "holds_modules": False}).startswith(
        "ran under no_grad (")
    assert tables.run_state_line({"grad_mode": "grad", "train": "eval", "holds_modules": True}).startswith(
        "ran under grad, eval (")
    assert tables.run_state_line({"grad_mode": "grad", "train": "train", "holds_modules": False}) == ""


def test_l2_flushed_times_match_launches_by_name_and_order():
    launches = ["k_a", "mm", "k_b", "k_a"]
    named = {"k_a", "k_b"}
    events = [("k_a", 1.0), ("flush", 30.0), ("gemm", 9.0), ("k_b", 2.0), ("k_a", 3.0),
              ("k_a", 1.2), ("gemm", 9.0), ("k_b", 2.2), ("k_a", 3.2)]
    times = named_times(launches, named, events, 2)
    assert times[1] is None
    assert [round(t, 3) for t in (times[0], times[2], times[3])] == [1.1, 2.1, 3.1]
    assert named_times(launches, named, events[:5], 2) == [None, None, None, None]  # events missing: no guess


def test_a_preempted_cpu_call_does_not_make_a_launch_slow():
    from kernelscope.bench.launches import match

    events = [("cpp_fused_add_relu_0", 96.0, None)] * 9 + [("cpp_fused_add_relu_0", 150000.0, None)]
    cpu = match(["cpp_fused_add_relu_0"], {"cpp_fused_add_relu_0"}, events, 10, median=True)
    assert cpu["per_launch"][0]["us"] == 96.0 and cpu["total_us"] == 96.0
    gpu = match(["cpp_fused_add_relu_0"], {"cpp_fused_add_relu_0"}, events, 10)
    assert round(gpu["per_launch"][0]["us"], 1) == round(gpu["total_us"], 1) == 15086.4  # the mean adds up
