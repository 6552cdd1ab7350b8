"""What went wrong in the capture child, as one line a user can act on: CaptureFailure, and the
classification of an exception a target, its import or torch.compile raised. Imports torch."""

from __future__ import annotations

import linecache
import re
import traceback
from pathlib import Path

import torch

from kernelscope.bundle.model import GraphBreak
from kernelscope.capture import torch_hooks


class CaptureFailure(Exception):
    def __init__(self, kind: str, message: str, graph_break: GraphBreak | None = None):
        from kernelscope.textsafe import one_line

        message = one_line(message, 1000)  # the user's exception text reaches the terminal: no escapes
        super().__init__(message)
        self.kind = kind
        self.message = message
        # The break that failed a --fullgraph compile: Dynamo raises it instead of logging it, so the
        # trace has no graph_break record and the bundle gets it from here.
        self.graph_break = graph_break


def user_line(exc: BaseException, path: str) -> int | None:
    """The innermost line in the user's file, from the traceback or, for Dynamo's errors (raised
    outside the user's frames), from the "from user code" text."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == path]
    if frames:
        return frames[-1].lineno
    lines = re.findall(r'File "([^"]+)", line (\d+)', str(exc))
    mine = [int(n) for f, n in lines if f == path]
    return mine[-1] if mine else None


def user_frame(exc: BaseException, path: str) -> str:
    """" (at file.py:LINE)" for the innermost frame in the user's file (see user_line)."""
    line = user_line(exc, path)
    return f" (at {Path(path).name}:{line})" if line else ""


def classify(exc: BaseException, user_file: str, options: dict) -> CaptureFailure:
    """One line that says what went wrong, for the errors a user will make."""
    name = exc.__class__.__name__
    if isinstance(exc, SystemExit):
        return CaptureFailure("user", f"your function called sys.exit({exc.code!r}){user_frame(exc, user_file)}; "
                              "kernelscope needs it to return")
    if isinstance(exc, KeyboardInterrupt):
        return CaptureFailure("user", f"your function raised KeyboardInterrupt{user_frame(exc, user_file)}")
    text = str(exc).strip()
    first = text.split("\n")[0].strip() if text else name
    lowered = text.lower()
    if isinstance(exc, (torch.OutOfMemoryError, MemoryError)) or "out of memory" in lowered \
            or "can't allocate memory" in lowered or "cannot allocate memory" in lowered:
        return CaptureFailure("oom", f"out of memory on {options.get('device')}: {first[:200]}; try smaller --args shapes")
    chain = [exc]
    while len(chain) < 8:  # Dynamo's BackendCompilerFailed keeps the backend's error as inner_exception
        nxt = getattr(chain[-1], "inner_exception", None) or chain[-1].__cause__
        if not isinstance(nxt, BaseException) or nxt in chain:
            break
        chain.append(nxt)
    if torch_hooks.is_graph_break(exc) and options.get("fullgraph"):
        line = user_line(exc, user_file)
        gb = GraphBreak(reason=_graph_break_line(text), detail=text, file=user_file if line else "", line=line,
                        code=linecache.getline(user_file, line).strip() if line else "")
        return CaptureFailure("graph_break", f"graph break under --fullgraph: {gb.reason}"
                              f"{user_frame(exc, user_file)}; drop --fullgraph to let Dynamo split the graph", gb)
    if torch_hooks.from_inductor(exc):
        inner = chain[-1]
        lines = [x.strip() for x in str(inner).strip().split("\n") if x.strip()]
        if len(lines) > 1 and lines[0].endswith("raised:"):  # "backend='inductor' raised:" then the error
            lines = lines[1:]
        inner_text = lines[0] if lines else inner.__class__.__name__
        return CaptureFailure("compile", f"torch.compile failed in Inductor: {inner.__class__.__name__}: {inner_text[:300]}")
    if torch_hooks.from_dynamo(exc):
        return CaptureFailure("compile", f"torch.compile failed in Dynamo: {name}: {first[:300]}{user_frame(exc, user_file)}")
    if isinstance(exc, Warning):  # PYTHONWARNINGS=error / -W error turned a warning into an exception
        frames = traceback.extract_tb(exc.__traceback__)
        where = next((f.filename for f in reversed(frames) if f.filename != user_file), "")
        mine = bool(frames) and frames[-1].filename == user_file
        source = "your function" if mine else _package_of(where)
        return CaptureFailure("user", f"{source} raised {name} as an error because warnings are errors here "
                              f"(PYTHONWARNINGS or -W error): {first[:300]}{user_frame(exc, user_file)}; unset "
                              "PYTHONWARNINGS or narrow it (e.g. error::UserWarning:yourmodule)")
    if "CUDA error" in text or "cudaError" in text or name == "AcceleratorError":
        return CaptureFailure("cuda", f"CUDA error: {first[:300]}")
    return CaptureFailure("user", f"your function raised {name}: {first[:300]}{user_frame(exc, user_file)}")


def _graph_break_line(text: str) -> str:
    for line in text.split("\n"):
        line = line.strip()
        if line.startswith("Explanation:"):
            return line[len("Explanation:"):].strip()
    return text.split("\n")[0].strip()


def _package_of(filename: str) -> str:
    """'torch' for .../site-packages/torch/..., else the file's name: who raised a warning."""
    parts = Path(filename).parts if filename else ()
    for marker in ("site-packages", "dist-packages"):
        if marker in parts and parts.index(marker) + 1 < len(parts):
            return parts[parts.index(marker) + 1].removesuffix(".py")
    return Path(filename).name or "library code"
