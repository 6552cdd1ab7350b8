"""Why two kernels were not fused, device time per line, where the compile went (show --fusion, --lines, --compile).

A real CPU capture of a reduction, a broadcast and a matmul (benchmarks/models/fusion_models.py), benched
once; and a real H200 training run of GPT-2 (tests/fixtures/gpu_train_gpt2: its TORCH_TRACE and the
fusion lines of its stderr) built into a bundle here, as `open` would, with the fusion log.
"""

from __future__ import annotations

import asyncio
import gzip
import re
import shutil
from pathlib import Path

import pytest

from kernelscope.bundle.io import read_bundle, save_manifest
from kernelscope.bundle.model import Bundle
from kernelscope.ingest.build import RawCapture, build_bundle
from kernelscope.ingest.compile_time import innermost_phases
from kernelscope.ingest.fusion import parse_fusion_log, plain_reason
from kernelscope.ingest.tracelog import parse_trace_folder
from kernelscope.report.why import fusion_data
from tests.conftest import kernelscope_cmd

ROOT = Path(__file__).resolve().parent.parent
TARGET = str(ROOT / "benchmarks/models/fusion_models.py") + "::reduce_broadcast_matmul"
TRAIN = ROOT / "tests/fixtures/gpu_train_gpt2"
QUICK = ("--reps", "5", "--budget", "0", "--warmup", "2", "--profile-calls", "3")


@pytest.fixture(scope="session")
def rbm_capture(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("rbm") / "rbm"
    proc = kernelscope_cmd("capture", TARGET, "-o", str(out), "--device", "cpu", "-q")
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="session")
def rbm_benched(rbm_capture, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("rbm_bench")
    bundle = root / "rbm"
    shutil.copytree(rbm_capture, bundle)
    proc = kernelscope_cmd("bench", str(bundle), *QUICK, "-q", env={"KERNELSCOPE_CACHE_DIR": str(root / "cache")})
    assert proc.returncode == 0, proc.stderr
    return bundle


@pytest.fixture(scope="session")
def train_bundle(tmp_path_factory) -> Path:
    """The H200 GPT-2 training run's trace and fusion log, built into a bundle folder."""
    root = tmp_path_factory.mktemp("train")
    (root / "trace").mkdir()
    (root / "trace" / "torch_trace.log").write_bytes(gzip.decompress((TRAIN / "trace.log.gz").read_bytes()))
    out = root / "bundle"
    out.mkdir()
    raw = RawCapture(traces=[t for _, t in parse_trace_folder(root / "trace")],
                     stderr_text=gzip.decompress((TRAIN / "fusion_log.txt.gz").read_bytes()).decode())
    bundle = build_bundle(out, raw, Bundle(target={"spec": "train_gpt2.py"}))
    save_manifest(bundle, out)
    return out


def show(*args: str) -> str:
    proc = kernelscope_cmd("show", *args)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


# ------------------------------------------------------------------------- not fused, and why


def test_show_fusion_lists_the_matmul_round_trips_with_reasons_and_bytes(rbm_capture):
    text = show(str(rbm_capture), "--fusion")
    assert "Not fused: 2 pairs of kernels joined by a buffer, 1.6 MB of round trips per call" in text
    # The reduction and its broadcast fused into one kernel; the matmul is a library call on both sides.
    assert re.search(r"cpp_fused_mean_mul_relu_sub_0 -> mm \(library call\)\s+1\.0 MB, 2 transfers", text)
    assert re.search(r"mm \(library call\) -> cpp_fused_add_sigmoid_1\s+524\.3 KB, 2 transfers", text)
    assert "buffer buf1 float32[256, 512]" in text
    assert "the matmul (extern_kernels.mm) is a library call: it cannot take a pointwise prologue" in text
    assert "you still pay 2 transfers of 524.3 KB here (buf1" in text


def test_capture_keeps_the_fusion_log_and_output_code_stays_as_torch_printed_it(rbm_capture):
    b = read_bundle(rbm_capture)
    log = (rbm_capture / b.files["fusion"]).read_text()
    assert "fuse_nodes_once, candidates:" in log and "origins=OrderedSet([" in log
    code = (rbm_capture / b.graphs[0].files["output_code"]).read_text()
    assert "[__fusion]" not in code and "extern_kernels.mm(buf1, arg1_1, out=buf2)" in code
    assert b.extra["fusion"]["fusions_logged"] >= 1


def test_ui_info_shows_the_not_fused_pairs_and_marks_the_list(rbm_capture, tmp_path, monkeypatch):
    from kernelscope.ui.app import make_app
    from kernelscope.ui.widgets.code_view import CodeView
    from kernelscope.ui.widgets.kernel_table import KernelTable

    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))

    async def run():
        app = make_app(str(rbm_capture))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            screen = app.screen
            screen.select_kernel(screen.bundle.kernel("cpp_fused_mean_mul_relu_sub_0"))
            await pilot.pause()
            info = screen.query_one("#info", CodeView).doc.lines
            table = screen.query_one(KernelTable)
            marks = [table.get_row_at(i)[0].plain for i in range(table.row_count)]
            return info, marks

    info, marks = asyncio.run(run())
    text = "\n".join(info)
    assert "── not fused: this kernel ──" in text
    assert "-> mm (library call)  buf1  1.0 MB, 2 transfers" in text
    assert "why: the matmul (extern_kernels.mm) is a library call: it cannot take a pointwise prologue" in text
    # The first kernel is selected (▶); the mm, whose result the next kernel reads back, is marked ↓.
    assert marks == ["▶", "↓", " "]


