"""Real captures on the CPU, as a user runs them: the CLI, the bundle, every error, the atomic write.

Each test here runs torch.compile in a child process (seconds to tens of seconds on 2 cores);
the add_relu capture is shared through the session fixture.
"""

import json
import os
import threading
import time
from pathlib import Path

import pytest

from kernelscope.bundle.io import read_bundle, read_text
from kernelscope.capture.runner import Capture
from kernelscope.capture.spec import CaptureOptions, CaptureSpec
from kernelscope.ingest.torch_logs import output_codes
from kernelscope.target import resolve_target

from .conftest import REPO, kernelscope_cmd

TARGETS = REPO / "tests" / "fixtures" / "targets"


def test_show_json_lists_the_add_relu_kernel_with_its_nodes_and_line(cpu_add_relu):
    proc = kernelscope_cmd("show", str(cpu_add_relu), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    (k,) = data["kernels"]
    assert k["name"] == "cpp_fused_add_relu_0" and k["kind"] == "cpp"
    assert k["fx_nodes"] == ["add", "relu"]
    assert [(u["line"], u["code"]) for u in k["user_lines"]] == [(7, "return (a + b).relu()")]
    assert data["status"] == "ok" and data["options"]["device"] == "cpu"
    assert data["environment"]["torch"].startswith("2.")
    assert "Triton stages absent" in " ".join(data["notes"])
    assert set(data["timings"]) >= {"import_torch", "compile_and_first_call", "collect"}
    assert data["source"]["first_line"] == 6 and data["source"]["last_line"] == 7


def test_bundle_output_code_equals_what_torch_logs_printed_in_the_same_run(cpu_add_relu):
    b = read_bundle(cpu_add_relu)
    printed = output_codes(read_text(b, b.files["stderr"]))
    assert printed, "TORCH_LOGS=output_code printed nothing"
    assert [read_text(b, g.files["output_code"]) for g in b.graphs] == printed


def test_show_summary_and_artifacts_are_reachable(cpu_add_relu):
    proc = kernelscope_cmd("show", str(cpu_add_relu))
    assert "cpp_fused_add_relu_0" in proc.stdout and "fx nodes: add, relu" in proc.stdout
    src = kernelscope_cmd("show", str(cpu_add_relu), "--kernel", "cpp_fused_add_relu_0", "--artifact", "source")
    assert 'extern "C"' in src.stdout
    oc = kernelscope_cmd("show", str(cpu_add_relu), "--artifact", "output_code")
    assert "cpp_fused_add_relu_0(arg0_1, arg1_1, buf0)" in oc.stdout
    fx = kernelscope_cmd("show", str(cpu_add_relu), "--artifact", "fx-post-grad")
    assert "torch.ops.aten.relu.default" in fx.stdout
    bad = kernelscope_cmd("show", str(cpu_add_relu), "--kernel", "nope", "--artifact", "source")
    assert bad.returncode == 2 and "no kernel 'nope'" in bad.stderr and "Traceback" not in bad.stderr
    user = kernelscope_cmd("show", str(cpu_add_relu), "--artifact", "stdout")
    assert user.returncode == 0


def test_samples_command_lists_one_a_line():
    proc = kernelscope_cmd("samples")
    lines = proc.stdout.strip().split("\n")
    assert len(lines) >= 9 and any(line.startswith("add_relu ") for line in lines)


def test_existing_output_is_never_overwritten(cpu_add_relu, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    proc = kernelscope_cmd("capture", "add_relu", "-o", str(mine), "--device", "cpu")
    assert proc.returncode == 2 and "already exists" in proc.stderr
    proc = kernelscope_cmd("capture", "add_relu", "-o", str(mine), "--device", "cpu", "--force")
    assert proc.returncode == 2 and "not a kernelscope bundle" in proc.stderr
    assert (mine / "notes.txt").read_text() == "keep me"


def _no_litter(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".kernelscope-tmp-")]


@pytest.mark.slow  # the child runs torch.compile (in five of the seven)
@pytest.mark.parametrize(
    "spec, extra, words, leaves_bundle",
    [
        ("errors.py::raises", ["--args", "f32[8]"], "your function raised ValueError: bad value in user code "
                                                    "(at errors.py:10)", True),
        ("errors.py::breaks", ["--args", "f32[8]", "--fullgraph"], "graph break under --fullgraph", True),
        ("broken_compiler.py::inductor_fails", ["--args", "f32[8]"], "torch.compile failed in Inductor", True),
        ("errors.py::oom", ["--args", "f32[8]"], "out of memory", True),
        ("errors.py::hangs", ["--args", "f32[8]", "--timeout", "6"], "compile timed out after 6 s", True),
        ("errors.py::NeedsArgs", ["--args", "f32[8]"], "NeedsArgs() needs arguments", False),
        ("errors.py::needs_two", [], "needs_two: no inputs; pass --args", False),
    ],
)
def test_user_errors_are_one_line_with_status_2(spec, extra, words, leaves_bundle, tmp_path):
    out = tmp_path / "b"
    proc = kernelscope_cmd("capture", f"{TARGETS / spec}", "-o", str(out), "--device", "cpu", "-q", *extra)
    assert proc.returncode == 2
    assert words in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().split("\n")[0].startswith("kernelscope: ")
    assert out.exists() == leaves_bundle
    if leaves_bundle:
        b = read_bundle(out)
        assert b.status == "failed" and words.split(" (")[0] in b.error
    assert _no_litter(tmp_path) == []


@pytest.mark.slow  # starts a child that imports torch (seconds)
def test_cuda_without_a_gpu_is_one_line_and_no_bundle(tmp_path):
    proc = kernelscope_cmd("capture", "add_relu", "-o", str(tmp_path / "b"), "--device", "cuda", "-q")
    assert proc.returncode == 2
    assert "torch sees no CUDA GPU" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "b").exists() and _no_litter(tmp_path) == []


