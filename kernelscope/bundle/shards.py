"""Bundle format 2: ``bundle.json`` an index, each graph's detail a file of its own, read when shown.

The index holds what a list of the whole job shows: every graph (id, compile id, kind, files, kernel ids)
and kernel (name, kind, launches, bytes moved, node count, user lines as ids into one ``lines`` table).
``graphs/<id>/detail.json`` holds the rest of one graph: its kernels' FX nodes, buffers, launches, frames
and Triton variants, and its guards, symbols and calls. A reader builds the index at once and leaves a
loader on each graph and kernel (model._Lazy); the first look at a detail field reads that graph's file,
validated as the manifest is (bundle/validate.py), its texts cleaned of control characters.

Format 3 adds side files under ``sections/``: the graph breaks' whole messages
(``graph_break_details.json``, a list in the order of ``graph_breaks``) and the compile-time record
(``compile_time.json``, ``extra["compile_time"]``), each read when first asked for (GraphBreak.detail,
Bundle.section): a job's index is what its first frame shows, not every message torch printed.

Format 4 writes the index's kernels as rows of values under one ``kernel_fields`` header
(bundle/kernel_rows.py): read column by column, a 15,600-kernel index reads in a fraction of the time.
Format 5 moves those rows to kernel_index.jsonl, graph by graph, each graph's range and counts in the
manifest (bundle/kernel_file.py): a job's first frame reads the graphs it lists and one graph's kernels.

Both files are JSON written one list item per line: ``json.dumps`` at C speed, and a diff of two
bundles reads kernel by kernel.
"""

from __future__ import annotations

import json
import math
import os
import re
import threading
from pathlib import Path
from typing import Any

from kernelscope.bundle.kernel_file import KERNEL_FILE, pack_kernel_file, read_rows
from kernelscope.bundle.kernel_rows import (
    KERNEL_INDEX,
    build_kernels,
    check_columns,
    entry_columns,
    row_columns,
)
from kernelscope.bundle.model import (
    GRAPH_DETAIL,
    KERNEL_DETAIL,
    SCHEMA_NAME,
    SCHEMA_VERSION,
    Bundle,
    BundleError,
    Graph,
    GraphBreak,
    Kernel,
    UserLine,
    to_dict,
)
from kernelscope.bundle.side_sections import attach_sides, load_sides, split_sides
from kernelscope.bundle.validate import (
    _check,
    build,
    build_kernel,
    build_list,
    build_lists,
    build_many,
    check_graph_ids,
    check_references,
)

MAX_DETAIL_BYTES = 256 << 20
_SAFE_ID = re.compile(r"^[A-Za-z0-9_.+-]{1,160}$")
# The index's list sections, written one item per line.
_LISTS = ("graphs", "kernels", "lines", "graph_breaks", "recompiles", "autotune")
_GRAPH_INDEX = tuple(f for f in Graph.__dataclass_fields__ if f not in GRAPH_DETAIL)
_BREAK_INDEX = tuple(f for f in GraphBreak.__dataclass_fields__ if f != "detail")


def detail_path(graph_id: str, position: int) -> str:
    """Where a graph's detail file lives in the bundle: beside its other files when its id is a plain name."""
    if _SAFE_ID.match(graph_id) and graph_id not in (".", ".."):
        return f"graphs/{graph_id}/detail.json"
    return f"graphs/detail-{position}.json"


