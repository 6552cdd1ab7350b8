"""The capture bundle's data model: plain dataclasses that round-trip through JSON.

A bundle is a folder. ``bundle.json`` is its index: every graph and kernel with what a list of them
shows (names, kinds, launch counts, bytes, lines); each graph's detail (FX nodes, buffers, launches,
frames, Triton variants, guards, symbols, calls) lives in ``graphs/<id>/detail.json``, read when first
asked for (format version 2; version 1 kept everything in bundle.json and still reads). Large texts
(output code, FX graphs, kernel sources, Triton stage files) live in files beside it and are
referenced by relative path. Nothing here imports torch, triton or textual.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from kernelscope.bundle.lazy_kernels import KernelIdsFromFile, KernelsFromFile


class BundleError(Exception):
    """A bundle that cannot be read, written or looked into; the message is one line for the user."""


class NotInBundle(BundleError, KeyError):
    """A kernel or graph id that the bundle does not have (also a KeyError, for dict-like callers)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


SCHEMA_NAME = "kernelscope.bundle"
# 2: the manifest an index, each graph's detail a file of its own (bundle/shards.py); 3: a job's long texts
# (graph-break messages, compile-time rows) in files of their own under sections/, read when first asked for;
# 4: the index's kernels as rows under one header (bundle/kernel_rows.py); 5: those rows in a file of their
# own, graph by graph, read a graph at a time (bundle/kernel_file.py). Every earlier version still reads.
SCHEMA_VERSION = 5

# The fields a kernel's and a graph's detail file holds (format 2); read when first asked for.
KERNEL_DETAIL = ("fx_nodes", "fx_nodes_pre", "aten_ops", "library_lines", "frames", "launch_info", "buffers",
                 "triton", "call_text", "kernel_path", "provenance")
GRAPH_DETAIL = ("symbols", "calls", "guards", "fusion_pairs", "call_stack")


