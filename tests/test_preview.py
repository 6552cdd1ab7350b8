"""`capture --preview ARCH`: what Inductor emits for a CUDA GPU, generated on this CPU-only machine."""

from __future__ import annotations

import re

import pytest

from kernelscope.bundle.io import read_bundle
from tests.conftest import GPU_FIXTURES, PREVIEW_ARCHES, PREVIEW_SAMPLES, _preview_checked_or_skip, kernelscope_cmd

# torch 2.13's names (the H200 fixture, torch 2.11, names softmax's kernel
# triton_per_fused__softmax_exp_prepare_softmax_online_sub_0).
EXPECTED = {"add_relu": ["triton_poi_fused_add_relu_0"],
            "softmax": ["triton_per_fused__softmax_prepare_softmax_online_0"]}


def test_max_autotune_preview_is_refused_in_one_line():
    proc = kernelscope_cmd("capture", "add_relu", "--preview", "sm_90", "--mode", "max-autotune", "-o", "/nonexistent/x")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "max-autotune cannot be previewed" in proc.stderr


def test_unknown_preview_arch_is_a_usage_error():
    proc = kernelscope_cmd("capture", "add_relu", "--preview", "sm_75", "-o", "/nonexistent/x")
    assert proc.returncode == 2 and "sm_90" in proc.stderr


def test_old_bundles_are_not_previews():
    assert read_bundle(GPU_FIXTURES / "add_relu").preview is None


def test_failed_preview_names_the_torch_version():
    import torch

    from kernelscope.capture.preview_patches import PreviewError, check_preview

    with pytest.raises(PreviewError, match=re.escape(f"torch {torch.__version__}")):
        check_preview([], None)
    with pytest.raises(PreviewError, match="C\\+\\+ kernels"):
        check_preview(["cpp_fused_add_0 = async_compile.cpp_pybinding("], None)


@pytest.mark.slow
@pytest.mark.parametrize("sample", ["add_relu", "softmax"])
def test_preview_has_triton_kernels_nodes_lines_and_is_marked(preview_sm90, sample):
    b = read_bundle(preview_sm90[sample])
    assert b.status == "ok"
    assert b.preview == {"arch": "sm_90", "device_name": "NVIDIA H100 80GB HBM3", "checked": True}
    assert [k.name for k in b.kernels] == EXPECTED[sample]
    for k in b.kernels:
        assert k.lang == "triton"
        assert k.fx_nodes, k.name
        assert any(u.line and u.file.endswith(f"{sample}.py") for u in k.user_lines), k.name
        assert all(v.metadata["target"]["arch"] == 90 for v in k.triton)
        assert {"ttir", "ttgir", "llir", "ptx", "cubin"} <= set(k.triton[0].files)
    first = kernelscope_cmd("show", str(preview_sm90[sample])).stdout.splitlines()[0]
    assert "PREVIEW sm_90" in first


@pytest.mark.slow
@pytest.mark.parametrize("arch", PREVIEW_ARCHES)
@pytest.mark.parametrize("sample", PREVIEW_SAMPLES)
def test_every_sample_previews_and_every_kernel_goes_to_sass(previews, sample, arch):
    """Each sample previews for sm_90 and sm_80 on this CPU build: the same kernels, in the same order
    and of the same kind, as the real H200 capture (Triton or extern, extern calls by name: cuDNN
    attention for attention's fp16 SDPA on sm_90, flash on sm_80, efficient attention for tiny_gpt's
    fp32 one), and every Triton
    kernel's cubin disassembles to SASS for that arch."""
    from kernelscope.pipeline.stages import disassemble

    b = read_bundle(previews[sample, arch])
    real = read_bundle(GPU_FIXTURES / sample)
    assert b.status == "ok" and b.preview["arch"] == arch

    def kinds(bundle):
        return [k.name if k.lang != "triton" else "triton" for k in bundle.kernels]

    expected = kinds(real)
    if arch == "sm_80":  # torch prefers cuDNN attention on sm_90/sm_100 only; an A100 gets flash attention
        expected = [n.replace("_cudnn_attention", "_flash_attention") for n in expected]
    assert kinds(b) == expected
    for k in b.kernels:
        if k.lang != "triton":
            continue
        assert k.fx_nodes and k.user_lines, k.name
        for v in k.triton:
            assert v.metadata["target"]["arch"] == int(arch[3:]), k.name
            sass = disassemble(previews[sample, arch] / v.files["cubin"])
            assert not sass.missing and ("LDG" in sass.text or "STG" in sass.text), (k.name, sass.missing_reason)


@pytest.mark.slow
def test_preview_kernel_goes_to_sass(preview_sm90):
    proc = kernelscope_cmd("show", str(preview_sm90["add_relu"]), "--kernel", "triton_poi_fused_add_relu_0",
                           "--artifact", "sass")
    assert proc.returncode == 0, proc.stderr
    assert "sm_90" in proc.stdout and "LDG" in proc.stdout


@pytest.mark.slow
def test_preview_autotune_candidates_none_chosen(preview_sm90):
    b = read_bundle(preview_sm90["add_relu"])
    k = b.kernels[0]
    assert len(k.triton) >= 2  # pointwise candidates (num_warps 4 and 8 on sm_90)
    assert not any(v.chosen for v in k.triton)


