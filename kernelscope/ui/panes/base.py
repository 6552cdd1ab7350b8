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
