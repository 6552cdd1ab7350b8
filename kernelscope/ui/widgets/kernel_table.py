"""KernelTable: the kernels of every graph in launch order, extern calls (cuBLAS mm) in their place.

One row per kernel launch site, under a row per graph. The selected kernel carries ``▶`` and the
kernels fed by the user line under the cursor carry ``◆``, so selection never relies on colour.

A job's many graphs are groups: a graph row (▸/▾, its kernel count and bytes moved) folds its kernels
away (enter or space on it; left folds the group the cursor is in). A bundle past ``OPEN_ALL_KERNELS``
kernels or ``OPEN_ALL_GRAPHS`` graphs opens with only its first graph unfolded, so the list costs what
is on it, not the job; selecting a kernel (a link followed, ``/``) unfolds its graph. Of a long list, the
rows a terminal can show are built for the first frame, the rest once it is drawn (ui/first_frame.py).
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from kernelscope.bundle.kernel_file import graph_moved
from kernelscope.bundle.model import Bundle, Graph, Kernel
from kernelscope.job_view import device_us_by_kernel
from kernelscope.ui.first_frame import eager_rows, once_drawn
from kernelscope.ui.textual_private.data_table import FastTableRows
from kernelscope.ui.textual_private.scrollbars import StableScrollbars
from kernelscope.ui.widgets.kernel_cells import (
    GRAPH_LABEL_STYLE,
    display_name,
    feeds_next,
    graph_label_text,
    moved_cell,
    name_cell,
    time_cell,
    tsv_lines,
)
from kernelscope.ui.widgets.known_kernels import GRAPH_ROW, OPEN_ALL_GRAPHS, OPEN_ALL_KERNELS, KnownKernels
from kernelscope.ui.xref import KIND_TAGS
from kernelscope.units import base_name, plural, short_bytes

MIN_NAME = 12  # the name column's narrowest width


class KernelTable(KnownKernels, StableScrollbars, FastTableRows, DataTable):
    """The kernel list; highlighting a row selects that kernel everywhere."""

    BINDINGS = [
        Binding("enter", "open_kernel", "Kernel"),  # short: the footer at 80 columns
        Binding("space", "toggle_group", "Fold", show=False),
        Binding("left", "fold_group", "Fold graph", show=False),
        Binding("right", "unfold_group", "Unfold graph", show=False),
        Binding("y", "copy", "Copy"),
        # DataTable's home/end move to the first/last column; a row list has one that matters.
        Binding("home,g", "scroll_top", "First kernel", show=False),
        Binding("end,G", "scroll_bottom", "Last kernel", show=False),
    ]

    class Selected(Message):
        """The cursor moved to a kernel (``kernel`` set) or to a graph row (``kernel`` None)."""

        def __init__(self, graph: Graph, kernel: Kernel | None) -> None:
            super().__init__()
            self.graph = graph
            self.kernel = kernel

    class Opened(Message):
        def __init__(self, kernel: Kernel | None) -> None:
            super().__init__()
            self.kernel = kernel

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self.bundle: Bundle | None = None
        self.kernels: dict[str, Kernel] = {}
        self.graphs: dict[str, Graph] = {}
        self.selected_id: str | None = None
        self.fed_ids: set[str] = set()
        # Kernels whose result the next row reads back from memory (a pair Inductor did not fuse):
        # marked ↓ between the two (kernelscope/report/why.py).
        self.round_trip_ids: set[str] = set()
        self._row_ids: list[str] = []  # the rows on screen: graph rows and the kernels of unfolded graphs
        self._later: list[str] = []  # rows of a long list built once the first frame is drawn (see load)
        self._row_of: dict[str, int] = {}
        self._entry_list: list[str] = []  # every graph row and kernel, folded or not, in list order (_entries)
        self._entry_pos: dict[str, int] = {}  # where each is in it (_entry_index)
        self._entries_stale = False
        self._by_graph: dict[str, list[Kernel]] = {}
        self._open: set[str] = set()  # unfolded graphs
        self._grouped = False  # graph rows shown (more than one graph)
        self._marked_graphs: set[str] = set()  # graphs whose ↓ marks were worked out
        self._moved_of: dict[str, str] = {}  # a graph row's bytes-moved cell, worked out once
        self._name_width: int | None = None  # the name column's width now; None: names in full
        self._other_widths: dict[str, int] = {}  # the other columns' widest cells (see _measure_other_widths)
        self._rows_made = 0  # counts the row sets built: what was measured of one is kept (see _measured)
        self._measured: tuple[int, int, int] | None = None  # (rows made, other columns' cells, longest name)
        self._files_of_lines = 0  # how many files the kernels' user lines are in
        self._times: dict[str, float] = {}  # device µs per call by kernel id after a bench: the time column
        self._partial = False  # a job's kernels read graph by graph until whole_index (see load)

    def on_mount(self) -> None:
        # Labels as Text: a str label is read as markup, and rich's markup loads its emoji table (~3 ms of
        # the first frame) for it.
        self.add_column(Text(" "), key="mark", width=1)
        for key, label in (("name", "kernel"), ("kind", "kind"), ("nodes", "nodes"), ("moved", "moved"),
                           ("line", "line")):
            self.add_column(Text(label), key=key)

    def load(self, bundle: Bundle, kernels_in_order: list[Kernel] | None) -> None:
        """The list of ``bundle``'s kernels (graph by graph, in launch order). None: a job whose kernels are
        still in its kernel file (format 5): the first graph's are read now and the group rows show what the
        manifest counts, the rest come with ``whole_index`` once the first frame is drawn (a graph unfolded
        before then reads its own)."""
        self.bundle = bundle
        self._partial = kernels_in_order is None
        self._times = device_us_by_kernel(bundle, read=not self._partial)
        self._time_column()
        self.graphs = {g.id: g for g in bundle.graphs}
        self._grouped = len(bundle.graphs) > 1
        self._by_graph = {}
        if kernels_in_order is None:
            first = bundle.first_graph_with_kernels()
            kernels_in_order = self._read_graph(first) if first else []
        self.round_trip_ids = set()
        self._marked_graphs = set()
        self._moved_of = {}
        self._know(kernels_in_order)
        if not self._grouped or (bundle.kernel_count() <= OPEN_ALL_KERNELS and len(bundle.graphs) <= OPEN_ALL_GRAPHS):
            self._open = set(self.graphs)
        else:
            self._open = {next((g.id for g in bundle.graphs if self._count(g.id)), bundle.graphs[0].id)}
        self._name_width = None
        self._rebuild(eager=eager_rows(self))
        self.settle_dimensions()  # the first layout sizes the table by its rows, not a frame later
        if self._later:
            once_drawn(self, self._build_later)

    def _time_column(self) -> None:
        """A time column while the bundle holds a bench's times (a graph's row: its kernels' sum)."""
        key = ColumnKey("time")
        if self._times and key not in self.columns:
            self.add_column(Text("time"), key="time")
        elif not self._times and key in self.columns:
            self.remove_column(key)

    def bench_changed(self) -> None:
        """A bench stored its times: the time column drawn again, the cursor where it was."""
        self._times, self._unread_times = device_us_by_kernel(self.bundle, read=not self._partial) if self.bundle else {}, None
        self._time_column()
        self._rebuild(keep=self._row_ids[self.cursor_row] if self.cursor_row < len(self._row_ids) else None)
        self.settle_dimensions()

    def _visible(self) -> list[str]:
        rows = []
        for g in self.bundle.graphs if self.bundle else []:
            if self._grouped or not self._count(g.id):
                rows.append(GRAPH_ROW + g.id)
            if g.id in self._open:
                rows += [k.id for k in self._kernels(g.id)]
        return rows

    def _rebuild(self, keep: str | None = None, eager: int | None = None) -> None:
        """The rows anew for what is unfolded (names fitted once, so each cell is measured once); the cursor
        back on ``keep`` (a row key) when it is still shown. ``eager``: build that many rows now and leave
        the rest to ``_build_later`` (the first frame of a long list)."""
        self._row_ids, self._row_of = [], {}  # clear() moves the cursor: it finds no row while rebuilding
        self.clear()
        for column in self.columns.values():  # clear() keeps each column as wide as its widest cell ever was
            column.content_width = column.label.cell_len
        self._row_ids = self._visible()
        self._later = []
        self._rows_made += 1
        if eager is not None and len(self._row_ids) > eager:
            self._row_ids, self._later = self._row_ids[:eager], self._row_ids[eager:]
        self.rows_to_come = len(self._later)
        selected = self.selected_id
        for gid in self._open - self._marked_graphs:  # ↓ marks of the graphs now unfolded
            self._marked_graphs.add(gid)
            if gid in self.graphs:
                self.round_trip_ids |= feeds_next(self.bundle, self.graphs[gid], self._kernels(gid))
        self._name_width = self._wanted_width(self._measure_other_widths())
        self._add_rows(self._row_ids)
        for key, width in self._other_widths.items() if self._later else ():  # as wide as later rows need
            self.columns[ColumnKey(key)].content_width = max(self.columns[ColumnKey(key)].content_width, width)
        # Known only now: add_row moves the cursor, and the selection it posts marks rows that exist.
        self._row_of = {key: i for i, key in enumerate(self._row_ids)}
        self._refresh_marks({kid for kid in (selected, self.selected_id) if kid})
        if keep is not None and keep in self._row_of:
            self.move_cursor(row=self._row_of[keep], scroll=True)

    def _add_rows(self, keys: list[str]) -> None:
        for key in keys:
            if key.startswith(GRAPH_ROW):
                gid = key[len(GRAPH_ROW):]
                self.add_row(Text(), self._graph_label(self.graphs[gid], self._name_width), Text(), Text(),
                             Text(self._graph_moved(gid)), Text(),
                             *([Text(self._graph_time(gid))] if self._times else []), key=key)
            else:
                self.add_row(*self._cells(self.kernels[key]), key=key)

    def _build_later(self) -> None:
        """The rows below the first frame's, appended (names fitted as the first frame's, marks as they are now)."""
        later, self._later = self._later, []
        if not later:
            return
        self.rows_to_come = 0
        self._rows_made += 1
        self._add_rows(later)
        self._row_of.update((key, i) for i, key in enumerate(later, len(self._row_ids)))
        self._row_ids += later
        self._fit()
        self.settle_dimensions()
    def _graph_label(self, g: Graph, width: int | None = None) -> Text:
        return Text(self._graph_label_text(g, width), style=GRAPH_LABEL_STYLE)

    def _graph_label_text(self, g: Graph, width: int | None = None) -> str:
        fold = ("▾ " if g.id in self._open else "▸ ") if self._grouped else ""
        return graph_label_text(g, self._count(g.id), fold, width)

    def _graph_moved(self, gid: str) -> str:
        """Bytes the graph's kernels move per call (every launch), '' when a size is symbolic."""
        cell = self._moved_of.get(gid)
        if cell is None:
            cell = self._moved_of[gid] = self._sum_moved(gid)
        return cell

    def _sum_moved(self, gid: str) -> str:
        summary = None if gid in self._by_graph else self.bundle.graph_summary(gid)
        total = summary[1] if summary else graph_moved(self._kernels(gid))
        return short_bytes(total) if self._grouped and total else ""

    def _measure_other_widths(self) -> int:
        """Cells taken by every column but the name (padding included), from the rows about to be shown (those
        built once the first frame is drawn too: the first frame's columns are the settled ones)."""
        return self._measure()[0]

    def _measure(self) -> tuple[int, int]:
        """The other columns' cells and the longest name of the rows shown, measured once per row set (the
        first layout's fit asks again: a job's thousand graph rows)."""
        if self._measured is None or self._measured[0] != self._rows_made:
            self._measured = (self._rows_made, self._measure_others(), self._longest_name())
        return self._measured[1], self._measured[2]

    def _measure_others(self) -> int:
        widths = {"mark": 1}
        for key in self._row_ids + self._later:
            if key.startswith(GRAPH_ROW):
                gid = key[len(GRAPH_ROW):]
                cells = ["", "", self._graph_moved(gid), "", self._graph_time(gid) if self._times else ""]
            else:
                cells = [c.plain for c in self._cells(self.kernels[key])[2:]]
            for col, text in zip(("kind", "nodes", "moved", "line", "time") if self._times else
                                 ("kind", "nodes", "moved", "line"), cells):
                widths[col] = max(widths.get(col, 0), len(text))
        self._other_widths = widths
        total = 0
        for key, column in self.columns.items():
            if key.value != "name":
                total += max(widths.get(key.value, 0), len(column.label.plain)) + 2 * self.cell_padding
        return total

    def _longest_name(self) -> int:
        keys = self._row_ids + self._later
        kernels = [self.kernels[key] for key in keys if not key.startswith(GRAPH_ROW)]
        graphs = [self.graphs[key[len(GRAPH_ROW):]] for key in keys if key.startswith(GRAPH_ROW)]
        return max([len(display_name(k)) + (len(f" ×{k.launches}") if k.launches > 1 else 0) for k in kernels]
                   + [len(self._graph_label_text(g)) for g in graphs]  # a graph row's label whole where it fits
                   + [len(self.columns[ColumnKey("name")].label.plain)])

    def _wanted_width(self, others: int) -> int | None:
        """The name column's width for the shown rows: None (names in full) when they fit."""
        longest = self._measure()[1]
        width = self.scrollable_content_region.width
        # Not laid out yet (loaded in on_mount): the narrowest names, so that the first layout gives the table
        # the vertical scrollbar it needs and no horizontal one, which its real width (on Resize) would take
        # away again in a layout and a frame of its own.
        room = max(width - others - 2, MIN_NAME) if width > 0 else MIN_NAME
        return None if longest <= room else room

    def _fit(self) -> None:
        if not self._row_ids:
            return
        width = self._wanted_width(self._measure_other_widths())
        if width == self._name_width:
            return
        if self._name_width is not None and (width is None or width > self._name_width):
            # Wider (the first layout after a load sized for the narrowest): only the name cells change and the
            # rows stay (a job's list is built once). The column grows to its widest new cell, the one cell
            # measured: DataTable measures the whole column again for each cell narrower than the column.
            self._name_width = width
            widest, widest_len = None, -1
            for key in self._row_ids:
                cell = (self._graph_label(self.graphs[key[len(GRAPH_ROW):]], width) if key.startswith(GRAPH_ROW)
                        else name_cell(self.kernels[key], width))
                self.update_cell(key, "name", cell)
                if cell.cell_len > widest_len:
                    widest, widest_len = (key, cell), cell.cell_len
            self.update_cell(widest[0], "name", widest[1], update_width=True)
            return
        self._rebuild(keep=self._row_ids[self.cursor_row] if self.cursor_row < len(self._row_ids) else None)

    def on_resize(self) -> None:
        self._fit()
        self.settle_dimensions()  # the fitted width is in the next layout (the explorer's first frame)

    def _graph_of(self, k: Kernel) -> Graph | None:
        return self.graphs.get(k.graph)

    def _cells(self, k: Kernel) -> list:
        return self._cells_named(k, name_cell(k, self._name_width))

    def _cells_named(self, k: Kernel, name: Text) -> list:
        if self._files_of_lines > 1:  # a module over several files: a number alone does not say which
            lines = ",".join(f"{base_name(u.file)}:{u.line}" for u in k.user_lines[:1]) + (
                "…" if len(k.user_lines) > 1 else "")
        else:
            lines = ",".join(str(u.line) for u in k.user_lines[:2]) + ("…" if len(k.user_lines) > 2 else "")
        nodes = str(k.node_count) if k.node_count else "-"
        # Text, not str: DataTable reads a str cell as markup (rich's markup parser, and its emoji table).
        return [self._mark(k.id), name, Text(KIND_TAGS.get(k.kind, k.kind[:3])), Text(nodes),
                Text(moved_cell(k, self._graph_of(k))), Text(lines or "-"),
                *([Text(time_cell(self._times.get(k.id)))] if self._times else [])]

    def _mark(self, kid: str) -> Text:
        if kid == self.selected_id:
            return Text("▶", style="bold")
        if kid in self.fed_ids:
            return Text("◆", style="bold")
        if kid in self.round_trip_ids:
            return Text("↓", style="dim")
        return Text(" ")

    def _refresh_marks(self, ids: set[str]) -> None:
        ids = {kid for kid in ids if kid in self._row_of}  # a folded graph's kernels get theirs when shown
        if ids:
            self.replace_cells("mark", {kid: self._mark(kid) for kid in ids})  # a column of width 1

    def select_kernel(self, kernel_id: str, from_top: bool = False) -> None:
        """Move the cursor to a kernel (which posts Selected), unfolding its graph. ``from_top``: the list's
        first selection, made before the table has its height (Textual's scroll into view then hid the
        first graph's row above the view): shown from the top once laid out."""
        k = self.kernels.get(kernel_id)
        if k is None and self._partial:  # a kernel of a graph not read yet: read them all now
            self.ensure_whole()
            k = self.kernels.get(kernel_id)
        if k is None:
            return
        if kernel_id not in self._row_of:
            self._open.add(k.graph)
            self._rebuild()
        self.move_cursor(row=self._row_of[kernel_id], scroll=True)
        if from_top:
            self.call_after_refresh(self.scroll_home, animate=False)

    def select_entry(self, entry: int) -> None:
        """Move the cursor to an entry of the whole list (see ``entry_names``), unfolding its graph."""
        key = self._entries[entry]
        if key.startswith(GRAPH_ROW):
            if key in self._row_of:
                self.move_cursor(row=self._row_of[key], scroll=True)
        else:
            self.select_kernel(key)

    def current_entry(self) -> int:
        """The cursor's row as an entry of the whole list."""
        if not self._row_ids or self.cursor_row >= len(self._row_ids):
            return 0
        key = self._row_ids[self.cursor_row]
        return self._entry_index.get(key, 0)

    def entry_names(self) -> list[str]:
        """Each graph row's and kernel's name, folded or not, in list order ("" for a graph's row): what ``/``
        searches, so a kernel of a folded graph is found too."""
        return [k.name if (k := self.kernels.get(key)) is not None else "" for key in self._entries]

    def row_names(self) -> list[str]:
        """Each row's kernel name, in row order ("" for a graph's row)."""
        return [k.name if (k := self.kernels.get(key)) is not None else "" for key in self._row_ids]

    def action_toggle_group(self) -> None:
        graph, kernel = self.current()
        if graph is not None and kernel is None and self._grouped:
            self._set_open(graph.id, graph.id not in self._open)

    def action_fold_group(self) -> None:
        graph, _ = self.current()
        if graph is not None and self._grouped and graph.id in self._open:
            self._set_open(graph.id, False)

    def action_unfold_group(self) -> None:
        graph, kernel = self.current()
        if graph is not None and kernel is None and self._grouped and graph.id not in self._open:
            self._set_open(graph.id, True)

    def _set_open(self, gid: str, unfolded: bool) -> None:
        (self._open.add if unfolded else self._open.discard)(gid)
        self._rebuild(keep=GRAPH_ROW + gid)
        self.settle_dimensions()

    def set_selected(self, kernel_id: str | None) -> None:
        old = self.selected_id
        if kernel_id == old:
            return
        self.selected_id = kernel_id
        self._refresh_marks({x for x in (old, kernel_id) if x})

    def set_fed(self, kernel_ids: set[str]) -> None:
        """Mark with ◆ the kernels a user line fed."""
        changed = self.fed_ids ^ kernel_ids
        self.fed_ids = set(kernel_ids)
        self._refresh_marks(changed)

    def current(self) -> tuple[Graph | None, Kernel | None]:
        if not self._row_ids or self.cursor_row >= len(self._row_ids):
            return None, None
        key = self._row_ids[self.cursor_row]
        if key.startswith(GRAPH_ROW):
            return self.graphs.get(key[len(GRAPH_ROW):]), None
        k = self.kernels[key]
        return self.graphs.get(k.graph), k

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        graph, kernel = self.current()
        if graph is not None:
            self.post_message(self.Selected(graph, kernel))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        graph, kernel = self.current()
        if kernel is None and graph is not None and self._grouped:
            self.action_toggle_group()  # enter on a graph row folds or unfolds it
            return
        self.action_open_kernel()

    def action_open_kernel(self) -> None:
        graph, kernel = self.current()
        if kernel is None and graph is not None and self._grouped:
            self.action_toggle_group()  # enter on a graph's row folds or unfolds it
            return
        self.post_message(self.Opened(kernel))

    def action_copy(self) -> None:
        self.ensure_whole()
        kernels = [k for kid in self._entries if (k := self.kernels.get(kid)) is not None]
        self.app.copy_to_clipboard("\n".join(tsv_lines(kernels)) + "\n")
        self.notify(f"copied {plural(len(kernels), 'kernel')} as TSV (OSC 52)", timeout=2)
