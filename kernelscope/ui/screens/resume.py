"""A screen's first resume, without a second styling of every widget.

Textual posts ScreenResume right after a pushed screen has mounted, and by default the resume
restyles the whole screen (``ScreenResume.refresh_styles``). On the first resume that repeats what
mounting just did: every widget was styled as it mounted, and whatever changed since (a class set
in ``on_mount``, focus) restyled its own nodes. On a fresh ``kernelscope BUNDLE`` that second pass was
about a third of the time to the first frame. Later resumes (back from a modal or another screen,
which may have changed the theme or the app's classes) restyle as Textual does.
Public API only: ``ScreenResume.refresh_styles`` is a field of the event (Textual >= 0.86).
"""

from __future__ import annotations

from textual import events
from textual.screen import Screen


def first_resume_styled(screen: Screen, event: events.ScreenResume) -> None:
    if not getattr(screen, "_kernelscope_resumed", False):
        screen._kernelscope_resumed = True  # type: ignore[attr-defined]
        if hasattr(event, "refresh_styles"):
            event.refresh_styles = False
