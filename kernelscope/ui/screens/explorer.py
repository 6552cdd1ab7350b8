"""ExplorerScreen: one bundle, every view of it, cross-linked.

Panes (kernelscope/ui/panes/, one module each): kernels, your source, FX graph, kernel source,
output code, breaks, info. At a comfortable size they share one grid; below 120x32 they fold into
tabs (keys 1-7); presentation mode (an app reactive) shows two big panes. The screen owns the
selection: setting it shows the kernel in every pane; a pane posts messages to navigate.
"""

from __future__ import annotations

import time

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Tab, Tabs

from kernelscope.bundle.model import Bundle, Graph, Kernel
from kernelscope.ui import textdoc
from kernelscope.ui.footer_order import focused_chain, pane_keys_first
from kernelscope.ui.gcpolicy import MoveGC
from kernelscope.ui.panes import GRID_ORDER, PANES, Pane
from kernelscope.ui.panes.kernels import KernelsPane
from kernelscope.ui.screens.explorer_actions import ExplorerActions
from kernelscope.ui.screens.job_loading import JobLoading, job_loading
from kernelscope.ui.screens.list_runs import FollowsListRuns
from kernelscope.ui.screens.resume import first_resume_styled, same_size_again
from kernelscope.ui.textual_private.compositor import use_sparse_compositor
from kernelscope.ui.textual_private.first_paint import settle_first_paint
from kernelscope.ui.widgets.code_view import CodeView
from kernelscope.ui.widgets.kernel_table import KernelTable
from kernelscope.ui.widgets.key_footer import KeyFooter
from kernelscope.ui.widgets.search_bar import SearchBar
from kernelscope.ui.widgets.title_line import TitleLine
from kernelscope.ui.xref import BundleIndex
from kernelscope.units import plural

PANE_CLASSES = {cls.pane_id: cls for cls in PANES}
PANE_TITLES = {cls.pane_id: cls.pane_title for cls in PANES}
PANE_KEYS = {cls.pane_id: cls.pane_key for cls in PANES}
TAB_LABELS = {cls.pane_id: cls.pane_tab for cls in PANES if cls.pane_tab}
WIDE_MIN = (120, 32)
# Kernel sources are lexed ahead, ~12 ms a tick, once the selection has not moved for a moment: a move to a
# kernel whose source is lexed already draws without Pygments' 5-20 ms.
LEX_AHEAD_EVERY = 0.05
LEX_AHEAD_IDLE = 0.25
LEX_AHEAD_BUDGET = 0.012  # seconds of lexing per tick (one source may take longer: it is not cut)


