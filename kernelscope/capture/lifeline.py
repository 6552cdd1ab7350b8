"""The parent's side of "a child never outlives its parent": the children running now, killed by
SIGTERM/SIGHUP handlers before this process ends. Light (no kernelscope imports), so the UI can
install the handlers at start. The child's side is ``capture.child.tie_to_parent``."""

from __future__ import annotations

import os
import signal
import subprocess
import threading

# Children running now, for the SIGTERM/SIGHUP handlers: a dying parent takes them along.
_live: set[subprocess.Popen] = set()
_live_lock = threading.Lock()


def track(proc: subprocess.Popen) -> None:
    with _live_lock:
        _live.add(proc)


def untrack(proc: subprocess.Popen) -> None:
    with _live_lock:
        _live.discard(proc)


def kill_live_children() -> None:
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        if proc.poll() is None:
            kill_group(proc)


def install_parent_signal_handlers() -> None:
    """Make SIGTERM and SIGHUP kill this process's capture/bench children first, then do what they
    did before (by default: end this process). Only the main thread may install handlers; elsewhere
    (and on a kill -9) the child's parent-death signal and lifeline pipe end it."""
    if threading.current_thread() is not threading.main_thread():
        return
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        previous = signal.getsignal(sig)
        if previous == signal.SIG_IGN or getattr(previous, "kernelscope", False):
            continue

        def handler(signum, frame, previous=previous):
            kill_live_children()
            if callable(previous):
                previous(signum, frame)
            else:
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)

        handler.kernelscope = True  # type: ignore[attr-defined]
        signal.signal(sig, handler)


def kill_group(proc: subprocess.Popen) -> None:
    """Kill the child and everything it started (Inductor's compile workers)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass
