"""The Triton pipeline view: step a kernel's stages, compare two side by side or as a diff, map lines,
and walk its MLIR/LLVM passes.

Texts are drawn line by line (``CodePane`` renders only the visible rows and highlights each row the
first time it is shown), so a 100k-line PTX or SASS opens at once. Loading stages (nvdisasm) and
recomputing passes (a Triton compile in a child process) run in thread workers that only post
messages. Nothing here imports torch or triton.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.markup import escape
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from kernelscope.bundle.model import Bundle, Kernel
from kernelscope.pipeline.linemap import lines_for_source_line, source_lines_for
from kernelscope.pipeline.stages import STAGE_NAMES, STAGES, StageText
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
    1-based line numbers as the line maps use them. ``h``/``l`` stay the pipeline's keys."""

    BINDINGS = [b for b in CodeView.BINDINGS if b.action not in ("pan(-8)", "pan(8)")] + [
        Binding("left", "pan(-8)", "Left", show=False),
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


class PipelineView(Widget, can_focus=False):
    """Stage stepper and pass walker for one Triton kernel of a bundle."""

    DEFAULT_CSS = """
    PipelineView { layout: vertical; height: 1fr; }
    PipelineView #pv-stages { height: 1; padding: 0 1; }
    PipelineView #pv-panes { height: 1fr; }
    PipelineView #pv-right { display: none; }
    PipelineView.-split #pv-right { display: block; }
    PipelineView #pv-status { height: 1; padding: 0 1; color: $text-muted; }
    """

    BINDINGS = [
        Binding("]", "step(1)", "next stage"),
        Binding("[", "step(-1)", "prev stage"),
        Binding("}", "step_other(1)", "other pane: next", show=False),
        Binding("{", "step_other(-1)", "other pane: prev", show=False),
        Binding("s", "toggle_split", "side by side"),
        Binding("d", "toggle_diff", "diff"),
        Binding("p", "toggle_passes", "passes"),
        Binding("c", "toggle_changed", "changed only", show=False),
        Binding("v", "cycle_pass_view", "diff/before/after", show=False),
        Binding("l", "toggle_pass_log", "MLIR/LLVM", show=False),
        Binding("r", "recompute", "recompute passes", show=False),
    ]

    @dataclass
    class StagesLoaded(Message):
        stages: list[StageText]

    @dataclass
    class PassesLoaded(Message):
        logs: list  # list[PassLog]
        origin: str

    @dataclass
    class PassesFailed(Message):
        reason: str

    mode: reactive[str] = reactive("stages")  # "stages" or "passes"

    def __init__(
        self,
        bundle: Bundle,
        kernel: Kernel,
        *,
        variant=None,
        cache_dir=None,
        id: str | None = None,
        classes: str | None = None,
    ):
        super().__init__(id=id, classes=classes)
        self.bundle = bundle
        self.kernel = kernel
        self.variant = variant
        self.cache_dir = cache_dir
        self.stages: list[StageText] = []
        self.stage_index = 0
        self.other_index = 1
        self.split = False
        self.diff = False
        self.logs: list = []
        self.log_kind = "mlir"
        self.changed_only = False
        self.pass_view = "diff"  # "diff", "before" or "after"
        self.visible_passes: list = []
        self.status_text = ""
        self._passes_state = "idle"  # "idle", "loading", "ready", "failed"

    def compose(self) -> ComposeResult:
        yield Static(id="pv-stages")
        with Horizontal(id="pv-panes"):
            yield CodePane(id="pv-left")
            with Vertical(id="pv-right"):
                yield CodePane(id="pv-other")
        yield Static(id="pv-status", markup=False)

    def on_mount(self) -> None:
        self.left.set_text("loading stages...", "text", self.kernel.name)
        self.load_stages()

    @property
    def left(self) -> CodePane:
        return self.query_one("#pv-left", CodePane)

    @property
    def right(self) -> CodePane:
        return self.query_one("#pv-other", CodePane)

    @property
    def current(self) -> StageText | None:
        return self.stages[self.stage_index] if self.stages else None

    @property
    def other(self) -> StageText | None:
        return self.stages[self.other_index] if self.stages else None

    # --- workers ---------------------------------------------------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False, group="pipeline-stages")
    def load_stages(self) -> None:
        from kernelscope.pipeline.stages import load_stages

        self.post_message(self.StagesLoaded(load_stages(self.bundle, self.kernel, self.variant, self.cache_dir)))

    @work(thread=True, exclusive=True, exit_on_error=False, group="pipeline-passes")
    def load_passes(self, recompute: bool) -> None:
        from kernelscope.pipeline.compile import PipelineError
        from kernelscope.pipeline.passes import recompute_passes, stored_passes

        try:
            logs = [] if recompute else stored_passes(self.bundle, self.kernel, self.variant)
            origin = "captured"
            if not logs:
                logs = recompute_passes(self.bundle, self.kernel, variant=self.variant)
                origin = "recomputed"
        except (PipelineError, OSError, ValueError, KeyError) as exc:
            self.post_message(self.PassesFailed(str(exc).strip("'\"").splitlines()[0] if str(exc) else repr(exc)))
            return
        self.post_message(self.PassesLoaded(logs, origin))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """One place for unexpected worker failures: say what broke instead of spinning forever."""
        if event.state != WorkerState.ERROR:
            return
        error = event.worker.error
        reason = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        if event.worker.group == "pipeline-passes":
            self.post_message(self.PassesFailed(reason))
        else:
            self.left.set_text(f"[stages could not be loaded: {reason}]", "text", self.kernel.name)

    @on(StagesLoaded)
    def _stages_loaded(self, message: StagesLoaded) -> None:
        self.stages = message.stages
        self.stage_index = 0
        self.other_index = 1 if len(self.stages) > 1 else 0
        self.show()

    @on(PassesLoaded)
    def _passes_loaded(self, message: PassesLoaded) -> None:
        self.logs = message.logs
        self._passes_state = "ready"
        if not any(log.kind == self.log_kind for log in self.logs) and self.logs:
            self.log_kind = self.logs[0].kind
        if self.mode == "passes":
            self.show()

    @on(PassesFailed)
    def _passes_failed(self, message: PassesFailed) -> None:
        self._passes_state = "failed"
        self.status_text = f"passes unavailable: {message.reason}"
        if self.mode == "passes":
            self.left.set_text(f"[passes not available: {message.reason}]", "text", "passes")
            self._set_status(self.status_text)

    # --- rendering -------------------------------------------------------------------------------

    def _stage_bar(self) -> str:
        parts = []
        for i, spec in enumerate(STAGES):
            title = spec.title
            if i == self.stage_index:
                parts.append(f"[reverse b] {title} [/]")
            elif (self.split or self.diff) and i == self.other_index:
                parts.append(f"[u] {title} [/]")
            else:
                missing = self.stages and self.stages[i].missing
                parts.append(f"[dim] {title} [/]" if missing else f" {title} ")
        mode = "  [b]passes[/]" if self.mode == "passes" else ""
        # The kernel name goes last: at 80 columns a long Inductor name must not push the stages off.
        return "›".join(parts) + mode + f"  [dim]{escape(self.kernel.name)}[/]"

    def _set_status(self, text: str) -> None:
        self.status_text = text
        self.query_one("#pv-status", Static).update(text)

    def _pass_log(self):
        for log in reversed(self.logs):
            if log.kind == self.log_kind:
                return log
        return None

    def show(self) -> None:
        """Redraw both panes for the current mode, stages and toggles."""
        bar = self.query_one("#pv-stages", Static)
        if self.mode == "passes":
            self.set_class(True, "-split")
            bar.update(self._stage_bar())
            self._show_passes()
            return
        self.set_class(self.split, "-split")
        bar.update(self._stage_bar())
        cur = self.current
        if cur is None:
            return
        if self.diff:
            oth = self.other
            text = "\n".join(difflib.unified_diff(cur.lines, oth.lines, cur.title, oth.title, lineterm="")) or (
                f"(no differences between {cur.title} and {oth.title})"
            )
            self.left.set_text(text, "diff", f"diff {cur.title} → {oth.title}")
            self._set_status(f"unified diff {cur.title} → {oth.title}   [ ] change stage, {{ }} change the other")
            return
        spec = STAGES[self.stage_index]
        self.left.set_text(cur.display_text(), spec.lexer if not cur.missing else "text", cur.title)
        if self.split:
            oth = self.other
            ospec = STAGES[self.other_index]
            self.right.set_text(oth.display_text(), ospec.lexer if not oth.missing else "text", oth.title)
        self._update_mapping(self.left)

    def _show_passes(self) -> None:
        if self._passes_state in ("idle", "failed") and not self.logs:
            if self._passes_state == "idle":
                self._passes_state = "loading"
                self.load_passes(recompute=False)
            else:
                self.left.set_text(f"[{self.status_text}]", "text", "passes")
                return
        if self._passes_state == "loading":
            self.left.set_text("computing the pass pipeline (a Triton compile in a child process)...", "text", "passes")
            self.right.set_text("", "text", "")
            self._set_status("passes: loading")
            return
        log = self._pass_log()
        if log is None:
            self.left.set_text(f"[no {self.log_kind.upper()} passes]", "text", "passes")
            return
        self.visible_passes = log.changed_only() if self.changed_only else list(log.passes)
        marks = {True: "*", False: " ", None: "?"}
        rows = [
            f"{marks[p.changed]} {p.index:3d} {p.name}  [{p.stage}] {p.scope if p.scope != 'builtin.module' else ''}"
            for p in self.visible_passes
        ] or ["(no passes changed the IR)"]
        filt = ", changed only" if self.changed_only else ""
        self.left.set_text("\n".join(rows), "text", f"{log.kind.upper()} passes ({len(rows)}{filt})")
        self._show_pass_detail(1)

    def _show_pass_detail(self, row: int) -> None:
        log = self._pass_log()
        if log is None or not self.visible_passes:
            self.right.set_text("", "text", "")
            return
        p = self.visible_passes[max(0, min(row, len(self.visible_passes)) - 1)]
        if self.pass_view == "diff":
            text = log.diff(p) or "(this pass changed nothing)"
            lexer = "diff"
        else:
            text = (log.before(p) if self.pass_view == "before" else log.after(p)) or "(not dumped)"
            lexer = "llir" if log.kind != "mlir" else "ttgir"
        self.right.set_text(text, lexer, f"{self.pass_view}: {p.name}")
        state = {True: "changed", False: "unchanged", None: "unknown"}[p.changed]
        self._set_status(
            f"pass {p.index} {p.name} ({p.arg or p.kind}) on {p.scope}: {state}   "
            f"{log.origin}   c changed-only  v diff/before/after  l MLIR/LLVM  p back"
        )

    # --- line mapping ----------------------------------------------------------------------------

    def _update_mapping(self, pane: CodePane) -> None:
        if self.mode != "stages" or self.diff or not self.stages:
            return
        here = self.current if pane is self.left else self.other
        there_pane = self.right if pane is self.left else self.left
        there = self.other if pane is self.left else self.current
        path = self.kernel.kernel_path or None
        src_lines = source_lines_for(here, pane.cursor_line, path)
        if self.split and there is not None:
            mapped: set[int] = set()
            for src in src_lines:
                mapped |= lines_for_source_line(there, src, path)
            there_pane.set_marked(mapped)
        where = ", ".join(str(n) for n in sorted(src_lines)) or "-"
        keys = "[ ] stage  s side-by-side  d diff  p passes"
        self._set_status(f"{here.title} line {pane.cursor_line} ← source line {where}   {keys}")

    @on(CodeView.CursorMoved)
    def _cursor_moved(self, message: CodeView.CursorMoved) -> None:
        message.stop()
        pane = message.view
        if self.mode == "passes":
            if pane is self.left:
                self._show_pass_detail(message.index + 1)
            return
        self._update_mapping(pane)

    # --- actions ---------------------------------------------------------------------------------

    def action_step(self, delta: int) -> None:
        if self.mode != "stages" or not self.stages:
            return
        self.stage_index = (self.stage_index + delta) % len(self.stages)
        if self.other_index == self.stage_index:
            self.other_index = (self.stage_index + 1) % len(self.stages)
        self.show()

    def action_step_other(self, delta: int) -> None:
        if self.mode != "stages" or not self.stages:
            return
        self.other_index = (self.other_index + delta) % len(self.stages)
        if self.other_index == self.stage_index:
            self.other_index = (self.other_index + delta) % len(self.stages)
        self.show()

    def action_toggle_split(self) -> None:
        self.split = not self.split
        self.diff = False
        self.show()

    def action_toggle_diff(self) -> None:
        self.diff = not self.diff
        self.show()

    def action_toggle_passes(self) -> None:
        self.mode = "stages" if self.mode == "passes" else "passes"
        self.show()
        self.left.focus()

    def action_toggle_changed(self) -> None:
        if self.mode == "passes":
            self.changed_only = not self.changed_only
            self.show()

    def action_cycle_pass_view(self) -> None:
        if self.mode == "passes":
            views = ("diff", "before", "after")
            self.pass_view = views[(views.index(self.pass_view) + 1) % len(views)]
            self._show_pass_detail(self.left.cursor_line)

    def action_toggle_pass_log(self) -> None:
        if self.mode == "passes" and self.logs:
            kinds = [k for k in ("mlir", "llvm") if any(log.kind == k for log in self.logs)]
            self.log_kind = kinds[(kinds.index(self.log_kind) + 1) % len(kinds)] if self.log_kind in kinds else kinds[0]
            self.show()

    def action_recompute(self) -> None:
        if self.mode == "passes" and self._passes_state != "loading":
            self._passes_state = "loading"
            self.logs = []
            self.show()
            self.load_passes(recompute=True)

    def select_stage(self, name: str) -> None:
        """Show stage ``name`` ("source", "ttir", ... "sass") on the left."""
        self.stage_index = STAGE_NAMES.index(name)
        if self.other_index == self.stage_index:
            self.other_index = (self.stage_index + 1) % len(STAGE_NAMES)
        self.show()
