"""What a kernel reads of each buffer it is given, from its source (pure, no torch).

A buffer passed to a kernel is not always read whole:
- a gather (an embedding lookup) loads ``table + (col + ROW*idx)`` where ``idx`` was loaded from
  another buffer: it reads at most (index count x ROW) elements, fewer when ids repeat, so the
  figure is an upper bound;
- a slice (one third of a fused QKV buffer) loads ``ptr + (768 + x0 + 2304*x1)``: it reads the
  elements its index expression reaches, at most the extent of that expression over the loop ranges.

Index expressions are read from the Triton source (``tl.load(in_ptrN + (EXPR), ...)``, ranges from
``xN = xindex // K % M`` and the launch's ``xnumel`` / ``r0_numel``) or the C++ source
(``in_ptrN[static_cast<int64_t>(EXPR)]``, ``loadu(in_ptrN + static_cast<int64_t>(EXPR), ...)``,
ranges from the ``for`` loops). Anything not understood leaves the buffer's whole size, as before.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

_TRITON_LOAD = re.compile(r"(tmp\w+)\s*=\s*tl\.load\((\w+)\s*\+\s*\((.*?)\)\s*,")
_TRITON_LOAD_BARE = re.compile(r"(tmp\w+)\s*=\s*tl\.load\((\w+)\s*\+\s*([\w*+ ]+?)\s*,")
_CPP_INDEX = re.compile(r"(?:auto\s+)?(tmp\w+)\s*=\s*[^;]*?\b(in_ptr\d+|in_out_ptr\d+)\s*(?:\[|\+)\s*"
                        r"static_cast<int64_t>\((.*?)\)[\],]")
_ASSIGN = re.compile(r"^\s*(?:auto\s+|const\s+auto\s+)?(tmp\w+)\s*=\s*(.+?);?\s*$", re.M)
_TRITON_VAR = re.compile(r"^\s*([xr]\w*\d+)\s*=\s*(.+?)\s*$", re.M)
_CPP_FOR = re.compile(r"for\s*\(\s*int64_t\s+(\w+)\s*=\s*static_cast<int64_t>\((-?\d+)L?\);\s*\w+\s*<\s*"
                      r"static_cast<int64_t>\((-?\d+)L?\)")
_TMP = re.compile(r"\btmp\w+\b")


@dataclass
class Access:
    """What one kernel reads of one pointer argument."""

    elements: int  # elements read, at most
    bound: bool  # True: an upper bound (a gather may repeat rows)
    how: str  # "gather", "slice"


def _affine(expr: str, ranges: dict[str, int]) -> tuple[int, int, set[str]] | None:
    """(min, max, variables) of an index expression that is a sum of c*var and constants with
    non-negative coefficients, every variable ranging over [0, ranges[var])."""
    expr = expr.replace("static_cast<int64_t>", "").replace("L", "")
    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return None
    lo = hi = 0
    used: set[str] = set()
    for term in _terms(node):
        if term is None:
            return None
        coef, var = term
        if var is None:
            lo += coef
            hi += coef
            continue
        if var not in ranges or coef < 0:
            return None
        used.add(var)
        hi += coef * (ranges[var] - 1)
    return lo, hi, used


def _terms(node: ast.AST):
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        yield from _terms(node.left)
        yield from _terms(node.right)
    elif isinstance(node, ast.Constant) and isinstance(node.value, int):
        yield node.value, None
    elif isinstance(node, ast.Name):
        yield 1, node.id
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        a, b = node.left, node.right
        if isinstance(a, ast.Name):
            a, b = b, a
        if isinstance(a, ast.Constant) and isinstance(a.value, int) and isinstance(b, ast.Name):
            yield a.value, b.id
        else:
            yield None
    else:
        yield None


def _gather_rows(expr: str) -> tuple[int, str] | None:
    """(row elements, index tmp) of ``col + ROW*tmpN``: the coefficient that multiplies a loaded value."""
    m = re.search(r"(\d+)L?\s*\*\s*(tmp\w+)|(tmp\w+)\s*\*\s*(\d+)L?", expr)
    if not m:
        return None
    return (int(m.group(1)), m.group(2)) if m.group(1) else (int(m.group(4)), m.group(3))


def _index_source(tmp: str, assigns: dict[str, str], loads: dict[str, str], seen: set[str] | None = None) -> str | None:
    """The pointer a tmp's value was loaded from, following tmpA = f(tmpB) back."""
    seen = seen or set()
    if tmp in seen:
        return None
    seen.add(tmp)
    if tmp in loads:
        return loads[tmp]
    for dep in _TMP.findall(assigns.get(tmp, "")):
        found = _index_source(dep, assigns, loads, seen)
        if found:
            return found
    return None


