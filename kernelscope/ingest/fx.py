"""Reading printed FX graphs: node names and the user source line each node came from."""

from __future__ import annotations

import re
from dataclasses import dataclass

from kernelscope.bundle.model import UserLine

_FILE_COMMENT = re.compile(r"^\s*# File: (.+?):(\d+) in ([^,]+), code: (.*)$")
_NODE_LINE = re.compile(r"^\s*(\w+)(?::\s*\"[^\"]*\")?\s*=\s*(.*)$")
_FRAGMENT_NODE = re.compile(r"#\s+%(\w+) : .*?= call_function\[target=([\w.]+)\]")
# A frame's code is the indented line under it, when there is one: a frame printed without its source
# (a file not on disk) is followed by the next frame or the exception, neither of which is its code.
_STACK_FRAME = re.compile(r'File "([^"]+)", line (\d+), in ([^\n]+)(?:\n(?![ \t]*File ")[ \t]+([^\n]*))?')


@dataclass
class FxNode:
    """A node of an FX graph as printed: its name, line, target and the user source it came from."""

    name: str
    line: int  # 1-based line in the graph text
    target: str  # the right-hand side, e.g. torch.ops.aten.add.Tensor(arg0_1, arg1_1)
    user: UserLine | None


def fx_nodes(graph_text: str) -> list[FxNode]:
    """Every assigned node of a printed FX graph, with the ``# File:`` line above it."""
    nodes: list[FxNode] = []
    current: UserLine | None = None
    in_forward = False
    for lineno, line in enumerate(graph_text.split("\n"), start=1):
        stripped = line.strip()
        if stripped.startswith("def forward"):
            in_forward = True
            current = None
            continue
        if not in_forward:
            continue
        m = _FILE_COMMENT.match(line)
        if m:
            current = UserLine(file=m.group(1), line=int(m.group(2)), function=m.group(3), code=m.group(4).strip())
            continue
        if not stripped or stripped.startswith("#") or stripped.startswith("return"):
            if stripped.startswith("return"):
                current = None
            continue
        m = _NODE_LINE.match(line)
        if m and not stripped.startswith(("class ", "def ")):
            nodes.append(FxNode(name=m.group(1), line=lineno, target=m.group(2).split(";")[0].strip(), user=current))
    return nodes


def fragment_nodes(comment_lines: list[str]) -> list[tuple[str, str]]:
    """(node, ATen target) of the ``Graph fragment`` comment above a kernel definition."""
    out = []
    for c in comment_lines:
        m = _FRAGMENT_NODE.search(c)
        if m:
            out.append((m.group(1), m.group(2)))
    return out


def stack_user_lines(frames: list[str], user_file: str = "") -> list[UserLine]:
    """User lines from Inductor's provenance kernel stack traces (innermost frame of the user's file)."""
    lines: list[UserLine] = []
    for frame_text in frames:
        matches = _STACK_FRAME.findall(frame_text)
        if not matches:
            continue
        chosen = matches[-1]
        if user_file:
            mine = [m for m in matches if same_file(m[0], user_file)]
            if mine:
                chosen = mine[-1]
        ul = UserLine(file=chosen[0], line=int(chosen[1]), function=chosen[2].strip(), code=chosen[3].strip())
        if all((u.file, u.line) != (ul.file, ul.line) for u in lines):
            lines.append(ul)
    return lines


# Packages whose frames are torch.compile's machinery, not code a user reads for their model.
_SKIP_PACKAGES = {"torch", "triton", "functorch", "torchgen", "kernelscope"}
_SITE = ("site-packages", "dist-packages")
_MACHINERY = re.compile(r"/(torch|functorch)/(_[a-z_]+|nn|fx|utils|autograd|export|ao|functional\.py)(/|$)|"
                        r"/triton/(language|runtime|compiler|backends)/|/kernelscope/(capture|ingest|bench)/")


def frame_kind(path: str) -> str:
    """"user" (your code), "library" (an installed package: transformers, timm ...) or "skip"
    (torch, triton, the Python installation, generated code)."""
    if not path or path.startswith("<") or "/" not in path and "\\" not in path:
        return "skip"
    parts = path.replace("\\", "/").split("/")
    for i, part in enumerate(parts[:-1]):
        if part in _SITE:
            return "skip" if parts[i + 1] in _SKIP_PACKAGES else "library"
    # A source checkout of torch or triton (an editable install), the standard library, kernelscope.
    if _MACHINERY.search(path) or re.search(r"/lib/python3\.\d+/", path):
        return "skip"
    return "user"


def stack_frames(frame_text: str) -> list[UserLine]:
    """The kept frames of one printed stack trace (outermost first), library frames marked."""
    out = []
    for file, line, function, code in _STACK_FRAME.findall(frame_text):
        kind = frame_kind(file)
        if kind == "skip":
            continue
        out.append(UserLine(file=file, line=int(line), function=function.strip(), code=code.strip(),
                            library=kind == "library"))
    return out


def innermost(frames: list[UserLine]) -> tuple[UserLine | None, UserLine | None]:
    """(innermost frame of your code, innermost library frame below it) of one stack."""
    user = next((f for f in reversed(frames) if not f.library), None)
    lib = next((f for f in reversed(frames) if f.library), None)
    if user is not None and lib is not None and frames.index(lib) < frames.index(user):
        lib = None  # a library that calls back into your code: your line is the innermost that matters
    return user, lib


def same_file(a: str, b: str) -> bool:
    return a == b or a.rsplit("/", 1)[-1] == b.rsplit("/", 1)[-1]


def unique_id(gid: str, seen: set[str]) -> str:
    """``gid``, or ``gid-b``, ``gid-b-b`` ... where a graph of the bundle has it already; taken into ``seen``."""
    while gid in seen:
        gid += "-b"
    seen.add(gid)
    return gid
