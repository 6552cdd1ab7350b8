"""Line mapping between the Triton source and every stage, on add_relu's real H200 artifacts."""

from __future__ import annotations

import pytest

from kernelscope.bundle.io import read_bundle
from kernelscope.pipeline.linemap import (
    line_map,
    lines_for_source_line,
    map_between,
    mlir_frames,
    source_lines_for,
)
from kernelscope.pipeline.stages import StageText, load_stages

LOAD_LINE = 24  # `tmp0 = tl.load(in_ptr0 + (x0), None)` in the kernel file
MAXIMUM_LINE = 28  # `tmp4 = triton_helpers.maximum(tmp3, tmp2)`: an inlined helper call


@pytest.fixture(scope="module")
def stages(ref_bundles):
    bundle = read_bundle(ref_bundles["add_relu"])
    kernel = bundle.kernel("triton_poi_fused_add_relu_0")
    return {s.stage: s for s in load_stages(bundle, kernel)}, kernel.kernel_path


def _texts(stage: StageText, lines: set[int]) -> list[str]:
    return [stage.lines[n - 1] for n in sorted(lines)]


def test_source_line_of_the_load_is_the_load(stages):
    by, _ = stages
    assert "tl.load(in_ptr0" in by["source"].lines[LOAD_LINE - 1]


def test_tl_load_maps_to_ld_global_in_ptx_and_ldg_in_sass(stages):
    by, path = stages
    ptx = _texts(by["ptx"], lines_for_source_line(by["ptx"], LOAD_LINE, path))
    assert any("ld.global" in t for t in ptx), ptx
    sass = _texts(by["sass"], lines_for_source_line(by["sass"], LOAD_LINE, path))
    assert any("LDG.E.128" in t for t in sass), sass
    # and not the other input's load (line 25)
    assert not any("%rd3" in t for t in ptx if "ld.global" in t)


def test_every_ir_stage_maps_the_load(stages):
    by, path = stages
    for name, needle in (("ttir", "tt.load"), ("ttgir", "tt.load"), ("llir", "ld.global.v4.b32")):
        texts = _texts(by[name], lines_for_source_line(by[name], LOAD_LINE, path))
        assert any(needle in t for t in texts), (name, texts)


def test_back_from_stage_lines_to_source(stages):
    by, path = stages
    ptx = by["ptx"]
    first_ld = next(i for i, t in enumerate(ptx.lines, 1) if "ld.global" in t)
    assert source_lines_for(ptx, first_ld, path) == {LOAD_LINE}
    sass = by["sass"]
    ldg = [i for i, t in enumerate(sass.lines, 1) if "LDG.E.128" in t]
    assert {min(source_lines_for(sass, i, path)) for i in ldg} == {24, 25}
    assert source_lines_for(sass, 1, path) == set()  # a header line has no source


def test_inlined_helper_maps_to_its_call_site(stages):
    by, path = stages
    # TTIR: the relu's select is `loc(callsite(#loc13 at #loc31))`: triton_helpers.py:119 at kernel:28
    ttir = _texts(by["ttir"], lines_for_source_line(by["ttir"], MAXIMUM_LINE, path))
    assert any("arith.select" in t for t in ttir) and any("arith.cmpf" in t for t in ttir)
    # LLVM: !DILocation(... inlinedAt: ...) and PTX's `@[ file:28:40 ]` note
    assert lines_for_source_line(by["llir"], MAXIMUM_LINE, path)
    ptx = _texts(by["ptx"], lines_for_source_line(by["ptx"], MAXIMUM_LINE, path))
    assert any("setp" in t for t in ptx), ptx


def test_stage_to_stage_through_the_source(stages):
    by, path = stages
    ttir = by["ttir"]
    load = next(i for i, t in enumerate(ttir.lines, 1) if "tt.load" in t)
    assert any("LDG" in by["sass"].lines[n - 1] for n in map_between(ttir, load, by["sass"], path))


def test_kernel_file_is_guessed_when_not_given(stages):
    by, path = stages
    assert line_map(by["ptx"]).kernel_file == path.rsplit("/", 1)[-1]
    assert lines_for_source_line(by["ptx"], LOAD_LINE) == lines_for_source_line(by["ptx"], LOAD_LINE, path)


def test_mlir_fused_named_and_nested_aliases():
    text = "\n".join(
        [
            '#loc = loc("/k.py":18:0)',
            '#loc1 = loc("/k.py":30:4)',
            '#loc2 = loc("/helpers.py":7:1)',
            '#loc3 = loc("x"(#loc1))',
            "#loc4 = loc(callsite(#loc2 at #loc3))",
            "  %0 = arith.addf %a, %b : f32 loc(#loc4)",
            '  %1 = arith.mulf %a, %b : f32 loc(fused<"w">[#loc1, "/k.py":31:2])',
            '  %2 = arith.subf %a, %b : f32 loc("/k.py":32:2 to 32:9)',
            "  %3 = arith.divf %a, %b : f32 loc(unknown)",
        ]
    )
    frames = mlir_frames(text)
    assert frames[6] == {("/helpers.py", 7), ("/k.py", 30)}
    assert frames[7] == {("/k.py", 30), ("/k.py", 31)}
    assert frames[8] == {("/k.py", 32)}
    assert 9 not in frames
    st = StageText("ttir", "TTIR", text)
    assert lines_for_source_line(st, 30, "/k.py") == {6, 7}
    assert source_lines_for(st, 7, "/k.py") == {30, 31}
