"""`kernelscope open` and `kernelscope run` of torch.export and AOTInductor (``aoti_compile_and_package``).

Traces recorded here with tests/fixtures/scripts/aoti_package.py (saved as aoti_mlp.py; an MLP with a reduction; INDUCTOR_PROVENANCE=1,
as `kernelscope run` sets it): tests/fixtures/traces/aoti_cpu (torch 2.13, CPU: C++ kernels in
``inductor_aot_kernel_code``) and aoti_cuda (torch 2.11 on an H100: Triton kernels inside the C++ wrapper); and
export_cpu, a ``torch.export.export`` of the same MLP without the sum, logged under TORCH_DTRACE (the only
way torch 2.11+ logs the exported program). Trimmed (no configs or repro scripts; chromium events kept in aoti_cpu only) and
normalised (paths, payload hashes, cache keys).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from kernelscope.bundle.io import read_bundle
from kernelscope.ingest.aoti_code import parse_aoti_code
from tests.conftest import REPO, kernelscope_cmd

TRACES = REPO / "tests" / "fixtures" / "traces"
AOTI_TWO_SCRIPT = REPO / "tests" / "fixtures" / "scripts" / "aoti_two_models.py"


def _open(trace: Path, out: Path):
    proc = kernelscope_cmd("open", str(trace), "--no-ui", "-o", str(out))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture(scope="module")
def aoti_cpu(tmp_path_factory):
    out = tmp_path_factory.mktemp("aoti-cpu") / "bundle"
    return out, _open(TRACES / "aoti_cpu", out)


def test_aoti_cpu_kernels_listed_with_their_fx_nodes_and_the_users_lines(aoti_cpu):
    out, proc = aoti_cpu
    assert "1 graph, 4 kernels" in proc.stderr
    b = read_bundle(out)
    [graph] = b.graphs
    assert graph.id == "aoti-inference" and graph.files["output_code"].endswith("output_code.cpp")
    assert [k.name for k in b.kernels] == ["aoti_torch_cpu_addmm_out", "cpp_fused_relu_0", "aoti_torch_cpu_addmm_out",
                                           "cpp_fused_add_mul_sigmoid_sum_1"]
    fused = b.kernel("cpp_fused_add_mul_sigmoid_sum_1")
    assert fused.lang == "cpp" and fused.provenance == "provenance"
    assert fused.fx_nodes == ["sigmoid", "mul", "sum_1", "add"]  # post-grad nodes, in graph order
    assert fused.fx_nodes_pre == ["sigmoid", "mul", "sum_1", "add"]  # the exported program's nodes
    assert [(Path(u.file).name, u.line) for u in fused.user_lines] == [("aoti_mlp.py", 15)]
    assert fused.user_lines[0].code.startswith("return torch.sigmoid(self.fc2(h)) * 2.0 + x.sum(")
    # Its C++ source, from the kernel code AOTInductor logged beside the wrapper.
    source = (out / fused.source).read_text()
    assert source.lstrip().startswith("#include") and 'extern "C"  void  cpp_fused_add_mul_sigmoid_sum_1(' in source
    # Bytes from run_impl's buffers: reads buf5 (4x8) and the input (4x16), writes buf4 (4x1) and buf5.
    assert (fused.bytes_read, fused.bytes_written) == (128 + 256, 16 + 128)
    mm = b.kernels[0]
    assert mm.kind == "extern" and mm.fx_nodes == ["addmm"] and mm.aten_ops == ["aten.addmm"]
    assert [u.line for u in mm.user_lines] == [14]
    # The graph Inductor was handed (the exported program's ATen graph) is the graph's first FX view.
    assert "torch.ops.aten.linear.default(x, fc1_weight, fc1_bias)" in (out / graph.files["fx-dynamo"]).read_text()
    assert "fx-post-grad" in graph.files and "fx-aot" in graph.files


def test_show_of_an_aoti_bundle_prints_kernels_nodes_and_lines_and_offers_no_bench(aoti_cpu):
    out, _ = aoti_cpu
    proc = kernelscope_cmd("show", str(out))
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "  aoti-inference         inference  4 kernels  forward at aoti_mlp.py:14\n" in text
    assert "compiled from aoti_mlp.py:18  ep = torch.export.export(Mlp(), (torch.randn(4, 16),))" in text
    assert re.search(r"cpp_fused_relu_0  \(cpp; .*\)\n\s+fx nodes: fc2_bias, relu\n\s+aten: aten.relu\n"
                     r"\s+line aoti_mlp.py:14: h = torch.relu\(self.fc1\(x\)\)", text), text
    assert "can: report; diff" in text  # AOTInductor's C++ is not something bench can run
    fusion = kernelscope_cmd("show", str(out), "--fusion").stdout  # the fusion view reads AOTInductor's launches
    assert "1. cpp_fused_relu_0 -> addmm (library call)   1.1 KB, 4 transfers   [aoti-inference]" in fusion
    assert "the matmul (aoti_torch_cpu_addmm_out) is a library call" in " ".join(fusion.split())
    timed = kernelscope_cmd("show", str(out), "--compile").stdout  # AOTInductor's phases name no Dynamo compile
    assert re.search(r"^graph aoti-inference: \d+\.\d+ s", timed, re.M) and "code generation" in timed, timed
    wrapper = kernelscope_cmd("show", str(out), "--artifact", "output_code").stdout
    assert "void AOTInductorModel::run_impl(" in wrapper and "// [Provenance debug handles] cpp_fused_relu_0:2" in wrapper


def test_aoti_cuda_triton_kernels_from_the_wrapper_comments(tmp_path):
    out = tmp_path / "b"
    _open(TRACES / "aoti_cuda", out)
    b = read_bundle(out)
    names = [k.name for k in b.kernels]
    assert names == ["aoti_torch_cuda_mm_out", "triton_poi_fused_addmm_relu_0", "aoti_torch_cuda_mm_out",
                     "triton_per_fused_sum_1", "triton_poi_fused_add_addmm_mul_sigmoid_2"]
    k = b.kernel("triton_per_fused_sum_1")
    assert k.kind == "persistent_reduction" and k.fx_nodes == ["sum_1"]
    assert [(Path(u.file).name, u.line) for u in k.user_lines] == [("aoti_gpu.py", 9)]
    source = (out / k.source).read_text()
    assert source.startswith("import triton\n") and "def triton_per_fused_sum_1(in_ptr0, out_ptr0" in source
    assert (k.bytes_read, k.bytes_written) == (256, 16)  # x (4x16 f32) summed into buf3 (4x1)


def test_export_trace_shows_the_exported_graph_and_its_input_checks(tmp_path):
    out = tmp_path / "b"
    proc = _open(TRACES / "export_cpu", out)
    assert "1 graph (1 with no generated code), 0 kernels" in proc.stderr
    show = kernelscope_cmd("show", str(out), "--guards").stdout
    assert "  export-0               export     0 kernels  forward at export_mlp.py:11" in show
    assert "no kernels: torch.export: an exported program (ATen graph); nothing compiled it here" in show
    assert "compiled from export_mlp.py:15  ep = torch.export.export(Mlp(), (torch.randn(4, 16),))" in show
    assert "guards of export-0 (export-0): 1" in show and "x: f32[4, 16]" in show  # what the program checks
    graph = kernelscope_cmd("show", str(out), "--artifact", "fx-dynamo").stdout
    for node in ("linear = torch.ops.aten.linear.default(x, p_fc1_weight, p_fc1_bias)",
                 "relu = torch.ops.aten.relu.default(linear)", "mul = torch.ops.aten.mul.Tensor(sigmoid, 2.0)"):
        assert re.search(re.escape(node).replace(r"\ =", r': "[^"]*" ='), graph), node
    assert "x: USER_INPUT" in graph


def test_export_trace_without_the_program_says_how_to_log_it(tmp_path):
    """torch 2.13's plain TORCH_TRACE of a non-strict export: only its inputs' descriptions."""
    trace = tmp_path / "t"
    trace.mkdir()
    text = (TRACES / "export_cpu" / "dedicated_log_torch_trace_export.log").read_text()
    kept = [rec for rec in re.split(r"(?m)^(?=V\d{4})", text) if '{"exported_program"' not in rec and '{"export"' not in rec]
    (trace / "dedicated_log_torch_trace_export.log").write_text("".join(kept))
    proc = _open(trace, tmp_path / "b")
    assert ("the trace holds torch.export's inputs (L['x']) at export_mlp.py:15 but not the exported program: "
            "torch logs it only when TORCH_DTRACE names the folder") in proc.stdout


def test_aoti_wrapper_without_provenance_still_lists_kernels_and_buffers():
    """A trace recorded without INDUCTOR_PROVENANCE: no debug handles; the launches and bytes still come."""
    text = (TRACES / "aoti_cpu" / "dedicated_log_torch_trace_aoti.log").read_text()
    body = text.split('"name": "inductor_aot_wrapper_code"', 1)[1].split("\n", 1)[1]
    wrapper = "\n".join(line[1:] for line in body.split("\n") if line.startswith("\t"))
    wrapper = re.sub(r"\n\s*// \[Provenance debug handles\][^\n]*", "", wrapper)
    code = parse_aoti_code(wrapper)
    assert [(launch.name, launch.handle) for launch in code.launches][:1] == [("aoti_torch_cpu_addmm_out", "")]
    assert code.launches[0].comment_nodes == ["linear"] and code.launches[0].out == ["buf0"]


@pytest.mark.slow
def test_run_of_an_aoti_script_makes_a_bundle_with_its_kernels_and_stops_after_n_graphs(tmp_path):
    """`run --graphs 1` of a script that packages two models: AOTInductor's C++ model counts as a graph, the
    run stops once the first aoti_compile_and_package returned, and the bundle lists its kernels with lines."""
    out = tmp_path / "out"
    proc = kernelscope_cmd("run", "--graphs", "1", "--no-ui", "-o", str(out), "--", sys.executable,
                           str(AOTI_TWO_SCRIPT), cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "stopped after 1 graph compiled" in proc.stdout + proc.stderr
    b = read_bundle(out)
    assert [g.id for g in b.graphs] == ["aoti-inference"]
    k = b.kernel("cpp_fused_relu_0")
    assert k.fx_nodes == ["relu"] and [(Path(u.file).name, u.line) for u in k.user_lines] == [("aoti_two_models.py", 13)]


def test_explorer_on_an_aoti_bundle_marks_the_kernels_nodes_and_its_launch_in_the_cpp(aoti_cpu, tmp_path,
                                                                                       monkeypatch):
    import asyncio

    from kernelscope.ui.app import make_app
    from kernelscope.ui.widgets.code_view import CodeView

    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))
    out, _ = aoti_cpu

    async def run():
        app = make_app(str(out))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            screen = app.screen
            screen.select_kernel(screen.bundle.kernel("cpp_fused_relu_0"))
            await pilot.pause()
            fx = screen.query_one("#fx", CodeView)
            assert sorted(fx.doc.lines[i].split("=")[0].strip() for i in fx.marks) == ["fc2_bias", "relu"]
            output = screen.query_one("#output", CodeView)
            assert output.doc.lines[output.cursor].strip().startswith("cpp_fused_relu_0((float*)(buf1.data_ptr())")
            assert "clamp_min" in screen.query_one("#kernel", CodeView).text
            await pilot.press("]")  # post-grad -> the graph AOTInductor was handed: the exported program
            await pilot.pause()
            assert screen.fx_kind == "fx-dynamo"
            assert screen.query_one("#pane-fx").border_subtitle.startswith("exported program · 1 node of")
            assert [fx.doc.lines[i].split("=")[0].strip() for i in fx.marks] == ["relu"]

    asyncio.run(run())


def test_two_aoti_compiles_in_one_job_each_keep_their_own_program_and_lines(tmp_path):
    """tests/fixtures/scripts/aoti_two_models.py (saved as aoti_two.py): an MLP, then a softmax, each packaged."""
    out = tmp_path / "b"
    _open(TRACES / "aoti_two_cpu", out)
    b = read_bundle(out)
    assert [(g.id, g.code_name, g.code_line) for g in b.graphs] == [("aoti-inference", "forward", 13),
                                                                    ("aoti-inference-b", "forward", 18)]
    second = (out / b.graph("aoti-inference-b").files["fx-dynamo"]).read_text()
    assert "torch.ops.aten.softmax.int(mul, -1)" in second and "linear" not in second
    assert "torch.ops.aten.linear.default" in (out / b.graph("aoti-inference").files["fx-dynamo"]).read_text()
    softmax = b.kernels_of("aoti-inference-b")[0]
    assert softmax.name.startswith("cpp_fused__softmax") and softmax.fx_nodes_pre == ["softmax"]
    assert [(Path(u.file).name, u.line) for u in softmax.user_lines] == [("aoti_two.py", 18)]
