"""How CodeView draws a line of code fast: its tokens as styled runs, cropped to the window, segment for
segment what rendering a rich Text of them and cropping the Strip gives (tests/test_ui_render_paths.py
compares the two). Pure rich: no Textual here.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from rich.segment import Segment
from rich.style import Style

DARK_SYNTAX = "monokai"
LIGHT_SYNTAX = "friendly"


@lru_cache(maxsize=2)
def _syntax_theme(dark: bool):
    from rich.syntax import PygmentsSyntaxTheme  # pulls in Pygments' styles: not needed for a first frame

    return PygmentsSyntaxTheme(DARK_SYNTAX if dark else LIGHT_SYNTAX)


@lru_cache(maxsize=4096)
def token_style(ttype, dark: bool) -> Style:
    """Foreground-only style of a Pygments token (the view's background shows through)."""
    s = _syntax_theme(dark).get_style_for_token(ttype)
    return Style(color=s.color, bold=s.bold, italic=s.italic, underline=s.underline)


@lru_cache(maxsize=1)
def single_cell_chars() -> frozenset[str]:
    """Printable characters one cell wide, as rich measures them: ASCII, Latin-1, Greek, Cyrillic,
    punctuation (… ·), arrows, maths (≤ ×), box drawing and blocks (─ │ █ ▶), the text of the Info pane."""
    from rich import cells

    ranges = ((0x20, 0x7E), (0xA0, 0x2FF), (0x370, 0x482), (0x2010, 0x2027), (0x2030, 0x205E), (0x2190, 0x22FF),
              (0x2500, 0x25FF))
    chars = (chr(c) for a, b in ranges for c in range(a, b + 1))
    # Those rich's cell_len itself takes as one cell without measuring (its own set, where this rich has one)
    # need no lookup in its width table (~1,600 lookups, 2 ms of the first frame, down to ~600).
    known = getattr(cells, "_SINGLE_CELLS", frozenset())
    return frozenset(c for c in chars if c.isprintable() and (c in known or cells.get_character_cell_size(c) == 1))


def line_runs(tokens, dark: bool, limit: int | None = None) -> tuple[list[tuple[str, Style | None]], bool, int,
                                                                       bool] | None:
    """A line's tokens as runs of (text, token style or None: no span), neighbours without a style joined,
    whether any token of the line has a style, the length the runs cover and whether that is the whole
    line; None when a character is not one cell wide. With ``limit``, runs stop once they cover that many
    cells (a long FX line is drawn 40 cells at a time): the rest of the line is only looked at for a style."""
    single = single_cell_chars()
    runs: list[list] = []
    spans = False
    length = 0
    for i, (ttype, value) in enumerate(tokens):
        if not value:
            continue
        if limit is not None and length >= limit:
            spans = spans or any(v and t is not None and token_style(t, dark) for t, v in tokens[i:])
            return [(value, style) for value, style in runs], spans, length, False
        if not (value.isascii() and value.isprintable()) and not single.issuperset(value):
            return None
        length += len(value)
        style = None if ttype is None else token_style(ttype, dark)
        if style:
            spans = True
            runs.append([value, style])
        elif runs and runs[-1][1] is None:
            runs[-1][0] += value
        else:
            runs.append([value, None])
    return [(value, style) for value, style in runs], spans, length, True


def cropped(runs_of_line: tuple[list[tuple[str, Style | None]], bool, int, bool], start: int, width: int,
            line_style: Style, combine: Callable[[Style, Style], Style]) -> list[Segment]:
    """The segments of a line's runs from cell ``start``, ``width`` cells, padded: what rendering a Text of
    its tokens in ``line_style`` and cropping the Strip gives (segment for segment, rich's rules kept: a
    token without a style is no span, neighbours without one are one segment, and a line with no span at
    all is one unstyled segment), in a fraction of the time."""
    runs, spans, length, _whole = runs_of_line  # runs cover the window: length >= start + width, or whole
    plain = line_style if spans else None
    out: list[Segment] = []
    end, pos = start + width, 0
    for value, style in runs:
        a, pos = pos, pos + len(value)
        if pos <= start:
            continue
        if a >= end:
            break
        out.append(Segment(value[max(start - a, 0):min(end, pos) - a], plain if style is None else combine(line_style, style)))
    if length == 0 and start == 0:
        out.append(Segment(""))  # an empty line renders as one empty, unstyled segment
    pad = width - max(0, min(length, end) - start)
    if pad > 0:
        out.append(Segment(" " * pad, line_style))
    return out


class StylePairs:
    """``line_style + token``, kept: a screen of code adds the same few pairs hundreds of times."""

    def __init__(self) -> None:
        self._by_line: dict[Style, dict[Style, Style]] = {}  # line style -> token style -> both

    def add(self, line_style: Style, token: Style) -> Style:
        by_token = self._by_line.get(line_style)
        if by_token is None:
            if len(self._by_line) > 64:
                self._by_line.clear()
            by_token = self._by_line[line_style] = {}
        style = by_token.get(token)
        if style is None:
            style = by_token[token] = line_style + token
        return style

    def clear(self) -> None:
        self._by_line.clear()
