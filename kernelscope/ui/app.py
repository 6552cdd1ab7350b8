"""The kernelscope app: entry points (gallery, capture then open, open a bundle), its start-up (the
first frame, the collector, highlighting after it) and the flows between screens (capture, recompile
with options, edit and recompile). What its own keys do is ui/app_keys.py's (AppKeys); their bindings
are here. ``make_app`` is shared by the CLI, ``kernelscope serve`` and the tests. Imports neither torch
nor triton.
"""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kernelscope.ui import kept_code

kept_code.install()  # before Textual is imported: the dataclasses it makes as it loads are made from kept code

from textual import on  # noqa: E402
from textual.app import App  # noqa: E402
from textual.binding import Binding  # noqa: E402
from textual.reactive import reactive  # noqa: E402

from kernelscope.ui import messages, textdoc  # noqa: E402
from kernelscope.ui.app_keys import AppKeys  # noqa: E402
from kernelscope.ui.gcpolicy import YOUNG, collector_paused  # noqa: E402
from kernelscope.ui.textual_private.css_cache import keep_parsed_css, use_kept_stylesheet  # noqa: E402

if TYPE_CHECKING:
    import argparse

    from kernelscope.bundle.model import Bundle
    from kernelscope.ui.capture_request import CaptureRequest  # with capture.spec and target: loaded to capture

MANIFEST = "bundle.json"  # kernelscope.bundle.io's name for it; the bundle modules load on first open

_T_IMPORT = time.perf_counter()
FULL_GC_EVERY = 100  # middle-generation collections between two full ones (Python's default: 10)


def is_bundle_path(what: str) -> bool:
    p = Path(what).expanduser()
    return (p.is_dir() and (p / MANIFEST).is_file()) or (p.is_file() and p.name == MANIFEST)


def _commands_provider():
    """The palette's provider, imported when the palette first opens (textual.command is not small)."""
    from kernelscope.ui.commands import KernelscopeCommands

    return KernelscopeCommands


