"""``kernelscope run -- COMMAND``: any program run in a child with private TORCH_TRACE, Triton and
Inductor caches, made into one bundle (every rank of a job in it). No torch in this process.

The program gets what a capture child sets up for itself (capture/child.py): TORCH_TRACE, the
caches and a temp folder inside a private work folder, TORCH_LOGS (output code, breaks,
recompiles), provenance tracking. Its stdout and stderr go to files that become the bundle's
``logs/``. It runs in its own session, so a stop kills everything it started (its process group),
and it dies with this process (parent-death signal; SIGTERM/SIGHUP handlers; Ctrl-C).

Stops: the program ends by itself; ``--graphs N`` (a Python program says, through the hook in
``run_site/``, when its Nth graph's first call returned; another program's trace is counted
instead); ``--timeout S``; Ctrl-C or ``cancel()``. Each keeps what the trace holds so far as a
good bundle, and the bundle says why it stopped (``target["stopped"]``).

This module starts, watches and stops the program (ProgramRun); what the command is and the
environment it gets are capture/program_command.py's, its trace made into bundles
capture/program_bundles.py's.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelscope.bundle.io import check_out
from kernelscope.capture import torch_hooks
from kernelscope.capture.job import WORK_PREFIX, make_work_dir, read_events
from kernelscope.capture.lifeline import (
    Terminated,
    become_subreaper,
    install_parent_signal_handlers,
    kill_group,
    kill_job_leftovers,
    received,
    signal_name,
    start_ticks,
    track,
    untrack,
)
from kernelscope.capture.program_bundles import RunResult, collect_bundles
from kernelscope.capture.program_command import (  # noqa: F401  (no_torch_line, python_script: read from here too)
    NO_HOOK_GRACE_S,
    TORCH_LOG_LINE,
    RunError,
    check_command,
    no_torch_line,
    python_script,
    run_environment,
    tail_lines,
)


def _die_with_parent() -> None:  # runs in the forked child before exec: PR_SET_PDEATHSIG survives exec
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)
    except Exception:
        pass


class _TraceCounter:
    """Counts output-code records in the trace logs as they grow (a program without the hook)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.offsets: dict[Path, int] = {}
        self.counts: dict[Path, int] = {}
        self.needles = (f'"{torch_hooks.OUTPUT_CODE_RECORD}"'.encode(), f'"{torch_hooks.AOTI_CODE_RECORD}"'.encode())

    def most(self) -> int:
        for log in self.folder.rglob("*.log"):
            try:
                with open(log, "rb") as fh:
                    fh.seek(self.offsets.get(log, 0))
                    chunk = fh.read()
            except OSError:
                continue
            cut = chunk.rfind(b"\n") + 1  # count whole lines only
            self.offsets[log] = self.offsets.get(log, 0) + cut
            self.counts[log] = self.counts.get(log, 0) + sum(
                1 for line in chunk[:cut].split(b"\n") if not line.startswith(b"\t") and any(n in line for n in self.needles))
        return max(self.counts.values(), default=0)