def test_gpu_training_log_gives_the_schedulers_reasons_in_plain_words(train_bundle):
    b = read_bundle(train_bundle)
    fusion = fusion_data(b)  # format 2: each graph's pairs in its detail file, all read here
    assert fusion["log"] and fusion["refusals_logged"] == 244 and fusion["fusions_logged"] == 63
    by = {}
    for p in fusion["pairs"]:
        by.setdefault(p["decided_by"], []).append(p)
    assert set(by) <= {"fusion log", "extern call", "not in the log"} and len(by["fusion log"]) >= 20
    logged = by["fusion log"][0]
    assert logged["scheduler"].startswith("cannot fuse op")
    text = show(str(train_bundle), "--fusion")
    assert "the scheduler sees no data they share in the same loop order" in text
    assert "scheduler: cannot fuse op" in text
    assert re.search(r"x\d+ launches", text)  # a pair repeated per layer is one row
    # Ranked by bytes: the first row moves at least as much as the second.
    sizes = [p["bytes"] or 0 for p in fusion["pairs"]]
    assert sizes == sorted(sizes, reverse=True)


def test_fusion_log_parser_reads_candidates_fused_nodes_and_refusals():
    text = gzip.decompress((TRAIN / "fusion_log.txt.gz").read_bytes()).decode()
    logs = parse_fusion_log(text)
    # The forward and backward graphs of two frames (one restarted: 1/0_1), each its own rounds.
    assert [x.compile_id for x in logs] == ["1/0_1", "3/0", "3/0", "1/0_1"]
    assert sum(len(x.refusals) for x in logs) == 244
    assert any(x.node_class.get("op0") == "SchedulerNode" for x in logs)
    assert any("ExternKernelSchedulerNode" in x.node_class.values() for x in logs)
    assert all(o for x in logs for o in x.origins.values())


def test_plain_reasons():
    assert plain_reason("intermediate nodes between node1 & node2", "k1", "k2").startswith(
        "other work has to run between them: k2 also needs")
    assert plain_reason("numel/rnumel mismatch (reduce) (512, 1), (2048, 512)", "red", "poi") == (
        "their loops differ: red runs over 512 x 1 elements, poi over 2048 x 512 (one kernel cannot run both)")
    assert plain_reason("Fusion will increase peak memory", "a", "b") == "fusing would raise peak memory"
    assert plain_reason("something new", "a", "b") == "Inductor says: something new"


# ------------------------------------------------------------------------- device time per line


def test_show_lines_adds_up_to_the_benchs_device_total(rbm_benched):
    b = read_bundle(rbm_benched)
    total = b.extra["bench"]["run"]["sum_check"]["total_us"]
    text = show(str(rbm_benched), "--lines")
    assert "exclusive: kernels from this line alone; shared: kernels fused from several lines" in text
    assert re.search(r"fusion_models\.py:15\s+out = scaled @ w", text)  # the matmul's line has its time
    m = re.search(r"adds up: exclusive ([\d.]+) (µs|ms) \+ shared kernels \(each once\) ([\d.]+) (µs|ms) "
                  r"\+ no line ([\d.]+) (µs|ms) \+ not a launch (-?[\d.]+) (µs|ms) = ([\d.]+) (µs|ms)", text)
    assert m, text
    vals = [float(m.group(i)) * (1000 if m.group(i + 1) == "ms" else 1) for i in (1, 3, 5, 7, 9)]
    assert abs(sum(vals[:4]) - vals[4]) <= 0.02 * vals[4] + 0.2
    assert abs(vals[4] - total) <= 0.01 * total + 0.1
    assert "hottest line fusion_models.py:" in text


