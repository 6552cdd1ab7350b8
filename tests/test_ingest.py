"""Bundles built from the real H200 reference artifacts: kernels, fused nodes, user lines, stages."""

import json

from kernelscope.bundle.io import read_bundle, read_text
from kernelscope.bundle.kernel_rows import kernel_entries
from kernelscope.ingest.output_code import parse_output_code
from kernelscope.ingest.torch_logs import output_codes

from .conftest import REFERENCE


def test_add_relu_is_one_pointwise_kernel_with_add_and_relu(ref_bundles):
    b = read_bundle(ref_bundles["add_relu"])
    assert [k.name for k in b.kernels] == ["triton_poi_fused_add_relu_0"]
    k = b.kernels[0]
    assert k.kind == "pointwise" and k.fx_nodes == ["add", "relu"] and k.provenance == "provenance"
    assert [(u.line, u.code) for u in k.user_lines] == [(5, "return (a + b).relu()")]
    # 2 reads + 1 write of 2**24 floats: the founding material's 3 transfers.
    assert [(x.role, x.bytes) for x in k.buffers] == [("read", 1 << 26), ("read", 1 << 26), ("write", 1 << 26)]
    stages = set(k.triton[0].files)
    assert {"source", "ttir", "ttgir", "llir", "ptx", "cubin"} <= stages
    assert sorted(v.metadata["num_warps"] for v in k.triton) == [4, 8]  # both autotuned configs


def test_kernel_source_is_the_file_triton_compiled(ref_bundles):
    b = read_bundle(ref_bundles["add_relu"])
    k = b.kernels[0]
    src = read_text(b, k.source).split("\n")
    assert src[17].startswith("def triton_poi_fused_add_relu_0(")  # loc(...":18:0) in the TTIR
    ttir = read_text(b, k.triton[0].files["ttir"])
    assert f'loc("{k.kernel_path}":18:0)' in ttir


def test_output_code_is_byte_identical_to_torch_logs(ref_bundles):
    for case in ("add_relu", "mlp_train", "with_break"):
        b = read_bundle(ref_bundles[case])
        printed = output_codes((REFERENCE / case / "torch_logs.txt").read_text())
        assert [read_text(b, g.files["output_code"]) for g in b.graphs] == printed


def test_linear_relu_has_extern_mm_then_the_fused_epilogue(ref_bundles):
    b = read_bundle(ref_bundles["linear_relu"])
    assert [(k.name, k.kind) for k in b.kernels] == [
        ("extern_kernels.mm", "extern"), ("triton_poi_fused_addmm_relu_threshold_backward_0", "pointwise")]
    assert b.kernels[0].call_text.startswith("extern_kernels.mm(")
    assert "relu" in b.kernels[1].fx_nodes


def test_graph_break_gives_two_graphs_and_the_reason_at_its_line(ref_bundles):
    b = read_bundle(ref_bundles["with_break"])
    assert len(b.graphs) == 2
    assert [k.name for k in b.kernels] == ["triton_poi_fused_mul_sin_0", "triton_poi_fused_add_cos_0"]
    (gb,) = b.graph_breaks
    assert gb.line == 22 and gb.file.endswith("cases.py")
    assert "print" in gb.reason and gb.code == 'print("shape", x.shape)'


def test_mlp_train_has_forward_and_backward_kernels(ref_bundles):
    b = read_bundle(ref_bundles["mlp_train"])
    assert [g.kind for g in b.graphs] == ["forward", "backward"]
    fwd, bwd = (b.kernels_of(g.id) for g in b.graphs)
    assert "triton_poi_fused_gelu_0" in [k.name for k in fwd]
    assert "triton_poi_fused_gelu_gelu_backward_1" in [k.name for k in bwd]
    # The backward graph has no provenance mapping in torch 2.11: fused nodes come from the comments.
    gelu_bwd = b.kernel("triton_poi_fused_gelu_gelu_backward_1")
    assert gelu_bwd.provenance == "comments" and "mul_4" in gelu_bwd.fx_nodes
    twice = b.kernel("triton_poi_fused_expand_mm_0")
    assert twice.launches == 2
    assert {"fx-dynamo", "fx-aot", "fx-post-grad", "output_code"} <= set(b.graphs[1].files)


def test_max_autotune_lists_the_candidates(ref_bundles):
    b = read_bundle(ref_bundles["linear_relu_autotune"])
    (result,) = b.autotune
    assert result.op == "mm(32x512, 512x512)"
    assert result.choices[0].name == "mm" and result.choices[0].time_ms == 0.0226
    assert any(c.name == "triton_mm_4" and "BLOCK_K=128" in c.config for c in result.choices)
    assert b.kernels[0].kind == "template"


