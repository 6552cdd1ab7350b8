"""SearchBar: the ``/`` prompt under a screen; searches the CodeView that asked, as you type."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import Input

from kernelscope.ui.widgets.code_view import CodeView


class SearchBar(Input):
    DEFAULT_CSS = """
    SearchBar { dock: bottom; display: none; border: tall $accent; height: 3; }
    SearchBar.-open { display: block; }
    """
    BINDINGS = [Binding("escape", "close", "Close search")]

    def __init__(self, **kwargs) -> None:
        super().__init__(placeholder="search (smart case) · enter: go · escape: close · then n / N", **kwargs)
        self.target: CodeView | None = None
        self._origin = 0
        self._found: int | None = None  # the line the query typed so far found

    def open_for(self, view: CodeView) -> None:
        """Search ``view`` as the user types: a CodeView, or anything with its search methods (the
        kernels pane's KernelSearch: cursor, move_cursor, search, query_text, doc, focus)."""
        self.target = view
        self._origin = view.cursor
        self.add_class("-open")
        self.value = view.query_text
        self.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        if self.target is None:
            return
        self.target.move_cursor(self._origin)
        found = self._found = self.target.search(event.value)
        self.border_subtitle = "" if not event.value else (
            "no match" if found is None else f"{self.target.doc.count(event.value)} matching {getattr(self.target, 'match_noun', 'lines')}")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.value and self.target is not None and self._found is None:
            # The subtitle said it as one typed; said again as the bar closes, where the eye is.
            self.notify(f"no match for {self.value!r}", severity="warning", timeout=3, markup=False)
        self.action_close()

    def action_close(self) -> None:
        self.remove_class("-open")
        if self.target is not None and self.target.is_mounted:
            self.target.focus()
