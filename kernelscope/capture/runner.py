"""Parent side of a capture: spawn the child, stream its progress, commit or clean up. No torch.

The child writes into a staging folder next to the output; only a finished (or cleanly failed)
capture is renamed into place. A cancel, a crash or a kill removes the staging and work folders,
so nothing half-written is left behind. A timeout keeps what the trace had recorded, marked failed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelscope.bundle.io import (
    BundleError,
    commit_staging_dir,
    fresh_path,
    make_staging_dir,
    read_bundle,
    save_manifest,
)
from kernelscope.bundle.model import Bundle
from kernelscope.capture.collect import write_bundle_from_work
from kernelscope.target import ScalarSpec, Target, TensorSpec, parse_calls, spec_dicts

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


@dataclass
class CaptureOptions:
    mode: str = "default"
    dynamic: bool | None = None
    fullgraph: bool = False
    backward: bool = False
    device: str | None = None  # None: cuda when the child sees one
    passes: bool = False  # dump every MLIR pass (MLIR_ENABLE_DUMP)
    timeout: float | None = None  # seconds


@dataclass
class CaptureResult:
    status: str  # "ok", "failed", "cancelled", "crashed"
    out: Path | None
    message: str = ""
    kind: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    bundle: Bundle | None = None


class CaptureError(Exception):
    """A capture that produced no bundle; one line for the user."""

    def __init__(self, message: str, kind: str = ""):
        super().__init__(message)
        self.kind = kind


@dataclass
class ChildOutcome:
    request: dict[str, Any]
    rc: int
    stderr: str
    timed_out: bool


class ChildJob:
    """A kernelscope child process run to its end: the request as a JSON file, progress events
    streamed over a pipe into ``events`` (and ``on_event``), a timeout, and ``cancel()`` from any
    thread, which kills the child's whole process group."""

    def __init__(self, python: str | None, on_event: Callable[[dict[str, Any]], None] | None):
        self.python = python or sys.executable
        self.on_event = on_event
        self.events: list[dict[str, Any]] = []
        self._proc: subprocess.Popen | None = None
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            kill_group(proc)

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def _run_child(self, module: str, work: Path, make_request: Callable[[int], dict[str, Any]],
                   timeout: float | None) -> ChildOutcome:
        """Write ``make_request(event_fd)`` to WORK/request.json, run ``python -m MODULE`` on it and
        wait; on timeout the child's group is killed."""
        read_fd, write_fd = os.pipe()
        try:
            request = make_request(write_fd)
            request_path = work / "request.json"
            request_path.write_text(json.dumps(request), encoding="utf-8")
            self._proc = spawn_child(self.python, module, request_path, write_fd)
            os.close(write_fd)
            write_fd = -1
            if self._cancelled.is_set():
                kill_group(self._proc)
            reader = threading.Thread(target=read_events, args=(read_fd, self.events, self.on_event), daemon=True)
            reader.start()
            timed_out = False
            try:
                rc = self._proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                kill_group(self._proc)
                rc = self._proc.wait()
            stderr = (self._proc.stderr.read() or b"").decode("utf-8", "replace") if self._proc.stderr else ""
            reader.join(timeout=5)
            return ChildOutcome(request, rc, stderr, timed_out)
        finally:
            if write_fd >= 0:
                os.close(write_fd)
            try:
                os.close(read_fd)
            except OSError:
                pass
            self._proc = None


