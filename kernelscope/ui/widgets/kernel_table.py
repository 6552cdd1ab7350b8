"""KernelTable: the kernels of every graph in launch order, extern calls (cuBLAS mm) in their place.

One row per kernel launch site, under a row per graph. The selected kernel carries ``▶`` and the
kernels fed by the user line under the cursor carry ``◆``, so selection never relies on colour.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from kernelscope.bundle.model import Bundle, Graph, Kernel
from kernelscope.bundle.symbolic import moved_per_call
from kernelscope.ui.textual_private.data_table import FastTableRows
from kernelscope.ui.textual_private.scrollbars import StableScrollbars
from kernelscope.ui.xref import KIND_TAGS
from kernelscope.units import base_name, fmt_bytes, plural, short_bytes, shorten_kernel_name, shorten_middle

GRAPH_ROW = "graph:"
MIN_NAME = 12  # the name column's narrowest width


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


class KernelTable(StableScrollbars, FastTableRows, DataTable):
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
        # Kernels whose result the next row reads back from memory (a pair Inductor did not fuse):
        # marked ↓ between the two (kernelscope/report/why.py).
        self.round_trip_ids: set[str] = set()
        self._row_ids: list[str] = []
        self._name_width: int | None = None  # the name column's width now; None: names in full
        self._files_of_lines = 0  # how many files the kernels' user lines are in

    def on_mount(self) -> None:
        # Labels as Text: a str label is read as markup, and rich's markup loads its emoji table (~3 ms of
        # the first frame) for it.
        self.add_column(Text(" "), key="mark", width=1)
        for key, label in (("name", "kernel"), ("kind", "kind"), ("nodes", "nodes"), ("moved", "moved"),
                           ("line", "line")):
            self.add_column(Text(label), key=key)

    def load(self, bundle: Bundle, kernels_in_order: list[Kernel]) -> None:
        self.clear()
        self.bundle = bundle
        self.kernels = {k.id: k for k in kernels_in_order}
        self.graphs = {g.id: g for g in bundle.graphs}
        self._row_ids = []
        self.round_trip_ids = feeds_next(bundle, kernels_in_order)
        self._files_of_lines = len({u.file for k in kernels_in_order for u in k.user_lines})
        multi = len(bundle.graphs) > 1
        for g in bundle.graphs:
            ks = [k for k in kernels_in_order if k.graph == g.id]
            if multi or not ks:
                self.add_row(Text(), self._graph_label(g, len(ks)), Text(), Text(), Text(), Text(), key=GRAPH_ROW + g.id)
                self._row_ids.append(GRAPH_ROW + g.id)
            for k in ks:
                self.add_row(*self._cells(k), key=k.id)
                self._row_ids.append(k.id)
        self._name_width = None
        self._fit()
        self.settle_dimensions()  # the first layout sizes the table by its rows, not a frame later

    # Long names lose their decoration (``triton_poi_fused_``: the kind column says it), then their middle
    # (``add_…_relu_0``), so that the numbers after them (nodes, bytes moved, user lines) and the end of
    # the name that tells kernels apart always stay in view, at any width.
    def _graph_label(self, g: Graph, n: int, width: int | None = None) -> Text:
        text = f"{g.kind} graph {g.compile_id} · {plural(n, 'kernel')}"
        if width and len(text) > width:
            text = shorten_middle(f"{g.kind} graph {g.compile_id}", width)  # the graph, not its count, when narrow
        return Text(text, style="bold italic")

    def _name_cell(self, k: Kernel, width: int | None = None) -> Text:
        suffix = f" ×{k.launches}" if k.launches > 1 else ""
        shown = display_name(k)
        name = Text(shorten_kernel_name(shown, max(width - len(suffix), 8)) if width else shown,
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
        if not self._row_ids:
            return
        width = self.scrollable_content_region.width
        longest = max([len(display_name(k)) + (len(f" ×{k.launches}") if k.launches > 1 else 0) for k in self.kernels.values()]
                      + [len(self.columns[ColumnKey("name")].label.plain)])
        # Not laid out yet (loaded in on_mount): the narrowest names, so that the first layout gives the table
        # the vertical scrollbar it needs and no horizontal one, which its real width (on Resize) would take
        # away again in a layout and a frame of its own.
        room = max(width - self._other_widths() - 2, MIN_NAME) if width > 0 else MIN_NAME
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
        self.settle_dimensions()  # the fitted width is in the next layout (the explorer's first frame)

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
        # Text, not str: DataTable reads a str cell as markup (rich's markup parser, and its emoji table).
        return [self._mark(k.id), name, Text(KIND_TAGS.get(k.kind, k.kind[:3])), Text(nodes),
                Text(moved_cell(k, self._graph_of(k))), Text(lines or "-")]

    def _mark(self, kid: str) -> Text:
        if kid == self.selected_id:
            return Text("▶", style="bold")
        if kid in self.fed_ids:
            return Text("◆", style="bold")
        if kid in self.round_trip_ids:
            return Text("↓", style="dim")
        return Text(" ")

    def _refresh_marks(self, ids: set[str]) -> None:
        ids = {kid for kid in ids if kid in self.kernels}
        if ids:
            self.replace_cells("mark", {kid: self._mark(kid) for kid in ids})  # a column of width 1

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


def feeds_next(bundle: Bundle, kernels_in_order: list[Kernel]) -> set[str]:
    """The kernels whose result the next kernel of the list reads through memory (not fused)."""
    from kernelscope.report.why import fusion_data

    pairs = {(p.get("producer"), p.get("consumer")) for p in fusion_data(bundle).get("pairs", [])}
    return {a.id for a, b in zip(kernels_in_order, kernels_in_order[1:]) if (a.id, b.id) in pairs}


def display_name(k: Kernel) -> str:
    """The name as the table shows it: an extern call without the wrapper's namespace
    (``extern_kernels.mm`` -> ``mm``, ``torch.ops.aten.foo.default`` -> ``aten.foo``; the kind column
    says it is extern), a generated kernel as it is."""
    if k.lang != "extern":
        return k.name
    name = k.name.removeprefix("extern_kernels.").removeprefix("torch.ops.")
    return name.removesuffix(".default") or k.name
