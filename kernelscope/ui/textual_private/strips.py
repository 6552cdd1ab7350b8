"""Two small private shortcuts: a Strip's offsets with kept metas, and a border title set on one line.

Checked against Textual 8.2.8 (``Strip.apply_offsets``; ``Widget.border_subtitle`` stored in
``_border_subtitle`` by its ``_BorderTitle`` descriptor); on only where ``FAST.strips`` (see
``kernelscope.ui.textual_private``), elsewhere Textual's own calls.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.content import Content
from textual.geometry import Region
from textual.strip import Strip

from kernelscope.ui.textual_private import FAST

_OFFSETS: dict[tuple[int, int], Style] = {}


def with_offsets(strip: Strip | list[Segment], x: int, y: int, cell_length: int | None = None) -> Strip:
    """``strip.apply_offsets(x, y)`` (each segment's style plus a meta style holding the cell it starts at,
    for mouse selection), with the meta styles kept instead of pickled again for every segment of every
    line drawn. Also takes the segments of a line ``cell_length`` cells long."""
    if not FAST.strips:
        whole = strip if isinstance(strip, Strip) else Strip(strip, cell_length)
        return whole.apply_offsets(x, y)
    out = []
    for text, style, _ in strip:
        meta = _OFFSETS.get((x, y))
        if meta is None:
            if len(_OFFSETS) > 65536:
                _OFFSETS.clear()
            meta = _OFFSETS[(x, y)] = Style.from_meta({"offset": (x, y)})
        out.append(Segment(text, style + meta if style else meta))
        x += len(text)
    return Strip(out, strip.cell_length if cell_length is None else cell_length)


def set_subtitle_line(widget, text: str) -> None:
    """Set a widget's border subtitle (``text``, never markup), repainting its bottom border line alone.

    Setting ``border_subtitle`` repaints the whole widget, every line of its border and background (a
    pane, on each move of the selection). The private ``_border_subtitle`` (what the setter stores) takes
    the text here and only the bottom line is marked for repaint; where the fast path is off, or the
    widget is not laid out, the setter."""
    width, height = widget.outer_size  # the border is outside the content area
    if not (FAST.strips and widget.is_mounted and height):
        widget.border_subtitle = Content(text)
        return
    widget._border_subtitle = Content(text).expand_tabs(4).split()[0]
    off = widget.content_offset
    widget.refresh(Region(-off.x, height - 1 - off.y, width, 1))
