"""Preview checked against the real thing on the GPU box: with the GPU hidden (CUDA_VISIBLE_DEVICES=)
a preview for sm_90 gives the kernels a real capture gave on the H200 (the committed GPU fixtures):
the same names, fused nodes and kernel sources, and every stage of the candidate the real run chose
(a preview keeps them all): `diff` says "same" for every kernel. Also a real model (transformers'
GPT-2, 12 layers), previewed and captured in the same run."""

from pathlib import Path

import pytest

from kernelscope.bundle.io import read_bundle
from kernelscope.report.diff import diff_bundles

from ..conftest import REPO, kernelscope_cmd

SAMPLES = ("add_relu", "mul_add_sigmoid", "softmax", "layer_norm", "sin_cos", "graph_break", "linear_relu",
           "attention", "tiny_gpt")
HIDDEN = {"CUDA_VISIBLE_DEVICES": ""}


def _assert_same(preview, real):
    assert preview.preview is not None
    assert [k.name for k in preview.kernels] == [k.name for k in real.kernels]
    assert [k.fx_nodes for k in preview.kernels] == [k.fx_nodes for k in real.kernels]
    assert [[(Path(u.file).name, u.line) for u in k.user_lines] for k in preview.kernels] == \
        [[(Path(u.file).name, u.line) for u in k.user_lines] for k in real.kernels]  # the fixtures' paths are normalised
    d = diff_bundles(preview, real)
    assert [(e.title(), e.changes) for e in d.entries if e.status != "same"] == []


@pytest.mark.parametrize("sample", SAMPLES)
def test_preview_with_the_gpu_hidden_matches_a_real_capture(sample, tmp_path):
    out = tmp_path / sample
    proc = kernelscope_cmd("capture", sample, "--preview", "sm_90", "-o", str(out), "-q", env=HIDDEN)
    assert proc.returncode == 0, proc.stderr
    _assert_same(read_bundle(out), read_bundle(Path(REPO) / "tests" / "fixtures" / "gpu" / sample))


def test_a_training_step_is_refused_in_one_line(tmp_path):
    proc = kernelscope_cmd("capture", "mlp_train", "--preview", "sm_90", "-o", str(tmp_path / "b"), "-q", env=HIDDEN)
    assert proc.returncode == 2 and "cannot trace autograd" in proc.stderr
    assert proc.stderr.strip().count("\n") == 0


def test_a_real_model_previews_as_it_compiles(tmp_path):
    pytest.importorskip("transformers")
    target = "benchmarks/models/hf_gpt2.py::GPT2"
    real = kernelscope_cmd("capture", target, "-o", str(tmp_path / "real"), "-q")
    assert real.returncode == 0, real.stderr
    preview = kernelscope_cmd("capture", target, "--preview", "sm_90", "-o", str(tmp_path / "preview"), "-q",
                              env=HIDDEN)
    assert preview.returncode == 0, preview.stderr
    _assert_same(read_bundle(tmp_path / "preview"), read_bundle(tmp_path / "real"))
