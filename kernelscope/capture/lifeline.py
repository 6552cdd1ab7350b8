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


class Terminated(KeyboardInterrupt):
    """Raised in the main thread by the SIGTERM/SIGHUP handler, so the ``finally`` blocks that clean
    the staging and work folders run as they do for Ctrl-C; ``end_by_signal`` then ends the process
    by the signal received, as its sender expects."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


received: list[int] = []  # the SIGTERM/SIGHUP received, for end_by_signal


def end_by_signal() -> None:
    """When a SIGTERM/SIGHUP was received (and cleaned up after), end this process by it."""
    if received:
        signal.signal(received[0], signal.SIG_DFL)
        os.kill(os.getpid(), received[0])


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
                return
            if received:  # a second signal while cleaning up: end now
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)
                return
            received.append(signum)
            # Unwind like Ctrl-C so staging and work folders go now, not at the next start; a
            # watchdog ends the process by the signal should something swallow the exception.
            watchdog = threading.Timer(10, lambda: (signal.signal(signum, signal.SIG_DFL),
                                                    os.kill(os.getpid(), signum)))
            watchdog.daemon = True
            watchdog.start()
            raise Terminated(signum)

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


JOB_MARKER = "KERNELSCOPE_JOB"  # in every child's environment: what the user's code starts inherits it


def processes_marked(marker: str) -> list[int]:
    """Live processes whose environment holds ``KERNELSCOPE_JOB=marker``: a child's whole tree, also what
    left its process group and session (a double-forked daemon). Linux /proc; [] elsewhere."""
    needle = f"{JOB_MARKER}={marker}".encode()
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for name in entries:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                if needle not in fh.read().split(b"\0"):
                    continue
            with open(f"/proc/{name}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            found.append(int(name))
    return found


def kill_job_leftovers(proc: subprocess.Popen, marker: str) -> None:
    """After a child ended: kill what it (the user's code) started and left running, in its process
    group and, by the environment marker, anywhere else."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for _ in range(3):  # a daemon may fork again while being killed
        pids = processes_marked(marker)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
