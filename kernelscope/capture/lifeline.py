"""The parent's side of "a child never outlives its parent": the children running now, killed by
SIGTERM/SIGHUP handlers before this process ends. Light (no kernelscope imports), so the UI can
install the handlers at start. The child's side is ``capture.child.tie_to_parent``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

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


received: list[int] = []  # the SIGTERM/SIGHUP received, for end_by_signal and for a job to record
# Called with the signal instead of raising Terminated, while registered (unwind_with): an exception raised
# out of a running event loop (Textual's) leaves its driver half torn down.
_unwinders: list = []


def unwind_with(callback) -> None:
    """While ``callback`` is registered (until ``stop_unwinding``), a SIGTERM/SIGHUP calls ``callback(signum)``
    in the main thread instead of raising Terminated; the children are killed and the watchdog armed as ever."""
    _unwinders.append(callback)


def stop_unwinding(callback) -> None:
    if callback in _unwinders:
        _unwinders.remove(callback)
WATCHDOG_S = 10.0  # after a SIGTERM/SIGHUP, the cleanup's limit before the process ends by the signal


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


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
            if not callable(previous) and not received:
                received.append(signum)  # first: a job whose child this kills records why it ended
            kill_live_children()
            if callable(previous):
                previous(signum, frame)
                return
            if received[0] != signum:  # a second signal while cleaning up: end now
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)
                return
            # Unwind like Ctrl-C so staging and work folders go now, not at the next start; a
            # watchdog ends the process by the signal should something swallow the exception. The
            # default action is set here, in the main thread (signal.signal() works nowhere else):
            # the watchdog thread only sends the signal again, and a second one ends the process.
            signal.signal(signum, signal.SIG_DFL)
            watchdog = threading.Timer(WATCHDOG_S, os.kill, (os.getpid(), signum))
            watchdog.daemon = True
            watchdog.start()
            if _unwinders:  # an event loop owns the main thread (the UI): it is asked to end, not unwound
                for unwind in list(_unwinders):
                    try:
                        unwind(signum)
                    except Exception:
                        pass
                return
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
    found = []
    for pid in _other_pids():
        try:
            if _job_marker(pid) != marker.encode():
                continue
            with open(f"/proc/{pid}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            found.append(pid)
    return found


def _other_pids(exclude: set[int] | None = None) -> list[int]:
    """The ids of the processes in /proc but this one (and ``exclude``); [] where there is no /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    skip = {os.getpid(), *(exclude or ())}
    return [pid for pid in (int(name) for name in entries if name.isdigit()) if pid not in skip]


def _job_marker(pid: int) -> bytes | None:
    """The ``KERNELSCOPE_JOB`` a process's environment holds, or None (OSError: it is gone, or not ours to read)."""
    prefix = f"{JOB_MARKER}=".encode()
    with open(f"/proc/{pid}/environ", "rb") as fh:
        return next((v[len(prefix):] for v in fh.read().split(b"\0") if v.startswith(prefix)), None)


def kill_job_leftovers(proc: subprocess.Popen, marker: str, since: int | None = None) -> None:
    """After a child ended: kill what it (the user's code) started and left running, in its process
    group and, by the environment marker, anywhere else; with ``since`` (a start time in clock ticks,
    ``start_ticks()``) also this process's adopted orphans started since then (``become_subreaper``):
    a daemon that left the group and cleared its environment too."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    quiet = 0
    for _ in range(50):  # a daemon may fork again while being killed; an orphan is adopted as its parent dies
        pids = set(processes_marked(marker))
        if since is not None:
            pids |= set(adopted_orphans(since, exclude={proc.pid}))
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if since is not None:
            reap_adopted(since, exclude={proc.pid})
        quiet = 0 if pids else quiet + 1
        if quiet >= (2 if since is not None else 1):
            return
        time.sleep(0.01)


PR_SET_CHILD_SUBREAPER = 36


def become_subreaper(on: bool = True) -> bool:
    """Make this process the reaper of its descendants' orphans (Linux prctl PR_SET_CHILD_SUBREAPER): a
    daemon the program double-forks, or one that calls setsid, is then this process's child, not
    init's, and ``adopted_orphans`` finds it whatever its environment. False where unavailable."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def start_ticks(pid: int | None = None) -> int:
    """A process's start time since boot in clock ticks (/proc/PID/stat field 22; this process by default)."""
    return _stat(pid or os.getpid())[2]


def _stat(pid: int) -> tuple[bytes, int, int]:
    """(state, parent pid, start ticks) of a process, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat", "rb") as fh:
        fields = fh.read().rsplit(b")", 1)[1].split()
    return fields[0], int(fields[1]), int(fields[19])


def adopted_orphans(since: int, exclude: set[int] = frozenset()) -> list[int]:
    """Live children of this process started at ``since`` or later that it did not start itself (none of
    the children it tracks): orphans of a job's program, adopted as subreaper. Linux /proc; [] elsewhere."""
    return [pid for pid, state in _children_since(since, exclude) if state not in (b"Z", b"X")]


def reap_adopted(since: int, exclude: set[int] = frozenset()) -> None:
    """Collect the exit status of adopted orphans that ended (zombies), so none is left in the table."""
    for pid, state in _children_since(since, exclude):
        if state == b"Z":
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _children_since(since: int, exclude: set[int]) -> list[tuple[int, bytes]]:
    me = os.getpid()
    with _live_lock:
        mine = {p.pid for p in _live} | set(exclude)
    found = []
    for pid in _other_pids(mine):
        try:
            state, ppid, started = _stat(pid)
        except (OSError, IndexError, ValueError):
            continue
        if ppid == me and started >= since:
            found.append((pid, state))
    return found


_PID_MAX = 1 << 22  # Linux's largest pid_max


def sweep_orphaned_jobs() -> None:
    """Kill what a job of a kernelscope process that died (kill -9) left running: processes whose marker
    (``PID-HEX``) names a process that is gone. Their program died with it (parent-death signal); this
    is for what the program started."""
    for pid in _other_pids():
        try:
            marker = _job_marker(pid)
            if marker is None:
                continue
            owner = int(marker.split(b"-", 1)[0])
        except (OSError, ValueError):
            continue
        if not 0 < owner <= _PID_MAX:
            continue  # no process's id: not a marker kernelscope wrote (os.kill would overflow on it)
        if owner != os.getpid() and not _alive(owner):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return _stat(pid)[0] not in (b"Z", b"X")
    except (OSError, IndexError, ValueError):
        return False
