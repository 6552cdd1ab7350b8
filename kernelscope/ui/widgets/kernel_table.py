"""KernelTable: the kernels of every graph in launch order, extern calls (cuBLAS mm) in their place.

One row per kernel launch site, under a row per graph. The selected kernel carries ``▶`` and the
kernels fed by the user line under the cursor carry ``◆``, so selection never relies on colour.
"""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from kernelscope.bundle.model import Bundle, Graph, Kernel
from kernelscope.show import fmt_bytes
from kernelscope.ui.xref import KIND_TAGS, base_name

GRAPH_ROW = "graph:"


def kernel_moved(k: Kernel) -> int | None:
    r, w = k.bytes_read, k.bytes_written
    return None if r is None or w is None else r + w


def short_bytes(n: int | None) -> str:
    return fmt_bytes(n).replace(".0 ", " ").replace(" ", "")


class KernelTable(DataTable):
    """The kernel list; highlighting a row selects that kernel everywhere."""

    BINDINGS = [
        Binding("enter", "open_kernel", "Kernel source"),
        Binding("y", "copy", "Copy"),
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

    def on_mount(self) -> None:
        self.add_column(" ", key="mark", width=1)
        self.add_column("kernel", key="name")
        self.add_column("kind", key="kind")
        self.add_column("nodes", key="nodes")
        self.add_column("moved", key="moved")
        self.add_column("line", key="line")

    def load(self, bundle: Bundle, kernels_in_order: list[Kernel]) -> None:
        self.clear()
        self.bundle = bundle
        self.kernels = {k.id: k for k in kernels_in_order}
        self.graphs = {g.id: g for g in bundle.graphs}
        self._row_ids = []
        multi = len(bundle.graphs) > 1
        for g in bundle.graphs:
            ks = [k for k in kernels_in_order if k.graph == g.id]
            if multi or not ks:
                label = Text(f"{g.kind} graph {g.compile_id} · {len(ks)} kernel(s)", style="bold italic")
                self.add_row("", label, "", "", "", "", key=GRAPH_ROW + g.id)
                self._row_ids.append(GRAPH_ROW + g.id)
            for k in ks:
                self.add_row(*self._cells(k), key=k.id)
                self._row_ids.append(k.id)

    def _cells(self, k: Kernel) -> list:
        lines = ",".join(str(u.line) for u in k.user_lines[:3]) + ("…" if len(k.user_lines) > 3 else "")
        name = Text(k.name, style="italic" if k.lang == "extern" else "bold")
        if k.launches > 1:
            name.append(f" ×{k.launches}", style="dim")
        nodes = str(len(k.fx_nodes)) if k.fx_nodes else "-"
        return [self._mark(k.id), name, Text(KIND_TAGS.get(k.kind, k.kind[:3])), nodes, short_bytes(kernel_moved(k)),
                lines or "-"]

    def _mark(self, kid: str) -> Text:
        if kid == self.selected_id:
            return Text("▶", style="bold")
        if kid in self.fed_ids:
            return Text("◆", style="bold")
        return Text(" ")

    def _refresh_marks(self, ids: set[str]) -> None:
        for kid in ids:
            if kid in self.kernels:
                self.update_cell(kid, "mark", self._mark(kid))

    def select_kernel(self, kernel_id: str) -> None:
        """Move the cursor to a kernel (which posts Selected)."""
        if kernel_id in self._row_ids:
            self.move_cursor(row=self._row_ids.index(kernel_id), scroll=True)

    def set_selected(self, kernel_id: str | None) -> None:
        old = self.selected_id
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
        self.notify(f"copied {n} kernels as TSV (OSC 52)", timeout=2)
