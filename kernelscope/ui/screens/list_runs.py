"""Runs of moves through the kernel list: the list follows each move, the other panes where the run stops.

A move of the selection redraws most of the explorer (a graph's FX text, its output code, the Info pane),
and a run of moves (a key held, or pressed again within ``FOLLOW_QUIET`` seconds) drew every kernel it
passed over. In a run the list's cursor and its ▶ move at once and the other panes show the selection
``FOLLOW_QUIET`` after the run's last move; a move after a pause, a link followed, a step (``,`` ``.``)
or a search shows in every pane at once, and so does anything that reads what a pane shows (a pane shown
or focused, a jump to the kernel's lines) while a run has left them behind (``follow_now``).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernelscope.bundle.model import Graph, Kernel

FOLLOW_QUIET = 0.15  # seconds: a list move this soon after the last one is part of a run


class FollowsListRuns:
    """Mixin of ExplorerScreen, which holds ``selection``, ``select`` and ``show_in_panes``."""

    _list_moved_at = 0.0  # when the user last moved the list's cursor
    _panes_behind = False  # the selection being set is a move of a run
    _follow_timer = None  # shows the selection in every pane once a run stops
    _moving_list = False  # the list's cursor is moved by the screen (select_kernel), not by the user

    def list_moved(self, graph: Graph, kernel: Kernel | None) -> None:
        """The user moved the list's cursor to this row: select it, in a run (soon after the last) or not."""
        now = time.monotonic()
        self._panes_behind = not self._moving_list and now - self._list_moved_at < FOLLOW_QUIET
        self._list_moved_at = now
        self.select(graph, kernel)

    @contextmanager
    def moving_list(self):
        """The screen moves the list's cursor (a link followed, a step, a search): not a move of a run."""
        self._moving_list = True
        try:
            yield
        finally:
            self._moving_list = False

    def shown_later(self) -> bool:
        """For watch_selection: True when the selection is a move of a run, which the other panes show once
        it stops; False when every pane shows it now."""
        behind, self._panes_behind = self._panes_behind, False
        if not behind:
            self._stop_follow_timer()
            return False
        if self._follow_timer is None:
            self._follow_timer = self.set_timer(FOLLOW_QUIET, self._run_stopped)
        else:
            self._follow_timer.reset()
        return True

    def follow_now(self) -> None:
        """Every pane shows the selection now, where a run of moves left them behind; nothing otherwise."""
        if self._follow_timer is not None:
            self._stop_follow_timer()
            self.show_in_panes(self.selection)

    def _run_stopped(self) -> None:
        self._follow_timer = None
        self.show_in_panes(self.selection)

    def _stop_follow_timer(self) -> None:
        if self._follow_timer is not None:
            self._follow_timer.stop()
            self._follow_timer = None
