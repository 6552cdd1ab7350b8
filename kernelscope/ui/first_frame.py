"""What a list shows below the fold waits for the first frame: ``once_drawn`` and ``EAGER_MARGIN``.

A job's lists (the kernel list's graph rows, the breaks pane's breaks) grow with the job, and building
a row costs the same whether it is on screen or not. A list fills what the terminal can show at once
(its height and ``EAGER_MARGIN`` rows more) before the first frame and the rest once that frame is
drawn: the first frame costs what is on it, and the rest is there before the first key is handled
(the app's queue takes the callback before any key read after the frame).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from textual.widget import Widget

EAGER_MARGIN = 8  # rows past the terminal's height built at once: a list never shows fewer than it could


def eager_rows(widget: Widget, share: float = 1.0) -> int:
    """How many rows of a list ``widget`` builds before its first frame: more than it can show when it has
    ``share`` of the terminal's height (a pane of the wide grid's bottom row: a third at most)."""
    return int(max(widget.app.size.height, 24) * share) + EAGER_MARGIN


def before_first_frame(widget: Widget) -> bool:
    """True while the app has not drawn its first frame (a screen opened later is past it)."""
    return getattr(widget.app, "first_frame_ms", 0) is None


def once_drawn(widget: Widget, callback: Callable[[], None]) -> None:
    """Run ``callback`` once the app's first frame is drawn, or after ``widget``'s next refresh when the app
    drew it long ago (a bundle opened from the gallery); never on a widget taken off the screen meanwhile."""

    def run() -> None:
        if widget.is_attached:
            callback()

    after = getattr(widget.app, "after_first_frame", None)
    if after is not None and before_first_frame(widget):
        after(run)
    else:
        widget.call_after_refresh(run)
