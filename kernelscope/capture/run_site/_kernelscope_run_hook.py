"""The graph counter inside a program that ``kernelscope run`` started (installed by the
``sitecustomize`` next to it). Standard library only: it runs in the user's interpreter, which may
not be the one kernelscope runs on, and it imports nothing of torch before the program does.

It listens to torch's structured trace logger (the one TORCH_TRACE writes through; its name and the
record that carries a graph's output code come from the parent, capture/torch_hooks.py, in the
settings) and tells the parent, over the event pipe the parent opened, each time Inductor produced
a graph's output code. With ``--graphs N``: once the Nth graph's code exists, it watches the frame
that called into the compiled code (the innermost frame of the calling thread outside torch, the
standard library and this hook) and, as soon as that frame's instruction moves on (the call
returned), says "stopped" and stops this process (SIGSTOP); the parent then kills the whole process
group. Only a process that holds the parent's event pipe (the command itself, not the workers a
launcher such as torchrun spawns with fresh descriptors) does anything.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import stat
import sys
import sysconfig
import threading
import time

_POLL_S = 0.002  # how often the armed watcher looks at the calling frame


def install(settings_text: str) -> None:
    settings = json.loads(settings_text)
    fd = int(settings["event_fd"])
    try:
        st = os.fstat(fd)
    except OSError:
        return  # a process that did not inherit the pipe (a torchrun worker, a compile worker)
    if not stat.S_ISFIFO(st.st_mode) or st.st_ino != settings.get("event_ino"):
        return  # the descriptor number is reused by something else in this process
    events = os.fdopen(fd, "w", buffering=1, closefd=False)
    counter = _GraphCounter(events, settings.get("graphs"), settings["record_key"], settings["trace_logger"],
                            settings.get("aoti_record", ""))
    logging.getLogger(settings["trace_logger"]).addHandler(counter)


def _skipped_dirs() -> tuple[str, ...]:
    """Folders whose frames are not the caller of a compiled graph: torch's and this hook's (the
    standard library's too: logging, threading, contextlib sit between)."""
    dirs = [os.path.dirname(os.path.abspath(__file__))]
    for key in ("stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.append(os.path.abspath(path))
    torch = sys.modules.get("torch")
    if torch is not None and getattr(torch, "__file__", None):
        dirs.append(os.path.dirname(os.path.abspath(torch.__file__)))
    return tuple(d + os.sep for d in dirs)


class _GraphCounter(logging.Handler):
    def __init__(self, events, graphs_wanted: int | None, record_key: str, trace_logger: str, aoti_record: str = ""):
        super().__init__(logging.DEBUG)
        self.trace_logger = trace_logger
        self.events = events
        self.wanted = graphs_wanted
        self.record_key = record_key
        self.aoti_record = aoti_record  # AOTInductor's C++ model (a graph_dump of this name) counts as a graph
        self.graphs = 0
        self.armed = False
        self.sent_environment = False

    def send(self, phase: str, message: str, **extra) -> None:
        try:
            self.events.write(json.dumps({"phase": phase, "message": message, "time": round(time.time(), 3),
                                          "pid": os.getpid(), **extra}) + "\n")
            self.events.flush()
        except (OSError, ValueError):
            pass

    def emit(self, record: logging.LogRecord) -> None:
        try:
            metadata = getattr(record, "metadata", None)
            if not isinstance(metadata, dict):
                return
            dump = metadata.get("graph_dump")
            if self.record_key not in metadata and not (isinstance(dump, dict) and self.aoti_record
                                                        and dump.get("name") == self.aoti_record):
                return
            self.graphs += 1
            if not self.sent_environment:
                self.sent_environment = True
                # Where torch writes the trace, as the program left it: a program that sets TORCH_TRACE
                # itself compiles and is counted here, but its trace never reaches the parent's folder.
                dirs = [getattr(h, "root_dir", None) for h in logging.getLogger(self.trace_logger).handlers]
                self.send("environment", "torch imported", environment=_environment(),
                          torch_trace=os.environ.get("TORCH_TRACE"), trace_dirs=[d for d in dirs if d])
            self.send("compile", f"graph {self.graphs} generated", graphs=self.graphs)
            if self.wanted and self.graphs >= self.wanted and not self.armed:
                self.armed = True
                self._arm()
        except Exception:  # never disturb the program
            pass

    def _arm(self) -> None:
        frame = _calling_frame()
        if frame is None:  # nothing to wait for: stop at once
            self._stop("no Python frame called the compiled code")
            return
        lasti = frame.f_lasti
        threading.Thread(target=self._watch, args=(frame, lasti), name="kernelscope-run-watch", daemon=True).start()

    def _watch(self, frame, lasti: int) -> None:
        while frame.f_lasti == lasti:
            time.sleep(_POLL_S)
        self._stop(f"{frame.f_code.co_filename}:{frame.f_lineno}")

    def _stop(self, where: str) -> None:
        for h in logging.getLogger(self.trace_logger).handlers:
            try:
                h.flush()
            except Exception:
                pass
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        self.send("stopped", f"{self.graphs} graphs compiled and their first calls returned", graphs=self.graphs,
                  where=where)
        os.kill(os.getpid(), signal.SIGSTOP)  # frozen here until the parent kills the group


def _calling_frame():
    """The innermost frame of this thread (else of the main thread, when this is an autograd
    worker with no Python caller) outside torch, the standard library and this hook."""
    skipped = _skipped_dirs()
    frames = sys._current_frames()
    for tid in (threading.get_ident(), threading.main_thread().ident):
        frame = frames.get(tid)
        while frame is not None:
            file = os.path.abspath(frame.f_code.co_filename)
            if not file.startswith(skipped) and not frame.f_code.co_filename.startswith("<"):
                return frame
            frame = frame.f_back
    return None


def _environment() -> dict:
    """Versions and device, read once torch is imported (it is, when a graph has compiled)."""
    env = {"python": sys.version.split()[0], "executable": sys.executable}
    torch = sys.modules.get("torch")
    if torch is not None:
        env["torch"] = getattr(torch, "__version__", None)
        triton = sys.modules.get("triton")
        env["triton"] = getattr(triton, "__version__", None) if triton is not None else None
        try:
            cuda = torch.cuda.is_initialized()
        except Exception:
            cuda = False
        env["device"] = "cuda" if cuda else "cpu"
        if cuda:
            try:
                props = torch.cuda.get_device_properties(torch.cuda.current_device())
                env["device_name"] = props.name
                env["compute_capability"] = f"{props.major}.{props.minor}"
                env["sm_count"] = props.multi_processor_count
            except Exception:
                pass
        else:
            env["cpu_count"] = os.cpu_count()
    return env
