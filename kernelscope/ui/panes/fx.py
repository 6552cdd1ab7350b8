"""The FX graph pane: one graph in one of its four forms (tabs [ ]), the selected kernel's nodes marked."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.widgets import Tab, Tabs

from kernelscope.bundle.model import FX_POST_GRAD
from kernelscope.ui.lru import Kept
from kernelscope.ui.panes.base import Pane, python_lexer
from kernelscope.ui.textdoc import TextDoc
from kernelscope.ui.widgets.code_view import CodeView
from kernelscope.ui.xref import FX_ORDER, FX_TITLES, compact_fx, fx_title
from kernelscope.units import plural


class FxPane(Pane):
    pane_id, pane_title, pane_key, pane_tab = "fx", "FX graph", "3", "FX"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.fx_kind = FX_POST_GRAD
        self.fx_compact = True
        self._loaded: tuple | None = None
        # (graph id, kind, compact) -> (its text as shown, the text as printed): lexed once when shown again
        self._docs: Kept[tuple, tuple[TextDoc, str]] = Kept(8)

    def compose(self) -> ComposeResult:
        yield Tabs(*[Tab(FX_TITLES[k], id=f"fxk-{k}") for k in FX_ORDER], id="fx-tabs", active=f"fxk-{self.fx_kind}")
        yield CodeView(id="fx")

    @property
    def view(self) -> CodeView:
        return self.query_one("#fx", CodeView)

    def show_selection(self, graph, kernel) -> None:
        view, index = self.view, self.explorer.index
        if graph is None:
            view.set_placeholder("No graphs in this capture.")
            return
        key = (graph.id, self.fx_kind, self.fx_compact)
        if self._loaded != key:
            self._loaded = key
            kept = self._docs.get(key)
            text = kept[1] if kept is not None else index.graph_text(graph, self.fx_kind)
            if text:
                if kept is None:
                    kept = self._docs[key] = (TextDoc(compact_fx(text) if self.fx_compact else text, python_lexer), text)
                view.set_document(kept[0], raw_text=text)
            else:
                why = " (capture with backward to get one)" if self.fx_kind == "fx-aot-joint" else ""
                # Another backend's frame, a failed compile: no post-grad graph, but its Dynamo graph to read.
                has = [fx_title(graph, k) for k in FX_ORDER if graph.files.get(k)] if graph.no_code else []
                also = f" It has: {', '.join(has)} ([ and ] switch)." if has else ""
                view.set_placeholder(f"Graph {graph.id} has no {fx_title(graph, self.fx_kind)} FX graph{why}.{also}")
        lines = index.fx_lines_for_kernel(kernel, graph, self.fx_kind) if kernel else []
        if not view.is_placeholder:
            view.set_marks([n - 1 for n in lines], jump=not view.has_focus)
        shown = "compact (a: as printed)" if self.fx_compact else "as printed (a: compact)"
        if kernel and lines:
            nodes = f"{plural(len(lines), 'node')} of "
            title = fx_title(graph, self.fx_kind)
            self.set_named_subtitle(f"{title} · {graph.id} · {nodes}", kernel.name, [shown],
                                    short_leads=(f"{title} · {nodes}", nodes))
        else:
            self._named_subtitle = None
            self.set_subtitle(f"{fx_title(graph, self.fx_kind)} · {graph.id} · {shown}")

    def _reload(self) -> None:
        self.show_selection(self.explorer.graph, self.explorer.kernel)

    def toggle_compact(self) -> None:
        self.fx_compact = not self.fx_compact
        cursor = self.view.cursor
        self._reload()
        self.view.move_cursor(cursor, center=True)

    def step_kind(self, delta: int) -> None:
        i = FX_ORDER.index(self.fx_kind)
        self.query_one("#fx-tabs", Tabs).active = f"fxk-{FX_ORDER[(i + delta) % len(FX_ORDER)]}"

    @on(Tabs.TabActivated, "#fx-tabs")
    def _fx_tab(self, event: Tabs.TabActivated) -> None:
        event.stop()
        kind = event.tab.id.removeprefix("fxk-")
        if kind != self.fx_kind:
            self.fx_kind = kind
            self._reload()

    @on(CodeView.LineActivated, "#fx")
    def _line(self, event: CodeView.LineActivated) -> None:
        event.stop()
        graph, index = self.explorer.graph, self.explorer.index
        if graph is None:
            return
        node = index.fx_node_at(graph, self.fx_kind, event.index + 1)
        if node is None:
            self.notify("this line (not an FX node); pick a line that assigns a node", severity="warning", timeout=3,
                        markup=False)
            return
        kernels = index.kernels_for_fx_line(graph, self.fx_kind, event.index + 1)
        self.post_message(self.Follow(("fx", graph.id, self.fx_kind, event.index), kernels, f"FX node {node.name}"))
