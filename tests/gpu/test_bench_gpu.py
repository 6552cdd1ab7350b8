"""The bench on a real GPU: add_relu at 2**24, counts computed and measured, bandwidth against the
measured copy ceiling, per-kernel times against an independent profiler run, sweep, one kernel changed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kernelscope.bundle.io import read_bundle

from ..conftest import REPO, kernelscope_cmd

FLAGS = ("--reps", "50", "--budget", "0.3", "--profile-calls", "10", "-q")


@pytest.fixture(scope="module")
def gpu_add_relu(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench-gpu")
    bundle = root / "add_relu"
    env = {"KERNELSCOPE_CACHE_DIR": str(root / "cache")}
    proc = kernelscope_cmd("capture", "add_relu", "-o", str(bundle), "--device", "cuda", "-q", env=env)
    assert proc.returncode == 0, proc.stderr
    proc = kernelscope_cmd("bench", str(bundle), *FLAGS, "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    return bundle, json.loads(proc.stdout)["run"], env


def test_add_relu_counts_computed_and_measured(gpu_add_relu):
    _, run, _ = gpu_add_relu
    assert run["inputs"] == ["f32[16777216]", "f32[16777216]"]
    assert (run["counts"]["eager"]["kernels"], run["counts"]["eager"]["transfers"]) == (2, 5)
    assert (run["counts"]["compiled"]["kernels"], run["counts"]["compiled"]["transfers"]) == (1, 3)
    assert run["eager"]["launches_per_call"] == 2
    assert run["compiled"]["launches_per_call"] == 1
    assert run["correctness"]["ok"]
    assert run["clocks"]["before"].get("nvidia_smi") or run["clocks"]["before"].get("nvidia_smi_error")


def test_fused_kernel_bandwidth_against_the_measured_copy_ceiling(gpu_add_relu):
    _, run, _ = gpu_add_relu
    (row,) = run["per_kernel"]
    assert row["name"] == "triton_poi_fused_add_relu_0"
    assert row["bytes_read"] + row["bytes_written"] == 3 * 2**26
    assert run["ceilings"]["copy"]["gbps"] > 500  # measured, not a datasheet constant
    assert row["pct_copy"] >= 70, row


def test_per_kernel_time_agrees_with_an_independent_profiler_run(gpu_add_relu):
    _, run, _ = gpu_add_relu
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "independent_profile.py"), "30"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    (row,) = run["per_kernel"]
    independent = json.loads(proc.stdout.strip().splitlines()[-1])[row["name"]]
    assert abs(row["us"] - independent) / independent <= 0.05, (row["us"], independent)


def test_sweep_shows_where_compiling_pays(gpu_add_relu):
    bundle, _, env = gpu_add_relu
    proc = kernelscope_cmd("bench", str(bundle), "--sweep", "--sizes", "1024,65536,2**20,2**24", *FLAGS, env=env)
    assert proc.returncode == 0, proc.stderr
    sweep = read_bundle(bundle).extra["bench"]["sweep"]
    assert [r["size"] for r in sweep["rows"]] == [1024, 65536, 2**20, 2**24]
    assert all("error" not in r for r in sweep["rows"])
    assert "compiling pays from size" in proc.stdout or "did not pay" in proc.stdout


def test_one_kernel_with_a_changed_xblock(gpu_add_relu):
    bundle, _, env = gpu_add_relu
    proc = kernelscope_cmd("bench", str(bundle), "--kernel", "triton_poi_fused_add_relu_0", "--set", "XBLOCK=256",
                           "-q", env=env)
    assert proc.returncode == 0, proc.stderr
    rec = read_bundle(bundle).extra["bench"]["kernels"]["triton_poi_fused_add_relu_0"]
    recorded, changed = rec["runs"]
    assert changed["kwargs"]["XBLOCK"] == 256
    assert changed["same_result"] is True
    assert recorded["median_us"] > 0 and changed["median_us"] > 0 and recorded["gbps"] > 0
    assert "changed" in proc.stdout and "XBLOCK=256" in proc.stdout
