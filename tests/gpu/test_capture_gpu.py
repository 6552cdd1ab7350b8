"""The capture foundation on a real GPU: every sample captures, with Triton kernels and their stages."""

import os
from pathlib import Path

import pytest

from kernelscope.bundle.io import read_bundle, read_text
from kernelscope.ingest.torch_logs import output_codes

from ..conftest import kernelscope_cmd

SAMPLES = ("add_relu", "mul_add_sigmoid", "linear_relu", "softmax", "layer_norm", "sin_cos", "graph_break",
           "mlp_train", "attention")


@pytest.fixture(scope="module")
def gpu_bundles(tmp_path_factory):
    """Every sample captured on CUDA; KERNELSCOPE_GPU_BUNDLES names a folder the `record` check
    (scripts/gpu_verify.sh) filled in the same session, to spare the GPU a second round of compiles."""
    recorded = os.environ.get("KERNELSCOPE_GPU_BUNDLES")
    root = Path(recorded) if recorded else tmp_path_factory.mktemp("gpu")
    out = {}
    for name, extra in [(s, []) for s in SAMPLES] + [("linear_relu_autotune", ["--mode", "max-autotune"])]:
        if not (root / name / "bundle.json").is_file():
            sample = "linear_relu" if name == "linear_relu_autotune" else name
            proc = kernelscope_cmd("capture", sample, "-o", str(root / name), "--device", "cuda", "-q", *extra)
            assert proc.returncode == 0, f"{name}: {proc.stderr}"
        out[name] = read_bundle(root / name)
    return out


def test_add_relu_is_one_triton_kernel_with_every_stage(gpu_bundles):
    b = gpu_bundles["add_relu"]
    assert [k.name for k in b.kernels] == ["triton_poi_fused_add_relu_0"]
    k = b.kernels[0]
    assert k.fx_nodes == ["add", "relu"] and k.kind == "pointwise"
    assert any(v.chosen for v in k.triton), "the autotuner's chosen config was not identified"
    for v in k.triton:
        assert {"source", "ttir", "ttgir", "llir", "ptx", "cubin"} <= set(v.files)
    assert b.environment["compute_capability"] and b.environment["triton"]
    printed = output_codes(read_text(b, b.files["stderr"]))
    assert [read_text(b, g.files["output_code"]) for g in b.graphs] == printed


def test_linear_relu_has_extern_mm_and_the_fused_epilogue(gpu_bundles):
    kinds = [(k.kind, k.name) for k in gpu_bundles["linear_relu"].kernels]
    assert kinds[0][0] == "extern" and "mm" in kinds[0][1]
    assert any(kind == "pointwise" and "relu" in name for kind, name in kinds)


def test_graph_break_sample_has_two_graphs_and_the_reason(gpu_bundles):
    b = gpu_bundles["graph_break"]
    assert len(b.graphs) == 2 and len(b.graph_breaks) == 1
    assert b.graph_breaks[0].line == 8 and "print" in b.graph_breaks[0].reason


def test_mlp_step_has_forward_and_backward_kernels(gpu_bundles):
    b = gpu_bundles["mlp_train"]
    kinds = {g.kind for g in b.graphs}
    assert kinds == {"forward", "backward"}
    assert any(k.graph.endswith("backward") and k.lang == "triton" for k in b.kernels)


def test_max_autotune_lists_the_candidates(gpu_bundles):
    b = gpu_bundles["linear_relu_autotune"]
    assert b.autotune and len(b.autotune[0].choices) > 3
    assert any(c.name.startswith("triton_mm") for c in b.autotune[0].choices)


def test_every_sample_has_kernels_and_user_lines(gpu_bundles):
    for name, b in gpu_bundles.items():
        assert b.status == "ok", name
        assert b.kernels, name
        assert any(k.user_lines for k in b.kernels), name
