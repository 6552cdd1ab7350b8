"""StableScrollbars: a scrolling widget that redraws its scrollbars only when they change.

Textual (checked on 8.2.8) calls ``_scroll_update`` on every scrolling widget at every layout of the
screen, since it hands a ScrollView the visible size as its virtual size, never equal to its own: one
pane's scrollbar appearing (the kernel pane going from an extern call's note to a Triton kernel) redrew
every scrollbar on screen and asked for a second frame to draw them. With the same sizes, scroll offset
and scrollbars as the last time, the update would compute the same scrollbars again: it is skipped.
"""

from __future__ import annotations

from textual.geometry import Size


class StableScrollbars:
    """Mix into a Textual scrolling widget (before the widget class)."""

    _scroll_state: tuple | None = None

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
