"""The capture child: imports torch, compiles the user's function, writes a bundle.

Runs as ``python -m kernelscope.capture.child REQUEST.json``. Before torch is imported it points
TORCH_TRACE, TRITON_CACHE_DIR and Inductor's cache at private folders of the work directory, so
a warm cache never hides code. Progress goes to the file descriptor named in the request, one JSON
object a line; the user's own stdout/stderr (and TORCH_LOGS output) go to files in the work folder.
Exit status: 0 captured, 3 captured but failed (a bundle marked failed was written), 4 crashed,
5 failed before compiling (no bundle).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import traceback
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_FAILED = 3
EXIT_INTERNAL = 4
EXIT_NO_BUNDLE = 5  # failed before compiling anything (bad target or inputs, no GPU)


class Events:
    def __init__(self, fd: int | None):
        self._fh = os.fdopen(fd, "w", buffering=1) if fd is not None else None

    def emit(self, phase: str, message: str = "", **counts: Any) -> None:
        if self._fh is None:
            return
        event = {"phase": phase, "message": message, "time": round(time.time(), 3), **counts}
        try:
            self._fh.write(json.dumps(event) + "\n")
            self._fh.flush()
        except OSError:
            pass


def _setup_environment(work: Path, request: dict) -> None:
    for sub in ("trace", "triton", "inductor"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    os.environ["TORCH_TRACE"] = str(work / "trace")
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(work / "inductor")
    os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"
    os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
    logs = "output_code,graph_breaks,recompiles"
    if (request.get("options") or {}).get("mode") in ("reduce-overhead", "max-autotune"):
        # Whether each graph's CUDA graph was recorded or skipped (and why): Inductor's cudagraphs and
        # perf_hints logs, and cudagraph_trees' INFO "Recording cudagraph tree for ..." lines.
        logs += ",cudagraphs,perf_hints,torch._inductor.cudagraph_trees"
    os.environ["TORCH_LOGS"] = logs
    os.environ.pop("TORCH_LOGS_FORMAT", None)  # keep torch's own glog format: what a user sees
    os.environ["INDUCTOR_PROVENANCE"] = "1"  # provenance tracking (torch >= 2.9 reads this)


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
    work = Path(request["work"])
    staging = Path(request["staging"])
    events = Events(request.get("event_fd"))
    _setup_environment(work, request)
    redirect_output(work)
    from kernelscope.capture import session  # imports torch; after the environment is set

    try:
        return session.run(request, work, staging, events)
    except BaseException as exc:  # the last guard: report, never hang the parent
        events.emit("error", f"internal error: {exc.__class__.__name__}: {exc}", kind="internal",
                    traceback=traceback.format_exc())
        return EXIT_INTERNAL


def environment_facts() -> dict[str, Any]:
    return {"python": platform.python_version(), "platform": platform.platform(), "executable": sys.executable}


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
