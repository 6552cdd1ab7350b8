"""A bench in seconds and CPU numbers that add up, without a compile: per-call timing of a slow
call stops at its budget instead of waiting for a fast host, back-to-back batches are sized by time,
the spread prints as a percentile range that fits its column, "in kernels" larger than end-to-end is
marked and explained, the grad/eval note appears only where it applies, and per-launch times read
from an L2-flushed pass match launches by name and order."""

from __future__ import annotations

import re
import time

import pytest

from kernelscope.bench import tables, wording
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
    assert wording.run_state_line({"grad_mode": "no_grad", "train": "train", "holds_modules": False}).startswith(
        "ran under no_grad (")
    assert wording.run_state_line({"grad_mode": "grad", "train": "eval", "holds_modules": True}).startswith(
        "ran under grad, eval (")
    assert wording.run_state_line({"grad_mode": "grad", "train": "train", "holds_modules": False}) == ""


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


def _linear_relu_raw(device: str, flushed: bool) -> dict:
    """A default-mode bench of the linear_relu GPU fixture as the child records it: a GEMM then the
    fused Triton kernel, 10 profiled calls, and (``flushed``) 3 calls with L2 flushed first."""
    def side(seq, e2e):
        return {"e2e": {"median_us": e2e, "p10_us": e2e, "p90_us": e2e, "runs": 100}, "loop": {},
                "profile_calls": 10, "host_launches": {}, "sequence": seq}

    gemm = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8"
    compiled = [row for c in range(10) for row in ([gemm, 6.0, 2 * c], ["triton_poi_fused_addmm_relu_0", 3.0, 2 * c + 1])]
    run = {"inputs": ["f32[32, 512]"], "compile_s": 1.0, "correctness": {}, "rotation": {"why": "rotated"},
           "eager": side([[gemm, 6.0, c] for c in range(10)], 40.0), "compiled": side(compiled, 30.0),
           "grad_mode": "no_grad", "eval": False, "holds_modules": False}
    if flushed:
        run["compiled_flushed"] = {"calls": 3, "how": "L2 flushed before each Triton kernel (a 126 MB write), 3 "
                                   "profiled calls", "sequence": [row for _ in range(3) for row in (
                                       ["vectorized_elementwise_kernel<FillFunctor>", 30.0], [gemm, 6.0],
                                       ["vectorized_elementwise_kernel<FillFunctor>", 30.0],
                                       ["triton_poi_fused_addmm_relu_0", 4.5])]}
    return {"device": {"device": device}, "versions": {}, "run": run,
            "ceilings": {"copy": {"gbps": 4000.0, "method": "copy", "measured_at": "x"}}}


def test_gpu_launches_show_their_l2_flushed_time_beside_the_time_in_the_call():
    from pathlib import Path

    from kernelscope.bench.record import build_record
    from kernelscope.bundle.io import read_bundle

    bundle = read_bundle(Path(__file__).parent / "fixtures" / "gpu" / "linear_relu")
    rec = build_record(bundle, {"device": "cuda"}, _linear_relu_raw("cuda", True))["run"]
    fused = next(r for r in rec["per_kernel"] if r["name"] == "triton_poi_fused_addmm_relu_0")
    assert fused["us"] == 3.0 and fused["us_flushed"] == 4.5
    assert rec["sum_check"]["ok"]  # the sums are the times as in the call
    text = "\n".join(tables.run_lines(rec))
    assert "L2 flushed" in next(line for line in text.splitlines() if line.startswith("  kernel "))
    assert "  L2 flushed: L2 flushed before each Triton kernel (a 126 MB write), 3 profiled calls" in text


def test_a_gpu_bundle_benched_on_the_cpu_says_its_launches_were_not_matched():
    from pathlib import Path

    from kernelscope.bench.record import build_record
    from kernelscope.bundle.io import read_bundle

    bundle = read_bundle(Path(__file__).parent / "fixtures" / "gpu" / "linear_relu")
    raw = _linear_relu_raw("cpu", False)
    raw["run"]["compiled"]["sequence"] = [["cpp_fused_addmm_relu_0", 20.0, c] for c in range(10)]
    rec = build_record(bundle, {"device": "cpu"}, raw)["run"]
    assert rec["sum_check"] is None
    text = "\n".join(tables.run_lines(rec))
    assert "per-launch times: not matched: the bundle's launches are those of a capture on cuda" in text
    assert not re.search(r"^sum check", text, re.M) and not re.search(r"(?<![\d.])0\.0 µs", text)


def test_the_l2_flush_runs_before_every_triton_launch_and_the_hook_is_undone():
    import importlib

    import pytest

    pytest.importorskip("triton")
    from kernelscope.bench import torch_private as tp

    cls = getattr(importlib.import_module(tp.CACHING_AUTOTUNER[0]), tp.CACHING_AUTOTUNER[1])
    original = cls.run
    flushes = []
    with tp.l2_flushed_triton_launches(lambda: flushes.append("flush")) as hooked:
        assert hooked and cls.run is not original
        with pytest.raises(AttributeError):  # not a real kernel: the launch itself fails, after the flush
            cls.run(object(), stream=0)
    assert flushes == ["flush"] and cls.run is original


def test_a_kernel_linked_to_nothing_has_no_launch_group_even_when_an_op_has_id_0():
    from types import SimpleNamespace

    pytest.importorskip("torch")
    from kernelscope.bench.profiling import linked_group

    op0 = SimpleNamespace(id=0, name="aten::mm", cpu_parent=None)
    op7 = SimpleNamespace(id=7, name="aten::addmm", cpu_parent=SimpleNamespace(id=6, name="aten::linear", cpu_parent=None))
    ops = {0: op0, 7: op7}
    assert linked_group(0, ops) is None  # torch 2.11: no linked_correlation_id, read as 0
    assert linked_group(7, ops) == 6  # walked up to the outermost ATen op
    assert linked_group(9, ops) is None
