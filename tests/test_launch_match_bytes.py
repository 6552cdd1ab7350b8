"""The launch matcher (profiler kernels -> the bundle's launches) and the byte model (what a kernel
reads: a gather's rows, a slice's extent), as pure functions on synthetic profiler events and on
real kernel / output code (tiny_gpt's CPU embedding kernel, the H200 attention fixture)."""

from __future__ import annotations

from pathlib import Path

from kernelscope.bench.explain import rate_flag
from kernelscope.bench.launches import match, sum_check, where_time_goes
from kernelscope.ingest import bytes_model
from kernelscope.ingest.dtypes import parse_placeholders
from kernelscope.ingest.output_code import parse_output_code

FIXTURES = Path(__file__).parent / "fixtures"


def test_every_launch_of_a_repeated_layer_is_timed_and_extern_kernels_group_by_op():
    # two layers: triton ln, extern mm (cuBLAS split-K: gemm + reduce, one op), triton gelu; per call
    launches = ["ln", "extern_kernels.mm", "gelu"] * 2
    named = {"ln", "gelu"}
    one_call = [("ln", 2.0, 1), ("sm90_gemm", 10.0, 2), ("splitK_reduce", 1.0, 2), ("gelu", 3.0, 3),
                ("ln", 2.0, 4), ("Memset (Device)", 0.5, 9), ("sm90_gemm", 10.0, 5), ("splitK_reduce", 1.0, 5),
                ("gelu", 3.0, 6)]
    events = one_call + [(n, us, g + 100) for n, us, g in one_call]  # a second call, other op ids
    m = match(launches, named, events, calls=2)
    assert [r["us"] for r in m["per_launch"]] == [2.0, 11.0, 3.0, 2.0, 11.0, 3.0]  # no launch untimed
    assert m["per_launch"][1]["kernels"] == ["sm90_gemm", "splitK_reduce"]
    assert [(u["name"], u["per_call"]) for u in m["unclaimed"]] == [("Memset (Device)", 1.0)]
    check = sum_check([r["us"] for r in m["per_launch"]], m["total_us"])
    assert check["total_us"] == 32.5 and check["launches_us"] == 32.0 and check["ok"] is False  # 1.5% short
    assert check["untimed"] == 0
    table = where_time_goes([{"name": n, "us": r["us"], "moved": 1000, "flops": None}
                             for n, r in zip(launches, m["per_launch"])], m["total_us"], m["unclaimed"])
    assert [(r["name"], r["launches"]) for r in table][:3] == [("extern_kernels.mm", 2), ("gelu", 2), ("ln", 2)]
    assert table[0]["us"] == 22.0 and table[0]["share_pct"] == round(100 * 22 / 32.5, 1)
    assert table[-1]["unclaimed"] and table[-1]["kind"] == "memset"


def test_a_call_with_an_extra_kernel_or_a_missing_one_leaves_the_others_matched():
    launches = ["a", "extern_kernels.mm", "b"]
    events = [("a", 1.0, None), ("gemm", 5.0, None), ("b", 2.0, None),  # call 1
              ("a", 1.0, None), ("gemm", 5.0, None), ("copy_kernel", 4.0, None), ("b", 2.0, None)]  # call 2
    m = match(launches, {"a", "b"}, events, calls=2)
    per = m["per_launch"]
    assert per[0]["us"] == 1.0 and per[2]["us"] == 2.0
    assert per[1]["us"] == (5.0 + 9.0) / 2  # no group ids: the last extern of a run takes the rest
    assert sum_check([r["us"] for r in per], m["total_us"])["ok"]


def test_rates_above_the_ceiling_carry_a_flag():
    assert rate_flag(527.0, True) == "bound"
    assert rate_flag(170.0, False) == "cache"
    assert rate_flag(80.0, False) == ""