class ProgramRun:
    """One ``kernelscope run``: ``run()`` blocks; ``cancel()`` may be called from any thread."""

    def __init__(self, command: list[str], out: str | os.PathLike, *, graphs: int | None = None,
                 timeout: float | None = None, rank: int | None = None, mode: str = "default",
                 replace: bool = False, on_event: Callable[[dict[str, Any]], None] | None = None,
                 work_root: str | os.PathLike | None = None):
        if graphs is not None and graphs < 1:
            raise RunError("--graphs must be at least 1")
        if timeout is not None and not 0 < timeout < float("inf"):
            raise RunError("--timeout must be a positive number of seconds")
        self.command = list(command)
        # Both fixed now: the program may delete its working folder (ours too) before the bundle is written.
        self.cwd = os.getcwd()
        self.out = Path(out).absolute()
        self.graphs, self.timeout, self.rank, self.mode = graphs, timeout, rank, mode
        self.replace = replace
        self.on_event = on_event
        self.work_root = work_root
        self.events: list[dict[str, Any]] = []
        self.work: Path | None = None  # the private work folder while the program runs (its stdout.txt)
        self._proc: subprocess.Popen | None = None
        self._stop_reason = ""
        self._stop_lock = threading.Lock()
        self._program_ended = False

    def _stop(self, reason: str) -> None:
        """Stop the program (once) for ``reason``; its whole process group goes."""
        with self._stop_lock:
            if not self._stop_reason:
                self._stop_reason = reason
        proc = self._proc
        if proc is not None:
            kill_group(proc)

    def cancel(self) -> None:
        if not self._program_ended:  # a cancel while the bundle is written changes nothing (the UI closing)
            # The UI closing because this process got SIGTERM/SIGHUP: recorded as that, not as a cancel.
            self._stop(f"signal:{signal_name(received[0])}" if received else "cancelled")

    def _event(self, event: dict[str, Any]) -> None:
        if event.get("phase") == "stopped":
            self._stop("graphs")
        if self.on_event is not None:
            self.on_event(event)

    def _tell(self, phase: str, message: str) -> None:
        """This side's own progress (the program started, the bundle is being written) to ``on_event``."""
        if self.on_event is not None:
            try:
                self.on_event({"phase": phase, "message": message, "time": round(time.time(), 3)})
            except Exception:
                pass

    def last_output(self, lines: int = 5) -> list[str]:
        """The program's last ``lines`` lines of stdout so far (its prints), while it runs; [] after."""
        work = self.work
        return tail_lines(work / "stdout.txt", lines) if work is not None else []

    def last_errors(self, lines: int = 2) -> list[str]:
        """The last ``lines`` lines the program wrote to stderr itself (its logging, warnings), torch's
        TORCH_LOGS lines left out; [] after it ended."""
        work = self.work
        return tail_lines(work / "stderr.txt", lines, skip=TORCH_LOG_LINE, window=65536) if work is not None else []

    def run(self) -> RunResult:
        script = check_command(self.command)
        check_out(self.out, replace=self.replace)
        t0 = time.time()
        work = self.work = make_work_dir(WORK_PREFIX)
        try:
            rc = self._run_program(work)
            self._program_ended = True
            self._tell("collect", f"writing the bundle to {self.out}")
            return collect_bundles(self, work, script, rc, time.time() - t0, self._stop_reason)
        finally:
            self.work = None
            shutil.rmtree(work, ignore_errors=True)

    def _run_program(self, work: Path) -> int | None:
        install_parent_signal_handlers()
        read_fd, write_fd = os.pipe()
        marker = f"{os.getpid()}-{secrets.token_hex(6)}"
        env = run_environment(work, self.mode, write_fd, self.graphs, marker)
        stdout = open(work / "stdout.txt", "wb")
        stderr = open(work / "stderr.txt", "wb")
        reader = None
        since = None
        # Orphans of the program (a double-forked or setsid daemon, whatever its environment) become
        # this process's children, so the sweep below finds them all.
        reaper = become_subreaper()
        try:
            try:
                proc = self._proc = subprocess.Popen(
                    self.command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, pass_fds=(write_fd,),
                    env=env, start_new_session=True,
                    preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
            except OSError as exc:  # found by which() but cannot start (a bad interpreter line)
                raise RunError(f"{self.command[0]}: cannot start it ({exc.strerror or exc})") from exc
            track(proc)
            try:
                since = start_ticks(proc.pid) if reaper else None
            except (OSError, IndexError, ValueError):
                since = None
            if self._stop_reason:  # cancelled before it started: _stop found no process to kill
                kill_group(proc)
            os.close(write_fd)
            write_fd = -1
            self._tell("start", f"{Path(self.command[0]).name} started (pid {proc.pid})")
            reader = threading.Thread(target=read_events, args=(read_fd, self.events, self._event), daemon=True)
            reader.start()
            return self._wait(proc, work)
        finally:
            proc = self._proc
            if proc is not None:
                kill_group(proc)  # the program's leftovers (compile workers, a launcher's ranks) go too
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    pass
                # What left the group: by the marker, and the orphans adopted. They may hold the event
                # pipe's write end, so this comes before waiting for the pipe's end.
                kill_job_leftovers(proc, marker, since)
                untrack(proc)
            if reaper:
                become_subreaper(False)
            if reader is not None:
                reader.join(timeout=5)
            for fd in (write_fd, read_fd):
                if fd >= 0:
                    try:
                        os.close(fd)
                    except OSError:
                        pass
            stdout.close()
            stderr.close()

    def _wait(self, proc: subprocess.Popen, work: Path) -> int | None:
        """Wait for the program to end or to be stopped; returns its exit status when it ended by itself."""
        deadline = time.time() + self.timeout if self.timeout else None
        counter = _TraceCounter(work / "trace") if self.graphs else None
        reached_at = None
        try:
            while True:
                try:
                    rc = proc.wait(timeout=0.1)
                except subprocess.TimeoutExpired:
                    rc = None
                if rc is not None:
                    if received and not self._stop_reason:  # this process's SIGTERM/SIGHUP handler killed it
                        self._stop(f"signal:{signal_name(received[0])}")
                    return None if self._stop_reason else rc
                if deadline is not None and time.time() >= deadline:
                    self._stop("timeout")
                elif counter is not None and not self._stop_reason and not self._hooked() \
                        and counter.most() >= self.graphs:
                    # No hook answered (not a python program): the trace says N graphs exist; their
                    # first calls are not observable from here, so give them a moment.
                    reached_at = reached_at or time.time()
                    if time.time() - reached_at >= NO_HOOK_GRACE_S:
                        self._stop("graphs-trace")
        except Terminated as exc:  # SIGTERM, SIGHUP (the terminal closed): recorded as what it was
            self._stop(f"signal:{signal_name(exc.signum)}")
            proc.wait()
            return None
        except KeyboardInterrupt:
            self._stop("interrupted")
            proc.wait()
            return None

    def _hooked(self) -> bool:
        return any(e.get("phase") == "compile" and "pid" in e for e in self.events)

