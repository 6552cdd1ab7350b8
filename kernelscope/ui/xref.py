"""Cross-references inside one bundle: kernel <-> FX node lines <-> user lines <-> output code lines.

Pure (no Textual): every view asks this index which of its lines belong to a kernel, and which
kernels a line of its own leads to. Texts and parsed FX graphs are read once, when first asked for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import chain
from operator import attrgetter

from kernelscope.bundle.io import BundleError, inside, read_text
from kernelscope.bundle.model import FX_AOT, FX_AOT_JOINT, FX_DYNAMO, FX_POST_GRAD, Bundle, Graph, Kernel
from kernelscope.ingest.fx import FxNode, fx_nodes
from kernelscope.units import base_name

FX_TITLES = {FX_DYNAMO: "Dynamo", FX_AOT_JOINT: "AOT joint", FX_AOT: "AOT", FX_POST_GRAD: "post-grad"}


def fx_title(graph: Graph, kind: str) -> str:
    """An FX view's name for this graph: torch.export's and AOTInductor's first graph is the exported program."""
    if kind == FX_DYNAMO and (graph.kind == "export" or graph.id.startswith("aoti-")):
        return "exported program"
    return FX_TITLES[kind]
FX_ORDER = (FX_DYNAMO, FX_AOT_JOINT, FX_AOT, FX_POST_GRAD)

KIND_TAGS = {
    "pointwise": "poi", "reduction": "red", "persistent_reduction": "per", "template": "tpl",
    "foreach": "for", "cpp": "cpp", "extern": "ext", "other": "oth",
}


_FX_ANNOTATION = re.compile(r'^(\s*\w+): "[^"]*"(?=\s*=)')
_FX_DELETES = re.compile(r";\s+(?:\w+ = )+None\s*$")


def compact_fx(text: str) -> str:
    """An FX graph without type annotations, ``torch.ops.`` and ``x = None`` deletions, line for line
    (so line numbers, marks and node lookups stay valid)."""
    out = []
    for line in text.split("\n"):
        line = _FX_ANNOTATION.sub(r"\1", line)
        line = _FX_DELETES.sub("", line).replace("torch.ops.aten.", "aten.").replace("torch.ops.", "")
        out.append(line)
    return "\n".join(out)




def same_file(a: str, b: str) -> bool:
    return bool(a) and bool(b) and (a == b or base_name(a) == base_name(b))


@dataclass
class SourceRow:
    """One row of the user-source view: the file and line it shows."""

    file: str
    line: int
    code: str


@dataclass
class SourceText:
    """What the user-source view shows: a copy of the file, or the lines the compiler recorded."""

    text: str
    rows: list[SourceRow]  # one per line of ``text``
    copied: bool  # True: the bundle holds a copy of the user's file
    file: str  # the user's file as the capture saw it
    first_line: int | None = None
    last_line: int | None = None


