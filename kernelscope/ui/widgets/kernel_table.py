"""KernelTable: the kernels of every graph in launch order, extern calls (cuBLAS mm) in their place.

One row per kernel launch site, under a row per graph. The selected kernel carries ``▶`` and the
kernels fed by the user line under the cursor carry ``◆``, so selection never relies on colour.
"""

from __future__ import annotations

from itertools import islice

from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from kernelscope.bundle.model import Bundle, Graph, Kernel
from kernelscope.bundle.symbolic import moved_per_call
from kernelscope.ui.lru import Kept, clear_textual_lru
from kernelscope.ui.widgets.scrolling import StableScrollbars
from kernelscope.ui.xref import KIND_TAGS
from kernelscope.units import base_name, fmt_bytes, plural, short_bytes, shorten_middle

GRAPH_ROW = "graph:"


def kernel_moved(k: Kernel) -> int | None:
    r, w = k.bytes_read, k.bytes_written
    return None if r is None or w is None else r + w


def moved_cell(k: Kernel, graph: Graph | None) -> str:
    """Bytes moved per launch; for a symbolic kernel, per call of its graph (one value, or the range)."""
    moved = kernel_moved(k)
    per_call = moved_per_call(k, graph) if moved is None else []
    if per_call:
        lo, hi = min(per_call), max(per_call)
        return short_bytes(lo) if lo == hi else f"{short_bytes(lo)}–{short_bytes(hi)}"
    return short_bytes(moved)


