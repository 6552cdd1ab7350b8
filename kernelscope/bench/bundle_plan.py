"""What a bench of a bundle alone runs (pure Python, no torch): per graph, its output code (the
compiled side) and its AOT or post-grad FX graph (the eager side), the inputs to make for both from
the recorded sizes, strides and dtypes, and the files a user must agree to run.

A bundle has no function to rerun when it was read from a TORCH_TRACE (``open``), or made by
``run`` / ``record``: only its own code is there. Inductor's output code carries ``get_args()``
(``rand_strided(size, stride, device=, dtype=)`` per input): it is read here as text, never run.
Integer inputs are made valid for the ops the FX graph feeds them to (an ``embedding`` of a table
of N rows takes ids in [0, N)); a backward graph's saved activations come from its forward graph's
outputs (matched by name), so layer-norm statistics, softmax outputs and dropout masks are real.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field, replace
from typing import Any

from kernelscope.bundle import provenance
from kernelscope.bundle.io import inside, read_text
from kernelscope.bundle.model import FX_AOT, FX_POST_GRAD, Bundle
from kernelscope.ingest.dtypes import SHORT_DTYPES

SYNTHETIC = ("synthetic inputs: random values of the recorded shapes, strides and dtypes (integer inputs in the "
             "range the ops that read them accept); a backward graph's saved activations come from its forward")
SMALL_INT_RANGE = 8  # ids for an integer input no indexing op reads: small, valid for any table of 8+ rows
EAGER_SOURCES = (FX_AOT, FX_POST_GRAD)  # the graph eager runs: AOT (ATen ops), else post-grad
_ANNOTATION = re.compile(r"^([a-z0-9]+)\[([^\]]*)\]\[([^\]]*)\](\S*)$")
_SYM = re.compile(r"^Sym\((.*)\)$")
# Ops whose result is the same integer values as their first argument (a view, a copy, a cast).
_SAME_VALUES = frozenset({"view", "_unsafe_view", "reshape", "unsqueeze", "squeeze", "expand", "permute", "clone",
                          "slice", "select", "t", "flatten", "contiguous", "_to_copy", "convert_element_type",
                          "alias", "lift_fresh_copy", "transpose", "repeat", "cat", "narrow", "unbind", "split",
                          "constant_pad_nd"})
RANDOM_OPS = frozenset({"rand", "randn", "rand_like", "randn_like", "randint", "randint_like", "bernoulli",
                        "native_dropout", "dropout", "normal", "uniform", "multinomial", "randperm",
                        "inductor_random", "inductor_seeds", "philox_rand", "exponential"})


class PlanError(Exception):
    """A bundle that cannot be benched alone; one line for the user."""


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


@dataclass
class GraphPlan:
    graph: str
    kind: str
    compile_id: str
    output_code: str  # bundle-relative paths of the files run
    eager_fx: str
    eager_source: str  # FX_AOT or FX_POST_GRAD
    device: str
    inputs: list[InputPlan] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)  # the names the eager graph returns, in order
    random_ops: list[str] = field(default_factory=list)

    def to_dict(self, root: str) -> dict[str, Any]:
        return {"graph": self.graph, "kind": self.kind, "compile_id": self.compile_id, "device": self.device,
                "output_code": str(inside(root, self.output_code)), "eager_fx": str(inside(root, self.eager_fx)),
                "eager_source": self.eager_source, "inputs": [i.to_dict() for i in self.inputs],
                "outputs": self.outputs, "random_ops": self.random_ops}


@dataclass
class BundlePlan:
    graphs: list[GraphPlan] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # one line per graph left out, naming why

    @property
    def device(self) -> str:
        return self.graphs[0].device if self.graphs else ""

    def files(self) -> list[str]:
        """Bundle-relative paths of the code the bench would run."""
        return [p for g in self.graphs for p in (g.output_code, g.eager_fx)]


# ---------------------------------------------------------------- who may run it

def has_function(bundle: Bundle) -> bool:
    """Whether the bundle names a function the bench can compile again (a ``capture``)."""
    return bool(bundle.target.get("file") and bundle.target.get("name"))


def written_here(bundle: Bundle) -> bool:
    """Whether this machine made the bundle's code: a record ``run`` or ``record`` kept in this user's
    cache, keyed by the code's content (bundle/provenance.py). What the manifest says of itself (its
    origin, a host name) proves nothing: anyone can write it."""
    return provenance.made_here(bundle)


def consent_line(bundle: Bundle, plan: BundlePlan) -> str:
    """The one line that asks before running code this machine did not write."""
    files = plan.files()
    shown = ", ".join(files[:4]) + (f" and {len(files) - 4} more" if len(files) > 4 else "")
    who = ("the trace's author" if bundle.target.get("kind") == "torch_trace" or bundle.target.get("origin") == "open"
           else "the bundle's sender")
    return (f"{bundle.root}: this bundle has no function to rerun, so the bench runs its own code, which {who} "
            f"wrote: {shown} (in {bundle.root}); "
            "read them, then pass --run-bundle-code to bench it")


# ---------------------------------------------------------------- the plan

def plan_bundle(bundle: Bundle) -> BundlePlan:
    """Per graph: the files both sides run and the inputs to make; graphs that cannot run are
    left out with a reason (a PlanError when none can)."""
    plan = BundlePlan()
    outputs_of: dict[str, tuple[str, list[str]]] = {}  # compile id -> (forward graph id, its outputs)
    for g in bundle.graphs:
        try:
            gp = _plan_graph(bundle, g, outputs_of)
        except PlanError as exc:
            plan.skipped.append(f"{g.id}: {exc}")
            continue
        if gp.kind == "forward":
            outputs_of[gp.compile_id] = (gp.graph, gp.outputs)
        plan.graphs.append(gp)
    if not plan.graphs:
        why = "; ".join(plan.skipped) or "it has no graph"
        raise PlanError(f"{bundle.root}: no graph of this bundle can be benched from its own code: {why}")
    devices = sorted({g.device for g in plan.graphs})
    if len(devices) > 1:
        raise PlanError(f"{bundle.root}: its graphs ran on several devices ({', '.join(devices)}); bench one at a time")
    return plan


def subset(bundle: Bundle, plan: BundlePlan) -> Bundle:
    """The bundle with only the graphs the plan runs (and their kernels): what the counts and the
    per-launch match read, so a graph left out does not leave launches nothing ran."""
    keep = {g.graph for g in plan.graphs}
    out = replace(bundle, graphs=[g for g in bundle.graphs if g.id in keep],
                  kernels=[k for k in bundle.kernels if k.graph in keep])
    out.root = bundle.root
    return out


def _plan_graph(bundle: Bundle, g, outputs_of: dict[str, tuple[str, list[str]]]) -> GraphPlan:
    code_path = g.files.get("output_code")
    code = read_text(bundle, code_path)
    if not code.strip():
        raise PlanError("no output code in the bundle")
    if "def call(" not in code:
        raise PlanError("its output code has no call(args) to run")
    source = next((k for k in EAGER_SOURCES if read_text(bundle, g.files.get(k)).strip()), None)
    if source is None:
        raise PlanError("no AOT or post-grad FX graph in the bundle for the eager side")
    fx_text = read_text(bundle, g.files[source])
    fx = parse_fx(fx_text)
    recorded = parse_get_args(code)
    if recorded is None:
        raise PlanError("its output code has no get_args() with the recorded input sizes")
    if len(recorded) != len(fx.placeholders):
        raise PlanError(f"its output code's inputs ({', '.join(a.name for a in recorded)}) are not the {source} "
                        f"graph's ({', '.join(fx.placeholders)})")
    devices = {a.device for a in recorded if a.kind == "tensor"}
    if len(devices) > 1:
        raise PlanError(f"its inputs live on several devices ({', '.join(sorted(devices))})")
    device = devices.pop() if devices else ("cuda" if "triton" in code else "cpu")
    forward = outputs_of.get(g.compile_id) if g.kind == "backward" else None
    for a in recorded:
        if forward and a.kind == "tensor" and not a.name.startswith("tangents_") and a.name in forward[1]:
            a.kind, a.saved_from = "saved", {"graph": forward[0], "output": forward[1].index(a.name)}
        elif forward and a.kind in ("int", "float") and a.name in forward[1]:
            a.kind, a.saved_from = "saved", {"graph": forward[0], "output": forward[1].index(a.name)}
        elif a.kind == "tensor" and _is_integer(a.dtype):
            _int_range(a, fx, recorded)
    return GraphPlan(graph=g.id, kind=g.kind, compile_id=g.compile_id, output_code=code_path,
                     eager_fx=g.files[source], eager_source=source, device=device, inputs=recorded,
                     outputs=fx.outputs, random_ops=sorted(fx.random_ops))


def _is_integer(dtype: str) -> bool:
    return dtype.startswith(("int", "uint"))


# ---------------------------------------------------------------- get_args()

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


# ---------------------------------------------------------------- the FX graph

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
            return [int(d) if d.strip().lstrip("-").isdigit() else d.strip()
                    for d in m.group(2).split(",") if d.strip()]
    return []


def _op_of(func: ast.expr) -> str:
    """``embedding.default`` for ``torch.ops.aten.embedding.default``; '' for anything else."""
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    parts.reverse()
    if len(parts) >= 4 and parts[:2] == ["torch", "ops"]:
        return ".".join(parts[3:])
    return ""


# ---------------------------------------------------------------- integer inputs

def _int_range(a: InputPlan, fx: FxGraph, recorded: list[InputPlan]) -> None:
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


def files_exist(bundle: Bundle, plan: BundlePlan) -> list[str]:
    """The plan's files that are missing on disk (a bundle copied in part)."""
    return [p for p in plan.files() if not os.path.isfile(inside(bundle.root, p))]


