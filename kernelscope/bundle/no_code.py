"""Graphs with no generated code (``Graph.no_code``: a frame another backend compiled, a compile that failed),
as text: why a graph has no kernels, a failed compile's exception whole, and whether a bundle holds any code
to run at all (``show``'s "can:", the explorer's bench key)."""

from __future__ import annotations

from typing import Any

from kernelscope.bundle.model import Bundle, Graph
from kernelscope.units import base_name


def failure_text(failure: dict[str, Any]) -> str:
    """A failed compile's exception whole (``Graph.failure``): ``Type: message`` on as many lines as the message
    has, then ``at file.py:6 in fn: code`` (the user line it points at) when the trace names one."""
    text = f"{failure.get('type') or 'error'}: {failure.get('message') or ''}".rstrip()
    if failure.get("file"):
        name = base_name(str(failure["file"]))
        text += (f"\nat {name}:{failure.get('line')}" + (f" in {failure['function']}" if failure.get("function") else "")
                 + (f": {failure['code']}" if failure.get("code") else ""))
    return text


def no_code_lines(g: Graph, prefix: str, whole: bool = True) -> list[str]:
    """Why a graph has no kernels (``Graph.no_code``), and a failed compile's exception: whole, or its first line."""
    if not g.no_code:
        return []
    out = [f"{prefix}no kernels: {g.no_code}"]
    if g.failure:
        lines = failure_text(g.failure).splitlines()
        out += [f"{prefix}  {line}" for line in (lines if whole else lines[:1])]
    return out


def has_output_code(b: Bundle) -> bool:
    """Whether any graph of the bundle has output code (something a bench can run)."""
    return any(str(g.files.get("output_code") or "").endswith(".py") for g in b.graphs)  # AOTInductor's .cpp: not run
