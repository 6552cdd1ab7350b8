"""Reading a bundle back: ``from_dict`` builds the model from bundle.json's dict, checking every
field's type against the dataclasses' annotations (a BundleError names the first bad one).
Nothing here imports torch, triton or textual."""

from __future__ import annotations

import dataclasses
import json
import math
from itertools import chain, repeat
from operator import attrgetter
from typing import Any

from kernelscope.bundle.model import (
    AutotuneChoice,
    AutotuneResult,
    BufferUse,
    Bundle,
    BundleError,
    Graph,
    GraphBreak,
    Kernel,
    LaunchInfo,
    Recompile,
    TritonVariant,
    UserLine,
)

MAX_DEPTH = 32  # free-form values (target, options, extra ...) nest at most this deep
# extra's sections whose declared shape (bundle/sections.py) bounds their depth: not walked here (a job's
# compile-time record holds a row per kernel)
SHAPED_SECTIONS = frozenset({"compile_time"})


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _depth_ok(value: Any, limit: int) -> bool:
    """True when ``value`` nests at most ``limit`` lists/objects deep (checked without recursion, a level at
    a time: a bench record's 15,600 rows in a few passes at C speed)."""
    level, depth = [value], 0
    while level := [v for v in level if isinstance(v, (dict, list))]:
        if depth >= limit:
            return False
        below: list[Any] = []
        for v in level:
            below.extend(v.values() if isinstance(v, dict) else v)
        level, depth = below, depth + 1
    return True




_SCALARS = (str, int, float, bool, type(None))
_SCALAR_SET = frozenset(_SCALARS)
# The exact types that fit a hint at once (a bool is no int here; anything else takes the long way).
_FAST = {"str": (str,), "int": (int,), "bool": (bool,), "str|None": (str, type(None)),
         "int|None": (int, type(None)), "bool|None": (bool, type(None)), "str | None": (str, type(None)),
         "int | None": (int, type(None)), "bool | None": (bool, type(None))}
# Lists of plain items (a kernel's FX node names, ids): every item checked in one pass at C speed.
_PLAIN_LISTS = {"list[str]": str, "list[int]": int}
_PLAIN_DICTS = {"dict[str,str]": str, "dict[str,int]": int, "dict[str, str]": str, "dict[str, int]": int}


def _check(value: Any, hint: str, where: str) -> None:
    """Raise a one-line BundleError unless ``value`` (from JSON) fits the field annotation ``hint``."""
    if type(value) in _FAST.get(hint, ()):  # most fields: one look
        return
    item = _PLAIN_LISTS.get(hint)
    if item is not None and type(value) is list and set(map(type, value)) <= {item}:
        return
    item = _PLAIN_DICTS.get(hint)
    if item is not None and type(value) is dict and set(map(type, value.values())) <= {item}:
        return
    if hint == "Any" and type(value) in _SCALARS:
        return  # nothing nested to measure
    if hint == "dict[str,Any]" and type(value) is dict and set(map(type, value.values())) <= _SCALAR_SET:
        return  # a flat object (a graph's call site, its CUDA-graph status): one pass, nothing nested
    hint = hint.replace(" ", "")
    if hint.endswith("|None"):
        if value is None:
            return
        hint = hint[: -len("|None")]
    if hint == "Any":
        if not _depth_ok(value, MAX_DEPTH):
            raise BundleError(f"{where} nests deeper than {MAX_DEPTH} levels")
        return
    if hint == "str":
        ok = isinstance(value, str)
    elif hint == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif hint == "float":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok and not math.isfinite(value):
            raise BundleError(f"{where} is {value}, not a finite number")
    elif hint == "bool":
        ok = isinstance(value, bool)
    elif hint.startswith("list["):
        if not isinstance(value, list):
            raise BundleError(f"{where} should be a list, not {_type_name(value)}")
        for i, item in enumerate(value):
            _check(item, hint[5:-1], f"{where}[{i}]")
        return
    elif hint.startswith("dict[str,"):
        if not isinstance(value, dict):
            raise BundleError(f"{where} should be an object, not {_type_name(value)}")
        for key, item in value.items():
            if where == "bundle.extra" and key in SHAPED_SECTIONS:
                continue  # a declared shape bounds it, checked by bundle/sections.py where the bundle is read
            _check(item, hint[len("dict[str,"):-1], f"{where}.{key}")
        return
    else:
        raise AssertionError(f"no check for {hint}")  # a new field type: teach _check about it
    if not ok:
        want = {"str": "a string", "int": "a whole number", "float": "a number", "bool": "true/false"}[hint]
        raise BundleError(f"{where} should be {want}, not {_type_name(value)} {_short(value)}")


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, (dict, list)) else ""
    return text if len(text) <= 40 else text[:37] + "..."


_NESTED: dict[tuple[type, str], type] = {}

