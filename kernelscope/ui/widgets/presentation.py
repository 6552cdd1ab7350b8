"""Presentation mode (``P``, ``--big``): the story of one capture, big enough for the back of a room.

A heading (what was captured, and a talk step's title and note), a band with the counts the talk is
about (eager N kernels / M transfers -> compiled n / m, and the measured time when benched), then two
panes: your source with the kernel's lines marked, and the fused kernel's source. Over the Triton
pipeline it shows the current stage next to its partner stage. No footer, no table, no chrome.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static

from kernelscope.bundle.model import Bundle, Kernel
from kernelscope.ui.story import Story, story, story_kernel
from kernelscope.ui.textdoc import TextDoc
from kernelscope.ui.widgets.code_view import CodeView


@dataclass
class Side:
    """One pane's content: a title, a text, a lexer factory, lines to mark (0-based), a line to show."""

    title: str
    text: str
    lexer: object = None
    marks: tuple[int, ...] = ()
    cursor: int = 0
    placeholder: bool = False
    top: int = 0  # the first line to show
    optional_lead: bool = False  # the words before the kernel's name in the title go where it is narrow


class PresentationScreen(Screen):
    """The story big: source, kernel, counts."""

    DEFAULT_CSS = """
    PresentationScreen { layout: vertical; }
    PresentationScreen #pres-heading { height: auto; padding: 0 2; text-style: bold; color: $text; }
    PresentationScreen #pres-note { height: auto; padding: 0 2; color: $text-muted; }
    PresentationScreen #pres-counts { height: auto; padding: 1 2; margin: 0 1; background: $boost;
                                      text-style: bold; color: $accent; }
    PresentationScreen #pres-panes { height: 1fr; }
    PresentationScreen .pres-side { width: 1fr; border: round $panel-lighten-2; border-title-style: bold;
                                    border-title-color: $text; padding: 0 1; }
    PresentationScreen #pres-left { width: 2fr; }
    PresentationScreen #pres-right { width: 3fr; }
    PresentationScreen .pres-side > CodeView { height: 1fr; border: none; }
    """

    BINDINGS = [
        Binding("escape", "leave", "Leave presentation"),
        Binding("comma", "step_kernel(-1)", "Prev kernel", key_display=","),
        Binding("full_stop", "step_kernel(1)", "Next kernel", key_display="."),
    ]

    def __init__(self, bundle: Bundle, kernel: Kernel | None = None, *, left: Side | None = None,
                 right: Side | None = None, heading: str = "", note: str = "") -> None:
        super().__init__()
        from kernelscope.ui.xref import BundleIndex

        self.bundle = bundle
        self.index = BundleIndex(bundle)
        self.kernel = kernel or story_kernel(bundle, self.index.kernels_in_order())
        self.fixed = left is not None or right is not None  # the pipeline's stages: no kernel stepping
        self.left_side, self.right_side = left, right
        self.heading = heading
        self.note = note
        self.story: Story | None = None  # counted on mount: a job's counts read every graph's detail

    def compose(self) -> ComposeResult:
        yield Static(id="pres-heading", markup=False)
        yield Static(self.note, id="pres-note", markup=False)
        yield Static(id="pres-counts", markup=False)
        with Horizontal(id="pres-panes"):
            with Vertical(id="pres-left", classes="pres-side"):
                yield CodeView(id="pres-source")
            with Vertical(id="pres-right", classes="pres-side"):
                yield CodeView(id="pres-kernel")

    def on_mount(self) -> None:
        self.query_one("#pres-note").display = bool(self.note)
        if _counts_are_quick(self.bundle):
            self._counted(story(self.bundle))
        else:  # a job's counts read each graph's FX files (a 1,000-graph job: tens of seconds): not here
            self.query_one("#pres-counts", Static).update(
                f"counting kernels and transfers in {len(self.bundle.graphs)} graphs…")
            self.run_worker(self._count, thread=True, exclusive=True, group="story")
        self.show()

    def _count(self) -> None:
        counted = story(self.bundle)
        try:
            self.app.call_from_thread(self._counted, counted)
        except RuntimeError:  # the app ended meanwhile
            pass

    def _counted(self, counted: Story) -> None:
        if not self.is_attached:
            return
        self.story = counted
        calls = input_sets(self.bundle)
        counts = counted.counts_line()
        if len(calls) > 1 and counted.compiled_kernels is not None:
            counts += f"  (all {len(calls)} calls)"  # the counts add every call's graphs: say so
        self.query_one("#pres-counts", Static).update("\n".join([counts, counted.time_line()]))

    # -- content ---------------------------------------------------------------------------------
    def source_side(self) -> Side:
        from kernelscope.ui.panes.base import python_lexer
        from kernelscope.units import base_name

        src = self.index.source()
        if not src.rows:
            return Side("Your source", "This capture holds no copy of your source.", placeholder=True)
        marks = tuple(self.index.source_rows_for_kernel(self.kernel)) if self.kernel else ()
        cursor = marks[0] if marks else (src.first_line or 1) - 1 if src.copied else 0
        return Side(f"Your source · {base_name(src.file)}", src.text, python_lexer, marks, cursor)

    def kernel_side(self) -> Side:
        from kernelscope.ui.panes.base import kernel_lexer

        k = self.kernel
        if k is None:
            return Side("Kernel", "This capture has no kernels.", placeholder=True)
        if k.lang == "extern" or not k.source:
            return Side(f"{k.name} · extern call", f"{k.name} calls a library kernel (cuBLAS / ATen): no generated "
                        f"source.\n\n    {k.call_text}", placeholder=True)
        what = "fused kernel" if "fused" in k.name else f"{k.lang} kernel"
        text = self.index.text(k.source)
        lines = text.splitlines()
        # The kernel itself, from its @triton.jit: the imports and the autotuning arguments stay in the explorer.
        start = next((i for i, line in enumerate(lines) if line.startswith(("@triton.jit", "def ", "extern"))), 0)
        return Side(f"{what} · {k.name}", text, kernel_lexer(k.lang), top=start, optional_lead=True)

    def _title(self, pane_id: str, title: str, optional_lead: bool = False) -> None:
        """A pane's title fitted to its width: a kernel's name keeps its distinguishing end."""
        from kernelscope.units import fit_kernel_title

        pane = self.query_one(pane_id)
        pane.full_title = (title, optional_lead)
        room = pane.outer_size.width - 6
        fit = room > 0 and self.kernel is not None
        pane.border_title = Content(fit_kernel_title(title, self.kernel.name, room, optional_lead=optional_lead)
                                    if fit else title)

    def on_resize(self) -> None:
        self._fit_titles()

    def _fit_titles(self) -> None:
        for pane_id in ("#pres-left", "#pres-right"):
            title = getattr(self.query_one(pane_id), "full_title", None)
            if title is not None:
                self._title(pane_id, *title)

    def show(self) -> None:
        left = self.left_side or self.source_side()
        right = self.right_side or self.kernel_side()
        for side, pane_id, view_id in ((left, "#pres-left", "#pres-source"), (right, "#pres-right", "#pres-kernel")):
            self._title(pane_id, side.title, side.optional_lead)
            view = self.query_one(view_id, CodeView)
            if side.placeholder:
                view.set_placeholder(side.text)
            else:
                text, labels = side.text, None
                if side.top:  # from that line on, numbered as in the file
                    text = "\n".join(side.text.splitlines()[side.top:])
                    labels = lambda i, top=side.top: str(i + top + 1)  # noqa: E731
                view.set_document(TextDoc(text, side.lexer), cursor=side.cursor, labels=labels)
                if side.marks:
                    view.set_marks(side.marks)
        # Your marked lines whole where the screen allows (at 80 columns 2:3 would cut them).
        if left.marks and not left.placeholder:
            lines = left.text.splitlines()
            need = max(len(lines[m]) for m in left.marks if m < len(lines)) + 12 if lines else 0
            width = self.app.size.width or 80
            self.query_one("#pres-left").styles.width = int(min(max(need, width * 0.35), width * 0.55))
        target = self.bundle.target or {}
        name = str(target.get("spec") or target.get("name") or "capture")
        if "::" in name:  # an edited sample's scratch path has no space to wrap at ("add_r" / "elu"): its file
            from kernelscope.units import base_name

            name = base_name(name)
        calls = input_sets(self.bundle)
        if len(calls) > 1:  # every call's inputs: the counts below add them all
            name += f" · {len(calls)} calls: " + "; ".join("(" + ", ".join(c) + ")" for c in calls)
        elif calls:
            name += "(" + ", ".join(calls[0]) + ")"
        kernels = self.index.kernels_in_order()
        where = ""
        at = self.index.kernel_position(self.kernel) if self.kernel is not None else None  # by identity
        if at is not None and not self.fixed and len(kernels) > 1:
            where = f"   (kernel {at + 1} of {len(kernels)} · , and . step)"
        self.query_one("#pres-heading", Static).update(f"{self.heading or name}{where}")
        self.call_after_refresh(self._fit_titles)  # the panes' widths are known once laid out

    # -- keys --------------------------------------------------------------------------------------
    def action_leave(self) -> None:
        self.app.action_presentation()

    def action_step_kernel(self, delta: int) -> None:
        order = self.index.kernels_in_order()
        if self.fixed or not order:
            return
        i = self.index.kernel_position(self.kernel)  # by identity: == on a Kernel reads its graph's detail
        i = -1 if i is None else i
        self.kernel = order[(i + delta) % len(order)]
        self.show()


