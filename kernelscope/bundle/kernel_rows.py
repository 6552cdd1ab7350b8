"""Bundle format 4: the index's kernels as rows of values under one header, read column by column.

Format 2 wrote each kernel of bundle.json's ``kernels`` as an object, its field names repeated on every
line: a 15,600-kernel job's index spent most of its read parsing the same fifteen keys 15,600 times and
checking them one value at a time. Format 4 writes ``kernel_fields`` once and each kernel as a list of
values in that order (still one kernel per line, so two bundles diff kernel by kernel):

    "kernel_fields": ["id", "graph", "name", ..., "user_lines", "bytes_read", ...],
    "kernels": [
    ["0-0-forward/triton_poi_fused_add_relu_0", "0-0-forward", "triton_poi_fused_add_relu_0", ...],
    ...]

A graph's ``kernel_ids`` is left out where it lists its kernels in the index's order (the reader rebuilds
it). The reader transposes the rows into columns at C speed, type-checks each column in one pass (a bad
value is named ``bundle.kernels[i].field``, as before) and builds every kernel's fields with ``dict(zip)``.
Objects (format 2 and 3, and an index built in memory) are still read.
"""

from __future__ import annotations

import dataclasses
from itertools import chain, repeat
from typing import Any

from kernelscope.bundle.model import KERNEL_DETAIL, BundleError, Kernel, UserLine
from kernelscope.bundle.validate import _FAST, _check, _hints

# Kernel fields the index keeps (the rest is detail); user_lines are ids into the lines table.
KERNEL_INDEX = tuple(f for f in Kernel.__dataclass_fields__ if f not in KERNEL_DETAIL and f != "user_lines")
# The figures a list shows without the detail (model.Kernel's properties answer from them until it is read).
FIGURES = ("bytes_read", "bytes_written", "bytes_bound", "fx_nodes")
FIGURE_HINTS = {"bytes_read": "int | None", "bytes_written": "int | None", "bytes_bound": "bool", "fx_nodes": "int"}
FIGURE_DEFAULTS = {"bytes_read": None, "bytes_written": None, "bytes_bound": False, "fx_nodes": 0}
ROW_FIELDS = (*KERNEL_INDEX, "user_lines", *FIGURES)
# build_kernels fills a field a kernel lacks with its plain default, one value shared by every kernel: a
# mutable default (a list field with a default_factory) would be one list shared by all. None has one.
assert all(Kernel.__dataclass_fields__[f].default_factory is dataclasses.MISSING for f in KERNEL_INDEX)
REQUIRED = ("id", "graph", "name", "kind", "lang", "launch_index")
KERNEL_FILE = "kernel_index.jsonl"  # format 5's rows, beside bundle.json (bundle/kernel_file.py)
_MISSING = object()


def pack_kernels(index: dict[str, Any]) -> None:
    """``index``'s kernel objects made rows under ``kernel_fields`` (in place), and each graph's
    ``kernel_ids`` dropped where it lists that graph's kernels in the index's order."""
    entries = index.get("kernels") or []
    by_graph: dict[str, list[str]] = {}
    for entry in entries:
        by_graph.setdefault(entry["graph"], []).append(entry["id"])
    for g in index.get("graphs") or []:
        if g.get("kernel_ids") == by_graph.get(g.get("id"), []):
            g.pop("kernel_ids", None)
    index["kernel_fields"] = list(ROW_FIELDS)
    index["kernels"] = [[entry.get(f) for f in ROW_FIELDS] for entry in entries]


def kernel_entries(index: dict[str, Any], folder: Any = None) -> list[dict[str, Any]]:
    """The kernels of a bundle.json's dict as objects, whichever format wrote it (for scripts and tests
    that read the raw index); format 5's are read from ``folder``'s kernel_index.jsonl."""
    fields = index.get("kernel_fields")
    rows = index.get("kernels") or []
    if "kernels" not in index and index.get("kernel_count") and folder is not None:
        import json
        import os

        with open(os.path.join(folder, KERNEL_FILE), encoding="utf-8") as fh:
            rows = [json.loads(line) for line in fh]
    if fields is None:
        return rows
    return [dict(zip(fields, row)) for row in rows]


