"""A screen's first resume, without a second styling of every widget.

Textual posts ScreenResume right after a pushed screen has mounted, and by default the resume
restyles the whole screen (``ScreenResume.refresh_styles``). On the first resume that repeats what
mounting just did: every widget was styled as it mounted, and whatever changed since (a class set
in ``on_mount``, focus) restyled its own nodes. On a fresh ``kernelscope BUNDLE`` that second pass was
about a third of the time to the first frame. Later resumes (back from a modal or another screen,
which may have changed the theme or the app's classes) restyle as Textual does.
Public API only: ``ScreenResume.refresh_styles`` is a field of the event (Textual >= 0.86).

The same for a Resize to the size a screen already has (the terminal reports its size as the app
starts, after the first screen is laid out): Textual lays the whole screen out again for each,
unchanged; ``prevent_default`` leaves that out where no breakpoint classes depend on the size.
"""

from __future__ import annotations

from textual import events
from textual.screen import Screen


def first_resume_styled(screen: Screen, event: events.ScreenResume) -> None:
    screen._kernelscope_size = screen.app.size  # type: ignore[attr-defined]  # resume lays it out at this size
    if not getattr(screen, "_kernelscope_resumed", False):
        screen._kernelscope_resumed = True  # type: ignore[attr-defined]
        if hasattr(event, "refresh_styles"):
            event.refresh_styles = False


def same_size_again(screen: Screen, event: events.Resize) -> bool:
    """True (and Textual's layout of the screen left out) when ``event`` resizes ``screen`` to the size
    it was laid out at."""
    breakpoints = (screen.HORIZONTAL_BREAKPOINTS or screen.app.HORIZONTAL_BREAKPOINTS
                   or screen.VERTICAL_BREAKPOINTS or screen.app.VERTICAL_BREAKPOINTS)
    if getattr(screen, "_kernelscope_size", None) == event.size and not breakpoints:
        event.prevent_default()
        event.stop()
        return True
    screen._kernelscope_size = event.size  # type: ignore[attr-defined]
    return False