# The free-form objects' keys that readers rely on, with their types (other keys are not checked).
_KNOWN_KEYS: dict[str, dict[str, str]] = {
    "target": {"spec": "str", "file": "str", "name": "str", "function": "str", "kind": "str", "args": "str",
               "args_text": "str", "inputs": "list[str]", "logs": "list[str]", "first_line": "int | None",
               "last_line": "int | None", "is_class": "bool", "is_sample": "bool", "arch": "str | None"},
    "options": {"mode": "str | None", "dynamic": "bool | None", "fullgraph": "bool | None",
                "backward": "bool | None", "device": "str | None", "passes": "bool | None",
                "timeout": "float | None"},
    "environment": {"python": "str | None", "platform": "str | None", "torch": "str | None",
                    "triton": "str | None", "cuda": "str | None", "device": "str | None",
                    "device_name": "str | None", "compute_capability": "str | None", "driver": "str | None",
                    "sm_count": "int | None", "memory_gb": "float | None", "ranks": "list[int]",
                    "source": "str | None"},
    "source": {"path": "str", "file": "str", "first_line": "int | None", "last_line": "int | None"},
}


_HINTS: dict[type, dict[str, str]] = {}


def _hints(cls) -> dict[str, str]:
    """Each field's annotation as text, without spaces (worked out once per class)."""
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = {f.name: str(f.type).replace(" ", "") for f in dataclasses.fields(cls) if f.name != "root"}
    return hints