def test_gather_reads_index_count_rows_and_a_slice_its_extent_cpp():
    src = (FIXTURES / "bytes" / "tiny_gpt_embedding.cpp").read_text()
    # in_ptr0: 64 token ids; in_ptr1: the 512 x 64 token table; in_ptr2: the 64 x 64 position table
    reads = bytes_model.reads(src, "cpp", index_elements={"in_ptr0": 64, "in_ptr1": 512 * 64, "in_ptr2": 64 * 64})
    assert reads["in_ptr1"].how == "gather" and reads["in_ptr1"].elements == 64 * 64 and reads["in_ptr1"].bound
    assert reads["in_ptr2"].how == "slice" and reads["in_ptr2"].elements == 32 * 64  # 32 positions of 64
    assert not reads["in_ptr2"].bound


TRITON_EMBEDDING = '''
def triton_poi_fused_embedding_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 1572864
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = tl.full([XBLOCK], True, tl.int1)
    x1 = xindex // 768
    x0 = (xindex % 768)
    x2 = xindex
    tmp0 = tl.load(in_ptr0 + (x1), None, eviction_policy='evict_last')
    tmp1 = tl.full([XBLOCK], 50257, tl.int32)
    tmp2 = tmp0 + tmp1
    tmp3 = tmp0 < 0
    tmp4 = tl.where(tmp3, tmp2, tmp0)
    tmp6 = tl.load(in_ptr1 + (x0 + 768*tmp4), None)
    tl.store(out_ptr0 + (x2), tmp6, None)
'''

TRITON_QKV_SLICE = '''
def triton_poi_fused_clone_1(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    x0 = (xindex % 768)
    x1 = xindex // 768
    tmp0 = tl.load(in_ptr0 + (768 + x0 + 2304*x1), None)
    tl.store(out_ptr0 + (xindex), tmp0, None)
'''


def test_gather_and_qkv_slice_triton():
    gather = bytes_model.reads(TRITON_EMBEDDING, "triton", {"xnumel": 2048 * 768},
                               {"in_ptr0": 2048, "in_ptr1": 50257 * 768})
    assert gather["in_ptr1"].elements == 2048 * 768 and gather["in_ptr1"].bound  # 2048 rows, not 50257
    assert gather["in_ptr0"].elements == 2048
    qkv = bytes_model.reads(TRITON_QKV_SLICE, "triton", {"xnumel": 2048 * 768}, {"in_ptr0": 2048 * 2304})
    assert qkv["in_ptr0"].how == "slice" and qkv["in_ptr0"].elements == 2048 * 768  # a third of the buffer


def test_extern_operands_and_tuple_results_are_sized_from_the_call_text():
    graphs = FIXTURES / "gpu" / "attention" / "graphs" / "0-0-inference"
    code = parse_output_code((graphs / "output_code.py").read_text(),
                             parse_placeholders((graphs / "fx_post_grad.txt").read_text()))
    attention = next(launch for launch in code.launches if "attention" in launch.name)
    assert [(u.name, u.role, u.bytes) for u in attention.buffers][-1] == ("buf4", "write", 4 * 8 * 256 * 64 * 2)
    last_mm = code.launches[-1]
    assert all(u.bytes is not None for u in last_mm.buffers)  # reinterpret_tensor(buf4, ...) of the tuple item


def test_memsets_no_launch_names_are_named_in_the_sum_check_and_count_toward_it():
    """An H100 bf16 Llama training step: 287 µs of launches, 3.6 µs of memsets the output code does not
    list (an attention kernel's workspace zeroed), 290 µs on the device: the check adds them up, by name."""
    from kernelscope.bench.launches import sum_check
    from kernelscope.bench.wording import sum_check_lines

    without = sum_check([200.0, 87.0], 290.6)
    assert not without["ok"] and without["diff_pct"] == -1.24
    check = sum_check([200.0, 87.0], 290.6, memsets_us=3.6)
    assert check["ok"] and check["memsets_us"] == 3.6
    line = sum_check_lines({"sum_check": check, "unclaimed": [{"name": "Memset (Device)", "per_call": 4.0,
                                                                "us": 3.6, "memset": True}]})
    assert "add up to 287 µs + memsets no launch names 3.6 µs = 291 µs per call" in line[0], line
    assert line[1] == "  not a launch of the bundle: 4x Memset (Device) 3.6 µs per call"
