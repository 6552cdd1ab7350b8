"""``kernelscope run -- COMMAND``: any program run in a child with private TORCH_TRACE, Triton and
Inductor caches, made into a bundle per rank. No torch in this process.

The program gets what a capture child sets up for itself (capture/child.py): TORCH_TRACE, the
caches and a temp folder inside a private work folder, TORCH_LOGS (output code, breaks,
recompiles), provenance tracking. Its stdout and stderr go to files that become the bundle's
``logs/``. It runs in its own session, so a stop kills everything it started (its process group),
and it dies with this process (parent-death signal; SIGTERM/SIGHUP handlers; Ctrl-C).

Stops: the program ends by itself; ``--graphs N`` (a Python program says, through the hook in
``run_site/``, when its Nth graph's first call returned; another program's trace is counted
instead); ``--timeout S``; Ctrl-C or ``cancel()``. Each keeps what the trace holds so far as a
good bundle, and the bundle says why it stopped (``target["stopped"]``). The trace becomes a
bundle on the same path as ``kernelscope open`` (ingest.build through capture.collect).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelscope.bundle import provenance
from kernelscope.bundle.io import (
    BundleError,
    check_out,
    commit_staging_dir,
    fresh_path,
    is_bundle_folder,
    make_staging_dir,
    save_manifest,
)
from kernelscope.bundle.model import Bundle
from kernelscope.capture import torch_hooks
from kernelscope.capture.collect import write_bundle_from_work
from kernelscope.capture.job import WORK_PREFIX, make_work_dir, read_events
from kernelscope.capture.lifeline import (
    JOB_MARKER,
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
from kernelscope.ingest.tracelog import TraceLog, parse_trace_folder
from kernelscope.textsafe import one_line
from kernelscope.units import plural

RUN_SITE = Path(__file__).resolve().parent / "run_site"  # its sitecustomize loads the graph counter
HOOK_ENV = "KERNELSCOPE_RUN_HOOK"
NO_HOOK_GRACE_S = 2.0  # a program without the hook: how long after the Nth graph's code before it is stopped
NO_GRAPH = "no graph compiled"
# A line torch's logging wrote (TORCH_LOGS: each line of a message carries it): "V1202 00:43:28.421000 9718
# torch/_inductor/graph.py:2722] ...", "[rank0]:V1202 ...".
TORCH_LOG_LINE = re.compile(r"(\[rank\d+\]:)?[VIWEDC]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\] ")
# The last line of a program whose Python has no torch at all (not a broken torch: torch._C and the like).
NO_TORCH = re.compile(r"\bModuleNotFoundError: No module named 'torch'$")


class RunError(BundleError):
    """A command that cannot be run as asked (not found, a missing script); one line, nothing written."""


@dataclass
class RunResult:
    status: str  # "ok" or "failed" (the program failed, or compiled nothing)
    stopped: str  # why the program stopped: graphs, timeout, interrupted, cancelled, exited
    message: str  # one line: what happened
    outs: list[Path] = field(default_factory=list)  # one bundle per rank
    bundles: list[Bundle] = field(default_factory=list)
    rc: int | None = None  # the program's exit status when it ended by itself
    seconds: float = 0.0


def is_python(word: str) -> bool:
    name = Path(word).name
    return name.startswith("python") and all(c.isdigit() or c == "." for c in name[len("python"):])


def python_script(command: list[str]) -> tuple[str | None, str | None]:
    """(script, module) a ``python ...`` command runs: ``python train.py`` -> ("train.py", None),
    ``python -m pkg`` -> (None, "pkg"); (None, None) for ``-c`` or a command that is not python."""
    if not command or not is_python(command[0]):
        return None, None
    args = command[1:]
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-m":
            return None, args[i + 1] if i + 1 < len(args) else None
        if a.startswith("-m") and len(a) > 2:
            return None, a[2:]
        if a == "-c" or a.startswith("-c") or a == "-":
            return None, None
        if a in ("-W", "-X", "--check-hash-based-pycs"):
            i += 2
            continue
        if a.startswith("-"):
            i += 1
            continue
        return a, None
    return None, None


def check_command(command: list[str]) -> str | None:
    """RunError (one line) for a command that cannot start; returns the script a python command runs."""
    if not command:
        raise RunError("no command: put it after --, e.g. kernelscope run -- python train.py")
    exe = command[0]
    if os.sep in exe:
        if not Path(exe).is_file():
            raise RunError(f"{exe}: no such program")
        if not os.access(exe, os.X_OK):
            raise RunError(f"{exe}: not executable (chmod +x it, or run it with its interpreter)")
    elif shutil.which(exe) is None:
        raise RunError(f"{exe}: command not found (is it on PATH?)")
    script, _module = python_script(command)
    if script is not None and not Path(script).is_file():
        raise RunError(f"{script}: no such script (the command runs {shlex.join(command)[:200]})")
    return str(Path(script).resolve()) if script else None


def run_environment(work: Path, mode: str, event_fd: int, graphs: int | None, marker: str = "") -> dict[str, str]:
    """The program's environment: the caller's, with the private trace, caches, logs and temp
    folder a capture child sets for itself, the hook's settings, and the job's marker (what the
    program starts inherits it: the sweep after it ends finds them by it)."""
    env = dict(os.environ)
    if marker:
        env[JOB_MARKER] = marker
    for sub in ("trace", "triton", "inductor", "tmp"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    env.update({
        "TORCH_TRACE": str(work / "trace"),
        "TRITON_CACHE_DIR": str(work / "triton"),
        "TORCHINDUCTOR_CACHE_DIR": str(work / "inductor"),
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "0",
        "TORCHINDUCTOR_AUTOGRAD_CACHE": "0",
        "TORCH_LOGS": torch_hooks.torch_logs(mode),
        "INDUCTOR_PROVENANCE": "1",
        "TMPDIR": str(work / "tmp"), "TEMP": str(work / "tmp"), "TMP": str(work / "tmp"),
        "PYTHONUNBUFFERED": "1",  # the program's prints reach logs/ before a stop
    })
    env.pop("TORCH_LOGS_FORMAT", None)
    env["PYTHONPATH"] = os.pathsep.join([str(RUN_SITE)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env[HOOK_ENV] = json.dumps({"event_fd": event_fd, "event_ino": os.fstat(event_fd).st_ino, "graphs": graphs,
                                "trace_logger": torch_hooks.TRACE_LOGGER,
                                "record_key": torch_hooks.OUTPUT_CODE_RECORD})
    return env


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
        self.needle = f'"{torch_hooks.OUTPUT_CODE_RECORD}"'.encode()

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
                1 for line in chunk[:cut].split(b"\n") if not line.startswith(b"\t") and self.needle in line)
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
            return self._collect(work, script, rc, time.time() - t0)
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

    def _trace_elsewhere(self, work: Path) -> str:
        """Why the program's graphs are not in this run's trace though the hook saw them compile ('' when
        it saw none): the program set TORCH_TRACE (or torch's trace logging) itself."""
        seen = max((e.get("graphs", 0) for e in self.events if e.get("phase") == "compile" and "pid" in e),
                   default=0)
        if not seen:
            return ""
        env = next((e for e in self.events if e.get("phase") == "environment"), {})
        ours = str(work / "trace")
        where = next((d for d in [env.get("torch_trace"), *(env.get("trace_dirs") or [])]
                      if isinstance(d, str) and d and os.path.abspath(d) != ours), "")
        said = f" (to {one_line(where, 200)})" if where else ""
        return (f"the program compiled {plural(seen, 'graph')}, but its trace went elsewhere{said}: it sets "
                "TORCH_TRACE or torch's trace logging itself; leave that to kernelscope run")

    def _hooked(self) -> bool:
        return any(e.get("phase") == "compile" and "pid" in e for e in self.events)

    # -- the bundles --------------------------------------------------------------------------------------
    def _collect(self, work: Path, script: str | None, rc: int | None, seconds: float) -> RunResult:
        stopped = self._stop_reason or "exited"
        graphs_seen = max((e.get("graphs", 0) for e in self.events if e.get("phase") in ("compile", "stopped")),
                          default=0)
        why = {
            "graphs": f"stopped after {plural(graphs_seen, 'graph')} compiled and their first calls returned "
                      f"(--graphs {self.graphs})",
            "graphs-trace": f"stopped {NO_HOOK_GRACE_S:g} s after the trace held {plural(self.graphs or 0, 'graph')} "
                            f"(--graphs {self.graphs}; the program is not Python, its calls were not watched)",
            "timeout": f"stopped after {self.timeout:g} s (--timeout)" if self.timeout else "stopped (--timeout)",
            "interrupted": "stopped by Ctrl-C",
            "cancelled": "stopped: cancelled",
            "signal:SIGTERM": "stopped: kernelscope received SIGTERM",
            "signal:SIGHUP": "stopped: kernelscope received SIGHUP (its terminal closed)",
        }.get(stopped, f"stopped: kernelscope received {stopped[7:]}" if stopped.startswith("signal:") else "")
        failed = ""
        if stopped == "exited":
            why = f"the program exited with status {rc}" if rc is not None and rc >= 0 else \
                f"the program was killed by {_signal_name(-(rc or 0))}"
            if rc:
                last = _last_line(work / "stderr.txt")
                failed = why + (f": {last}" if last else "") + " (the traceback is in the bundle's logs/stderr.txt)"
        by_rank = _traces_by_rank(work / "trace")
        if failed and not graphs_seen and not by_rank and NO_TORCH.search(_last_line(work / "stderr.txt")):
            # Nothing to explore, and a bundle of it would only make the retry need --force.
            raise RunError(no_torch_line(self.command, self.cwd))
        if self.rank is not None and by_rank and self.rank not in by_rank:
            known = ", ".join(str(r) for r in sorted(k for k in by_rank if k is not None)) or "none"
            raise RunError(f"no trace of rank {self.rank}; ranks found: {known}")
        if self.rank is not None:
            by_rank = {self.rank: by_rank[self.rank]}
        env = next((e.get("environment") for e in self.events if e.get("phase") == "environment"), None) or {}
        if len(by_rank) > 1:
            self.out.mkdir(parents=True, exist_ok=True)
            targets = [(r, self.out / f"rank{r}") for r in sorted(by_rank, key=lambda r: -1 if r is None else r)]
        else:
            targets = [(next(iter(by_rank), None), self.out)]
        result = RunResult("ok", stopped, why, rc=rc, seconds=seconds)
        moved: list[str] = []
        for rank, out in targets:
            bundle = self._bundle(work, out, script, by_rank.get(rank, []), rank, sorted(
                r for r in by_rank if r is not None), env, stopped, why, failed, rc, seconds)
            if Path(bundle.root) != out:  # the program made OUT itself: the bundle went beside it
                moved.append(f"{out} appeared while the program ran (the program made it?), so the bundle went "
                             f"to {bundle.root}")
            result.outs.append(Path(bundle.root))
            result.bundles.append(bundle)
        if any(b.status != "ok" for b in result.bundles):
            result.status = "failed"
            result.message = result.bundles[0].error
        result.message = "; ".join([result.message, *moved])
        return result

    def _bundle(self, work: Path, out: Path, script: str | None, traces: list[TraceLog], rank: int | None,
                ranks: list[int], env: dict, stopped: str, why: str, failed: str, rc: int | None,
                seconds: float) -> Bundle:
        target = {"spec": shlex.join(self.command), "kind": "command", "origin": "run", "command": self.command,
                  "cwd": self.cwd, "file": script or "", "name": "",
                  "stopped": {"reason": stopped, "message": why, "exit_status": rc, "seconds": round(seconds, 2),
                              "graphs_asked": self.graphs, "timeout": self.timeout}}
        if rank is not None:
            target["rank"] = rank
        bundle = Bundle(target=target, options={"mode": self.mode, "device": env.get("device")},
                        environment={**env, "source": "kernelscope run", "ranks": ranks})
        bundle.timings = {"run": round(seconds, 3)}
        staging = make_staging_dir(out)
        try:
            write_bundle_from_work(work, staging, bundle, user_file=script or "", traces=traces)
            elsewhere = self._trace_elsewhere(work)
            if not bundle.graphs and elsewhere:
                bundle.status, bundle.error_kind = "failed", "no_graph"
                bundle.error = f"{NO_GRAPH} in kernelscope's trace: {elsewhere}"
            elif not bundle.graphs:
                bundle.status, bundle.error_kind = "failed", "no_graph"
                hint = (" before the program compiled its first graph" if stopped in ("cancelled", "interrupted")
                        or stopped.startswith("signal:")
                        else "; does the program call torch.compile, and does it reach the compiled code?")
                bundle.error = f"{NO_GRAPH}: {why}{hint}"
                if failed:
                    bundle.error = f"{NO_GRAPH}: {failed}"
            elif failed:
                bundle.status, bundle.error, bundle.error_kind = "failed", failed, "program"
            bundle.notes.insert(0, why[:1].upper() + why[1:])
            if len(ranks) > 1:
                bundle.notes.append(f"rank {rank} of ranks {', '.join(map(str, ranks))} (one bundle per rank)")
            if env.get("device") != "cuda":
                bundle.notes.append("Triton stages absent unless the program compiled for a CUDA device")
            if (out.exists() or out.is_symlink()) and not (self.replace and is_bundle_folder(out)):
                # Free at the start (checked): the program made it while it ran. Its run is kept beside it.
                taken, out = out, fresh_path(out.parent, out.name)
                bundle.notes.insert(0, f"{taken} appeared while the program ran (the program made it?): "
                                       f"this bundle went to {out}")
            save_manifest(bundle, staging)
            commit_staging_dir(staging, out, replace=self.replace)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        bundle.root = str(out)
        provenance.remember(bundle)  # this machine wrote its code: a bench of it needs no --run-bundle-code
        return bundle


def _has_torch(python: str) -> bool:
    """Whether ``python`` finds torch, asked in a child of it (this process never imports torch)."""
    try:
        asked = "import importlib.util, sys; sys.exit(not importlib.util.find_spec('torch'))"
        return subprocess.run([python, "-c", asked], stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def no_torch_line(command: list[str], cwd: str) -> str:
    """One line for a program whose Python cannot import torch: which Python that is, and what to run
    instead: the command with the Python kernelscope runs under where that one has torch (a fresh clone's
    torch is in its .venv, the shell's python3 has none), or that venv activated."""
    python = command[0] if is_python(command[0]) else ""
    found = shutil.which(python) if python and os.sep not in python else None
    who = f"{python} ({found})" if found else python or "the program's Python"
    ours = sys.executable
    if not ours or (python and Path(found or python).absolute() == Path(ours).absolute()) or not _has_torch(ours):
        return (f"{who} cannot import torch (No module named 'torch'): install torch for it, or run the program "
                "with a Python that has torch; nothing was written")

    def typed(path: Path) -> str:  # as the user would type it where they ran this: .venv/bin/python
        if not path.is_relative_to(cwd):
            return str(path)
        rel = os.path.relpath(path, cwd)
        return rel if os.sep in rel else f".{os.sep}{rel}"  # a bare name would be looked up on PATH

    ways = [f"`kernelscope run -- {shlex.join([typed(Path(ours)), *command[1:]])}`"] if python else []
    activate = Path(sys.prefix) / "bin" / "activate"
    if sys.prefix != sys.base_prefix and activate.is_file():
        ways.append(f"`source {typed(activate)}` first")
    if not ways:
        ways.append(f"put {typed(Path(ours).parent)} first on PATH")
    return (f"{who} cannot import torch (No module named 'torch'); {typed(Path(ours))}, the Python kernelscope "
            f"runs under, has it: {' or '.join(ways)}; nothing was written")


def _traces_by_rank(folder: Path) -> dict[int | None, list[TraceLog]]:
    """The trace logs by the rank that wrote them (None: a job without ranks)."""
    ranks: dict[int | None, list[TraceLog]] = {}
    for _path, log in parse_trace_folder(folder):
        rank = log.rank if log.rank is not None else next((r.rank for r in log.records if r.rank is not None), None)
        ranks.setdefault(rank, []).append(log)
    if len(ranks) > 1 and None in ranks:  # the launcher's own log (no rank) holds no graphs of a rank
        ranks.pop(None)
    return ranks


def tail_lines(path: Path, lines: int = 5, limit: int = 200, skip: re.Pattern | None = None,
               window: int = 8192) -> list[str]:
    """The last ``lines`` non-blank lines of a growing text file (read from its last ``window`` bytes),
    each cut to ``limit``; lines that ``skip`` matches are left out."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - window))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return []
    # The program's own bytes: what reaches the run screen or a message line has no escape sequences.
    got = [one_line(ln) for ln in text.splitlines() if ln.strip() and not (skip and skip.match(ln))]
    got = [ln for ln in got if ln]
    return [ln[:limit] for ln in got[-lines:]] if lines > 0 else []


def _last_line(path: Path, limit: int = 300) -> str:
    """The program's own last stderr line (a traceback's end), torch's log lines left out."""
    last = tail_lines(path, 1, limit=limit, skip=TORCH_LOG_LINE, window=16384)
    return last[0].strip() if last else ""


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"
