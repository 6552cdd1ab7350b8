"""Recompiling captured Triton kernels for other archs on a CPU-only machine, and comparing archs."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.bundle.io import read_bundle
from kernelscope.pipeline.compile import PipelineError, parse_arch
from kernelscope.pipeline.linemap import lines_for_source_line
from kernelscope.pipeline.retarget import compare_archs, retarget, retarget_folder

from .conftest import REFERENCE


def _mm_template_folder() -> Path:
    """A max-autotune bf16 mm template (uses wgmma on the H200 it was captured on)."""
    folders = sorted(p.parent for p in (REFERENCE / "linear_relu_bf16_autotune" / "triton").glob("*/triton_mm.ttir"))
    assert folders, "tests/fixtures/reference lacks the bf16 autotune templates"
    return folders[0]


@pytest.fixture(scope="module")
def mm(tmp_path_factory):
    folder = _mm_template_folder()
    out = tmp_path_factory.mktemp("retarget")
    return {arch: retarget_folder(folder, arch, out / arch) for arch in ("sm_80", "sm_90")}, folder


def test_captured_template_uses_wgmma():
    ptx = next(_mm_template_folder().glob("*.ptx")).read_text()
    assert "wgmma.mma_async" in ptx


def test_sm80_recompile_uses_mma_not_wgmma(mm):
    by_arch, _ = mm
    sm80 = by_arch["sm_80"]
    assert sm80.compile.upgraded_ir  # the triton 3.6 MLIR was rewritten for this triton
    ptx = sm80.stage("ptx").text
    assert ".target sm_80" in ptx
    assert "mma.sync.aligned" in ptx and "wgmma" not in ptx
    assert "HMMA" in sm80.stage("sass").text and "HGMMA" not in sm80.stage("sass").text
    facts = {f.name: f for f in sm80.facts()}
    assert facts["target"].value == "sm_80"
    assert any(name.startswith("tensor-core (HMMA)") for name in facts)


def test_sm90_recompile_uses_wgmma_and_diff_shows_it(mm):
    by_arch, _ = mm
    assert "wgmma.mma_async" in by_arch["sm_90"].stage("ptx").text
    diffs = compare_archs(by_arch["sm_80"], by_arch["sm_90"])
    assert set(diffs) == {"ttir", "ttgir", "llir", "ptx", "sass"}
    ptx_diff = diffs["ptx"].splitlines()
    assert ptx_diff[0] == "--- PTX sm_80" and ptx_diff[1] == "+++ PTX sm_90"
    assert any(ln.startswith("-") and "mma.sync" in ln for ln in ptx_diff)
    assert any(ln.startswith("+") and "wgmma" in ln for ln in ptx_diff)
    assert diffs["ttir"] == ""  # TTIR is arch-independent


def test_bundle_kernel_retargets_with_line_mapping(ref_bundles, tmp_path):
    bundle = read_bundle(ref_bundles["add_relu"])
    kernel = bundle.kernel("triton_poi_fused_add_relu_0")
    result = retarget(bundle, kernel, "sm_80", out_dir=tmp_path)
    assert all(not s.missing for s in result.stages)
    ptx = result.stage("ptx")
    assert ".target sm_80" in ptx.text
    lines = lines_for_source_line(ptx, 24, kernel.kernel_path)
    assert any("ld.global" in ptx.lines[n - 1] for n in lines)


def test_bad_arch_and_bad_folder_are_one_line_errors(tmp_path):
    with pytest.raises(PipelineError, match=r"unknown GPU arch 'volta'"):
        parse_arch("volta")
    assert parse_arch("sm_90a") == 90 and parse_arch("sm100") == 100 and parse_arch(120) == 120
    with pytest.raises(PipelineError, match="expected one kernel's stage files"):
        retarget_folder(tmp_path, "sm_80", tmp_path / "out")


def test_broken_ir_reports_the_compiler_error(tmp_path):
    src = tmp_path / "k"
    src.mkdir()
    (src / "k.ttir").write_text("module { this is not mlir }\n")
    with pytest.raises(PipelineError) as info:
        retarget_folder(src, "sm_80", tmp_path / "out")
    assert "failed" in str(info.value) and "\n" not in str(info.value)
