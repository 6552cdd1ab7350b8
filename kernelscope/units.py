"""How kernelscope writes sizes, rates and counts: one rule everywhere.

Sizes and rates are decimal SI, as GPU bandwidth is quoted: 1 KB = 10^3 bytes, 1 MB = 10^6,
1 GB = 10^9, and GB/s = 10^9 bytes per second. No KiB/MiB anywhere in what a user reads.
"""

from __future__ import annotations

_UNITS = (("GB", 1e9), ("MB", 1e6), ("KB", 1e3))


def fmt_bytes(n: int | float | None) -> str:
    """``1.0 MB`` for 1_000_000 bytes (decimal SI); ``?`` when unknown."""
    if n is None:
        return "?"
    for unit, size in _UNITS:
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def short_bytes(n: int | float | None) -> str:
    """The compact form for narrow columns: ``32MB``, ``1.5KB``."""
    return fmt_bytes(n).replace(".0 ", " ").replace(" ", "")


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 kernel``, ``2 kernels``, ``0 breaks``; ``many`` for irregular plurals."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


def shorten_middle(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells by dropping its middle (``triton_poi_fused_…_relu_0``): the
    prefix says the kind, the suffix keeps the index that tells kernels apart. The cut falls on
    ``_`` boundaries where it can, so that the words kept are whole."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    if width == 1:
        return "…"
    tail = (width - 1) // 2
    end = text[len(text) - tail:] if tail else ""
    cut = end.find("_")
    if 0 < cut and len(end) - cut >= 3:  # start the tail on a word: "_relu_0", not "lu_0"
        end = end[cut:]
    head = width - 1 - len(end)
    start = text[:head]
    under = start.rfind("_")
    if under >= head // 2 and under >= 3:  # end the head after a word: "triton_poi_", not "triton_po"
        spare = head - under - 1
        start = text[:under + 1]
        wider = text[len(text) - len(end) - spare:]
        cut = wider.find("_")
        end = wider[cut:] if 0 <= cut and len(wider) - cut > len(end) else end
    return start + "…" + end


def base_name(path: str | None) -> str:
    """The file name of a path as shown to a user (``.../samples/add_relu.py`` -> ``add_relu.py``)."""
    return (path or "").replace("\\", "/").rsplit("/", 1)[-1]
