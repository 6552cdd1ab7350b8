"""The process's surroundings, checked before a command trips on them: a deleted working folder, a
TMPDIR that Inductor's compiler line cannot quote, stdout closed or full. Each is one line naming the
real cause (exit 2) instead of an internal error far from it. No heavy imports."""

from __future__ import annotations

import errno
import os
import sys
import tempfile
from pathlib import Path

from kernelscope.safefile import why

# Inductor pastes TMPDIR-derived paths unquoted into a shell command line for g++ (checked against torch
# 2.11 and 2.13): any of these in the path breaks the compile with a message that never names TMPDIR.
_SHELL_BREAKING = set("'\"`$\\;&|<>\n")


def environment_problem(compiles: bool = True, needs_cwd: bool = True) -> str | None:
    """Why kernelscope cannot run here, in one line, or None. ``compiles``: the command may run
    torch.compile (TMPDIR matters then); ``needs_cwd``: it needs the current folder (a relative path,
    a child process started there), so a deleted one is refused up front."""
    if sys.stdout is None or sys.stderr is None:
        return "stdout or stderr is closed; run the command with its output going somewhere (e.g. >/dev/null)"
    try:
        os.getcwd()
    except OSError as exc:
        if needs_cwd:
            return (f"the current folder no longer exists ({why(exc)}); cd to a folder that does and run "
                    "the command again")
    tmp = os.environ.get("TMPDIR")
    if compiles and tmp and _SHELL_BREAKING & set(tmp):
        bad = "".join(sorted(_SHELL_BREAKING & set(tmp))).replace("\n", "\\n").replace("\t", "\\t")
        return (f"TMPDIR={tmp!r} holds {bad!r}, which breaks torch.compile's C++ compiler command line; "
                "set TMPDIR to a path without quotes, spaces or shell characters")
    if tmp and not os.path.isdir(tmp):
        return f"TMPDIR={tmp!r} is not a folder; set TMPDIR to an existing folder"
    if compiles:  # torch.compile writes its work (generated code, objects) under the temp folder
        from kernelscope.safefile import writable_folder

        problem = writable_folder(tmp or tempfile.gettempdir(), need=MIN_TEMP_FREE)
        if problem:
            return f"the temp folder (TMPDIR): {problem}; free some space or point TMPDIR elsewhere"
    return None


MIN_TEMP_FREE = 32 << 20  # a small CPU compile writes a few MB there; under this it would fail part way

_OUTPUT_ERRNOS = {errno.EPIPE, errno.EBADF, errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EIO}


def output_problem(exc: BaseException) -> str | None:
    """A one-line cause for an OSError from writing output (stdout closed or full, a full disk), else None."""
    if not isinstance(exc, OSError) or getattr(exc, "errno", None) not in _OUTPUT_ERRNOS:
        return None
    where = f" {exc.filename}" if getattr(exc, "filename", None) else " the output (stdout)"
    if exc.errno in (errno.EPIPE, errno.EBADF):
        return f"cannot write{where}: it is closed; run the command with its output going somewhere"
    return f"cannot write{where} ({why(exc)}); free some space or write elsewhere"


def flush_stdout() -> bool:
    """Flush stdout now, while a failure can still be said in one line; afterwards point it at
    /dev/null so the interpreter's own flush at exit prints no 'Exception ignored' traceback.
    False when the output could not be written."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
        return True
    except (OSError, ValueError) as exc:
        try:
            problem = output_problem(exc) or f"cannot write the output ({why(exc)})"
            print(f"kernelscope: {problem}", file=sys.stderr)
        except (OSError, ValueError):
            pass
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return False



def cache_dir() -> Path:
    """The one folder every command caches in: ``KERNELSCOPE_CACHE`` when set, else
    ``$XDG_CACHE_HOME/kernelscope`` or ``~/.cache/kernelscope``. ``KERNELSCOPE_CACHE_DIR``, the name bench
    once read, is still honoured when ``KERNELSCOPE_CACHE`` is not set."""
    env = os.environ.get("KERNELSCOPE_CACHE") or os.environ.get("KERNELSCOPE_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "kernelscope"
