"""The base of the explorer's panes, and the messages they post.

A pane is one titled box of the explorer (kernels, your source, FX graph ...), one module each
under kernelscope/ui/panes/. It is driven by the screen's selection: ``load`` once when the screen
mounts, ``show_selection`` each time the selected kernel changes. It never reaches into another
pane: to navigate it posts a message (``Follow`` a line to its kernels, ``Goto`` a pane, ``Reveal``
a line of your source) that the screen acts on. Adding a pane = one module + one line in
``kernelscope.ui.panes.PANES``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Protocol

from textual.containers import Vertical
from textual.message import Message

from kernelscope.ui.textual_private.strips import set_subtitle_line
from kernelscope.ui.textual_private.styles import clear_lines, use_line_styles
from kernelscope.units import kernel_name_core, shorten_kernel_name

if TYPE_CHECKING:
    from kernelscope.bundle.model import Bundle, Graph, Kernel
    from kernelscope.ui.xref import BundleIndex


class Selection(Protocol):
    """What a pane reads from the screen that holds it (the explorer): the bundle, its index and the
    selection. A protocol, not the screen's class: the screen imports the panes, never the reverse."""

    bundle: Bundle
    index: BundleIndex
    graph: Graph | None
    kernel: Kernel | None


class Pane(Vertical):
    """One titled pane of the explorer; ``z`` zooms it to the whole body (Textual's maximize)."""

    ALLOW_MAXIMIZE = True  # a container is not focusable, and Textual maximizes only focusables by default

    pane_id: ClassVar[str] = ""
    pane_title: ClassVar[str] = ""
    pane_key: ClassVar[str] = ""  # the key that shows it (1-7)
    pane_tab: ClassVar[str] = ""  # the narrow layout's tab label ("" = the title)

    class Follow(Message):
        """A line leads to these kernels: select the first (the same line again: the next)."""

        def __init__(self, key: tuple, kernels: list, what: str) -> None:
            super().__init__()
            self.key, self.kernels, self.what = key, kernels, what

    class Goto(Message):
        """Show the selected kernel's place in a pane."""

        def __init__(self, pane_id: str) -> None:
            super().__init__()
            self.pane_id = pane_id

    class Reveal(Message):
        """Show a row of your source (a break's line) and the kernels it fed."""

        def __init__(self, row: int) -> None:
            super().__init__()
            self.row = row

    class Fed(Message):
        """Mark the kernels a line of your source fed in the kernel list."""

        def __init__(self, kernel_ids: set[str]) -> None:
            super().__init__()
            self.kernel_ids = kernel_ids

    def __init__(self, *, classes: str = "") -> None:
        super().__init__(id=f"pane-{self.pane_id}", classes=" ".join(["pane", classes]).strip())
        self.border_title = f"{self.pane_key} {self.pane_title}"
        self.border_subtitle_text = ""
        self._named_subtitle: tuple[str, str, list[str], tuple[str, ...]] | None = None
        use_line_styles(self, by_identity=False)  # every row between its borders is one line: drawn once

    def notify_style_update(self) -> None:
        super().notify_style_update()
        clear_lines(self._styles_cache)

    @property
    def explorer(self) -> Selection:
        return self.screen  # type: ignore[return-value]

    @classmethod
    def tab_text(cls) -> str:
        return f"{cls.pane_key} {cls.pane_tab or cls.pane_title}"

    def set_subtitle(self, text: str) -> None:
        """The text in the pane's bottom border (never markup); only that line is drawn again (the FX,
        kernel and output panes change theirs on each move of the selection)."""
        if text == self.border_subtitle_text:
            return
        self.border_subtitle_text = text
        set_subtitle_line(self, text)

    def set_named_subtitle(self, lead: str, name: str, facts: list[str], short_leads: tuple[str, ...] = ()) -> None:
        """A subtitle naming a kernel: ``lead`` + ``name`` + `` · fact`` each, fitted to the pane's
        width: the facts go from the last first, then ``lead`` gives way to ``short_leads`` (in turn), and the name
        keeps its distinguishing end (``add_…_layer_norm_0``): the border never cuts its index off."""
        self._named_subtitle = (lead, name, list(facts), short_leads)
        room = self.outer_size.width - 6  # corners, the rule and a space either side
        if room <= 0:
            self.set_subtitle(lead + " · ".join([name, *facts]))
            return
        # The cells a name keeps (``add_…_layer_norm_0``) before a fact shows: its decoration
        # (``triton_poi_fused_``) goes before any fact does.
        keep = min(len(kernel_name_core(name)), 18)
        facts = list(facts)
        while facts and room - len(lead) - len(" · " + " · ".join(facts)) < keep:
            facts.pop()
        for shorter in short_leads:
            if room - len(lead) >= keep:
                break
            lead = shorter
        tail = " · " + " · ".join(facts) if facts else ""
        self.set_subtitle(lead + shorten_kernel_name(name, max(room - len(lead) - len(tail), 8)) + tail)

    def on_resize(self) -> None:
        named = self._named_subtitle
        if named is not None:
            self.set_named_subtitle(*named)

    def load(self) -> None:
        """Fill what does not depend on the selection (once, when the screen mounts)."""

    def show_selection(self, graph: Graph | None, kernel: Kernel | None) -> None:
        """Show the selection: ``kernel`` of ``graph`` (either may be None)."""


def python_lexer():
    from pygments.lexers import PythonLexer

    return PythonLexer()


def kernel_lexer(lang: str):
    """A lexer factory for a kernel's source: C++ for a CPU kernel, else Python (Triton)."""
    def make():
        from kernelscope.ui.lexers import lexer_for_stage

        return lexer_for_stage("cpp" if lang == "cpp" else "source")

    return make
