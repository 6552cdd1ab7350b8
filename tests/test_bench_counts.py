"""Counting kernels, transfers and bytes from real H200 bundles; the pure analysis behind the bench tables."""

from __future__ import annotations

import pytest

from kernelscope.bench import analysis, tables
from kernelscope.bench.counts import Launch, Transfer, count_bundle, counts_dict, eager_launches
from kernelscope.bundle.io import read_bundle
from tests.conftest import kernelscope_cmd

MB64 = 16777216 * 4


def _counts(ref_bundles, case):
    return count_bundle(read_bundle(ref_bundles[case]))


def test_add_relu_is_2_kernels_5_transfers_eager_and_1_kernel_3_fused(ref_bundles):
    eager, compiled = _counts(ref_bundles, "add_relu")
    assert (eager.kernels, eager.transfers) == (2, 5)
    assert (compiled.kernels, compiled.transfers) == (1, 3)
    assert eager.bytes_read == 3 * MB64 and eager.bytes_written == 2 * MB64
    assert compiled.bytes_read == 2 * MB64 and compiled.bytes_written == MB64
    assert [launch.name for launch in compiled.launches] == ["triton_poi_fused_add_relu_0"]


def test_mul_add_sigmoid_is_8_transfers_eager_and_4_fused(ref_bundles):
    eager, compiled = _counts(ref_bundles, "mul_add_sigmoid")
    assert (eager.kernels, eager.transfers) == (3, 8)
    assert (compiled.kernels, compiled.transfers) == (1, 4)
    assert [(x.reads, x.writes) for x in eager.launches] == [(2, 1), (2, 1), (1, 1)]


def test_horizontal_fusion_reads_its_input_once(ref_bundles):
    eager, compiled = _counts(ref_bundles, "sin_cos")
    assert (eager.kernels, eager.transfers) == (2, 4)
    assert (compiled.kernels, compiled.transfers) == (1, 3)


def test_graph_break_counts_both_graphs(ref_bundles):
    eager, compiled = _counts(ref_bundles, "with_break")
    assert eager.kernels == 4 and compiled.kernels == 2
    assert len(compiled.graphs) == 2


def test_extern_mm_has_flops_from_its_shapes(ref_bundles):
    _, compiled = _counts(ref_bundles, "linear_relu")
    mm = [x for x in compiled.launches if x.flops]
    assert [x.name for x in mm] == ["extern_kernels.mm"]
    assert mm[0].flops == 2 * 32 * 512 * 512


def test_matmul_template_has_flops(ref_bundles):
    _, compiled = _counts(ref_bundles, "linear_relu_autotune")
    (tem,) = compiled.launches
    assert tem.name.startswith("triton_tem_") and tem.flops == 2 * 32 * 512 * 512


def test_training_step_counts_forward_and_backward(ref_bundles):
    eager, compiled = _counts(ref_bundles, "mlp_train")
    kinds = {g.kind: g.source for g in eager.graphs}
    assert kinds == {"forward": "fx-dynamo", "backward": "fx-aot"}
    backward = [x for g in compiled.graphs if g.kind == "backward" for x in g.launches]
    assert "triton_poi_fused_gelu_gelu_backward_1" in [x.name for x in backward]
    # a kernel the output code launches twice counts twice
    assert [x.name for x in backward].count("triton_poi_fused_expand_mm_0") == 2
    assert sum(1 for x in compiled.launches if x.flops) == 5


def test_eager_views_are_free_and_tuple_outputs_are_written_by_their_op():
    graph = '''class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[64, 32][32, 1]cpu"):
        permute: "f32[32, 64][1, 32]cpu" = torch.ops.aten.permute.default(arg0_1, [1, 0])
        var_mean = torch.ops.aten.var_mean.correction(permute, [1], correction = 0, keepdim = True)
        getitem: "f32[32, 1][1, 1]cpu" = var_mean[0]
        getitem_1: "f32[32, 1][1, 1]cpu" = var_mean[1];  var_mean = None
        add: "f32[32, 1][1, 1]cpu" = torch.ops.aten.add.Tensor(getitem, getitem_1)
        expand: "f32[32, 64][1, 0]cpu" = torch.ops.aten.expand.default(add, [32, 64])
        mul: "f32[32, 64][64, 1]cpu" = torch.ops.aten.mul.Tensor(expand, permute)
        return (mul,)
'''
    launches = eager_launches(graph)
    assert [x.name for x in launches] == ["var_mean", "add", "mul"]
    var_mean = launches[0]
    assert (var_mean.reads, var_mean.writes) == (1, 2)
    mul = launches[2]
    # the stride-0 expand reads 32 distinct floats, the permuted input all 64*32
    assert [t.bytes for t in mul.transfers if t.role == "read"] == [32 * 4, 64 * 32 * 4]