def test_debug_shows_the_traceback_for_internal_errors(tmp_path):
    proc = kernelscope_cmd("--debug", "show", str(tmp_path / "missing"))
    assert proc.returncode == 2 and "no such bundle folder" in proc.stderr


@pytest.mark.slow  # cancelled in a real compile
@pytest.mark.parametrize("how", ["cancel", "kill"])
def test_cancel_or_kill_mid_capture_leaves_no_bundle_and_no_litter(how, tmp_path):
    work_root = tmp_path / "work"
    work_root.mkdir()
    out = tmp_path / "out" / "b"
    started = threading.Event()

    def on_event(event):
        if event.get("phase") == "compile":
            started.set()

    cap = Capture(CaptureSpec.build(resolve_target("add_relu"), options=CaptureOptions(device="cpu")), out,
                  on_event=on_event, work_root=work_root)
    result = {}
    t = threading.Thread(target=lambda: result.update(r=cap.run()))
    t.start()
    assert started.wait(120), "the child never reached the compile phase"
    if how == "cancel":
        cap.cancel()
    else:
        os.killpg(cap._proc.pid, 9)  # a crash: the child dies without a word
    t.join(60)
    r = result["r"]
    assert r.status == ("cancelled" if how == "cancel" else "crashed") and r.out is None
    if how == "kill":
        assert "killed by SIGKILL" in r.message
    assert not out.exists()
    assert list((tmp_path / "out").iterdir()) == []
    assert list(work_root.iterdir()) == []


@pytest.mark.slow  # a real CPU compile
def test_graph_break_sample_shows_two_graphs_and_the_reason(tmp_path):
    out = tmp_path / "gb"
    proc = kernelscope_cmd("capture", "graph_break", "-o", str(out), "--device", "cpu", "-q")
    assert proc.returncode == 0, proc.stderr
    b = read_bundle(out)
    assert len(b.graphs) == 2
    (gb,) = b.graph_breaks
    assert gb.line == 8 and "print" in gb.reason
    assert "shape torch.Size([1024])" in read_text(b, b.files["stdout"])  # the user's own print is kept


@pytest.mark.slow  # a real CPU compile
def test_backward_and_module_targets(tmp_path):
    out = tmp_path / "mlp"
    proc = kernelscope_cmd("capture", "mlp_train", "-o", str(out), "--device", "cpu", "-q",
                           "--args", "f32[16, 32], f32[32, 64] grad, f32[64, 32] grad")
    assert proc.returncode == 0, proc.stderr
    b = read_bundle(out)
    assert [g.kind for g in b.graphs] == ["forward", "backward"]
    assert any(k.graph.endswith("backward") and k.lang == "cpp" for k in b.kernels)
    assert b.options["backward"] is True  # the sample's OPTIONS turned it on
    out2 = tmp_path / "mod"
    proc = kernelscope_cmd("capture", f"{TARGETS / 'errors.py'}::Small", "-o", str(out2), "--device", "cpu", "-q")
    assert proc.returncode == 0, proc.stderr
    b2 = read_bundle(out2)
    assert any("relu" in k.fx_nodes for k in b2.kernels)
    assert b2.target["inputs"] == ["f32[4, 8]"]


@pytest.mark.slow  # a real CPU compile
def test_capture_api_streams_progress_events(tmp_path):
    events = []
    cap = Capture(CaptureSpec.build(resolve_target("add_relu"), "f32[64], f32[64]", CaptureOptions(device="cpu")),
                  tmp_path / "b", on_event=events.append)
    t0 = time.time()
    r = cap.run()
    assert r.status == "ok", r.message
    phases = [e["phase"] for e in events]
    assert phases[0] == "start" and phases[-1] == "done"
    assert any(e["phase"] == "compile" and e.get("kernels") == 1 for e in events)
    assert r.bundle.target["inputs"] == ["f32[64]", "f32[64]"] and time.time() - t0 < 300


@pytest.mark.slow  # a real CPU compile
def test_several_calls_show_the_recompile_and_its_guard(tmp_path):
    out = tmp_path / "rc"
    proc = kernelscope_cmd("capture", "add_relu", "-o", str(out), "--device", "cpu", "-q",
                           "--args", "f32[8], f32[8]; f32[16], f32[16]")
    assert proc.returncode == 0, proc.stderr
    b = read_bundle(out)
    assert len(b.graphs) == 2 and b.target["calls"] == [["f32[8]", "f32[8]"], ["f32[16]", "f32[16]"]]
    (rc,) = b.recompiles
    assert "size mismatch" in rc.reason and rc.file.endswith("add_relu.py") and rc.line == 6
    summary = kernelscope_cmd("show", str(out)).stdout
    assert "recompiles (1):" in summary
