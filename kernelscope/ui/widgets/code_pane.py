"""The pipeline view's text pane: a CodeView that draws one stage's text with its lexer and marks
the lines mapped from the other pane."""

from __future__ import annotations

from textual.binding import Binding
from textual.content import Content

from kernelscope.ui.lexers import lexer_for_stage
from kernelscope.ui.textdoc import TextDoc
from kernelscope.ui.widgets.code_view import CodeView


def _lexer_factory(lexer: str):
    if lexer == "text":
        return None
    if lexer == "diff":
        from pygments.lexers import DiffLexer

        return DiffLexer
    return lambda: lexer_for_stage(lexer)


class CodePane(CodeView, inherit_bindings=False):
    """A stage's text in a CodeView (lazy highlighting, marks with a gutter glyph, search, copy), with
    1-based line numbers as the line maps use them. ``l`` stays the pipeline's key (it pans over the stages,
toggles MLIR/LLVM over the passes)."""

    BINDINGS = [b for b in CodeView.BINDINGS if b.action not in ("pan(-8)", "pan(8)")] + [
        Binding("left,h", "pan(-8)", "Left", show=False),
        Binding("right", "pan(8)", "Right", show=False),
        Binding("g", "edge(0)", "Top", show=False),
    ]
    DEFAULT_CSS = """
    CodePane { height: 1fr; width: 1fr; border: round $panel; }
    CodePane:focus { border: round $accent; }
    """

    lexer_name = "text"

    def set_text(self, text: str, lexer: str = "text", title: str = "", cursor: int = 1) -> None:
        """Show ``text`` highlighted with the lexer of stage ``lexer`` ("diff" and "text" work too)."""
        self.border_title = Content(title)  # titles hold kernel and pass names: never markup
        self.lexer_name = lexer
        self.set_document(TextDoc(text, _lexer_factory(lexer)), cursor=cursor - 1)
        if cursor > 1:
            self.move_cursor(cursor - 1, center=True)

    def set_marked(self, lines: set[int] | frozenset[int], scroll: bool = True) -> None:
        """Mark 1-based lines; with ``scroll`` the first comes into view (the cursor stays)."""
        self.set_marks((n - 1 for n in lines), jump=False)
        if scroll and self.marks:
            first = min(self.marks)
            top = int(self.scroll_offset.y)
            if not top <= first < top + self.scrollable_content_region.height:
                self.scroll_to(y=max(0, first - 2), animate=False, immediate=True)

    @property
    def lines(self) -> list[str]:
        return self.doc.lines

    @property
    def marked(self) -> frozenset[int]:
        return frozenset(i + 1 for i in self.marks)

    @property
    def cursor_line(self) -> int:
        return self.cursor + 1

    @cursor_line.setter
    def cursor_line(self, line: int) -> None:
        self.move_cursor(line - 1)
