"""The shapes of the manifest's free-form sections (``extra``: compile_time, fusion, bench), one table
checked where a bundle is read (bundle/io.py) and a graph's not-fused pairs where its detail file is
(bundle/shards.py). A section shaped otherwise than kernelscope writes it (a string for a list, NaN for a
time, a missing list) is left out with a note, as if the bundle never had it: nothing downstream (show,
report, export, the UI) meets it. Numbers in compile_time and fusion are finite. No torch, no textual.
"""

from __future__ import annotations

import math
from typing import Any

from kernelscope.bundle.bench_record import ANY, LIST, NUM, STR, bench_record_problem, shape_problem

_BUFFER = {"name": STR, "shape": LIST, "dtype": STR, "bytes_written": NUM, "bytes_read": NUM, "readers": NUM,
           "bytes": NUM}
PAIR = {"graph": STR, "producer": STR, "consumer": STR, "producer_name": STR, "consumer_name": STR,
        "producer_launch": NUM, "consumer_launch": NUM, "buffers": [_BUFFER], "reason": STR, "scheduler": STR,
        "decided_by": STR, "transfers": NUM, "bytes": NUM}
FUSION = {"log": ANY, "pairs": [PAIR], "fusions_logged": NUM, "refusals_logged": NUM, "source": STR,
          "pairs_in": STR, "pair_count": NUM}
COMPILE_TIME = {
    "compiles": [{"compile_id": STR, "graphs": [STR], "function": STR, "file": STR, "line": NUM, "total_s": NUM,
                  "frame_compile_s": NUM, "phases": {"*": NUM}, "guards": NUM, "shape_guards": NUM,
                  "inductor_cache": STR, "fx_cache": STR, "fail": STR, "spans": [LIST]}],
    "kernels": [{"compile_id": STR, "name": STR, "compile_s": NUM, "autotune_cache": STR, "configs": NUM,
                 "kernel_id": STR, "autotune_s": NUM, "total_s": NUM, "lines": [STR]}],
    "phases": {"*": NUM}, "total_s": NUM, "source": STR}
# The lists a reader walks: a section that has the key must give a list there.
_LISTS = {"compile_time": ("compiles", "kernels"), "fusion": ()}
SHAPES = {"compile_time": COMPILE_TIME, "fusion": FUSION}


_BIG = 2 ** 63


def _not_finite(value: Any, where: str) -> str | None:
    """The first number that is not finite (NaN, an infinity, an integer past a float's range). One tight
    walk finds out whether there is one; only then is the value walked again to say where."""
    stack, isfinite = [value], math.isfinite
    while stack:
        x = stack.pop()
        t = type(x)
        if t is dict:
            stack.extend(x.values())
        elif t is list:
            stack.extend(x)
        elif (t is float and not isfinite(x)) or (t is int and not -_BIG < x < _BIG):
            return _where_not_finite(value, where)
    return None


def _where_not_finite(value: Any, where: str) -> str | None:
    stack = [(value, where)]
    while stack:
        v, w = stack.pop()
        if isinstance(v, float) and not math.isfinite(v):
            return f"{w} is {v}, not a finite number"
        if isinstance(v, int) and not isinstance(v, bool) and not -_BIG < v < _BIG:
            return f"{w} is a {len(str(abs(v)))}-digit number, past any count kernelscope writes"
        if isinstance(v, dict):
            stack.extend((x, f"{w}.{k}") for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((x, f"{w}[{i}]") for i, x in enumerate(v))
    return None


def section_problem(name: str, value: Any) -> str | None:
    """What is wrong with ``extra[name]`` for the sections kernelscope reads (None: nothing, or not one)."""
    if value is None:
        return None
    if name == "bench":
        return bench_record_problem(value)
    shape = SHAPES.get(name)
    if shape is None:
        return None
    if not isinstance(value, dict):
        return f"{name} is not an object"
    for key in _LISTS.get(name, ()):
        if key in value and not isinstance(value[key], list):
            return f"{name}.{key} is not a list"
    if name == "compile_time":
        for i, c in enumerate(value.get("compiles") or []):
            for j, span in enumerate(c.get("spans") or [] if isinstance(c, dict) else []):
                if not (isinstance(span, list) and len(span) == 3 and isinstance(span[0], str)
                        and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in span[1:])):
                    return f"compile_time.compiles[{i}].spans[{j}] is not [name, begin, end]"
    return shape_problem(value, shape, name) or _not_finite(value, name)


def pairs_problem(pairs: Any, where: str) -> str | None:
    """What is wrong with a graph detail file's not-fused pairs (None: nothing)."""
    return shape_problem(pairs, [PAIR], where) or _not_finite(pairs, where)


# The sections a reader checks, what a note calls each, and what to do when one is left out.
CHECKED = {"bench": ("bench record", "run `kernelscope bench` again"),
           "compile_time": ("compile-time record", "open or capture again"),
           "fusion": ("not-fused pairs' record", "open or capture again")}


def keep_if_sound(bundle: Any, name: str, value: Any, where: str) -> bool:
    """Whether ``value`` may stand as ``bundle.extra[name]``; if not, a note names the file (``where``) and
    the problem, and says what to do: a damaged section is left out, as if the bundle never had it."""
    problem = section_problem(name, value)
    if problem:
        what, again = CHECKED[name]
        bundle.notes.append(f"the {what} in {where} is damaged ({problem}) and was left out; {again}")
    return not problem
