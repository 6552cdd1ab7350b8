"""CaptureScreen: a live capture in a child process, with its progress, Cancel and its error.

The child runs in a thread worker that only posts messages. Cancel kills the child's process
group from the UI thread at once, so it works even while the worker is blocked in ``run()``.
A failure is one line on screen, with keys to fix the options and try again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from kernelscope.bundle.model import Bundle
from kernelscope.ui.capture_request import CaptureRequest
from kernelscope.ui.screens.job_status import show_job_state
from kernelscope.ui.wording import in_ui_words

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
PHASE_ORDER = ("start", "inputs", "compile", "collect", "done")


@dataclass
class CaptureOutcome:
    bundle: Bundle
    request: CaptureRequest


def one_line(text: str, limit: int = 300) -> str:
    first = next((line.strip() for line in str(text).splitlines() if line.strip()), "")
    return first if len(first) <= limit else first[: limit - 1] + "…"


def stopped_phase(phases: list[str], state: str) -> str | None:
    """The phase a failed or cancelled capture stopped in (no tick for it). A child that fails still
    collects what it had, so a failure seen after "collect" began was the phase before it."""
    if state not in ("failed", "cancelled") or not phases:
        return None
    if state == "failed" and phases[-1] == "collect" and len(phases) > 1:
        return phases[-2]
    return phases[-1]


class CaptureScreen(ModalScreen[CaptureOutcome | None]):
    """Progress of one capture; dismisses with the bundle when it is ready."""

    BINDINGS = [
        Binding("escape", "cancel_or_back", "Cancel", priority=True),
        Binding("ctrl+c", "cancel_or_back", "Cancel", show=False, priority=True),
        Binding("o", "options", "Fix options", show=False),
        Binding("r", "retry", "Retry", show=False),
        Binding("enter", "open_partial", "Open partial", show=False),
    ]

    @dataclass
    class Progress(Message):
        event: dict[str, Any]

    @dataclass
    class Finished(Message):
        status: str
        message: str
        bundle: Bundle | None

    def __init__(self, request: CaptureRequest) -> None:
        super().__init__()
        self.request = request
        self.capture = None
        self.state = "starting"  # starting, running, cancelling, ok, failed, cancelled
        self.events: list[dict[str, Any]] = []
        self.counts: dict[str, int] = {}
        self.error = ""
        self.partial: Bundle | None = None
        self.t0 = time.monotonic()
        self.t_end: float | None = None
        self._spin = 0

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog capture-dialog"):
            yield Static(f"Capturing {self.request.label}", id="cap-title", markup=False)
            yield Static("", id="cap-phases", markup=False)
            yield Static("", id="cap-status", markup=False)
            yield Static("", id="cap-keys", classes="hint", markup=False)

    def on_mount(self) -> None:
        self.set_interval(0.1, self._tick)
        self.start()

    def start(self) -> None:
        from kernelscope.target import TargetError

        self.events, self.counts, self.error, self.partial = [], {}, "", None
        self.t0, self.t_end = time.monotonic(), None
        self.query_one("#cap-title", Static).update(f"Capturing {self.request.label}")
        try:
            spec = self.request.check()
        except TargetError as exc:
            self._finish("failed", str(exc), None)
            return
        self.state = "running"
        self._render_state()
        self._run(spec)

    @work(thread=True, exclusive=True, exit_on_error=False, group="capture")
    def _run(self, spec) -> None:
        from kernelscope.capture.runner import Capture
        from kernelscope.ui.paths import new_capture_dir

        out = self.request.out or str(new_capture_dir(spec.name))
        self.capture = Capture(spec, out, on_event=lambda e: self.post_message(self.Progress(e)))
        if self.state == "cancelling":
            self.capture.cancel()
        result = self.capture.run()
        self.post_message(self.Finished(result.status, result.message, result.bundle))

    @on(Worker.StateChanged)
    def _worker_state(self, event: Worker.StateChanged) -> None:
        # The one place a capture's unexpected exception (CaptureError, BundleError, OSError...) lands.
        if event.state == WorkerState.ERROR and event.worker.group == "capture":
            error = event.worker.error
            self._finish("failed", one_line(str(error)) or error.__class__.__name__, None)

    @on(Progress)
    def _progress(self, event: Progress) -> None:
        e = event.event
        if e.get("phase") == "error":
            self.error = in_ui_words(one_line(e.get("message", "")))
        else:
            self.events.append(e)
        for key in ("graphs", "kernels"):
            if key in e:
                self.counts[key] = int(e[key])
        self._render_state()

    @on(Finished)
    def _finished(self, event: Finished) -> None:
        self._finish(event.status, event.message, event.bundle)

    def _finish(self, status: str, message: str, bundle: Bundle | None) -> None:
        self.t_end = time.monotonic()
        if status == "ok" and bundle is not None:
            self.state = "ok"
            self.dismiss(CaptureOutcome(bundle, self.request))
            return
        if self.state == "cancelling" or status == "cancelled":
            self.state = "cancelled"
            self.error = "capture cancelled; nothing was written"
        else:
            self.state = "failed"
            self.error = in_ui_words(one_line(message)) or self.error or "the capture failed"
            self.partial = bundle
        self._render_state()

    def _tick(self) -> None:
        if self.state in ("running", "cancelling"):
            self._spin += 1
            self._render_state()

    def _render_state(self) -> None:
        elapsed = (self.t_end or time.monotonic()) - self.t0
        lines = []
        seen: dict[str, str] = {}
        for e in self.events:
            seen[e.get("phase", "?")] = e.get("message", "")
        phases = list(seen)
        stopped = stopped_phase(phases, self.state)
        for i, phase in enumerate(phases):
            running = i == len(phases) - 1 and self.state in ("running", "cancelling")
            glyph = SPINNER[self._spin % len(SPINNER)] if running else (
                ("✗" if self.state == "failed" else "■") if phase == stopped else "✓")
            lines.append(f" {glyph} {phase:<9} {one_line(seen[phase], 90)}")
        if not phases and self.state in ("running", "starting"):
            lines.append(f" {SPINNER[self._spin % len(SPINNER)]} starting  spawning the capture process")
        self.query_one("#cap-phases", Static).update("\n".join(lines))
        counts = f"graphs {self.counts.get('graphs', 0)} · kernels {self.counts.get('kernels', 0)} · {elapsed:.1f} s"
        extra = " · enter: open what was captured" if self.partial is not None else ""
        show_job_state(self.query_one("#cap-status", Static), self.query_one("#cap-keys", Static), self.state, {
            "running": (counts, "escape: cancel (stops the compile at once)"),
            "cancelling": (f"cancelling… {counts}", ""),
            "cancelled": (f"■ {self.error}", "r: start again · o: change options · escape: back"),
            "failed": (f"✗ {self.error}", f"o: fix options and retry · r: retry{extra} · escape: back"),
        })

    # -- keys --------------------------------------------------------------------------------------
    def action_cancel_or_back(self) -> None:
        if self.state in ("running", "starting"):
            self.state = "cancelling"
            if self.capture is not None:
                self.capture.cancel()
            self._render_state()
        elif self.state in ("failed", "cancelled"):
            self.dismiss(None)

    def action_retry(self) -> None:
        if self.state in ("failed", "cancelled"):
            self.start()

    def action_options(self) -> None:
        if self.state not in ("failed", "cancelled"):
            return
        from kernelscope.ui.screens.options import OptionsScreen

        def changed(req: CaptureRequest | None) -> None:
            if req is not None:
                self.request = req
                self.start()

        self.app.push_screen(OptionsScreen(self.request, error=self.error), changed)

    def action_open_partial(self) -> None:
        if self.state == "failed" and self.partial is not None:
            self.dismiss(CaptureOutcome(self.partial, self.request))

    def on_unmount(self) -> None:
        if self.capture is not None and self.state in ("running", "cancelling"):
            self.capture.cancel()
