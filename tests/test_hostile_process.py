"""Hostile cases for the capture's processes and output folder: a killed parent leaves no child and
(after the next start) no staging or work folder; --force replaces only a kernelscope bundle's own
entries and never the current folder; a huge event line does not grow the parent."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kernelscope.bundle.io import commit_staging_dir, make_staging_dir, read_bundle
from kernelscope.capture.child import Events
from kernelscope.capture.runner import read_events
from tests.conftest import GPU_FIXTURES, REPO, kernelscope_cmd

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# A user file that, once the capture child has imported torch and loads it, writes its pid and hangs.
SLOW = """
import os, time
open(os.environ["KS_PIDFILE"], "w").write(str(os.getpid()))
time.sleep(120)

def f(x):
    return x + 1
"""


def _state(pid: int) -> str | None:
    """The process's state letter from /proc (None when gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def _group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes whose process group is ``pgid``."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def _gone(pid: int, within: float) -> bool:
    deadline = time.time() + within
    while time.time() < deadline:
        if _state(pid) in (None, "Z", "X") and not _group_members(pid):
            return True
        time.sleep(0.2)
    return False


def _start_slow_capture(tmp_path: Path) -> tuple[subprocess.Popen, int, Path, Path]:
    """A `kernelscope capture` whose child hangs in the user's file: (parent, child pid, out, temp folder)."""
    (tmp_path / "slow.py").write_text(SLOW)
    temp = tmp_path / "temp"
    temp.mkdir()
    pidfile = tmp_path / "child.pid"
    out = tmp_path / "outs" / "slow"
    env = dict(os.environ, KS_PIDFILE=str(pidfile), TMPDIR=str(temp))
    parent = subprocess.Popen([sys.executable, "-m", "kernelscope", "capture", f"{tmp_path / 'slow.py'}::f",
                               "--args", "f32[8]", "--device", "cpu", "-o", str(out), "-q"], cwd=str(REPO), env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 45
    while not (pidfile.is_file() and pidfile.read_text()):
        if parent.poll() is not None or time.time() > deadline:
            parent.kill()
            raise AssertionError(f"the capture child never started: {parent.stderr.read()[-2000:]}")
        time.sleep(0.2)
    return parent, int(pidfile.read_text()), out, temp


def _staging(out: Path) -> list[str]:
    return [p.name for p in out.parent.iterdir() if p.name.startswith(".kernelscope-tmp-")]


def _work(temp: Path) -> list[str]:
    return [p.name for p in temp.iterdir() if p.name.startswith("kernelscope-work-")]


@linux_only
@pytest.mark.slow  # starts a child that imports torch (seconds)
def test_a_parent_killed_with_sigkill_leaves_no_child_and_the_next_start_sweeps(tmp_path):
    parent, child, out, temp = _start_slow_capture(tmp_path)
    assert _state(child) not in (None, "Z") and _staging(out) and _work(temp)  # mid-capture
    parent.kill()
    parent.wait(10)
    assert _gone(child, 10), f"capture child {child} outlived its SIGKILLed parent"
    assert _staging(out) and _work(temp)  # nobody could clean up: the next start does
    (tmp_path / "bad.py").write_text("raise RuntimeError('boom')\n\ndef f(x):\n    return x\n")
    nxt = kernelscope_cmd("capture", f"{tmp_path / 'bad.py'}::f", "--args", "f32[8]", "--device", "cpu",
                          "-o", str(out.parent / "next"), env={"TMPDIR": str(temp)}, timeout=50)
    assert nxt.returncode == 2 and "boom" in nxt.stderr
    assert _staging(out) == [] and _work(temp) == []
    assert not (out.parent / "next").exists()


@linux_only
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
@pytest.mark.slow  # starts a child that imports torch (seconds)
def test_ctrl_c_sigterm_sighup_of_the_parent_end_the_child(tmp_path, sig):
    parent, child, out, temp = _start_slow_capture(tmp_path)
    parent.send_signal(sig)
    rc = parent.wait(20)
    assert _gone(child, 10), f"capture child {child} outlived its parent's {sig.name}"
    if sig == signal.SIGINT:  # Ctrl-C: the parent lives on to clean up and say so
        assert rc == 130 and "capture cancelled" in parent.stderr.read()
        assert _staging(out) == [] and _work(temp) == []
    else:  # ended by the signal, as its sender expects, after cleaning up like Ctrl-C (issue 22)
        assert rc == -sig
        assert _staging(out) == [] and _work(temp) == []


def _bundle_copy(dest: Path) -> Path:
    shutil.copytree(GPU_FIXTURES / "add_relu", dest)
    return dest


def test_force_on_a_folder_that_is_not_a_bundle_is_refused_and_untouched(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "bundle.json").write_text('{"mine": true}')  # a file of that name is not a bundle
    (mine / "notes.txt").write_text("keep me")
    before = sorted((p.name, p.read_text()) for p in mine.iterdir())
    proc = kernelscope_cmd("capture", "add_relu", "-o", str(mine), "--device", "cpu", "--force", timeout=50)
    assert proc.returncode == 2 and "is not a kernelscope bundle; refusing to replace it" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted((p.name, p.read_text()) for p in mine.iterdir()) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".kernelscope-tmp-")]