class KernelscopeApp(AppKeys, App):
    """What did torch.compile do to your function?"""

    CSS_PATH = "app.tcss"
    TITLE = "kernelscope"
    COMMANDS = App.COMMANDS | {_commands_provider}
    BINDINGS = [
        Binding("t", "toggle_theme", "Theme"),
        Binding("P", "presentation", "Presentation", key_display="P"),
        Binding("S", "screenshot", "Screenshot", key_display="S"),
        Binding("question_mark", "keys", "Keys", key_display="?"),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
        # A talk: one key steps (check_action lets them through when no talk runs or an input has focus).
        Binding("space,right", "talk_step(1)", "Next step", show=False, priority=True),
        Binding("left", "talk_step(-1)", "Previous step", show=False, priority=True),
        Binding("q", "talk_quit", "End the talk", show=False, priority=True),  # in a talk only (check_action)
    ]

    # Presentation mode (P, --big): the explorer watches it for its two-big-panes layout.
    presentation: reactive[bool] = reactive(False, init=False)

    def __init__(self, *, bundle: Bundle | None = None, request: CaptureRequest | None = None,
                 presentation: bool = False, theme: str | None = None, talk=None, run_job=None) -> None:
        super().__init__()
        use_kept_stylesheet(self)  # the CSS an earlier start parsed is not parsed again
        self.start_bundle = bundle
        self.start_request = request
        self.start_run = run_job  # a kernelscope.ui.screens.run.RunJob: `kernelscope run` without --no-ui
        self.presentation = presentation
        self.talk = talk  # a kernelscope.ui.talk.Talk, stepped with space / arrows
        self.talk_index = 0
        self._talk_bundles: dict = {}
        # Served in a browser (``kernelscope serve``): quitting asks first, screenshots go to the browser.
        self.served = os.environ.get("KERNELSCOPE_SERVE") == "1"
        wanted = theme or os.environ.get("KERNELSCOPE_THEME") or "textual-dark"
        self.theme_problem = ""  # an unknown theme (KERNELSCOPE_THEME=typo) falls back, and says so
        if wanted not in self.available_themes:
            from kernelscope.textsafe import one_line

            self.theme_problem = (f"theme {one_line(wanted, 60)!r} is not one Textual knows "
                                  f"(KERNELSCOPE_THEME); using textual-dark")
            wanted = "textual-dark"
        self.theme = wanted
        self.first_frame_ms: float | None = None
        self.filled_ms: float | None = None  # when what waited for the first frame (after_first_frame) is drawn
        self._after_first_frame: list = []
        self.highlighting_ready = False  # set once lexers may run (a frame after the first)

    def get_driver_class(self):
        """Textual's choice, with ours in place of the WebDriver (``kernelscope serve``; see ui/web_driver.py)."""
        driver_class = super().get_driver_class()
        if driver_class.__module__ != "textual.drivers.web_driver":
            return driver_class  # a terminal: nothing more is imported
        from kernelscope.ui.web_driver import served_driver

        return served_driver(driver_class)

    def on_mount(self) -> None:
        # Start-up allocates many long-lived objects (imports, a 100k-line text split into lines):
        # the cyclic GC would walk them again and again for nothing. Freeze what exists, pause the
        # collector until the first frame is drawn, then let it run as usual.
        gc.freeze()
        if self.theme_problem:
            self.notify(self.theme_problem, severity="warning")
        self._gc_was_enabled = gc.isenabled()
        gc.disable()
        textdoc.defer_lexers(True)
        if self.talk is not None:
            self.call_later(self.talk_show, 0)
        elif self.start_bundle is not None:
            self.show_bundle(self.start_bundle)
        elif self.start_run is not None:
            self.run_program(self.start_run)
        else:
            from kernelscope.ui.screens.gallery import GalleryScreen

            self.push_screen(GalleryScreen())
            if self.start_request is not None:
                self.run_capture(self.start_request)
        self.call_after_refresh(self._first_frame)

    def _first_frame(self) -> None:
        self.first_frame_ms = (time.perf_counter() - _T_IMPORT) * 1000
        self.log(f"kernelscope: first frame {self.first_frame_ms:.0f} ms after import")
        waiting, self._after_first_frame = self._after_first_frame, []
        for callback in waiting:
            self.call_later(callback)
        self.call_after_refresh(self._filled) if waiting else self._filled()
        self.set_timer(0.01, self._allow_highlighting)

    def after_first_frame(self, callback) -> None:
        """Run ``callback`` once the first frame is drawn (now, if it is): a pane whose text is megabytes
        (a 100k-line output code) fills in then, so the screen around it is not held back."""
        if self.first_frame_ms is None:
            self._after_first_frame.append(callback)
        else:
            callback()

    def _filled(self) -> None:
        self.filled_ms = (time.perf_counter() - _T_IMPORT) * 1000

    def _allow_highlighting(self) -> None:
        from kernelscope.ui.widgets.code_view import CodeView

        keep_parsed_css()  # what this start parsed anew, for the next one (once; a few ms)
        kept_code.release()  # and the code it compiled for dataclasses and named tuples
        self._resume_gc()
        textdoc.defer_lexers(False)
        for screen in self.screen_stack:
            for view in screen.query(CodeView):
                view.rehighlight()
        self.highlighting_ready = True

    def _resume_gc(self) -> None:
        """The collector back on after the first frame (or when the app ends before it: a test, a quick exit)."""
        if getattr(self, "_gc_was_enabled", False):
            self._gc_was_enabled = False
            # What the first screen built (a bundle's index, its texts split into lines, the widgets) lives
            # as long as it does: frozen too, a full collection (every few keys while moving through a
            # model's kernels) no longer walks it, which took up to ~100 ms at a time on a 12-layer GPT-2.
            gc.freeze()
            # And full collections ten times rarer: caches of drawn lines fill as one moves (tens of thousands
            # of small objects), and each full collection walked them all again (50-100 ms, every ~12 keys).
            # Young collections rarer too: the explorer freezes what each move drew (ui/gcpolicy.py), so
            # young objects are only those of the current move.
            _, middle, _ = gc.get_threshold()
            gc.set_threshold(YOUNG, middle, FULL_GC_EVERY)
            gc.enable()

    def on_unmount(self) -> None:
        self._resume_gc()
        textdoc.defer_lexers(False)  # an app ended before its first frame: the next one in this process lexes

    # -- flows -----------------------------------------------------------------------------------
    def show_bundle(self, bundle: Bundle, *, previous: Bundle | None = None,
                    request: CaptureRequest | None = None) -> None:
        from kernelscope.ui.screens.explorer import ExplorerScreen

        screen = ExplorerScreen(bundle, previous=previous, request=request)
        if isinstance(self.screen, ExplorerScreen):
            self.switch_screen(screen)
        else:
            self.push_screen(screen)
        if self.presentation:  # --big: the story first; P or escape shows the explorer under it
            from kernelscope.ui.widgets.presentation import PresentationScreen

            self.push_screen(PresentationScreen(bundle))

    def open_bundle(self, path: str) -> None:
        from kernelscope.bundle.io import BundleError, read_bundle
        from kernelscope.ui.widgets.known_kernels import read_first_frame_kernels

        try:
            with collector_paused():
                bundle = read_bundle(Path(path).expanduser())
                read_first_frame_kernels(bundle)
        except BundleError as exc:
            self.notify(str(exc), severity="error", timeout=8, markup=False)
            return
        self.show_bundle(bundle)

    def open_anything(self, value: str) -> None:
        """A bundle folder opens; anything else is taken as a target to capture."""
        if Path(value).expanduser().exists():
            self.open_bundle(value)
        elif "::" not in value and ("/" in value or value.endswith(".py") or value.startswith("~")):
            # A path that is not there: no capture to start (it said "name the function too").
            self.notify(f"no such folder or file: {value} (open a bundle folder, or capture a sample name "
                        "or path/to/file.py::function)", severity="error")
        else:
            from kernelscope.ui.capture_request import CaptureRequest

            self.run_capture(CaptureRequest(target=value))

    # -- what screens ask for (kernelscope.ui.messages) ----------------------------------------------
    @on(messages.GoBack)
    def _go_back(self) -> None:
        self.action_back()

    @on(messages.OpenBundle)
    def _open_bundle(self, event: messages.OpenBundle) -> None:
        self.open_bundle(event.path)

    @on(messages.OpenAnything)
    def _open_anything(self, event: messages.OpenAnything) -> None:
        self.open_anything(event.value)

    @on(messages.CaptureRequested)
    def _capture_requested(self, event: messages.CaptureRequested) -> None:
        self.run_capture(event.request, previous=event.previous, origin=event.origin if event.over else None)

    @on(messages.RecompileRequested)
    def _recompile_requested(self, event: messages.RecompileRequested) -> None:
        self.recompile(event.request, previous=event.previous, ask=event.ask)

    @on(messages.EditRequested)
    def _edit_requested(self, event: messages.EditRequested) -> None:
        self.edit(event.request, previous=event.previous)

    @on(messages.BenchFinished)
    def _bench_finished(self, event: messages.BenchFinished) -> None:
        """The screens under the bench (the explorer) show its numbers now, not after a reopen."""
        for screen in self.screen_stack:
            changed = getattr(screen, "bench_changed", None)
            if callable(changed):
                changed(event.bundle)

    def run_capture(self, request: CaptureRequest, *, previous: Bundle | None = None, origin=None) -> None:
        """Capture ``request``, then show the bundle. ``origin``: the screen that stays under the result
        (the editor), told of the bundle by a ``CaptureFinished`` message."""
        from kernelscope.ui.screens.capture import CaptureOutcome, CaptureScreen

        if previous is None and origin is None:  # the palette, the command line: compare with what is shown
            previous = getattr(self.screen, "capture_baseline", None)

        def done(outcome: CaptureOutcome | None) -> None:
            if outcome is None:
                return
            if origin is not None:
                origin.post_message(messages.CaptureFinished(outcome.bundle))
                from kernelscope.ui.screens.explorer import ExplorerScreen

                self.push_screen(ExplorerScreen(outcome.bundle, previous=previous, request=outcome.request))
                return
            self.show_bundle(outcome.bundle, previous=previous, request=outcome.request)

        self.push_screen(CaptureScreen(request), done)

    def run_program(self, job) -> None:
        """``kernelscope run``: the program's progress, then the explorer on its bundle (RunScreen)."""
        from kernelscope.ui.screens.run import RunScreen

        def done(result) -> None:
            if result is None or not result.outs:
                return
            self.open_bundle(str(result.outs[0]))
            others = [str(p) for p in result.outs[1:]]
            self.notify(f"{result.message}; the bundle: {result.outs[0]}"
                        + (f" (the other ranks: {', '.join(others)})" if others else ""), timeout=8, markup=False)

        self.push_screen(RunScreen(job), done)

    def recompile(self, request: CaptureRequest, *, previous: Bundle | None = None, ask: bool) -> None:
        if not ask:
            self.run_capture(request.with_options(out=None), previous=previous)
            return
        from kernelscope.ui.screens.options import OptionsScreen

        def submitted(req: CaptureRequest | None) -> None:
            if req is not None:
                self.run_capture(req.with_options(out=None), previous=previous)

        self.push_screen(OptionsScreen(request), submitted)

    def edit(self, request: CaptureRequest, *, previous: Bundle | None = None) -> None:
        from kernelscope.target import TargetError, resolve_target
        from kernelscope.ui.screens.editor import EditorScreen

        try:
            target = resolve_target(request.target)
        except TargetError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        origin = request.origin_file or target.file
        scratch = Path(target.file) if request.origin_file else None
        self.push_screen(EditorScreen(request, origin_file=origin, name=target.name, scratch=scratch,
                                      first_line=target.first_line, last_bundle=previous))

    def action_back(self) -> None:
        from kernelscope.ui.screens.gallery import GalleryScreen

        if len(self.screen_stack) > 2:
            self.pop_screen()
        else:
            self.switch_screen(GalleryScreen())