# ---------------------------------------------------------------- the request

def bundle_request(bundle: Bundle, device: str | None, run_code: bool) -> tuple[BundlePlan, dict[str, Any]]:
    """The plan and the part of the bench request that runs it; PlanError (one line) when the bundle
    cannot be benched alone, on ``device``, or without the user's consent to run its code."""
    plan = plan_bundle(bundle)
    missing = files_exist(bundle, plan)
    if missing:
        raise PlanError(f"{bundle.root}: the bundle lacks {', '.join(missing[:3])}; it was copied in part")
    if device and device != plan.device:
        raise PlanError(f"{bundle.root}: its output code was compiled for {plan.device}; it runs only there "
                        f"(--device {plan.device})")
    if not run_code and not written_here(bundle):
        raise PlanError(consent_line(bundle, plan))
    return plan, {"bundle_plan": {"graphs": [g.to_dict(str(bundle.root)) for g in plan.graphs],
                                  "skipped": plan.skipped}}


def record_part(plan_request: dict[str, Any]) -> dict[str, Any]:
    """What the stored record says about a bench of the bundle alone (beside the child's rows)."""
    return {"synthetic": SYNTHETIC, "skipped": plan_request.get("skipped") or [],
            "ran": "per graph: the output code's call(args) (compiled) and the "
                   + "/".join(sorted({g["eager_source"] for g in plan_request["graphs"]})) + " FX graph (eager)"}


