"""The Bench view: the stored bench results of a bundle (or the kernels and transfers computed from
its graphs when no bench has run), and keys to run one: eager vs compiled, a size sweep, or one
Triton kernel with a changed config.

A run is a thread worker that spawns the bench child (``kernelscope.bench.runner.Bench``) and only
posts messages; ``c`` (or leaving the view) cancels it and kills the child. No torch, no triton.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import ScrollableContainer, Vertical
from textual.message import Message
from textual.widgets import Input, Static

from kernelscope.bench import tables
from kernelscope.bench.bundle_plan import computed_counts, consent_question
from kernelscope.bench.runner import Bench, BenchError, BenchSettings, bundle_device, merge
from kernelscope.bundle.io import BundleError, read_bundle
from kernelscope.bundle.model import Bundle
from kernelscope.ui.messages import BenchFinished

DEVICES = ("cuda", "cpu")


class KernelInput(Input):
    """The ``k`` box: escape closes it (not the whole view)."""

    BINDINGS = [Binding("escape", "close", "Close", show=False)]

    def action_close(self) -> None:
        self.remove_class("-shown")
        parent = self.parent
        if parent is not None:
            parent.focus()


class BenchView(Vertical):
    """Bench results for one bundle; ``r`` runs eager vs compiled, ``w`` sweeps sizes, ``k`` reruns a kernel,
    ``v`` picks the device to run on."""

    DEFAULT_CSS = """
    BenchView { height: 1fr; }
    BenchView #bench-status { height: auto; color: $text-muted; padding: 0 1; }
    BenchView #bench-scroll { height: 1fr; overflow-x: auto; overflow-y: auto; }
    BenchView #bench-text { padding: 0 1; width: auto; }
    BenchView #bench-kernel { display: none; }
    BenchView #bench-kernel.-shown { display: block; }
    """

    can_focus = True

    BINDINGS = [
        Binding("r", "run_bench", "Run bench"),
        Binding("w", "sweep", "Sweep sizes"),
        Binding("k", "kernel", "One kernel"),
        Binding("v", "device", "Device"),
        Binding("c", "cancel", "Cancel"),
        Binding("left", "scroll_x(-8)", "Scroll left", show=False),
        Binding("right", "scroll_x(8)", "Scroll right", show=False),
        Binding("up", "scroll_y(-1)", "Scroll up", show=False),
        Binding("down", "scroll_y(1)", "Scroll down", show=False),
        Binding("pageup", "scroll_y(-10)", show=False),
        Binding("pagedown", "scroll_y(10)", show=False),
    ]

    @dataclass
    class Progress(Message):
        text: str

        def can_replace(self, message: Message) -> bool:  # coalesce a burst of progress lines
            return isinstance(message, BenchView.Progress)

    @dataclass
    class Finished(Message):
        status: str  # ok, failed, cancelled, crashed
        text: str
        record: dict | None = None  # the new results, when ok
        not_saved: str = ""  # why they did not go into the bundle ('' when they did)
        stored: dict | None = None  # the bundle's bench section as saved, results merged in (when saved)

    def __init__(self, bundle: Bundle, *, settings: BenchSettings | None = None, id: str | None = None) -> None:
        super().__init__(id=id)
        self.bundle = bundle
        self.settings = settings or BenchSettings()
        self._bench: Bench | None = None
        self.device = self.settings.device or bundle_device(bundle)
        if self.device == "cuda" and not self.settings.device:
            from kernelscope.ui.host import has_cuda_gpu

            if not has_cuda_gpu():  # a GPU capture opened on a machine without one: its bench runs on the CPU
                self.device = self.settings.device = "cpu"

    def compose(self) -> ComposeResult:
        yield Static(self._idle_status(), id="bench-status", markup=False)
        # Not selected on focus: the value typed after the name would replace the name.
        yield KernelInput(placeholder="kernel name and changes, e.g. triton_poi_fused_add_relu_0 XBLOCK=512 "
                          "num_warps=8  (enter: run, escape: close)", id="bench-kernel", select_on_focus=False)
        with ScrollableContainer(id="bench-scroll", can_focus=False):
            yield Static(self.results_text(), id="bench-text", markup=False)

    # ---------------------------------------------------------------- text

    def results_text(self) -> str:
        try:
            counts = computed_counts(self.bundle)
        except Exception as exc:  # a bundle without graphs still shows its stored results
            counts = None
            note = f"(no counts: {exc.__class__.__name__}: {exc})"
        else:
            note = ""
        text = tables.bench_text(self.bundle.extra.get("bench"), counts)
        text += f"\n{note}" if note else ""
        width = self.size.width - 4  # the text's padding and the scrollbar
        return wrap_prose(text, width) if width > 20 else text

    def on_resize(self) -> None:
        self.query_one("#bench-text", Static).update(self.results_text())

    def _idle_status(self) -> str:
        stored = self.bundle.extra.get("bench") or {}
        when = (stored.get("run") or stored.get("sweep") or {}).get("ran_at")
        state = f"last run {when}" if when else "not benched yet"
        captured = bundle_device(self.bundle)
        device = self.device + (f" (re-captured there; captured on {captured})" if self.device != captured else "")
        kernel = " · k: one kernel changed" if self.can_rerun_a_kernel() else ""
        return f"{state} · r: eager vs compiled on {device} · v: device · w: sweep sizes{kernel} · c: cancel · ←→: scroll"

    def can_rerun_a_kernel(self) -> bool:
        """``k`` reruns one Triton kernel with changed launch values: a CUDA GPU and a Triton kernel only."""
        from kernelscope.ui.host import has_cuda_gpu

        return any(k.lang == "triton" for k in self.bundle.kernels) and has_cuda_gpu()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.can_rerun_a_kernel() if action == "kernel" else True

    def _set_status(self, text: str) -> None:
        self.query_one("#bench-status", Static).update(text)

    # ---------------------------------------------------------------- actions

    @property
    def running(self) -> bool:
        return self._bench is not None

    def action_run_bench(self) -> None:
        question = "" if self.settings.run_bundle_code or self.running else consent_question(self.bundle)
        if question:  # the bundle's own code, someone else's: ask first, as --run-bundle-code does on the CLI
            from kernelscope.ui.screens.dialogs import ConfirmScreen

            def answered(yes: bool | None) -> None:
                if yes:
                    self.settings.run_bundle_code = True
                    self.action_run_bench()
                else:
                    self._set_status("not run: the bundle's code was not agreed to · r: ask again")

            self.app.push_screen(ConfirmScreen(question), answered)
            return
        self._start(BenchSettings(**{**self.settings.__dict__, "sweep": False, "kernel": None}))

    def action_sweep(self) -> None:
        self._start(BenchSettings(**{**self.settings.__dict__, "sweep": True, "kernel": None}))

    def action_device(self) -> None:
        """Run the next bench on the other device (a GPU capture can be measured on the CPU, re-captured)."""
        if self.running:
            self._set_status("a bench is running; pick the device after it · c: cancel")
            return
        from kernelscope.ui.host import has_cuda_gpu

        if self.device == "cpu" and not has_cuda_gpu():  # cuda is offered only where a bench can run there
            self.device = self.settings.device = "cpu"
            self._set_status(f"no CUDA GPU on this machine: benches run on cpu · {self._idle_status()}")
            return
        self.device = DEVICES[(DEVICES.index(self.device) + 1) % len(DEVICES)] if self.device in DEVICES else "cpu"
        self.settings.device = self.device
        self._set_status(self._idle_status())

    def action_scroll_x(self, cells: int) -> None:
        scroll = self.query_one("#bench-scroll", ScrollableContainer)
        scroll.scroll_to(x=max(0, scroll.scroll_x + cells), animate=False)

    def action_scroll_y(self, lines: int) -> None:
        scroll = self.query_one("#bench-scroll", ScrollableContainer)
        scroll.scroll_to(y=max(0, scroll.scroll_y + lines), animate=False)

    def action_kernel(self) -> None:
        box = self.query_one("#bench-kernel", Input)
        if not box.value:
            first = next((k.name for k in self.bundle.kernels if k.lang == "triton"), "")
            box.value = f"{first} XBLOCK=" if first else ""
        box.add_class("-shown")
        box.focus()
        box.cursor_position = len(box.value)  # after "NAME XBLOCK=": the value is typed next

    @on(Input.Submitted, "#bench-kernel")
    def _kernel_submitted(self, event: Input.Submitted) -> None:
        parts = event.value.split()
        event.input.remove_class("-shown")
        self.focus()
        if not parts:
            return
        changes: dict[str, int] = {}
        for part in parts[1:]:
            key, _, value = part.partition("=")
            if not value.isdigit():
                self._set_status(f"{part!r}: write KEY=INTEGER, e.g. XBLOCK=512 or num_warps=8")
                return
            changes[key] = int(value)
        self._start(BenchSettings(**{**self.settings.__dict__, "sweep": False, "kernel": parts[0],
                                     "changes": changes}))

    def action_cancel(self) -> None:
        if self._bench is not None:
            self._bench.cancel()
            self._set_status("cancelling …")

    def on_unmount(self) -> None:
        if self._bench is not None:
            self._bench.cancel()

    def _start(self, settings: BenchSettings) -> None:
        if self.running:
            self._set_status("a bench is already running · c: cancel")
            return
        if not self.bundle.root:
            self._set_status("this capture is not saved in a folder; nothing to bench")
            return
        question = "" if settings.kernel or settings.run_bundled_source else bundled_source_question(self.bundle)
        if question:  # a received bundle: its copy of the user's file is its sender's code, ask first
            from kernelscope.ui.screens.dialogs import ConfirmScreen

            def answered(yes: bool | None) -> None:
                if yes:
                    self.settings.run_bundled_source = True
                    self._start(BenchSettings(**{**settings.__dict__, "run_bundled_source": True}))
                else:
                    self._set_status("not run: the bundle's copy of the captured file was not agreed to · "
                                     "r: ask again")

            self.app.push_screen(ConfirmScreen(question), answered)
            return
        self._bench = Bench(self.bundle.root, settings, on_event=self._on_event)
        what = "sweep" if settings.sweep else (f"kernel {settings.kernel}" if settings.kernel else "eager vs compiled")
        self._set_status(f"bench ({what}) starting: a child process imports torch … · c: cancel")
        self._run_worker(self._bench)

    def _on_event(self, event: dict) -> None:
        self.post_message(self.Progress(f"{event.get('phase', '')}: {event.get('message', '')} · c: cancel"))

    @work(thread=True, exclusive=True, exit_on_error=False, group="bench")
    def _run_worker(self, bench: Bench) -> None:
        try:
            result = bench.run()
        except (BenchError, BundleError) as exc:
            self.post_message(self.Finished("failed", str(exc)))
            return
        except Exception as exc:
            self.post_message(self.Finished("crashed", f"{exc.__class__.__name__}: {exc}"))
            return
        where = f"saved in {result.saved_to}" if result.saved_to else result.not_saved
        stored = None
        if result.status == "ok" and not result.not_saved:  # what the bundle holds now, read here, off the UI thread
            try:
                stored = read_bundle(self.bundle.root).extra.get("bench")
            except BundleError as exc:
                self.post_message(self.Finished("failed", str(exc)))
                return
        self.post_message(self.Finished(result.status, result.message or f"done in {result.seconds:.1f} s, {where}",
                                        result.record, result.not_saved, stored))

    @on(Progress)
    def _progress(self, message: Progress) -> None:
        if self.running:
            self._set_status(message.text)

    @on(Finished)
    def _finished(self, message: Finished) -> None:
        self._bench = None
        if message.status == "ok":
            if message.not_saved:  # a read-only bundle: show the results all the same, from memory
                self.bundle.extra["bench"] = merge(self.bundle.extra.get("bench") or {}, message.record or {})
            else:
                # Into the bundle the explorer (and P, Info, the source gutter) holds too, not a copy of it:
                # a new object left every other view on "not benched" until the bundle was reopened.
                self.bundle.extra["bench"] = message.stored
            self.query_one("#bench-text", Static).update(self.results_text())
            self.post_message(BenchFinished(self.bundle))
            self._set_status(f"bench {message.text} · " + self._idle_status())
        else:
            # The runner speaks to the command line; here the device is the v key.
            self._set_status(f"bench {message.status}: " + message.text.replace("use --device cpu", "v: bench on cpu"))


_COLUMN_GAP = re.compile(r"\S {2,}(?=\S)")
_FACT_GAP = re.compile(r" {2,}")
# A number and its unit stay on one line ("3.2" / "µs" read as two facts): joined while wrapping.
_NUMBER_UNIT = re.compile(r"(\d) (?=(?:µs|ms|ns|s|B|KB|MB|GB|GB/s|TB/s|MHz|W|C)(?:\W|$))")


def _wrap(text: str, width: int, **kwargs) -> list[str]:
    joined = _NUMBER_UNIT.sub("\\1\u00a0", text)
    if "  " in joined:  # facts set apart by two spaces (the header's "python 3.11.7"): each kept whole
        joined = "  ".join(fact.replace(" ", "\u00a0") if len(fact) <= width // 2 else fact
                           for fact in _FACT_GAP.split(joined))
    return [line.replace("\u00a0", " ") for line in textwrap.wrap(joined, width, break_on_hyphens=False,
                                                                  break_long_words=False, **kwargs)]


def wrap_prose(text: str, width: int) -> str:
    """``text`` with its prose lines wider than ``width`` wrapped at spaces (under their own indent),
    so that a number at the end of a sentence (the compile time after the speedup) is not cut off;
    table rows (indented, with two or more column gaps) stay as they are, to scroll with ←→."""
    out = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        if line.startswith(" ") and len(_COLUMN_GAP.findall(line)) >= 2:
            # A row whose last column is a sentence (the counts' "why they differ") wraps it under that
            # column; a row of numbers and names stays whole, to scroll with ←→.
            last = list(_COLUMN_GAP.finditer(line))[-1].end()
            tail = line[last:].split()
            if len(tail) >= 4 and last <= width - 24:
                wrapped = _wrap(" ".join(tail), width - last)
                out += [line[:last] + wrapped[0], *(" " * last + w for w in wrapped[1:])]
            else:
                out.append(line)
            continue
        indent = line[:len(line) - len(line.lstrip())]
        out.extend(_wrap(line.strip(), width, initial_indent=indent, subsequent_indent=indent + "  ") or [line])
    return "\n".join(out)


def bundled_source_question(bundle: Bundle) -> str:
    """The question to ask before a bench reruns a received bundle's copy of the captured file (the
    file is not on this machine; the CLI's --run-bundled-source), or "" where there is none to ask."""
    from pathlib import Path

    t = bundle.target or {}
    file = t.get("file")
    if not file or not t.get("name") or not bundle.root or Path(file).is_file():
        return ""
    path = (bundle.source or {}).get("path")
    copy = Path(bundle.root) / path if path else None
    if copy is None or not copy.is_file():
        return ""
    return (f"The captured file {file} is not on this machine. The bundle carries a copy, {copy}, whose "
            "code its sender wrote (read it in 2 Your source). Run that copy to bench it?")
