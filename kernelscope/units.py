"""How kernelscope writes sizes, rates and counts: one rule everywhere.

Sizes and rates are decimal SI, as GPU bandwidth is quoted: 1 KB = 10^3 bytes, 1 MB = 10^6,
1 GB = 10^9, and GB/s = 10^9 bytes per second. No KiB/MiB anywhere in what a user reads.
"""

from __future__ import annotations

import re

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


# What every generated kernel's name starts with and the table's kind column already says:
# ``triton_poi_fused_``, ``triton_red_``, ``cpp_fused_``, an extern's ``extern_kernels.`` or ``aten.``.
_KERNEL_DECORATION = re.compile(r"^(?:(?:triton_(?:[a-z]{3}_)?|cpp_)(?:fused_)?|(?:extern_kernels\.|torch\.ops\.)?aten\.|extern_kernels\.)")


def kernel_name_core(name: str) -> str:
    """A kernel's name without its decoration: ``triton_poi_fused_add_relu_0`` -> ``add_relu_0``."""
    core = _KERNEL_DECORATION.sub("", name, count=1).lstrip("_")
    return name if not core or core.isdigit() else core


def shorten_kernel_name(name: str, width: int) -> str:
    """A kernel's name cut to ``width`` cells keeping what tells it apart: its fused ops' tail and index.

    The decoration goes first (``triton_red_fused_``: the kind column says it), then the middle of the
    op names, on ``_`` boundaries, the last ops and the index kept whole where they fit:
    ``triton_red_fused_add_embedding_native_layer_norm_0`` -> ``add_…_native_layer_norm_0`` ->
    ``…layer_norm_0``. A name that fits is left as it is."""
    if len(name) <= width:
        return name
    if width <= 1:
        return "…"[:max(width, 0)]
    core = kernel_name_core(name)
    if len(core) <= width:
        return core
    words = core.split("_")
    room = width - 1  # the ellipsis
    # The first op, when short beside the room, says where the fusion starts; the tail has the rest.
    head = words[0] + "_" if len(words) > 2 and len(words[0]) + 1 <= room // 3 else ""
    last = len(words) - (2 if len(words) > 1 and words[-1].isdigit() else 1)  # the last op and its index
    for lead in ([head, ""] if head else [""]):
        for i in range(1, last + 1):
            joined = lead + "…" + ("_" if lead else "") + "_".join(words[i:])
            if len(joined) <= width:
                return joined
    return "…" + core[len(core) - room:]


def fit_kernel_title(title: str, name: str, width: int, *, optional_lead: bool = False) -> str:
    """``title`` (which holds the kernel ``name``) in ``width`` cells: the name shortened as
    :func:`shorten_kernel_name` does, the words around it kept; with ``optional_lead`` the words
    before the name (``fused kernel · ``, decoration) go first where the name would keep under 18."""
    if len(title) <= width or not name or name not in title:
        return title
    before, after = title.split(name, 1)
    if optional_lead and width - len(before) - len(after) < min(len(name), 18):
        before = ""
    return before + shorten_kernel_name(name, max(width - len(before) - len(after), 8)) + after


def base_name(path: str | None) -> str:
    """The file name of a path as shown to a user (``.../samples/add_relu.py`` -> ``add_relu.py``)."""
    return (path or "").replace("\\", "/").rsplit("/", 1)[-1]


def wrap_names(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` wrapped to ``width`` cells, its leading spaces kept on the first line and ``indent`` on
    the others, as textwrap does, except that a word longer than a line (a fused kernel's name) breaks
    after one of its ``_``, never inside an op's name: ``…_scaled_dot_product_`` / ``efficient_…``."""
    lead = text[:len(text) - len(text.lstrip())]
    lines: list[str] = []
    line = lead
    for word in text.split():
        room = width - len(indent)
        parts = re.findall(r"[^_]*_+|[^_]+$", word) if len(word) > room else [word]
        for j, part in enumerate(parts):
            glue = "" if j or line.strip() == "" else " "
            if line.strip() and len(line) + len(glue) + len(part) > width:
                lines.append(line)
                line, glue = indent, ""
            line += glue + part
    if line.strip():
        lines.append(line)
    return lines or [text]