def consent_question(bundle: Bundle) -> str:
    """The UI's question before a bench runs the bundle's own code ('' when nothing needs asking:
    a function to rerun, code this machine wrote, or a bundle that cannot be benched alone anyway)."""
    if has_function(bundle) or written_here(bundle):
        return ""
    try:
        plan = plan_bundle(bundle)
    except PlanError:
        return ""  # the bench says why, as the CLI does
    files = plan.files()
    shown = "\n".join(f"  {p}" for p in files[:8]) + (f"\n  … and {len(files) - 8} more" if len(files) > 8 else "")
    return ("This bundle has no function to rerun: the bench runs its own output code and FX graphs, which "
            f"whoever made it wrote (in {bundle.root}):\n{shown}\non synthetic inputs of the recorded shapes. "
            "Run them? y/n")


def record_lines(rec: dict[str, Any]) -> list[str]:
    """What the bench table says of a bench of the bundle alone ([] for a function's bench)."""
    alone = rec.get("from_bundle")
    if not alone:
        return []
    out = [f"bench of the bundle alone (no function to rerun): {alone.get('ran', '')}",
           f"  {alone.get('synthetic', SYNTHETIC)}"]
    for g in alone.get("graphs") or []:
        parts = [f"eager from {g.get('eager_source')}"]
        if g.get("saved_inputs"):
            parts.append(f"{g['saved_inputs']} saved activations from its forward")
        for i in g.get("int_inputs") or []:
            parts.append(f"{i['name']} in [{i['low']}, {i['high']}): {i.get('why', '')}")
        if g.get("random_ops"):
            parts.append("draws random numbers (" + ", ".join(g["random_ops"]) + ")")
        out.append(f"  {g.get('graph')} ({g.get('kind')}): " + "; ".join(parts))
    for line in alone.get("skipped") or []:
        out.append(f"  left out: {line}")
    if isinstance(alone.get("cpu_vectors"), str) and alone["cpu_vectors"]:
        out.append(f"  {alone['cpu_vectors']}")
    return out
