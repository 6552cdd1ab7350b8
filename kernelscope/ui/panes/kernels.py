"""The kernels pane: every kernel of the capture, in launch order; the selection starts here."""

from __future__ import annotations

from textual.app import ComposeResult

from kernelscope.ui.panes.base import Pane
from kernelscope.ui.widgets.kernel_table import KernelTable


class KernelsPane(Pane):
    pane_id, pane_title, pane_key = "kernels", "Kernels", "1"

    def compose(self) -> ComposeResult:
        yield KernelTable(id="kernels")

    @property
    def table(self) -> KernelTable:
        return self.query_one(KernelTable)

    def load(self) -> None:
        self.table.load(self.explorer.bundle, self.explorer.index.kernels_in_order())

    def show_selection(self, graph, kernel) -> None:
        self.table.set_selected(kernel.id if kernel else None)
