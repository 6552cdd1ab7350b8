"""Kernels, array-sized transfers and bytes, counted from a bundle's graphs (pure Python, no torch).

Eager: every op of the graph eager runs is one kernel launch that reads each tensor it is given
and writes each tensor it returns; views (permute, expand, getitem of a tuple ...) move nothing.
Forward and inference graphs are read from the Dynamo graph (the torch-level calls eager makes);
backward graphs from the AOT backward graph (the ATen ops the autograd engine runs, decomposed, so
eager may fuse some of them). Compiled: every launch of every kernel, with the buffers in its call
(a ``readwrite`` buffer is read and written). The source of each count is kept with it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from kernelscope.bundle.io import read_text
from kernelscope.bundle.model import FX_AOT, FX_DYNAMO, FX_POST_GRAD, KIND_TEMPLATE, Bundle, Kernel
from kernelscope.ingest.dtypes import DTYPE_BYTES, SHORT_DTYPES, parse_placeholders, split_dims
from kernelscope.ingest.fx import fx_nodes

# Ops that return a view (or metadata) and launch nothing, in Dynamo (torch / method) and ATen spelling.
VIEW_OPS = frozenset({
    "view", "_unsafe_view", "view_as", "permute", "t", "T", "mT", "transpose", "swapaxes", "expand", "expand_as",
    "unsqueeze", "squeeze", "slice", "select", "narrow", "alias", "as_strided", "detach", "unfold", "diagonal",
    "split", "split_with_sizes", "unbind", "chunk", "tensor_split", "movedim", "unflatten", "view_as_real",
    "view_as_complex", "_reshape_alias", "lift_fresh", "lift_fresh_copy", "real", "imag", "numpy_T",
    "size", "stride", "dim", "numel", "storage_offset", "sym_size", "sym_stride", "sym_numel",
})
# Ops that copy only when their input is not contiguous.
MAYBE_VIEW_OPS = frozenset({"reshape", "flatten", "contiguous", "ravel"})
MATMUL_NAMES = ("mm", "addmm", "bmm", "baddbmm", "bias_addmm", "matmul", "linear")

_ANNOTATION = re.compile(r'^\s*\w+:\s*"([a-z0-9]+)\[([^\]]*)\]\[([^\]]*)\]')
_GETITEM = re.compile(r"^(\w+)\[(.*)\]$", re.S)
_IDENT = re.compile(r"(?<![\w.])([A-Za-z_]\w*)")
_ATEN_CALL = re.compile(r"^torch\.ops\.(\w+)\.(\w+)(?:\.(\w+))?\(")
_CALL = re.compile(r"^([\w.]+)\(")


@dataclass
class Tensor:
    """A tensor as an FX graph annotates it."""

    shape: list[Any]
    stride: list[Any]
    dtype: str

    @property
    def bytes(self) -> int | None:
        """Bytes of the distinct elements (a stride-0 dimension, as ``expand`` makes, is read once)."""
        size = DTYPE_BYTES.get(self.dtype)
        if size is None or any(not isinstance(d, int) for d in self.shape):
            return None
        n = 1
        for i, d in enumerate(self.shape):
            stride = self.stride[i] if i < len(self.stride) else 1
            if stride != 0:
                n *= d
        return n * size


@dataclass
class Transfer:
    """One array-sized read or write of one tensor by one launch."""

    name: str
    role: str  # "read" or "write"
    dtype: str
    shape: list[Any]
    bytes: int | None
    bound: bool = False  # bytes is an upper bound (a gather's rows)
    how: str = ""  # "gather", "slice": read only part of the buffer


@dataclass
class Launch:
    """One kernel launch, eager (an op of the graph) or compiled (a kernel of the output code)."""

    name: str  # FX node name (eager) or kernel name (compiled)
    op: str  # the op or kernel kind: "aten.add", "relu", "pointwise", "extern" ...
    transfers: list[Transfer] = field(default_factory=list)
    kernel_id: str = ""  # compiled: Kernel.id
    flops: int | None = None  # matmuls: 2*M*N*K from the buffer shapes

    @property
    def reads(self) -> int:
        return sum(1 for t in self.transfers if t.role == "read")

    @property
    def writes(self) -> int:
        return sum(1 for t in self.transfers if t.role == "write")

    @property
    def bytes_read(self) -> int | None:
        return _sum([t.bytes for t in self.transfers if t.role == "read"])

    @property
    def bytes_written(self) -> int | None:
        return _sum([t.bytes for t in self.transfers if t.role == "write"])

    @property
    def bytes_bound(self) -> bool:
        return any(t.bound for t in self.transfers)


@dataclass
class GraphCount:
    graph: str  # Graph.id
    kind: str  # forward, backward, inference
    source: str  # where the launches were counted from: fx-dynamo, fx-aot, kernels
    launches: list[Launch] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class SideCount:
    """Everything one side (eager or compiled) launches for one call of the function."""

    side: str
    graphs: list[GraphCount] = field(default_factory=list)

    @property
    def launches(self) -> list[Launch]:
        return [launch for g in self.graphs for launch in g.launches]

    @property
    def kernels(self) -> int:
        return len(self.launches)

    @property
    def transfers(self) -> int:
        return sum(len(launch.transfers) for launch in self.launches)

    @property
    def bytes_read(self) -> int | None:
        return _sum([launch.bytes_read for launch in self.launches])

    @property
    def bytes_written(self) -> int | None:
        return _sum([launch.bytes_written for launch in self.launches])

    def summary(self) -> dict[str, Any]:
        return {"kernels": self.kernels, "transfers": self.transfers, "bytes_read": self.bytes_read,
                "bytes_bound": any(launch.bytes_bound for launch in self.launches),
                "bytes_written": self.bytes_written,
                "sources": sorted({f"{g.graph}: {g.source}" for g in self.graphs})}


def _sum(values: list[int | None]) -> int | None:
    if any(v is None for v in values):
        return None
    return sum(v for v in values if v is not None)


def _annotation(line: str) -> Tensor | None:
    m = _ANNOTATION.match(line)
    if not m:
        return None
    short, shape, stride = m.groups()
    return Tensor(split_dims(shape), split_dims(stride), SHORT_DTYPES.get(short, short))


def _is_contiguous(t: Tensor) -> bool:
    expected = 1
    for d, s in reversed(list(zip(t.shape, t.stride))):
        if d == 1:
            continue
        if not isinstance(d, int) or s != expected:
            return False
        expected *= d
    return True


def _op_name(rhs: str) -> str:
    """The op a node's right-hand side calls: aten.add, relu, linear, add (for ``a + b``) ..."""
    m = _ATEN_CALL.match(rhs)
    if m:
        return f"{m.group(1)}.{m.group(2)}"
    m = _CALL.match(rhs)
    if m:
        return m.group(1).rsplit(".", 1)[-1]
    try:
        expr = ast.parse(rhs, mode="eval").body
    except SyntaxError:
        return rhs.split("(")[0]
    if isinstance(expr, ast.BinOp):
        return type(expr.op).__name__.lower().replace("mult", "mul").replace("matmult", "matmul")
    if isinstance(expr, ast.UnaryOp):
        return type(expr.op).__name__.lower()
    if isinstance(expr, ast.Attribute):
        return expr.attr
    if isinstance(expr, ast.Compare):
        return type(expr.ops[0]).__name__.lower()
    return "expr"


