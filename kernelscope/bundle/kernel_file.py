"""Bundle format 5: the kernel index in a file of its own, read a graph at a time.

Format 4 kept every kernel's row in bundle.json: a 15,600-kernel job parsed, checked and built all of them
before its first frame, which shows one graph's. Format 5 writes the rows, one kernel per line and graph by
graph, to ``kernel_index.jsonl`` beside bundle.json (the header stays in the manifest's ``kernel_fields``),
and gives each graph of the manifest where its rows are and what a job's list and header show of them:

    {"id": "0-0-forward", ..., "kernel_rows": {"first": 0, "count": 12, "offset": 0, "length": 3301,
                                               "langs": {"triton": 9, "extern": 3}, "moved": 1048576}}

(``moved``: the bytes its kernels move per call, each launch counted; null when a size is symbolic). The
reader checks that the graphs' row ranges tile the file and leaves the rows on disk: ``Bundle.kernels_of``
reads one graph's byte range, ``Bundle.kernels`` the whole file, each validated as format 4's rows are
(bundle/kernel_rows.py) and built once (a kernel read with its graph is the same object in the whole list).
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from collections.abc import Iterable
from itertools import chain, repeat
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from kernelscope.bundle.kernel_rows import (
    KERNEL_FILE,
    ROW_FIELDS,
    build_kernels,
    check_columns,
    pack_kernels,
    row_columns,
)
from kernelscope.bundle.model import BundleError, Kernel

if TYPE_CHECKING:
    from kernelscope.bundle.model import Bundle, UserLine

MAX_KERNEL_FILE_BYTES = 1 << 30
_RANGE_FIELDS = ("first", "count", "offset", "length")
assert ROW_FIELDS[:2] == ("id", "graph")


def bytes_moved(read: int | None, written: int | None, launches: int | None) -> int | None:
    """Bytes a kernel moves per call of its graph (every launch counted), None when a size is symbolic."""
    return None if read is None or written is None else (read + written) * max(1, launches or 0)


def total_moved(each: Iterable[int | None]) -> int | None:
    """Kernels' bytes moved added up; None when one's size is symbolic."""
    total = 0
    for moved in each:
        if moved is None:
            return None
        total += moved
    return total


def graph_moved(kernels: list[Kernel]) -> int | None:
    """Bytes a graph's kernels move per call, each launch counted; None when one's size is symbolic."""
    return total_moved(bytes_moved(k.bytes_read, k.bytes_written, k.launches) for k in kernels)


def pack_kernel_file(index: dict[str, Any], kernels: list[Kernel]) -> str:
    """``index`` (bundle.json's dict, its kernels as objects) made format 5 in place: the rows leave it for
    the returned text of kernel_index.jsonl, graph by graph, and each graph says where its rows are. A
    kernel whose graph the index lacks is refused (check_references refuses it on reading too)."""
    pack_kernels(index)  # rows under kernel_fields, kernel_ids dropped where the rows' order gives them
    rows = index.pop("kernels")
    graphs = index.get("graphs") or []
    by_graph: dict[str, list[int]] = {g["id"]: [] for g in graphs}
    for i, row in enumerate(rows):
        picked = by_graph.get(row[1])  # ROW_FIELDS[1] is "graph"
        if picked is None:
            raise BundleError(f"kernel {row[0]!r} names graph {row[1]!r}, which the bundle does not have; "
                              "nothing was written")
        picked.append(i)
    lines: list[str] = []
    first = offset = 0
    for g in graphs:
        picked = by_graph[g["id"]]
        order = g.get("kernel_ids")
        if order is not None and sorted(order) == sorted(rows[i][0] for i in picked):
            place = {kid: n for n, kid in enumerate(order)}
            picked.sort(key=lambda i: place[rows[i][0]])  # launch order: the graph's kernel_ids go unwritten
        text = "".join(json.dumps(rows[i], allow_nan=False) + "\n" for i in picked)
        length = len(text.encode("utf-8"))
        ks = [kernels[i] for i in picked]
        g["kernel_rows"] = {"first": first, "count": len(picked), "offset": offset, "length": length,
                            "langs": dict(Counter(map(attrgetter("lang"), ks))), "moved": graph_moved(ks)}
        if "kernel_ids" in g and g["kernel_ids"] == [rows[i][0] for i in picked]:
            g.pop("kernel_ids")  # the file's order gives them
        lines.append(text)
        first += len(picked)
        offset += length
    index["kernel_count"] = first
    return "".join(lines)


class GraphRows:
    """Where one graph's rows are in the kernel file, and what the manifest says of them."""

    __slots__ = ("first", "count", "offset", "length", "langs", "moved")

    def __init__(self, entry: Any, where: str, first: int, offset: int) -> None:
        if not isinstance(entry, dict):
            raise BundleError(f"{where}.kernel_rows should be an object")
        for name in _RANGE_FIELDS:
            v = entry.get(name)
            if type(v) is not int or v < 0:
                raise BundleError(f"{where}.kernel_rows.{name} should be a whole number >= 0, not {v!r}")
        if entry["first"] != first or entry["offset"] != offset:
            raise BundleError(f"{where}.kernel_rows starts at row {entry['first']}, byte {entry['offset']}; the graphs "
                              f"before it end at row {first}, byte {offset}")
        if (entry["count"] == 0) != (entry["length"] == 0) or entry["count"] * 3 > entry["length"]:
            raise BundleError(f"{where}.kernel_rows: {entry['count']} rows in {entry['length']} bytes")
        langs, moved = entry.get("langs"), entry.get("moved")
        if not isinstance(langs, dict) or any(type(v) is not int or v < 0 for v in langs.values()) \
                or sum(langs.values()) != entry["count"]:
            raise BundleError(f"{where}.kernel_rows.langs should count the graph's {entry['count']} kernels by language")
        if moved is not None and (type(moved) is not int or moved < 0):
            raise BundleError(f"{where}.kernel_rows.moved should be a whole number of bytes or null, not {moved!r}")
        self.first, self.count, self.offset, self.length = first, entry["count"], offset, entry["length"]
        self.langs: dict[str, int] = langs
        self.moved: int | None = moved


class KernelFile:
    """The loader a format-5 reader leaves on its bundle (``_kernel_file``): a graph's kernels, or all."""

    def __init__(self, bundle: Bundle, fields: Any, rows: list[GraphRows], line_table: list[UserLine],
                 count: int, size: int) -> None:
        self.bundle, self.fields, self.line_table = bundle, fields, line_table
        self.rows = {g.id: r for g, r in zip(bundle.graphs, rows)}
        self.graphs = {g.id: g for g in bundle.graphs}
        self.count, self.size = count, size
        self.built: dict[str, list[Kernel]] = {}
        self.loaders: dict[str, Any] = {}  # graph id -> its detail loader (bundle/shards.py), given its kernels
        self.failed = ""
        self.in_launch_order = False  # see read_rows
        self.loaded: list[Kernel] | None = None  # the list load_all made (the bundle's, until replaced)
        self._langs: Counter | None = None
        self.lock = threading.RLock()

    @property
    def path(self) -> str:
        """The kernel file, refused when a symlink leads it out of the bundle (bundle/paths.py)."""
        from kernelscope.bundle.paths import inside

        return str(inside(self.bundle.root, KERNEL_FILE))

    def langs(self) -> Counter:
        """The kernels counted by language, as the graphs' rows give them (summed once: a header asks often)."""
        if self._langs is None:
            self._langs = Counter()
            for r in self.rows.values():
                self._langs.update(r.langs)
        return Counter(self._langs)

    def graph(self, graph_id: str) -> list[Kernel]:
        """One graph's kernels, read from its byte range of the file (once)."""
        with self.lock:
            built = self.built.get(graph_id)
            if built is not None:
                return built
            r = self.rows.get(graph_id)
            if r is None or not r.count or self.failed:
                return []
            try:
                with _open(self.path) as fh:
                    fh.seek(r.offset)
                    raw = fh.read(r.length)
                kernels = self._build(raw, r, graph_id)
            except BundleError as exc:
                self._fail(exc)
                raise
            self._adopt(graph_id, kernels)
            return kernels

    def _summed_as_said(self, graph_id: str, r: GraphRows, columns: dict[str, Any], at: int) -> None:
        """The manifest's counts by language and bytes moved for ``graph_id`` (what a first frame shows of a
        graph not read yet) checked against its rows, ``columns`` from row ``at`` on: a manifest edited apart
        from its rows is damaged."""
        end = at + r.count
        langs = Counter(columns["lang"][at:end])
        none = (None,) * r.count
        moved = total_moved(map(bytes_moved, *(columns[f][at:end] if f in columns else none
                                                for f in ("bytes_read", "bytes_written", "launches"))))
        if langs != Counter(r.langs) or moved != r.moved:
            said = f"{self.path} (graph {graph_id}): the manifest says"
            raise BundleError(f"{said} {dict(r.langs)} by language, its rows {dict(langs)}; the bundle is damaged, "
                              "capture again" if langs != Counter(r.langs) else
                              f"{said} its kernels move {r.moved} bytes per call, its rows {moved}; the bundle is "
                              "damaged, capture again")

    def load_all(self) -> list[Kernel]:
        """Every kernel, in the file's order (the graphs' order); sets ``bundle.kernels``."""
        with self.lock:
            if "kernels" in self.bundle.__dict__:
                return self.bundle.__dict__["kernels"]
            if self.failed:
                self.bundle.__dict__["kernels"] = []
                return []
            try:
                kernels = self._load_all()
            except BundleError as exc:
                self._fail(exc)
                raise
            self.bundle.__dict__["kernels"] = self.loaded = kernels
            return kernels

    def _load_all(self) -> list[Kernel]:
        from kernelscope.safefile import FileProblem, read_regular

        if not self.size:
            return []  # no kernels: the file is not needed (it may be absent)
        try:
            raw = read_regular(self.path, MAX_KERNEL_FILE_BYTES, "kernel index")
        except FileProblem as exc:
            raise BundleError(f"{exc}; the bundle is incomplete, capture again") from exc
        if len(raw) != self.size:
            raise BundleError(f"{self.path}: {len(raw)} bytes, the manifest's graphs name {self.size}; "
                              "the bundle is damaged, capture again")
        whole = GraphRows.__new__(GraphRows)
        whole.first, whole.count, whole.offset, whole.length = 0, self.count, 0, self.size
        kernels = self._build(raw, whole, None, lambda: list(chain.from_iterable(
            repeat(gid, r.count) for gid, r in self.rows.items())))
        for gid, built in self.built.items():  # a graph read before: its objects stand
            r = self.rows[gid]
            kernels[r.first:r.first + r.count] = built
        ids = list(map(attrgetter("id"), kernels))
        if len(set(ids)) != len(ids):
            seen: set[str] = set()
            dup = next(i for i in ids if i in seen or seen.add(i))
            raise BundleError(f"{self.path}: kernel id {dup!r} appears twice")
        for gid, r in self.rows.items():
            if gid not in self.built:
                self._adopt(gid, kernels[r.first:r.first + r.count])
        return kernels

    def _build(self, raw: bytes, r: GraphRows, graph_id: str | None, graphs: Any = None) -> list[Kernel]:
        """``r``'s rows (``raw``) checked and built; ``graphs``: the graph each row must name, made when the rows
        are known to be as many as the manifest says (one graph's: ``graph_id``)."""
        from kernelscope.bundle.paths import strip_controls

        where = f"{self.path}" + (f" (graph {graph_id})" if graph_id else "")
        if len(raw) != r.length or (raw and not raw.endswith(b"\n")) or raw.count(b"\n") != r.count:
            raise BundleError(f"{where}: not the {r.count} rows the manifest names (bytes {r.offset}-"
                              f"{r.offset + r.length}); the bundle is damaged, capture again")
        try:
            rows = json.loads(b"[" + raw[:-1].replace(b"\n", b",") + b"]") if raw else []
        except (ValueError, RecursionError) as exc:
            raise BundleError(f"{where}: unreadable kernel rows ({str(exc)[:120]}); capture again") from exc
        if len(rows) != r.count:
            raise BundleError(f"{where}: {len(rows)} rows, the manifest names {r.count}; capture again")
        strip_controls(rows, raw)
        try:
            columns = row_columns(self.fields, rows)
            check_columns(columns, len(rows), gaps=False)
            kernels = build_kernels(columns, len(rows), self.line_table, gaps=False)
        except BundleError as exc:
            raise BundleError(f"{where}: {exc}; capture again") from exc
        wanted = graphs() if graphs is not None else [graph_id] * len(rows)
        got = list(columns.get("graph", ()))
        if got != wanted:
            i = next(i for i, (a, b) in enumerate(zip(got, wanted)) if a != b)
            raise BundleError(f"{where}: row {r.first + i} names graph {got[i]!r} where the manifest puts graph "
                              f"{wanted[i]!r}; capture again")
        if graph_id is not None and len(set(map(attrgetter("id"), kernels))) != len(kernels):
            raise BundleError(f"{where}: a kernel id appears twice; capture again")
        for gid, gr in ({graph_id: r} if graph_id is not None else self.rows).items():
            self._summed_as_said(gid, gr, columns, gr.first - r.first)
        return kernels

    def _adopt(self, graph_id: str, kernels: list[Kernel]) -> None:
        """The graph's kernels kept, and handed to its detail loader."""
        self.built[graph_id] = kernels
        loader = self.loaders.get(graph_id)
        if loader is not None:
            loader.kernels = kernels
            if self.graphs[graph_id].__dict__.get("_detail") is loader:
                for k in kernels:
                    k.__dict__["_detail"] = loader

    def _fail(self, exc: BundleError) -> None:
        if not self.failed:
            self.failed = str(exc)
            self.bundle.notes.append(f"{exc} (the kernel list is left empty)")


def _open(path: str):
    from kernelscope.safefile import FileProblem, open_regular

    try:
        return open_regular(path)
    except FileProblem as exc:
        raise BundleError(f"{exc}; the bundle is incomplete, capture again") from exc


def read_rows(data: dict[str, Any], bundle: Bundle, raw_graphs: list[Any], line_table: list[UserLine]) -> KernelFile:
    """The format-5 manifest's row ranges checked (they tile the file the graphs share) and a loader left on
    ``bundle``; the kernel file itself is looked at (a regular file of the named size), not read."""
    fields = data.get("kernel_fields")
    if type(fields) is not list or set(map(type, fields)) - {str} or len(set(fields)) != len(fields):
        raise BundleError("bundle.kernel_fields should be a list of distinct field names")
    rows, first, offset = [], 0, 0
    for i, entry in enumerate(raw_graphs):
        r = GraphRows(entry.get("kernel_rows"), f"bundle.graphs[{i}]", first, offset)
        rows.append(r)
        first, offset = first + r.count, offset + r.length
    count = data.get("kernel_count")
    if count != first:
        raise BundleError(f"bundle.kernel_count is {count!r}; the graphs' rows add up to {first}")
    if offset > MAX_KERNEL_FILE_BYTES:
        raise BundleError(f"the graphs' rows name {offset >> 20} MB of {KERNEL_FILE}, more than kernelscope reads "
                          f"({MAX_KERNEL_FILE_BYTES >> 20} MB)")
    loader = KernelFile(bundle, fields, rows, line_table, first, offset)
    # Written graph by graph, each graph's rows in launch order unless it kept its own kernel_ids.
    loader.in_launch_order = not any(isinstance(entry, dict) and "kernel_ids" in entry for entry in raw_graphs)
    if offset:
        with _open(loader.path) as fh:
            size = os.fstat(fh.fileno()).st_size
        if size != offset:
            raise BundleError(f"{KERNEL_FILE} holds {size} bytes; the graphs' rows name {offset}")
    return loader