@pytest.mark.slow
def test_diff_preview_against_the_h200_capture(preview_sm90):
    """The same kernel by name on both sides (none added, removed or replaced); torch 2.13 here vs
    2.11 there changes the kernel's inductor_meta, so it is "changed", not "same"."""
    proc = kernelscope_cmd("diff", str(preview_sm90["add_relu"]), str(GPU_FIXTURES / "add_relu"))
    assert proc.returncode == 0, proc.stderr
    assert "PREVIEW sm_90" in proc.stdout.splitlines()[1]
    assert "0 replaced" in proc.stdout and "0 added, 0 removed" in proc.stdout
    assert "triton_poi_fused_add_relu_0" in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name, kernels, note", [
    ("constant_tensor", ["triton_poi_fused__to_copy_mul_0"], None),
    ("unaligned_mm", ["extern_kernels.mm", "triton_poi_fused_relu_0"], "left 1 such matmul unpadded"),
])
def test_preview_of_graph_constants_and_benchmarked_padding(tmp_path, name, kernels, note):
    """A constant tensor in the graph is never copied to the absent device; a padding decision Inductor
    would benchmark is answered "no pad" and said so in the bundle's notes."""
    _preview_checked_or_skip()
    out = tmp_path / name
    proc = kernelscope_cmd("capture", f"tests/fixtures/targets/preview_edges.py::{name}", "--preview", "sm_90",
                           "-o", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    b = read_bundle(out)
    assert [k.name for k in b.kernels] == kernels
    assert (note is None) or any(note in n for n in b.notes), b.notes


@pytest.mark.slow  # starts a child that imports torch (seconds)
def test_preview_of_a_training_step_is_refused_in_one_line(tmp_path):
    """Autograd over FakeTensors on 'cuda' aborts a CPU-only torch (no CUDA device guard): refused
    before compiling, one line, no bundle."""
    proc = kernelscope_cmd("capture", "mlp_train", "--preview", "sm_90", "-o", str(tmp_path / "b"), "-q")
    assert proc.returncode == 2
    assert "cannot trace autograd" in proc.stderr and proc.stderr.strip().count("\n") == 0
    assert not (tmp_path / "b").exists()


def test_the_preview_sdpa_converts_a_boolean_mask_as_torchs_own_composite():
    """The preview's SDPA composite (it picks the CUDA backend itself) turns a boolean mask into an
    additive one with the same traced ops as torch's C++ composite of this version (traced here on
    the CPU, where both take their math / CPU-flash path after the conversion)."""
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx

    from kernelscope.capture.preview_patches import GPUS, sdpa_composite

    q, mask = torch.randn(1, 2, 8, 16), torch.ones(8, 8, dtype=torch.bool).tril()

    def first_ops(fn):
        code = make_fx(fn)(q, mask).code
        return [line.strip().split(" = ")[1] for line in code.splitlines() if " = torch.ops.aten." in line][:3]

    ours = first_ops(lambda q, m: sdpa_composite(GPUS["sm_90"], q, q, q, m))
    torchs = first_ops(lambda q, m: torch.ops.aten.scaled_dot_product_attention(q, q, q, m))
    assert ours == torchs
    assert "where" in ours[2]


@pytest.mark.slow
def test_preview_of_a_module_that_converts_in_init_and_indexes_its_buffers(tmp_path):
    """`.half()`, `.to("cuda")` and `.to(torch.bfloat16)` in __init__, buffers sliced and indexed in
    forward (what transformers models do) preview on this CPU-only build: Triton kernels, in bf16."""
    _preview_checked_or_skip()
    out = tmp_path / "converts"
    proc = kernelscope_cmd("capture", "tests/fixtures/targets/preview_models.py::ConvertsInInit", "--preview",
                           "sm_90", "-o", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    b = read_bundle(out)
    assert b.status == "ok" and b.preview["arch"] == "sm_90"
    triton = [k for k in b.kernels if k.lang == "triton"]
    assert triton and all(k.name.startswith("triton_") for k in triton), [k.name for k in b.kernels]
    assert any("embedding" in k.name for k in triton), [k.name for k in triton]
    code = (out / b.graphs[0].files["output_code"]).read_text()
    assert "torch.bfloat16" in code and "async_compile.cpp" not in code


def test_the_preview_sdpa_takes_the_math_path_for_a_mask_expanded_along_its_last_dim():
    """transformers' BERT mask under torch.compile is a boolean [B, 1, L, L] expanded from [1, 1, L, 1]
    (stride 0 in its last dim): torch's CUDA chooser refuses every fused kernel for it
    (check_last_dim_stride_equals_1_dense), so the real H200 compile used the math path (bmm, softmax);
    the same mask made contiguous keeps memory-efficient attention (fp32 on sm_90)."""
    import torch

    from kernelscope.capture.preview_patches import GPUS
    from kernelscope.capture.preview_sdpa import EFFICIENT, MATH, sdp_choice

    q = torch.randn(2, 128, 4, 64).transpose(1, 2)
    expanded = (torch.arange(128).view(1, 1, 128, 1) >= 0).expand(2, -1, 128, 128)
    assert expanded.stride(-1) == 0
    assert sdp_choice(GPUS["sm_90"], q, q, q, expanded) == MATH
    assert sdp_choice(GPUS["sm_90"], q, q, q, expanded.contiguous()) == EFFICIENT
    assert sdp_choice(GPUS["sm_90"], q, q, q, None) == EFFICIENT