def _short(op: str) -> str:
    return op.rsplit(".", 1)[-1]


def eager_launches(graph_text: str) -> list[Launch]:
    """The launches eager makes for a printed FX graph (Dynamo or AOT), in graph order."""
    tensors: dict[str, Tensor] = {name: Tensor(list(s), list(st), dt)
                                  for name, (s, st, dt) in parse_placeholders(graph_text).items()}
    producers: dict[str, Launch] = {}  # a node that returns a tuple -> its launch (getitems add writes)
    lines = graph_text.split("\n")
    launches: list[Launch] = []
    for node in fx_nodes(graph_text):
        ann = _annotation(lines[node.line - 1])
        rhs = node.target
        if rhs in tensors:  # l_x_ = L_x_: another name for the same tensor
            tensors[node.name] = tensors[rhs]
            continue
        m = _GETITEM.match(rhs)
        if m and m.group(1) in producers:  # one output of a multi-output op
            if ann is not None:
                tensors[node.name] = ann
                producers[m.group(1)].transfers.append(Transfer(node.name, "write", ann.dtype, ann.shape, ann.bytes))
            continue
        args = [name for name in dict.fromkeys(_IDENT.findall(rhs)) if name in tensors]
        op = _op_name(rhs)
        if m and m.group(1) in tensors and not any(a in tensors for a in _IDENT.findall(m.group(2))):
            op = "getitem"  # basic indexing of a tensor: a view
            if ann is not None:
                tensors[node.name] = ann
            continue
        if _short(op) in VIEW_OPS or (
                _short(op) in MAYBE_VIEW_OPS and args and _is_contiguous(tensors[args[0]])):
            if ann is not None:
                tensors[node.name] = ann
            continue
        launch = Launch(name=node.name, op=op)
        for a in args:
            t = tensors[a]
            launch.transfers.append(Transfer(a, "read", t.dtype, t.shape, t.bytes))
        if ann is not None:
            tensors[node.name] = ann
            launch.transfers.append(Transfer(node.name, "write", ann.dtype, ann.shape, ann.bytes))
        else:
            producers[node.name] = launch
        launches.append(launch)
    # A call that writes no tensor (x.size(), a Python scalar) launches nothing.
    return [launch for launch in launches if launch.writes]


