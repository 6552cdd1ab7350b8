"""CUDA graphs under reduce-overhead, as the bench and the capture see them (pure, on CPU): the input
copies before each replay named and kept out of the kernels' times, the replays counted from
cudaGraphLaunch, the run with inputs in place beside it, Inductor's skip reason read from its log
lines, and the static-input marking exercised on a CPU tensor."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelscope.bench import tables
from kernelscope.bench.launches import copy_summary, match, split_graph_replay, sum_check
from kernelscope.bench.record import build_record
from kernelscope.bundle.io import read_bundle
from kernelscope.bundle.model import Bundle, Graph
from kernelscope.ingest.guards import UNLOGGED, cudagraph_status, parse_cudagraph_log

GPU = Path(__file__).parent / "fixtures" / "gpu"
COPY = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<TensorListMetadata<2>, CopyFunctor>"
GEMM = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma_aligna4_alignc4_execute"


def replay(call: int, copies: int = 1) -> list[list]:
    """One reduce-overhead call of linear_relu as the bench child records it: the input copy launched
    by torch._foreach_copy_ (cudaLaunchKernel), then the graph's kernels, all linked to one
    cudaGraphLaunch (one group), in the output code's call() order."""
    via_copy = {"op": "aten::_foreach_copy_", "via": "cudaLaunchKernel"}
    graph = {"op": "", "via": "cudaGraphLaunch"}
    rows = [[COPY, 7.7, 1000 + call, via_copy] for _ in range(copies)]
    return rows + [[GEMM, 3.5, 2000 + call, graph], [GEMM, 3.3, 2000 + call, graph],
                   ["triton_poi_fused_addmm_relu_0", 1.3, 2000 + call, graph]]


def test_replay_input_copies_are_named_and_the_sum_check_counts_them():
    launches = ["extern_kernels.mm", "triton_poi_fused_addmm_relu_0"]
    named = {"triton_poi_fused_addmm_relu_0"}
    sequence = [row for c in range(10) for row in replay(c)]
    events, copies = split_graph_replay(sequence, named)
    assert [n for n, _ in copies] == [COPY] * 10
    m = match(launches, named, events, calls=10)
    mm, relu = m["per_launch"]
    assert mm["kernels"] == [GEMM, GEMM] and mm["us"] == pytest.approx(6.8)  # the copy is not the mm's
    assert relu["us"] == pytest.approx(1.3) and m["unclaimed"] == []
    summary = copy_summary(copies, 10, {"tensors": 3, "bytes": 1_116_160})
    assert summary["kernels_per_call"] == 1 and summary["us"] == pytest.approx(7.7)
    check = sum_check([mm["us"], relu["us"]], m["total_us"] + summary["us"], copies_us=summary["us"])
    assert check["ok"] and check["total_us"] == pytest.approx(15.8)
    # without the copies the launches fall 49% short: the MISMATCH the H200 showed
    assert not sum_check([mm["us"], relu["us"]], m["total_us"] + summary["us"])["ok"]


def test_without_a_replay_nothing_is_a_copy():
    seq = [["triton_a", 1.0, 1, {"op": "", "via": "cudaLaunchKernel"}],
           ["void copy_kernel", 2.0, 2, {"op": "aten::copy_", "via": "cudaLaunchKernel"}]]
    events, copies = split_graph_replay(seq, {"triton_a"})
    assert copies == [] and [e[0] for e in events] == ["triton_a", "void copy_kernel"]


def _raw(static: bool = True, replays: bool = True, skips: list[str] | None = None) -> dict:
    graph = {"cudaGraphLaunch": 10} if replays else {}

    def side(seq, e2e, launches):
        return {"e2e": {"median_us": e2e, "spread_pct": 5.0, "runs": 100}, "loop": {"median_us": e2e * 0.8, "runs": 7},
                "profile_calls": 10, "host_launches": launches, "sequence": seq}

    eager_seq = [row for c in range(10) for row in ([GEMM, 6.4, c * 10 + 1], ["splitKreduce_kernel", 2.3, c * 10 + 1],
                                                    ["vectorized_elementwise_kernel", 1.1, c * 10 + 2])]
    if replays:
        compiled_seq = [row for c in range(10) for row in replay(c)]
        static_seq = [row for c in range(10) for row in replay(c, copies=0)]
    else:  # skipped: the kernels run one by one from call()
        compiled_seq = [[n, us, 3000 + c * 10 + i, {"op": "", "via": "cudaLaunchKernel"}]
                        for c in range(10) for i, (n, us, *_) in enumerate(replay(c, copies=0))]
        static_seq = compiled_seq
    run = {"inputs": ["f32[32, 512]", "f32[512, 512]", "f32[512]"], "compile_s": 2.0,
           "correctness": {}, "rotation": {"why": "rotated"},
           "eager": side(eager_seq, 36.8, {"cudaLaunchKernel": 3}),
           "compiled": side(compiled_seq, 85.9, {"cudaLaunchKernel": 1, **graph}),
           "cudagraphs": {"skips": skips or [], "skip_counter": len(skips or []),
                          "copied": {"tensors": 3, "bytes": 1_116_160}}}
    if static:
        run["compiled_static"] = {**side(static_seq, 20.1, graph), "marked": 3, "compile_s": 1.5,
                                  "copied": {"tensors": 0, "bytes": 0},
                                  "how": "torch._dynamo.mark_static_address on each input tensor, one input set "
                                         "reused (not rotated)"}
    return {"device": {"device": "cuda", "device_name": "NVIDIA H200"}, "versions": {"torch": "2.11.0"},
            "ceilings": {"copy": {"gbps": 4187.0, "method": "copy", "measured_at": "x"}}, "run": run}