class KernelTable(StableScrollbars, DataTable):
    """The kernel list; highlighting a row selects that kernel everywhere."""

    BINDINGS = [
        Binding("enter", "open_kernel", "Kernel"),  # short: the footer at 80 columns
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
        self._row_ids: list[str] = []
        self._name_width: int | None = None  # the name column's width now; None: names in full
        self._files_of_lines = 0  # how many files the kernels' user lines are in
        self._lines: Kept[tuple, Strip] = Kept(512)  # see render_line
        self._plain_cells: Kept[tuple, tuple] = Kept(1024)  # see _render_cell

    def on_mount(self) -> None:
        self.add_column(" ", key="mark", width=1)
        self.add_column("kernel", key="name")
        self.add_column("kind", key="kind")
        self.add_column("nodes", key="nodes")
        self.add_column("moved", key="moved")
        self.add_column("line", key="line")

    def load(self, bundle: Bundle, kernels_in_order: list[Kernel]) -> None:
        self.clear()
        self._lines.clear()
        self.bundle = bundle
        self.kernels = {k.id: k for k in kernels_in_order}
        self.graphs = {g.id: g for g in bundle.graphs}
        self._row_ids = []
        self._files_of_lines = len({u.file for k in kernels_in_order for u in k.user_lines})
        multi = len(bundle.graphs) > 1
        for g in bundle.graphs:
            ks = [k for k in kernels_in_order if k.graph == g.id]
            if multi or not ks:
                self.add_row("", self._graph_label(g, len(ks)), "", "", "", "", key=GRAPH_ROW + g.id)
                self._row_ids.append(GRAPH_ROW + g.id)
            for k in ks:
                self.add_row(*self._cells(k), key=k.id)
                self._row_ids.append(k.id)
        self._name_width = None
        self._fit()

    # Long names shorten in the middle (``triton_poi_fused_…_relu_0``) so that the numbers after them
    # (nodes, bytes moved, user lines) always stay in view, at any width.
    def _graph_label(self, g: Graph, n: int, width: int | None = None) -> Text:
        text = f"{g.kind} graph {g.compile_id} · {plural(n, 'kernel')}"
        if width and len(text) > width:
            text = shorten_middle(f"{g.kind} graph {g.compile_id}", width)  # the graph, not its count, when narrow
        return Text(text, style="bold italic")

    def _name_cell(self, k: Kernel, width: int | None = None) -> Text:
        suffix = f" ×{k.launches}" if k.launches > 1 else ""
        shown = display_name(k)
        name = Text(shorten_middle(shown, max(width - len(suffix), 8)) if width else shown,
                    style="italic" if k.lang == "extern" else "bold")
        if suffix:
            name.append(suffix, style="dim")
        return name

    def _other_widths(self) -> int:
        """Cells taken by every column but the name, padding included."""
        total = 0
        for key, column in self.columns.items():
            if key.value == "name":
                continue
            cells = [column.label.plain] + [str(c) for c in self.get_column(key)]
            total += max(len(c) for c in cells) + 2 * self.cell_padding
        return total

    def _fit(self) -> None:
        width = self.scrollable_content_region.width
        if width <= 0 or not self._row_ids:
            return
        longest = max([len(display_name(k)) + (len(f" ×{k.launches}") if k.launches > 1 else 0) for k in self.kernels.values()]
                      + [len(self.columns[ColumnKey("name")].label.plain)])
        room = max(width - self._other_widths() - 2, 12)
        wanted = None if longest <= room else room
        if wanted == self._name_width:
            return
        self._name_width = wanted
        counts = {g: sum(1 for k in self.kernels.values() if k.graph == g) for g in self.graphs}
        for key in self._row_ids:
            if key.startswith(GRAPH_ROW):
                gid = key[len(GRAPH_ROW):]
                cell = self._graph_label(self.graphs[gid], counts.get(gid, 0), wanted or room)
            else:
                cell = self._name_cell(self.kernels[key], wanted)
            self.update_cell(key, "name", cell, update_width=True)

    def on_resize(self) -> None:
        self._fit()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._lines.clear()

    def render_line(self, y: int) -> Strip:
        """A row's line, kept per row and state. DataTable keys its own line cache on the cursor's
        position, so when the list scrolls as the cursor moves every visible row is drawn again; a row
        looks the same wherever it is on screen, as long as its cursor, hover, mark and data are."""
        header = self.header_height if self.show_header else 0
        scroll_x, scroll_y = self.scroll_offset
        row = y - header + scroll_y
        updates = getattr(self, "_update_count", None)  # DataTable's count of data changes (8.2.8)
        if y < header or self.fixed_rows or self.cursor_type != "row" or updates is None or not 0 <= row < self.row_count:
            return super().render_line(y)
        kid = self.ordered_rows[row].key.value
        key = (kid, row, scroll_x, self.size.width, self.show_cursor and row == self.cursor_row, row == self.hover_row,
               kid == self.selected_id, kid in self.fed_ids, updates, self.get_pseudo_class_state(), self.app.theme)
        strip = self._lines.get(key)
        if strip is None:
            strip = self._lines[key] = super().render_line(y)
        return strip

    def _render_cell(self, row_index: int, column_index: int, base_style: Style, width: int, cursor: bool = False,
                     hover: bool = False):
        """DataTable's _render_cell (Textual 8.2.8) for a kernel row, its cell's unstyled rendering kept.

        A cell is drawn again whenever its row's cursor or hover state changes, the cursor row on every
        move: rendering its Text inside Padding inside Styled took ~0.3 ms a cell, six a row. The text
        renders the same in every state; only the styles laid over it (before and after, as Styled lays
        them) change. So the padded text's segments are kept, per stored value and width, and each state
        is those segments styled, split and padded into lines as Console.render_lines does. Header,
        row-label, fixed and multi-line cells, and any Textual without these internals, take DataTable's
        own path."""
        try:
            row_key = self._row_locations.get_key(row_index)
            column_key = self._column_locations.get_key(column_index)
            cache = self._cell_render_cache
            row = self.rows[row_key]
        except (AttributeError, KeyError):
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        if row_index < 0 or column_index < 0 or row_index < self.fixed_rows or column_index < self.fixed_columns \
                or row.height != 1:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        key = (row_key, column_key, base_style, cursor, hover, self._show_hover_cursor, self._update_count,
               self._pseudo_class_state)
        lines = cache.get(key)
        if lines is not None:
            return lines
        _, cells = self._get_row_renderables(row_index)
        cell = cells[column_index]
        component_style, post_style = self._get_styles_to_render_cell(
            False, False, False, hover, cursor, self.show_cursor, self._show_hover_cursor,
            self.cursor_foreground_priority == "css", self.cursor_background_priority == "css")
        console = self.app.console
        options = self.app.console_options.update_dimensions(width, 1).update(no_wrap=True)
        # Keyed by the value stored in the table (its renderable is made anew at each call): a value
        # replaced (update_cell, a mark set in place) is another object, so never an old rendering.
        raw = self._data[row_key][column_key]
        plain_key = (id(raw), width, self.cell_padding)
        plain = self._plain_cells.get(plain_key)
        if plain is None or plain[0] is not raw:
            plain = (raw, list(console.render(Padding(cell, (0, self.cell_padding)), options)))
            self._plain_cells[plain_key] = plain
        pre = console.get_style(base_style + Style.from_meta({"row": row_index, "column": column_index})
                                + component_style)
        styled = Segment.apply_style(plain[1], style=pre, post_style=console.get_style(post_style))
        lines = list(islice(Segment.split_and_crop_lines(styled, width, include_new_lines=False, pad=True), None, 1))
        if not lines:
            lines = [[Segment(" " * width)]]
        cache[key] = lines
        return lines

    def _graph_of(self, k: Kernel) -> Graph | None:
        return next((g for g in self.bundle.graphs if g.id == k.graph), None) if self.bundle else None

    def _cells(self, k: Kernel) -> list:
        if self._files_of_lines > 1:  # a module over several files: a number alone does not say which
            lines = ",".join(f"{base_name(u.file)}:{u.line}" for u in k.user_lines[:1]) + (
                "…" if len(k.user_lines) > 1 else "")
        else:
            lines = ",".join(str(u.line) for u in k.user_lines[:2]) + ("…" if len(k.user_lines) > 2 else "")
        name = self._name_cell(k)
        nodes = str(len(k.fx_nodes)) if k.fx_nodes else "-"
        return [self._mark(k.id), name, Text(KIND_TAGS.get(k.kind, k.kind[:3])), nodes, moved_cell(k, self._graph_of(k)),
                lines or "-"]

    def _mark(self, kid: str) -> Text:
        if kid == self.selected_id:
            return Text("▶", style="bold")
        if kid in self.fed_ids:
            return Text("◆", style="bold")
        return Text(" ")

    def _refresh_marks(self, ids: set[str]) -> None:
        ids = {kid for kid in ids if kid in self.kernels}
        if ids and not self._set_mark_cells(ids):
            for kid in ids:
                self.update_cell(kid, "mark", self._mark(kid))

    def _set_mark_cells(self, ids: set[str]) -> bool:
        """Put these rows' marks in place, re-rendering those rows only (False: use update_cell).

        DataTable.update_cell bumps a counter that every cached cell and row is keyed on, so moving the
        selection (two marks) re-rendered every visible row of the table on each key. The mark column
        has a fixed width of 1: the new values need only their own cells and rows dropped from the
        caches. Textual's private DataTable caches, checked on 8.2.8; without them, update_cell."""
        try:
            data, cells, rows = self._data, self._cell_render_cache, self._row_render_cache
            renderables, lines = self._row_renderable_cache, self._line_cache
        except AttributeError:
            return False
        keys = {RowKey(kid) for kid in ids}
        if not keys <= data.keys():
            return False
        mark = ColumnKey("mark")
        for row in keys:
            data[row][mark] = self._mark(row.value)
        indices = {self.get_row_index(row) for row in keys}
        # Cells are keyed (row, column, ...), rows (row, ...), a row's renderables (count, index).
        for cache, wanted in ((cells, lambda k: k[1] == mark and k[0] in keys), (rows, lambda k: k[0] in keys),
                              (renderables, lambda k: k[1] in indices)):
            for key in [key for key in cache.keys() if wanted(key)]:
                cache.discard(key)
        clear_textual_lru(lines)  # keyed by screen line: cheap to rebuild from the cached rows
        for index in indices:
            self.refresh_row(index)
        return True

    def select_kernel(self, kernel_id: str) -> None:
        """Move the cursor to a kernel (which posts Selected)."""
        if kernel_id in self._row_ids:
            self.move_cursor(row=self._row_ids.index(kernel_id), scroll=True)

    def row_names(self) -> list[str]:
        """Each row's kernel name, in row order ("" for a graph's row): what ``/`` searches."""
        return [k.name if (k := self.kernels.get(key)) is not None else "" for key in self._row_ids]

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
        self.action_open_kernel()

    def action_open_kernel(self) -> None:
        self.post_message(self.Opened(self.current()[1]))

    def action_copy(self) -> None:
        lines = ["#\tkind\tnodes\tread\twritten\tuser lines\tkernel\tgraph"]
        n = 0
        for kid in self._row_ids:
            k = self.kernels.get(kid)
            if k is None:
                continue
            n += 1
            lines.append(f"{n}\t{k.kind}\t{len(k.fx_nodes)}\t{fmt_bytes(k.bytes_read)}\t{fmt_bytes(k.bytes_written)}\t"
                         + ",".join(f"{base_name(u.file)}:{u.line}" for u in k.user_lines) + f"\t{k.name}\t{k.graph}")
        self.app.copy_to_clipboard("\n".join(lines) + "\n")
        self.notify(f"copied {plural(n, 'kernel')} as TSV (OSC 52)", timeout=2)


def display_name(k: Kernel) -> str:
    """The name as the table shows it: an extern call without the wrapper's namespace
    (``extern_kernels.mm`` -> ``mm``, ``torch.ops.aten.foo.default`` -> ``aten.foo``; the kind column
    says it is extern), a generated kernel as it is."""
    if k.lang != "extern":
        return k.name
    name = k.name.removeprefix("extern_kernels.").removeprefix("torch.ops.")
    return name.removesuffix(".default") or k.name
