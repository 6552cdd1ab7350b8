"""Stages of a captured Triton kernel: every stage loads, and a missing tool or file leaves a placeholder."""

from __future__ import annotations

import pytest

from kernelscope.bundle.io import read_bundle
from kernelscope.pipeline.stages import STAGE_NAMES, STAGES, disassemble, load_stage_folder, load_stages, stage_spec

from .conftest import REFERENCE

ADD_RELU = "triton_poi_fused_add_relu_0"


@pytest.fixture(scope="module")
def add_relu(ref_bundles):
    bundle = read_bundle(ref_bundles["add_relu"])
    return bundle, bundle.kernel(ADD_RELU)


def test_stage_table_is_in_display_order():
    assert STAGE_NAMES == ("source", "ttir", "ttgir", "llir", "ptx", "sass")
    assert [s.order for s in STAGES] == sorted(s.order for s in STAGES)
    assert stage_spec("ttgir").lexer == "ttgir"


def test_every_stage_of_add_relu_loads(add_relu):
    bundle, kernel = add_relu
    stages = load_stages(bundle, kernel)
    assert [s.stage for s in stages] == list(STAGE_NAMES)
    assert all(not s.missing for s in stages), [s.missing_reason for s in stages]
    by = {s.stage: s for s in stages}
    assert by["source"].lines[17].startswith(f"def {ADD_RELU}(")
    assert "tt.load" in by["ttir"].text and "#blocked" in by["ttgir"].text
    assert "define ptx_kernel void @" + ADD_RELU in by["llir"].text
    assert "ld.global.v4.b32" in by["ptx"].text
    assert "LDG.E.128" in by["sass"].text and '//## File "' in by["sass"].text


def test_missing_disassembler_gives_placeholder_not_exception(add_relu, monkeypatch):
    bundle, kernel = add_relu
    monkeypatch.setenv("KERNELSCOPE_NVDISASM", "/nonexistent/nvdisasm")
    monkeypatch.setenv("KERNELSCOPE_CUOBJDUMP", "/nonexistent/cuobjdump")
    sass = load_stages(bundle, kernel)[-1]
    assert sass.stage == "sass" and sass.missing
    assert "nvdisasm not found" in sass.missing_reason and "cuobjdump not found" in sass.missing_reason
    assert sass.display_text().startswith("[SASS not available: ")


def test_missing_cubin_and_missing_files(tmp_path, add_relu):
    assert "no cubin" in disassemble(tmp_path / "k.cubin").missing_reason
    bundle, kernel = add_relu
    variant = kernel.triton[0]
    saved = dict(variant.files)
    try:
        del variant.files["ptx"]
        variant.files["cubin"] = "does/not/exist.cubin"
        by = {s.stage: s for s in load_stages(bundle, kernel)}
        assert by["ptx"].missing and "no .ptx file" in by["ptx"].missing_reason
        assert by["sass"].missing and "no cubin" in by["sass"].missing_reason
        assert not by["ttir"].missing
    finally:
        variant.files = saved


def test_non_triton_kernel_is_all_placeholders(ref_bundles):
    bundle = read_bundle(ref_bundles["linear_relu_bf16_autotune"])
    extern = next(k for k in bundle.kernels if k.lang != "triton")
    stages = load_stages(bundle, extern)
    assert all(s.missing and "not a Triton kernel" in s.missing_reason for s in stages)


def test_sass_cache_dir_is_reused(add_relu, tmp_path, monkeypatch):
    bundle, kernel = add_relu
    first = load_stages(bundle, kernel, cache_dir=tmp_path)[-1]
    assert first.path.startswith(str(tmp_path))
    monkeypatch.setenv("KERNELSCOPE_NVDISASM", "/nonexistent/nvdisasm")
    again = load_stages(bundle, kernel, cache_dir=tmp_path)[-1]
    assert again.text == first.text and not again.missing


def test_folder_entry_point():
    folder = next((REFERENCE / "softmax" / "triton").iterdir())
    stages = load_stage_folder(folder)
    assert stages[0].missing  # no kernel source given
    assert all(not s.missing for s in stages[1:])
