"""The capture child: imports torch, compiles the user's function, writes a bundle.

Runs as ``python -m kernelscope.capture.child REQUEST.json``. Before torch is imported it points
TORCH_TRACE, TRITON_CACHE_DIR and Inductor's cache at private folders of the work directory, so
a warm cache never hides code. Progress goes to the file descriptor named in the request, one JSON
object a line; the user's own stdout/stderr (and TORCH_LOGS output) go to files in the work folder.
The request file holds a ``CaptureSpec`` (capture/spec.py: the exit codes and the event format
are there too).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
import traceback
from pathlib import Path

from kernelscope.capture import compile_cache, torch_hooks
from kernelscope.capture.spec import EXIT_FAILED, EXIT_INTERNAL, EXIT_NO_BUNDLE, EXIT_OK, CaptureSpec, Events, SpecError

# The contract's names, here for the bench child (and whoever imported them from here).
__all__ = ["EXIT_FAILED", "EXIT_INTERNAL", "EXIT_NO_BUNDLE", "EXIT_OK", "Events", "private_temp", "redirect_output",
           "tie_to_parent"]


def tie_to_parent(request: dict) -> None:
    """Die with the parent, however it ends (kill -9 included). On Linux the kernel sends SIGKILL
    when the parent exits (PR_SET_PDEATHSIG; getppid() afterwards closes the race with a parent that
    died first); everywhere, a thread watches the lifeline pipe the parent holds open and kills this
    process group (this child and its compile workers) when it reads EOF."""
    parent = request.get("parent_pid")
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if parent is not None and os.getppid() != parent and not _alive(parent):
        os._exit(EXIT_INTERNAL)  # the parent died before the signal was set (a wrapper in between is fine)
    fd = request.get("lifeline_fd")
    if fd is not None:
        threading.Thread(target=_watch_lifeline, args=(fd,), name="kernelscope-lifeline", daemon=True).start()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _watch_lifeline(fd: int) -> None:
    try:
        while os.read(fd, 1):
            pass
    except OSError:
        pass
    if os.getpgrp() == os.getpid():  # our own group (start_new_session): take the compile workers along
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def private_temp(work: Path) -> None:
    """Everything this child and its compilers put in the temp folder (gcc's files, Inductor's
    precompiled headers, which live under tempfile.gettempdir()) goes to WORK/tmp, removed with WORK."""
    tmp = work / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    for name in ("TMPDIR", "TEMP", "TMP"):
        os.environ[name] = str(tmp)
    tempfile.tempdir = str(tmp)
    compile_cache.share_precompiled_headers(tmp)  # but Inductor's precompiled header: built once per machine


def _setup_environment(work: Path, spec: CaptureSpec) -> None:
    for sub in ("trace", "triton", "inductor"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    private_temp(work)
    os.environ["TORCH_TRACE"] = str(work / "trace")
    # Triton's and Inductor's caches in fresh folders of WORK: every kernel is compiled (and logged) here;
    # Inductor's FX graph / AOTAutograd entries are written for the benches that follow
    # (capture/compile_cache.py; the runner keeps them when the capture succeeds).
    os.environ.update(compile_cache.env(work))
    os.environ["TORCH_LOGS"] = torch_hooks.torch_logs(spec.options.mode)
    os.environ.pop("TORCH_LOGS_FORMAT", None)  # keep torch's own glog format: what a user sees


def redirect_output(work: Path) -> None:
    """Send fd 1 and 2 (the user's prints, TORCH_LOGS, AUTOTUNE tables) to files."""
    for fd, name in ((1, "stdout.txt"), (2, "stderr.txt")):
        f = os.open(work / name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(f, fd)
        os.close(f)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    tie_to_parent(request)
    work = Path(request["work"])
    staging = Path(request["staging"])
    events = Events(request.get("event_fd"))
    try:
        spec = CaptureSpec.from_dict(request.get("spec"))
    except SpecError as exc:  # a request this kernelscope did not write
        events.emit("error", f"internal error: {exc}", kind="internal")
        return EXIT_INTERNAL
    _setup_environment(work, spec)
    redirect_output(work)
    from kernelscope.capture import session  # imports torch; after the environment is set

    try:
        return session.run(spec, work, staging, events, t_spawn=request.get("t_spawn"))
    except BaseException as exc:  # the last guard: report, never hang the parent
        events.emit("error", f"internal error: {exc.__class__.__name__}: {exc}", kind="internal",
                    traceback=traceback.format_exc())
        return EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