class ExplorerScreen(JobLoading, FollowsListRuns, ExplorerActions, Screen):
    """Every view of one bundle."""

    AUTO_FOCUS = "KernelTable"
    ALLOW_IN_MAXIMIZED_VIEW = "SearchBar, KeyFooter"  # a zoomed pane keeps its search bar and keys

    _KERNEL = Binding.Group("Kernel", compact=True)  # "," "." share one label in the footer
    _FX = Binding.Group("FX graph", compact=True)
    BINDINGS = [
        Binding("comma", "step_kernel(-1)", "Prev kernel", key_display=",", group=_KERNEL),
        Binding("full_stop", "step_kernel(1)", "Next kernel", key_display=".", group=_KERNEL),
        Binding("u", "goto('source')", "User lines"),
        Binding("x", "goto('fx')", "FX nodes"),
        Binding("f", "next_file", "Next file", show=False),
        Binding("o", "goto('output')", "Launch"),
        Binding("left_square_bracket", "fx_kind(-1)", "FX ←", key_display="[", group=_FX),
        Binding("right_square_bracket", "fx_kind(1)", "FX →", key_display="]", group=_FX),
        Binding("a", "fx_compact", "FX as printed", show=False),
        Binding("z", "zoom", "Zoom pane"),
        Binding("c", "recompile_form", "Recompile…"),
        Binding("r", "recapture", "Recapture", show=False),
        Binding("e", "edit", "Edit & run"),
        Binding("p", "pipeline", "Pipeline"),
        Binding("b", "bench", "Bench"),
        Binding("d", "diff", "Diff"),
        Binding("J", "job", "Job"),
        Binding("escape,q", "back", "Back"),
        *[Binding(cls.pane_key, f"show_pane('{cls.pane_id}')", cls.pane_title, show=False) for cls in PANES],
    ]

    # The footer shows the focused pane's keys first, then ? (every key), then these: at 80 columns
    # only six or seven fit, and how to leave is one of them.
    HEADLINE_ACTIONS = ("back", "pipeline", "bench", "diff")

    @property
    def active_bindings(self):
        return pane_keys_first(super().active_bindings, focused_chain(self, Pane), self.HEADLINE_ACTIONS)

    # The selection, (graph, kernel): every pane shows it (see watch_selection). No repaint of its own:
    # a repaint of the screen recomposites every cell of it (a full update) on each key; the panes
    # that change refresh themselves.
    selection: reactive[tuple[Graph | None, Kernel | None]] = reactive((None, None), always_update=True, init=False,
                                                                       repaint=False)

    def __init__(self, bundle: Bundle, *, previous: Bundle | None = None, request=None) -> None:
        super().__init__()
        use_sparse_compositor(self)  # a frame draws what changed, not the whole screen
        settle_first_paint(self)  # the first frame painted is the one its widgets have fitted
        self.bundle = bundle
        self.previous = previous
        self.request = request  # the CaptureRequest that made this bundle, when captured live
        self.index = BundleIndex(bundle)
        self.lazy_index, self.line_times_later = job_loading(bundle)
        self.graph: Graph | None = bundle.graphs[0] if bundle.graphs else None
        self.kernel: Kernel | None = None
        self.active_pane = "kernels"
        self._cycle: tuple[tuple, list[str]] | None = None
        self._moved_at = 0.0  # when the selection last moved (lexing ahead waits for the user to pause)
        self._shown_graph: Graph | None = None
        self._lexing = None  # the lex-ahead ticker, from the first frame on
        self.move_gc = MoveGC()

    @property
    def capture_baseline(self) -> Bundle:
        """What a capture started from here is compared with."""
        return self.bundle

    def pane(self, pane_id: str) -> Pane:
        return self.query_one(f"#pane-{pane_id}", Pane)

    @property
    def fx_kind(self) -> str:
        return self.pane("fx").fx_kind

    # -- layout ----------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield TitleLine(self.bundle, self.previous, id="summary")
        # Layout classes go on before the panes exist: set later, each would restyle a whole subtree.
        self._set_layout_mode(self._wanted_layout())
        if self.layout_mode != "wide":
            yield self._new_pane_tabs()
        with Container(id="panes"):
            for pid in GRID_ORDER:
                yield PANE_CLASSES[pid](classes=" ".join(self._pane_classes(pid)))
        yield SearchBar(id="search")
        # Narrow, the footer's room goes to keys: ^p palette (12 columns) is listed by ? with the rest. It
        # reads the keys as it draws: those of the kernel table, focused in on_mount.
        yield KeyFooter(show_command_palette=self.layout_mode == "wide")

    def on_mount(self) -> None:
        self.watch(self.app, "presentation", self._apply_layout, init=False)
        self._apply_layout()
        for cls in PANES:
            self.pane(cls.pane_id).load()
        table = self.query_one(KernelTable)
        first = (next(iter(table.kernels.values()), None) if self.lazy_index
                 else next((k for k in self.index.kernels_in_order()), None))
        self.select(self.graph if first is None else self.bundle.graph(first.graph), first)
        if first is not None:
            table.select_kernel(first.id, from_top=True)
        self.set_focus(table)  # now, not a message later: the footer's keys and the first frame follow it
        # The list's cursor selects its kernel as it moves, in the same frame: the Selected message the
        # table posts comes after the frame that drew the moved cursor, and the panes would redraw in a
        # second frame, one frame interval (~17 ms) later. The message stays, for when this misses.
        self.watch(table, "cursor_coordinate", self._table_cursor, init=False)
        # Lexing ahead and reclaiming wait for highlighting, after the first frame: their tickers start then.
        self.app.after_first_frame(self._start_tickers)
        self.load_rest_of_job()

    def _start_tickers(self) -> None:
        if not self.is_attached:  # replaced before the first frame
            return
        self._lexing = self.set_interval(LEX_AHEAD_EVERY, self._lex_ahead)
        self.set_interval(1.0, self.move_gc.idle_tick)

    def _lex_ahead(self) -> None:
        """While the user is idle, highlight what was drawn plain while moving between graphs, then lex the
        kernel sources they may move to next (from the selection on)."""
        if not getattr(self.app, "highlighting_ready", True) or time.monotonic() - self._moved_at < LEX_AHEAD_IDLE:
            return
        for view in self.query(CodeView):
            if view.doc.drawn_plain and not view.doc.lexed:
                view.doc.lex()
                view.rehighlight()
                return  # one text a tick: a key pressed meanwhile waits for no more
        order = self.index.kernels_in_order()
        i = self.index.kernel_position(self.kernel) or 0
        ahead, pane, start = order[i:] + order[:i], self.pane("kernel"), time.perf_counter()
        while time.perf_counter() - start < LEX_AHEAD_BUDGET:  # a few sources a tick, a key waits no longer
            if not pane.lex_ahead(ahead):
                self._lexing.pause()  # resumed by the next move (a text may be drawn plain then)
                return

    def on_resize(self, event: events.Resize) -> None:
        if not same_size_again(self, event):
            self._apply_layout()

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        first_resume_styled(self, event)
        self._apply_layout()

    def _wanted_layout(self) -> str:
        width, height = self.app.size
        if getattr(self.app, "presentation", False):
            return "big"
        return "wide" if width >= WIDE_MIN[0] and height >= WIDE_MIN[1] else "tabs"

    def _set_layout_mode(self, mode: str) -> None:
        for m in ("wide", "tabs", "big"):
            self.set_class(m == mode, f"-{m}")
        self.layout_mode = mode

    def _apply_layout(self) -> None:
        mode = self._wanted_layout()
        if mode == getattr(self, "layout_mode", None):
            return  # mount, resize and resume all land here; only a change of layout needs work
        self._set_layout_mode(mode)
        if mode != "wide" and self._pane_tabs() is None:
            self.mount(self._new_pane_tabs(), before="#panes")
        self._show_active()
        for footer in self.query(KeyFooter):
            footer.show_command_palette = mode == "wide"

    def _pane_classes(self, pane_id: str) -> list[str]:
        pinned = "kernels" if self.active_pane == "source" else "source"
        return [c for c, on in (("-active", pane_id == self.active_pane), ("-pinned", pane_id == pinned)) if on]

    def _new_pane_tabs(self) -> Tabs:
        return Tabs(*[Tab(cls.tab_text(), id=f"tab-{cls.pane_id}") for cls in PANES], id="pane-tabs",
                    active=f"tab-{self.active_pane}")

    def _pane_tabs(self) -> Tabs | None:
        """The pane tabs (only in the tabs and big layouts: wide shows every pane at once)."""
        found = self.query("#pane-tabs")
        return found.first(Tabs) if found else None

    def _set_tab(self, pane_id: str) -> None:
        if (tabs := self._pane_tabs()) is not None:
            tabs.active = f"tab-{pane_id}"

    def _show_active(self) -> None:
        for cls in PANES:
            pane, pid = self.pane(cls.pane_id), cls.pane_id
            for name in ("-active", "-pinned"):
                pane.set_class(name in self._pane_classes(pid), name)

    def action_show_pane(self, pane_id: str) -> None:
        if self.maximized is not None:  # zoomed: the pane asked for is the one zoomed now
            self.maximize(self.pane(pane_id), container=False)
        self._set_tab(pane_id)
        self._activate(pane_id, focus=True)

    def _activate(self, pane_id: str, *, focus: bool) -> None:
        self.follow_now()  # the pane shown shows the selection
        self.active_pane = pane_id
        self._show_active()
        if focus:
            # Now, not a message later (widget.focus() defers): a key typed right after 1-7 arrives before
            # that message and went to the pane left (7, 1, ↓ moved the Info pane's cursor).
            self.set_focus(self.query_one(f"#{pane_id}"))

    @on(Tabs.TabActivated, "#pane-tabs")
    def _pane_tab(self, event: Tabs.TabActivated) -> None:
        event.stop()
        if event.tab.id != event.tabs.active:
            return  # a switch overtaken by a later key (7 then 1): acting on it would steal the focus back
        pane_id = event.tab.id.removeprefix("tab-")
        if pane_id != self.active_pane:
            self._activate(pane_id, focus=self.layout_mode != "wide")

    def on_descendant_focus(self, event) -> None:
        self.follow_now()  # a key in the pane focused acts on what it shows
        node = event.widget
        while node is not None and node is not self:
            if node.id and node.id.startswith("pane-") and "pane" in node.classes:
                pane_id = node.id.removeprefix("pane-")
                if pane_id != self.active_pane and self.layout_mode == "wide":
                    self.active_pane = pane_id
                    self._set_tab(pane_id)
                return
            node = node.parent

    def action_zoom(self) -> None:
        """The focused pane fills the body (z again, or escape, brings the layout back)."""
        self.follow_now()
        if self.maximized is not None:
            self.minimize()
            return
        focused = self.focused
        pane = next((a for a in focused.ancestors_with_self if isinstance(a, Pane)), None) if focused else None
        if pane is None:
            pane = self.pane(self.active_pane)
        self.maximize(pane, container=False)

    # -- selection ---------------------------------------------------------------------------------
    def select(self, graph: Graph | None, kernel: Kernel | None) -> None:
        """Make ``kernel`` (of ``graph``) the selection in every pane."""
        self.graph = graph
        self.kernel = kernel
        self.selection = (graph, kernel)

    def watch_selection(self, selection: tuple[Graph | None, Kernel | None]) -> None:
        if self._moved_at and selection[0] is not self._shown_graph:  # to another graph by a key: see hold_lexing
            textdoc.hold_lexing(LEX_AHEAD_IDLE)
            if self._lexing is not None:
                self._lexing.resume()
        self._shown_graph = selection[0]
        self._moved_at = time.monotonic()
        self.move_gc.moved()  # what the last move drew leaves the collected generations
        if self.shown_later():  # a move of a run through the list (ui/screens/list_runs.py)
            self.pane("kernels").show_selection(*selection)  # the ▶ follows the cursor
            return
        self.show_in_panes(selection)

    def show_in_panes(self, selection: tuple[Graph | None, Kernel | None]) -> None:
        for cls in PANES:
            self.pane(cls.pane_id).show_selection(*selection)

    def bench_changed(self, bundle: Bundle) -> None:
        """A bench stored results in this bundle: the panes that show them draw them again."""
        if bundle is not self.bundle:
            return
        self.line_times_again()  # a job's: in the thread, the panes saying so meanwhile
        for cls in PANES:
            forget = getattr(self.pane(cls.pane_id), "forget_bench", None)
            if callable(forget):
                forget()
        self.watch_selection(self.selection)

    def _table_cursor(self) -> None:
        graph, kernel = self.query_one(KernelTable).current()
        if graph is not None and not self._selected(graph, kernel):
            self.list_moved(graph, kernel)

    @on(KernelTable.Selected)
    def _table_selected(self, event: KernelTable.Selected) -> None:
        if not self._selected(event.graph, event.kernel):
            self.list_moved(event.graph, event.kernel)

    def _selected(self, graph: Graph | None, kernel: Kernel | None) -> bool:
        """Whether these are the selection, by identity: a dataclass's == compares every field, and reading a
        graph's or kernel's detail fields reads its graph's detail file (each graph row passed read two)."""
        return graph is self.graph and kernel is self.kernel

    @on(KernelTable.Opened)
    def _table_opened(self, event: KernelTable.Opened) -> None:
        self.action_show_pane("kernel")

    def select_kernel(self, kernel: Kernel) -> None:
        with self.moving_list():  # a link followed, a step, a search: shown in every pane at once
            self.query_one(KernelTable).select_kernel(kernel.id)
        self.select(self.bundle.graph(kernel.graph), kernel)

    def action_step_kernel(self, delta: int) -> None:
        order = self.index.kernels_in_order()
        if not order:
            return
        i = self.index.kernel_position(self.kernel)
        if i is None and self.graph is not None:  # on a graph's row: its first kernel (.) or its last (,)
            mine = [k for k in order if k.graph == self.graph.id]
            if mine:
                self.select_kernel(mine[0] if delta > 0 else mine[-1])
                return
        i = -1 if i is None else i
        self.select_kernel(order[(i + delta) % len(order)])

    # -- what the panes ask for --------------------------------------------------------------------
    @on(Pane.Follow)
    def _on_follow(self, event: Pane.Follow) -> None:
        self._follow(event.key, event.kernels, event.what)

    @on(Pane.Fed)
    def _on_fed(self, event: Pane.Fed) -> None:
        self.query_one(KernelTable).set_fed(event.kernel_ids)

    @on(Pane.Goto)
    def _on_goto(self, event: Pane.Goto) -> None:
        self.action_goto(event.pane_id)

    @on(Pane.Reveal)
    def _on_reveal(self, event: Pane.Reveal) -> None:
        self.follow_now()
        view = self.query_one("#source", CodeView)
        view.set_marks([event.row])
        self.action_show_pane("source")
        view.move_cursor(event.row, center=True)
        self.query_one(KernelTable).set_fed({k.id for k in self.index.kernels_for_source_row(event.row)})

    def _follow(self, key: tuple, kernels: list[Kernel], what: str) -> None:
        """Select the kernel a line leads to: the selected one if it is among them (a line reached from a
        kernel leads back to it), else the first; the same line again steps to the next one."""
        if not kernels:
            self.notify(f"{what} is not part of any kernel", severity="warning", timeout=3, markup=False)
            return
        ids = [k.id for k in kernels]
        if self._cycle and self._cycle[0] == key and self.kernel and self.kernel.id in ids:
            nxt = kernels[(ids.index(self.kernel.id) + 1) % len(kernels)]
        elif self.kernel and self.kernel.id in ids:
            nxt = self.kernel  # the line was reached from this kernel: back to it (enter again steps on)
        else:
            nxt = kernels[0]
        self._cycle = (key, ids)
        self.select_kernel(nxt)
        back = ""
        if self.layout_mode != "wide":
            # One pane at a time: show the kernel followed to (in the wide grid it is on screen already).
            back = f"{PANE_KEYS[self.active_pane]}: back to {TAB_LABELS.get(self.active_pane, self.active_pane)}"
            self.action_show_pane("kernel")
        if len(kernels) > 1:
            counts: dict[str, int] = {}
            for k in kernels:  # an extern call is a row per launch: "extern_kernels.mm ×8", not 8 names
                counts[k.name] = counts.get(k.name, 0) + 1
            names = ", ".join(f"{name} ×{n}" if n > 1 else name for name, n in counts.items())
            again = f"{back}, enter there again: next" if back else "enter again: next"
            self.notify(f"{what} fed {plural(len(kernels), 'kernel')}: {names} ({again})", timeout=4, markup=False)
        else:
            self.notify(f"{what} → {nxt.name}" + (f" ({back})" if back else ""), timeout=2, markup=False)

    @on(CodeView.SearchRequested)
    def _search(self, event: CodeView.SearchRequested) -> None:
        self.follow_now()
        self.query_one(SearchBar).open_for(event.view)

    @on(KernelsPane.SearchRequested)
    def _search_kernels(self, event: KernelsPane.SearchRequested) -> None:
        self.query_one(SearchBar).open_for(event.target)

    def action_goto(self, pane_id: str) -> None:
        """Jump to the selected kernel's place in a pane (its user lines, FX nodes, launch)."""
        self.follow_now()  # its marks are the selection's
        view = self.query_one(f"#{pane_id}", CodeView)
        if pane_id == "output" and self.kernel is not None and self.kernel.call_line:
            view.move_cursor(self.kernel.call_line - 1, center=True)
        elif view.marks:
            view.move_cursor(min(view.marks), center=True)
        else:
            self.notify(f"nothing of the selected kernel in {PANE_TITLES[pane_id]}", severity="warning", timeout=2, markup=False)
        self.action_show_pane(pane_id)

    def action_fx_compact(self) -> None:
        self.follow_now()
        self.pane("fx").toggle_compact()

    def action_fx_kind(self, delta: int) -> None:
        self.follow_now()
        self.pane("fx").step_kind(delta)

    def action_next_file(self) -> None:
        """The next file that holds lines of the selected kernel (every file when it has none)."""
        self.follow_now()
        if self.pane("source").next_file():
            self.action_show_pane("source")
