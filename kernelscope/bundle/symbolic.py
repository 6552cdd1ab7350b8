"""Symbolic sizes evaluated for one call: "s77*s27" with {s77: 64, s27: 1024} -> 65536. Pure Python.

Inductor writes a buffer's shape with SymPy's printer (s77, 2*s77, (s77 + 3)//4, ...); the values of
the symbols come from the call's inputs (kernelscope.ingest.shapes records them per graph and call).
"""

from __future__ import annotations

import ast
import operator
from typing import Any

from kernelscope.bundle.model import BufferUse, Graph, Kernel

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "int16": 2,
               "int8": 1, "uint8": 1, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1, "complex64": 8}

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
           ast.Mod: operator.mod, ast.Pow: operator.pow}
_CALLS = {"max": max, "min": min, "Max": max, "Min": min, "floor": lambda x: x, "ceiling": lambda x: x,
          "FloorDiv": operator.floordiv, "CeilDiv": lambda a, b: -(-a // b), "ModularIndexing":
          lambda x, d, m: (x // d) % m}


def eval_dim(dim: Any, values: dict[str, int]) -> int | None:
    """The integer value of one dimension (an int, or an expression over symbols); None when unknown."""
    if isinstance(dim, int):
        return dim
    try:
        return _eval(ast.parse(str(dim).strip(), mode="eval").body, values)
    except (SyntaxError, ValueError, KeyError, TypeError, ZeroDivisionError, RecursionError):
        return None


def _eval(node: ast.AST, values: dict[str, int]) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        return int(values[node.id])
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_eval(node.left, values), _eval(node.right, values))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval(node.operand, values)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS:
        return int(_CALLS[node.func.id](*(_eval(a, values) for a in node.args)))
    raise ValueError(f"not a size expression: {ast.dump(node)}")


def buffer_bytes_for(buf: BufferUse, values: dict[str, int]) -> int | None:
    if buf.bytes is not None:
        return buf.bytes
    size = DTYPE_BYTES.get(buf.dtype)
    if size is None:
        return None
    n = 1
    for d in buf.shape:
        v = eval_dim(d, values)
        if v is None:
            return None
        n *= v
    return n * size


def shape_for(shape: list[Any], values: dict[str, int]) -> list[Any]:
    """The shape with each symbolic dimension replaced by its value where known."""
    out = []
    for d in shape:
        v = eval_dim(d, values)
        out.append(d if v is None else v)
    return out


def is_symbolic(k: Kernel) -> bool:
    return any(not isinstance(d, int) for b in k.buffers for d in b.shape)


def bytes_per_call(k: Kernel, graph: Graph) -> list[dict[str, Any]]:
    """For each call the graph ran: {call, inputs, values, read, written} (bytes; None when unknown)."""
    out = []
    for c in graph.calls:
        values = c.get("values") or {}
        read = written = 0
        for b in k.buffers:
            n = buffer_bytes_for(b, values)
            if b.role in ("read", "readwrite"):
                read = None if n is None or read is None else read + n
            if b.role in ("write", "readwrite"):
                written = None if n is None or written is None else written + n
        out.append({"call": c.get("call"), "inputs": c.get("inputs", []), "values": values, "read": read,
                    "written": written})
    return out


def moved_per_call(k: Kernel, graph: Graph | None) -> list[int]:
    """Bytes read + written in each call of a symbolic kernel's graph, where known (else [])."""
    if graph is None or not is_symbolic(k):
        return []
    per = bytes_per_call(k, graph)
    if not per or any(c["read"] is None or c["written"] is None for c in per):
        return []
    return [c["read"] + c["written"] for c in per]
