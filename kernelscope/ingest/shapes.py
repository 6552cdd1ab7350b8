"""Dynamic shapes from TORCH_TRACE: the symbols of each Dynamo compile and their values in each call.

``create_symbol`` records name a symbol (s77), its hint (the size that compiled it), its value range
and its source (``L['x'].size()[0]``: dimension 0 of argument x); ``symbolic_shape_specialization``
records a symbol fixed to a constant. Shape guards (``2 <= L['x'].size()[1] <= 4096``) narrow the
range. The capture's calls (``--args "A; B; C"``) give each symbol its value per call: each call is
assigned to the graph Dynamo would have run it on (newest compiled graph of the frame whose sizes fit,
compiling the next one when none fits). Pure Python.
"""

from __future__ import annotations

import re
from typing import Any

from kernelscope.bundle.model import Bundle
from kernelscope.ingest.dtypes import TENSOR_ANNOTATION, split_dims
from kernelscope.ingest.tracelog import TraceRecord

_SIZE_SOURCE = re.compile(r"^L\['(\w+)'\]\.(size|stride)\(\)\[(\d+)\]$")
_SCALAR_SOURCE = re.compile(r"^L\['(\w+)'\]$")
_SYM_PLACEHOLDER = re.compile(r"(\w+): \"Sym\((\w+)\)\"")
_INPUT = re.compile(r"^\s*(\w+)\[([^\]]*)\]")
_INT_OO = 1 << 62


def symbols_of(records: list[TraceRecord], strings: dict[int, str], user_file: str = "") -> list[dict[str, Any]]:
    """The symbols of one compile, in creation order."""
    out: list[dict[str, Any]] = []
    for r in records:
        body = r.body if isinstance(r.body, dict) else {}
        if r.kind == "create_symbol":
            sym = {"name": str(body.get("symbol", "")), "source": str(body.get("source", "")),
                   "hint": _int(body.get("val")), "range": str(body.get("vr", ""))}
            sym.update(_user_frame(body.get("user_stack"), strings, user_file))
            if sym["name"] and all(s["name"] != sym["name"] for s in out):
                out.append(sym)
        elif r.kind == "symbolic_shape_specialization":
            name = str(body.get("symbol", ""))
            sources = body.get("sources") or []
            known = next((s for s in out if s["name"] == name), None)
            if known is None:
                known = {"name": name, "source": str(sources[0]) if sources else "", "hint": None, "range": ""}
                known.update(_user_frame(body.get("user_stack"), strings, user_file))
                out.append(known)
            known["specialized"] = _int(body.get("value"))
            known["reason"] = str(body.get("reason", ""))
    return out


def narrow_ranges(symbols: list[dict[str, Any]], guards: list[dict[str, Any]]) -> None:
    """Tighten each symbol's range with the shape guards on its source (``2 <= L['x'].size()[1] <= 4096``)."""
    for sym in symbols:
        src = sym.get("source")
        if not src or "specialized" in sym:
            continue
        lo, hi = _parse_range(sym.get("range", ""))
        esc = re.escape(src)
        for g in guards:
            text = g.get("text", "")
            if src not in text:
                continue
            m = re.fullmatch(rf"(-?\d+) <= {esc}(?: <= (-?\d+))?", text)
            if m:
                lo = max(lo, int(m.group(1)))
                if m.group(2):
                    hi = min(hi, int(m.group(2)))
            elif (m := re.fullmatch(rf"{esc} <= (-?\d+)", text)):
                hi = min(hi, int(m.group(1)))
            elif (m := re.fullmatch(rf"{esc} == (-?\d+)", text)):
                lo = hi = int(m.group(1))
        sym["range"] = f"[{lo}, {'int_oo' if hi >= _INT_OO else hi}]"


def _parse_range(text: str) -> tuple[int, int]:
    m = re.match(r"\[\s*(-?\w+),\s*(-?\w+)\s*\]", text or "")
    if not m:
        return -_INT_OO, _INT_OO
    lo = -_INT_OO if "oo" in m.group(1) else int(m.group(1))
    hi = _INT_OO if "oo" in m.group(2) else int(m.group(2))
    return lo, hi


def _int(value: Any) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def _user_frame(stack: Any, strings: dict[int, str], user_file: str) -> dict[str, Any]:
    if not isinstance(stack, list) or not stack:
        return {}
    frames = []
    for f in stack:
        if not isinstance(f, dict):
            continue
        name = f.get("filename")
        path = strings.get(name, str(name)) if isinstance(name, int) else str(name or "")
        frames.append({"file": path, "line": f.get("line"), "code": str(f.get("loc", "")).strip()})
    if user_file:
        mine = [f for f in frames if f["file"] == user_file or f["file"].rsplit("/", 1)[-1] == user_file.rsplit("/", 1)[-1]]
        if mine:
            return mine[-1]
    return frames[-1] if frames else {}


# -- calls ---------------------------------------------------------------------------------------

