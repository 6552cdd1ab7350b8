"""The inputs a bench of a bundle alone makes (pure, no torch): what Inductor's ``get_args()`` records
for each input (``rand_strided(size, stride, device=, dtype=)`` or a scalar), read as text, never run;
and for an integer input, the values that are valid for the ops its FX graph feeds it to (an
``embedding`` of a table of N rows takes ids in [0, N)). bench/bundle_plan.py puts them in the plan.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from kernelscope.bench.printed_fx import FxGraph, PlanError
from kernelscope.ingest.dtypes import SHORT_DTYPES

SMALL_INT_RANGE = 8  # ids for an integer input no indexing op reads: small, valid for any table of 8+ rows


# Ops whose result is the same integer values as their first argument (a view, a copy, a cast).
_SAME_VALUES = frozenset({"view", "_unsafe_view", "reshape", "unsqueeze", "squeeze", "expand", "permute", "clone",
                          "slice", "select", "t", "flatten", "contiguous", "_to_copy", "convert_element_type",
                          "alias", "lift_fresh_copy", "transpose", "repeat", "cat", "narrow", "unbind", "split",
                          "constant_pad_nd"})


@dataclass
class InputPlan:
    """One input of one graph, as both sides get it."""

    name: str
    kind: str  # "tensor", "int", "float", "bool", "none", "saved" (a forward graph's output)
    shape: list[int] = field(default_factory=list)
    stride: list[int] = field(default_factory=list)
    dtype: str = ""
    device: str = ""
    value: Any = None  # a scalar's recorded value
    low: int | None = None  # integer tensors: values drawn from [low, high)
    high: int | None = None
    why: str = ""  # where the range (or the value) came from
    saved_from: dict[str, Any] = field(default_factory=dict)  # {"graph": forward id, "output": index}

    def to_dict(self) -> dict[str, Any]:
        keep = ("name", "kind", "shape", "stride", "dtype", "device")  # a 0-d tensor's shape is []
        return {k: v for k, v in self.__dict__.items() if k in keep or v not in (None, "", [], {})}

    def describe(self) -> str:
        """``f32[256, 512]``, ``i64[8, 64] 0..50257``, ``int 8``, ``saved from 0-0-forward``."""
        if self.kind == "saved":
            return f"{self.name} <- {self.saved_from['graph']} output {self.saved_from['output']}"
        if self.kind != "tensor":
            return f"{self.name}={self.value!r}"
        short = {v: k for k, v in SHORT_DTYPES.items()}.get(self.dtype, self.dtype)
        text = f"{short}[{', '.join(map(str, self.shape))}]"
        if self.high is not None:
            text += f" {self.low}..{self.high}"
        return text


def is_integer(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


def parse_get_args(code: str) -> list[InputPlan] | None:
    """The inputs ``get_args()`` makes, read from its text: None when it is absent or not plain."""
    m = re.search(r"^def get_args\(\):\n((?:[ \t]+.*\n|\n)*)", code, re.M)
    if not m:
        return None
    try:
        fn = ast.parse("def get_args():\n" + m.group(1)).body[0]
    except SyntaxError:
        return None
    values: dict[str, InputPlan] = {}
    order: list[str] = []
    for stmt in fn.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            made = _recorded_value(name, stmt.value)
            if made is None:
                return None
            values[name] = made
        elif isinstance(stmt, ast.Return) and isinstance(stmt.value, (ast.List, ast.Tuple)):
            order = [e.id for e in stmt.value.elts if isinstance(e, ast.Name)]
            if len(order) != len(stmt.value.elts):
                return None
    if not order or any(n not in values for n in order):
        return None
    return [values[n] for n in order]


def _recorded_value(name: str, node: ast.expr) -> InputPlan | None:
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool):
            return InputPlan(name, "bool", value=v)
        if isinstance(v, int):
            return InputPlan(name, "int", value=v)
        if isinstance(v, float):
            return InputPlan(name, "float", value=v)
        if v is None:
            return InputPlan(name, "none")
        return None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        inner = _recorded_value(name, node.operand)
        if inner is not None and inner.kind in ("int", "float"):
            inner.value = -inner.value
        return inner
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "rand_strided"):
        return None
    try:
        size = [int(x) for x in ast.literal_eval(node.args[0])]
        stride = [int(x) for x in ast.literal_eval(node.args[1])]
    except (ValueError, TypeError, IndexError, SyntaxError):
        return None
    kw = {k.arg: k.value for k in node.keywords}
    device = ast.literal_eval(kw["device"]) if isinstance(kw.get("device"), ast.Constant) else "cpu"
    dtype = kw.get("dtype")
    dtype_name = dtype.attr if isinstance(dtype, ast.Attribute) else "float32"
    if len(size) != len(stride):
        return None
    return InputPlan(name, "tensor", shape=size, stride=stride, dtype=dtype_name,
                     device=str(device).split(":")[0])


def int_range(a: InputPlan, fx: FxGraph, recorded: list[InputPlan]) -> None:
    """Values for an integer input: below the rows of every table an indexing op reads with it,
    else a small range. Raises PlanError when an op indexes with it a table of unknown size."""
    concrete = {r.name: r.shape for r in recorded if r.kind == "tensor"}
    same = {a.name}
    for node, op, args in fx.calls:  # values passed through views, copies and casts are the same ids
        if op.split(".")[0] in _SAME_VALUES and args and _name(args[0]) in same:
            same.add(node)
        elif op.split(".")[0] == "where" and any(_name(x) in same for x in args[1:]):  # ids, or a fill value
            same.add(node)
    bounds: list[tuple[int, str]] = []
    for node, op, args in fx.calls:
        for bound, what in _index_bounds(op, args, same, fx, concrete):
            if bound is None:
                raise PlanError(f"input {a.name} ({a.describe()}) indexes {what}, whose size is not recorded; "
                                "cannot make valid ids for it")
            bounds.append((bound, f"{node} = {op}({what})"))
    if bounds:
        high, why = min(bounds)
        if high <= 0:
            raise PlanError(f"input {a.name} indexes an empty table ({why}); no valid id exists")
        a.low, a.high, a.why = 0, high, f"ids for {why}"
    elif a.dtype == "uint8" or a.dtype == "bool":
        a.low, a.high, a.why = 0, 2, "a mask: 0 or 1"
    else:
        a.low, a.high, a.why = 0, SMALL_INT_RANGE, "no indexing op reads it: a small range"


def _name(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else ""


def _dim_size(fx: FxGraph, concrete: dict[str, list[int]], table: str, dim: int) -> int | None:
    shape = concrete.get(table) or fx.shapes.get(table) or []
    if -len(shape) <= dim < len(shape) and isinstance(shape[dim], int):
        return shape[dim]
    return None


def _literal(node: ast.expr | None) -> Any:
    try:
        return ast.literal_eval(node) if node is not None else None
    except ValueError:
        return None


def _index_bounds(op: str, args: list[ast.expr], ids: set[str], fx: FxGraph,
                  concrete: dict[str, list[int]]) -> list[tuple[int | None, str]]:
    """(rows, what) for each place ``op`` reads one of ``ids`` as an index into a table."""
    base = op.split(".")[0]
    arg = [_name(x) for x in args]

    def at(i: int) -> str:
        return arg[i] if i < len(arg) else ""

    out: list[tuple[int | None, str]] = []
    if base == "embedding" and at(1) in ids:
        out.append((_dim_size(fx, concrete, at(0), 0), f"the rows of {at(0)}"))
    elif base == "embedding_dense_backward" and at(1) in ids:
        n = _literal(args[2]) if len(args) > 2 else None
        out.append((n if isinstance(n, int) else None, "num_weights"))
    elif base in ("index", "index_put", "index_put_", "_unsafe_index", "_unsafe_index_put") and len(args) > 1 \
            and isinstance(args[1], (ast.List, ast.Tuple)):
        for d, e in enumerate(args[1].elts):
            if _name(e) in ids:
                out.append((_dim_size(fx, concrete, at(0), d), f"dim {d} of {at(0)}"))
    elif base in ("gather", "scatter", "scatter_add", "scatter_reduce", "index_select", "index_add", "index_copy",
                  "index_fill", "scatter_", "scatter_add_", "index_add_", "index_copy_", "index_fill_") \
            and at(2) in ids:
        d = _literal(args[1])
        out.append((_dim_size(fx, concrete, at(0), d) if isinstance(d, int) else None, f"dim {d} of {at(0)}"))
    elif base in ("nll_loss_forward", "nll_loss2d_forward") and at(1) in ids:
        shape = concrete.get(at(0)) or fx.shapes.get(at(0)) or []
        out.append((_dim_size(fx, concrete, at(0), 1 if len(shape) >= 2 else 0), f"the classes of {at(0)}"))
    elif base in ("nll_loss_backward", "nll_loss2d_backward") and at(2) in ids:
        shape = concrete.get(at(1)) or fx.shapes.get(at(1)) or []
        out.append((_dim_size(fx, concrete, at(1), 1 if len(shape) >= 2 else 0), f"the classes of {at(1)}"))
    elif base == "one_hot" and at(0) in ids:
        n = _literal(args[1]) if len(args) > 1 else None
        out.append((n if isinstance(n, int) and n > 0 else None, "num_classes"))
    return out
