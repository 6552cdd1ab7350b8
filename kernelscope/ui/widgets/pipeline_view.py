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
from textual.markup import escape
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from kernelscope.bundle.model import Bundle, Kernel
from kernelscope.pipeline.linemap import lines_for_source_line, map_between, source_lines_for
from kernelscope.pipeline.listing import display_stage
from kernelscope.pipeline.stages import STAGE_NAMES, STAGES, StageText
from kernelscope.ui.widgets.code_pane import CodePane
from kernelscope.ui.widgets.code_view import CodeView
from kernelscope.ui.widgets.fitted_line import FittedLine
from kernelscope.ui.widgets.pass_view import PassView
from kernelscope.units import plural


class PipelineView(PassView, Widget, can_focus=False):
    """Stage stepper and pass walker for one Triton kernel of a bundle."""

    DEFAULT_CSS = """
    PipelineView { layout: vertical; height: 1fr; }
    PipelineView #pv-stages { height: 1; padding: 0 1; }
    PipelineView #pv-panes { height: 1fr; }
    PipelineView #pv-right { display: none; }
    PipelineView.-split #pv-right { display: block; }
    PipelineView #pv-status { height: 1; padding: 0 1; color: $text-muted; }
    """

    _STAGE = Binding.Group("stage", compact=True)
    _PARTNER = Binding.Group("other", compact=True)  # the other pane's stage, or the diff's partner
    BINDINGS = [
        Binding("[", "step(-1)", "prev stage", group=_STAGE),
        Binding("]", "step(1)", "next stage", group=_STAGE),
        Binding("{", "step_other(-1)", "other: prev stage", group=_PARTNER),
        Binding("}", "step_other(1)", "other: next stage", group=_PARTNER),
        Binding("s", "toggle_split", "split"),  # side by side; short, so that a raw SASS fits at 80 columns
        Binding("d", "toggle_diff", "diff"),
        Binding("p", "toggle_passes", "passes"),
        Binding("a", "sass_listing(True)", "raw SASS"),  # one of the two shows: the listing a switches to
        Binding("a", "sass_listing(False)", "compact"),  # short: after ? at 80 columns
        # Pass mode's keys: in the footer only there (check_action); l pans over the stages.
        Binding("c", "toggle_changed", "changed only"),
        Binding("v", "cycle_pass_view", "diff/before/after"),
        Binding("l", "toggle_pass_log", "MLIR/LLVM", show=False),
        Binding("r", "recompute", "recompute"),
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
        self.stages: list[StageText] = []  # as shown: temporary paths named, SASS compact unless sass_raw
        self.raw_stages: list[StageText] = []  # as loaded
        self.sass_raw = False
        self._pending: list[tuple[str, int]] = []  # [ ] { } typed before the stages loaded
        self._came_from: tuple[int, int] | None = None  # (stage, line) a single-pane follow left for the source
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
        yield FittedLine(id="pv-status")

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
        self.raw_stages = message.stages
        self._display_stages()
        self.stage_index = 0
        self.other_index = 1 if len(self.stages) > 1 else 0
        self.show()
        pending, self._pending = self._pending, []
        for action, delta in pending:
            getattr(self, f"action_{action}")(delta)

    def _display_stages(self) -> None:
        name = (self.kernel.source or "").rsplit("/", 1)[-1] or f"{self.kernel.name}.py"
        self.stages = [display_stage(st, self.kernel.kernel_path or None, name, compact=not self.sass_raw)
                       for st in self.raw_stages]

    @on(PassesLoaded)
    def _passes_loaded(self, message: PassesLoaded) -> None:
        self.logs = message.logs
        self._passes_state = "ready"
        if message.origin == "recomputed":  # r: the same list again would look like nothing happened
            counts = ", ".join(f"{sum(len(log.passes) for log in self.logs if log.kind == kind)} {kind.upper()}"
                               for kind in ("mlir", "llvm") if any(log.kind == kind for log in self.logs))
            self.notify(f"passes recomputed with this machine's Triton: {counts or 'none'}", timeout=4)
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

    def _set_status(self, text: str, *shorter: str) -> None:
        """``text``, or the first of the ``shorter`` wordings that fits the line (never a cut word)."""
        self.status_text = text
        self.query_one("#pv-status", FittedLine).set_variants(text, *shorter)

    def show(self, cursor: int = 1) -> None:
        """Redraw both panes for the current mode, stages and toggles (``cursor``: the left pane's line)."""
        bar = self.query_one("#pv-stages", Static)
        if self.mode == "passes":
            self.set_class(True, "-split")
            bar.update(self._stage_bar())
            self._show_passes()
            return
        self.set_class(self.split and not self.diff, "-split")  # a diff takes the whole width
        bar.update(self._stage_bar())
        cur = self.current
        if cur is None:
            return
        self.app.refresh_bindings()  # "a raw SASS" shows only on SASS
        if self.diff:
            # Always the earlier stage first: what the later one changed reads as + lines.
            a, b = (self.stages[i] for i in sorted((self.stage_index, self.other_index)))
            text = "\n".join(difflib.unified_diff(a.lines, b.lines, a.title, b.title, lineterm="")) or (
                f"(no differences between {a.title} and {b.title})"
            )
            self.left.set_text(text, "diff", f"diff {a.title} → {b.title}")
            self._set_status(f"unified diff {a.title} → {b.title}   {{ }} another stage to compare  d back")
            return
        spec = STAGES[self.stage_index]
        self.left.set_text(cur.display_text(), spec.lexer if not cur.missing else "text", cur.title, cursor)
        if self.split:
            oth = self.other
            ospec = STAGES[self.other_index]
            self.right.set_text(oth.display_text(), ospec.lexer if not oth.missing else "text", oth.title)
        self._update_mapping(self.left)

    # --- line mapping ----------------------------------------------------------------------------

    def _update_mapping(self, pane: CodePane) -> None:
        if self.mode != "stages" or self.diff or not self.stages:
            return
        here = self.current if pane is self.left else self.other
        there_pane = self.right if pane is self.left else self.left
        there = self.other if pane is self.left else self.current
        path = self.kernel.kernel_path or None
        src_lines = source_lines_for(here, pane.cursor_line, path)
        mapped: set[int] = set()
        if self.split and there is not None:
            for src in src_lines:
                mapped |= lines_for_source_line(there, src, path)
            there_pane.set_marked(mapped)
        if here.stage == "source":  # the source is what the others map to: "line 1 ← source line 1" said nothing
            beside = f" → {plural(len(mapped), 'line')} of {there.title}" if self.split and there is not None else ""
            self._set_status(f"{here.title} line {pane.cursor_line}{beside}")
            return
        where = ", ".join(str(n) for n in sorted(src_lines))  # the keys are in the footer
        self._set_status(f"{here.title} line {pane.cursor_line} ← source line {where}" if where else
                         f"{here.title} line {pane.cursor_line}: no source line (none recorded for it)")

    @on(CodeView.CursorMoved)
    def _cursor_moved(self, message: CodeView.CursorMoved) -> None:
        message.stop()
        pane = message.view
        if self.mode == "passes":
            if pane is self.left:
                self._show_pass_detail(message.index + 1)
            return
        self._update_mapping(pane)

    @on(CodeView.LineActivated)
    def _follow(self, message: CodeView.LineActivated) -> None:
        """Enter: to the source line a stage line came from, and back; side by side, to the mapped lines."""
        message.stop()
        pane, line = message.view, message.index + 1
        if self.mode == "passes":
            if pane is self.left:
                self.right.focus()
            return
        if self.diff or not self.stages:
            self.notify("a diff has no line mapping: d shows the stage again", timeout=3)
            return
        path = self.kernel.kernel_path or None
        here = self.current if pane is self.left else self.other
        if self.split:
            there_pane = self.right if pane is self.left else self.left
            there = self.other if pane is self.left else self.current
            targets = sorted(map_between(here, line, there, path))
            if not targets:
                self.notify(f"{here.title} line {line} maps to no line of {there.title}", severity="warning", timeout=3)
                return
            # enter again steps through the mapped lines
            nxt = next((t for t in targets if t > there_pane.cursor_line), targets[0])
            there_pane.focus()
            there_pane.move_cursor(nxt - 1, center=True)
            return
        if here.stage == "source":
            if self._came_from is None:
                self.notify("enter on a TTIR ... SASS line jumps to its source line here, and enter here back",
                            timeout=4)
                return
            stage_index, from_line = self._came_from
            back = self.stages[stage_index]
            targets = sorted(lines_for_source_line(back, line, path))
            self._came_from = None
            self.stage_index = stage_index
            self._other_off_current()
            # the line we came from when it came from this source line, else the first that did
            to = from_line if from_line in targets or not targets else targets[0]
            self.show(cursor=to)
            self.left.set_marked(set(targets), scroll=False)
            return
        src = sorted(source_lines_for(here, line, path))
        if not src:
            self.notify(f"{here.title} line {line} has no source line (no line info on it)", severity="warning",
                        timeout=3)
            return
        self._came_from = (self.stage_index, line)
        self.stage_index = STAGE_NAMES.index("source")
        self._other_off_current()
        self.show(cursor=src[0])
        self.left.set_marked(set(src), scroll=False)
        self._set_status(f"{here.title} line {line} ← source line {', '.join(map(str, src))}   "
                         f"⏎ back to {here.title}")

    # --- actions ---------------------------------------------------------------------------------

    def _other_off_current(self) -> None:
        if self.other_index == self.stage_index:
            self.other_index = (self.stage_index + 1) % len(self.stages)

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action in ("toggle_changed", "cycle_pass_view", "recompute"):
            return self.mode == "passes"
        if action in ("step", "step_other", "toggle_split", "toggle_diff"):
            return self.mode == "stages"  # over the passes they did nothing: out of the footer, so ? fits at 80
        if action == "sass_listing":  # in the footer only where there is SASS to show
            return self.mode == "stages" and bool(self.stages) and parameters[0] != self.sass_raw and "sass" in (
                self.current.stage, self.other.stage if self.split or self.diff else "")
        return True

    def action_step(self, delta: int) -> None:
        if self.mode == "stages" and not self.stages and not self.raw_stages:
            self._pending.append(("step", delta))  # typed while the stages load: kept, done once loaded
            return
        if self.mode != "stages" or not self.stages:
            return
        self._came_from = None
        self.stage_index = (self.stage_index + delta) % len(self.stages)
        if self.diff:
            self._partner_previous()  # each stage against the one before it ({ } picks another)
        self._other_off_current()
        self.show()

    def action_sass_listing(self, raw: bool) -> None:
        """SASS as nvdisasm prints it (a `//## File` line before each source line's instructions), or compact."""
        if not self.raw_stages or raw == self.sass_raw:
            return
        self.sass_raw = raw
        pane = self.left if self.current.stage == "sass" else self.right
        at = pane.lines[pane.cursor_line - 1] if pane.lines else ""
        self._display_stages()
        self.show()
        if at.strip():  # keep the cursor on the same line (an instruction's address makes it unique)
            same = " ".join(at.split())  # the compact listing has the instruction one space after its address
            found = next((i for i, text in enumerate(pane.lines) if " ".join(text.split()) == same), None)
            if found is not None:
                pane.move_cursor(found, center=True)
        self.notify("SASS as nvdisasm prints it" if self.sass_raw
                    else "compact SASS: file/line comments folded into the line mapping", timeout=2)

    def action_step_other(self, delta: int) -> None:
        if self.mode == "stages" and not self.stages and not self.raw_stages:
            self._pending.append(("step_other", delta))
            return
        if self.mode != "stages" or not self.stages:
            return
        self.other_index = (self.other_index + delta) % len(self.stages)
        if self.other_index == self.stage_index:
            self.other_index = (self.other_index + delta) % len(self.stages)
        self.show(cursor=1 if self.diff else self.left.cursor_line)  # the left pane's stage is the same one

    def action_toggle_split(self) -> None:
        keep = self.left.cursor_line if not self.diff else 1  # the same stage stays on the left
        self.split = not self.split
        self.diff = False
        if not self.split and self.right.has_focus:
            self.left.focus()  # the hidden pane kept the keys: [ ] d went nowhere until Tab
        self.show(cursor=keep)

    def action_toggle_diff(self) -> None:
        """Diff the previous stage against this one ({ } pick another partner)."""
        self.diff = not self.diff
        if self.diff and self.stages:
            self._partner_previous()
        self.show()

    def _partner_previous(self) -> None:
        self.other_index = self.stage_index - 1 if self.stage_index > 0 else 1

    def action_toggle_passes(self) -> None:
        self.mode = "stages" if self.mode == "passes" else "passes"
        self.show()
        self.left.focus()
        self.app.refresh_bindings()  # the pass keys come into the footer, or leave it


    def select_stage(self, name: str) -> None:
        """Show stage ``name`` ("source", "ttir", ... "sass") on the left."""
        self.stage_index = STAGE_NAMES.index(name)
        self._came_from = None
        if self.other_index == self.stage_index:
            self.other_index = (self.stage_index + 1) % len(STAGE_NAMES)
        self.show()
