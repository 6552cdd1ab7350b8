"""The explorer's one-line header (ui/summary.py's title_line, fitted to the width it is given)."""

from __future__ import annotations

from textual.widgets import Static

from kernelscope.bundle.model import Bundle
from kernelscope.ui.summary import title_line


class TitleLine(Static):
    """The one-line header, fitted to its width: what is dropped when narrow is detail, never a count."""

    def __init__(self, bundle: Bundle, previous: Bundle | None, **kwargs) -> None:
        super().__init__(markup=False, **kwargs)
        self.bundle, self.previous = bundle, previous

    def render(self) -> str:
        return title_line(self.bundle, self.previous, self.size.width or None)
