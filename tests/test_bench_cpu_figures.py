"""Figures a CPU bench prints that must be possible: rates with the digits that say something (a
0.08 GB/s row is not "0" beside its 1% of copy), a matmul ceiling that is measured (never
"0.0 TFLOP/s"), a % of the matmul ceiling above 100 only with its reason, the cache message never
calling a slower load the fast one, and a bench right after a CPU capture finding that capture's
compiled graph in the shared cache (with the C++ kernels still named in the profile)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelscope.bench import tables
from kernelscope.bench.analysis import fmt_rate
from kernelscope.bench.wording import ceiling_lines, compile_cache_note
from kernelscope.capture import compile_cache
from tests.conftest import kernelscope_cmd


def test_rates_keep_their_digits():
    assert [fmt_rate(x) for x in (3350.4, 25.2, 2.44, 0.0812, 0.0021, None, 0.0)] == \
        ["3350", "25", "2.4", "0.081", "0.0021", "-", "-"]


def test_a_cpu_matmul_ceiling_is_printed_as_measured_or_said_to_be_none():
    lines = ceiling_lines({"copy": {"gbps": 8.4, "method": "copy", "measured_at": "t"},
                           "matmul": {"float32": {"tflops": 0.062, "method": "1024x1024 ..., best of 18 runs"},
                                      "bfloat16": {"tflops": 0.0, "method": "1024x1024 ..."}}})
    assert lines[0].startswith("copy ceiling 8.4 GB/s")
    assert lines[1].startswith("matmul ceiling float32 0.062 TFLOP/s (")
    assert lines[2].startswith("matmul ceiling bfloat16: none measured")
    assert not any("0.0 TFLOP/s" in x for x in lines)


def _linear_relu_record(ceilings: dict, us: float) -> dict:
    """The linear_relu fixture's record as a CPU bench makes it: its GEMM and fused kernel taking ``us``."""
    from kernelscope.bench.record import build_record
    from kernelscope.bundle.io import read_bundle

    bundle = read_bundle(Path(__file__).parent / "fixtures" / "gpu" / "linear_relu")

    def side(seq):
        return {"e2e": {"median_us": 4 * us, "p10_us": 4 * us, "p90_us": 4 * us, "runs": 20}, "loop": {},
                "profile_calls": 10, "host_launches": {}, "sequence": seq}

    gemm = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8"
    compiled = [row for c in range(10) for row in ([gemm, us, 2 * c], ["triton_poi_fused_addmm_relu_0", us, 2 * c + 1])]
    run = {"inputs": ["f32[32, 512]"], "compile_s": 1.0, "correctness": {}, "rotation": {"why": "rotated"},
           "eager": side([[gemm, us, c] for c in range(10)]), "compiled": side(compiled),
           "grad_mode": "no_grad", "eval": False, "holds_modules": False}
    raw = {"device": {"device": "cuda"}, "versions": {}, "run": run, "ceilings": ceilings}
    return build_record(bundle, {"device": "cuda"}, raw)["run"]


def test_a_slow_row_shows_its_rate_and_a_rate_above_the_matmul_ceiling_says_why():
    ceilings = {"copy": {"gbps": 8.0, "method": "copy", "measured_at": "t"},
                "matmul": {"float32": {"tflops": 0.0001, "method": "1024x1024 float32, best of 9 runs"}}}
    rec = _linear_relu_record(ceilings, 2000.0)
    text = "\n".join(tables.run_lines(rec))
    fused = next(x for x in text.splitlines() if x.strip().startswith("triton_poi_fused_addmm_relu_0"))
    row = next(r for r in rec["per_kernel"] if r["name"] == "triton_poi_fused_addmm_relu_0")
    assert 0 < row["gbps"] < 1 and fmt_rate(row["gbps"]) in fused.split()  # e.g. 0.041, never "0"
    assert " 0 " not in fused
    gemm_row = next(x for x in text.splitlines() if "% of mm" in x)
    assert re.search(r"\d+% of mm\^", gemm_row)
    assert "  ^ above the matmul ceiling, which is one square matmul of that dtype" in text
    # within the ceiling: no mark, no note
    ceilings["matmul"]["float32"]["tflops"] = 1000.0
    text = "\n".join(tables.run_lines(_linear_relu_record(ceilings, 2000.0)))
    assert "% of mm^" not in text and "above the matmul ceiling" not in text


def test_the_cache_message_never_calls_a_slower_load_the_fast_one():
    hit = {"compile_cache": {"hits": 1, "misses": 0}, "capture_compile_s": 6.5}
    assert compile_cache_note({**hit, "compile_s": 2.1}) == \
        ": Inductor's cache held the capture's compiled graph; the capture's compile and first call took 6.5 s"
    slower = compile_cache_note({**hit, "compile_s": 22.8})
    assert slower.startswith(": Inductor's cache held the capture's compiled graph, yet took no less than the "
                             "capture's compile and first call (6.5 s)")
    # a preview's (or another device's) compile is not what the bench ran: no capture time quoted
    assert compile_cache_note({**hit, "capture_compile_s": None, "compile_s": 22.8}) == \
        ": Inductor's cache held the capture's compiled graph"


def test_children_share_inductors_precompiled_header(tmp_path):
    common = tmp_path / "common-cache"
    compile_cache.share_precompiled_headers(tmp_path / "tmp", common)
    links = list((tmp_path / "tmp").glob("torchinductor_*/precompiled_headers"))
    assert len(links) == 1 and links[0].is_symlink() and links[0].resolve() == (common / "precompiled_headers")


@pytest.mark.slow
def test_a_cpu_bench_right_after_its_capture_runs_the_captures_compiled_graph(tmp_path):
    env = {"KERNELSCOPE_CACHE": str(tmp_path / "cache"), "KERNELSCOPE_PRECOMPILED_HEADERS": ""}  # as a user has it
    bundle = tmp_path / "add_relu"
    proc = kernelscope_cmd("capture", "add_relu", "--device", "cpu", "-o", str(bundle), "-q", env=env)
    assert proc.returncode == 0, proc.stderr
    # Inductor's precompiled header was built into the shared cache, not the capture's temp folder
    assert list((tmp_path / "cache" / "compile-cache" / "precompiled_headers").glob("*.gch"))
    proc = kernelscope_cmd("bench", str(bundle), "--reps", "5", "--budget", "0", "--warmup", "2",
                           "--profile-calls", "3", "--no-save", env=env)
    assert proc.returncode == 0, proc.stderr
    speedup = next(x for x in proc.stdout.splitlines() if x.strip().startswith("speedup"))
    assert "Inductor's cache held the capture's compiled graph" in speedup, proc.stdout
    assert "compiled anew" not in speedup
    # the C++ kernel is still named and timed in the profile (without Inductor's kernel-profile flag)
    launch = next(x for x in proc.stdout.splitlines() if x.strip().startswith("cpp_fused_add_relu_0"))
    assert re.search(r"\d (µs|ms) ", launch), launch  # a time (ms on a loaded machine: 19.6 ms seen beside make test)
    assert "sum check OK" in proc.stdout
