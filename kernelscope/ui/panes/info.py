"""The info pane: the capture's facts, and the selected kernel's."""

from __future__ import annotations

from textual.app import ComposeResult

from kernelscope.ui.panes.base import Pane
from kernelscope.ui.summary import capture_info, kernel_info
from kernelscope.ui.widgets.code_view import CodeView


class InfoPane(Pane):
    pane_id, pane_title, pane_key = "info", "Info", "7"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._capture: str | None = None  # the capture's part: the same for every kernel, built once
        self._shown: str | None = None  # the kernel shown (its id)

    def compose(self) -> ComposeResult:
        yield CodeView(id="info")

    def show_selection(self, graph, kernel) -> None:
        shown = kernel.id if kernel else ""
        if shown == self._shown:
            return
        self._shown = shown
        bundle = self.explorer.bundle
        if self._capture is None:
            self._capture = capture_info(bundle)
        self.query_one(CodeView).set_text(kernel_info(bundle, kernel) + self._capture)
