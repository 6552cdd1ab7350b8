"""`kernelscope show --artifact`: the text of each artifact, and one-line errors for bad input."""

from __future__ import annotations

import pytest

from kernelscope.bundle.io import BundleError, read_bundle
from kernelscope.pipeline.artifacts import ARTIFACTS, render_artifact


@pytest.fixture(scope="module")
def add_relu(ref_bundles):
    bundle = read_bundle(ref_bundles["add_relu"])
    return bundle, bundle.kernel("triton_poi_fused_add_relu_0")


@pytest.mark.parametrize(
    "artifact,needle",
    [
        ("triton-source", "def triton_poi_fused_add_relu_0("),
        ("ttir", "tt.load"),
        ("ttgir", "#ttg.blocked"),
        ("llir", "define ptx_kernel"),
        ("ptx", ".target sm_90a"),
        ("sass", "LDG.E.128"),
        ("cubin-info", "REG:"),
        ("facts", "registers per thread"),
    ],
)
def test_artifact_text(add_relu, artifact, needle):
    assert needle in render_artifact(*add_relu, artifact)


def test_passes_artifact_recomputes_into_the_cache(add_relu, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path))
    text = render_artifact(*add_relu, "passes")
    head, *rows = text.splitlines()
    assert head.startswith(f"{len(rows)} MLIR passes, ") and "changed" in head
    assert any(" * " in r and "ConvertTritonToTritonGPU" in r for r in rows)
    assert (tmp_path / "pipeline").is_dir()
    assert render_artifact(*add_relu, "llvm-passes").startswith(tuple("123456789"))


def test_arch_recompiles(add_relu, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path))
    assert ".target sm_80" in render_artifact(*add_relu, "ptx", arch="sm_80")
    assert "sm_80" in render_artifact(*add_relu, "facts", arch="sm_80")


def test_one_line_errors(add_relu, ref_bundles):
    bundle, kernel = add_relu
    with pytest.raises(BundleError, match="unknown artifact 'wat'; choose one of: triton-source"):
        render_artifact(bundle, kernel, "wat")
    with pytest.raises(BundleError, match="unknown GPU arch"):
        render_artifact(bundle, kernel, "ptx", arch="pascal")
    mm_bundle = read_bundle(ref_bundles["linear_relu_bf16_autotune"])
    extern = next(k for k in mm_bundle.kernels if k.lang != "triton")
    with pytest.raises(BundleError) as info:
        render_artifact(mm_bundle, extern, "sass")
    message = str(info.value)
    assert "is not a Triton kernel (extern); it has no Triton artifacts" in message and "\n" not in message


def test_artifact_names():
    assert {"ttir", "ttgir", "llir", "ptx", "sass", "passes", "facts", "triton-source", "cubin-info"} <= set(ARTIFACTS)