def test_force_replaces_only_the_bundles_own_entries(tmp_path):
    out = _bundle_copy(tmp_path / "b")
    (out / "notes.txt").write_text("keep me")
    (out / "plots").mkdir()
    (out / "plots" / "a.png").write_bytes(b"png")
    staging = make_staging_dir(out)
    for entry in (GPU_FIXTURES / "add_relu_passes").iterdir():
        (shutil.copytree if entry.is_dir() else shutil.copy2)(entry, staging / entry.name)
    commit_staging_dir(staging, out, replace=True)
    assert (out / "notes.txt").read_text() == "keep me" and (out / "plots" / "a.png").read_bytes() == b"png"
    new = json.loads((GPU_FIXTURES / "add_relu_passes" / "bundle.json").read_text())
    assert json.loads((out / "bundle.json").read_text()) == new
    assert read_bundle(out).kernels  # the new bundle reads whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]  # no staging or old folder left


@pytest.mark.parametrize("where", [".", "..", "HOME"])
def test_force_never_writes_over_the_current_folder_its_parents_or_home(tmp_path, where):
    home = tmp_path / "home"  # HOME for the run: the real home is never at risk
    cwd = home / "a" / "here"
    cwd.mkdir(parents=True)
    for folder in (cwd, cwd.parent, home):  # each looks like a bundle, so only the place protects it
        (folder / "bundle.json").write_text(json.dumps({"schema": "kernelscope.bundle", "version": 1}))
        (folder / "notes.txt").write_text("keep me")
    before = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    proc = kernelscope_cmd("capture", "add_relu", "-o", str(home) if where == "HOME" else where, "--device", "cpu",
                           "--force", cwd=str(cwd), env={"PYTHONPATH": str(REPO), "HOME": str(home)}, timeout=50)
    what = {".": "the current folder", "..": "a parent of the current folder", "HOME": "your home folder"}[where]
    assert proc.returncode == 2 and what in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert sorted(str(p.relative_to(home)) for p in home.rglob("*")) == before


def test_a_huge_event_line_is_dropped_with_a_note_and_reading_goes_on(tmp_path):
    read_fd, write_fd = os.pipe()
    events: list[dict] = []
    reader = threading.Thread(target=read_events, args=(read_fd, events, None), kwargs={"max_line": 1 << 16})
    reader.start()
    with os.fdopen(write_fd, "wb") as w:
        w.write(b'{"phase": "start", "message": "hello"}\n')
        for _ in range(40):  # 10 MB in one line, written in pieces
            w.write(b"x" * (1 << 18))
        w.write(b'\n{"phase": "done", "message": "bye"}\n')
    reader.join(20)
    os.close(read_fd)
    assert [e["phase"] for e in events] == ["start", "note", "done"]
    assert f"dropped an event line of {40 << 18} bytes" in events[1]["message"]


def test_the_child_cuts_a_huge_message_before_it_reaches_the_pipe(tmp_path):
    read_fd, write_fd = os.pipe()
    events: list[dict] = []
    reader = threading.Thread(target=read_events, args=(read_fd, events, None))
    reader.start()
    emitter = Events(write_fd)
    emitter.emit("error", "y" * 5_000_000, kind="user", traceback="t" * 5_000_000)
    emitter._fh.close()
    reader.join(20)
    os.close(read_fd)
    [event] = events
    assert event["kind"] == "user" and "more characters cut" in event["message"] and len(event["message"]) < 40_000
