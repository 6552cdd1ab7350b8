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
    check_out,
    commit_staging_dir,
    fresh_path,
    make_staging_dir,
    owned_name,
    read_bundle,
    save_manifest,
    sweep_orphans,
)
from kernelscope.bundle.model import Bundle
from kernelscope.capture.collect import write_bundle_from_work
from kernelscope.capture.lifeline import install_parent_signal_handlers, kill_group, track, untrack
from kernelscope.target import ScalarSpec, Target, TensorSpec, parse_calls, spec_dicts

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
PREVIEW_ARCHES = ("sm_80", "sm_89", "sm_90", "sm_100", "sm_120")  # --preview (capture/preview_patches.py)


@dataclass
class CaptureOptions:
    mode: str = "default"
    dynamic: bool | None = None
    fullgraph: bool = False
    backward: bool = False
    device: str | None = None  # None: cuda when the child sees one
    passes: bool = False  # dump every MLIR pass (MLIR_ENABLE_DUMP)
    timeout: float | None = None  # seconds
    no_grad: bool = False  # run the compiled calls under torch.no_grad()
    inference_mode: bool = False  # ... under torch.inference_mode()
    eval: bool = False  # module.eval() first, when the target is (or holds) an nn.Module
    preview: str | None = None  # "sm_90": what Inductor emits for that GPU, generated here, never run


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


WORK_PREFIX = "kernelscope-work-"
MAX_EVENT_LINE = 1 << 20  # bytes: a longer line from the child is dropped (with a note), never buffered whole


def make_work_dir(prefix: str, root: str | os.PathLike | None = None) -> Path:
    """A private work folder in the temp folder (or ROOT) that records this process as its owner;
    work folders there of processes that died (a killed parent) are removed first."""
    folder = Path(root) if root else Path(tempfile.gettempdir())
    sweep_orphans(folder, prefix)
    return Path(tempfile.mkdtemp(prefix=owned_name(prefix), dir=folder))


class ChildJob:
    """A kernelscope child process run to its end: the request as a JSON file, progress events
    streamed over a pipe into ``events`` (and ``on_event``), a timeout, and ``cancel()`` from any
    thread, which kills the child's whole process group. The child never outlives this process:
    an exception here (Ctrl-C) kills it, SIGTERM/SIGHUP handlers kill it, and the child itself
    dies with its parent (Linux parent-death signal; a lifeline pipe whose end it watches)."""

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
        install_parent_signal_handlers()
        read_fd, write_fd = os.pipe()
        life_read, life_write = os.pipe()  # the parent never writes: the child sees EOF when we are gone
        proc: subprocess.Popen | None = None
        try:
            request = make_request(write_fd)
            request["lifeline_fd"] = life_read
            request["parent_pid"] = os.getpid()
            request_path = work / "request.json"
            request_path.write_text(json.dumps(request), encoding="utf-8")
            proc = self._proc = spawn_child(self.python, module, request_path, (write_fd, life_read))
            track(proc)
            os.close(write_fd)
            write_fd = -1
            os.close(life_read)
            life_read = -1
            if self._cancelled.is_set():
                kill_group(proc)
            reader = threading.Thread(target=read_events, args=(read_fd, self.events, self.on_event), daemon=True)
            reader.start()
            timed_out = False
            try:
                rc = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                kill_group(proc)
                rc = proc.wait()
            stderr = (proc.stderr.read() or b"").decode("utf-8", "replace") if proc.stderr else ""
            reader.join(timeout=5)
            return ChildOutcome(request, rc, stderr, timed_out)
        finally:
            if proc is not None:
                if proc.poll() is None:  # Ctrl-C or any exception while waiting: the child goes too
                    self._cancelled.set()
                    kill_group(proc)
                    try:
                        proc.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        pass
                untrack(proc)
            for fd in (write_fd, life_read, life_write, read_fd):
                if fd >= 0:
                    try:
                        os.close(fd)
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
                        "backward": opts.backward, "device": opts.device, "no_grad": opts.no_grad,
                        "inference_mode": opts.inference_mode, "eval": opts.eval,
                        **({"preview": opts.preview} if opts.preview else {})},
        }

    def run(self) -> CaptureResult:
        try:
            check_out(self.out, replace=self.replace)
        except BundleError as exc:
            raise CaptureError(str(exc), "exists") from exc
        t0 = time.time()
        staging = make_staging_dir(self.out)
        work = make_work_dir(WORK_PREFIX, self.work_root)
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


def spawn_child(python: str, module: str, request_path: Path, fds: tuple[int, ...]) -> subprocess.Popen:
    """``python -m MODULE REQUEST.json`` in its own process group (so a cancel kills its workers too),
    with this kernelscope importable and FDS (the event pipe's write end, the lifeline) passed down."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2])] +
                                        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("PYTHONUNBUFFERED", "1")
    return subprocess.Popen([python, "-m", module, str(request_path)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=fds, env=env,
                            start_new_session=True)


def read_events(fd: int, events: list[dict[str, Any]], on_event: Callable[[dict[str, Any]], None] | None,
                max_line: int = MAX_EVENT_LINE) -> None:
    """Read a child's progress events (one JSON object a line) until it closes the pipe; a callback
    that raises never stops the reading. A line longer than ``max_line`` bytes is dropped as it
    streams (a note event says so), so this process never holds more than ``max_line`` of it."""

    def deliver(event: dict[str, Any]) -> None:
        events.append(event)
        if on_event is not None:
            try:
                on_event(event)
            except Exception:
                pass

    def finish(line: bytes, dropped: int) -> None:
        if dropped:
            deliver({"phase": "note", "message": f"dropped an event line of {dropped} bytes from the child "
                     f"(over the {max_line} byte cap)", "time": round(time.time(), 3)})
            return
        text = line.decode("utf-8", "replace").strip()
        if not text:
            return
        try:
            event = json.loads(text)
        except ValueError:
            return
        if isinstance(event, dict):
            deliver(event)

    buf = bytearray()
    dropped = 0  # > 0 while skipping the rest of an over-long line
    with os.fdopen(os.dup(fd), "rb", buffering=0) as fh:
        while True:
            try:
                chunk = fh.read(1 << 16)
            except OSError:
                break
            if not chunk:
                break
            start = 0
            while start < len(chunk):
                end = chunk.find(b"\n", start)
                piece = chunk[start:] if end < 0 else chunk[start:end]
                if dropped:
                    dropped += len(piece)
                else:
                    buf += piece
                    if len(buf) > max_line:
                        dropped, buf = len(buf), bytearray()
                if end < 0:
                    break
                finish(bytes(buf), dropped)
                buf, dropped = bytearray(), 0
                start = end + 1
    if buf or dropped:
        finish(bytes(buf), dropped)


def default_out(target: Target) -> Path:
    """Where a capture goes when -o is not given: a fresh folder under ./kernelscope-captures."""
    return fresh_path("kernelscope-captures", target.name)


__all__ = ["Capture", "ChildJob", "install_parent_signal_handlers", "kill_group", "make_work_dir", "CaptureError", "CaptureOptions", "CaptureResult", "BundleError", "MODES", "default_out"]
