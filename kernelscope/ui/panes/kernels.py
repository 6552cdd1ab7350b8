"""The kernels pane: every kernel of the capture, in launch order; the selection starts here.
``/`` finds a kernel by (part of) its name, ``n`` / ``N`` the next and previous one."""

from __future__ import annotations

from contextlib import nullcontext

from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message

from kernelscope.ui.panes.base import Pane
from kernelscope.ui.textdoc import TextDoc
from kernelscope.ui.widgets.kernel_table import KernelTable


class KernelSearch:
    """The search bar's target in the kernels table: the names of every entry (graph rows and kernels,
    folded graphs too) as lines of a TextDoc (smart case, wrapping), the table's cursor as the search's
    cursor; a kernel found in a folded graph unfolds it. Built when ``/`` is pressed."""

    def __init__(self, table: KernelTable) -> None:
        self.table = table
        self.doc = TextDoc("\n".join(table.entry_names()))
        self.query_text = ""
        self.match_noun = "kernels"

    @property
    def cursor(self) -> int:
        return self.table.current_entry()

    @property
    def is_mounted(self) -> bool:
        return self.table.is_mounted

    def focus(self) -> None:
        self.table.focus()

    def move_cursor(self, row: int, center: bool = False) -> None:
        moving = getattr(self.table.screen, "moving_list", None)  # a search: every pane shows it at once
        with moving() if moving is not None else nullcontext():
            self.table.select_entry(row)

    def search(self, query: str, *, forward: bool = True, skip_current: bool = False) -> int | None:
        self.query_text = query
        if not query:
            return None
        start = (self.cursor + ((1 if forward else -1) if skip_current else 0)) % max(1, len(self.doc))
        found = self.doc.find(query, start, forward)
        if found is not None:
            self.move_cursor(found)
        return found


class KernelsPane(Pane):
    pane_id, pane_title, pane_key = "kernels", "Kernels", "1"

    BINDINGS = [
        Binding("slash", "search", "Find"),
        Binding("n", "next_match(1)", "Next match", show=False),
        Binding("N", "next_match(-1)", "Prev match", show=False),
    ]

    class SearchRequested(Message):
        """Open the search bar on the kernel names."""

        def __init__(self, target: KernelSearch) -> None:
            super().__init__()
            self.target = target

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._search: KernelSearch | None = None

    def compose(self) -> ComposeResult:
        yield KernelTable(id="kernels")

    @property
    def table(self) -> KernelTable:
        return self.query_one(KernelTable)

    def load(self) -> None:
        explorer = self.explorer
        self.table.load(explorer.bundle, None if explorer.lazy_index else explorer.index.kernels_in_order())
        self._search = None

    def forget_bench(self) -> None:
        """A bench stored its times: the list's time column drawn again."""
        self.table.bench_changed()

    def show_selection(self, graph, kernel) -> None:
        self.table.set_selected(kernel.id if kernel else None)

    def action_search(self) -> None:
        self.table.ensure_whole()  # a job read graph by graph: every graph's kernels searched
        previous = self._search.query_text if self._search else ""
        self._search = KernelSearch(self.table)
        self._search.query_text = previous
        self.post_message(self.SearchRequested(self._search))

    def action_next_match(self, direction: int) -> None:
        if self._search is None or not self._search.query_text:
            self.action_search()
            return
        if self._search.search(self._search.query_text, forward=direction > 0, skip_current=True) is None:
            self.notify(f"no kernel named like {self._search.query_text!r}", severity="warning", timeout=3,
                        markup=False)
