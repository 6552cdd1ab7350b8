"""The command ``kernelscope run`` runs, apart from running it: whether it can start (RunError), the
script a python command runs, the environment it gets (the private trace, caches and temp folder, the
graph-counting hook in ``run_site/``), the last lines it wrote (torch's own log lines left out), and the
one line for a Python that cannot import torch. No process state, no torch.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from kernelscope.bundle.io import BundleError
from kernelscope.capture import torch_hooks
from kernelscope.capture.lifeline import JOB_MARKER
from kernelscope.textsafe import one_line

RUN_SITE = Path(__file__).resolve().parent / "run_site"  # its sitecustomize loads the graph counter
HOOK_ENV = "KERNELSCOPE_RUN_HOOK"
NO_HOOK_GRACE_S = 2.0  # a program without the hook: how long after the Nth graph's code before it is stopped
# A line torch's logging wrote (TORCH_LOGS: each line of a message carries it): "V1202 00:43:28.421000 9718
# torch/_inductor/graph.py:2722] ...", "[rank0]:V1202 ...".
TORCH_LOG_LINE = re.compile(r"(\[rank\d+\]:)?[VIWEDC]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\] ")


class RunError(BundleError):
    """A command that cannot be run as asked (not found, a missing script); one line, nothing written."""


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
                                "record_key": torch_hooks.OUTPUT_CODE_RECORD,
                                "aoti_record": torch_hooks.AOTI_CODE_RECORD})
    return env


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


def tail_lines(path: Path, lines: int = 5, limit: int = 200, skip: re.Pattern | None = None,
               window: int = 8192) -> list[str]:
    """The last ``lines`` non-blank lines of a growing text file (read from its last ``window`` bytes),
    each cut to ``limit``; lines that ``skip`` matches are left out."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            start = max(0, fh.tell() - window)
            fh.seek(start)
            data = fh.read()
    except OSError:
        return []
    if start:  # the window began inside a line: its tail is no line of its own, and no skip pattern matches it
        data = data[data.find(b"\n") + 1:] if b"\n" in data else b""
    text = data.decode("utf-8", "replace")
    # The program's own bytes: what reaches the run screen or a message line has no escape sequences.
    got = [one_line(ln) for ln in text.splitlines() if ln.strip() and not (skip and skip.match(ln))]
    got = [ln for ln in got if ln]
    return [ln[:limit] for ln in got[-lines:]] if lines > 0 else []


def last_line(path: Path, limit: int = 300) -> str:
    """The program's own last stderr line (a traceback's end), torch's log lines left out."""
    last = tail_lines(path, 1, limit=limit, skip=TORCH_LOG_LINE, window=16384)
    return last[0].strip() if last else ""