class BundleIndex:
    """Lazy lookups between a bundle's kernels and the lines of its texts."""

    def __init__(self, bundle: Bundle):
        self.bundle = bundle
        self._texts: dict[str, str] = {}
        self._fx: dict[tuple[str, str], list[FxNode]] = {}
        self._source: SourceText | None = None
        self._source_file: str | None = None  # the file the source view shows (None: the target's)
        self._call_start: dict[str, int] = {}
        # Per kernel, computed once (moving through a model's kernels asks again and again).
        self._fx_lines: dict[tuple[str, str, str], list[int]] = {}
        self._output_lines: dict[str, list[int]] = {}
        self._order: tuple[tuple, list[Kernel], dict[int, int]] | None = None  # see kernels_in_order

    # -- texts ---------------------------------------------------------------------------------
    def text(self, relpath: str | None) -> str:
        if not relpath:
            return ""
        if relpath not in self._texts:
            self._texts[relpath] = read_text(self.bundle, relpath)
        return self._texts[relpath]

    def text_bytes(self, relpath: str | None) -> int:
        """The size of a file in the bundle (0 when absent or unreadable), without reading it."""
        if not relpath:
            return 0
        try:
            return inside(self.bundle.root, relpath).stat().st_size
        except (BundleError, OSError):
            return 0

    def graph_text(self, graph: Graph, what: str) -> str:
        return self.text(graph.files.get(what))

    def kernels_in_order(self) -> list[Kernel]:
        """Kernels graph by graph, each graph's in launch order (worked out once per list of kernels: a job's
        thousands are asked for at start and on each step; callers read it, never change it)."""
        b = self.bundle
        key = (id(b.kernels), len(b.kernels), id(b.graphs), len(b.graphs))
        if self._order is None or self._order[0] != key:
            order = self._kernels_in_order()
            self._order = (key, order, {id(k): i for i, k in enumerate(order)})
        return self._order[1]

    def kernel_position(self, kernel: Kernel | None) -> int | None:
        """Where ``kernel`` is in ``kernels_in_order`` (None when it is not there)."""
        self.kernels_in_order()
        return None if kernel is None else self._order[2].get(id(kernel))

    def _kernels_in_order(self) -> list[Kernel]:
        kernels = self.bundle.kernels
        if self.bundle.listed_in_launch_order():
            return list(kernels)  # a format-5 kernel file, written so
        if list(map(attrgetter("id"), kernels)) == list(chain.from_iterable(map(attrgetter("kernel_ids"),
                                                                                 self.bundle.graphs))):
            return list(kernels)  # listed graph by graph already (as every bundle written lists them)
        by_id = {k.id: k for k in self.bundle.kernels}
        out: list[Kernel] = []
        seen: set[str] = set()
        for g in self.bundle.graphs:
            for kid in g.kernel_ids:
                k = by_id.get(kid)
                if k is not None and kid not in seen:
                    out.append(k)
                    seen.add(kid)
        out.extend(k for k in self.bundle.kernels if k.id not in seen)
        return out

    # -- FX graphs -------------------------------------------------------------------------------
    def fx_nodes(self, graph: Graph, fx_kind: str) -> list[FxNode]:
        key = (graph.id, fx_kind)
        if key not in self._fx:
            self._fx[key] = fx_nodes(self.graph_text(graph, fx_kind))
        return self._fx[key]

    @staticmethod
    def kernel_node_names(kernel: Kernel, fx_kind: str) -> list[str]:
        return kernel.fx_nodes_pre if fx_kind == FX_DYNAMO else kernel.fx_nodes

    def fx_lines_for_kernel(self, kernel: Kernel, graph: Graph, fx_kind: str) -> list[int]:
        """1-based lines of ``graph``'s FX text that define the kernel's nodes."""
        key = (kernel.id, graph.id, fx_kind)
        if key not in self._fx_lines:
            names = set(self.kernel_node_names(kernel, fx_kind))
            if not names or (kernel.graph != graph.id and fx_kind not in (FX_DYNAMO, FX_AOT_JOINT)):
                self._fx_lines[key] = []
            else:
                self._fx_lines[key] = [n.line for n in self.fx_nodes(graph, fx_kind) if n.name in names]
        return list(self._fx_lines[key])

    def fx_node_at(self, graph: Graph, fx_kind: str, line: int) -> FxNode | None:
        for n in self.fx_nodes(graph, fx_kind):
            if n.line == line:
                return n
        return None

    def kernels_for_fx_line(self, graph: Graph, fx_kind: str, line: int) -> list[Kernel]:
        """Kernels that computed the node defined on ``line``: this graph's first, then its siblings'."""
        node = self.fx_node_at(graph, fx_kind, line)
        if node is None:
            return []
        siblings = [g for g in self.bundle.graphs if g.compile_id == graph.compile_id and g.id != graph.id]
        graphs = [graph] + (siblings if fx_kind in (FX_DYNAMO, FX_AOT_JOINT) else [])
        out = []
        for g in graphs:
            out += [k for k in self.bundle.kernels_of(g.id) if node.name in self.kernel_node_names(k, fx_kind)]
        return out

    # -- user source -----------------------------------------------------------------------------
    def source(self) -> SourceText:
        if self._source is None:
            self._source = self._build_source()
        return self._source

    def source_files(self) -> list[dict]:
        """The copied source files: yours first (the target's first of those), then library files."""
        return self.bundle.source_files()

    @property
    def source_file(self) -> str:
        return self._source_file or (self.bundle.source or {}).get("file") or self.bundle.target.get("file") or ""

    def set_source_file(self, file: str) -> bool:
        """Show ``file`` (a frame's path at capture time) in the source view; False if not copied."""
        if self.bundle.source_entry(file) is None:
            return False
        if file != self.source_file or self._source is None:
            self._source_file = file
            self._source = None
        return True

    @staticmethod
    def kernel_lines(kernel: Kernel):
        """Every line a kernel came from: innermost lines and the call sites above them."""
        return [*kernel.user_lines, *kernel.library_lines, *kernel.frames]

    def files_for_kernel(self, kernel: Kernel | None) -> dict[str, int]:
        """Copied file -> how many of its lines the kernel came from."""
        out: dict[str, int] = {}
        if kernel is None:
            return out
        for entry in self.source_files():
            lines = {u.line for u in self.kernel_lines(kernel) if u.file == entry["file"]}
            if lines:
                out[entry["file"]] = len(lines)
        return out

    def home_file(self, kernel: Kernel) -> str | None:
        """The copied file of the kernel's innermost line of your code (else its library line)."""
        for u in [*kernel.user_lines, *kernel.library_lines]:
            if self.bundle.source_entry(u.file) is not None:
                return u.file
        return None

    def _build_source(self) -> SourceText:
        src = self.bundle.source or {}
        entry = self.bundle.source_entry(self._source_file) if self._source_file else None
        if entry is None and not src.get("path"):  # a run's script: copied among the files, not as a target's
            entry = self.bundle.source_entry(self.bundle.target.get("file") or "")
            yours = [e for e in self.source_files() if not e.get("library")]
            if entry is None and len(yours) == 1:  # `run -- torchrun ... train.py`: the one file of yours
                entry = yours[0]
        if entry is not None and entry.get("file") != src.get("file"):
            text = self.text(entry["path"])
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            rows = [SourceRow(entry["file"], i + 1, code) for i, code in enumerate(lines)]
            return SourceText(text, rows, True, entry["file"])
        user_file = src.get("file") or self.bundle.target.get("file") or ""
        text = self.text(src.get("path")) if src.get("path") else ""
        if text:
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            rows = [SourceRow(user_file, i + 1, code) for i, code in enumerate(lines)]
            return SourceText(text, rows, True, user_file, src.get("first_line"), src.get("last_line"))
        # No copy of the file (a bundle opened from someone's TORCH_TRACE): show the recorded lines.
        recorded: dict[tuple[str, int], str] = {}
        for u in self.bundle.recorded_lines():
            recorded.setdefault((u.file, u.line), u.code)
        for gb in self.bundle.graph_breaks:
            if gb.file and gb.line:
                recorded.setdefault((gb.file, gb.line), gb.code)
        for r in self.bundle.recompiles:
            if r.file and r.line:
                recorded.setdefault((r.file, r.line), "")
        rows = [SourceRow(f, ln, code) for (f, ln), code in sorted(recorded.items())]
        files = sorted({r.file for r in rows})
        return SourceText("\n".join(r.code for r in rows) + ("\n" if rows else ""), rows, False,
                          files[0] if len(files) == 1 else user_file)

    def source_row(self, file: str, line: int | None) -> int | None:
        """0-based row of the user-source view that shows ``file:line``."""
        if not line:
            return None
        src = self.source()
        if src.copied:
            exact = len(self.source_files()) > 1  # several files: by full path (two model.py may differ)
            if (file == src.file if exact else same_file(file, src.file)) and 1 <= line <= len(src.rows):
                return line - 1
            return None
        for i, r in enumerate(src.rows):
            if r.line == line and same_file(r.file, file):
                return i
        return None

    def source_rows_for_kernel(self, kernel: Kernel) -> list[int]:
        rows = (self.source_row(u.file, u.line) for u in self.kernel_lines(kernel))
        return sorted({r for r in rows if r is not None})

    def kernels_for_source_row(self, row: int) -> list[Kernel]:
        src = self.source()
        if not 0 <= row < len(src.rows):
            return []
        r = src.rows[row]
        exact = src.copied and len(self.source_files()) > 1
        return [k for k in self.kernels_in_order()
                if any(u.line == r.line and (u.file == r.file if exact else same_file(u.file, r.file))
                       for u in self.kernel_lines(k))]

    # -- output code -----------------------------------------------------------------------------
    def _call_def_line(self, graph: Graph) -> int:
        if graph.id not in self._call_start:
            start = 0
            for i, line in enumerate(self.graph_text(graph, "output_code").split("\n"), start=1):
                if line.startswith("def call(") or line.lstrip().startswith("def call("):
                    start = i
                    break
            self._call_start[graph.id] = start
        return self._call_start[graph.id]

    def output_lines_for_kernel(self, kernel: Kernel) -> list[int]:
        """1-based output-code lines of the kernel's launches (and its definition line)."""
        if kernel.id not in self._output_lines:
            self._output_lines[kernel.id] = self._find_output_lines(kernel)
        return list(self._output_lines[kernel.id])

    def _find_output_lines(self, kernel: Kernel) -> list[int]:
        graph = self.bundle.graph(kernel.graph)
        lines = {x for x in (kernel.call_line, kernel.def_line) if x}
        if kernel.lang != "extern" and kernel.launches > 1:
            call_start = self._call_def_line(graph)
            pattern = re.compile(rf"\b{re.escape(kernel.name)}(\.run)?\(")
            for i, line in enumerate(self.graph_text(graph, "output_code").split("\n"), start=1):
                if i > call_start and pattern.search(line):
                    lines.add(i)
        return sorted(lines)

    def kernel_for_output_line(self, graph: Graph, line: int) -> Kernel | None:
        kernels = self.bundle.kernels_of(graph.id)
        for k in kernels:
            if k.call_line == line or k.def_line == line:
                return k
        text_lines = self.graph_text(graph, "output_code").split("\n")
        if 1 <= line <= len(text_lines):
            code = text_lines[line - 1]
            for k in kernels:
                if k.lang != "extern" and re.search(rf"\b{re.escape(k.name)}\b", code):
                    return k
        # Inside a kernel's definition: the last kernel defined above the line, before call().
        call_start = self._call_def_line(graph) or 10**9
        if line < call_start:
            above = [k for k in kernels if k.def_line and k.def_line <= line]
            if above:
                return max(above, key=lambda k: k.def_line or 0)
        return None