def test_kinds_of_fusion_are_named(ref_bundles):
    kinds = {case: [k.kind for k in read_bundle(ref_bundles[case]).kernels] for case in ("softmax", "sin_cos")}
    assert kinds == {"softmax": ["persistent_reduction"], "sin_cos": ["pointwise"]}
    sc = read_bundle(ref_bundles["sin_cos"]).kernels[0]
    assert sc.fx_nodes == ["sin", "cos"]  # horizontal fusion: one read of x, two writes


def test_partitioned_output_code_still_lists_its_launches():
    text = output_codes((REFERENCE / "linear_relu_bf16_autotune" / "torch_logs.txt").read_text())[0]
    code = parse_output_code(text)
    assert [launch.name for launch in code.launches] == ["extern_kernels.bias_addmm",
                                                         "triton_poi_fused_relu_threshold_backward_0"]


def test_manifest_is_plain_json_a_person_can_diff(ref_bundles):
    text = (ref_bundles["add_relu"] / "bundle.json").read_text()
    data = json.loads(text)
    assert data["schema"] == "kernelscope.bundle" and data["version"] == 5
    assert text.count("\n") > 12  # a field a line, a graph a line
    assert (ref_bundles["add_relu"] / "kernel_index.jsonl").read_text().count("\n") == 1  # a kernel a line
    [kernel] = kernel_entries(data, ref_bundles["add_relu"])
    assert kernel["name"] == "triton_poi_fused_add_relu_0" and kernel["fx_nodes"] == 2  # the index: a count
    assert "buffers" not in kernel  # the detail lives in the graph's own file
    [graph] = data["graphs"]
    detail = json.loads((ref_bundles["add_relu"] / graph["detail"]).read_text())
    assert [b["name"] for b in detail["kernels"][kernel["id"]]["buffers"]] == ["arg0_1", "arg1_1", "buf0"]


def test_the_picked_config_marks_its_variant_and_gives_the_grid(tmp_path):
    """Inductor's .best_config names the Triton cache entry it picked; the launch grid follows."""
    from kernelscope.bundle.model import Bundle
    from kernelscope.ingest.build import RawCapture, build_bundle
    from kernelscope.ingest.tracelog import parse_trace_folder

    case = REFERENCE / "add_relu"
    keys = sorted(p.name for p in (case / "triton").iterdir())
    picked = {"XBLOCK": 1024, "num_warps": 4, "num_stages": 1, "triton_cache_hash": keys[0], "_dir": "nu"}
    raw = RawCapture(traces=[t for _, t in parse_trace_folder(case / "trace")], triton_caches=[case / "triton"],
                     best_configs=[picked])
    b = build_bundle(tmp_path, raw, Bundle())
    (k,) = b.kernels
    (chosen,) = [v for v in k.triton if v.chosen]
    assert chosen.cache_key == keys[0] and chosen.config == {"XBLOCK": 1024, "num_warps": 4, "num_stages": 1}
    assert b.extra["grids"][k.id] == "(16384, 1, 1) = ceil(xnumel 16777216 / XBLOCK 1024)"
    # The picked .best_config is kept as an artifact of its variant: `show --artifact best_config` prints it.
    from kernelscope.show import artifact_text

    b.root = str(tmp_path)
    text = artifact_text(b, "best_config", kernel=k.name)
    assert '"XBLOCK": 1024' in text and keys[0] in text and "_dir" not in text
    assert artifact_text(b, "best_config", kernel=k.name) == (tmp_path / chosen.files["best_config"]).read_text()


def test_bundle_round_trips_through_its_manifest(ref_bundles, tmp_path):
    """read -> write -> read gives the same bundle, field for field (JSON only, no pickle)."""
    import shutil

    from kernelscope.bundle.io import save_manifest
    from kernelscope.bundle.model import to_dict
    from kernelscope.bundle.validate import from_dict

    for case in ("mlp_train", "linear_relu_autotune", "with_break"):
        b = read_bundle(ref_bundles[case])
        assert from_dict(json.loads(json.dumps(to_dict(b)))) == b
        copy = tmp_path / case
        shutil.copytree(ref_bundles[case], copy)
        save_manifest(b, copy)
        again = read_bundle(copy)
        again.section("compile_time")  # a side file (format 3), read when asked for, as b's was by the copy
        assert again == b and again.kernels[0].buffers == b.kernels[0].buffers


def test_unreadable_or_newer_bundles_fail_with_one_line(tmp_path):
    from kernelscope.bundle.io import BundleError

    (tmp_path / "bundle.json").write_text('{"schema": "kernelscope.bundle", "version": 99}')
    try:
        read_bundle(tmp_path)
    except BundleError as exc:
        assert "newer than this kernelscope reads" in str(exc) and "\n" not in str(exc)
    else:
        raise AssertionError("a newer bundle version was read")
    (tmp_path / "bundle.json").write_text("{not json")
    try:
        read_bundle(tmp_path)
    except BundleError as exc:
        assert "unreadable bundle manifest" in str(exc)
    else:
        raise AssertionError("a broken manifest was read")
