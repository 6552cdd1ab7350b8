"""Reading Inductor's output code (what ``TORCH_LOGS=output_code`` prints), without torch.

The output code is a Python module: kernels are defined at module level
(``async_compile.triton(...)``, ``async_compile.cpp_pybinding(...)``) and launched in order from
``call()``, each launch preceded by comments naming the FX nodes it fuses. We parse it with ``ast``
(it is always valid Python) and read the comments from the lines above each launch.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from kernelscope.bundle.model import (
    KIND_CPP,
    KIND_EXTERN,
    KIND_FOREACH,
    KIND_OTHER,
    KIND_PERSISTENT_REDUCTION,
    KIND_POINTWISE,
    KIND_REDUCTION,
    KIND_TEMPLATE,
    BufferUse,
)
from kernelscope.ingest import bytes_model
from kernelscope.ingest.dtypes import DTYPE_BYTES, buffer_bytes

_SOURCE_NODES = re.compile(r"#\s*Topologically Sorted Source Nodes: \[(.*?)\], Original ATen: \[(.*?)\]")
_HANDLES = re.compile(r"#\s*\[Provenance debug handles\]\s*(.+)")
_KERNEL_PATH = re.compile(r"#\s*kernel path:\s*(\S+)")
_AOT_ID = re.compile(r"#\s*AOT ID:\s*\['([^']*)'\]")


def kind_of(name: str, lang: str) -> str:
    """The fusion kind a kernel's name says (Inductor's naming convention)."""
    if lang == "extern":
        return KIND_EXTERN
    if lang == "cpp":
        return KIND_CPP
    prefixes = (
        ("triton_poi_", KIND_POINTWISE),
        ("triton_red_", KIND_REDUCTION),
        ("triton_per_", KIND_PERSISTENT_REDUCTION),
        ("triton_tem_", KIND_TEMPLATE),
        ("triton_for_", KIND_FOREACH),
        ("triton_mm", KIND_TEMPLATE),
        ("triton_bmm", KIND_TEMPLATE),
    )
    for prefix, kind in prefixes:
        if name.startswith(prefix):
            return kind
    return KIND_OTHER


@dataclass
class KernelDef:
    name: str
    lang: str  # "triton" or "cpp"
    source: str
    def_line: int
    kernel_path: str = ""
    signature: list[tuple[str, str]] = field(default_factory=list)  # (arg name, type)
    comment_nodes: list[str] = field(default_factory=list)
    comment_aten: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)


@dataclass
class Launch:
    name: str  # kernel name, or "extern_kernels.mm" / "torch.ops.aten.x.default"
    lang: str  # "triton", "cpp" or "extern"
    line: int  # 1-based line in the output code
    text: str
    args: list[Any] = field(default_factory=list)  # arg descriptions: ("buf", name, view) or ("lit", value)
    out: list[str] = field(default_factory=list)  # out= buffer names for extern calls
    handle: str = ""  # provenance debug handle "name:N"
    comment_nodes: list[str] = field(default_factory=list)
    comment_aten: list[str] = field(default_factory=list)
    buffers: list[BufferUse] = field(default_factory=list)


@dataclass
class OutputCode:
    text: str
    aot_id: str = ""
    defs: dict[str, KernelDef] = field(default_factory=dict)
    launches: list[Launch] = field(default_factory=list)
    buffers: dict[str, tuple[list[Any], list[Any], str]] = field(default_factory=dict)  # name -> shape, stride, dtype
    items: dict[str, list[str]] = field(default_factory=dict)  # an extern op's tuple result -> the buffers taken from it


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return ast.unparse(node)


def _dims(node: ast.AST) -> list[Any]:
    if isinstance(node, ast.Tuple):
        out = []
        for elt in node.elts:
            value = _literal(elt)
            out.append(value if isinstance(value, int) else str(value))
        return out
    return []


_STREAM_LINE = re.compile(r"^\s*stream\d+ = get_raw_stream\(")


def _comments_above(lines: list[str], lineno: int) -> list[str]:
    """The comment block right above a statement (a launch's stream set-up line is skipped)."""
    out = []
    i = lineno - 2
    while i >= 0 and _STREAM_LINE.match(lines[i]):
        i -= 1
    while i >= 0 and lines[i].strip().startswith("#"):
        out.append(lines[i].strip())
        i -= 1
    return list(reversed(out))


def _parse_comment_block(block: list[str]) -> tuple[list[str], list[str], str, str]:
    nodes: list[str] = []
    aten: list[str] = []
    handle = ""
    path = ""
    for c in block:
        m = _SOURCE_NODES.search(c)
        if m:
            nodes = [n.strip() for n in m.group(1).split(",") if n.strip()]
            aten = [a.strip() for a in m.group(2).split(",") if a.strip()]
        m = _HANDLES.search(c)
        if m:
            handle = m.group(1).strip().split(",")[0].strip()
        m = _KERNEL_PATH.search(c)
        if m:
            path = m.group(1)
    return nodes, aten, handle, path


def _triton_signature(source: str) -> list[tuple[str, str]]:
    m = re.search(r"'signature':\s*\{([^}]*)\}", source)
    if not m:
        return []
    return re.findall(r"'(\w+)':\s*'([^']*)'", m.group(1))


def _cpp_signature(source: str, types: list[str]) -> list[tuple[str, str]]:
    m = re.search(r'extern "C"\s+\w+\s+kernel\(([^)]*)\)', source)
    names = []
    if m:
        for part in m.group(1).split(","):
            words = part.replace("*", " ").split()
            if words:
                names.append(words[-1])
    if len(names) != len(types):
        names = [f"arg{i}" for i in range(len(types))]
    return list(zip(names, types))


def _role(arg_name: str, arg_type: str, lang: str) -> str:
    if lang == "cpp":
        if arg_type.startswith("const"):
            return "read"
        return "readwrite" if arg_name.startswith("in_out") else "write"
    if arg_name.startswith("in_out"):
        return "readwrite"
    if arg_name.startswith("out"):
        return "write"
    return "read"


def parse_output_code(text: str, placeholders: dict[str, tuple[list[Any], list[Any], str]] | None = None) -> OutputCode:
    """Kernels, launches (in order) and buffers of one graph's output code."""
    code = OutputCode(text=text)
    m = _AOT_ID.search(text)
    if m:
        code.aot_id = m.group(1)
    lines = text.split("\n")
    tree = ast.parse(text)
    buffers = code.buffers
    for name, spec in (placeholders or {}).items():
        buffers[name] = spec
    call_fn: ast.FunctionDef | None = None
    partitions: dict[int, ast.FunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = _dotted(node.value.func)
            target = node.targets[0]
            if not isinstance(target, ast.Name):
                continue
            if func == "async_compile.triton" and len(node.value.args) >= 2:
                src = _literal(node.value.args[1])
                block = _comments_above(lines, node.lineno)
                nodes, aten, _, path = _parse_comment_block(block)
                code.defs[target.id] = KernelDef(
                    name=target.id, lang="triton", source=str(src), def_line=node.lineno, kernel_path=path,
                    signature=_triton_signature(str(src)), comment_nodes=nodes, comment_aten=aten, comments=block,
                )
            elif func == "async_compile.cpp_pybinding" and len(node.value.args) >= 2:
                types = _literal(node.value.args[0])
                src = str(_literal(node.value.args[1]))
                block = _comments_above(lines, node.lineno)
                nodes, aten, _, path = _parse_comment_block(block)
                code.defs[target.id] = KernelDef(
                    name=target.id, lang="cpp", source=src, def_line=node.lineno, kernel_path=path,
                    signature=_cpp_signature(src, list(types) if isinstance(types, list) else []),
                    comment_nodes=nodes, comment_aten=aten, comments=block,
                )
        if isinstance(node, ast.FunctionDef) and node.name == "call":
            call_fn = node
        if isinstance(node, ast.FunctionDef) and re.fullmatch(r"partition_\d+", node.name):
            partitions[int(node.name.split("_")[1])] = node
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "call":
                    call_fn = item
    if call_fn is not None:
        _visit_body(call_fn.body, code, lines, partitions)
    _size_tuple_outputs(code)
    return code


def _size_tuple_outputs(code: OutputCode) -> None:
    """An extern op that returns a tuple (attention: out, logsumexp ...) writes the items the code
    takes from it (``buf4 = buf3[0]``), sized by their assert_size_stride."""
    for launch in code.launches:
        if launch.lang != "extern":
            continue
        new: list[BufferUse] = []
        for use in launch.buffers:
            items = code.items.get(use.name) if use.role == "write" and use.bytes is None else None
            if items:
                new += [_use(item, "write", None, code) for item in items if item in code.buffers]
            else:
                new.append(use)
        launch.buffers = new


def _partition_index(stmt: ast.stmt) -> int | None:
    """i when the statement runs ``self.partitions[i](...)`` (CUDA-graph partitions)."""
    value = getattr(stmt, "value", None)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Subscript):
        if _dotted(value.func.value).endswith("partitions"):
            index = _literal(value.func.slice)
            return index if isinstance(index, int) else None
    return None


def _visit_body(body: list[ast.stmt], code: OutputCode, lines: list[str], partitions: dict[int, ast.FunctionDef]) -> None:
    for stmt in _walk_statements(body):
        index = _partition_index(stmt)
        if index is not None and index in partitions:
            _visit_body(partitions.pop(index).body, code, lines, partitions)
            continue
        _visit_statement(stmt, code, lines)


def _walk_statements(body: list[ast.stmt]):
    for stmt in body:
        yield stmt
        for attr in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, attr, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield from _walk_statements(inner)


def _arg_desc(node: ast.AST) -> tuple:
    if isinstance(node, ast.Name):
        return ("buf", node.id, None)
    if isinstance(node, ast.Call) and _dotted(node.func) == "reinterpret_tensor" and node.args:
        base = node.args[0]
        if isinstance(base, ast.Name):
            view = (_dims(node.args[1]), _dims(node.args[2])) if len(node.args) >= 3 else None
            return ("buf", base.id, view)
    return ("lit", _literal(node))


def _visit_statement(stmt: ast.stmt, code: OutputCode, lines: list[str]) -> None:
    buffers = code.buffers
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
        target = stmt.targets[0].id
        value = stmt.value
        if isinstance(value, ast.Name) and value.id in buffers:  # buf1 = buf0; del buf0  # reuse
            buffers[target] = buffers[value.id]
            return
        if isinstance(value, ast.Subscript):  # buf4 = buf3[0]: one output of a multi-output extern op
            if isinstance(value.value, ast.Name):
                code.items.setdefault(value.value.id, []).append(target)
                producer = next((launch for launch in reversed(code.launches) if value.value.id in launch.out), None)
                first = next((u for u in (producer.buffers if producer else []) if u.role == "read" and u.dtype), None)
                buffers[target] = ([], [], first.dtype if first else "")  # sized by the assert that follows
            return
        if isinstance(value, ast.Call):
            func = _dotted(value.func)
            if func.startswith("empty_strided") and len(value.args) >= 3:
                dtype = _dotted(value.args[2]).replace("torch.", "")
                buffers[target] = (_dims(value.args[0]), _dims(value.args[1]), dtype)
                return
            if func == "reinterpret_tensor" and value.args and isinstance(value.args[0], ast.Name):
                base = buffers.get(value.args[0].id)
                if base and len(value.args) >= 3:
                    buffers[target] = (_dims(value.args[1]), _dims(value.args[2]), base[2])
                return
            _record_launch(value, stmt, code, lines, assigned=target)
        return
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        call = stmt.value
        func = _dotted(call.func)
        if func == "assert_size_stride" and len(call.args) >= 3 and isinstance(call.args[0], ast.Name):
            name = call.args[0].id
            known = buffers.get(name)
            dtype = known[2] if known else ""
            buffers[name] = (_dims(call.args[1]), _dims(call.args[2]), dtype)
            return
        _record_launch(call, stmt, code, lines)


def _record_launch(call: ast.Call, stmt: ast.stmt, code: OutputCode, lines: list[str], assigned: str = "") -> None:
    func = _dotted(call.func)
    lang = ""
    name = func
    if func.endswith(".run") and func[: -len(".run")] in code.defs:
        name = func[: -len(".run")]
        lang = code.defs[name].lang
    elif func in code.defs:
        lang = code.defs[func].lang
    elif func.startswith("extern_kernels.") or func.startswith("torch.ops.") or func.startswith("aten."):
        lang = "extern"
    if not lang:
        return
    nodes, aten, handle, _ = _parse_comment_block(_comments_above(lines, stmt.lineno))
    launch = Launch(
        name=name, lang=lang, line=stmt.lineno, text=lines[stmt.lineno - 1].strip(),
        args=[_arg_desc(a) for a in call.args], handle=handle, comment_nodes=nodes, comment_aten=aten,
    )
    for kw in call.keywords:
        if kw.arg == "out" and isinstance(kw.value, ast.Name):
            launch.out.append(kw.value.id)
    if assigned:
        launch.out.append(assigned)
    launch.buffers = _launch_buffers(launch, code)
    code.launches.append(launch)


def _use(name: str, role: str, view, code: OutputCode) -> BufferUse:
    shape, stride, dtype = code.buffers.get(name, ([], [], ""))
    if view:
        shape, stride = view
    # a stride-0 dimension (expand) is the same elements again: counted once
    distinct = [d for i, d in enumerate(shape) if not (i < len(stride) and stride[i] == 0)]
    return BufferUse(name=name, role=role, shape=list(shape), stride=list(stride), dtype=dtype,
                     bytes=buffer_bytes(distinct, dtype) if shape or dtype else None)


def _launch_buffers(launch: Launch, code: OutputCode) -> list[BufferUse]:
    uses: list[BufferUse] = []
    if launch.lang == "extern":
        for desc in launch.args:
            if desc[0] == "buf" and desc[1] in code.buffers:
                uses.append(_use(desc[1], "read", desc[2], code))
        for name in launch.out:
            # An extern op that returns its result (no out=) writes a buffer the code never sized.
            uses.append(_use(name, "write", None, code) if name in code.buffers else
                        BufferUse(name=name, role="write", bytes=None))
        return uses
    kdef = code.defs[launch.name]
    pointer_args = [(n, t) for n, t in kdef.signature if t.startswith("*") or t.endswith("*")]
    if kdef.lang == "triton":
        pointer_args = [(n, t) for n, t in kdef.signature if t.startswith("*")]
        # The launch passes every argument but the block sizes (XBLOCK, R0_BLOCK: constexpr and upper
        # case); a numel that Inductor made constexpr (xnumel=1) is still passed.
        positional = [n for n, t in kdef.signature if not (t == "constexpr" and n.isupper())]
        if len(positional) != len(launch.args):
            positional = [n for n, t in kdef.signature if t != "constexpr"]
        by_name = dict(zip(positional, launch.args))
    else:
        by_name = dict(zip([n for n, _ in kdef.signature], launch.args))
    by_ptr: dict[str, BufferUse] = {}
    for arg_name, arg_type in pointer_args:
        desc = by_name.get(arg_name)
        if desc and desc[0] == "buf":
            use = _use(desc[1], _role(arg_name, arg_type, kdef.lang), desc[2], code)
            uses.append(use)
            by_ptr[arg_name] = use
    _honest_reads(kdef, by_name, by_ptr)
    return uses


def _honest_reads(kdef: KernelDef, by_name: dict[str, tuple], by_ptr: dict[str, BufferUse]) -> None:
    """Set read_bytes on the buffers the kernel reads only part of (a gather's rows, a slice)."""
    numels = {n: d[1] for n, d in by_name.items() if n.endswith("numel") and d[0] == "lit" and isinstance(d[1], int)}
    index_elements = {p: u.bytes // DTYPE_BYTES[u.dtype] for p, u in by_ptr.items()
                      if u.bytes is not None and u.dtype in DTYPE_BYTES}
    try:
        accesses = bytes_model.reads(kdef.source, kdef.lang, numels, index_elements)
    except (ValueError, RecursionError):
        return
    for ptr, access in accesses.items():
        use = by_ptr.get(ptr)
        if use is None or use.bytes is None or use.dtype not in DTYPE_BYTES:
            continue
        read = access.elements * DTYPE_BYTES[use.dtype]
        if read < use.bytes:
            use.read_bytes, use.read_bound, use.read_how = read, access.bound, access.how
