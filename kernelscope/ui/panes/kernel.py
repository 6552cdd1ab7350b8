"""The kernel source pane: the selected kernel's generated source (Triton or C++), its config in the title."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult

from kernelscope.ui.lru import Kept
from kernelscope.ui.panes.base import Pane, kernel_lexer
from kernelscope.ui.textdoc import TextDoc
from kernelscope.ui.widgets.code_view import CodeView


class KernelPane(Pane):
    pane_id, pane_title, pane_key, pane_tab = "kernel", "Kernel source", "4", "Kernel"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self._loaded: tuple | None = None
        # (source file, language) -> the source as a TextDoc, lexed once: a kernel shown again, or another
        # launch site of the same source (a model's layers share kernels), lexes and draws from cache.
        self._docs: Kept[tuple, TextDoc] = Kept(64)

    def compose(self) -> ComposeResult:
        yield CodeView(id="kernel")

    def show_selection(self, graph, k) -> None:
        view = self.query_one(CodeView)
        key = (k.id if k else None,)
        if self._loaded == key:
            return
        self._loaded = key
        if k is None:
            view.set_placeholder("Select a kernel: ↑↓ in the kernel list, or , and . anywhere.")
            self._named_subtitle = None
            self.set_subtitle("")
            return
        if k.lang == "extern" or not k.source:
            view.set_placeholder(
                f"{k.name} is an extern call: Inductor calls a library kernel here (cuBLAS / ATen),\n"
                f"so there is no generated source.\n\n    {k.call_text}\n\n"
                f"Its launch is line {k.call_line} of the output code (press o).")
        else:
            view.set_document(self._doc(k))
        facts = []  # the numbers first: where the pane is narrow the kind (the table says it) goes first
        chosen = next((v for v in k.triton if v.chosen), k.triton[0] if k.triton else None)
        if chosen is not None:
            facts.append(f"warps {chosen.metadata.get('num_warps')} · stages {chosen.metadata.get('num_stages')}")
            if len(k.triton) > 1:
                facts.append(f"{len(k.triton)} variants")
        self.set_named_subtitle("", k.name, [*facts, k.kind])

    def _doc(self, k) -> TextDoc:
        doc = self._docs.get((k.source, k.lang))
        if doc is None:
            doc = self._docs[k.source, k.lang] = TextDoc(self.explorer.index.text(k.source), kernel_lexer(k.lang))
        return doc

    def lex_ahead(self, kernels) -> bool:
        """Lex the source of the first of ``kernels`` (in list order) not lexed yet, so that moving to it
        later draws at once: Pygments takes 5-20 ms for a 30-70 line Triton kernel, more than the rest of a
        frame. Called when the user is idle; False once every source is lexed."""
        for k in kernels:
            if k.lang == "extern" or not k.source:
                continue
            doc = self._docs.get((k.source, k.lang))
            if doc is not None and doc.lexed:
                continue
            if len(self._docs) >= self._docs.maxsize:
                return False  # as many as the cache keeps: lexing more would push out the first ones
            self._doc(k).lex()
            return True
        return False

    @on(CodeView.LineActivated, "#kernel")
    def _line(self, event: CodeView.LineActivated) -> None:
        event.stop()
        self.post_message(self.Goto("output"))
