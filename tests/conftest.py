"""Shared fixtures: bundles built from the real H200 reference artifacts, and one real CPU capture.

Both are session-scoped: building from the reference is pure Python (well under a second each);
the CPU capture runs a real torch.compile (about 20-30 s on a 2-core machine) once per run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

# A suite started under nohup inherits SIGHUP ignored, and so would every kernelscope it starts: the
# hangup tests (tests/test_hostile_*.py) need the default a terminal session has.
if hasattr(signal, "SIGHUP") and signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "tests" / "fixtures" / "reference"  # trimmed H200 reference captures (see its README)
REF_CASES = ("add_relu", "mul_add_sigmoid", "linear_relu", "linear_relu_autotune", "linear_relu_bf16_autotune",
             "softmax", "layernorm", "sin_cos", "with_break", "mlp_train")
GPU_FIXTURES = REPO / "tests" / "fixtures" / "gpu"


def kernelscope_cmd(*args: str, timeout: float = 600, env: dict | None = None, cwd: str | None = None):
    """Run the CLI as a user would, in a fresh process."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([sys.executable, "-m", "kernelscope", *args], capture_output=True, text=True,
                          timeout=timeout, env=full_env, cwd=cwd or str(REPO))


@pytest.fixture(scope="session")
def ref_bundles(tmp_path_factory) -> dict[str, Path]:
    """Bundles built from tests/fixtures/reference (real H200 TORCH_TRACE logs + Triton caches)."""
    from kernelscope.ingest.open_trace import bundle_from_trace

    root = tmp_path_factory.mktemp("ref-bundles")
    out = {}
    for case in REF_CASES:
        src = REFERENCE / case
        out[case] = root / case
        bundle_from_trace(src / "trace", out[case], triton_cache=src / "triton", stderr_log=src / "torch_logs.txt")
    return out


@pytest.fixture(scope="session")
def cpu_add_relu(tmp_path_factory) -> Path:
    """A real `kernelscope capture add_relu --device cpu`, shared by every test that reads it."""
    out = tmp_path_factory.mktemp("cpu") / "add_relu"
    proc = kernelscope_cmd("capture", "add_relu", "-o", str(out), "--device", "cpu", "-q")
    assert proc.returncode == 0, proc.stderr
    return out


def _preview_checked_or_skip() -> None:
    from kernelscope.capture import preview_patches

    if not preview_patches.torch_checked():
        pytest.skip(f"--preview was checked against torch {', '.join(preview_patches.CHECKED_TORCH)}, "
                    f"not {preview_patches.version_line()}")


# Every sample a preview can make on a CPU build: mlp_train is a training step (refused, see test_preview).
PREVIEW_SAMPLES = ("add_relu", "mul_add_sigmoid", "softmax", "layer_norm", "sin_cos", "graph_break", "linear_relu",
                   "attention", "tiny_gpt")
PREVIEW_ARCHES = ("sm_90", "sm_80")


@pytest.fixture(scope="session")
def previews(tmp_path_factory) -> dict[tuple[str, str], Path]:
    """`kernelscope capture SAMPLE --preview ARCH` of every sample for sm_90 and sm_80 on this CPU
    machine, two at a time: {(sample, arch): bundle}."""
    _preview_checked_or_skip()
    root = tmp_path_factory.mktemp("preview")
    jobs = [(sample, arch) for arch in PREVIEW_ARCHES for sample in PREVIEW_SAMPLES]
    out, running, failed = {}, [], []
    while jobs or running:
        while jobs and len(running) < 2:
            sample, arch = jobs.pop(0)
            out[sample, arch] = root / arch / sample
            cmd = [sys.executable, "-m", "kernelscope", "capture", sample, "--preview", arch, "-o",
                   str(out[sample, arch]), "-q"]
            running.append(((sample, arch), subprocess.Popen(cmd, cwd=str(REPO), stdout=subprocess.PIPE,
                                                             stderr=subprocess.PIPE, text=True)))
        key, proc = running.pop(0)
        _, err = proc.communicate(timeout=600)
        if proc.returncode != 0:
            failed.append(f"{key}: {err.strip()}")
    assert not failed, failed
    return out


@pytest.fixture(scope="session")
def preview_sm90(previews) -> dict[str, Path]:
    return {sample: path for (sample, arch), path in previews.items() if arch == "sm_90"}


@pytest.fixture(scope="session")
def cpu_dynamic_softmax(tmp_path_factory) -> Path:
    """A real `--dynamic` capture of softmax with three calls of different row counts."""
    out = tmp_path_factory.mktemp("cpu") / "softmax_dynamic"
    proc = kernelscope_cmd("capture", "softmax", "-o", str(out), "--device", "cpu", "--dynamic", "-q",
                           "--args", "f32[64, 1024]; f32[128, 1024]; f32[256, 1024]")
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="session")
def cpu_recompile_softmax(tmp_path_factory) -> Path:
    """A real capture whose second call changes a static shape: one recompile, one failed guard."""
    out = tmp_path_factory.mktemp("cpu") / "softmax_recompile"
    proc = kernelscope_cmd("capture", "softmax", "-o", str(out), "--device", "cpu", "--no-dynamic", "-q",
                           "--args", "f32[8, 16]; f32[16, 16]")
    assert proc.returncode == 0, proc.stderr
    return out