def check_columns(columns: dict[str, Any], count: int, *, gaps: bool) -> None:
    """Every kernel field type-checked across all kernels at once: one pass per column at C speed where
    every value has its plain type; a bad value is named ``bundle.kernels[i].field`` by the one-value check.
    A column is the field's values in kernel order; with ``gaps``, ``_MISSING`` where a kernel object lacks
    the field (format 4's rows have none: each names every field of its header)."""
    hints = {**_hints(Kernel), **FIGURE_HINTS, "user_lines": "list[int]"}
    for name, hint in hints.items():
        if name in KERNEL_DETAIL and name not in FIGURE_HINTS:
            continue  # detail fields are checked when their detail file is read
        values = columns.get(name)
        if values is None:
            if name in REQUIRED and count:
                raise BundleError(f"bundle.kernels[0] has no {name}")
            continue
        allowed = _FAST.get(hint.replace(" ", ""))
        types = set(map(type, values)) - {object}
        if gaps and name in REQUIRED and _MISSING in values:
            types.add(object)  # the one-value check names the entry
        if allowed is not None and types <= set(allowed):
            continue
        if hint == "list[int]" and types <= {list} and set(
                map(type, chain.from_iterable([v for v in values if v is not _MISSING]))) <= {int}:
            continue
        for i, v in enumerate(values):
            if v is _MISSING:
                if name in REQUIRED:
                    raise BundleError(f"bundle.kernels[{i}] has no {name}")
                continue
            _check(v, hint, f"bundle.kernels[{i}].{name}")


def entry_columns(entries: list[Any]) -> dict[str, list[Any]]:
    """Kernel objects (format 2 and 3) as columns, ``_MISSING`` where an object lacks a field."""
    if set(map(type, entries)) - {dict}:
        i = next(i for i, entry in enumerate(entries) if type(entry) is not dict)
        raise BundleError(f"bundle.kernels[{i}] should be an object")
    return {name: list(map(dict.get, entries, repeat(name), repeat(_MISSING))) for name in ROW_FIELDS}


def row_columns(fields: Any, rows: list[Any]) -> dict[str, tuple]:
    """Format 4's rows as columns (unknown fields dropped), each row checked to be a list of one value per
    field."""
    if type(fields) is not list or set(map(type, fields)) - {str} or len(set(fields)) != len(fields):
        raise BundleError("bundle.kernel_fields should be a list of distinct field names")
    width = len(fields)
    if set(map(type, rows)) - {list}:
        i = next(i for i, row in enumerate(rows) if type(row) is not list)
        raise BundleError(f"bundle.kernels[{i}] should be a list of {width} values (bundle.kernel_fields)")
    if set(map(len, rows)) - {width}:
        i = next(i for i, row in enumerate(rows) if len(row) != width)
        raise BundleError(f"bundle.kernels[{i}] has {len(rows[i])} values; bundle.kernel_fields names {width}")
    columns = zip(*rows) if rows else repeat((), width)
    return {name: col for name, col in zip(fields, columns) if name in ROW_FIELDS}


def build_kernels(columns: dict[str, Any], count: int, line_table: list[UserLine], *, gaps: bool) -> list[Kernel]:
    """The index's kernels from checked columns: plain fields as given (a field a kernel lacks takes its
    default), user lines looked up in the lines table, the figures kept (a tuple in FIGURES' order) for
    model.Kernel's properties."""
    names, values = [], []
    for f in dataclasses.fields(Kernel):
        if f.name not in KERNEL_INDEX:
            continue
        col = columns.get(f.name)
        default = f.default if f.default is not dataclasses.MISSING else None
        names.append(f.name)
        if col is None:
            values.append(repeat(default, count))
        else:
            values.append(_with_default(col, default, gaps))
    figures = [_with_default(columns.get(name), FIGURE_DEFAULTS[name], gaps, count) for name in FIGURES]
    index_of = zip(*figures)
    ids = columns.get("user_lines")
    ids = repeat([], count) if ids is None else _with_default(ids, [], gaps)
    ids = list(ids)
    flat = list(chain.from_iterable(ids))
    if flat and (min(flat) < 0 or max(flat) >= len(line_table)):
        i = next(i for i, row in enumerate(ids) if row and (min(row) < 0 or max(row) >= len(line_table)))
        raise BundleError(f"bundle.kernels[{i}].user_lines names a line the bundle's lines table does not have")
    lines = map(list, map(map, repeat(line_table.__getitem__), ids))
    kernels: list[Kernel] = []
    new = object.__new__
    for d in map(dict, map(zip, repeat((*names, "user_lines", "_index")), zip(*values, lines, index_of))):
        k = new(Kernel)
        k.__dict__ = d
        kernels.append(k)
    return kernels


def _with_default(col: Any, default: Any, gaps: bool, count: int = 0) -> Any:
    """A column with ``default`` where a kernel object lacked the field (or where no kernel had it)."""
    if col is None:
        return repeat(default, count)
    if gaps and _MISSING in col:
        return [default if v is _MISSING else v for v in col]
    return col

