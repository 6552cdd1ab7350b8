"""Preview checked against the real thing on the GPU box: with the GPU hidden (CUDA_VISIBLE_DEVICES=)
a preview for sm_90 gives the kernels a real capture gave on the H200 (the committed GPU fixtures):
the same names, fused nodes and kernel sources; stage texts may differ with the autotune choice."""

from pathlib import Path

import pytest

from kernelscope.bundle.io import read_bundle
from kernelscope.report.diff import diff_bundles

from ..conftest import REPO, kernelscope_cmd

SAMPLES = ("add_relu", "softmax", "layer_norm", "graph_break", "linear_relu")


@pytest.mark.parametrize("sample", SAMPLES)
def test_preview_with_the_gpu_hidden_matches_a_real_capture(sample, tmp_path):
    out = tmp_path / sample
    proc = kernelscope_cmd("capture", sample, "--preview", "sm_90", "-o", str(out), "-q",
                           env={"CUDA_VISIBLE_DEVICES": ""})
    assert proc.returncode == 0, proc.stderr
    preview, real = read_bundle(out), read_bundle(Path(REPO) / "tests" / "fixtures" / "gpu" / sample)
    assert preview.preview is not None
    assert [k.name for k in preview.kernels] == [k.name for k in real.kernels]
    assert [k.fx_nodes for k in preview.kernels] == [k.fx_nodes for k in real.kernels]
    d = diff_bundles(preview, real)
    for e in d.entries:
        assert e.status in ("same", "changed"), f"{e.title()}: {e.status}"
        assert not any(c.startswith("source") for c in e.changes + [e.text_summary]), (e.title(), e.changes)