def triton_ranges(source: str, numels: dict[str, int]) -> dict[str, int]:
    """Ranges of the index variables of a Triton kernel: xindex over xnumel, x1 = xindex // 768 ..."""
    ranges: dict[str, int] = {}
    for prefix in ("x", "y", "r0_", "r"):
        n = numels.get(f"{prefix}numel")
        if n:
            ranges[f"{prefix}index"] = n
    for var, rhs in _TRITON_VAR.findall(source):
        if var.endswith(("index", "offset", "mask", "numel")) or var in ranges:
            continue
        r = _range_of(rhs, ranges)
        if r:
            ranges[var] = r
    return ranges


def _range_of(rhs: str, ranges: dict[str, int]) -> int | None:
    rhs = rhs.strip()
    if rhs.startswith("(") and rhs.endswith(")"):
        rhs = rhs[1:-1].strip()
    m = re.fullmatch(r"\(?(\w+)\)?(?:\s*//\s*(\d+))?\)?(?:\s*%\s*(\d+))?", rhs.replace("((", "(").replace("))", ")"))
    if not m or m.group(1) not in ranges:
        return None
    n = ranges[m.group(1)]
    if m.group(2):
        n = -(-n // int(m.group(2)))
    if m.group(3):
        n = min(n, int(m.group(3)))
    return n


def cpp_ranges(source: str) -> dict[str, int]:
    """Ranges of a C++ kernel's loop variables (each ``for`` loop's stop; vector lanes stay inside it)."""
    ranges: dict[str, int] = {}
    for var, start, stop in _CPP_FOR.findall(source):
        if int(start) == 0:
            ranges[var] = max(ranges.get(var, 0), int(stop))
    return ranges


def reads(source: str, lang: str, numels: dict[str, int] | None = None,
          index_elements: dict[str, int] | None = None) -> dict[str, Access]:
    """For each pointer argument the kernel loads from: the elements it reads, when its loads are
    understood (gathers and affine slices). ``index_elements``: elements of each pointer argument's
    buffer (the index count of a gather). Pointers not in the answer: not understood."""
    if lang == "triton":
        ranges = triton_ranges(source, numels or {})
        found = [(t, p, e) for t, p, e in _TRITON_LOAD.findall(source)]
        seen = {t for t, _, _ in found}
        found += [(t, p, e) for t, p, e in _TRITON_LOAD_BARE.findall(source) if t not in seen]
    elif lang == "cpp":
        ranges = cpp_ranges(source)
        found = _CPP_INDEX.findall(source)
    else:
        return {}
    assigns = {t: rhs for t, rhs in _ASSIGN.findall(source)}
    loads = {t: p for t, p, _ in found}
    per_ptr: dict[str, list[Access | None]] = {}
    for _tmp, ptr, expr in found:
        per_ptr.setdefault(ptr, []).append(_one_load(expr, ranges, assigns, loads, index_elements or {}))
    out: dict[str, Access] = {}
    for ptr, accesses in per_ptr.items():
        if any(a is None for a in accesses):
            continue
        best = min(accesses, key=lambda a: a.elements)  # loads of one pointer overlap: the widest one counts
        widest = max(accesses, key=lambda a: a.elements)
        out[ptr] = Access(widest.elements, any(a.bound for a in accesses), best.how if best is widest else widest.how)
    return out


def _one_load(expr: str, ranges: dict[str, int], assigns: dict[str, str], loads: dict[str, str],
              index_elements: dict[str, int]) -> Access | None:
    tmps = _TMP.findall(expr)
    if tmps:
        rows = _gather_rows(expr)
        if rows is None or len(set(tmps)) != 1:
            return None
        row, tmp = rows
        src = _index_source(tmp, assigns, loads)
        if src is None or src not in index_elements:
            return None
        return Access(index_elements[src] * row, True, "gather")
    aff = _affine(expr, ranges)
    if aff is None:
        return None
    lo, hi, used = aff
    distinct = 1
    for v in used:
        distinct *= ranges[v]
    return Access(min(hi - lo + 1, distinct), False, "slice")
