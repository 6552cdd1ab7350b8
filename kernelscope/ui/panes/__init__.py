"""The explorer's panes, one module each. ``PANES`` is the tab order and the reading order
(function -> kernels); adding a pane = one module + one line here (and its grid place in app.tcss)."""

from __future__ import annotations

from kernelscope.ui.panes.base import Pane
from kernelscope.ui.panes.breaks import BreaksPane
from kernelscope.ui.panes.fx import FxPane
from kernelscope.ui.panes.info import InfoPane
from kernelscope.ui.panes.kernel import KernelPane
from kernelscope.ui.panes.kernels import KernelsPane
from kernelscope.ui.panes.output import OutputPane
from kernelscope.ui.panes.source import SourcePane

PANES: tuple[type[Pane], ...] = (KernelsPane, SourcePane, FxPane, KernelPane, OutputPane, BreaksPane, InfoPane)
# Grid placement order in the wide layout (CSS spans do the rest).
GRID_ORDER = ("kernels", "fx", "kernel", "source", "output", "breaks", "info")

__all__ = ["GRID_ORDER", "PANES", "Pane"]