def make_app(what: str | None = None, *, bundle: Bundle | None = None, request: CaptureRequest | None = None,
             presentation: bool = False, theme: str | None = None, run_job=None) -> KernelscopeApp:
    """The app for ``kernelscope [WHAT]``: a bundle path opens it, a target captures it, None is the gallery.

    Raises BundleError / TargetError with one line when ``what`` is neither.
    """
    if what is not None and bundle is None and request is None:
        from kernelscope.bundle.io import read_bundle

        if is_bundle_path(what) or Path(what).expanduser().is_dir():  # the latter raises: "not a kernelscope bundle"
            from kernelscope.ui.widgets.known_kernels import read_first_frame_kernels

            with collector_paused():  # a job's index: thousands of objects that live as long as the app
                bundle = read_bundle(Path(what).expanduser())
                read_first_frame_kernels(bundle)
        else:
            from kernelscope.ui.capture_request import CaptureRequest

            request = CaptureRequest(target=what)
    return KernelscopeApp(bundle=bundle, request=request, presentation=presentation, theme=theme, run_job=run_job)


def request_from_args(args: argparse.Namespace) -> CaptureRequest:
    """The CLI's capture options as a request. A bad args spec is kept, and shown in the UI."""
    from kernelscope.capture.spec import CaptureSpec, SpecError, args_text_from, options_from_args
    from kernelscope.target import TargetError, resolve_target
    from kernelscope.ui.capture_request import CaptureRequest

    target = resolve_target(args.what)
    opts = options_from_args(args, target)
    text = args_text_from(args, target)
    try:
        CaptureSpec.build(target, text, opts)
    except SpecError:
        raise  # no inputs at all: one line, exit 2
    except TargetError:
        pass  # a bad args spec: kept, and shown in the UI
    return CaptureRequest(target=args.what, args_text=str(text or ""), out=args.out, **vars(opts))


def main(args: argparse.Namespace) -> int:
    """``kernelscope`` (gallery), ``kernelscope TARGET [options]`` (capture, open), ``kernelscope BUNDLE``."""
    what = getattr(args, "what", None)
    presentation = bool(getattr(args, "big", False)) or os.environ.get("KERNELSCOPE_BIG") == "1"
    if what is not None and not is_bundle_path(what) and not Path(what).expanduser().is_dir():
        app = make_app(request=request_from_args(args), presentation=presentation)
    else:
        app = make_app(what, presentation=presentation)
    from kernelscope.capture.lifeline import install_parent_signal_handlers

    install_parent_signal_handlers()  # closing the terminal (SIGHUP) or SIGTERM ends a running capture too
    app.run()
    return int(app.return_code or 0)
