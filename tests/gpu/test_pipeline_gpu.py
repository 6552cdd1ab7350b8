"""On a CUDA box: a live capture's Triton kernels show every stage, map lines, and recompile for sm_80.

Skipped without CUDA. Runs a real `kernelscope capture add_relu` on the GPU, then the pipeline layer
on the bundle it wrote, and recomputes add_relu's pass pipeline for the box's own arch.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

from kernelscope.bundle.io import read_bundle  # noqa: E402
from kernelscope.pipeline.artifacts import render_artifact  # noqa: E402
from kernelscope.pipeline.facts import facts_for  # noqa: E402
from kernelscope.pipeline.linemap import lines_for_source_line  # noqa: E402
from kernelscope.pipeline.passes import recompute_passes, select_log  # noqa: E402
from kernelscope.pipeline.retarget import retarget  # noqa: E402
from kernelscope.pipeline.stages import load_stages  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def live_add_relu(tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu") / "add_relu"
    proc = subprocess.run(
        [sys.executable, "-m", "kernelscope", "capture", "add_relu", "-o", str(out), "-q"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(REPO),
        env=dict(os.environ),
    )
    assert proc.returncode == 0, proc.stderr
    bundle = read_bundle(out)
    kernel = next(k for k in bundle.kernels if k.lang == "triton" and "add" in k.name)
    return bundle, kernel


def test_live_capture_has_every_stage_and_line_mapping(live_add_relu):
    bundle, kernel = live_add_relu
    stages = {s.stage: s for s in load_stages(bundle, kernel)}
    assert all(not s.missing for s in stages.values()), {k: s.missing_reason for k, s in stages.items()}
    src = stages["source"]
    load_line = next(i for i, t in enumerate(src.lines, 1) if "tl.load(" in t)
    ptx = stages["ptx"]
    assert any("ld.global" in ptx.lines[n - 1] for n in lines_for_source_line(ptx, load_line, kernel.kernel_path))
    sass = stages["sass"]
    assert any("LDG" in sass.lines[n - 1] for n in lines_for_source_line(sass, load_line, kernel.kernel_path))


def test_live_facts_and_passes(live_add_relu, tmp_path):
    bundle, kernel = live_add_relu
    facts = {f.name: f for f in facts_for(bundle, kernel)}
    cc = torch.cuda.get_device_capability()
    assert facts["target"].value == f"sm_{cc[0] * 10 + cc[1]}"
    assert isinstance(facts["registers per thread"].value, int)
    logs = recompute_passes(bundle, kernel, out_dir=tmp_path / "passes")
    mlir = select_log(logs, None, "mlir")
    assert len(mlir.passes) > 50 and mlir.changed_only()


def test_live_kernel_recompiles_for_sm80(live_add_relu, tmp_path, monkeypatch):
    bundle, kernel = live_add_relu
    result = retarget(bundle, kernel, "sm_80", out_dir=tmp_path / "sm80")
    assert ".target sm_80" in result.stage("ptx").text
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))
    assert "sm_80" in render_artifact(bundle, kernel, "facts", arch="sm_80")
