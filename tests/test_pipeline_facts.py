"""Kernel facts with their sources: metadata, cuobjdump resource usage, SASS instruction counts."""

from __future__ import annotations

from kernelscope.bundle.io import read_bundle
from kernelscope.pipeline.facts import facts_for, render_facts, sass_counts

SASS = """\
        /*0000*/                   LDC R1, c[0x0][0x28] ;
        /*00c0*/                   LDG.E.128 R4, desc[UR4][R2.64] ;
        /*00d0*/              @P0  LDG.E R8, desc[UR4][R20.64] ;
        /*00e0*/                   FFMA R1, R2, R3, R4 ;
        /*00f0*/                   HMMA.16816.F32.BF16 R4, R8, R12, R4 ;
        /*0100*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0110*/                   STG.E.64 desc[UR4][R2.64], R4 ;
"""


def test_sass_counts_by_width_and_kind():
    counts = sass_counts(SASS)
    assert counts["instructions"] == 7
    assert counts["global loads"] == 2
    assert counts["global loads LDG.E.128 (128-bit)"] == 1
    assert counts["global loads LDG.E (32-bit)"] == 1
    assert counts["global stores STG.E.64 (64-bit)"] == 1
    assert counts["FMAs (FFMA)"] == 1
    assert counts["tensor-core (HMMA)"] == 1
    assert counts["barriers (BAR)"] == 1


def test_add_relu_facts_and_their_sources(ref_bundles):
    bundle = read_bundle(ref_bundles["add_relu"])
    kernel = bundle.kernel("triton_poi_fused_add_relu_0")
    facts = {f.name: f for f in facts_for(bundle, kernel, variant=kernel.triton[0])}
    assert facts["target"].value == "sm_90"
    assert facts["num_warps"].value == kernel.triton[0].metadata["num_warps"]
    assert facts["num_warps"].source == "Triton metadata json"
    assert facts["registers per thread"].source == "cuobjdump -res-usage"
    assert facts["registers per thread"].value > 0
    assert facts["local memory / spills (bytes)"].value == 0
    loads = [f for name, f in facts.items() if name.startswith("global loads LDG.E.128")]
    assert loads and loads[0].value == 4 and loads[0].source.startswith("SASS")
    assert "cuobjdump -res-usage" in render_facts(list(facts.values()))


def test_missing_tools_are_reported_as_facts(ref_bundles, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CUOBJDUMP", "/nonexistent/cuobjdump")
    monkeypatch.setenv("KERNELSCOPE_NVDISASM", "/nonexistent/nvdisasm")
    bundle = read_bundle(ref_bundles["add_relu"])
    facts = {f.name: f for f in facts_for(bundle, bundle.kernel("triton_poi_fused_add_relu_0"))}
    assert facts["registers per thread"].value == "unknown"
    assert "cuobjdump not found" in facts["registers per thread"].source
    assert facts["SASS"].value == "unavailable"
    assert facts["num_warps"].value  # metadata still read
