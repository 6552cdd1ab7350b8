"""Dead ends and wrong turns of ``kernelscope run`` and the Python API, each said once and naming its real
cause: no terminal (behave as --no-ui and say so), a program that deletes its working folder or makes -o
itself, a program that sends the trace elsewhere, an error in the user's own sitecustomize, a program whose
Python has no torch (the Python to run instead, nothing written), a deleted current folder refused only
where one is needed, API options and inputs of the wrong kind, and ``record`` in two threads or with a
commit that fails. No compile."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from kernelscope.cli import needs_cwd
from tests.conftest import GPU_FIXTURES, REPO, kernelscope_cmd

NO_COMPILE = str(REPO / "tests" / "fixtures" / "scripts" / "no_compile.py")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))


def _sh(cmd: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", cmd], cwd=str(cwd), capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO)})


def test_run_without_a_terminal_behaves_as_no_ui_and_says_so(tmp_path):
    # no --no-ui, stdin /dev/null, stdout a pipe: the explorer drew into the pipe and waited for keys forever
    proc = kernelscope_cmd("run", "-q", "-o", str(tmp_path / "out"), "--", sys.executable, NO_COMPILE,
                           cwd=str(tmp_path), timeout=120)
    assert proc.returncode == 2
    assert "no terminal" in proc.stdout and "--no-ui" in proc.stdout
    assert len(proc.stderr.strip().splitlines()) == 1 and "no graph compiled" in proc.stderr
    assert (tmp_path / "out" / "bundle.json").is_file()


def test_a_program_that_deletes_its_working_folder_still_gets_its_bundle(tmp_path):
    wd = tmp_path / "wd"
    wd.mkdir()
    script = tmp_path / "deletes.py"
    script.write_text("import os, shutil\nd = os.getcwd()\nos.chdir('/')\nshutil.rmtree(d)\nprint('gone')\n")
    proc = kernelscope_cmd("run", "--no-ui", "-q", "-o", "out", "--", sys.executable, str(script), cwd=str(wd),
                           timeout=120)
    assert proc.returncode == 2 and "internal error" not in proc.stderr, proc.stderr
    assert "no graph compiled" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert (wd / "out" / "bundle.json").is_file()  # -o as it was meant when the run started


def test_a_program_that_makes_out_itself_keeps_its_run_beside_it(tmp_path):
    script = tmp_path / "makes.py"
    script.write_text("import os, sys\nos.makedirs(sys.argv[1])\nopen(os.path.join(sys.argv[1], 'mine'), 'w')\n")
    out = tmp_path / "out"
    proc = kernelscope_cmd("run", "--no-ui", "-q", "-o", str(out), "--", sys.executable, str(script), str(out),
                           cwd=str(tmp_path), timeout=120)
    assert proc.returncode == 2  # it compiles nothing
    line = proc.stderr.strip()
    assert "appeared while the program ran" in line and "already exists" not in line
    beside = [p for p in tmp_path.iterdir() if p.name.startswith("out-")]
    assert len(beside) == 1 and (beside[0] / "bundle.json").is_file() and str(beside[0]) in line
    assert sorted(p.name for p in out.iterdir()) == ["mine"]  # the program's folder untouched


def test_graphs_compiled_into_the_programs_own_trace_are_named_as_such(tmp_path):
    from kernelscope.capture.program_bundles import trace_elsewhere

    events = [{"phase": "environment", "torch_trace": "/data/my-trace", "trace_dirs": ["/data/my-trace"]},
              {"phase": "compile", "graphs": 1, "pid": 1}, {"phase": "compile", "graphs": 2, "pid": 1}]
    why = trace_elsewhere(events, tmp_path)
    assert "compiled 2 graphs" in why and "/data/my-trace" in why and "TORCH_TRACE" in why
    assert trace_elsewhere([], tmp_path) == ""


def test_an_error_in_the_users_own_sitecustomize_is_said_as_python_says_it(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("raise RuntimeError('broken site')\n")
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{site}"}
    proc = subprocess.run([sys.executable, "-m", "kernelscope", "run", "--no-ui", "-q", "-o", str(tmp_path / "out"),
                           "--", sys.executable, NO_COMPILE], cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=120, env=env)
    assert proc.returncode == 2
    log = (tmp_path / "out" / "logs" / "stderr.txt").read_text()
    assert "Error in sitecustomize" in log and "RuntimeError: broken site" in log


@pytest.fixture
def python_without_torch(tmp_path) -> str:
    """A fresh venv's python, as a fresh clone's shell python3 is: no torch (it sees no site-packages but its own)."""
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120,
                   capture_output=True)
    return str(venv / "bin" / "python")


def test_a_python_without_torch_is_named_with_the_python_to_run_instead_and_nothing_is_written(
        tmp_path, python_without_torch):
    (tmp_path / "train.py").write_text("import torch\nprint(torch.compile(lambda x: x + 1)(torch.ones(2)))\n")
    for _ in range(2):  # the same -o again: nothing was left there that needs --force
        proc = kernelscope_cmd("run", "--no-ui", "-q", "-o", "out", "--", python_without_torch, "train.py",
                               cwd=str(tmp_path), timeout=120)
        assert proc.returncode == 2 and proc.stdout == ""
        line = proc.stderr.strip()
        assert len(line.splitlines()) == 1 and "already exists" not in line, line
        assert line.startswith(f"kernelscope: {python_without_torch} cannot import torch (No module named 'torch'); "
                               f"{sys.executable}, the Python kernelscope runs under, has it: "
                               f"`kernelscope run -- {sys.executable} train.py`")
        assert line.endswith("; nothing was written")
        if sys.prefix != sys.base_prefix:  # kernelscope runs in a venv: activating it is the other way
            assert f" or `source {Path(sys.prefix) / 'bin' / 'activate'}` first" in line
        assert sorted(p.name for p in tmp_path.iterdir()) == ["bare", "train.py"]


def test_no_python_with_torch_to_name_says_to_install_it(tmp_path, python_without_torch, monkeypatch):
    from kernelscope.capture.program import no_torch_line

    monkeypatch.setattr(sys, "executable", python_without_torch)  # kernelscope's own has none either
    assert no_torch_line([python_without_torch, "train.py"], str(tmp_path)) == (
        f"{python_without_torch} cannot import torch (No module named 'torch'): install torch for it, or run the "
        "program with a Python that has torch; nothing was written")


def test_a_deleted_current_folder_is_refused_only_where_one_is_needed(tmp_path):
    gone = tmp_path / "gone"
    prefix = f"mkdir {gone} && cd {gone} && rmdir {gone} && exec {sys.executable} -m kernelscope"
    shown = _sh(f"{prefix} show {GPU_FIXTURES / 'add_relu'}", tmp_path)
    assert shown.returncode == 0 and "add_relu" in shown.stdout, shown.stderr
    listed = _sh(f"{prefix} samples", tmp_path)
    assert listed.returncode == 0 and "add_relu" in listed.stdout, listed.stderr
    refused = _sh(f"{prefix} show rel/bundle", tmp_path)
    assert refused.returncode == 2 and "current folder no longer exists" in refused.stderr
    assert needs_cwd(["run", "--", "python", "/abs/t.py"], "run") and needs_cwd(["add_relu"], "add_relu")
    assert not needs_cwd([], None) and not needs_cwd(["/abs/bundle"], "/abs/bundle")
    assert not needs_cwd(["report", "/abs/b", "--format", "md"], "report")
    assert needs_cwd(["report", "/abs/b", "-o", "out.md"], "report")


# -- the API -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("options, words", [
    ({"device": "tpu"}, "device='tpu'"),
    ({"timeout": "soon"}, "timeout='soon'"),
    ({"timeout": float("nan")}, "positive number"),
    ({"mode": "fast"}, "mode='fast'"),
    ({"backward": "yes"}, "backward='yes'"),
    ({"preview": "sm_7"}, "preview='sm_7'"),
])
def test_api_options_of_the_wrong_kind_are_one_line(options, words):
    import kernelscope
    from kernelscope.api import CaptureError

    def f(x):
        return x

    with pytest.raises(CaptureError) as got:
        kernelscope.capture(f, 1.0, **options)
    assert words in str(got.value) and "\n" not in str(got.value)


def test_api_capture_of_an_integer_meta_tensor_is_one_line():
    torch = pytest.importorskip("torch")
    from kernelscope.api import CaptureError, _spec_of

    with pytest.raises(CaptureError, match="meta device"):
        _spec_of(torch.empty(8, dtype=torch.int64, device="meta"), 0)
    assert _spec_of(torch.empty(8, 4, device="meta"), 0) == "f32[8, 4]"


def test_record_in_two_threads_at_once_is_refused(tmp_path):
    pytest.importorskip("torch")
    import kernelscope
    from kernelscope.api import CaptureError

    inside, leave = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def first() -> None:
        try:
            with kernelscope.record(tmp_path / "a"):
                inside.set()
                leave.wait(30)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            inside.set()

    t = threading.Thread(target=first)
    t.start()
    try:
        assert inside.wait(60)
        with pytest.raises(CaptureError, match="already recording"):
            with kernelscope.record(tmp_path / "b"):
                pass
    finally:
        leave.set()
        t.join(60)
    assert not errors
    assert (tmp_path / "a" / "bundle.json").is_file() and not (tmp_path / "b").exists()
    with kernelscope.record(tmp_path / "c"):  # one at a time again
        pass


def test_a_record_whose_commit_fails_keeps_the_blocks_own_exception(tmp_path):
    pytest.importorskip("torch")
    import kernelscope

    out = tmp_path / "out"
    with pytest.raises(KeyError) as got:
        with kernelscope.record(out):
            out.mkdir()  # not a bundle: the commit refuses it
            (out / "user-file").write_text("x")
            raise KeyError("the block's own")
    assert any("kernelscope.record could not write" in n for n in getattr(got.value, "__notes__", []))
    assert (out / "user-file").read_text() == "x"
