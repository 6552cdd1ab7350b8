"""LineStyles: Textual's StylesCache that keeps the styled form of each content line it is handed.

Checked against Textual 8.2.8 (``textual._styles_cache.StylesCache.render`` and ``render_line``, whose
pipeline the shortcut below gives the output of); on only where ``FAST.styles`` (see
``kernelscope.ui.textual_private``). ``styles_cache`` makes one: a LineStyles, or Textual's own.
"""

from __future__ import annotations

from rich.segment import Segment
from textual.strip import Strip

from kernelscope.ui.lru import Kept
from kernelscope.ui.textual_private import FAST

try:
    from textual._styles_cache import StylesCache
except ImportError:  # a Textual laid out otherwise: FAST.styles is off, LineStyles never made
    StylesCache = object  # type: ignore[misc,assignment]

STYLED_LINES = 128  # content lines kept with their styled form, per widget: three screens of a pane


def styles_cache(by_identity: bool):
    """A widget's styles cache: LineStyles where the fast path is on (``by_identity``: the widget's
    render_line gives the same Strip object for the same line), else None (keep Textual's own)."""
    return LineStyles(by_identity) if FAST.styles else None


def use_line_styles(widget, *, by_identity: bool) -> None:
    """Give ``widget`` a LineStyles (see ``styles_cache``) before it is drawn; where the fast path is off, it
    keeps Textual's own."""
    cache = styles_cache(by_identity)
    if cache is not None:
        widget._styles_cache = cache


def clear_lines(cache) -> None:
    """Forget the styled lines a LineStyles kept (a style change); Textual's own cache needs nothing."""
    if isinstance(cache, LineStyles):
        cache.clear_lines()


class LineStyles(StylesCache):
    """Textual's StylesCache that keeps the styled form of each content line it is handed.

    After a scroll Textual sends every line of a widget through its style pipeline again (background,
    tint, opacity, side borders), though most lines are ones drawn a key ago one row up or down. A content
    line comes out of that pipeline the same at every row between the widget's top and bottom gutters
    (border, padding) and outlines (Textual 8.2.8, StylesCache.render_line, its branch for content): its
    styled form is kept, keyed by the content Strip (the same object from a widget's own line cache, else
    its segments) and every input of the pipeline (sizes, colours, borders, tint, opacity, hatch). So a
    bordered container (a pane, whose children cover all but its border) draws its side-border line once,
    not once per row. The gutter and outline rows take Textual's path. ``clear_lines`` forgets them."""

    def __init__(self, by_identity: bool) -> None:
        super().__init__()
        self._by_identity = by_identity
        self._styled: Kept[object, tuple] = Kept(STYLED_LINES)

    def clear_lines(self) -> None:
        self._styled.clear()

    # For one render call: (whether lines are kept, the pipeline's inputs, whether a line passes through
    # unchanged, the styles and sizes these were computed for).
    _frame: tuple | None = None

    def render(self, *args, **kwargs):
        self._frame = None  # what the lines of one call share is looked up at its first line, once
        try:
            return super().render(*args, **kwargs)
        finally:
            self._frame = None

    def _frame_inputs(self, styles, size, content_size, padding, base_background, background, opacity, ansi_theme,
                      native_ansi) -> tuple:
        border, outline = styles.border, styles.outline
        simple = not (padding.top or padding.bottom or border[0][0] or border[2][0] or outline[0][0]
                      or outline[2][0])
        hatch = styles.hatch if styles.has_rule("hatch") else None
        inputs = (size, content_size, padding, base_background, background, opacity, ansi_theme, native_ansi, border,
                  outline, styles.tint, styles.text_opacity, hatch)
        # The rows whose line is the content's line through the pipeline (the rest: borders, padding, outlines).
        gutter = styles.gutter
        band = (max(gutter.top, 1 if outline[0][0] else 0),
                min(size.height - gutter.bottom, size.height - 1 if outline[2][0] else size.height), gutter.top)
        # Nothing around or over the content (no padding, side border or outline, tint, opacity, hatch):
        # Textual's render_line (8.2.8) gives a content line as wide as the content area back as a Strip of
        # the same segments, declared as wide as the widget: the content line itself when those are equal.
        passthrough = (not (padding.left or padding.right or border[1][0] or border[3][0] or outline[1][0]
                                       or outline[3][0])
                       and not styles.tint.a and opacity == 1.0 and styles.text_opacity == 1.0
                       and (hatch is None or hatch == "none" or hatch[0] == " " or not hatch[1].a))
        return band, inputs, passthrough and simple

    def render_line(self, styles, y, size, content_size, padding, base_background, background, render_content_line,
                    border_title, border_subtitle, opacity, ansi_theme, native_ansi):
        frame = self._frame
        if frame is None or frame[3] is not styles or frame[4] != (size, content_size, padding):
            band, inputs, passthrough = self._frame_inputs(styles, size, content_size, padding, base_background,
                                                           background, opacity, ansi_theme, native_ansi)
            frame = self._frame = (band, inputs, passthrough, styles, (size, content_size, padding))
        (first, last, top), inputs, passthrough = frame[0], frame[1], frame[2]
        if not first <= y < last or y - top >= content_size.height:
            return super().render_line(styles, y, size, content_size, padding, base_background, background,
                                       render_content_line, border_title, border_subtitle, opacity, ansi_theme,
                                       native_ansi)
        content = render_content_line(y - top)
        passed = passthrough and content.cell_length <= content_size.width
        if passed and content.cell_length == content_size.width == size.width:
            return content
        ident = id(content) if self._by_identity else tuple(content)
        entry = self._styled.get(ident)
        if entry is not None and entry[1] == inputs and (not self._by_identity or entry[0] is content):
            return entry[2]
        if passed:
            # The content's segments, padded with the inner background to the content area's width (a
            # scrolling widget's lines stop before its scrollbar), declared as long as the widget.
            segments = list(content)
            if content.cell_length < content_size.width:
                inner = self.get_inner_outer(base_background, background)[0].rich_style
                segments.append(Segment(" " * (content_size.width - content.cell_length), inner))
            strip = Strip(segments, size.width)
        else:
            strip = super().render_line(styles, y, size, content_size, padding, base_background, background,
                                        lambda _y: content, border_title, border_subtitle, opacity, ansi_theme,
                                        native_ansi)
        self._styled[ident] = (content, inputs, strip)
        return strip