def dumps_lines(data: dict[str, Any]) -> str:
    """``data`` as JSON, each item of its list sections on a line of its own; strict JSON (a NaN or an
    infinity, which a bench's statistics can hold, is written null)."""
    parts = []
    for key, value in data.items():
        if key in _LISTS and isinstance(value, list) and value:
            items = ",\n".join(_strict(item) for item in value)
            parts.append(f"{json.dumps(key)}: [\n{items}\n]")
        else:
            parts.append(f"{json.dumps(key)}: {_strict(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def _strict(value: Any) -> str:
    try:
        return json.dumps(value, allow_nan=False)  # C speed: almost every value has no NaN in it
    except ValueError:
        return json.dumps(finite(value), allow_nan=False)


def finite(value: Any) -> Any:
    """``value`` with every NaN or infinity made null (strict JSON: jq and JSON.parse refuse them)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def _line_key(u: UserLine) -> tuple:
    return (u.file, u.line, u.code, u.function, u.library)


def index_and_details(bundle: Bundle, *, skip_unread: bool) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The index (bundle.json's dict) and each graph's detail dict by its bundle-relative path; with
    ``skip_unread``, graphs whose detail was never read are left out of the second (their file stands)."""
    lines: dict[tuple, int] = {}
    line_rows: list[dict[str, Any]] = []

    def line_id(u: UserLine) -> int:
        key = _line_key(u)
        i = lines.get(key)
        if i is None:
            i = lines[key] = len(line_rows)
            line_rows.append({"file": u.file, "line": u.line, "code": u.code, "function": u.function,
                              "library": u.library})
        return i

    by_graph: dict[str, list[Kernel]] = {}
    for k in bundle.kernels:
        by_graph.setdefault(k.graph, []).append(k)
    # Not-fused pairs listed for the whole bundle (built in memory, or read from format 1) go to their graphs.
    fusion = bundle.extra.get("fusion") if isinstance(bundle.extra, dict) else None
    pairs_of: dict[str, list[Any]] = {}
    if isinstance(fusion, dict) and isinstance(fusion.get("pairs"), list):
        for pair in fusion["pairs"]:
            pairs_of.setdefault(str(pair.get("graph")) if isinstance(pair, dict) else "", []).append(pair)
    graphs, details = [], {}
    for position, g in enumerate(bundle.graphs):
        rel = g.__dict__.get("_detail_path") or detail_path(g.id, position)
        entry = {f: to_dict(getattr(g, f)) for f in _GRAPH_INDEX}
        entry["detail"] = rel
        graphs.append(entry)
        kernels = by_graph.get(g.id, [])
        if skip_unread and not g.detail_loaded and all(not k.detail_loaded for k in kernels):
            continue
        graph_part = {f: to_dict(getattr(g, f)) for f in GRAPH_DETAIL}
        graph_part["fusion_pairs"] = graph_part["fusion_pairs"] + pairs_of.get(g.id, [])
        details[rel] = {"graph": graph_part,
                        "kernels": {k.id: {f: to_dict(getattr(k, f)) for f in KERNEL_DETAIL} for k in kernels}}
    kernels = []
    for k in bundle.kernels:
        entry = {f: to_dict(getattr(k, f)) for f in KERNEL_INDEX}
        entry["user_lines"] = [line_id(u) for u in k.user_lines]
        entry["bytes_read"], entry["bytes_written"] = k.bytes_read, k.bytes_written
        entry["bytes_bound"], entry["fx_nodes"] = k.bytes_bound, k.node_count
        kernels.append(entry)
    index = to_dict_shallow(bundle)
    unread = skip_unread and any(not gb.detail_loaded for gb in bundle.graph_breaks)
    index["graph_breaks"] = [{f: to_dict(getattr(gb, f)) for f in _BREAK_INDEX} if unread else to_dict(gb)
                             for gb in bundle.graph_breaks]
    if pairs_of or (isinstance(fusion, dict) and fusion.get("pairs") == []):
        index["extra"] = {**index["extra"], "fusion": {**index["extra"]["fusion"], "pairs": None,
                                                        "pairs_in": "graph detail",
                                                        "pair_count": len(fusion.get("pairs") or [])}}
    index["version"] = SCHEMA_VERSION
    index["graphs"], index["kernels"], index["lines"] = graphs, kernels, line_rows
    return index, details


def to_dict_shallow(bundle: Bundle) -> dict[str, Any]:
    """The bundle's own fields as JSON values, graphs and kernels left for the index to write."""
    out = {}
    for name in Bundle.__dataclass_fields__:
        if name in ("root", "graphs", "kernels", "graph_breaks"):
            continue
        out[name] = to_dict(getattr(bundle, name))
    return out


def write(bundle: Bundle, folder: str | os.PathLike) -> str:
    """Write every graph's detail file into ``folder`` (those already there, never read, are left as they
    are when ``folder`` is the bundle's own) and return the index's text for bundle.json."""
    folder = Path(folder)
    same = bool(bundle.root) and _same_folder(folder, Path(bundle.root))
    if not same:  # a copy elsewhere takes the side files' contents along
        load_sides(bundle)
    index, details = index_and_details(bundle, skip_unread=same)
    rows = pack_kernel_file(index, bundle.kernels)  # first: a kernel naming no graph refuses before any write
    sides = split_sides(bundle, index)
    details.update(sides)
    for rel, detail in details.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = dumps_lines(detail) if isinstance(detail, dict) else _strict(detail) + "\n"
        if same and rel in sides and _holds(path, text):
            continue  # a job's compile-time rows, read and saved again unchanged: megabytes not rewritten
        if same:  # a bundle in place (a bench record added): a reader never sees half a detail file
            from kernelscope.safefile import write_atomic

            write_atomic(path, text)
        else:
            path.write_text(text, encoding="utf-8")
    path = folder / KERNEL_FILE
    if not (same and _holds(path, rows)):
        if same:
            from kernelscope.safefile import write_atomic

            write_atomic(path, rows)
        else:
            path.write_text(rows, encoding="utf-8")
    return dumps_lines(index)


def _holds(path: Path, text: str) -> bool:
    """Whether the file at ``path`` holds ``text`` already."""
    try:
        return path.stat().st_size == len(text.encode("utf-8")) and path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        return False


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _empty_detail() -> dict[str, Any]:
    import dataclasses

    out = {}
    for f in dataclasses.fields(Kernel):
        if f.name in KERNEL_DETAIL:
            out[f.name] = f.default_factory if f.default_factory is not dataclasses.MISSING else (lambda v=f.default: v)
    return out


_EMPTY_DETAIL = _empty_detail()  # a detail field's value when the detail file could not be read


class _GraphDetail:
    """The loader of one graph's detail file, shared by the graph and its kernels (see model._Lazy)."""

    def __init__(self, bundle: Bundle, graph: Graph, kernels: list[Kernel] | None, relpath: str) -> None:
        self.bundle, self.graph, self.kernels, self.relpath = bundle, graph, kernels, relpath
        self.lock = threading.Lock()

    def __call__(self) -> None:
        if self.kernels is None:  # format 5, the graph's kernels not read yet: read them first (they adopt us)
            try:
                self.kernels = self.bundle.kernels_of(self.graph.id)
            except BundleError:  # its rows damaged: said once (the kernel file's note); the graph's detail stands
                self.kernels = []
        with self.lock:
            if self.graph.__dict__.get("_detail") is not self:
                return  # read meanwhile by another thread
            try:
                graph_part, kernel_parts = self._read()
            except BundleError as exc:
                graph_part, kernel_parts = {}, {}
                self.bundle.notes.append(f"{exc}; that graph's FX nodes, buffers and guards are not shown")
            for f in GRAPH_DETAIL:
                self.graph.__dict__[f] = graph_part.get(f, [])
            self.graph.__dict__["_detail"] = None
            for k in self.kernels:
                got = kernel_parts.get(k.id)
                for f in KERNEL_DETAIL:
                    k.__dict__[f] = getattr(got, f) if got is not None else _EMPTY_DETAIL[f]()
                k.__dict__["_detail"] = None
                k.__dict__.pop("_index", None)

    def _read(self) -> tuple[dict[str, Any], dict[str, Kernel]]:
        from kernelscope.bundle.paths import read_json_file, strip_controls

        data, raw = read_json_file(self.bundle.root, self.relpath, MAX_DETAIL_BYTES, "graph detail file")
        where = self.relpath
        if not isinstance(data, dict) or not isinstance(data.get("graph", {}), dict) \
                or not isinstance(data.get("kernels", {}), dict):
            raise BundleError(f"{self.bundle.root}: {where} is not a graph detail file")
        strip_controls(data, raw)
        g = build(Graph, {**data.get("graph", {}), "id": self.graph.id, "compile_id": self.graph.compile_id,
                          "kind": self.graph.kind}, f"{where}: graph")
        graph_part = {f: getattr(g, f) for f in GRAPH_DETAIL}
        from kernelscope.bundle.sections import pairs_problem

        problem = pairs_problem(graph_part.get("fusion_pairs"), f"{where}: graph.fusion_pairs")
        if problem:  # the rest of the graph's detail stands
            graph_part["fusion_pairs"] = []
            self.bundle.notes.append(f"{problem}; that graph's not-fused pairs are left out")
        kernel_parts: dict[str, Kernel] = {}
        raw = data.get("kernels", {})
        for k in self.kernels:
            if isinstance(raw.get(k.id), dict):
                merged = {"id": k.id, "graph": k.graph, "name": k.name, "kind": k.kind, "lang": k.lang,
                          "launch_index": k.launch_index, **raw[k.id]}
                merged.pop("user_lines", None)
                kernel_parts[k.id] = build_kernel(merged, f"{where}: kernels[{k.id!r}]")
        from kernelscope.bundle.paths import check_paths

        check_paths(self.bundle, [p for p in self.graph.files.values() if p]
                    + [k.source for k in self.kernels if k.source]
                    + [p for kp in kernel_parts.values() for v in kp.triton for p in v.files.values() if p])
        return graph_part, kernel_parts


def from_index(data: dict[str, Any], root: str) -> Bundle:
    """A Bundle from a format-2, 3 or 4 bundle.json's dict, every index field type-checked; details left on disk."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_NAME:
        raise BundleError("not a kernelscope bundle manifest")
    b = build(Bundle, data, "bundle")
    b.root = root
    line_table = build_list(UserLine, data, "lines", "bundle")
    no_ids: list[Graph] = []  # format 4 leaves out a graph's kernel ids where the index's order gives them
    raw_graphs = data.get("graphs", [])
    if not isinstance(raw_graphs, list):
        raise BundleError(f"bundle.graphs should be a list, not {type(raw_graphs).__name__}")
    graphs = build_many(Graph, raw_graphs, "bundle.graphs", skip=GRAPH_DETAIL)  # a job's thousand: by column
    details = [entry.get("detail") for entry in raw_graphs]
    if set(map(type, details)) - {str}:
        i = next(i for i, d in enumerate(details) if type(d) is not str)
        _check(details[i], "str", f"bundle.graphs[{i}].detail")
    for g, entry, detail in zip(graphs, raw_graphs, details):
        for f in GRAPH_DETAIL:
            g.__dict__.pop(f, None)
        g.__dict__["_detail_path"] = detail
        if "kernel_ids" not in entry:
            no_ids.append(g)
    b.graphs = graphs
    if "kernels" not in data and data.get("version", 0) >= 5:  # (an index built in memory has them inline)
        return _lazy_kernels(b, data, raw_graphs, line_table, no_ids)
    entries = data.get("kernels", [])
    if not isinstance(entries, list):
        raise BundleError(f"bundle.kernels should be a list, not {type(entries).__name__}")
    gaps = "kernel_fields" not in data  # format 4: rows under one header, every field in each
    columns = entry_columns(entries) if gaps else row_columns(data["kernel_fields"], entries)
    check_columns(columns, len(entries), gaps=gaps)
    kernels = build_kernels(columns, len(entries), line_table, gaps=gaps)
    b.kernels = kernels
    check_references(b)
    build_lists(b, data)
    attach_sides(b, data)
    by_graph: dict[str, list[Kernel]] = {}
    for k in kernels:
        by_graph.setdefault(k.graph, []).append(k)
    for g in no_ids:
        g.kernel_ids = [k.id for k in by_graph.get(g.id, [])]
    for g in graphs:
        loader = _GraphDetail(b, g, by_graph.get(g.id, []), g.__dict__["_detail_path"])
        g.__dict__["_detail"] = loader
        for k in loader.kernels:
            k.__dict__["_detail"] = loader
    return b


def _lazy_kernels(b: Bundle, data: dict[str, Any], raw_graphs: list[Any], line_table: list[UserLine],
                  no_ids: list[Graph]) -> Bundle:
    """Format 5: the graphs' rows checked to tile kernel_index.jsonl, every kernel left there until asked for
    (bundle/kernel_file.py); the bundle-wide lists and sides as format 4's."""
    check_graph_ids(b)
    loader = read_rows(data, b, raw_graphs, line_table)
    del b.__dict__["kernels"]
    b.__dict__["_kernel_file"] = loader
    build_lists(b, data)
    attach_sides(b, data)
    for g in b.graphs:
        detail = _GraphDetail(b, g, None, g.__dict__["_detail_path"])
        g.__dict__["_detail"] = detail
        g.__dict__["_kernel_file"] = loader
        loader.loaders[g.id] = detail
    for g in no_ids:
        g.__dict__.pop("kernel_ids", None)  # Graph.kernel_ids reads them from the file when asked
    return b


def detail_paths(bundle: Bundle) -> list[str]:
    """The detail files a format-2 bundle's index names (checked when the bundle is read)."""
    return [p for g in bundle.graphs if (p := g.__dict__.get("_detail_path"))]
