"""GPU captures recorded on an H200 by `kernelscope capture` (tests/fixtures/gpu), read on the CPU."""

import pytest

from kernelscope.bundle.io import read_bundle, read_text
from kernelscope.ingest.torch_logs import output_codes

from .conftest import GPU_FIXTURES, kernelscope_cmd


def bundle(name):
    return read_bundle(GPU_FIXTURES / name)


def test_add_relu_is_triton_poi_fused_add_relu_0_with_all_stage_files():
    b = bundle("add_relu")
    assert b.environment["device_name"] == "NVIDIA H200" and b.environment["compute_capability"] == "9.0"
    (k,) = b.kernels
    assert k.name == "triton_poi_fused_add_relu_0" and k.fx_nodes == ["add", "relu"]
    assert [u.line for u in k.user_lines] == [7]
    for v in k.triton:
        assert {"source", "ttir", "ttgir", "llir", "ptx", "cubin"} <= set(v.files)
        assert v.metadata["target"]["arch"] == 90
    (chosen,) = [v for v in k.triton if v.chosen]  # Inductor's autotuner picked exactly one config
    assert chosen.metadata["num_warps"] in (4, 8)
    assert "ld.global" in read_text(b, k.triton[0].files["ptx"])


@pytest.mark.parametrize("name", ["add_relu", "graph_break", "mlp_train", "linear_relu"])
def test_output_code_equals_what_torch_logs_printed(name):
    b = bundle(name)
    assert [read_text(b, g.files["output_code"]) for g in b.graphs] == output_codes(read_text(b, b.files["stderr"]))


def test_linear_relu_extern_mm_then_fused_epilogue():
    ks = bundle("linear_relu").kernels
    assert ks[0].kind == "extern" and ks[0].name in ("extern_kernels.mm", "extern_kernels.addmm")
    assert any(k.kind == "pointwise" and "relu" in k.fx_nodes for k in ks[1:])


def test_graph_break_sample_two_graphs_and_reason_at_line_8():
    b = bundle("graph_break")
    assert len(b.graphs) == 2
    (gb,) = b.graph_breaks
    assert gb.file.endswith("graph_break.py") and gb.line == 8 and "print" in gb.reason


def test_mlp_train_forward_and_backward_kernels():
    b = bundle("mlp_train")
    assert [g.kind for g in b.graphs] == ["forward", "backward"]
    bwd = [k for k in b.kernels if k.graph == b.graphs[1].id]
    assert any(k.lang == "triton" for k in bwd) and any(k.kind == "extern" for k in bwd)


def test_max_autotune_linear_relu_lists_candidates_and_uses_a_template():
    b = bundle("linear_relu_autotune")
    assert b.options["mode"] == "max-autotune"
    assert any(c.name.startswith("triton_mm") for c in b.autotune[0].choices)
    assert b.kernels[0].kind == "template"
    # Inductor reused the autotuning benchmark's compile for the template: its stages are found by name.
    assert {"ttgir", "ptx", "cubin"} <= set(b.kernels[0].triton[0].files)


def test_show_reads_a_gpu_bundle_without_a_gpu():
    proc = kernelscope_cmd("show", str(GPU_FIXTURES / "softmax"))
    assert proc.returncode == 0
    assert "triton_per_fused__softmax" in proc.stdout and "persistent_reduction" in proc.stdout
    ptx = kernelscope_cmd("show", str(GPU_FIXTURES / "add_relu"), "--kernel", "triton_poi_fused_add_relu_0",
                          "--artifact", "ptx")
    assert ".visible .entry triton_poi_fused_add_relu_0" in ptx.stdout


def test_the_grid_of_the_picked_config_is_a_kernel_fact():
    proc = kernelscope_cmd("show", str(GPU_FIXTURES / "add_relu"), "--kernel", "triton_poi_fused_add_relu_0",
                           "--artifact", "facts")
    b = bundle("add_relu")
    (chosen,) = [v for v in b.kernels[0].triton if v.chosen]
    xblock = chosen.config["XBLOCK"]
    assert f"({16777216 // xblock}, 1, 1) = ceil(xnumel 16777216 / XBLOCK {xblock})" in proc.stdout
