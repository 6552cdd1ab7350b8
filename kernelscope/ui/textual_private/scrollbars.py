"""StableScrollbars: a scrolling widget that redraws its scrollbars only when they change, from a cache.

Checked against Textual 8.2.8 (``ScrollBar.render``/``ScrollBarRender.render_bar``, ``Widget._scroll_update``,
``vertical_scrollbar``/``horizontal_scrollbar``, ``App._start_widget``, ``Widget._repaint_required``); on only
where ``FAST.scrollbars`` (see ``kernelscope.ui.textual_private``): elsewhere ``StableScrollbars`` is an empty
mixin and the widget's scrollbars are Textual's own.

Textual calls ``_scroll_update`` on every scrolling widget at every layout of the
screen, since it hands a ScrollView the visible size as its virtual size, never equal to its own: one
pane's scrollbar appearing (the kernel pane going from an extern call's note to a Triton kernel) redrew
every scrollbar on screen and asked for a second frame to draw them. With the same sizes, scroll offset
and scrollbars as the last time, the update would compute the same scrollbars again: it is skipped.

Its scrollbars are CachedScrollBars: moving through a model's kernels scrolls the FX graph, the output
code, the kernels list and the Info pane on most keys, and drawing a 42-line scrollbar again through
Textual's style pipeline took ~1 ms each, the largest part of a frame. A scrollbar's lines depend only on
what its renderable is built from (sizes, thumb position, colours) and on the styles around it, so the
lines drawn for one state are kept and given back when the bar comes back to that state (going back up
the list, the Info pane's few sizes).
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region, Size
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip

from kernelscope.ui.lru import Kept
from kernelscope.ui.textual_private import FAST
from kernelscope.ui.textual_private.styles import clear_lines, use_line_styles

BAR_STATES = 64  # drawn states kept per scrollbar: a few hundred short Strips at most


def set_virtual_size_in_place(widget, reactive, size: Size) -> bool:
    """Set a mounted scrolling widget's virtual size and update its scrollbars, without the layout of the
    whole screen that setting the reactive asks for (False where the fast path is off: set it then)."""
    if not FAST.scrollbars:
        return False
    widget.set_reactive(reactive, size)
    widget._scroll_update(size)
    return True


class CachedScrollBar(ScrollBar):
    """A ScrollBar whose drawn lines are kept per state (what Textual's render gives, line for line)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._drawn: Kept[tuple, list[Strip]] = Kept(BAR_STATES)
        use_line_styles(self, by_identity=False)  # a bar's lines are new Strips at each draw
        # A vertical bar's line is drawn from its one segment (track, thumb, or a thumb end's partial block):
        # (everything but the thumb's place, segment) -> that line as drawn, learnt from full draws.
        self._line_of: Kept[tuple, Strip] = Kept(BAR_STATES)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        clear_lines(self._styles_cache)
        self._drawn.clear()  # a theme or CSS change: the cached lines are of the old styles
        self._line_of.clear()

    def _by_segment(self, key: tuple, bar: ScrollBarRender, crop: Region) -> list[Strip] | None:
        """The lines of a vertical bar in a new thumb position, each the drawn line of its segment (what
        ScrollBarRender gives for that line) as a full draw of this bar gave it before; None when one of
        them was never drawn (a full draw then teaches them)."""
        if crop.width != self.size.width or crop.height != self.size.height:
            return None
        segments = self._segments(bar, crop)
        if segments is None:
            return None
        common = key[:3] + key[6:]  # all of _state but the virtual size, window size and position
        lines = []
        for segment in segments:
            line = self._line_of.get((common, segment))
            if line is None:
                return None
            lines.append(line)
        return lines if len(lines) == crop.height else None

    @staticmethod
    def _segments(bar: ScrollBarRender, crop: Region) -> list[Segment] | None:
        """A vertical bar's segments, one per line, as ScrollBarRender draws them (None: not that case)."""
        style = bar.style if isinstance(bar.style, Style) else None
        if not bar.vertical or style is None:
            return None
        return ScrollBarRender.render_bar(
            size=crop.height, virtual_size=bar.virtual_size, window_size=bar.window_size, position=bar.position,
            thickness=bar.thickness, vertical=True, back_color=style.bgcolor, bar_color=style.color).segments

    def _learn(self, key: tuple, bar: ScrollBarRender, crop: Region, strips: list[Strip]) -> None:
        segments = self._segments(bar, crop)
        if segments is not None and len(segments) == len(strips) == crop.height:
            common = key[:3] + key[6:]
            for segment, strip in zip(segments, strips):
                self._line_of[(common, segment)] = strip

    def _state(self, crop: Region) -> tuple[tuple, ScrollBarRender] | None:
        bar = self.render()
        if type(bar) is not ScrollBarRender:
            return None
        app = self.app
        return (crop, self.size, self.region.size, bar.virtual_size, bar.window_size, bar.position, bar.thickness,
                bar.vertical, bar.style, self.background_colors, tuple(self.get_line_filters()), self.opacity,
                app.ansi_theme, app.native_ansi_color, self.app.theme), bar

    def render_lines(self, crop: Region) -> list[Strip]:
        # Drawn now: a repaint asked for before this (the layout that showed the bar set its sizes) is done.
        # Left set, the bar would ask the screen for a frame of its own (Textual 8.2.8, _check_refresh),
        # drawn at the next tick, ~17 ms after the key's frame, for the same lines.
        self._repaint_required = False
        if not (self._dirty_regions or self._styles_cache._dirty_lines):
            return super().render_lines(crop)  # Textual's own line cache is up to date
        state = self._state(crop)
        if state is None:
            return super().render_lines(crop)
        key, bar = state
        strips = self._drawn.get(key)
        if strips is None:
            strips = self._by_segment(key, bar, crop)
            if strips is None:
                strips = super().render_lines(crop)
                self._learn(key, bar, crop, strips)
            else:
                # Textual's own line cache holds the last full draw: never served again, as the bar stays
                # marked dirty until its next full draw (which renders its content anew).
                self._styles_cache.clear()
            self._drawn[key] = strips
        return list(strips)


class _StableScrollbars:
    """Mix into a Textual scrolling widget (before the widget class)."""

    _scroll_state: tuple | None = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        use_line_styles(self, by_identity=True)  # the widget's render_line keeps its Strips

    def notify_style_update(self) -> None:
        super().notify_style_update()  # type: ignore[misc]
        clear_lines(self._styles_cache)

    def _scroll_update(self, virtual_size: Size) -> None:
        if self._scroll_state == self._scroll_inputs(virtual_size) and not getattr(self, "_scrollbar_changes", True):
            return
        super()._scroll_update(virtual_size)  # type: ignore[misc]
        self._scroll_state = self._scroll_inputs(virtual_size)

    def _scroll_inputs(self, virtual_size: Size) -> tuple:
        styles = self.styles
        return (virtual_size, self.virtual_size, self.size, self.container_size, self.scroll_offset,
                self.show_vertical_scrollbar, self.show_horizontal_scrollbar, styles.overflow_x, styles.overflow_y,
                styles.scrollbar_size_vertical, styles.scrollbar_size_horizontal)

    # Textual's properties (8.2.8), making CachedScrollBars.
    @property
    def vertical_scrollbar(self) -> ScrollBar:
        if self._vertical_scrollbar is not None:
            return self._vertical_scrollbar
        self._vertical_scrollbar = bar = CachedScrollBar(vertical=True, name="vertical",
                                                         thickness=self.scrollbar_size_vertical)
        bar.display = False
        self.app._start_widget(self, bar)
        return bar

    @property
    def horizontal_scrollbar(self) -> ScrollBar:
        if self._horizontal_scrollbar is not None:
            return self._horizontal_scrollbar
        self._horizontal_scrollbar = bar = CachedScrollBar(vertical=False, name="horizontal",
                                                           thickness=self.scrollbar_size_horizontal)
        bar.display = False
        self.app._start_widget(self, bar)
        return bar


class _StockScrollbars:
    """Textual's own scrolling and scrollbars (the fast path is off): nothing changed."""


StableScrollbars = _StableScrollbars if FAST.scrollbars else _StockScrollbars