def parse_input(text: str) -> tuple[str, list[int]] | int | None:
    """("f32", [64, 1024]) for a described tensor, the int for a scalar, None otherwise."""
    m = _INPUT.match(text or "")
    if m:
        dims = [int(d) for d in m.group(2).replace(" ", "").split(",") if d.strip().lstrip("-").isdigit()]
        return m.group(1), dims
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _placeholders(dynamo_text: str) -> tuple[list[tuple[str, str, list[Any]]], dict[str, str]]:
    """Tensor placeholders [(name, dtype, dims)] and Sym placeholders {name: symbol} of a Dynamo graph."""
    m = re.search(r"def forward\((.*?)\):", dynamo_text or "", re.S)
    if not m:
        return [], {}
    tensors = []
    for name, short, shape, _stride in TENSOR_ANNOTATION.findall(m.group(1)):
        tensors.append((name, short, split_dims(shape)))
    return tensors, dict(_SYM_PLACEHOLDER.findall(m.group(1)))


def _param_of(placeholder: str) -> str:
    return placeholder[2:-1] if placeholder.startswith("L_") and placeholder.endswith("_") else ""


def bind(symbols: list[dict[str, Any]], dynamo_text: str, params: list[str], inputs: list[str]) -> dict[str, int] | None:
    """The symbols' values for one call's inputs, or None when the call does not fit this graph (a
    static size differs, a dtype differs, a value is out of range)."""
    by_param = dict(zip(params, inputs))
    values: dict[str, int] = {}
    tensors, _syms = _placeholders(dynamo_text)
    for name, short, dims in tensors:
        desc = by_param.get(_param_of(name))
        if desc is None:
            continue
        parsed = parse_input(desc)
        if not isinstance(parsed, tuple):
            return None
        dtype, actual = parsed
        if dtype != short or len(actual) != len(dims):
            return None
        for want, got in zip(dims, actual):
            if isinstance(want, int):
                if want != got:
                    return None
            elif re.fullmatch(r"[a-z]\d+", want):
                if values.setdefault(want, got) != got:
                    return None
    for sym in symbols:
        src = sym.get("source", "")
        m = _SIZE_SOURCE.match(src)
        value = None
        if m and m.group(1) in by_param:
            parsed = parse_input(by_param[m.group(1)])
            if isinstance(parsed, tuple) and int(m.group(3)) < len(parsed[1]):
                dims, i = parsed[1], int(m.group(3))
                if m.group(2) == "size":
                    value = dims[i]
                else:
                    value = 1
                    for d in dims[i + 1:]:
                        value *= d
        elif (m := _SCALAR_SOURCE.match(src)) and m.group(1) in by_param:
            parsed = parse_input(by_param[m.group(1)])
            value = parsed if isinstance(parsed, int) else None
        if value is None:
            continue
        if sym.get("specialized") is not None and value != sym["specialized"]:
            return None
        lo, hi = _parse_range(sym.get("range", ""))
        if not lo <= value <= hi:
            return None
        if values.setdefault(sym["name"], value) != value:
            return None
    return values


def assign_calls(bundle: Bundle, dynamo_texts: dict[str, str]) -> None:
    """Fill ``graph.calls``: which of the capture's calls each graph ran, with the symbols' values.

    Per frame, Dynamo tries its compiled entries newest first and compiles the next one when none
    fits; this replays that with the sizes we know. A graph no call can be tied to (a frame after a
    graph break, a bundle opened from a log) gets one entry with the hints, marked ``call: None``."""
    t = bundle.target
    calls = t.get("calls") or ([t["inputs"]] if t.get("inputs") else [])
    params = list(t.get("params") or [])
    by_frame: dict[str, list[str]] = {}
    for g in bundle.graphs:
        frame, _, _ = g.compile_id.rpartition("/")
        cids = by_frame.setdefault(frame, [])
        if g.compile_id not in cids:
            cids.append(g.compile_id)
    served: dict[str, list[dict[str, Any]]] = {}
    symbols = {g.compile_id: g.symbols for g in bundle.graphs}
    for cids in by_frame.values():
        texts = [dynamo_texts.get(c, "") for c in cids]
        names = params or [_param_of(n) for n, _, _ in _placeholders(texts[0] if texts else "")[0]]
        if not calls or not any(_param_of(n) in names for t_ in texts for n, _, _ in _placeholders(t_)[0]):
            continue
        compiled = 0
        for i, inputs in enumerate(calls):
            hit = None
            for j in range(compiled - 1, -1, -1):
                values = bind(symbols[cids[j]], texts[j], names, inputs)
                if values is not None:
                    hit = (cids[j], values)
                    break
            if hit is None and compiled < len(cids):
                values = bind(symbols[cids[compiled]], texts[compiled], names, inputs)
                compiled += 1
                if values is not None:
                    hit = (cids[compiled - 1], values)
            if hit is not None:
                served.setdefault(hit[0], []).append({"call": i, "inputs": list(inputs), "values": hit[1]})
    for g in bundle.graphs:
        if g.compile_id in served:
            g.calls = [dict(c) for c in served[g.compile_id]]
        elif g.symbols:
            g.calls = [{"call": None, "inputs": [], "values": {s["name"]: s["hint"] for s in g.symbols
                                                               if s.get("hint") is not None}}]