class _Lazy:
    """A model object whose detail fields may still be on disk: the first read of one of them asks the
    loader the reader left in ``_detail`` (bundle/io.py), which fills every object of that graph at once."""

    _DETAIL: tuple[str, ...] = ()

    def __getattr__(self, name: str) -> Any:  # only called for attributes not set (detail fields not read yet)
        if name in self._DETAIL:
            loader = self.__dict__.get("_detail")
            if loader is not None:
                loader()
                if name in self.__dict__:
                    return self.__dict__[name]
        raise AttributeError(f"{type(self).__name__!s} has no attribute {name!r}")

    @property
    def detail_loaded(self) -> bool:
        """False while this object's detail is still in its graph's detail file (format 2, not read yet)."""
        return self.__dict__.get("_detail") is None

    def __getstate__(self) -> dict[str, Any]:  # pickled (bench children, caches) with its detail read
        if not self.detail_loaded:
            self.__dict__["_detail"]()
        return {k: v for k, v in self.__dict__.items() if k != "_detail"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

# Kernel kinds, named as a user reads them (and as Inductor's kernel-name prefixes say).
KIND_POINTWISE = "pointwise"
KIND_REDUCTION = "reduction"
KIND_PERSISTENT_REDUCTION = "persistent_reduction"
KIND_TEMPLATE = "template"
KIND_FOREACH = "foreach"
KIND_CPP = "cpp"
KIND_EXTERN = "extern"
KIND_OTHER = "other"

# FX graph views, in pipeline order.
FX_DYNAMO = "fx-dynamo"
FX_AOT_JOINT = "fx-aot-joint"
FX_AOT = "fx-aot"  # the forward, backward or inference graph of this Inductor graph
FX_POST_GRAD = "fx-post-grad"
FX_KINDS = (FX_DYNAMO, FX_AOT_JOINT, FX_AOT, FX_POST_GRAD)


@dataclass
class UserLine:
    """One line of user source that fed a kernel."""

    file: str
    line: int
    code: str = ""
    function: str = ""
    library: bool = False  # a frame of an installed library (transformers, timm ...), not the user's own code


@dataclass
class LaunchInfo:
    """One launch of a kernel in call(): a kernel defined once and launched once per layer keeps
    each layer's FX nodes and lines apart (from Inductor's per-call provenance debug handle)."""

    index: int  # position in call(), as Kernel.launch_index
    call_line: int | None = None
    handle: str = ""  # "name:N", Inductor's provenance debug handle
    fx_nodes: list[str] = field(default_factory=list)
    fx_nodes_pre: list[str] = field(default_factory=list)
    user_lines: list[UserLine] = field(default_factory=list)  # innermost frame of your code, per stack
    library_lines: list[UserLine] = field(default_factory=list)  # innermost library frame, per stack


@dataclass
class BufferUse:
    """A tensor a kernel launch reads or writes."""

    name: str  # the name in the output code's call(): arg0_1, buf0, primals_2 ...
    role: str  # "read", "write" or "readwrite"
    shape: list[Any] = field(default_factory=list)  # ints, or strings for symbolic sizes
    stride: list[Any] = field(default_factory=list)
    dtype: str = ""  # torch dtype name without "torch.": float32, bfloat16 ...
    bytes: int | None = None  # numel * itemsize when the shape is static, else None
    # What the kernel reads of it, from its loads (a gather's rows, a slice's extent); None: all of it.
    read_bytes: int | None = None
    read_bound: bool = False  # read_bytes is an upper bound (a gather may repeat rows)
    read_how: str = ""  # "gather", "slice"


@dataclass
class TritonVariant:
    """One compiled configuration of a Triton kernel, as found in Triton's cache."""

    cache_key: str  # the cache folder's name (a hash), kept to tell variants apart
    files: dict[str, str] = field(default_factory=dict)  # stage -> path relative to the bundle
    metadata: dict[str, Any] = field(default_factory=dict)  # Triton's <name>.json
    chosen: bool = False  # the config the autotuner picked, when known
    config: dict[str, Any] = field(default_factory=dict)  # the picked block sizes (XBLOCK ...), when known


@dataclass
class Kernel(_Lazy):
    """One kernel (or extern call) of one Inductor graph, in launch order."""

    _DETAIL = KERNEL_DETAIL

    id: str  # "<graph id>/<name>", or "<graph id>/<name>@<launch>" for extern calls
    graph: str  # Graph.id
    name: str
    kind: str
    lang: str  # "triton", "cpp" or "extern"
    launch_index: int  # position of its first launch in call()
    launches: int = 1
    source: str | None = None  # bundle-relative path of the kernel's source text
    call_line: int | None = None  # 1-based line of its (first) launch in the output code
    def_line: int | None = None  # 1-based line where the output code defines it
    call_text: str = ""
    fx_nodes: list[str] = field(default_factory=list)  # post-grad node names
    fx_nodes_pre: list[str] = field(default_factory=list)  # pre-grad (Dynamo graph) node names
    aten_ops: list[str] = field(default_factory=list)
    user_lines: list[UserLine] = field(default_factory=list)
    # Below: from the whole stack of each FX node (outermost call first), not only the target file.
    library_lines: list[UserLine] = field(default_factory=list)  # innermost library frame of each stack
    frames: list[UserLine] = field(default_factory=list)  # every kept frame of every stack (call sites too)
    launch_info: list[LaunchInfo] = field(default_factory=list)  # one per launch, in launch order
    buffers: list[BufferUse] = field(default_factory=list)
    provenance: str = ""  # where fx_nodes came from: "provenance" or "comments"
    triton: list[TritonVariant] = field(default_factory=list)
    kernel_path: str = ""  # the kernel file path Inductor wrote (normalised), for loc() matching

    # The index's figures (format 2; ``_index``, in kernel_rows.FIGURES' order) answer these while the
    # detail file is unread, else the buffers do. Inline, two lookups (a job's list asks 15,600 kernels):
    # ``_index`` first, as a loader on another thread sets the detail, ``_detail`` = None, then drops it.
    @property
    def bytes_read(self) -> int | None:
        """Bytes read per launch: what its loads reach of each buffer (a gather's rows, a slice's
        extent), else the whole buffer."""
        if (ix := self.__dict__.get("_index")) is not None and self.__dict__.get("_detail") is not None:
            return ix[0]
        return _sum_bytes(self.buffers, ("read", "readwrite"), reading=True)

    @property
    def bytes_written(self) -> int | None:
        if (ix := self.__dict__.get("_index")) is not None and self.__dict__.get("_detail") is not None:
            return ix[1]
        return _sum_bytes(self.buffers, ("write", "readwrite"))

    @property
    def bytes_bound(self) -> bool:
        """bytes_read is an upper bound (a gather reads at most its index count of rows)."""
        if (ix := self.__dict__.get("_index")) is not None and self.__dict__.get("_detail") is not None:
            return ix[2]
        return any(b.read_bound for b in self.buffers if b.role in ("read", "readwrite"))

    @property
    def node_count(self) -> int:
        """How many post-grad FX nodes it runs (len(fx_nodes)), from the index while the detail is unread."""
        if (ix := self.__dict__.get("_index")) is not None and self.__dict__.get("_detail") is not None:
            return ix[3]
        return len(self.fx_nodes)


# A detail field must not be a class attribute: the class default would answer before _Lazy.__getattr__ asks
# the detail file (dataclass __init__ keeps its own copy of each default).
for _name in KERNEL_DETAIL:
    if _name in Kernel.__dict__:
        delattr(Kernel, _name)


def _sum_bytes(buffers: list[BufferUse], roles: tuple[str, ...], reading: bool = False) -> int | None:
    total = 0
    for b in buffers:
        if b.role in roles:
            size = b.read_bytes if reading and b.read_bytes is not None else b.bytes
            if size is None:
                return None
            total += size
    return total


@dataclass
class Graph(KernelIdsFromFile, _Lazy):
    """One Inductor graph: a forward, backward or inference graph of one Dynamo compile."""

    _DETAIL = GRAPH_DETAIL

    id: str  # "0-0-forward": frame id, frame compile id, AOT kind
    compile_id: str  # "0/0" as torch prints it
    kind: str  # "forward", "backward" or "inference"; "dynamo": a Dynamo graph with no generated code (no_code)
    files: dict[str, str] = field(default_factory=dict)  # FX kind or "output_code" -> path
    kernel_ids: list[str] = field(default_factory=list)  # launch order
    code_name: str = ""  # the Python function Dynamo compiled
    code_file: str = ""
    code_line: int | None = None
    # Where the compile came from: the innermost line of the user's code on the stack that reached the
    # compiled frame ({file, line, function, code}); for a captured function, that function itself.
    call_site: dict[str, Any] = field(default_factory=dict)
    # Dynamic shapes: [{name: "s77", source: "L['x'].size()[0]", hint: 64, range: "[2, int_oo]", file, line, code}]
    symbols: list[dict[str, Any]] = field(default_factory=list)
    # The capture's calls this graph ran: [{call: 0-based index, inputs: ["f32[64, 1024]"], values: {"s77": 64}}]
    calls: list[dict[str, Any]] = field(default_factory=list)
    # Dynamo's guards: [{group, kind, text, source, file, line, code}], group: tensor match, shape, global state,
    # module attributes or other
    guards: list[dict[str, Any]] = field(default_factory=list)
    # CUDA graphs: {status: recorded | skipped | unknown | n/a, reason}
    cudagraphs: dict[str, Any] = field(default_factory=dict)
    # Format 2: this graph's not-fused pairs (extra["fusion"]["pairs"] of a bundle built in memory or read
    # from format 1, where they are listed for the whole bundle): see report/why.py fusion_data.
    fusion_pairs: list[dict[str, Any]] = field(default_factory=list)
    # The whole stack that reached the compiled frame, outermost first ({file, line, function, code, kind}:
    # kind "user", "library" or "skip" as ingest/fx.frame_kind says).
    call_stack: list[dict[str, Any]] = field(default_factory=list)
    # A graph with no generated code (kind "dynamo": ingest/frames.py): why it has no kernels, in a line
    # ("backend aot_eager ...", "compile failed"), and a failed compile's exception {type, message, file,
    # line, function, code}: the user line it points at.
    no_code: str = ""
    failure: dict[str, Any] = field(default_factory=dict)

    def compiled_from(self) -> str:
        """``train.py:14  loss = model(x).loss``: where the compile came from ('' when the trace did not say)."""
        site = self.call_site if isinstance(self.call_site, dict) else {}
        file, line = str(site.get("file") or ""), site.get("line")
        if not file:
            return ""
        where = file.replace("\\", "/").rsplit("/", 1)[-1] + (f":{line}" if line is not None else "")
        code = str(site.get("code") or "")
        return f"{where}  {code}" if code else where

    def called_elsewhere(self) -> bool:
        """Whether the compile came from a line other than the compiled function's own (a script's call)."""
        site = self.call_site if isinstance(self.call_site, dict) else {}
        return bool(site.get("file")) and (site.get("file"), site.get("line")) != (self.code_file, self.code_line)


@dataclass
class GraphBreak(_Lazy):
    """A graph break Dynamo reported: why, and where in the user's source. A format-3 bundle keeps the
    whole message in sections/graph_break_details.json, read when a break's ``detail`` is first asked for."""

    _DETAIL = ("detail",)

    reason: str  # the one-line reason
    detail: str = ""  # the whole message torch printed
    file: str = ""
    line: int | None = None
    code: str = ""
    compile_id: str = ""


del GraphBreak.detail  # see Kernel: a class default would answer before the side file is read


@dataclass
class Recompile:
    """A recompile of a frame: which compile, and the guard that failed."""

    compile_id: str
    reason: str
    file: str = ""
    line: int | None = None
    # The guard that failed: {compile_id, graph, group, kind, text, source, file, line, code, expected, actual}
    guard: dict[str, Any] = field(default_factory=dict)


@dataclass
class AutotuneChoice:
    """One candidate an autotuned op was timed with."""

    name: str  # triton_mm_4, mm, bias_addmm ...
    time_ms: float | None
    percent: float | None
    config: str = ""


@dataclass
class AutotuneResult:
    """An autotuned op (its shape, strides, dtypes) and the candidates timed for it."""

    op: str  # "mm(32x512, 512x512)"
    strides: str = ""
    dtypes: str = ""
    choices: list[AutotuneChoice] = field(default_factory=list)  # fastest first
    summary: str = ""


@dataclass
class Bundle(KernelsFromFile):
    """Everything one capture learned. ``root`` is the folder it was read from (not stored)."""

    schema: str = SCHEMA_NAME
    version: int = SCHEMA_VERSION
    status: str = "ok"  # "ok" or "failed"
    error: str = ""  # one line, when failed
    error_kind: str = ""
    target: dict[str, Any] = field(default_factory=dict)  # spec, file, function, args
    options: dict[str, Any] = field(default_factory=dict)  # mode, dynamic, fullgraph, backward, device
    environment: dict[str, Any] = field(default_factory=dict)  # versions, device, capability
    timings: dict[str, float] = field(default_factory=dict)  # phase -> seconds
    source: dict[str, Any] = field(default_factory=dict)  # path, file, first_line, last_line
    graphs: list[Graph] = field(default_factory=list)
    kernels: list[Kernel] = field(default_factory=list)
    graph_breaks: list[GraphBreak] = field(default_factory=list)
    recompiles: list[Recompile] = field(default_factory=list)
    autotune: list[AutotuneResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. why Triton stages are absent
    files: dict[str, str] = field(default_factory=dict)  # other texts: stdout, stderr, log
    extra: dict[str, Any] = field(default_factory=dict)  # later features (bench results ...)
    root: str = field(default="", compare=False, repr=False)

    @property
    def preview(self) -> dict[str, Any] | None:
        """``{"arch": "sm_90", "device_name": ...}`` for a ``--preview`` capture (generated for a GPU
        this machine did not have, never run), else None. Old bundles have none."""
        p = self.environment.get("preview")
        return p if isinstance(p, dict) and p.get("arch") else None

    def section(self, name: str) -> Any:
        """``extra[name]`` (``compile_time``: a job's compile-time rows), read from the bundle's side file on
        first use when a format-3 reader left it there (bundle/shards.py); None when the bundle has none."""
        if name not in self.extra:
            loader = self.__dict__.get("_sides")
            if loader is not None:
                loader.load(name)
        return self.extra.get(name)

    def __getstate__(self) -> dict[str, Any]:  # pickled with its side files read (their loader holds a lock)
        loader = self.__dict__.get("_sides")
        if loader is not None:
            loader.load_all()
        self.kernels  # noqa: B018 (format 5: the kernel file read, so the copy has them; see lazy_kernels)
        return {k: v for k, v in self.__dict__.items() if k not in ("_sides", "_kernel_file", "_line_tables")}

    def section_unread(self, name: str) -> bool:
        """Whether ``section(name)`` would read a side file now (a view may show the rest first)."""
        loader = self.__dict__.get("_sides")
        return name not in self.extra and loader is not None and loader.has(name)

    def kernel(self, key: str) -> Kernel:
        """The kernel ``key`` names: its id, its name, else the one kernel whose name holds ``key``
        (``add_relu``), as ``/`` in the kernel list finds one (bundle/kernel_match.py). NotInBundle, one
        line, when several answer (some of them named) or none (the closest names)."""
        from kernelscope.bundle import kernel_match  # difflib and the rules load on a lookup, not on import

        found = kernel_match.matching(self.kernels, key)
        if len(found) == 1:
            return found[0]
        if not found:
            raise NotInBundle(kernel_match.not_found_line(self.kernels, key))
        raise NotInBundle(kernel_match.ambiguous_line(found, key))

    def source_files(self) -> list[dict[str, Any]]:
        """The source files the bundle copied (your files first, then library files): each a dict
        with ``file`` (the path at capture time), ``path`` (relative to the bundle), ``name`` (to
        show), ``library``; older bundles: the target file alone."""
        files = self.source.get("files")
        if files:
            return list(files)
        if self.source.get("path"):
            name = self.source["path"].removeprefix("source/")
            return [{"file": self.source.get("file", ""), "path": self.source["path"], "name": name, "library": False}]
        return []

    def source_entry(self, file: str) -> dict[str, Any] | None:
        """The copied file for a frame's ``file`` (its path at capture time), or None."""
        for entry in self.source_files():
            if entry.get("file") == file:
                return entry
        return None

    def graph(self, graph_id: str) -> Graph:
        for g in self.graphs:
            if g.id == graph_id:
                return g
        raise NotInBundle(f"no graph {graph_id!r}; graphs: " + ", ".join(g.id for g in self.graphs))


_PLAIN_TYPES = (str, int, float, bool, type(None))
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def to_dict(obj: Any) -> Any:
    """JSON-ready dict of a model object (drops ``root``)."""
    cls = obj.__class__
    if cls in _PLAIN_TYPES:
        return obj
    if cls is list:
        return [x if x.__class__ in _PLAIN_TYPES else to_dict(x) for x in obj]
    if cls is dict:
        return {k: v if v.__class__ in _PLAIN_TYPES else to_dict(v) for k, v in obj.items()}
    names = _FIELD_NAMES.get(cls)
    if names is None:
        if not dataclasses.is_dataclass(obj):
            return obj
        names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.name != "root")
    out = {}
    for name in names:
        v = getattr(obj, name)
        out[name] = v if v.__class__ in _PLAIN_TYPES else to_dict(v)
    return out
