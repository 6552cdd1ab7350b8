"""Finding a kernel by what a user types (``show --kernel``, ``bench --kernel``): its id, its whole name,
or a part of its name, as ``/`` in the kernel list and a talk script's ``kernel:`` take one; and the
names a one-line error offers when several kernels or none answer. Bundle.kernel() asks this module.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from typing import Any

from kernelscope.units import kernel_name_core

SHOWN = 8  # names in a line before "and N more": a 15,000-kernel job must not print a wall


def matching(kernels: list[Any], key: str) -> list[Any]:
    """The kernels ``key`` names, in launch order: the one whose id it is; else those whose name it is;
    else those whose name holds it (whose id, when it has a "/" or "@"), any case when ``key`` is all
    lower case, as ``/`` searches. Of several that hold it, the one holding it as whole words alone
    (``add_1`` is ``..._add_1``, not ``..._add_10``)."""
    by_id = [k for k in kernels if k.id == key]
    if by_id:
        return by_id
    named = [k for k in kernels if k.name == key]
    if named or not key:
        return named
    fold = key == key.lower()
    needle = key.lower() if fold else key
    in_id = "/" in key or "@" in key

    def text(k: Any) -> str:
        t = k.id if in_id else k.name
        return t.lower() if fold else t

    found = [k for k in kernels if needle in text(k)]
    if len(found) > 1:
        # a word edge is asked for only where the key itself ends in a letter or digit
        whole = re.compile(("(?<![a-zA-Z0-9])" if needle[0].isalnum() else "") + re.escape(needle)
                           + ("(?![a-zA-Z0-9])" if needle[-1].isalnum() else ""))
        words = [k for k in found if whole.search(text(k))]
        if len(words) == 1:
            return words
    return found


def names_line(kernels: list[Any], shown: int = SHOWN) -> str:
    """``a, b, c and 4 more``: each kernel by its name where that is its own, else by its id, without its
    graph where that is its own (``extern_kernels.mm@3``)."""
    names = Counter(k.name for k in kernels)
    launches = Counter(_in_graph(k) for k in kernels)
    labels = [k.name if names[k.name] == 1 else _in_graph(k) if launches[_in_graph(k)] == 1 else k.id
              for k in kernels]
    more = len(labels) - shown
    return ", ".join(labels[:shown]) + (f" and {more} more" if more > 0 else "")


def _in_graph(k: Any) -> str:
    """The id without its graph: ``extern_kernels.mm@3`` of ``0-0-forward/extern_kernels.mm@3``."""
    return k.id.partition("/")[2] or k.id


def closest_names(kernels: list[Any], key: str, n: int = 5) -> list[str]:
    """The names nearest to ``key`` (difflib), by the whole name and by its ops part (``add_relu_0`` of
    ``triton_poi_fused_add_relu_0``, what a user remembers), nearest first."""
    names = list(dict.fromkeys(k.name for k in kernels))
    cores: dict[str, list[str]] = {}
    for name in names:
        cores.setdefault(kernel_name_core(name).lower(), []).append(name)
    want = key.lower()
    scored: dict[str, float] = {}
    for close in difflib.get_close_matches(want, list(cores), n=n, cutoff=0.6):
        for name in cores[close]:
            scored[name] = difflib.SequenceMatcher(None, want, close).ratio()
    for close in difflib.get_close_matches(want, [x.lower() for x in names], n=n, cutoff=0.6):
        name = next(x for x in names if x.lower() == close)
        scored[name] = max(scored.get(name, 0.0), difflib.SequenceMatcher(None, want, close).ratio())
    return sorted(scored, key=lambda name: -scored[name])[:n]


def not_found_line(kernels: list[Any], key: str) -> str:
    """Why ``key`` names no kernel, in one line: the closest names, else (a few kernels) all of them."""
    close = closest_names(kernels, key)
    if close:
        return f"no kernel {key!r} in this capture; the closest: {', '.join(close)}"
    if len(kernels) <= SHOWN:
        return f"no kernel {key!r} in this capture; its kernels: " + (names_line(kernels) or "none")
    return (f"no kernel {key!r} in this capture of {len(kernels):,} kernels, and no name close to it; "
            "`kernelscope show BUNDLE --all` lists them")


def ambiguous_line(found: list[Any], key: str) -> str:
    """Several kernels answer ``key``: how many, some of them, and how to name one."""
    return f"{len(found)} kernels match {key!r}: {names_line(found)}; give more of the name, or the id"