def compiled_launches(kernels: list[Kernel]) -> list[Launch]:
    """One launch per launch of each kernel, in launch order (a kernel launched once per layer is
    launched between the other layers' kernels, as its per-launch indices say), with the buffers of
    its (first) recorded call."""
    order: list[tuple[int, int, Launch]] = []
    for n, k in enumerate(kernels):
        transfers: list[Transfer] = []
        for b in k.buffers:
            roles = ("read", "write") if b.role == "readwrite" else (b.role,)
            for role in roles:
                part = role == "read" and b.read_bytes is not None
                transfers.append(Transfer(b.name, role, b.dtype, list(b.shape), b.read_bytes if part else b.bytes,
                                          bound=part and b.read_bound, how=b.read_how if part else ""))
        count = max(1, k.launches)
        indices = [li.index for li in k.launch_info]
        if len(indices) != count:  # older bundles: the launches one after another at the first one
            indices = [k.launch_index] * count
        for i, index in enumerate(indices):
            order.append((index, n * 10000 + i, Launch(name=k.name, op=k.kind, transfers=list(transfers),
                                                         kernel_id=k.id, flops=matmul_flops(k))))
    order.sort(key=lambda x: (x[0], x[1]))
    return [launch for _, _, launch in order]


def matmul_flops(k: Kernel) -> int | None:
    """2*M*N*K for a matmul kernel (extern mm/addmm/bmm or a Triton mm template), from its buffer shapes."""
    base = k.name.rsplit(".", 1)[-1].split("@")[0]
    is_mm = (k.lang == "extern" and base in MATMUL_NAMES) or (
        k.kind == KIND_TEMPLATE and re.search(r"(^|_)(mm|addmm|bmm|baddbmm)(_|$)", k.name) is not None)
    if not is_mm:
        return None
    outs = [b for b in k.buffers if b.role in ("write", "readwrite") and len(b.shape) in (2, 3)]
    ins = [b for b in k.buffers if b.role in ("read", "readwrite") and len(b.shape) in (2, 3)]
    for out in outs:
        if any(not isinstance(d, int) for d in out.shape):
            return None
        m_, n_ = out.shape[-2:]
        batch = out.shape[0] if len(out.shape) == 3 else 1
        for i, a in enumerate(ins):
            for j, b in enumerate(ins):
                if i == j or a is out or b is out or len(a.shape) != len(out.shape) or len(b.shape) != len(out.shape):
                    continue
                if a.shape[-2] == m_ and b.shape[-1] == n_ and a.shape[-1] == b.shape[-2] \
                        and isinstance(a.shape[-1], int):
                    return 2 * batch * m_ * n_ * a.shape[-1]
    return None


def count_bundle(bundle: Bundle, eager_from: tuple[str, ...] | None = None) -> tuple[SideCount, SideCount]:
    """(eager, compiled) for one call of the captured function: every graph, forward and backward.
    ``eager_from``: the FX graphs eager is counted from, first present wins (a bench of the bundle
    alone runs its AOT graphs); by default the Dynamo graph for a forward, the AOT graph for a backward."""
    eager = SideCount("eager")
    for g in bundle.graphs:
        order = eager_from or ((FX_AOT, FX_POST_GRAD) if g.kind == "backward" else (FX_DYNAMO, FX_AOT, FX_POST_GRAD))
        for kind in order:
            text = read_text(bundle, g.files.get(kind))
            if text.strip():
                gc = GraphCount(g.id, g.kind, kind, eager_launches(text))
                if g.kind == "backward":
                    gc.notes.append("backward counted from the AOT backward graph: ATen ops after decomposition; "
                                    "eager's autograd may run some of them as one kernel")
                eager.graphs.append(gc)
                break
        else:
            eager.graphs.append(GraphCount(g.id, g.kind, "missing", [], [f"{g.id}: no FX graph in the bundle"]))
    return eager, compiled_side(bundle)


def compiled_side(bundle: Bundle) -> SideCount:
    """What the compiled side launches for one call: each graph's kernels in launch order (no FX graph read)."""
    compiled = SideCount("compiled")
    for g in bundle.graphs:
        compiled.graphs.append(GraphCount(g.id, g.kind, "kernels", compiled_launches(bundle.kernels_of(g.id))))
    return compiled


def launch_dict(launch: Launch) -> dict[str, Any]:
    return {"name": launch.name, "op": launch.op, "kernel_id": launch.kernel_id, "reads": launch.reads,
            "writes": launch.writes, "bytes_read": launch.bytes_read, "bytes_written": launch.bytes_written,
            "flops": launch.flops, "bytes_bound": launch.bytes_bound,
            "transfers": [[t.role, t.name, t.dtype, t.shape, t.bytes] + ([t.how] if t.how else [])
                          for t in launch.transfers]}


def counts_dict(bundle: Bundle, eager_from: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The computed counts as stored in bench results and printed by ``kernelscope bench --counts``."""
    eager, compiled = count_bundle(bundle, eager_from)
    out: dict[str, Any] = {}
    for side in (eager, compiled):
        d = side.summary()
        d["graphs"] = [{"graph": g.graph, "kind": g.kind, "source": g.source, "notes": g.notes,
                        "launches": [launch_dict(x) for x in g.launches]} for g in side.graphs]
        out[side.side] = d
    return out
