"""The breaks pane: graph breaks and recompiles (with the guard that failed); enter shows the line."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from kernelscope.ui.first_frame import eager_rows, once_drawn
from kernelscope.ui.panes.base import Pane
from kernelscope.units import base_name, plural


class BreakList(OptionList):
    """The breaks and recompiles; ⏎ in the footer (OptionList hides it), as the other panes show theirs."""

    BINDINGS = [Binding("enter", "select", "Show line")]


class BreaksPane(Pane):
    pane_id, pane_title, pane_key = "breaks", "Breaks", "6"

    def compose(self) -> ComposeResult:
        yield BreakList(id="breaks")

    def load(self) -> None:
        breaks = self.query_one(OptionList)
        b = self.explorer.bundle
        rows: list[tuple[str, str]] = []  # (text, option id); a job's hundreds made options as they are added
        for i, gb in enumerate(b.graph_breaks):
            where = f"{base_name(gb.file)}:{gb.line}" if gb.file else "?"
            rows.append((f"⚠ break  {where}  {gb.reason}" + (f"  [{gb.code}]" if gb.code else ""), f"break:{i}"))
        for i, r in enumerate(b.recompiles):
            where = f"{base_name(r.file)}:{r.line}" if r.file else "?"
            rows.append((f"↻ recompile {r.compile_id}  {where}  {r.reason}", f"recompile:{i}"))
            if r.guard:
                rows.append((failed_guard_text(r.guard), f"guard:{i}"))
        if rows:
            # The list wraps every option it holds to know its height, so of a job's hundreds of breaks the ones
            # below the first frame's are added once it is drawn (ui/first_frame.py).
            eager = eager_rows(self, 1 / 3 if getattr(self.explorer, "layout_mode", "") == "wide" else 1.0)
            breaks.add_options([Option(Content(text), id=oid) for text, oid in rows[:eager]])
            breaks.highlighted = 0
            if len(rows) > eager:
                once_drawn(breaks, lambda: breaks.add_options([Option(Content(text), id=oid)
                                                               for text, oid in rows[eager:]]))
        else:
            breaks.add_option(Option("✓ no graph breaks and no recompiles: Dynamo captured it whole",
                                     disabled=True))
        self.border_subtitle = Content(f"{plural(len(b.graph_breaks), 'break')} · "
                                       f"{plural(len(b.recompiles), 'recompile')}")

    @on(OptionList.OptionSelected, "#breaks")
    def _break_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        b = self.explorer.bundle
        kind, _, num = (event.option.id or "").partition(":")
        item = (b.graph_breaks if kind == "break" else b.recompiles)[int(num)]
        file, line = item.file, item.line
        guard = getattr(item, "guard", None) or {}
        if kind in ("recompile", "guard") and guard.get("line"):  # the line the failed guard protects
            file, line = guard.get("file") or file, guard["line"]
        row = self.explorer.index.source_row(file, line)
        if row is None:
            self.notify(f"{base_name(file)}:{line} is not in the source view", severity="warning", markup=False)
            return
        self.post_message(self.Reveal(row))


def failed_guard_text(guard: dict) -> str:
    """The row under a recompile: the guard of the earlier graph that failed, where it is, both values."""
    where = f"{base_name(guard['file'])}:{guard['line']}" if guard.get("line") else "no user line"
    values = ""
    if guard.get("expected") is not None or guard.get("actual") is not None:
        values = f"  expected {guard.get('expected')}, actual {guard.get('actual')}"
    text = guard.get("text") or guard.get("failure", "")
    kind = f"{guard.get('group')} guard" if guard.get("group") else "guard"
    return f"   ↳ failed {kind} of {guard.get('compile_id')}  {where}{values}  {text}"
