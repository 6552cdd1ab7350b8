"""RunScreen: ``kernelscope run -- COMMAND`` in the UI, the program's progress while it runs.

The program runs in a child (capture/program.py's ProgramRun: no torch in this process), driven by a
RunJob in a plain thread of its own, so that the CLI can wait for the bundle to be written after the
UI has closed. The screen shows the phases (started, each graph compiled, stopped, writing the
bundle), the graph count, the elapsed time, what stops the program and its last printed lines.
Cancel (escape, c, ctrl+c) stops the program at once and keeps what compiled as a good bundle, then
the explorer opens on it; a program that crashed, or one stopped before any graph compiled, is one
line on screen, with a key to open the failed bundle (its logs). Leaving the screen any other way
(ctrl+q) stops the program too.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from kernelscope.textsafe import one_line
from kernelscope.ui.screens.capture import SPINNER
from kernelscope.ui.screens.job_status import show_job_state
from kernelscope.ui.widgets.key_footer import KeyFooter

OUTPUT_LINES = 4  # the program's last printed lines shown while it runs (stdout)
ERROR_LINES = 2  # and the last it wrote to stderr itself (torch's TORCH_LOGS lines left out)
SHOWN_PHASES = ("start", "compile", "stopped", "collect", "note")


class RunJob:
    """One ``kernelscope run`` for the UI: the ProgramRun, the thread it runs in, and its outcome.

    ``start(on_event, on_done)`` runs it in a non-daemon thread; ``cancel()`` stops the program from any
    thread, at any time (also before it started); ``join()`` waits for the bundle. Raises RunError on
    flags that cannot be run (``--graphs 0``), as ProgramRun does, before anything starts."""

    def __init__(self, command: list[str], out: str | Path, *, graphs: int | None = None,
                 timeout: float | None = None, rank: int | None = None, mode: str = "default",
                 replace: bool = False) -> None:
        from kernelscope.capture.program import ProgramRun

        self.command = list(command)
        self.out = Path(out)
        self.graphs, self.timeout = graphs, timeout
        self.program = ProgramRun(command, out, graphs=graphs, timeout=timeout, rank=rank, mode=mode,
                                  replace=replace, on_event=self._event)
        self.result = None  # a capture.program.RunResult once done
        self.error = ""  # one line when run() raised (nothing written)
        self.cancelled = False
        self.t0 = time.monotonic()
        self.t_end: float | None = None
        self._thread: threading.Thread | None = None
        self._on_event = None
        self._on_done = None

    @property
    def label(self) -> str:
        from kernelscope.bundle.origin import command_text

        return one_line(command_text({"command": self.command}, limit=66))  # "Running " + it fits 80 columns

    def stop_condition(self) -> str:
        """What stops the program, one line within 80 columns: ``stops: 2 graphs compiled and called once ·
        after 60 s · or c (cancel)``."""
        from kernelscope.units import plural

        parts = []
        if self.graphs:
            parts.append(f"{plural(self.graphs, 'graph')} compiled and called once")
        if self.timeout:
            parts.append(f"after {self.timeout:g} s")
        return "stops: " + " · ".join(parts or ["when the program ends"]) + " · or c (cancel)"

    def start(self, on_event=None, on_done=None) -> None:
        if self._thread is not None:
            return
        self._on_event, self._on_done = on_event, on_done
        self.t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="kernelscope-run", daemon=False)
        self._thread.start()

    def _event(self, event: dict[str, Any]) -> None:
        if self._on_event is not None:
            self._on_event(event)

    def _run(self) -> None:
        try:
            self.result = self.program.run()
        except Exception as exc:  # RunError (no trace of --rank N), BundleError, OSError: one line
            self.error = one_line(str(exc)) or exc.__class__.__name__
        finally:
            self.t_end = time.monotonic()
            if self._on_done is not None:
                try:
                    self._on_done()
                except Exception:
                    pass

    def cancel(self) -> None:
        if not self.done:
            self.cancelled = True
            self.program.cancel()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def done(self) -> bool:
        return self.result is not None or bool(self.error)

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def elapsed(self) -> float:
        return (self.t_end or time.monotonic()) - self.t0


class RunScreen(Screen):
    """The program's progress; dismisses with the (first) bundle once it is a good one."""

    DEFAULT_CSS = """
    RunScreen { align: center top; }
    RunScreen #run-box { width: 100; max-width: 100%; height: auto; max-height: 1fr;
                         border: round $accent; padding: 0 1; }
    RunScreen #run-title { text-style: bold; }
    RunScreen #run-stop { color: $text-muted; }
    RunScreen #run-phases { margin-top: 1; }
    RunScreen #run-status { margin-top: 1; }
    RunScreen #run-output-title { margin-top: 1; color: $text-muted; }
    RunScreen #run-output { color: $text-muted; }
    RunScreen #run-keys { margin-top: 1; }
    """

    BINDINGS = [  # check_action: Cancel while the program runs, Quit and Open once it failed
        Binding("escape", "cancel", "Cancel", priority=True),
        Binding("c", "cancel", "Cancel", show=False),
        Binding("ctrl+c", "cancel", "Cancel", show=False, priority=True),
        Binding("escape", "quit_failed", "Quit", priority=True),
        Binding("enter", "open_failed", "Open bundle"),
    ]

    @dataclass
    class Progress(Message):
        event: dict[str, Any]

    class Finished(Message):
        pass

    def __init__(self, job: RunJob) -> None:
        super().__init__()
        self.job = job
        self.state = "running"  # running, cancelling, collecting, ok, failed
        self.events: list[dict[str, Any]] = []
        self.graphs = 0
        self.error = ""
        self.failed_bundle = None
        self.output: list[str] = []
        self.errors: list[str] = []
        self._spin = 0

    def compose(self) -> ComposeResult:
        with Vertical(id="run-box"):
            yield Static(f"Running {self.job.label}", id="run-title", markup=False)
            yield Static(self.job.stop_condition(), id="run-stop", markup=False)
            yield Static("", id="run-phases", markup=False)
            yield Static("", id="run-status", markup=False)
            yield Static("the program's output (its last lines)", id="run-output-title", markup=False)
            yield Static("", id="run-output", markup=False)
            yield Static("", id="run-keys", classes="hint", markup=False)
        yield KeyFooter(show_command_palette=False)

    def on_mount(self) -> None:
        self.set_interval(0.1, self._tick)
        self.set_interval(0.5, self._read_output)
        self._render_state()
        self.job.start(on_event=lambda e: self.post_message(self.Progress(e)),
                       on_done=lambda: self.post_message(self.Finished()))

    # -- what the job says --------------------------------------------------------------------------
    @on(Progress)
    def _progress(self, event: Progress) -> None:
        e = event.event
        if e.get("phase") not in SHOWN_PHASES:
            return
        self.events.append(e)
        if "graphs" in e:
            self.graphs = max(self.graphs, int(e["graphs"]))
        if e.get("phase") == "collect" and self.state == "running":
            self._set_state("collecting")
        self._render_state()

    @on(Finished)
    def _finished(self) -> None:
        from kernelscope.capture.program import TORCH_LOG_LINE, tail_lines

        job = self.job
        result = job.result
        if result is None:
            self._set_state("failed")
            self.error = job.error or "the run failed"
            self._render_state()
            return
        if result.status == "ok" and result.bundles:
            self.state = "ok"
            self.dismiss(result)
            return
        self.error = one_line(result.message) or "the run failed"
        self.failed_bundle = result.bundles[0] if result.bundles else None
        if self.failed_bundle is not None:
            why = (self.failed_bundle.target.get("stopped") or {}).get("message", "")
            at = next((i for i in range(len(self.events) - 1, -1, -1) if self.events[i]["phase"] == "collect"),
                      len(self.events))
            self.events.insert(at, {"phase": "ended", "message": why})  # it ended, then the bundle was written
            logs = result.outs[0] / "logs"
            self.output = tail_lines(logs / "stdout.txt", OUTPUT_LINES) or self.output
            self.errors = tail_lines(logs / "stderr.txt", ERROR_LINES, skip=TORCH_LOG_LINE, window=65536) or self.errors
        self._set_state("failed")
        self._render_state()

    def _set_state(self, state: str) -> None:
        self.state = state
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action == "cancel":
            return self.state == "running"
        if action == "quit_failed":
            return self.state == "failed"
        if action == "open_failed":
            return self.state == "failed" and self.failed_bundle is not None
        return True

    def _tick(self) -> None:
        if self.state in ("running", "cancelling", "collecting"):
            self._spin += 1
            self._render_state()

    def _read_output(self) -> None:
        if self.state in ("running", "cancelling"):
            program = self.job.program
            self.output = program.last_output(OUTPUT_LINES) or self.output
            self.errors = program.last_errors(ERROR_LINES) or self.errors

    def _render_state(self) -> None:
        seen: dict[str, str] = {}
        for e in self.events:
            seen.pop(e["phase"], None)  # a phase seen again moves to the end (a note between two graphs)
            seen[e["phase"]] = e.get("message", "")
        live = self.state in ("running", "cancelling", "collecting")
        spin = SPINNER[self._spin % len(SPINNER)]
        lines = []
        for i, (phase, message) in enumerate(seen.items()):
            last = i == len(seen) - 1
            glyph = spin if last and live else ("✗" if phase == "ended" else "✓")
            if phase == "collect" and not live:
                message = message.replace("writing", "wrote", 1)
            lines.append(f" {glyph} {phase:<8} {one_line(message, 80)}")
        if not seen and live:
            lines.append(f" {spin} start    starting the program")
        self.query_one("#run-phases", Static).update("\n".join(lines))
        counts = f"graphs {self.graphs} · {self.job.elapsed:.1f} s"
        extra = "enter: open the failed bundle (its logs) · " if self.failed_bundle is not None else ""
        show_job_state(self.query_one("#run-status", Static), self.query_one("#run-keys", Static), self.state, {
            "running": (counts, "c / escape: cancel (stops the program, keeps what compiled as a bundle)"),
            "cancelling": (f"cancelling… {counts}", ""),
            "collecting": (f"writing the bundle… {counts}", ""),
            "failed": (f"✗ {self.error}", f"{extra}escape: quit"),
        })
        nothing = "(nothing printed yet)" if live else "(nothing printed)"
        shown = self.output + [f"stderr: {line}" for line in self.errors]
        self.query_one("#run-output", Static).update("\n".join(shown) or nothing)

    # -- keys ---------------------------------------------------------------------------------------
    def action_cancel(self) -> None:
        if self.state == "running":
            self._set_state("cancelling")
            self.job.cancel()
            self._render_state()

    def action_quit_failed(self) -> None:
        if self.state == "failed":
            self.app.exit(return_code=2)

    def action_open_failed(self) -> None:
        if self.state == "failed" and self.failed_bundle is not None:
            self.state = "ok"
            self.dismiss(self.job.result)

    def on_unmount(self) -> None:
        self.job.cancel()  # the UI closed while the program ran: nothing is left running
