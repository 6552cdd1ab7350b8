"""The info pane: the capture's facts, and the selected kernel's."""

from __future__ import annotations

from textual import work
from textual.app import ComposeResult

from kernelscope.ui.first_frame import once_drawn
from kernelscope.ui.lru import Kept
from kernelscope.ui.panes.base import Pane
from kernelscope.ui.summary import capture_info, graph_info, kernel_info, why_kernel_info, why_shared_info
from kernelscope.ui.textdoc import TextDoc
from kernelscope.ui.widgets.code_view import CodeView


class InfoPane(Pane):
    pane_id, pane_title, pane_key = "info", "Info", "7"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._capture: TextDoc | None = None  # the capture's part: the same for every kernel, built once
        self._shown: str | None = None  # the kernel shown (its id)
        self._docs: Kept[str, TextDoc] = Kept(64)  # kernel id -> its text: shown again, drawn from cache
        self._per_graph: Kept[str, tuple[str, str]] = Kept(16)  # graph id -> its parts of the text
        self._reading = False  # a job's compile-time rows are being read (one worker, whatever the moves)

    def compose(self) -> ComposeResult:
        yield CodeView(id="info")

    def forget_bench(self) -> None:
        """A bench stored new results (device time per line is part of the text): draw every text anew."""
        self._capture = None
        self._redraw()

    def _redraw(self) -> None:
        """Every kernel's and graph's text made anew, the one shown at once."""
        self._docs.clear()
        self._per_graph.clear()
        shown, self._shown = self._shown, None
        if shown is not None and self.is_mounted:
            self.show_selection(self.explorer.graph, self.explorer.kernel)

    def show_selection(self, graph, kernel) -> None:
        shown = kernel.id if kernel else (f"graph:{graph.id}" if graph is not None else "")  # a job's: per graph
        if shown == self._shown:
            return
        self._shown = shown
        doc = self._docs.get(shown)
        if doc is None:
            bundle = self.explorer.bundle
            if self._capture is None:
                self._capture = TextDoc(capture_info(bundle))
            if kernel is not None:
                graph = next((g for g in bundle.graphs if g.id == kernel.graph), graph)
            key = graph.id if graph is not None else ""
            pending = bundle.section_unread("compile_time")
            lines_later = self.explorer.line_times_later  # a benched job's device time per line: worked out later
            shared = self._per_graph.get(key)
            if shared is None:  # a graph's guards, round trips, compile bars: once per graph, not per kernel
                shared = (graph_info(bundle, graph), why_shared_info(bundle, graph, compile_time=not pending,
                                                                     line_times=not lines_later))
                if not pending and not lines_later:
                    self._per_graph[key] = shared
            doc = TextDoc.joined(kernel_info(bundle, kernel) + shared[0], self._capture)
            why = why_kernel_info(bundle, kernel) + shared[1]
            if why:  # after the capture's part: what the pane opens on stays as it was
                doc = TextDoc.joined("\n".join(doc.lines) + "\n", TextDoc(why))
            if pending:  # a job's compile-time rows (megabytes) are read off the first frame's path
                if not self._reading:
                    self._reading = True
                    # and after it: parsing them in a thread holds the interpreter lock the frame waits for
                    once_drawn(self, self._read_compile_time)
            elif not lines_later:
                self._docs[shown] = doc
        self.query_one(CodeView).set_document(doc)

    # No arguments: Textual names a worker by the repr of its arguments, and a bundle's repr reads every detail.
    @work(thread=True, exclusive=True, group="info-sections", exit_on_error=False)
    def _read_compile_time(self) -> None:
        bundle = self.explorer.bundle
        bundle.section("compile_time")
        self.app.call_from_thread(self._section_read, bundle)

    def _section_read(self, bundle) -> None:
        self._reading = False
        if bundle is self.explorer.bundle:
            self._redraw()