@pytest.fixture
def linear_relu_ro(tmp_path) -> Bundle:
    shutil.copytree(GPU / "linear_relu", tmp_path / "b")
    b = read_bundle(tmp_path / "b")
    b.options["mode"] = "reduce-overhead"
    return b


def test_bench_prints_replays_copies_and_inputs_in_place(linear_relu_ro):
    rec = build_record(linear_relu_ro, {"device": "cuda"}, _raw())["run"]
    assert rec["sum_check"]["ok"] and rec["sum_check"]["copies_us"] == pytest.approx(7.7)
    mm = next(r for r in rec["per_kernel"] if r["name"] == "extern_kernels.mm")
    assert all("multi_tensor_apply" not in k for k in mm["measured_as"])
    text = "\n".join(tables.run_lines(rec))
    assert "sum check OK" in text and "+ CUDA-graph input copies 7.7 µs" in text
    assert "(CUDA-graph input copies) void at::native" in text
    assert "(not a launch)" not in text
    assert "CUDA graph: replayed 10 times in 10 profiled calls (1 cudaGraphLaunch per call)" in text
    assert "input copies: 3 input tensors, 1.1 MB copied per call" in text
    lines = text.splitlines()
    copied = next(line for line in lines if line.strip().startswith("compiled, inputs copied"))
    assert "1 graph launch replaying 3 kernels + 1 kernel copying inputs" in copied
    in_place = next(line for line in lines if line.strip().startswith("compiled, inputs in place"))
    assert "20.1 µs" in in_place and "1 graph launch replaying 3 kernels" in in_place and "copying" not in in_place
    assert "3 kernel launches" in next(line for line in lines if line.strip().startswith("eager ") and "launches" in line)
    assert "inputs in place vs inputs copied: 4.27x end-to-end" in text
    assert "host time per call outside the kernels: eager 27.0 µs, CUDA graph with inputs in place 12.0 µs: 15.0 µs saved" in text
    explained = text.split("Kernel counts per call", 1)[1]
    assert "+1: CUDA-graph input copies (3 input tensors" in explained
    assert "they agree" not in explained.split("compiled", 1)[1].splitlines()[0]  # mm ran 2 kernels: +1 named


def test_bench_says_when_the_graph_was_skipped_and_why(linear_relu_ro):
    reason = "skipping cudagraphs due to cpu device (arg1_1). Found from :"
    rec = build_record(linear_relu_ro, {"device": "cuda"}, _raw(static=False, replays=False, skips=[reason]))["run"]
    text = "\n".join(tables.run_lines(rec))
    assert "CUDA graph: skipped: cpu device (arg1_1)" in text
    rec = build_record(linear_relu_ro, {"device": "cuda"}, _raw(static=False, replays=False))["run"]
    assert "CUDA graph: not replayed (no cudaGraphLaunch in the profiled calls) and Inductor logged no reason" in \
        "\n".join(tables.run_lines(rec))


# Lines as torch 2.13 writes them (torch/_logging/_internal.py TorchLogsFormatter: "W<mmdd hh:mm:ss.us> <pid>
# <file>:<line>] [<compile id>] [__<artifact>] <message>"): the skip from cudagraph_utils.py
# log_cudagraph_skip_and_bump_counter (cudagraphs_log.warning, compile-time, so with the compile id), the
# recording from cudagraph_trees.py deferred_cudagraphify (log.info("[%s] Recording ...", compile_id), at the
# first call, outside any compile: no prefix id, the id in the message).
TORCH_213_LOG = """\
W1130 23:05:07.123456 4242 torch/_inductor/cudagraph_utils.py:380] [0/0] [__cudagraphs] skipping cudagraphs due to mutated inputs (1 instances). Found from :
W1130 23:05:07.123456 4242 torch/_inductor/cudagraph_utils.py:380] [0/0] [__cudagraphs]    File "/repo/samples/x.py", line 4, in f
I1130 23:05:09.000001 4242 torch/_inductor/cudagraph_trees.py:443] [__cudagraphs] [1/0] Recording cudagraph tree for graph without symints
"""


def test_capture_reads_torch_213_skip_and_record_lines():
    log = parse_cudagraph_log(TORCH_213_LOG)
    assert log["0/0"] == {"status": "skipped", "reason": "mutated inputs (1 instances)"}
    assert log["1/0"]["status"] == "recorded" and "__cudagraphs" not in log
    b = Bundle(options={"mode": "reduce-overhead", "device": "cuda"},
               graphs=[Graph(id=f"{i}-0-forward", compile_id=f"{i}/0", kind="forward") for i in range(3)])
    cudagraph_status(b, log, {})
    assert [g.cudagraphs["status"] for g in b.graphs] == ["skipped", "recorded", "unknown"]
    assert b.graphs[2].cudagraphs["reason"] == UNLOGGED and "graph partition" in UNLOGGED


def test_marking_inputs_static_works_on_a_cpu_tensor():
    torch = pytest.importorskip("torch")
    from kernelscope.bench.cudagraphs import copied_inputs, mark_static_inputs

    x, w = torch.randn(4, 8), torch.randn(8)
    assert copied_inputs((x, w, 3), None) == {"tensors": 0, "bytes": 0}  # CPU tensors: no CUDA graph copies
    assert mark_static_inputs((x, w, 3)) == 2
    assert getattr(x, "_dynamo_static_input_type", None) == "unguarded"
    compiled = torch.compile(lambda a, b: (a * b).relu(), backend="eager")  # still callable once marked
    assert torch.equal(compiled(x, w), (x * w).relu())