def _counts_are_quick(bundle: Bundle) -> bool:
    """A bench stored its counts, or there are few graphs to count from."""
    run = (bundle.extra.get("bench") or {}).get("run") if isinstance(bundle.extra, dict) else None
    return (isinstance(run, dict) and isinstance(run.get("counts"), dict)) or len(bundle.graphs) <= 4


def input_sets(bundle: Bundle) -> list[list[str]]:
    """The inputs of each call the capture made (``target.calls``; older bundles: ``target.inputs``)."""
    target = bundle.target or {}
    calls = target.get("calls")
    if isinstance(calls, list) and calls and all(isinstance(c, list) for c in calls):
        return [[str(x) for x in c] for c in calls]
    return [[str(x) for x in target["inputs"]]] if target.get("inputs") else []


def presentation_for(screen, heading: str = "", note: str = ""):
    """The presentation of what ``screen`` shows, or None where it shows no capture (gallery, editor)."""
    from kernelscope.ui.screens.explorer import ExplorerScreen
    from kernelscope.ui.screens.tools import BenchScreen, DiffScreen, PipelineScreen

    if isinstance(screen, ExplorerScreen):
        k = screen.kernel if screen.kernel is not None and screen.kernel.source else None
        return PresentationScreen(screen.bundle, k, heading=heading, note=note)
    if isinstance(screen, PipelineScreen):
        try:
            from kernelscope.pipeline.stages import STAGES
            from kernelscope.ui.lexers import lexer_for_stage
            from kernelscope.ui.widgets.pipeline_view import PipelineView

            view = screen.query_one(PipelineView)
        except Exception:  # the pipeline view is not installed: the kernel and its source
            return PresentationScreen(screen.bundle, screen.kernel, heading=heading, note=note)
        if not view.stages:
            return PresentationScreen(screen.bundle, screen.kernel, heading=heading, note=note)
        i = view.stage_index
        j = view.other_index if view.other_index != i else (i + 1) % len(view.stages)

        def side(n: int) -> Side:
            st = view.stages[n]
            lexer = None if st.missing else (lambda lx=STAGES[n].lexer: lexer_for_stage(lx))
            return Side(f"{st.title} · {screen.kernel.name}", st.display_text(), lexer,
                        placeholder=st.missing)

        return PresentationScreen(screen.bundle, screen.kernel, left=side(i), right=side(j),
                                  heading=heading or f"Triton pipeline · {screen.kernel.name}", note=note)
    if isinstance(screen, BenchScreen):
        return PresentationScreen(screen.bundle, heading=heading, note=note)
    if isinstance(screen, DiffScreen):
        bundle = getattr(screen, "after", None)
        return PresentationScreen(bundle, heading=heading, note=note) if bundle is not None else None
    return None
