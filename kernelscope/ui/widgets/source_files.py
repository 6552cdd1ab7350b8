"""SourceFiles: the files of your source pane when a capture spans several (a model.py that imports
blocks.py, a library's modeling file). Your files first, then library files; each row says how many
of the selected kernel's lines it holds (``● 3``), so the lines of a kernel are found across files."""

from __future__ import annotations

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from kernelscope.ui.textual_private.scrollbars import StableScrollbars


class SourceFiles(StableScrollbars, OptionList):
    """One row per copied source file; enter shows it in the source view."""

    BINDINGS = [Binding("enter", "select", "Show file")]

    class Chosen(Message):
        def __init__(self, file: str) -> None:
            super().__init__()
            self.file = file

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.entries: list[dict] = []
        self.shown = ""
        self.counts: dict[str, int] = {}
        self.display = False  # until a capture of several files loads it: hidden, it is no Tab stop

    def load(self, entries: list[dict], shown: str, counts: dict[str, int]) -> None:
        """``entries`` as Bundle.source_files() gives them, ``shown`` the file in view, ``counts``
        the selected kernel's lines per file."""
        same_files = [e["file"] for e in entries] == [e["file"] for e in self.entries] and self.option_count
        if same_files and shown == self.shown and counts == self.counts:
            return  # moving between kernels of the same files: nothing to redraw
        before = {e["file"]: self._label_state(e) for e in self.entries}
        self.entries, self.shown, self.counts = entries, shown, counts
        self.display = len(entries) > 1
        keep = self.highlighted if self.has_focus else None  # the user's cursor, while they move it
        if same_files:  # new labels in place, only those that changed: no new layout, fewer lines drawn
            for e in entries:
                if before.get(e["file"]) != self._label_state(e):
                    self.replace_option_prompt(e["file"], self._label(e))
        else:
            self.clear_options()
            self.add_options([Option(self._label(e), id=e["file"]) for e in entries])
        wanted = keep if keep is not None else next((i for i, e in enumerate(entries) if e["file"] == shown), 0)
        if self.highlighted != wanted:
            self.highlighted = wanted

    def _label_state(self, e: dict) -> tuple:
        """What a row's label shows: its name, library or not, shown or not, the kernel's lines in it."""
        return e["name"], e.get("library"), e["file"] == self.shown, self.counts.get(e["file"])

    def _label(self, e: dict) -> Text:
        text = Text()
        text.append("▸ " if e["file"] == self.shown else "  ")
        text.append(e["name"], style="bold" if e["file"] == self.shown else "")
        if e.get("library"):
            text.append("  library", style="dim")
        n = self.counts.get(e["file"])
        if n:
            text.append(f"  ● {n}", style="bold")
        return text

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id:
            self.post_message(self.Chosen(event.option.id))
