"""The info pane: the capture's facts, and the selected kernel's."""

from __future__ import annotations

from textual.app import ComposeResult

from kernelscope.ui.panes.base import Pane
from kernelscope.ui.summary import info_text
from kernelscope.ui.widgets.code_view import CodeView


class InfoPane(Pane):
    pane_id, pane_title, pane_key = "info", "Info", "7"

    def compose(self) -> ComposeResult:
        yield CodeView(id="info")

    def show_selection(self, graph, kernel) -> None:
        self.query_one(CodeView).set_text(info_text(self.explorer.bundle, kernel))
