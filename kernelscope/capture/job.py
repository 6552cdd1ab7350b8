"""Running a kernelscope child process (a capture or a bench) from the parent. No torch.

``ChildJob`` writes the request file (the job's keys around what the caller puts in it), spawns
``python -m MODULE REQUEST.json`` in its own process group, streams the child's events (the format
of ``capture.spec``) and kills the child on a timeout, a cancel or the parent's own end.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelscope.bundle.io import owned_name, sweep_orphans
from kernelscope.capture.lifeline import (
    JOB_MARKER,
    install_parent_signal_handlers,
    kill_group,
    kill_job_leftovers,
    sweep_orphaned_jobs,
    track,
    untrack,
)
from kernelscope.capture.spec import MAX_EVENT_LINE, decode_event


@dataclass
class ChildOutcome:
    request: dict[str, Any]
    rc: int
    stderr: str
    timed_out: bool


WORK_PREFIX = "kernelscope-work-"


def make_work_dir(prefix: str, root: str | os.PathLike | None = None) -> Path:
    """A private work folder in the temp folder (or ROOT) that records this process as its owner;
    work folders there of processes that died (a killed parent) are removed first, and what their
    jobs' programs left running is killed."""
    folder = Path(root) if root else Path(tempfile.gettempdir())
    sweep_orphans(folder, prefix)
    sweep_orphaned_jobs()
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
            marker = f"{os.getpid()}-{secrets.token_hex(6)}"
            proc = self._proc = spawn_child(self.python, module, request_path, (write_fd, life_read), marker)
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
            # Whatever the user's code started (a child forked at import, a daemon) goes with the job; its
            # processes hold the event pipe's write end, so this comes before reading to the pipe's end.
            kill_job_leftovers(proc, marker)
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
                kill_job_leftovers(proc, marker)
                untrack(proc)
                if proc.stderr is not None:  # closed here: an unclosed pipe is a ResourceWarning (an error under -W error)
                    proc.stderr.close()
            for fd in (write_fd, life_read, life_write, read_fd):
                if fd >= 0:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            self._proc = None


def spawn_child(python: str, module: str, request_path: Path, fds: tuple[int, ...],
                marker: str = "") -> subprocess.Popen:
    """``python -m MODULE REQUEST.json`` in its own process group (so a cancel kills its workers too),
    with this kernelscope importable and FDS (the event pipe's write end, the lifeline) passed down."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2])] +
                                        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.setdefault("PYTHONUNBUFFERED", "1")
    if marker:
        env[JOB_MARKER] = marker
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
        event = decode_event(line)
        if event is not None:
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
