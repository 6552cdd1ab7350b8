"""`run` of a training script on the GPU and what follows from its bundle alone: `bench --run-bundle-code`
(correctness against float64 with like compared with like, the per-launch sum check), a copy with one
constant changed caught, `show --lines` after the bench, and `bench --ncu` where Nsight Compute can read
counters. The script is tests/fixtures/scripts/mlp_train_step.py: forward, backward and a compiled SGD step."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from kernelscope.bundle.io import read_bundle

from ..conftest import REPO, kernelscope_cmd

SCRIPT = REPO / "tests" / "fixtures" / "scripts" / "mlp_train_step.py"
QUICK = ("--reps", "10", "--budget", "0.2", "--profile-calls", "5")


def _env(root: Path) -> dict:
    return {"KERNELSCOPE_CACHE_DIR": str(root / "cache"), "KERNELSCOPE_CACHE": str(root / "cache")}


@pytest.fixture(scope="module")
def gpu_training_bundle(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("gpu-train-step")
    out = root / "step"
    proc = kernelscope_cmd("run", "--no-ui", "-o", str(out), "--", sys.executable, str(SCRIPT), "--steps", "2",
                           "--width", "256", "--batch", "1024", "--device", "cuda", cwd=str(root), env=_env(root))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return out


@pytest.fixture(scope="module")
def gpu_training_bench(gpu_training_bundle) -> list[str]:
    proc = kernelscope_cmd("bench", str(gpu_training_bundle), "--run-bundle-code", *QUICK,
                           env=_env(gpu_training_bundle.parent))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.splitlines()


def test_run_of_a_training_script_on_the_gpu_lists_triton_kernels_on_its_lines(gpu_training_bundle):
    b = read_bundle(gpu_training_bundle)
    kinds = {g.kind for g in b.graphs}
    assert {"forward", "backward"} <= kinds, kinds
    triton = [k for k in b.kernels if k.lang == "triton"]
    assert triton, [k.name for k in b.kernels]
    on_script = [k for k in triton if any(Path(u.file).name == "mlp_train_step.py" for u in k.user_lines)]
    assert on_script, [(k.name, k.user_lines) for k in triton]
    assert b.environment.get("device") == "cuda" or "cuda" in json.dumps(b.environment)


def test_bench_of_the_run_bundle_is_correct_and_its_launches_add_up(gpu_training_bench):
    lines = gpu_training_bench
    verdict = next(x for x in lines if x.startswith("correctness "))
    assert verdict.startswith("correctness OK: "), "\n".join(lines)
    compared = lines[lines.index(verdict) + 1]
    assert "-forward:" in compared and "-backward:" in compared, compared
    sums = [x for x in lines if x.startswith("sum check")]
    assert sums and "MISMATCH" not in sums[0], "\n".join(lines)


def test_a_copy_with_one_constant_changed_is_caught_on_the_gpu(gpu_training_bundle, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(gpu_training_bundle, broken)
    forward = next(g for g in read_bundle(broken).graphs if g.kind == "forward")
    code = broken / forward.files["output_code"]
    text = code.read_text()
    first = text.index("beta=1, out=buf")  # a layer's bias added once (addmm): now twice
    code.write_text(text[:first] + "beta=2" + text[first + len("beta=1"):])
    proc = kernelscope_cmd("bench", str(broken), "--run-bundle-code", *QUICK, "--no-save", env=_env(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    verdict = next(x for x in proc.stdout.splitlines() if x.startswith("correctness "))
    assert verdict.startswith("correctness MISMATCH"), proc.stdout


def test_show_lines_after_the_gpu_bench_puts_device_time_on_the_scripts_lines(gpu_training_bundle, gpu_training_bench):
    proc = kernelscope_cmd("show", str(gpu_training_bundle), "--lines")
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"mlp_train_step\.py:\d+", proc.stdout), proc.stdout
    assert "adds up: exclusive" in proc.stdout and "run `kernelscope bench BUNDLE` first" not in proc.stdout


def test_ncu_profiles_the_slowest_kernels_or_says_why_not(gpu_training_bundle, gpu_training_bench, tmp_path):
    if shutil.which("ncu") is None:
        pytest.skip("Nsight Compute (ncu) is not on PATH")
    proc = kernelscope_cmd("bench", str(gpu_training_bundle), "--ncu", "--no-save", env=_env(tmp_path), timeout=400)
    out = proc.stdout + proc.stderr
    if "ERR_NVGPUCTRPERM" in out or "permission" in out.lower():
        pytest.skip("ncu may not read GPU counters here: " + out.strip().splitlines()[-1][:200])
    assert proc.returncode == 0, out[-2000:]
    assert "triton_" in proc.stdout and "% of samples" in proc.stdout, proc.stdout
