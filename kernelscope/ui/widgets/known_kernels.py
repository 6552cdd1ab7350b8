"""What the kernel list knows of its bundle's kernels: by id, by graph, and as entries (every graph row and
kernel, folded or not, in list order: what ``/`` searches). A format-5 job's list is loaded knowing the first
graph's kernels only (its first frame); a graph unfolded reads its own, ``ensure_whole`` reads every graph's
(after the first frame, or for ``/``, a link or a copy). Mixed into KernelTable (ui/widgets/kernel_table.py).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import chain, groupby
from operator import attrgetter

from kernelscope.bundle.model import Bundle, BundleError, Graph, Kernel
from kernelscope.ui.widgets.kernel_cells import graph_time_cell, time_cell

GRAPH_ROW = "graph:"
OPEN_ALL_KERNELS = 400  # up to this many kernels (and graphs below) every graph starts unfolded
OPEN_ALL_GRAPHS = 12


def read_by_graph(bundle: Bundle) -> bool:
    """Whether the list of ``bundle`` starts knowing one graph's kernels: a job's, still in its kernel file
    (format 5), whose first frame folds every graph but the first. After a bench, a graph row not read yet
    sums the bench's rows that name the graph (``_graph_time``)."""
    return not bundle.kernels_read and (
        bundle.kernel_count() > OPEN_ALL_KERNELS or len(bundle.graphs) > OPEN_ALL_GRAPHS)


def read_first_frame_kernels(bundle: Bundle) -> None:
    """Read now what an explorer's first frame shows of the kernels (all of them; a job's, its first graph's),
    so that a damaged kernel file is refused in one line as the bundle opens (BundleError), not mid-draw."""
    if read_by_graph(bundle):
        first = bundle.first_graph_with_kernels()
        if first is not None:
            bundle.kernels_of(first)
    else:
        bundle.kernels  # noqa: B018


class KnownKernels:
    """The kernels a KernelTable lists (see the module's text)."""

    bundle: Bundle | None
    kernels: dict[str, Kernel]
    graphs: dict[str, Graph]
    _by_graph: dict[str, list[Kernel]]
    _entry_list: list[str]
    _entry_pos: dict[str, int]
    _entries_stale: bool
    _files_of_lines: int
    _grouped: bool
    _partial: bool
    _time_column: Callable[[], None]
    _times: dict[str, float]
    _unread_times: dict[str, list[float]] | None = None

    def _know(self, kernels_in_order: list[Kernel]) -> None:
        """The kernels the list holds (all, or those read so far): by id, by graph, and as entries."""
        ids = list(map(attrgetter("id"), kernels_in_order))  # a job's 15,600: each pass below at C speed
        self.kernels = dict(zip(ids, kernels_in_order))
        self._files_of_lines = len(set(map(attrgetter("file"), chain.from_iterable(
            map(attrgetter("user_lines"), kernels_in_order)))))
        self._by_graph = {} if self._partial else {g.id: [] for g in self.bundle.graphs}
        for gid, ks in groupby(kernels_in_order, attrgetter("graph")):  # graph by graph: one run each
            self._by_graph.setdefault(gid, []).extend(ks)
        self._list_entries()

    def _list_entries(self) -> None:
        entries: list[str] = []
        for g in self.bundle.graphs:
            ks = self._by_graph.get(g.id, [])
            if self._grouped or not ks:
                entries.append(GRAPH_ROW + g.id)
            entries += map(attrgetter("id"), ks)
        self._entry_list, self._entry_pos = entries, dict(zip(entries, range(len(entries))))
        self._entries_stale = False

    @property
    def _entries(self) -> list[str]:
        """Every graph row and kernel known, folded or not, in list order (listed again after a graph is read)."""
        if self._entries_stale:
            self._list_entries()
        return self._entry_list

    @property
    def _entry_index(self) -> dict[str, int]:
        """Where each of ``_entries`` is."""
        if self._entries_stale:
            self._list_entries()
        return self._entry_pos

    def whole_index(self, kernels_in_order: list[Kernel]) -> None:
        """Every kernel of a list loaded with the first graph's (after the first frame): the rows shown stay
        (their kernels are the same objects), search and links reach every graph."""
        if not self._partial:
            return
        self._partial = False
        files_before, times_before = self._files_of_lines, self._times
        self._know(kernels_in_order)
        # the rows a partial list kept (each names a graph of the bundle) now checked against its kernels
        self._times = {kid: us for kid, us in times_before.items() if kid in self.kernels}
        self._unread_times = None
        # the line column names files now (or no longer), or a bench row named a kernel its graph does not have
        if (files_before > 1) != (self._files_of_lines > 1) or self._times != times_before:
            self._time_column()
            self._rebuild(keep=self._row_ids[self.cursor_row] if self.cursor_row < len(self._row_ids) else None)

    @property
    def partial(self) -> bool:
        """Whether only some graphs' kernels are known yet (see ``load``)."""
        return self._partial

    def _count(self, gid: str) -> int:
        ks = self._by_graph.get(gid)
        if ks is not None:
            return len(ks)
        summary = self.bundle.graph_summary(gid) if self.bundle is not None else None
        return summary[0] if summary else len(self.bundle.kernels_of(gid)) if self._partial else 0

    def _graph_time(self, gid: str) -> str:
        """A graph row's time cell; of a graph not read yet, the bench's rows naming it, summed (``≥`` where
        fewer than the manifest's count of its kernels are timed)."""
        if not self._partial or gid in self._by_graph:
            return graph_time_cell(self._kernels(gid), self._times)
        if self._unread_times is None:
            self._unread_times = {}
            for kid, us in self._times.items():
                self._unread_times.setdefault(kid.rpartition("/")[0], []).append(us)
        timed = self._unread_times.get(gid, [])
        return ("" if len(timed) >= self._count(gid) else "≥") + time_cell(sum(timed)) if timed else ""

    def _kernels(self, gid: str) -> list[Kernel]:
        """The graph's kernels, read now when the list is partial and they are not known yet."""
        ks = self._by_graph.get(gid)
        if ks is None:
            ks = []
            if self._partial and gid in self.graphs:
                ks = self._read_graph(gid)
                self._by_graph[gid] = ks
                self.kernels.update((k.id, k) for k in ks)
                self._entries_stale = True  # listed when next asked for: a loop over graphs stays linear
        return ks

    def _read_graph(self, gid: str) -> list[Kernel]:
        try:
            return self.bundle.kernels_of(gid)
        except BundleError as exc:  # a damaged kernel file: said once, the list goes on without them
            self.notify(str(exc), severity="error", timeout=10, markup=False)
            return []

    def ensure_whole(self, in_order=None) -> None:
        """Every graph's kernels known now (``/`` and links search all of them); ``in_order``: a callable giving
        them graph by graph in launch order (the explorer's), else the bundle's order."""
        if self._partial and self.bundle is not None:
            try:
                kernels = in_order() if in_order is not None else self.bundle.kernels
            except BundleError as exc:
                self.notify(str(exc), severity="error", timeout=10, markup=False)
                kernels = [k for ks in self._by_graph.values() for k in ks]
            self.whole_index(kernels)
