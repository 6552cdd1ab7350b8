"""A printed FX GraphModule read as text, never run here (pure, no torch): its placeholders, outputs,
annotated shapes, ATen calls and random ops, and the check that it holds plain ATen code only, made
before the bench child execs it (bench/from_bundle.py). A bench of a bundle alone runs these graphs as
its eager side (bench/bundle_plan.py).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from kernelscope.ingest.dtypes import split_dims

_ANNOTATION = re.compile(r"^([a-z0-9]+)\[([^\]]*)\]\[([^\]]*)\](\S*)$")


RANDOM_OPS = frozenset({"rand", "randn", "rand_like", "randn_like", "randint", "randint_like", "bernoulli",
                        "native_dropout", "dropout", "normal", "uniform", "multinomial", "randperm",
                        "inductor_random", "inductor_seeds", "philox_rand", "exponential"})


class PlanError(Exception):
    """A bundle that cannot be benched alone; one line for the user. Raised from reading a graph here up
    to the plan (bench/bundle_plan.py)."""


@dataclass
class FxGraph:
    placeholders: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # returned names ('' for None or a non-name)
    shapes: dict[str, list[Any]] = field(default_factory=dict)  # node -> annotated shape
    calls: list[tuple[str, str, list[ast.expr]]] = field(default_factory=list)  # (node, op, args)
    random_ops: set[str] = field(default_factory=set)


def fx_source(text: str) -> str:
    """A printed graph as Python: its class named GraphModule (an inference graph prints as
    ``class <lambda>(torch.nn.Module):``, which does not parse)."""
    return re.sub(r"^class [^(\n]+\(", "class GraphModule(", text, count=1, flags=re.M)


def parse_fx(text: str) -> FxGraph:
    """Placeholders, outputs, annotated shapes and ATen calls of a printed GraphModule."""
    try:
        tree = ast.parse(fx_source(text))
    except SyntaxError as exc:
        raise PlanError(f"its FX graph does not parse as Python (line {exc.lineno})") from exc
    forward = next((f for c in tree.body if isinstance(c, ast.ClassDef) for f in c.body
                    if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
    if forward is None:
        raise PlanError("its FX graph has no GraphModule.forward")
    check_fx_code(tree, forward)
    fx = FxGraph()
    for a in forward.args.args[1:]:
        fx.placeholders.append(a.arg)
        fx.shapes[a.arg] = _annotated_shape(a.annotation)
    for stmt in forward.body:
        target, value, ann = None, None, None
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            target, value, ann = stmt.target.id, stmt.value, stmt.annotation
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Tuple):
            fx.outputs = [e.id if isinstance(e, ast.Name) else "" for e in stmt.value.elts]
            continue
        if target is None:
            continue
        fx.shapes[target] = _annotated_shape(ann)
        if isinstance(value, ast.Call):
            op = _op_of(value.func)
            if op:
                fx.calls.append((target, op, list(value.args)))
                if op.split(".")[0] in RANDOM_OPS:
                    fx.random_ops.add(op.split(".")[0])
    return fx


# What a printed GraphModule may hold: assignments of calls on torch.* and plain expressions over
# its own names. Anything else (an import, a name from outside, a dunder attribute, self.X: a
# constant or a submodule the print does not carry) is refused before the bench child runs it.
FX_NAMES = frozenset({"torch", "device", "inf", "nan"})


_FX_EXPR = (ast.Name, ast.Attribute, ast.Call, ast.Constant, ast.Tuple, ast.List, ast.Subscript, ast.Slice,
            ast.BinOp, ast.UnaryOp, ast.Compare, ast.keyword, ast.Load, ast.Store, ast.operator, ast.unaryop,
            ast.cmpop, ast.BoolOp, ast.boolop, ast.Dict, ast.IfExp)


def check_fx_code(tree: ast.Module, forward: ast.FunctionDef) -> None:
    """Raise PlanError unless the graph is plain ATen code the bench can exec with only torch in scope."""
    classes = [c for c in tree.body if isinstance(c, ast.ClassDef)]
    if len(classes) != 1 or len(tree.body) != 1:
        raise PlanError("its FX graph holds more than one GraphModule class")
    extra = [n for n in classes[0].body if n is not forward and not isinstance(n, ast.Expr)]
    if extra:
        raise PlanError("its FX graph calls submodules (a higher-order op's graphs), which the bench cannot run alone")
    local = {a.arg for a in forward.args.args[1:]}  # not self: its attributes are not in the print
    for stmt in forward.body:
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Return, ast.Expr)):
            raise PlanError(f"its FX graph has a {type(stmt).__name__} statement (line {stmt.lineno}), not plain ops")
        value = stmt.value
        for node in ast.walk(value) if value is not None else ():
            if not isinstance(node, _FX_EXPR):
                raise PlanError(f"its FX graph has a {type(node).__name__} (line {stmt.lineno}), not plain ops")
            if isinstance(node, ast.Attribute) and node.attr.startswith("__"):
                raise PlanError(f"its FX graph reads a dunder attribute {node.attr} (line {stmt.lineno})")
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local \
                    and node.id not in FX_NAMES:
                what = "self: a constant or submodule the printed graph does not carry" if node.id == "self" \
                    else f"{node.id}, a name from outside the graph"
                raise PlanError(f"its FX graph uses {what} (line {stmt.lineno})")
            if isinstance(node, ast.Call) and not _plain_op(node.func):
                raise PlanError(f"its FX graph calls {_dotted(node.func) or 'something'}, not a plain ATen op "
                                f"(line {stmt.lineno}); the bench runs only torch.ops.aten/prims calls")
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            local.add(stmt.target.id)
        elif isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                if not isinstance(t, ast.Name):
                    raise PlanError(f"its FX graph assigns to something other than a name (line {stmt.lineno})")
                local.add(t.id)


def _dotted(func: ast.expr) -> str:
    """``torch.ops.aten.add.Tensor`` for a chain of names ('' for anything else)."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return ""
    return ".".join([func.id, *reversed(parts)])


def _plain_op(func: ast.expr) -> bool:
    """A call the bench may run from a bundle: an ATen or prims op (``torch.ops.aten.mm.default``), or
    ``device(...)``; never another torch function (``torch.save`` writes files)."""
    parts = _dotted(func).split(".")
    return parts == ["device"] or (len(parts) in (4, 5) and parts[:2] == ["torch", "ops"]
                                   and parts[2] in ("aten", "prims"))


def _annotated_shape(ann: ast.expr | None) -> list[Any]:
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        m = _ANNOTATION.match(ann.value.strip())
        if m:
            return split_dims(m.group(2))
    return []


def _op_of(func: ast.expr) -> str:
    """``embedding.default`` for ``torch.ops.aten.embedding.default``; '' for anything else."""
    parts = _dotted(func).split(".")
    if len(parts) >= 4 and parts[:2] == ["torch", "ops"]:
        return ".".join(parts[3:])
    return ""