def test_counts_cli_prints_the_founding_numbers(ref_bundles):
    proc = kernelscope_cmd("bench", str(ref_bundles["mul_add_sigmoid"]), "--counts")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    eager = next(line for line in lines if line.strip().startswith("eager "))
    compiled = next(line for line in lines if line.strip().startswith("compiled "))
    assert eager.split()[1:3] == ["3", "8"]
    assert compiled.split()[1:3] == ["1", "4"]


def test_bench_of_a_trace_bundle_says_there_is_no_function(ref_bundles):
    proc = kernelscope_cmd("bench", str(ref_bundles["add_relu"]))
    assert proc.returncode == 2
    assert "no function to rerun" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    # it can still be benched from its own code, once the user agrees to run it (tests/test_bench_bundle.py)
    assert "graphs/0-0-inference/output_code.py" in proc.stderr and "--run-bundle-code" in proc.stderr


@pytest.mark.parametrize("argv, message", [
    (["--set", "XBLOCK=512"], "name the kernel with --kernel"),
    (["--kernel", "nope"], "no kernel 'nope'"),
    (["--kernel", "triton_poi_fused_add_relu_0", "--set", "XBLOCK=big"], "KEY=INTEGER"),
])
def test_bad_bench_input_is_one_line(ref_bundles, argv, message):
    proc = kernelscope_cmd("bench", str(ref_bundles["add_relu"]), *argv)
    assert proc.returncode == 2
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # starts a child that imports torch (seconds)
def test_kernel_rerun_without_a_gpu_is_one_line(ref_bundles, tmp_path):
    import shutil

    b = tmp_path / "add_relu"
    shutil.copytree(ref_bundles["add_relu"], b)
    proc = kernelscope_cmd("bench", str(b), "--kernel", "triton_poi_fused_add_relu_0", "--set", "XBLOCK=512",
                           "--device", "cpu", env={"KERNELSCOPE_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == 2
    assert "needs a CUDA GPU" in proc.stderr


# ---------------------------------------------------------------- analysis


def _launch(name: str) -> Launch:
    return Launch(name=name, op="x", transfers=[Transfer("a", "read", "float32", [4], 16)])


def test_attribution_gives_a_split_k_gemm_both_its_kernels():
    launches = [_launch("extern_kernels.mm"), _launch("triton_poi_fused_relu_0")]
    call = [("gemm_kernel", 4.0), ("splitKreduce", 2.0), ("triton_poi_fused_relu_0", 1.0)]
    assert analysis.attribute(launches, call, {"triton_poi_fused_relu_0"}) == [[0, 1], [2]]


def test_attribution_shares_a_run_between_consecutive_externs():
    launches = [_launch("extern_kernels.mm"), _launch("extern_kernels.mm"), _launch("triton_per_x")]
    call = [("g1", 1.0), ("g2", 1.0), ("g2b", 1.0), ("triton_per_x", 1.0)]
    assert analysis.attribute(launches, call, {"triton_per_x"}) == [[0], [1, 2], [3]]


def test_split_calls_refuses_calls_that_differ():
    seq = [("a", 1.0), ("b", 2.0), ("a", 1.0), ("c", 2.0)]
    assert analysis.split_calls(seq, 2) is None
    assert analysis.split_calls(seq[:2] * 3, 3) == [seq[:2]] * 3


def test_crossover_is_where_compiled_stays_faster():
    rows = [{"size": n, "elements": n, "eager_us": e, "compiled_us": c}
            for n, e, c in ((1, 10, 50), (2, 20, 15), (4, 40, 45), (8, 80, 60), (16, 160, 100))]
    assert analysis.crossover(rows)["size"] == 8
    assert analysis.crossover(rows[:1]) is None


def test_run_stats_median_and_spread():
    stats = analysis.run_stats([float(x) for x in range(1, 102)])
    assert stats["median_us"] == 51 and stats["runs"] == 101 and stats["p10_us"] == 11 and stats["p90_us"] == 91


def test_counts_text_when_no_bench_ran(ref_bundles):
    text = tables.bench_text(None, counts_dict(read_bundle(ref_bundles["add_relu"])))
    assert "No bench has run" in text
    assert "Computed from the graphs" in text


def test_count_difference_names_what_the_device_has():
    """On a GPU extra kernels are library kernels (cuBLAS split-K ...); on the CPU the profiler counts ATen
    calls, so a CPU bench never blames cuBLAS."""
    from kernelscope.bench.explain import explain_counts

    counts = {"eager": {"kernels": 10}, "compiled": {"kernels": 3}}

    def rec(device):
        return {"device": {"device": device}, "eager": {"launches_per_call": 12, "kernels": []},
                "compiled": {"launches_per_call": 3}, "per_kernel": []}

    cpu = explain_counts(counts, rec("cpu"), [])["eager"]["reasons"][0]
    gpu = explain_counts(counts, rec("cuda"), [])["eager"]["reasons"][0]
    assert cpu.startswith("2 more kernels than ops") and "cuBLAS" not in cpu and "CPU profiler counts calls" in cpu
    assert "cuBLAS split-K" in gpu