def _build(cls, data: Any, where: str) -> Any:
    """``cls`` from a JSON object, every known field type-checked; unknown keys are ignored so newer
    minor fields don't break. Nested model lists are built by the caller."""
    if not isinstance(data, dict):
        raise BundleError(f"{where} should be an object, not {_type_name(data)}")
    fields = _hints(cls)
    kwargs = {}
    for key, value in data.items():
        hint = fields.get(key)
        if hint is None:
            continue
        if (cls, key) in _NESTED:
            if not isinstance(value, list):
                raise BundleError(f"{where}.{key} should be a list, not {_type_name(value)}")
            continue
        if type(value) not in _FAST.get(hint, ()):  # most fields pass at one look, no call (a job's index)
            _check(value, hint, f"{where}.{key}")
        for sub, sub_hint in _KNOWN_KEYS.get(key, {}).items() if cls is Bundle else ():
            if sub in value:
                _check(value[sub], sub_hint, f"{where}.{key}.{sub}")
        kwargs[key] = value
    try:
        return cls(**kwargs)
    except TypeError:  # a required field absent (a damaged detail file): one line, as a bad value is
        missing = [f.name for f in dataclasses.fields(cls) if f.name not in kwargs and f.init
                   and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        raise BundleError(f"{where} has no {', '.join(missing) or 'required field'}") from None


def _build_list(cls, data: dict, key: str, where: str) -> list:
    items = data.get(key, [])
    if not isinstance(items, list):
        raise BundleError(f"{where}.{key} should be a list, not {_type_name(items)}")
    if len(items) >= MANY:
        return build_many(cls, items, f"{where}.{key}")
    return [_build(cls, item, f"{where}.{key}[{i}]") for i, item in enumerate(items)]


MANY = 16  # from this many objects of a class on, their fields are checked column by column (build_many)
_MISSING = object()


def build_many(cls, items: list, where: str, skip: tuple[str, ...] = ()) -> list:
    """``_build`` of every item of a JSON list of ``cls`` objects (a job's 1,040 graphs, its breaks): each
    field's values checked in one pass at C speed where all have their plain types; otherwise item by item,
    as ``_build`` does, which names the first bad value (``where[i].field``). ``skip``: fields left out (a
    graph's detail fields, in its own file)."""
    if set(map(type, items)) <= {dict} and all(
            _column_fits(list(map(dict.get, items, repeat(name), repeat(_MISSING))), hint)
            for name, hint in _hints(cls).items() if (cls, name) not in _NESTED and name not in skip):
        known = {name for name in _hints(cls) if (cls, name) not in _NESTED and name not in skip}
        nested = [name for name in _hints(cls) if (cls, name) in _NESTED]
        if not any(type(item.get(name, [])) is not list for item in items for name in nested):
            try:
                return [cls(**{k: v for k, v in item.items() if k in known}) for item in items]
            except TypeError:
                pass  # one lacks a required field: the one-by-one build names it
    return [_build(cls, {k: v for k, v in item.items() if k not in skip} if skip and isinstance(item, dict) else item,
                   f"{where}[{i}]") for i, item in enumerate(items)]


def _column_fits(values: list, hint: str) -> bool:
    """Whether every value of one field (``_MISSING`` where an object lacks it) fits ``hint`` by its type."""
    types = set(map(type, values)) - {object}
    allowed = _FAST.get(hint)
    if allowed is not None:
        return types <= set(allowed)
    inner = _PLAIN_LISTS.get(hint) or _PLAIN_DICTS.get(hint)
    present = [v for v in values if v is not _MISSING]
    if inner is not None:
        kind = list if hint.startswith("list[") else dict
        return types <= {kind} and set(map(type, chain.from_iterable(
            present if kind is list else map(dict.values, present)))) <= {inner}
    if hint == "dict[str,Any]":  # flat objects: a graph's call site, its CUDA-graph status
        return types <= {dict} and set(map(type, chain.from_iterable(map(dict.values, present)))) <= _SCALAR_SET
    return not present


def from_dict(data: dict) -> Bundle:
    """A Bundle from its JSON dict, each field type-checked (a BundleError names the first bad one)."""
    b = _build(Bundle, data, "bundle")
    b.graphs = _build_list(Graph, data, "graphs", "bundle")
    b.kernels = [build_kernel(k, f"bundle.kernels[{i}]") for i, k in enumerate(data.get("kernels", []))]
    check_references(b)
    build_lists(b, data)
    return b


def build_kernel(k: Any, where: str) -> Kernel:
    """A whole kernel (index fields and detail) from its JSON object, type-checked."""
    kern = _build(Kernel, k, where)
    kern.user_lines = _build_list(UserLine, k, "user_lines", where)
    kern.library_lines = _build_list(UserLine, k, "library_lines", where)
    kern.frames = _build_list(UserLine, k, "frames", where)
    kern.launch_info = []
    for j, li in enumerate(k.get("launch_info", []) if isinstance(k.get("launch_info"), list) else []):
        lwhere = f"{where}.launch_info[{j}]"
        info = _build(LaunchInfo, li, lwhere)
        info.user_lines = _build_list(UserLine, li, "user_lines", lwhere)
        info.library_lines = _build_list(UserLine, li, "library_lines", lwhere)
        kern.launch_info.append(info)
    kern.buffers = _build_list(BufferUse, k, "buffers", where)
    kern.triton = _build_list(TritonVariant, k, "triton", where)
    return kern


def build(cls, data: Any, where: str) -> Any:
    """``cls`` (a model class) from a JSON object, its plain fields type-checked (nested lists left out)."""
    return _build(cls, data, where)


def build_list(cls, data: dict, key: str, where: str) -> list:
    return _build_list(cls, data, key, where)


def check_graph_ids(b: Bundle) -> list[str]:
    """The graphs' ids, each once (the UI keys its tables on them)."""
    graph_ids = [g.id for g in b.graphs]
    if len(set(graph_ids)) != len(graph_ids):
        raise BundleError(f"bundle.graphs: graph id {next(g for g in graph_ids if graph_ids.count(g) > 1)!r} "
                          "appears twice")
    return graph_ids


def check_references(b: Bundle) -> None:
    """Cross-references the UI keys its tables on: a kernel names one of the graphs; ids are unique."""
    kernels = b.kernels
    graph_ids = check_graph_ids(b)
    kernel_ids = [k.id for k in kernels]
    if len(set(kernel_ids)) != len(kernel_ids):
        raise BundleError(f"bundle.kernels: kernel id {next(k for k in kernel_ids if kernel_ids.count(k) > 1)!r} "
                          "appears twice")
    known = set(graph_ids)
    if set(map(attrgetter("graph"), kernels)) <= known:
        return
    for i, kern in enumerate(kernels):
        if kern.graph not in known:
            raise BundleError(f"bundle.kernels[{i}] ({kern.name}) names graph {kern.graph!r}, which is not one of "
                              f"the bundle's {len(graph_ids)} graph(s)")


def build_lists(b: Bundle, data: dict) -> None:
    """The bundle-wide lists: graph breaks, recompiles, autotune results."""
    b.graph_breaks = _build_list(GraphBreak, data, "graph_breaks", "bundle")
    b.recompiles = _build_list(Recompile, data, "recompiles", "bundle")
    b.autotune = []
    for i, a in enumerate(data.get("autotune", [])):
        res = _build(AutotuneResult, a, f"bundle.autotune[{i}]")
        res.choices = _build_list(AutotuneChoice, a, "choices", f"bundle.autotune[{i}]")
        b.autotune.append(res)


_NESTED.update({
    (Bundle, "graphs"): Graph, (Bundle, "kernels"): Kernel, (Bundle, "graph_breaks"): GraphBreak,
    (Bundle, "recompiles"): Recompile, (Bundle, "autotune"): AutotuneResult, (Kernel, "user_lines"): UserLine,
    (Kernel, "buffers"): BufferUse, (Kernel, "triton"): TritonVariant, (AutotuneResult, "choices"): AutotuneChoice,
    (Kernel, "library_lines"): UserLine, (Kernel, "frames"): UserLine, (Kernel, "launch_info"): LaunchInfo,
    (LaunchInfo, "user_lines"): UserLine, (LaunchInfo, "library_lines"): UserLine,
})
