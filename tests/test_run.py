"""``kernelscope run -- COMMAND`` on a real looping script, and the Python API (capture, record).

The compiles are shared: one ``run --graphs 2`` of a training loop (forward + backward) that
several tests read, one SIGINT run, one --timeout run (its limit taken from the first run's time,
so that the compile fits in it on a loaded machine), one Python process that calls both
``kernelscope.capture`` and ``kernelscope.record``. Bad input costs no compile.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelscope.bundle.kernel_rows import kernel_entries
from tests.conftest import REPO, kernelscope_cmd

SCRIPTS = REPO / "tests" / "fixtures" / "scripts"
LOOP = str(SCRIPTS / "loop_train.py")
NO_COMPILE = str(SCRIPTS / "no_compile.py")


def _alive_with(tag: str) -> list[str]:
    """Command lines of live processes that carry ``tag`` (what a run must not leave behind)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            state = (proc / "stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if tag in cmd and state != "Z" and "pytest" not in cmd:
            found.append(cmd)
    return found


def _manifest(out: Path) -> dict:
    return json.loads((out / "bundle.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def graphs_run(tmp_path_factory):
    """`kernelscope run --graphs 2 --no-ui -o OUT -- python loop_train.py --tag T`, with the time it took."""
    root = tmp_path_factory.mktemp("run-graphs")
    out = root / "out"
    t0 = time.time()
    proc = kernelscope_cmd("run", "--graphs", "2", "--no-ui", "-o", str(out), "--", sys.executable, LOOP,
                           "--tag", "ks-run-graphs", cwd=str(root))
    return proc, out, time.time() - t0, root


def test_run_graphs_keeps_forward_and_backward_with_lines(graphs_run):
    proc, out, _, root = graphs_run
    assert proc.returncode == 0, proc.stderr[-2000:]
    m = _manifest(out)
    kinds = [g["kind"] for g in m["graphs"]]
    assert kinds == ["forward", "backward"]
    assert m["target"]["origin"] == "run" and m["target"]["stopped"]["reason"] == "graphs"
    assert m["target"]["command"][-3:] == [LOOP, "--tag", "ks-run-graphs"]
    table = m["lines"]  # format 2: a kernel's user lines are ids into the manifest's lines table
    lines = {(Path(table[i]["file"]).name, table[i]["code"]) for k in kernel_entries(m, out) for i in k.get("user_lines", [])}
    assert ("loop_train.py", "h = torch.relu(self.fc1(x))") in lines
    assert "stopped after 2 graphs compiled and their first calls returned" in proc.stdout
    assert "made by: run of" in proc.stdout  # the summary says what it came from
    assert (out / "logs" / "stdout.txt").is_file()  # the program's prints (the stop may come before its first)
    assert sorted(p.name for p in root.iterdir()) == ["out"]  # nothing written outside -o
    assert _alive_with("ks-run-graphs") == []


def test_show_says_run_origin(graphs_run):
    _, out, _, _ = graphs_run
    shown = kernelscope_cmd("show", str(out))
    assert shown.returncode == 0
    made = next(line for line in shown.stdout.splitlines() if line.startswith("made by: "))
    assert "run of `" in made and "loop_train.py --tag ks-run-graphs`" in made
    assert "bench (runs the bundle's output code" in shown.stdout


def test_a_run_bundle_is_known_here_by_its_code_not_its_word(graphs_run, tmp_path):
    import shutil

    from kernelscope.bench.bundle_plan import written_here
    from kernelscope.bundle.io import read_bundle

    _, out, _, _ = graphs_run
    assert written_here(read_bundle(out))  # the record run kept in the cache: its bench needs no flag
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    code = next(copy.glob("graphs/*/output_code.py"))
    code.write_text(code.read_text() + "\n# changed\n")
    assert not written_here(read_bundle(copy))


def test_run_timeout_keeps_what_compiled(graphs_run, tmp_path):
    _, _, seconds, _ = graphs_run
    out = tmp_path / "out"
    limit = max(30.0, seconds + 10)  # the pointwise compile is cheaper than the training step's two
    proc = kernelscope_cmd("run", "--timeout", f"{limit:.0f}", "--no-ui", "-o", str(out), "--", sys.executable, LOOP,
                           "--pointwise", "--tag", "ks-run-timeout", cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    m = _manifest(out)
    assert m["status"] == "ok" and m["target"]["stopped"]["reason"] == "timeout"
    assert [k["name"] for k in kernel_entries(m, out)] == ["cpp_fused_add_mul_sin_0"]
    assert f"stopped after {limit:.0f} s (--timeout)" in proc.stdout
    assert (out / "logs" / "stdout.txt").is_file()
    assert _alive_with("ks-run-timeout") == []


@pytest.mark.slow  # a real CPU compile
def test_ctrl_c_mid_run_keeps_a_good_bundle(tmp_path):
    out = tmp_path / "out"
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-m", "kernelscope", "run", "--no-ui", "-o", str(out), "--",
                             sys.executable, LOOP, "--pointwise", "--tag", "ks-run-sigint"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(tmp_path), env=env)
    try:
        for line in proc.stderr:  # progress: wait until the program compiled its graph
            if "graph 1 generated" in line:
                break
        time.sleep(3)  # its first call returns, the loop prints
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, stderr[-2000:]
    m = _manifest(out)
    assert m["status"] == "ok" and m["target"]["stopped"]["reason"] == "interrupted"
    assert len(m["graphs"]) == 1 and kernel_entries(m, out)[0]["name"] == "cpp_fused_add_mul_sin_0"
    assert "stopped by Ctrl-C" in stdout
    assert _alive_with("ks-run-sigint") == []


@pytest.mark.slow  # starts a child that imports torch (seconds)
def test_crashing_script_leaves_failed_bundle_with_traceback(tmp_path):
    out = tmp_path / "out"
    proc = kernelscope_cmd("run", "--no-ui", "-o", str(out), "--", sys.executable, LOOP, "--pointwise",
                           "--crash-at", "0", cwd=str(tmp_path))
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()[-1]
    assert err.startswith("kernelscope: no graph compiled: the program exited with status 1: "
                          "RuntimeError: loss went NaN at step 0")
    m = _manifest(out)
    assert m["status"] == "failed"
    log = (out / "logs" / "stderr.txt").read_text()
    assert "Traceback (most recent call last)" in log and 'raise RuntimeError(f"loss went NaN' in log


# -- bad input: one line, exit 2, nothing left running, nothing written outside -o ----------------------
@pytest.mark.parametrize("command, message", [
    (["python3", "missing_train.py"], "missing_train.py: no such script"),
    (["no-such-command-ks", "--x"], "no-such-command-ks: command not found (is it on PATH?)"),
    ([], "no command: put it after --"),
])
def test_run_refuses_a_command_that_cannot_start(tmp_path, command, message):
    proc = kernelscope_cmd("run", "--no-ui", "-o", str(tmp_path / "out"), "--", *command, cwd=str(tmp_path))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"kernelscope: {message}"), proc.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("status", ["0", "1"])
def test_program_that_compiles_nothing(tmp_path, status):
    out = tmp_path / "out"
    proc = kernelscope_cmd("run", "--no-ui", "-o", str(out), "--", sys.executable, NO_COMPILE, status,
                           cwd=str(tmp_path))
    assert proc.returncode == 2
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("kernelscope: no graph compiled: ")
    assert ("exited with status 1" in last) == (status == "1")
    assert _manifest(out)["error"].startswith("no graph compiled")
    assert (out / "logs" / "stdout.txt").read_text() == "hello, no compile here\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_run_flags_checked():
    proc = kernelscope_cmd("run", "--graphs", "0", "--", sys.executable, NO_COMPILE)
    assert proc.returncode == 2 and proc.stderr.strip() == "kernelscope: --graphs must be at least 1"


def test_python_script_parsing():
    from kernelscope.capture.program import python_script

    assert python_script(["python3", "-u", "-X", "dev", "train.py", "--cfg", "x"]) == ("train.py", None)
    assert python_script(["python", "-m", "pkg.serve", "--port", "1"]) == (None, "pkg.serve")
    assert python_script(["python3.12", "-c", "print(1)"]) == (None, None)
    assert python_script(["torchrun", "--nproc-per-node", "2", "train.py"]) == (None, None)


# -- the Python API ----------------------------------------------------------------------------------------
API_SCRIPT = """
import json, sys
sys.path.insert(0, {scripts!r})
import kernelscope
clean = "torch" not in sys.modules
import torch
from loop_train import scaled_sin
got = kernelscope.capture(scaled_sin, torch.randn(8, 16), out={cap!r}, device="cpu")
with kernelscope.record({rec!r}) as rec:
    f = torch.compile(lambda x: torch.cos(x) + x)
    f(torch.randn(4, 4))
print(json.dumps({{"clean": clean, "capture": [got.status, got.origin, got.kernels, str(got)],
                  "record": [rec.summary.status, rec.summary.origin, rec.summary.kernels]}}))
"""


@pytest.mark.slow  # a real CPU compile
def test_api_capture_and_record(tmp_path):
    cap, rec, script = tmp_path / "cap", tmp_path / "rec", tmp_path / "notebook_like.py"
    code = API_SCRIPT.format(scripts=str(SCRIPTS), cap=str(cap), rec=str(rec))
    script.write_text(code)
    with_line = code.splitlines().index(next(x for x in code.splitlines() if x.startswith("with kernelscope"))) + 1
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=900, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["clean"] is True  # import kernelscope imported no torch
    assert got["capture"][:3] == ["ok", "capture", ["cpp_fused_add_mul_sin_0"]]
    assert got["capture"][3] == f"{cap}: 1 graph(s), 1 kernel(s)"
    assert got["record"] == ["ok", "record", ["cpp_fused_add_cos_0"]]
    m = _manifest(rec)
    assert m["target"]["origin"] == "record" and m["target"]["line"] == with_line
    shown = kernelscope_cmd("show", str(rec))
    assert f"made by: record of a block at {script}:{with_line} in a Python process" in shown.stdout.splitlines()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cap", "notebook_like.py", "rec"]


def test_api_capture_refuses_what_the_child_cannot_import():
    import kernelscope
    from kernelscope.api import CaptureError

    namespace: dict = {}
    exec("def cell_fn(x):\n    return x + 1\n", namespace)  # as a notebook cell defines it
    with pytest.raises(CaptureError, match="is not defined in a .py file .a notebook cell.*put it in a module"):
        kernelscope.capture(namespace["cell_fn"], 1.0, out="/nonexistent/never")

    def nested(x):
        return x

    with pytest.raises(CaptureError, match="is not at the top level of test_run.py"):
        kernelscope.capture(nested, 1.0, out="/nonexistent/never")
    with pytest.raises(TypeError, match="unknown option.*modee"):
        kernelscope.capture(nested, modee="default")


# -- where a bundle came from (no compile) -----------------------------------------------------------------
def test_origin_of_every_kind_of_bundle(tmp_path):
    from kernelscope.bundle.origin import origin_line, origin_of
    from kernelscope.ingest.open_trace import bundle_from_trace
    from kernelscope.ui.paths import capture_summary

    opened = bundle_from_trace(REPO / "tests" / "fixtures" / "traces" / "mlp_train_cpu", tmp_path / "o")
    assert origin_of(opened.target) == "open"
    shown = kernelscope_cmd("show", str(tmp_path / "o")).stdout.splitlines()
    assert shown[1].startswith("made by: open of the TORCH_TRACE ") and shown[1].endswith("traces/mlp_train_cpu")
    assert " · open · " in capture_summary(tmp_path / "o")
    assert origin_of({"spec": "add_relu", "name": "add_relu"}) == "capture"  # a bundle from before the field
    run = {"origin": "run", "command": ["python3", "train.py", "--cfg", "a b"], "file": "/p/train.py",
           "stopped": {"reason": "timeout", "message": "stopped after 5 s (--timeout)"}}
    assert origin_line(run) == "run of `python3 train.py --cfg 'a b'`: stopped after 5 s (--timeout)"


def test_import_kernelscope_api_names_import_no_torch():
    code = ("import sys, kernelscope\n"
            "assert callable(kernelscope.capture) and callable(kernelscope.record)\n"
            "import kernelscope.capture.program, kernelscope.api\n"
            "assert callable(kernelscope.capture)\n"
            "print([m for m in ('torch', 'triton') if m in sys.modules] or 'clean')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "clean", out.stderr


def test_dir_of_kernelscope_lists_its_api_not_its_imports():
    code = ("import json, kernelscope\n"
            "before = [n for n in dir(kernelscope) if not n.startswith('__')]\n"
            "kernelscope.record('/nonexistent/never')  # loads the API: api, bundle, show ... become attributes\n"
            "print(json.dumps([before, [n for n in dir(kernelscope) if not n.startswith('__')]]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert json.loads(out.stdout) == [["capture", "record"], ["capture", "record"]], out.stderr


def test_print_of_a_record_says_what_it_records_where_and_how_far(tmp_path):
    pytest.importorskip("torch")
    import inspect

    import kernelscope

    out = tmp_path / "out"
    rec, line = kernelscope.record(out), inspect.currentframe().f_lineno
    head = f"<kernelscope.record: what the block at test_run.py:{line} compiles -> {out}"
    assert str(rec) == repr(rec) == f"{head} (not started)>"
    with rec:
        assert str(rec) == f"{head} (recording)>"
    assert str(rec).startswith(f"{head} (written: 0 graphs, 0 kernels; failed: no graph compiled inside the record "
                               "block")
    assert str(kernelscope.record(out, force=True)).endswith(
        f"-> {out}, replacing a bundle there (force=True) (not started)>")


@pytest.mark.slow  # starts a child that imports torch (seconds)
def test_record_private_torch_names_still_exist():
    """What capture/recorder.py reaches into (it degrades to nothing without them; this says when)."""
    code = ("import torch, torch._inductor.config as ic, torch._functorch.config as fc\n"
            "from torch._logging import structured\n"
            "from kernelscope.capture.recorder import fresh_compile_patches, interned_strings\n"
            "print(isinstance(structured.INTERN_TABLE, dict), hasattr(ic, 'fx_graph_cache'),\n"
            "      hasattr(fc, 'enable_autograd_cache'), hasattr(ic.trace, 'provenance_tracking_level'),\n"
            "      len(fresh_compile_patches()) >= 2, isinstance(interned_strings(), dict))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.split() == ["True"] * 6, out.stderr[-2000:]


def test_run_origin_names_the_script_however_deep_the_interpreter():
    """A CI checkout's venv python is a long path; the line still names the script and its flags."""
    from kernelscope.bundle.origin import command_text

    deep = "/check/work/main/" + "x/" * 40 + ".venv/bin/python3.12"
    target = {"origin": "run", "command": [deep, "/srv/jobs/train.py", "--tag", "nightly"]}
    assert command_text(target) == "python3.12 /srv/jobs/train.py --tag nightly"
    script = "/check/work/main/" + "deep/" * 30 + "train_hf.py"
    target = {"origin": "run", "command": [deep, script, "--layers", "1", "--device", "cpu"]}
    assert command_text(target) == "python3.12 …/train_hf.py --layers 1 --device cpu"
    long = {"origin": "run", "command": ["python", "train.py"] + [f"--opt{i}=v" for i in range(30)]}
    text = command_text(long)
    assert len(text) == 100 and text.startswith("python train.py --opt0=v --opt1=v") and text.endswith("…")
