"""settle_first_paint: a screen's first frame is painted once its widgets have fitted themselves to it.

Checked against Textual 8.2.8 (``textual.screen.Screen._compositor_refresh``, which ``_refresh_layout``
calls to paint a layout, and ``Screen._dirty_widgets``); on only where ``FAST.first_paint`` (see
``kernelscope.ui.textual_private``).

Textual lays a new screen out, posts each widget its Resize and paints that layout at once. The explorer's
widgets fit themselves to their size when it arrives (the kernel list's name column, a placeholder's
wrapping, the cursor line scrolled into view; DataTable sizes its rows when idle), so that first frame,
a full paint of 160x48 cells, was replaced 50-60 ms later by a second layout and paint: on the terminal, a
frame of full-width kernel names without the bytes and line columns, then the real one. Here the first
layout's paint is left out: the Resize handlers run, the layout they ask for follows, and the first frame
painted is the settled one; where they ask for nothing, the screen is painted whole at the next update.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kernelscope.ui.textual_private import FAST

if TYPE_CHECKING:
    from textual.screen import Screen


def settle_first_paint(screen: Screen) -> None:
    """Leave out the paint of ``screen``'s first layout (before it is mounted); where the fast path is
    off, Textual paints it as usual."""
    if not FAST.first_paint:
        return

    def first_paint() -> None:
        del screen._compositor_refresh  # from now on, Textual's own
        app = screen.app
        if app.is_inline or screen is not app.screen:
            screen._compositor_refresh()
            return
        screen._dirty_widgets.clear()
        screen.refresh()  # painted whole at the next update, with what the Resize handlers changed

    screen._compositor_refresh = first_paint
