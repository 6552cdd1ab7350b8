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

That next update is not left to wait for Textual's frame clock (``Screen._update_timer``, resumed on the
screen's Idle, ticks every 1/60 s from when it first ran): 0-17 ms, ~16 ms of a ~240 ms start on the
2-core VM, with nothing to do. From the left-out paint until the settled frame is painted, a resume of that
timer also runs the update (``Screen._on_timer_update``, what the tick would run) as soon as the app and
every widget of the screen have handled their messages (``message_queue_size``: the Resize handlers have
run and asked for what they change, a callback for after the frame is registered); the timer runs as usual
meanwhile, and paints first where something stays pending.
"""

from __future__ import annotations

import asyncio
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
        _update_when_settled(screen)

    screen._compositor_refresh = first_paint


def _update_when_settled(screen: Screen) -> None:
    """Until the next paint, resuming the screen's update timer also updates as soon as nothing is pending."""
    timer = screen._update_timer
    loop = asyncio.get_running_loop()

    def pending() -> bool:  # a message to the app (a callback for after the frame) or to a widget (a Resize)
        return bool(screen.app.message_queue_size) or any(
            node.message_queue_size for node in screen.walk_children(with_self=True))

    def stop() -> None:
        vars(timer).pop("resume", None)
        vars(screen).pop("_compositor_refresh", None)

    def update_now() -> None:
        if "resume" not in vars(timer):
            return  # the timer painted first
        if pending():
            loop.call_soon(update_now)  # after the tasks that handle them
            return
        stop()
        screen._on_timer_update()

    def resume() -> None:
        type(timer).resume(timer)  # Textual's clock runs meanwhile: where something stays pending, it paints
        update_now()

    def painted() -> None:
        stop()
        screen._compositor_refresh()

    timer.resume = resume
    screen._compositor_refresh = painted