def test_show_lines_without_a_bench_says_what_to_run(rbm_capture):
    assert "run `kernelscope bench BUNDLE` first" in show(str(rbm_capture), "--lines")


# ------------------------------------------------------------------------- compile time


def test_show_compile_phases_add_up_to_the_traced_compile(rbm_capture):
    b = read_bundle(rbm_capture)
    ct = b.section("compile_time")
    assert abs(sum(ct["phases"].values()) - ct["total_s"]) < 1e-3
    (graph,) = ct["compiles"]
    # The trace's frame compile (compilation_metrics) and the timed phases agree; both sit inside the
    # capture's own compile-and-first-call clock.
    assert abs(graph["total_s"] - graph["frame_compile_s"]) <= 0.02 * graph["frame_compile_s"] + 0.05
    assert graph["total_s"] <= b.timings["compile_and_first_call"] + 0.05
    text = show(str(rbm_capture), "--compile")
    for phase in ("Dynamo tracing", "AOTAutograd", "Inductor lowering", "scheduling and fusion", "code generation",
                  "C++/Triton compile", "guards"):
        assert phase in text
    assert re.search(r"graph 0/0 reduce_broadcast_matmul \(fusion_models\.py:12\): [\d.]+ s\s+\d+ guards", text)
    assert "C++ kernels compile in one go" in text


def test_compile_time_of_a_gpu_run_names_each_triton_kernels_compile_and_autotune(train_bundle, ref_bundles):
    b = read_bundle(train_bundle)
    ct = b.section("compile_time")
    assert len(ct["compiles"]) == 5 and abs(sum(ct["phases"].values()) - ct["total_s"]) < 1e-3
    kernels = ct["kernels"]
    assert kernels == sorted(kernels, key=lambda k: -k["total_s"])
    assert all(k["kernel_id"] for k in kernels)  # each compiled kernel found in the bundle
    text = show(str(train_bundle), "--compile")
    assert "per kernel (Triton compile + autotune, slowest first" in text
    # The reference mlp_train trace (H200): gelu's 0.28 s compile, 2 configs, autotune at its first call.
    ref = read_bundle(ref_bundles["mlp_train"]).section("compile_time")
    gelu = next(k for k in ref["kernels"] if k["name"] == "triton_poi_fused_gelu_0")
    assert gelu["compile_s"] == pytest.approx(0.284701) and gelu["configs"] == 2
    assert gelu["autotune_s"] == pytest.approx(0.024, abs=0.005)
    assert "autotune" in ref["phases"]


def test_innermost_phase_takes_each_instant_once():
    outer = {"phase": "Dynamo (rest)", "b": 0, "e": 10_000_000}
    inner = {"phase": "Inductor lowering", "b": 2_000_000, "e": 5_000_000}
    innermost = {"phase": "autotune", "b": 3_000_000, "e": 4_000_000}
    per, covered = innermost_phases([outer, inner, innermost])
    assert covered == pytest.approx(10.0)
    assert per == pytest.approx({"Dynamo (rest)": 7.0, "Inductor lowering": 2.0, "autotune": 1.0})



def test_source_gutter_shows_heat_and_enter_lists_the_lines_kernels(rbm_benched, tmp_path, monkeypatch):
    from kernelscope.ui.app import make_app
    from kernelscope.ui.panes.source import HEAT
    from kernelscope.ui.widgets.code_view import CodeView

    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))
    notes: list[str] = []

    async def run():
        app = make_app(str(rbm_benched))
        async with app.run_test(size=(160, 48)) as pilot:
            await pilot.pause()
            view = app.screen.query_one("#source", CodeView)
            labels = {n: view.labels(n - 1) for n in (11, 15)}
            app.notify = lambda message, **kw: notes.append(str(message))  # what enter says
            view.post_message(CodeView.LineActivated(view, 14))
            await pilot.pause()
            return labels

    labels = asyncio.run(run())
    assert labels[11] == " 11"  # a line no kernel came from: no heat
    assert labels[15][0] in HEAT[1:] and labels[15].endswith("15")  # the matmul's line: the hottest
    assert any("exclusive" in n and "extern_kernels.mm" in n for n in notes)



def test_show_lines_of_a_bench_that_timed_no_launch_says_so():
    """A GPU capture benched on the CPU times none of its Triton launches: no 0.0 µs table."""
    text = show(str(ROOT / "tests" / "fixtures" / "gpu" / "softmax_bench_cpu"), "--lines")
    assert text.startswith("Device time per line: the bench timed none of this bundle's launches")
    assert "0.0 µs" not in text and "bench it on the device it was captured on" in text
