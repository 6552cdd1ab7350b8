"""Nsight Compute output read into per-kernel counters and per-line samples (bench/ncu.py).

The CSVs are real, from the H200 box (tests/fixtures/ncu: `ncu --set basic --csv`, `--set full --page
details --csv`, `--set full --import-source yes --page source --csv` on add_relu's Triton kernel).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelscope.bench import ncu

NCU = Path(__file__).resolve().parent / "fixtures" / "ncu"


def test_basic_set_gives_speed_of_light_and_occupancy_per_launch():
    launches = ncu.parse_details((NCU / "ncu_basic.csv").read_text())
    assert list(launches) == ["triton_poi_fused_add_relu_0"]
    first = launches["triton_poi_fused_add_relu_0"]
    assert len(first) == 2  # --launch-count 2
    c = ncu.kernel_counters(first[0])
    assert c["memory_pct"] == pytest.approx(56.13) and c["compute_pct"] == pytest.approx(7.03)
    assert c["achieved_occupancy_pct"] == pytest.approx(74.29) and c["duration_ns"] == 13408
    assert c["grid"] == "(4096, 1, 1)"


def test_details_page_names_the_top_stall():
    c = ncu.kernel_counters(ncu.parse_details((NCU / "ncu_details.csv").read_text())["triton_poi_fused_add_relu_0"][0])
    assert c["stalls"] == ["waiting for a scoreboard dependency on a L1TEX (57.7 cycles per warp)"]
    assert c["registers"] == 16 and c["theoretical_occupancy_pct"] == 100


def test_source_page_samples_go_to_the_triton_lines_through_the_sass_line_map():
    (block,) = ncu.parse_source((NCU / "ncu_source.csv").read_text())["triton_poi_fused_add_relu_0"]
    assert len(block) == 32 and block[0]["sass"] == "LDC R1, c[0x0][0x28]"
    total = sum(i["samples"] for i in block)
    # An nvdisasm -gi listing of the same instructions: the first 8 from line 19 of the kernel, the rest line 23.
    listing = []
    for n, ins in enumerate(block):
        if n in (0, 8):
            listing.append(f'\t//## File "/tmp/k/cabc.py", line {19 if n == 0 else 23}')
        listing.append(f"        /*{ins['address'] - block[0]['address']:04x}*/    {ins['sass']} ;")
    per_line = ncu.samples_per_line(block, ncu.sass_offsets("\n".join(listing)), "cabc.py")
    assert set(per_line) == {19, 23} and sum(per_line.values()) == total
    assert per_line[19] == sum(i["samples"] for i in block[:8])


def test_text_table_prints_counters_and_lines():
    launch = ncu.parse_details((NCU / "ncu_details.csv").read_text())["triton_poi_fused_add_relu_0"][0]
    row = {"name": "triton_poi_fused_add_relu_0", "kernel_id": "g/k", "profiled": 1, **ncu.kernel_counters(launch),
           "samples": 100, "triton_lines": [{"line": 23, "samples": 60, "code": "tmp2 = tmp0 + tmp1"}],
           "user_lines": [{"file": "/x/add_relu.py", "line": 8, "code": "return (a + b).relu()", "shared": False}]}
    text = ncu.ncu_text({"kernels": [row], "seconds": 12.0})
    assert "triton_poi_fused_add_relu_0" in text and "59.5" in text and "73.9" in text
    assert "stall: waiting for a scoreboard dependency on a L1TEX (57.7 cycles per warp)" in text
    assert "line   23   60% of samples  tmp2 = tmp0 + tmp1" in text
    assert "your line add_relu.py:8" in text


def test_missing_ncu_is_said_plainly(cpu_add_relu, monkeypatch):
    monkeypatch.setattr(ncu, "find_ncu", lambda: None)
    with pytest.raises(ncu.NcuError, match=r"ncu \(Nsight Compute\) is not on PATH"):
        ncu.profile(cpu_add_relu, None)


def test_ncu_kernels_names_must_exist(ref_bundles):
    from kernelscope.bundle.io import read_bundle

    b = read_bundle(ref_bundles["mlp_train"])
    assert [k.name for k in ncu.choose_kernels(b, None)] == ["triton_poi_fused_gelu_0", "triton_red_fused_sum_1",
                                                             "triton_per_fused_sum_2"]
    with pytest.raises(ncu.NcuError, match="--ncu-kernels nope: no Triton kernel"):
        ncu.choose_kernels(b, ["nope"])


def test_a_duration_in_microseconds_is_scaled_and_similar_names_keep_their_ends():
    # Under --set full ncu printed "Duration","us","13.41" (the H200 run of a GPT-2 showed 0.0 µs before this)
    launch = ncu.parse_details((NCU / "ncu_basic.csv").read_text())["triton_poi_fused_add_relu_0"][0]
    key = ("GPU Speed Of Light Throughput", "Duration")
    launch["metrics"][key] = ("13.41", "us")
    c = ncu.kernel_counters(launch)
    assert c["duration_ns"] == pytest.approx(13410)
    rows = [{"name": f"triton_per_fused_add_addmm_native_layer_norm_view_{i}", "kernel_id": f"g/k{i}",
             "profiled": 1, **c, "samples": 0, "triton_lines": [], "user_lines": []} for i in (6, 7)]
    text = ncu.ncu_text({"kernels": rows, "seconds": 1.0})
    assert "…_layer_norm_view_6" in text and "…_layer_norm_view_7" in text and "13.4" in text
