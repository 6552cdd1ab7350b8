"""CodeView: a read-only text view that renders and highlights only the lines on screen.

A ScrollView with ``render_line`` over a TextDoc, so a 100k-line PTX opens as fast as a 10-line
kernel. It has a line cursor, marked lines (a ``▶`` in the gutter plus bold, never colour alone),
incremental search with ``n``/``N``, and copy of the whole text (OSC 52).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterable

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from kernelscope.ui.lru import Kept
from kernelscope.ui.textdoc import TextDoc
from kernelscope.ui.textual_private.scrollbars import StableScrollbars, set_virtual_size_in_place
from kernelscope.ui.textual_private.strips import with_offsets
from kernelscope.ui.widgets.code_lines import StylePairs, cropped, line_runs, single_cell_chars, token_style

MARK_GLYPH = "▶"
# Drawn lines kept per document: a few screens' worth. Each is a Strip holding a dozen objects the cyclic
# GC walks; thousands of them made its full collections take ~100 ms, more than drawing a line again.
STRIPS_PER_DOC = 320


class CodeView(StableScrollbars, ScrollView, can_focus=True):
    """Lines of one text with a gutter, a cursor line, marks and search."""

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown,space", "page(1)", "Page down", show=False),
        Binding("home,g", "edge(0)", "Top", show=False),
        Binding("end,G", "edge(1)", "Bottom", show=False),
        Binding("left,h", "pan(-8)", "Left", show=False),
        Binding("right,l", "pan(8)", "Right", show=False),
        Binding("enter", "activate", "Follow"),
        Binding("slash", "search", "Search"),
        Binding("n", "next_match(1)", "Next match", show=False),
        Binding("N", "next_match(-1)", "Prev match", show=False),
        # Marks are lines highlighted for the selection (the selected kernel's): m and M move between them.
        Binding("m", "next_mark(1)", "Next mark"),
        Binding("M", "next_mark(-1)", "Prev mark", show=False),
        Binding("y", "copy", "Copy"),
    ]

    COMPONENT_CLASSES = {
        "code-view--gutter", "code-view--cursor", "code-view--mark", "code-view--match", "code-view--placeholder",
    }

    DEFAULT_CSS = """
    CodeView { background: $surface; }
    CodeView > .code-view--gutter { color: $text-muted; }
    CodeView > .code-view--cursor { background: $boost; text-style: underline; }
    CodeView:focus > .code-view--cursor { background: $accent 30%; text-style: underline; }
    CodeView > .code-view--mark { background: $warning 18%; text-style: bold; }
    CodeView > .code-view--match { background: $secondary 60%; text-style: reverse underline; }
    CodeView > .code-view--placeholder { color: $text-muted; text-style: italic; }
    """

    class LineActivated(Message):
        """Enter (or a double click) on a line."""

        def __init__(self, view: CodeView, index: int) -> None:
            super().__init__()
            self.view = view
            self.index = index

        @property
        def control(self) -> CodeView:
            return self.view

    class CursorMoved(Message):
        """The cursor moved to another line (0-based ``index``)."""

        def __init__(self, view: CodeView, index: int) -> None:
            super().__init__()
            self.view = view
            self.index = index

        @property
        def control(self) -> CodeView:
            return self.view

    class SearchRequested(Message):
        def __init__(self, view: CodeView) -> None:
            super().__init__()
            self.view = view

        @property
        def control(self) -> CodeView:
            return self.view

    def __init__(self, *, follow_hint: str = "", name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.doc = TextDoc("")
        self.raw_text: str | None = None
        self.labels: Callable[[int], str] | None = None
        self.placeholder = ""
        self.cursor = 0
        self.marks: frozenset[int] = frozenset()
        self._mark_list: list[int] = []
        self.query_text = ""
        self.follow_hint = follow_hint
        self._strips: Kept[tuple, Strip] = Kept(STRIPS_PER_DOC)
        # A line's tokens as styled runs (or None: a character not one cell wide), per (line, dark): drawn
        # again with another mark or cursor, or scrolled sideways, a line is not lexed and styled again.
        self._runs: Kept[tuple, tuple | None] = Kept(STRIPS_PER_DOC)
        self._combined = StylePairs()
        # The drawn lines of the last few documents shown, so a document shown again (the kernel pane
        # going back to a kernel) draws from its cache: id(doc) -> (doc, labels, gutter, strips).
        self._doc_strips: Kept[int, tuple] = Kept(4)
        self._placeholders: Kept[str, TextDoc] = Kept(64)
        self._styles: tuple | None = None  # (key, styles) of _line_styles: the view's styles, looked up once
        self._gutter_width = self._gutter_for(self.doc)  # rendered before any set_document too
        self._pending_center = False
        self._frame: tuple | None = None  # what every line of one render_lines call shares (_line_context)

    # -- content ---------------------------------------------------------------------------------
    def set_document(self, doc: TextDoc, *, labels: Callable[[int], str] | None = None, cursor: int = 0,
                     raw_text: str | None = None) -> None:
        """Show ``doc``; ``raw_text`` is what copy puts on the clipboard when the view shows a rewrite."""
        self.doc = doc
        self.raw_text = raw_text
        self.labels = labels
        self.placeholder = ""
        self.marks = frozenset()
        self._mark_list = []
        self.cursor = max(0, min(cursor, len(doc) - 1))
        self._relayout()
        self.scroll_to(0, 0, animate=False, immediate=True)

    def set_text(self, text: str, lexer_factory=None, **kwargs) -> None:
        self.set_document(TextDoc(text, lexer_factory), **kwargs)

    def set_placeholder(self, message: str) -> None:
        """Show a note instead of a text (e.g. 'this bundle has no ...'), wrapped to the view's width."""
        self.doc = self._placeholder_doc(message)
        self.raw_text = None
        self.labels = None
        self.placeholder = message
        self.marks = frozenset()
        self._mark_list = []
        self.cursor = 0
        self._relayout()
        self.scroll_to(0, 0, animate=False, immediate=True)

    def _placeholder_doc(self, message: str) -> TextDoc:
        """The note as a document, the same one for the same note at the same width (drawn from cache)."""
        text = self._wrap(message)
        doc = self._placeholders.get(text)
        if doc is None:
            doc = self._placeholders[text] = TextDoc(text)
        return doc

    def _wrap(self, message: str) -> str:
        width = max(20, (self.scrollable_content_region.width or 80) - 3)
        out = []
        for para in message.split("\n"):
            out += textwrap.wrap(para, width, subsequent_indent=" " * (len(para) - len(para.lstrip()))) or [""]
        return "\n".join(out)

    def on_resize(self) -> None:
        if self.placeholder:
            self.doc = self._placeholder_doc(self.placeholder)
            self._relayout()
        elif self._pending_center and self.scrollable_content_region.height:
            self._pending_center = False
            self.move_cursor(self.cursor, center=True)

    @property
    def is_placeholder(self) -> bool:
        return bool(self.placeholder)

    @property
    def text(self) -> str:
        return self.raw_text if self.raw_text is not None else self.doc.text

    def _gutter_for(self, doc: TextDoc) -> int:
        if self.placeholder:
            return 1
        n = len(doc)
        widest = max((len(self.labels(i)) for i in range(n)), default=1) if self.labels else len(str(n))
        return widest + 4  # mark glyph, number, space, bar, space

    def _relayout(self) -> None:
        n = len(self.doc)
        self._gutter_width = self._gutter_for(self.doc)
        self._strips = self._strips_for_doc()
        size = Size(self._gutter_width + self.doc.width + 1, n)
        # A new text in a view of the same size needs its scrollbars updated, not a layout of the whole
        # screen (the reactive's layout=True): on a 70-kernel model each selection changes the kernel
        # pane's text, and a full layout + repaint per key made moving slow. A scrollbar shown or hidden
        # still asks for a layout by itself.
        if not (self.is_mounted and self.size.area and set_virtual_size_in_place(self, CodeView.virtual_size, size)):
            self.virtual_size = size
        self.refresh()

    def _strips_for_doc(self) -> Kept[tuple, Strip]:
        doc, labels, gutter = self.doc, self.labels, self._gutter_width
        entry = self._doc_strips.get(id(doc))
        if entry is None or entry[0] is not doc or entry[1] is not labels or entry[2] != gutter:
            runs = entry[4] if entry is not None and entry[0] is doc else Kept(STRIPS_PER_DOC)
            entry = (doc, labels, gutter, Kept(STRIPS_PER_DOC), runs)
            self._doc_strips[id(doc)] = entry
        self._runs = entry[4]
        return entry[3]

    def _drop_strips(self) -> None:
        """Forget every drawn line (styles, focus or the search changed)."""
        self._doc_strips.clear()
        self._strips.clear()
        # Runs made from tokens not lexed yet (lexers deferred for the first frame) must go too: rehighlight.
        self._runs = Kept(STRIPS_PER_DOC)
        self._combined.clear()

    def set_marks(self, indices: Iterable[int], *, jump: bool = True) -> None:
        """Mark lines (0-based); with ``jump`` the cursor moves to the first one.

        Rendered lines are cached per mark state, so the lines whose mark did not change are not drawn
        again: moving between kernels redraws only what moved into view or changed its mark."""
        n = len(self.doc)
        mark_list = sorted({i for i in indices if 0 <= i < n})
        marks = frozenset(mark_list)
        changed = marks ^ self.marks
        self._mark_list, self.marks = mark_list, marks
        if jump and self._mark_list and not self.placeholder:
            self.move_cursor(self._mark_list[0], center=True)
        self._refresh_lines(changed)

    def _refresh_lines(self, indices: Iterable[int]) -> None:
        """Repaint these lines (0-based, in the text) where they are on screen; a scroll repaints all."""
        top, height = int(self.scroll_offset.y), self.size.height
        for i in indices:
            if top <= i < top + height:
                self.refresh_line(i)

    # -- cursor and scrolling --------------------------------------------------------------------
    def move_cursor(self, index: int, *, center: bool = False) -> None:
        n = len(self.doc)
        if not n:
            return
        before = self.cursor
        self.cursor = max(0, min(index, n - 1))
        if self.cursor != before:
            self.post_message(self.CursorMoved(self, self.cursor))
        if not self.scrollable_content_region.height:
            # Not laid out (or hidden): scrolling now would clamp to 0; on_resize scrolls there later.
            self._pending_center = True
            return
        height = max(1, self.scrollable_content_region.height or self.size.height or 1)
        top = int(self.scroll_offset.y)
        if center:
            if not top <= self.cursor < top + height - 1 or self.cursor < top + 2:
                self.scroll_to(y=max(0, self.cursor - height // 3), animate=False, immediate=True)
        elif self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)
        self._refresh_lines({before, self.cursor})  # a scroll above repainted every line already

    def action_cursor(self, delta: int) -> None:
        self.move_cursor(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        height = max(1, self.scrollable_content_region.height - 1)
        self.scroll_to(y=self.scroll_offset.y + direction * height, animate=False, immediate=True)
        self.move_cursor(self.cursor + direction * height)

    def action_edge(self, end: int) -> None:
        self.move_cursor(len(self.doc) - 1 if end else 0)

    def action_pan(self, delta: int) -> None:
        self.scroll_to(x=max(0, self.scroll_offset.x + delta), animate=False, immediate=True)

    def action_activate(self) -> None:
        if len(self.doc) and not self.placeholder:
            self.post_message(self.LineActivated(self, self.cursor))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:
            return
        self.move_cursor(int(self.scroll_offset.y) + offset.y)
        if event.chain >= 2:
            self.action_activate()

    def on_focus(self) -> None:
        self._drop_strips()
        self.refresh()

    def on_blur(self) -> None:
        self._drop_strips()
        self.refresh()

    # -- marks, search, copy ---------------------------------------------------------------------
    def action_next_mark(self, direction: int) -> None:
        if not self._mark_list:
            self.app.bell()
            self.notify("no marked lines in this pane: m and M move between the highlighted lines", timeout=3)
            return
        if direction > 0:
            after = [i for i in self._mark_list if i > self.cursor]
            target = after[0] if after else self._mark_list[0]
        else:
            before = [i for i in self._mark_list if i < self.cursor]
            target = before[-1] if before else self._mark_list[-1]
        self.move_cursor(target, center=True)

    def action_search(self) -> None:
        self.post_message(self.SearchRequested(self))

    def search(self, query: str, *, forward: bool = True, skip_current: bool = False) -> int | None:
        """Move the cursor to the next line holding ``query``; highlight every match on screen."""
        self.query_text = query
        self._drop_strips()
        self.refresh()
        if not query or self.placeholder:
            return None
        start = self.cursor + ((1 if forward else -1) if skip_current else 0)
        start %= max(1, len(self.doc))
        found = self.doc.find(query, start, forward)
        if found is not None:
            self.move_cursor(found, center=True)
        return found

    def action_next_match(self, direction: int) -> None:
        if not self.query_text:
            self.action_search()
            return
        if self.search(self.query_text, forward=direction > 0, skip_current=True) is None:
            self.notify(f"no match for {self.query_text!r}", severity="warning", timeout=2)

    def action_copy(self) -> None:
        text = self.text
        self.app.copy_to_clipboard(text)
        self.notify(f"copied {len(self.doc)} lines to the clipboard (OSC 52)", timeout=2)

    # -- rendering -------------------------------------------------------------------------------
    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._drop_strips()
        self._styles = None

    def rehighlight(self) -> None:
        """Drop rendered lines (e.g. once lexers may be built after the first frame) and redraw."""
        self._drop_strips()
        self.refresh()

    def _line_styles(self, dark: bool) -> dict[str, Style]:
        """The view's styles (base, gutter, mark, cursor ...), looked up once per theme and focus state,
        not once per line drawn (each lookup walks the CSS)."""
        key = (dark, self.has_focus, self.app.theme)
        if self._styles is None or self._styles[0] != key:
            styles = {name: self.get_component_rich_style(f"code-view--{name}")
                      for name in ("gutter", "cursor", "mark", "match", "placeholder")}
            styles["base"] = self.rich_style
            self._styles = (key, styles)
        return self._styles[1]

    def _line_context(self) -> tuple:
        scroll_x, scroll_y = self.scroll_offset
        dark = self.app.current_theme.dark
        return scroll_x, scroll_y, self.scrollable_content_region.width, dark, self._line_styles(dark), self.has_focus

    def render_lines(self, crop: Region) -> list[Strip]:
        # The scroll offset, width, theme and styles, looked up once for the lines drawn, not once a line.
        self._frame = self._line_context()
        try:
            return super().render_lines(crop)
        finally:
            self._frame = None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y, width, dark, styles, focused = self._frame or self._line_context()
        index = scroll_y + y
        if index >= len(self.doc):
            return Strip.blank(width, styles["base"])
        marked = index in self.marks
        key = (index, scroll_x, width, marked, index == self.cursor, focused, dark)
        strip = self._strips.get(key)
        if strip is None:
            drawn = self._render_index(index, scroll_x, width, styles, dark, marked)
            if isinstance(drawn, Strip):
                strip = with_offsets(drawn, scroll_x, index)
            else:  # the fast path's segments: one Strip, made with its offsets
                strip = with_offsets(drawn, scroll_x, index, self._gutter_width + max(0, width - self._gutter_width))
            self._strips[key] = strip
        return strip

    def _render_index(self, index: int, scroll_x: int, width: int, styles: dict[str, Style], dark: bool,
                      marked: bool) -> Strip | list[Segment]:
        """The line's Strip, or on the fast path its segments (gutter and text, padded to ``width``)."""
        base = styles["base"]
        if self.placeholder:
            style = base + styles["placeholder"]
            line = " " + self.doc.lines[index]
            if width > 0 and single_cell_chars().issuperset(line):  # as the Text below gives it, cropped
                segments = [Segment(line[:width])]  # a Text with no span renders unstyled
                if len(line) < width:
                    segments.append(Segment(" " * (width - len(line)), base))
                return Strip(segments, width)
            text = Text(line, style=style, no_wrap=True, end="")
            return Strip(text.render(self.app.console)).crop_extend(0, width, base)
        line_style = base
        if marked:
            line_style = line_style + styles["mark"]
        if index == self.cursor:
            line_style = line_style + styles["cursor"]
        gutter_style = base + styles["gutter"]
        if marked or index == self.cursor:
            gutter_style = gutter_style + Style(bold=True)
        label = self.labels(index) if self.labels else str(index + 1)
        glyph = MARK_GLYPH if marked else ("›" if index == self.cursor and self.has_focus else " ")
        gutter = f"{glyph}{label.rjust(self._gutter_width - 4)} │ "  # rjust: a width <= 0 pads nothing
        content_width = max(0, width - self._gutter_width)
        if (len(gutter) == self._gutter_width and content_width > 0
                and not (self.query_text and self.doc.match_spans(index, self.query_text))):
            end = scroll_x + content_width
            runs = self._runs.get((index, dark))
            if (runs is None and (index, dark) not in self._runs) or (runs is not None and runs[2] < end
                                                                      and not runs[3]):
                runs = self._runs[(index, dark)] = line_runs(self.doc.tokens(index), dark, max(end, 2 * width))
            if runs is not None:
                body = cropped(runs, scroll_x, content_width, line_style, self._combined.add)
                return [Segment(gutter[:-2], gutter_style), Segment("│ ", gutter_style), *body]
        tokens = self.doc.tokens(index)
        gutter_strip = Strip([Segment(gutter[:-2], gutter_style), Segment("│ ", gutter_style)])
        content = Text(style=line_style, no_wrap=True, end="")
        for ttype, value in tokens:
            # Not lexed yet: the view's colour, so a first frame needs no Pygments style (rich.syntax).
            content.append(value, None if ttype is None else token_style(ttype, dark))
        if self.query_text:
            for a, b in self.doc.match_spans(index, self.query_text):
                content.stylize(styles["match"], a, b)
        body = Strip(content.render(self.app.console)).crop_extend(scroll_x, scroll_x + content_width, line_style)
        return Strip.join([gutter_strip.crop_extend(0, self._gutter_width, gutter_style), body])
