"""What screens ask of the app, as messages: a screen posts one, it bubbles to the app, the app runs
the flow (capture, recompile, edit, open, back). No screen calls the app's flows directly, and the
app tells a screen what came of it by a message too (``CaptureFinished``)."""

from __future__ import annotations

from typing import Any

from textual.message import Message


class GoBack(Message):
    """Leave this screen (to the gallery when nothing is under it)."""


class OpenBundle(Message):
    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path


class OpenAnything(Message):
    """A bundle folder opens; anything else is taken as a target to capture."""

    def __init__(self, value: str) -> None:
        super().__init__()
        self.value = value


class CaptureRequested(Message):
    """Capture ``request``; ``previous`` is what the result is compared with. ``over``: show the result
    over the asking screen (the editor stays under it) and tell it by ``CaptureFinished``."""

    def __init__(self, request: Any, *, previous: Any = None, origin: Any = None, over: bool = False) -> None:
        super().__init__()
        self.request, self.previous, self.origin, self.over = request, previous, origin, over


class RecompileRequested(Message):
    """Capture ``request`` again, with the options form first when ``ask``."""

    def __init__(self, request: Any, *, previous: Any = None, ask: bool) -> None:
        super().__init__()
        self.request, self.previous, self.ask = request, previous, ask


class EditRequested(Message):
    """Open the editor on the request's function."""

    def __init__(self, request: Any, *, previous: Any = None) -> None:
        super().__init__()
        self.request, self.previous = request, previous


class CaptureFinished(Message):
    """To the screen that asked (``CaptureRequested.over``): the bundle its capture made."""

    def __init__(self, bundle: Any) -> None:
        super().__init__()
        self.bundle = bundle


class BenchFinished(Message):
    """A bench stored new results in ``bundle`` (in place): views that show bench numbers show them anew."""

    def __init__(self, bundle: Any) -> None:
        super().__init__()
        self.bundle = bundle
