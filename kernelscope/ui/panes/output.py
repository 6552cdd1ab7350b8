"""The output code pane: the Python Inductor wrote for the graph; the selected kernel's launch marked."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult

from kernelscope.bundle.no_code import no_code_lines
from kernelscope.ui.lru import Kept
from kernelscope.ui.panes.base import Pane, kernel_lexer, python_lexer
from kernelscope.ui.textdoc import TextDoc
from kernelscope.ui.widgets.code_view import CodeView
from kernelscope.units import fmt_bytes

# An output code this big (~15k lines) is read after the screen's first frame: splitting a 100k-line one
# into lines took a third of a fresh `kernelscope BUNDLE`'s time to its first frame.
AFTER_FIRST_FRAME_BYTES = 1_000_000


class OutputPane(Pane):
    pane_id, pane_title, pane_key, pane_tab = "output", "Output code", "5", "Output"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._loaded: tuple | None = None
        self._docs: Kept[str, TextDoc] = Kept(8)  # graph id -> its output code, lexed once when shown again

    def compose(self) -> ComposeResult:
        yield CodeView(id="output")

    def show_selection(self, graph, k) -> None:
        view = self.query_one(CodeView)
        if graph is None:
            view.set_placeholder("No output code in this capture.")
            return
        if self._loaded != (graph.id,):
            size = self.explorer.index.text_bytes(graph.files.get("output_code"))
            if size > AFTER_FIRST_FRAME_BYTES and getattr(self.app, "first_frame_ms", 0) is None:
                if self._loaded != ("waiting",):
                    self._loaded = ("waiting",)
                    view.set_placeholder(f"Reading the output code ({fmt_bytes(size)})…")
                    self.app.after_first_frame(self._fill)
                return
            self._loaded = (graph.id,)
            doc = self._docs.get(graph.id)
            text = "" if doc is not None else self.explorer.index.graph_text(graph, "output_code")
            if doc is None and text:
                cpp = str(graph.files.get("output_code", "")).endswith(".cpp")  # AOTInductor's C++ model
                doc = self._docs[graph.id] = TextDoc(text, kernel_lexer("cpp") if cpp else python_lexer)
            if doc is not None:
                view.set_document(doc)
            else:
                why = "\n".join(no_code_lines(graph, ""))  # another backend's frame, a failed compile: why, whole
                view.set_placeholder(f"Graph {graph.id} has no output code." + (f"\n\n{why}" if why else ""))
        if view.is_placeholder:
            return
        lines = self.explorer.index.output_lines_for_kernel(k) if k else []
        view.set_marks([n - 1 for n in lines], jump=False)
        if k is not None and k.call_line and not view.has_focus:
            view.move_cursor(k.call_line - 1, center=True)
        if k and k.call_line:
            self.set_named_subtitle(f"{graph.id} · ", k.name, [f"launched at line {k.call_line}"])
        else:
            self._named_subtitle = None
            self.set_subtitle(graph.id)

    def _fill(self) -> None:
        if self.is_attached:
            self.show_selection(self.explorer.graph, self.explorer.kernel)

    @on(CodeView.LineActivated, "#output")
    def _line(self, event: CodeView.LineActivated) -> None:
        event.stop()
        graph = self.explorer.graph
        if graph is None:
            return
        k = self.explorer.index.kernel_for_output_line(graph, event.index + 1)
        self.post_message(self.Follow(("output", graph.id, event.index), [k] if k else [],
                                      f"output line {event.index + 1}"))
