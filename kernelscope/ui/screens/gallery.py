"""GalleryScreen: the samples one keypress from a capture, recent captures, and an open prompt."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from kernelscope.ui.capture_request import CaptureRequest
from kernelscope.ui.footer_order import pane_keys_first
from kernelscope.ui.messages import CaptureRequested, EditRequested, OpenAnything, OpenBundle, RecompileRequested
from kernelscope.ui.screens.resume import first_resume_styled
from kernelscope.ui.textdoc import TextDoc
from kernelscope.ui.widgets.code_view import CodeView
from kernelscope.ui.widgets.fitted_line import FittedLine
from kernelscope.ui.widgets.key_footer import KeyFooter


def sample_label(t, width: int = 40) -> Text:
    """One line per sample: its name, then as much of its description as fits (OptionList wraps)."""
    label = Text(no_wrap=True, overflow="ellipsis")
    label.append(f"{t.name:<16} ", style="bold")
    desc = t.description if len(t.description) <= width else t.description[: width - 1].rstrip() + "…"
    label.append(desc, style="dim")
    return label


def _python_lexer():
    from pygments.lexers import PythonLexer  # imported when highlighting starts, after the first frame

    return PythonLexer()


class GalleryScreen(Screen):
    BINDINGS = [
        Binding("enter", "capture", "Capture", show=False),
        Binding("c", "capture_form", "Capture…"),  # with options (short: the footer at 80 columns)
        Binding("e", "edit", "Edit"),
        Binding("o", "open", "Open…"),
        Binding("q", "app.quit", "Quit"),  # escape never ends the session: one key too many on stage
    ]

    @property
    def active_bindings(self):
        # ? first (it lists every key), then the gallery's own: at 80 columns the footer cuts the rest.
        return pane_keys_first(super().active_bindings, set(),
                               ("capture_form", "edit", "open", "app.quit", "presentation", "screenshot"))

    def __init__(self) -> None:
        super().__init__()
        from kernelscope.target import list_samples
        from kernelscope.ui.paths import recent_captures

        self.samples = list_samples()
        self.recent = recent_captures()

    def compose(self) -> ComposeResult:
        yield FittedLine("kernelscope · what did torch.compile do to your function?  "
                         "Pick a sample (enter captures it), or open a capture.",
                         "kernelscope · Pick a sample (enter captures it), or open a capture (o).",
                         "Pick a sample (enter captures it), or o: open a capture.", id="summary")
        with Horizontal(id="gallery"):
            with Vertical(id="gallery-left"):
                samples = OptionList(*[Option(sample_label(t), id=t.name) for t in self.samples], id="samples")
                samples.border_title = "Samples"
                yield samples
                # The highlighted sample's description whole, wrapped: the list cuts it to its width.
                yield Static("", id="sample-about", markup=False)
                recent = OptionList(id="recent")
                recent.border_title = "Recent captures"
                self._fill_recent(recent)
                yield recent
            preview = CodeView(id="preview")
            preview.border_title = "Source"
            yield preview
        # Narrow, the palette's key gives its room to keys (? lists it).
        yield KeyFooter(show_command_palette=self.app.size.width >= 120)

    def on_resize(self) -> None:
        self._fit_labels()
        self.call_after_refresh(self._fill_recent, self.query_one("#recent", OptionList))

    def _fit_labels(self) -> None:
        """Each sample's description cut to the list's width: an OptionList wraps a long prompt onto a
        second line, which read as a sample of its own."""
        samples = self.query_one("#samples", OptionList)
        width = samples.scrollable_content_region.width
        if width <= 0:
            return
        room = max(8, width - 17)  # after the name column
        for i, t in enumerate(self.samples):
            samples.replace_option_prompt_at_index(i, sample_label(t, room))

    def _fill_recent(self, recent: OptionList) -> None:
        """Each capture in lines broken between its facts: the list wrapped a long one inside a shape."""
        from kernelscope.ui.paths import capture_summary_parts, summary_lines

        width = recent.scrollable_content_region.width or 36
        highlighted = recent.highlighted
        recent.clear_options()
        recent.add_options([Option(Text("\n".join(summary_lines(capture_summary_parts(p), width)), no_wrap=True,
                                        overflow="ellipsis"), id=str(p)) for p in self.recent])
        if not self.recent:
            recent.add_option(Option("(none yet: captures land in the kernelscope cache)", disabled=True))
        else:  # tab then enter opens the newest (nothing was highlighted: enter did nothing)
            recent.highlighted = highlighted if highlighted is not None and highlighted < len(self.recent) else 0

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        """Back from a capture (or anything else): list the captures made since."""
        first_resume_styled(self, event)
        from kernelscope.ui.paths import recent_captures

        found = recent_captures()
        if found != self.recent:
            self.recent = found
            self._fill_recent(self.query_one("#recent", OptionList))

    def on_mount(self) -> None:
        self.call_after_refresh(self._fit_labels)  # once the lists have their width
        self.call_after_refresh(self._fill_recent, self.query_one("#recent", OptionList))
        self.set_focus(self.query_one("#samples", OptionList))  # now, not a message later (first frame)
        if self.samples:
            self.query_one("#samples", OptionList).highlighted = 0  # its OptionHighlighted shows the preview

    @on(OptionList.OptionHighlighted, "#samples")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._preview(event.option_index)

    def _preview(self, index: int) -> None:
        t = self.samples[index]
        view = self.query_one("#preview", CodeView)
        view.set_document(TextDoc(Path(t.file).read_text(encoding="utf-8"), _python_lexer))
        if t.first_line and t.last_line:
            view.set_marks(range(t.first_line - 1, t.last_line))
        view.border_title = f"{t.name}.py"
        view.border_subtitle = t.description
        self.query_one("#sample-about", Static).update(t.description)

    def _selected(self) -> CaptureRequest | None:
        samples = self.query_one("#samples", OptionList)
        if samples.highlighted is None or not self.samples:
            return None
        return CaptureRequest.for_target(self.samples[samples.highlighted])

    @on(OptionList.OptionSelected, "#samples")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.action_capture()

    @on(OptionList.OptionSelected, "#recent")
    def _recent(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.post_message(OpenBundle(event.option.id))

    def action_capture(self) -> None:
        req = self._selected()
        if req is not None:
            self.post_message(CaptureRequested(req))

    def action_capture_form(self) -> None:
        req = self._selected()
        if req is not None:
            self.post_message(RecompileRequested(req, ask=True))

    def action_edit(self) -> None:
        req = self._selected()
        if req is not None:
            self.post_message(EditRequested(req))

    def action_open(self) -> None:
        from kernelscope.ui.screens.dialogs import PromptScreen

        def answer(value: str | None) -> None:
            if value:
                self.post_message(OpenAnything(value))

        self.app.push_screen(PromptScreen("Open a bundle folder, or capture a target (sample name or file.py::fn):",
                                          placeholder="path/to/bundle  or  path/to/file.py::fn"), answer)