class Capture(ChildJob):
    """One capture in a child process. ``run()`` blocks; ``cancel()`` may be called from any thread."""

    def __init__(self, target: Target, out: str | os.PathLike, *, args: list[TensorSpec | ScalarSpec] | None = None,
                 args_text: str = "", options: CaptureOptions | None = None, replace: bool = False,
                 python: str | None = None, on_event: Callable[[dict[str, Any]], None] | None = None,
                 work_root: str | os.PathLike | None = None):
        super().__init__(python, on_event)
        self.target = target
        self.out = Path(out)
        self.args = args
        self.args_text = args_text
        self.options = options or CaptureOptions()
        self.replace = replace
        self.work_root = work_root

    def _request(self, work: Path, staging: Path, event_fd: int) -> dict[str, Any]:
        opts = self.options
        calls = None
        if self.args is not None:
            spec_calls = parse_calls(self.args_text) if ";" in self.args_text else [self.args]
            calls = [spec_dicts(call) for call in spec_calls]
        return {
            "work": str(work), "staging": str(staging), "event_fd": event_fd, "t_spawn": time.time(),
            "target": {"spec": self.target.spec, "file": self.target.file, "name": self.target.name,
                       "is_class": self.target.is_class, "is_sample": self.target.is_sample,
                       "first_line": self.target.first_line, "last_line": self.target.last_line},
            "calls": calls, "args_text": self.args_text, "passes": opts.passes,
            "options": {"mode": opts.mode, "dynamic": opts.dynamic, "fullgraph": opts.fullgraph,
                        "backward": opts.backward, "device": opts.device},
        }

    def run(self) -> CaptureResult:
        if self.out.exists() and not self.replace:
            raise CaptureError(f"{self.out} already exists; choose another -o or pass --force to replace it", "exists")
        if self.out.exists() and not (self.out / "bundle.json").is_file():
            raise CaptureError(f"{self.out} exists and is not a kernelscope bundle; refusing to replace it", "exists")
        t0 = time.time()
        staging = make_staging_dir(self.out)
        work = Path(tempfile.mkdtemp(prefix="kernelscope-work-", dir=self.work_root))
        committed = False
        try:
            child = self._run_child("kernelscope.capture.child", work,
                                    lambda fd: self._request(work, staging, fd), self.options.timeout)
            rc, stderr_tail, timed_out = child.rc, child.stderr, child.timed_out
            seconds = time.time() - t0
            if self.cancelled:
                return CaptureResult("cancelled", None, "capture cancelled", "cancelled", self.events, seconds)
            if timed_out:
                bundle = self._partial_bundle(work, staging, f"compile timed out after {self.options.timeout:g} s "
                                              "(the child was stopped); raise --timeout or simplify the function")
                commit_staging_dir(staging, self.out, replace=self.replace)
                committed = True
                bundle.root = str(self.out)
                return CaptureResult("failed", self.out, bundle.error, "timeout", self.events, seconds, bundle)
            if rc in (0, 3) and (staging / "bundle.json").is_file():
                commit_staging_dir(staging, self.out, replace=self.replace)
                committed = True
                bundle = read_bundle(self.out)
                status = "ok" if rc == 0 else "failed"
                return CaptureResult(status, self.out, bundle.error, bundle.error_kind, self.events, seconds, bundle)
            message = self._crash_message(rc, stderr_tail)
            if rc == 5:  # failed before compiling anything: the child wrote no bundle on purpose
                kind = next((e.get("kind", "") for e in reversed(self.events) if e.get("phase") == "error"), "")
                return CaptureResult("failed", None, message, kind, self.events, seconds)
            return CaptureResult("crashed", None, message, "crash", self.events, seconds)
        finally:
            if not committed:
                shutil.rmtree(staging, ignore_errors=True)
            shutil.rmtree(work, ignore_errors=True)

    def _crash_message(self, rc: int, stderr_tail: str) -> str:
        for event in reversed(self.events):
            if event.get("phase") == "error":
                return str(event.get("message"))
        if rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            hint = " (the system's out-of-memory killer does this: try smaller --args shapes)" \
                if name == "SIGKILL" and not self.cancelled else ""
            return f"the capture process was killed by {name}{hint}"
        tail = [line for line in stderr_tail.strip().split("\n") if line.strip()]
        last = tail[-1] if tail else ""
        return f"the capture process exited with status {rc}" + (f": {last[:300]}" if last else "")

    def _partial_bundle(self, work: Path, staging: Path, message: str) -> Bundle:
        request = json.loads((work / "request.json").read_text(encoding="utf-8"))
        for child in staging.iterdir():  # the child may have started writing; rebuild from the raw trace
            if child.is_dir():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink()
        bundle = Bundle(target=dict(request["target"]), options=request["options"], status="failed",
                        error=message, error_kind="timeout")
        bundle.target["args"] = request.get("args_text", "")
        write_bundle_from_work(work, staging, bundle, user_file=self.target.file)
        save_manifest(bundle, staging)
        return bundle


def spawn_child(python: str, module: str, request_path: Path, event_fd: int) -> subprocess.Popen:
    """``python -m MODULE REQUEST.json`` in its own process group (so a cancel kills its workers too),
    with this kernelscope importable and the event pipe's write end passed down."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2])] +
                                        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("PYTHONUNBUFFERED", "1")
    return subprocess.Popen([python, "-m", module, str(request_path)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=(event_fd,), env=env,
                            start_new_session=True)


def read_events(fd: int, events: list[dict[str, Any]], on_event: Callable[[dict[str, Any]], None] | None) -> None:
    """Read a child's progress events (one JSON object a line) until it closes the pipe; a callback
    that raises never stops the reading."""
    with os.fdopen(os.dup(fd), "r", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                event = json.loads(line)
            except ValueError:
                continue
            events.append(event)
            if on_event is not None:
                try:
                    on_event(event)
                except Exception:
                    pass


def kill_group(proc: subprocess.Popen) -> None:
    """Kill the child and everything it started (Inductor's compile workers)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass


def default_out(target: Target) -> Path:
    """Where a capture goes when -o is not given: a fresh folder under ./kernelscope-captures."""
    return fresh_path("kernelscope-captures", target.name)


__all__ = ["Capture", "CaptureError", "CaptureOptions", "CaptureResult", "BundleError", "MODES", "default_out"]
