"""Full-screen hosts for the widgets other parts of kernelscope provide: Triton pipeline, bench, diff, the job.

Each widget is imported when its screen opens; when it is not installed the screen says so in one
line (and the diff falls back to the text diff of ``kernelscope diff``).
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Static

from kernelscope.bundle.model import Bundle, Kernel
from kernelscope.ui.footer_order import pane_keys_first
from kernelscope.ui.widgets.code_view import CodeView
from kernelscope.ui.widgets.key_footer import KeyFooter, headline_first
from kernelscope.ui.widgets.search_bar import SearchBar


def _folder_name(bundle: Bundle) -> str:
    return str(bundle.root).rstrip("/").rsplit("/", 1)[-1] or str(bundle.root)


class ToolScreen(Screen):
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back")]

    title_text = ""

    @property
    def active_bindings(self):
        # The focused view's keys, then ? (every key): at 80 columns the footer cuts the rest.
        return pane_keys_first(super().active_bindings, {self.focused} if self.focused else set())

    def compose(self) -> ComposeResult:
        yield Static(self.title_text, id="summary", markup=False)
        yield from self.body()
        yield SearchBar(id="search")
        yield KeyFooter(show_command_palette=self.app.size.width >= 120)  # narrow: the room goes to keys (? lists it)

    @on(CodeView.SearchRequested)
    def _search(self, event: CodeView.SearchRequested) -> None:
        self.query_one(SearchBar).open_for(event.view)

    def body(self) -> ComposeResult:
        yield from ()

    @staticmethod
    def missing(feature: str) -> Static:
        return Static(f"The {feature} is not installed in this kernelscope; nothing to show here. (escape: back)",
                      classes="missing", markup=False)


class PipelineScreen(ToolScreen):
    # The footer shows the pipeline's keys first, before the focused pane's (search, marks, copy); ? before
    # the SASS listing's key, whose label ("a compact SASS") pushed it off at 80 columns.
    HEADLINE_ACTIONS = ("activate", "step", "step_other", "toggle_split", "toggle_diff", "toggle_passes",
                        "toggle_changed", "cycle_pass_view", "recompute", "keys", "sass_listing")

    def __init__(self, bundle: Bundle, kernel: Kernel) -> None:
        super().__init__()
        self.bundle, self.kernel = bundle, kernel
        self.title_text = f"Triton pipeline · {kernel.name}"

    @property
    def active_bindings(self):
        return headline_first(Screen.active_bindings.fget(self), self.HEADLINE_ACTIONS)  # its own order, not ToolScreen's

    def body(self) -> ComposeResult:
        try:
            from kernelscope.ui.widgets.pipeline_view import PipelineView
        except ImportError:
            yield self.missing("Triton pipeline view")
            return
        yield PipelineView(self.bundle, self.kernel)


class BenchScreen(ToolScreen):
    def __init__(self, bundle: Bundle) -> None:
        super().__init__()
        self.bundle = bundle
        self.title_text = "Bench: eager vs compiled, per kernel"

    def body(self) -> ComposeResult:
        try:
            from kernelscope.ui.widgets.bench_view import BenchView
        except ImportError:
            yield self.missing("bench view")
            return
        yield BenchView(self.bundle)


class DiffScreen(ToolScreen):
    def __init__(self, before: Bundle, after: Bundle) -> None:
        super().__init__()
        self.before, self.after = before, after
        # The two captures' folder names first (what tells them apart), their full paths after.
        self.title_text = (f"Diff: A {_folder_name(before)} → B {_folder_name(after)}   "
                           f"({before.root} → {after.root})")

    def body(self) -> ComposeResult:
        try:
            from kernelscope.ui.widgets.diff_view import DiffView
        except ImportError:
            DiffView = None
        if DiffView is not None:
            yield DiffView(self.before, self.after)
            return
        try:
            from kernelscope.report.diff import diff_bundles
            from kernelscope.report.diff_render import render_text
        except ImportError:
            yield self.missing("diff view")
            return
        view = CodeView(id="diff-text")
        view.set_text(render_text(diff_bundles(self.before, self.after)))
        yield view


# show --job's rows whose value is a sentence: wrapped under the value at the screen's width (a recompile's
# reason was cut at the pane's edge at 80 columns); rows of counts and ranks stay whole, to pan.
_REASON_LABELS = ("recompiled because", "graph break", "restarted because", "no kernels")
_VALUE_COLUMN = 30  # job_view's "    " + a 26-cell label


def wrap_reasons(lines: list[str], width: int) -> list[str]:
    import textwrap

    out: list[str] = []
    for line in lines:
        label = line[4:_VALUE_COLUMN].strip()
        if len(line) <= width or label not in _REASON_LABELS or width - _VALUE_COLUMN < 20:
            out.append(line)
            continue
        wrapped = textwrap.wrap(line[_VALUE_COLUMN:], width - _VALUE_COLUMN, break_long_words=False,
                                break_on_hyphens=False) or [""]
        out += [line[:_VALUE_COLUMN] + wrapped[0], *(" " * _VALUE_COLUMN + w for w in wrapped[1:])]
    return out


class JobScreen(ToolScreen):
    """The whole job at a glance (``show --job``): each compile under the line of the user's code that
    reached it, the ranks side by side; enter on a compile's lines opens its first graph in the explorer
    (the screen is dismissed with that graph's id)."""

    BINDINGS = [Binding("escape,q", "back", "Back")]

    def __init__(self, bundle: Bundle) -> None:
        super().__init__()
        self.bundle = bundle
        self.title_text = "The job: each compile by the line that reached it (enter: open its graphs)"
        self.graph_at: dict[int, str] = {}  # line -> the graph enter opens

    def body(self) -> ComposeResult:
        from kernelscope.bundle.io import read_text
        from kernelscope.job_view import job_compiles, job_text

        lines = wrap_reasons(job_text(self.bundle, read_text), (self.app.size.width or 80) - 10)
        _, compiles = job_compiles(self.bundle)
        first = {jc.compile_id: next(g.id for rc in jc.by_rank.values() for g in rc.graphs) for jc in compiles}
        current = None
        for i, line in enumerate(lines):
            if line.startswith("  compile "):
                current = first.get(line.split()[1])
            elif not line.startswith("    "):
                current = None
            if current is not None:
                self.graph_at[i] = current
        view = CodeView(id="job-text")
        view.set_text("\n".join(lines) + "\n")
        yield view

    def on_mount(self) -> None:
        self.query_one("#job-text", CodeView).focus()

    @on(CodeView.LineActivated, "#job-text")
    def _open(self, event: CodeView.LineActivated) -> None:
        event.stop()
        graph = self.graph_at.get(event.index)
        if graph is None:
            self.notify("enter on a compile's lines opens its graphs", severity="warning", timeout=3)
            return
        self.dismiss(graph)

    def action_back(self) -> None:
        self.dismiss(None)
