"""ExplorerScreen: one bundle, every view of it, cross-linked.

Panes: kernels, your source, FX graph, kernel source, output code, breaks, info. At a comfortable
size they share one grid; below 120x32 they fold into tabs (keys 1-7); presentation mode shows two
big panes. Selecting a kernel anywhere marks its FX nodes, user lines and launch in every pane.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import OptionList, Static, Tab, Tabs
from textual.widgets.option_list import Option

from kernelscope.bundle.model import FX_POST_GRAD, Bundle, Graph, Kernel
from kernelscope.ui.summary import info_text, title_line
from kernelscope.ui.textdoc import TextDoc
from kernelscope.ui.widgets.code_view import CodeView
from kernelscope.ui.widgets.kernel_table import KernelTable
from kernelscope.ui.widgets.key_footer import KeyFooter, headline_first
from kernelscope.ui.widgets.search_bar import SearchBar
from kernelscope.ui.widgets.source_files import SourceFiles
from kernelscope.ui.xref import FX_ORDER, FX_TITLES, BundleIndex, base_name, compact_fx
from kernelscope.units import plural

# (pane id, title, key). The order is the tab order and the reading order: function -> kernels.
PANES = (
    ("kernels", "Kernels", "1"),
    ("source", "Your source", "2"),
    ("fx", "FX graph", "3"),
    ("kernel", "Kernel source", "4"),
    ("output", "Output code", "5"),
    ("breaks", "Breaks", "6"),
    ("info", "Info", "7"),
)
TAB_LABELS = {"source": "Source", "fx": "FX", "kernel": "Kernel", "output": "Output"}
PANE_TITLES = {p: t for p, t, _ in PANES}
PANE_KEYS = {p: k for p, _, k in PANES}
# Grid placement order in the wide layout (CSS spans do the rest).
GRID_ORDER = ("kernels", "fx", "kernel", "source", "output", "breaks", "info")
WIDE_MIN = (120, 32)


def python_lexer():
    from pygments.lexers import PythonLexer

    return PythonLexer()


def kernel_lexer(lang: str):
    def make():
        try:
            from kernelscope.ui.lexers import lexer_for_stage
        except ImportError:
            lexer_for_stage = None
        if lexer_for_stage is not None:
            return lexer_for_stage("cpp" if lang == "cpp" else "source")
        from pygments.lexers import CppLexer, PythonLexer

        return CppLexer() if lang == "cpp" else PythonLexer()

    return make


class TitleLine(Static):
    """The one-line header, fitted to its width: what is dropped when narrow is detail, never a count."""

    def __init__(self, bundle: Bundle, previous: Bundle | None, **kwargs) -> None:
        super().__init__(markup=False, **kwargs)
        self.bundle, self.previous = bundle, previous

    def render(self) -> str:
        return title_line(self.bundle, self.previous, self.size.width or None)


class Pane(Vertical):
    """One titled pane of the explorer; ``z`` zooms it to the whole body (Textual's maximize)."""

    ALLOW_MAXIMIZE = True  # a container is not focusable, and Textual maximizes only focusables by default


class ExplorerScreen(Screen):
    """Every view of one bundle."""

    ALLOW_IN_MAXIMIZED_VIEW = "SearchBar, Footer"  # a zoomed pane keeps its search bar and keys

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
        Binding("escape,q", "back", "Back"),
        *[Binding(key, f"show_pane('{pid}')", title, show=False) for pid, title, key in PANES],
    ]

    # The footer shows these first, before the focused pane's keys: at 80 columns only five or six fit.
    HEADLINE_ACTIONS = ("pipeline", "bench", "diff")

    @property
    def active_bindings(self):
        return headline_first(super().active_bindings, self.HEADLINE_ACTIONS)

    def __init__(self, bundle: Bundle, *, previous: Bundle | None = None, request=None) -> None:
        super().__init__()
        self.bundle = bundle
        self.previous = previous
        self.request = request  # the CaptureRequest that made this bundle, when captured live
        self.index = BundleIndex(bundle)
        self.graph: Graph | None = bundle.graphs[0] if bundle.graphs else None
        self.kernel: Kernel | None = None
        self.fx_kind = FX_POST_GRAD
        self.fx_compact = True
        self.active_pane = "kernels"
        self._loaded: dict[str, tuple] = {}
        self._cycle: tuple[tuple, list[str]] | None = None

    # -- layout ----------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield TitleLine(self.bundle, self.previous, id="summary")
        yield Tabs(*[Tab(f"{key} {TAB_LABELS.get(pid, title)}", id=f"tab-{pid}") for pid, title, key in PANES],
                   id="pane-tabs")
        panes = {
            "kernels": lambda: KernelTable(id="kernels"),
            "source": lambda: CodeView(id="source"),
            "fx": lambda: CodeView(id="fx"),
            "kernel": lambda: CodeView(id="kernel"),
            "output": lambda: CodeView(id="output"),
            "breaks": lambda: OptionList(id="breaks"),
            "info": lambda: CodeView(id="info"),
        }
        # Layout classes go on before the panes exist: set later, each would restyle a whole subtree.
        self._set_layout_mode(self._wanted_layout())
        with Container(id="panes"):
            for pid in GRID_ORDER:
                with Pane(id=f"pane-{pid}", classes=" ".join(["pane", *self._pane_classes(pid)])) as pane:
                    pane.border_title = f"{PANE_KEYS[pid]} {PANE_TITLES[pid]}"
                    if pid == "source":
                        yield SourceFiles(id="source-files")
                    if pid == "fx":
                        yield Tabs(*[Tab(FX_TITLES[k], id=f"fxk-{k}") for k in FX_ORDER], id="fx-tabs",
                                   active=f"fxk-{self.fx_kind}")
                    yield panes[pid]()
        yield SearchBar(id="search")
        # The footer comes in on_mount, once the kernel table has focus: its keys are then final.

    async def on_mount(self) -> None:
        self._apply_layout()
        table = self.query_one(KernelTable)
        table.load(self.bundle, self.index.kernels_in_order())
        self._load_source()
        self._load_breaks()
        first = next((k for k in self.index.kernels_in_order()), None)
        self.select(self.graph, first)
        if first is not None:
            table.select_kernel(first.id)
        self.set_focus(table)  # now, not a message later: the footer's keys and the first frame follow it
        await self.mount(KeyFooter())

    def on_resize(self) -> None:
        self._apply_layout()

    def on_screen_resume(self) -> None:
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
        self._show_active()

    def _pane_classes(self, pane_id: str) -> list[str]:
        pinned = "kernels" if self.active_pane == "source" else "source"
        return [c for c, on in (("-active", pane_id == self.active_pane), ("-pinned", pane_id == pinned)) if on]

    def _show_active(self) -> None:
        for pid, _, _ in PANES:
            pane = self.query_one(f"#pane-{pid}")
            for name in ("-active", "-pinned"):
                pane.set_class(name in self._pane_classes(pid), name)

    def action_show_pane(self, pane_id: str) -> None:
        if self.maximized is not None:  # zoomed: the pane asked for is the one zoomed now
            self.maximize(self.query_one(f"#pane-{pane_id}", Pane), container=False)
        self.query_one("#pane-tabs", Tabs).active = f"tab-{pane_id}"
        self._activate(pane_id, focus=True)

    def _activate(self, pane_id: str, *, focus: bool) -> None:
        self.active_pane = pane_id
        self._show_active()
        if focus:
            self.query_one(f"#{pane_id}").focus()

    @on(Tabs.TabActivated, "#pane-tabs")
    def _pane_tab(self, event: Tabs.TabActivated) -> None:
        event.stop()
        pane_id = event.tab.id.removeprefix("tab-")
        if pane_id != self.active_pane:
            self._activate(pane_id, focus=self.layout_mode != "wide")

    def on_descendant_focus(self, event) -> None:
        node = event.widget
        while node is not None and node is not self:
            if node.id and node.id.startswith("pane-") and "pane" in node.classes:
                pane_id = node.id.removeprefix("pane-")
                if pane_id != self.active_pane and self.layout_mode == "wide":
                    self.active_pane = pane_id
                    self.query_one("#pane-tabs", Tabs).active = f"tab-{pane_id}"
                return
            node = node.parent

    def action_zoom(self) -> None:
        """The focused pane fills the body (z again, or escape, brings the layout back)."""
        if self.maximized is not None:
            self.minimize()
            return
        focused = self.focused
        pane = next((a for a in focused.ancestors_with_self if isinstance(a, Pane)), None) if focused else None
        if pane is None:
            pane = self.query_one(f"#pane-{self.active_pane}", Pane)
        self.maximize(pane, container=False)

    # -- selection ---------------------------------------------------------------------------------
    def select(self, graph: Graph | None, kernel: Kernel | None) -> None:
        """Make ``kernel`` (of ``graph``) the selection in every pane."""
        self.graph = graph
        self.kernel = kernel
        self.query_one(KernelTable).set_selected(kernel.id if kernel else None)
        self._load_fx()
        self._load_kernel()
        self._load_output()
        self._show_kernel_file()
        self._mark_source()
        self.query_one("#info", CodeView).set_text(info_text(self.bundle, kernel))

    @on(KernelTable.Selected)
    def _table_selected(self, event: KernelTable.Selected) -> None:
        if (event.graph, event.kernel) != (self.graph, self.kernel):
            self.select(event.graph, event.kernel)

    @on(KernelTable.Opened)
    def _table_opened(self, event: KernelTable.Opened) -> None:
        self.action_show_pane("kernel")

    def select_kernel(self, kernel: Kernel) -> None:
        self.query_one(KernelTable).select_kernel(kernel.id)
        self.select(self.bundle.graph(kernel.graph), kernel)

    def action_step_kernel(self, delta: int) -> None:
        order = self.index.kernels_in_order()
        if not order:
            return
        i = order.index(self.kernel) if self.kernel in order else -1
        self.select_kernel(order[(i + delta) % len(order)])

    def _follow(self, key: tuple, kernels: list[Kernel], what: str) -> None:
        """Select the first kernel a line leads to; the same line again steps to the next one."""
        if not kernels:
            self.notify(f"{what} is not part of any kernel", severity="warning", timeout=3, markup=False)
            return
        ids = [k.id for k in kernels]
        if self._cycle and self._cycle[0] == key and self.kernel and self.kernel.id in ids:
            nxt = kernels[(ids.index(self.kernel.id) + 1) % len(kernels)]
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
            names = ", ".join(k.name for k in kernels)
            again = f"{back}, enter there again: next" if back else "enter again: next"
            self.notify(f"{what} fed {plural(len(kernels), 'kernel')}: {names} ({again})", timeout=4, markup=False)
        else:
            self.notify(f"{what} → {nxt.name}" + (f" ({back})" if back else ""), timeout=2, markup=False)

    @on(CodeView.LineActivated, "#source")
    def _source_line(self, event: CodeView.LineActivated) -> None:
        kernels = self.index.kernels_for_source_row(event.index)
        self.query_one(KernelTable).set_fed({k.id for k in kernels})
        row = self.index.source().rows[event.index] if event.index < len(self.index.source().rows) else None
        label = f"line {row.line}" if row else "this line"
        self._follow(("source", event.index), kernels, label)

    @on(CodeView.LineActivated, "#fx")
    def _fx_line(self, event: CodeView.LineActivated) -> None:
        if self.graph is None:
            return
        node = self.index.fx_node_at(self.graph, self.fx_kind, event.index + 1)
        kernels = self.index.kernels_for_fx_line(self.graph, self.fx_kind, event.index + 1)
        what = f"FX node {node.name}" if node else "this line (not an FX node)"
        if node is None:
            self.notify(f"{what}; pick a line that assigns a node", severity="warning", timeout=3, markup=False)
            return
        self._follow(("fx", self.graph.id, self.fx_kind, event.index), kernels, what)

    @on(CodeView.LineActivated, "#output")
    def _output_line(self, event: CodeView.LineActivated) -> None:
        if self.graph is None:
            return
        k = self.index.kernel_for_output_line(self.graph, event.index + 1)
        self._follow(("output", self.graph.id, event.index), [k] if k else [], f"output line {event.index + 1}")

    @on(CodeView.LineActivated, "#kernel")
    def _kernel_line(self, event: CodeView.LineActivated) -> None:
        self.action_goto("output")

    @on(CodeView.SearchRequested)
    def _search(self, event: CodeView.SearchRequested) -> None:
        self.query_one(SearchBar).open_for(event.view)

    @on(OptionList.OptionSelected, "#breaks")
    def _break_selected(self, event: OptionList.OptionSelected) -> None:
        kind, _, num = (event.option.id or "").partition(":")
        item = (self.bundle.graph_breaks if kind == "break" else self.bundle.recompiles)[int(num)]
        file, line = item.file, item.line
        guard = getattr(item, "guard", None) or {}
        if kind in ("recompile", "guard") and guard.get("line"):  # the line the failed guard protects
            file, line = guard.get("file") or file, guard["line"]
        row = self.index.source_row(file, line)
        if row is None:
            self.notify(f"{base_name(file)}:{line} is not in the source view", severity="warning", markup=False)
            return
        view = self.query_one("#source", CodeView)
        view.set_marks([row])
        self.action_show_pane("source")
        view.move_cursor(row, center=True)
        self.query_one(KernelTable).set_fed({k.id for k in self.index.kernels_for_source_row(row)})

    def action_goto(self, pane_id: str) -> None:
        """Jump to the selected kernel's place in a pane (its user lines, FX nodes, launch)."""
        view = self.query_one(f"#{pane_id}", CodeView)
        if pane_id == "output" and self.kernel is not None and self.kernel.call_line:
            view.move_cursor(self.kernel.call_line - 1, center=True)
        elif view.marks:
            view.move_cursor(min(view.marks), center=True)
        else:
            self.notify(f"nothing of the selected kernel in {PANE_TITLES[pane_id]}", severity="warning", timeout=2, markup=False)
        self.action_show_pane(pane_id)

    def action_fx_compact(self) -> None:
        self.fx_compact = not self.fx_compact
        cursor = self.query_one("#fx", CodeView).cursor
        self._load_fx()
        self.query_one("#fx", CodeView).move_cursor(cursor, center=True)

    def action_fx_kind(self, delta: int) -> None:
        i = FX_ORDER.index(self.fx_kind)
        self.query_one("#fx-tabs", Tabs).active = f"fxk-{FX_ORDER[(i + delta) % len(FX_ORDER)]}"

    @on(Tabs.TabActivated, "#fx-tabs")
    def _fx_tab(self, event: Tabs.TabActivated) -> None:
        event.stop()
        kind = event.tab.id.removeprefix("fxk-")
        if kind != self.fx_kind:
            self.fx_kind = kind
            self._load_fx()

    # -- pane contents -----------------------------------------------------------------------------
    def _load_source(self) -> None:
        view = self.query_one("#source", CodeView)
        src = self.index.source()
        pane = self.query_one("#pane-source")
        if not src.rows:
            view.set_placeholder("This capture holds no copy of your source and recorded no user lines.")
            return
        if src.copied:
            view.set_document(TextDoc(src.text, python_lexer), cursor=(src.first_line or 1) - 1)
            pane.border_subtitle = Content(base_name(src.file))
        else:
            rows = src.rows
            view.set_document(TextDoc(src.text, python_lexer), labels=lambda i: str(rows[i].line))
            pane.border_subtitle = Content(f"{base_name(src.file)}: no copy in bundle; recorded lines only")

    def _show_kernel_file(self) -> None:
        """Several source files: show the file of the kernel's innermost line unless the one in view
        holds one of its innermost lines (not only a call site); the file list says how many lines
        of the kernel each file holds."""
        files = self.index.source_files()
        if len(files) <= 1:
            return
        counts = self.index.files_for_kernel(self.kernel)
        home = self.index.home_file(self.kernel) if self.kernel else None
        inner = {u.file for u in self.kernel.user_lines + self.kernel.library_lines} if self.kernel else set()
        if home and self.index.source_file not in inner:
            self._show_source_file(home)
        self.query_one(SourceFiles).load(files, self.index.source_file, counts)

    def _show_source_file(self, file: str) -> None:
        if file != self.index.source_file and self.index.set_source_file(file):
            self._load_source()
            self._mark_source()
        self.query_one(SourceFiles).load(self.index.source_files(), self.index.source_file,
                                         self.index.files_for_kernel(self.kernel))

    @on(SourceFiles.Chosen)
    def _source_file_chosen(self, event: SourceFiles.Chosen) -> None:
        self._show_source_file(event.file)
        self.set_focus(self.query_one("#source", CodeView))

    def action_next_file(self) -> None:
        """The next file that holds lines of the selected kernel (every file when it has none)."""
        files = [e["file"] for e in self.index.source_files()]
        if len(files) <= 1:
            self.notify("this capture has one source file", timeout=2)
            return
        counts = self.index.files_for_kernel(self.kernel)
        ring = [f for f in files if f in counts] or files
        cur = self.index.source_file
        nxt = ring[(ring.index(cur) + 1) % len(ring)] if cur in ring else ring[0]
        self._show_source_file(nxt)
        self.action_show_pane("source")

    def _mark_source(self) -> None:
        view = self.query_one("#source", CodeView)
        if not view.is_placeholder:
            view.set_marks(self.index.source_rows_for_kernel(self.kernel) if self.kernel else [],
                           jump=not view.has_focus)

    def _load_fx(self) -> None:
        view = self.query_one("#fx", CodeView)
        pane = self.query_one("#pane-fx")
        g = self.graph
        if g is None:
            view.set_placeholder("No graphs in this capture.")
            return
        key = (g.id, self.fx_kind, self.fx_compact)
        if self._loaded.get("fx") != key:
            self._loaded["fx"] = key
            text = self.index.graph_text(g, self.fx_kind)
            if text:
                view.set_document(TextDoc(compact_fx(text) if self.fx_compact else text, python_lexer), raw_text=text)
            else:
                why = " (capture with backward to get one)" if self.fx_kind == "fx-aot-joint" else ""
                view.set_placeholder(f"Graph {g.id} has no {FX_TITLES[self.fx_kind]} FX graph{why}.")
        lines = self.index.fx_lines_for_kernel(self.kernel, g, self.fx_kind) if self.kernel else []
        if not view.is_placeholder:
            view.set_marks([n - 1 for n in lines], jump=not view.has_focus)
        what = f" · {plural(len(lines), 'node')} of {self.kernel.name}" if self.kernel and lines else ""
        shown = "compact (a: as printed)" if self.fx_compact else "as printed (a: compact)"
        pane.border_subtitle = Content(f"{FX_TITLES[self.fx_kind]} · {g.id}{what} · {shown}")

    def _load_kernel(self) -> None:
        view = self.query_one("#kernel", CodeView)
        pane = self.query_one("#pane-kernel")
        k = self.kernel
        key = k.id if k else None
        if self._loaded.get("kernel") == (key,):
            return
        self._loaded["kernel"] = (key,)
        if k is None:
            view.set_placeholder("Select a kernel: ↑↓ in the kernel list, or , and . anywhere.")
            pane.border_subtitle = ""
            return
        if k.lang == "extern" or not k.source:
            view.set_placeholder(
                f"{k.name} is an extern call: Inductor calls a library kernel here (cuBLAS / ATen),\n"
                f"so there is no generated source.\n\n    {k.call_text}\n\n"
                f"Its launch is line {k.call_line} of the output code (press o).")
        else:
            text = self.index.text(k.source)
            view.set_document(TextDoc(text, kernel_lexer(k.lang)))
        facts = [k.kind]
        chosen = next((v for v in k.triton if v.chosen), k.triton[0] if k.triton else None)
        if chosen is not None:
            facts.append(f"warps {chosen.metadata.get('num_warps')} · stages {chosen.metadata.get('num_stages')}")
            if len(k.triton) > 1:
                facts.append(f"{len(k.triton)} variants")
        pane.border_subtitle = Content(f"{k.name} · " + " · ".join(facts))

    def _load_output(self) -> None:
        view = self.query_one("#output", CodeView)
        pane = self.query_one("#pane-output")
        g = self.graph
        if g is None:
            view.set_placeholder("No output code in this capture.")
            return
        if self._loaded.get("output") != (g.id,):
            self._loaded["output"] = (g.id,)
            text = self.index.graph_text(g, "output_code")
            if text:
                view.set_document(TextDoc(text, python_lexer))
            else:
                view.set_placeholder(f"Graph {g.id} has no output code.")
        if view.is_placeholder:
            return
        k = self.kernel
        lines = self.index.output_lines_for_kernel(k) if k else []
        view.set_marks([n - 1 for n in lines], jump=False)
        if k is not None and k.call_line and not view.has_focus:
            view.move_cursor(k.call_line - 1, center=True)
        pane.border_subtitle = Content(g.id + (f" · {k.name} launched at line {k.call_line}" if k and k.call_line else ""))

    def _load_breaks(self) -> None:
        breaks = self.query_one("#breaks", OptionList)
        b = self.bundle
        options = []
        for i, gb in enumerate(b.graph_breaks):
            where = f"{base_name(gb.file)}:{gb.line}" if gb.file else "?"
            options.append(Option(Content(f"⚠ break  {where}  {gb.reason}" + (f"  [{gb.code}]" if gb.code else "")),
                                  id=f"break:{i}"))
        for i, r in enumerate(b.recompiles):
            where = f"{base_name(r.file)}:{r.line}" if r.file else "?"
            options.append(Option(Content(f"↻ recompile {r.compile_id}  {where}  {r.reason}"), id=f"recompile:{i}"))
            if r.guard:
                options.append(Option(Content(_failed_guard_text(r.guard)), id=f"guard:{i}"))
        if options:
            breaks.add_options(options)
            breaks.highlighted = 0
        else:
            breaks.add_option(Option("✓ no graph breaks and no recompiles: Dynamo captured it whole",
                                     disabled=True))
        pane = self.query_one("#pane-breaks")
        pane.border_subtitle = Content(f"{plural(len(b.graph_breaks), 'break')} · {plural(len(b.recompiles), 'recompile')}")

    # -- actions that leave the screen -----------------------------------------------------------
    def action_back(self) -> None:
        self.app.action_back()

    def _request(self):
        from kernelscope.ui.capture_request import CaptureRequest

        if self.request is not None:
            return self.request
        return CaptureRequest.from_bundle_target(self.bundle.target, self.bundle.options)

    def action_recompile_form(self) -> None:
        req = self._request()
        if req is None:
            self.notify("this bundle came from a log, not a target; there is nothing to recompile",
                        severity="warning")
            return
        self.app.recompile(req, self, ask=True)

    def action_recapture(self) -> None:
        req = self._request()
        if req is None:
            self.notify("this bundle came from a log, not a target; there is nothing to recapture", severity="warning")
            return
        self.app.recompile(req, self, ask=False)

    def action_edit(self) -> None:
        req = self._request()
        if req is None:
            self.notify("this bundle came from a log, not a target; there is no function to edit", severity="warning")
            return
        self.app.edit(req, self)

    def action_pipeline(self) -> None:
        from kernelscope.ui.screens.tools import PipelineScreen

        if self.kernel is None or self.kernel.lang != "triton":
            self.notify("select a Triton kernel to step through its pipeline", severity="warning")
            return
        self.app.push_screen(PipelineScreen(self.bundle, self.kernel))

    def action_bench(self) -> None:
        from kernelscope.ui.screens.tools import BenchScreen

        self.app.push_screen(BenchScreen(self.bundle))

    def action_diff(self) -> None:
        from kernelscope.ui.screens.tools import DiffScreen

        if self.previous is None:
            self.notify("no earlier capture to compare with: recompile (c) or edit (e) first", severity="warning")
            return
        self.app.push_screen(DiffScreen(self.previous, self.bundle))


def _failed_guard_text(guard: dict) -> str:
    """The row under a recompile: the guard of the earlier graph that failed, where it is, both values."""
    where = f"{base_name(guard['file'])}:{guard['line']}" if guard.get("line") else "no user line"
    values = ""
    if guard.get("expected") is not None or guard.get("actual") is not None:
        values = f"  expected {guard.get('expected')}, actual {guard.get('actual')}"
    text = guard.get("text") or guard.get("failure", "")
    kind = f"{guard.get('group')} guard" if guard.get("group") else "guard"
    return f"   ↳ failed {kind} of {guard.get('compile_id')}  {where}{values}  {text}"
