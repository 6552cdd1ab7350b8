"""The kernelscope app: entry points (gallery, capture then open, open a bundle) and the flows
between screens (capture, recompile with options, edit and recompile). ``make_app`` is shared
by the CLI, ``kernelscope serve`` and the tests. Imports neither torch nor triton.
"""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import App
from textual.binding import Binding

from kernelscope.ui import textdoc
from kernelscope.ui.capture_request import CaptureRequest

if TYPE_CHECKING:
    import argparse

    from kernelscope.bundle.model import Bundle

MANIFEST = "bundle.json"  # kernelscope.bundle.io's name for it; the bundle modules load on first open

_T_IMPORT = time.perf_counter()


def is_bundle_path(what: str) -> bool:
    p = Path(what).expanduser()
    return (p.is_dir() and (p / MANIFEST).is_file()) or (p.is_file() and p.name == MANIFEST)


def _commands_provider():
    """The palette's provider, imported when the palette first opens (textual.command is not small)."""
    from kernelscope.ui.commands import KernelscopeCommands

    return KernelscopeCommands


class KernelscopeApp(App):
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
    ]

    def __init__(self, *, bundle: Bundle | None = None, request: CaptureRequest | None = None,
                 presentation: bool = False, theme: str | None = None) -> None:
        super().__init__()
        self.start_bundle = bundle
        self.start_request = request
        self.presentation = presentation
        self.theme = theme or os.environ.get("KERNELSCOPE_THEME") or "textual-dark"
        self.first_frame_ms: float | None = None
        self.highlighting_ready = False  # set once lexers may run (a frame after the first)

    def on_mount(self) -> None:
        # Start-up allocates many long-lived objects (imports, a 100k-line text split into lines):
        # the cyclic GC would walk them again and again for nothing. Freeze what exists, pause the
        # collector until the first frame is drawn, then let it run as usual.
        gc.freeze()
        self._gc_was_enabled = gc.isenabled()
        gc.disable()
        textdoc.defer_lexers(True)
        if self.start_bundle is not None:
            self.show_bundle(self.start_bundle)
        else:
            from kernelscope.ui.screens.gallery import GalleryScreen

            self.push_screen(GalleryScreen())
            if self.start_request is not None:
                self.run_capture(self.start_request)
        self.call_after_refresh(self._first_frame)

    def _first_frame(self) -> None:
        self.first_frame_ms = (time.perf_counter() - _T_IMPORT) * 1000
        self.log(f"kernelscope: first frame {self.first_frame_ms:.0f} ms after import")
        self.set_timer(0.01, self._allow_highlighting)

    def _allow_highlighting(self) -> None:
        from kernelscope.ui.widgets.code_view import CodeView

        if getattr(self, "_gc_was_enabled", False):
            gc.enable()
        textdoc.defer_lexers(False)
        for screen in self.screen_stack:
            for view in screen.query(CodeView):
                view.rehighlight()
        self.highlighting_ready = True

    # -- flows -----------------------------------------------------------------------------------
    def show_bundle(self, bundle: Bundle, *, previous: Bundle | None = None,
                    request: CaptureRequest | None = None) -> None:
        from kernelscope.ui.screens.explorer import ExplorerScreen

        screen = ExplorerScreen(bundle, previous=previous, request=request)
        if isinstance(self.screen, ExplorerScreen):
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    def open_bundle(self, path: str) -> None:
        from kernelscope.bundle.io import BundleError, read_bundle

        try:
            bundle = read_bundle(Path(path).expanduser())
        except BundleError as exc:
            self.notify(str(exc), severity="error", timeout=8, markup=False)
            return
        self.show_bundle(bundle)

    def open_anything(self, value: str) -> None:
        """A bundle folder opens; anything else is taken as a target to capture."""
        if Path(value).expanduser().exists():
            self.open_bundle(value)
        else:
            self.run_capture(CaptureRequest(target=value))

    def run_capture(self, request: CaptureRequest, *, previous: Bundle | None = None, previous_screen=None) -> None:
        from kernelscope.ui.screens.capture import CaptureOutcome, CaptureScreen
        from kernelscope.ui.screens.editor import EditorScreen
        from kernelscope.ui.screens.explorer import ExplorerScreen

        if previous is None:
            under = previous_screen or self.screen
            if isinstance(under, ExplorerScreen):
                previous = under.bundle
            elif isinstance(under, EditorScreen):
                previous = getattr(under, "last_bundle", None)

        def done(outcome: CaptureOutcome | None) -> None:
            if outcome is None:
                return
            if isinstance(self.screen, EditorScreen):
                self.screen.last_bundle = outcome.bundle
                from kernelscope.ui.screens.explorer import ExplorerScreen as Explorer

                self.push_screen(Explorer(outcome.bundle, previous=previous, request=outcome.request))
                return
            self.show_bundle(outcome.bundle, previous=previous, request=outcome.request)

        self.push_screen(CaptureScreen(request), done)

    def recompile(self, request: CaptureRequest, explorer=None, *, ask: bool) -> None:
        previous = explorer.bundle if explorer is not None else None
        if not ask:
            self.run_capture(request.with_options(out=None), previous=previous)
            return
        from kernelscope.ui.screens.options import OptionsScreen

        def submitted(req: CaptureRequest | None) -> None:
            if req is not None:
                self.run_capture(req.with_options(out=None), previous=previous)

        self.push_screen(OptionsScreen(request), submitted)

    def edit(self, request: CaptureRequest, explorer=None) -> None:
        from kernelscope.target import TargetError, resolve_target
        from kernelscope.ui.screens.editor import EditorScreen

        try:
            target = resolve_target(request.target)
        except TargetError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        origin = request.origin_file or target.file
        scratch = Path(target.file) if request.origin_file else None
        editor = EditorScreen(request, origin_file=origin, name=target.name, scratch=scratch,
                              first_line=target.first_line)
        editor.last_bundle = explorer.bundle if explorer is not None else None
        self.push_screen(editor)

    def action_back(self) -> None:
        from kernelscope.ui.screens.gallery import GalleryScreen

        if len(self.screen_stack) > 2:
            self.pop_screen()
        else:
            self.switch_screen(GalleryScreen())

    # -- app-wide keys ---------------------------------------------------------------------------
    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.current_theme.dark else "textual-dark"

    def action_presentation(self) -> None:
        self.presentation = not self.presentation
        for screen in self.screen_stack:
            if hasattr(screen, "_apply_layout"):
                screen._apply_layout()
        self.notify("presentation mode: two big panes, no chrome (P again to leave)" if self.presentation
                    else "presentation mode off", timeout=2)

    def action_screenshot(self) -> None:
        from kernelscope.ui.paths import screenshots_dir

        path = self.save_screenshot(path=str(screenshots_dir()))
        self.notify(f"screenshot saved: {path}", timeout=6)

    def action_keys(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()


def make_app(what: str | None = None, *, bundle: Bundle | None = None, request: CaptureRequest | None = None,
             presentation: bool = False, theme: str | None = None) -> KernelscopeApp:
    """The app for ``kernelscope [WHAT]``: a bundle path opens it, a target captures it, None is the gallery.

    Raises BundleError / TargetError with one line when ``what`` is neither.
    """
    if what is not None and bundle is None and request is None:
        from kernelscope.bundle.io import read_bundle

        if is_bundle_path(what):
            bundle = read_bundle(Path(what).expanduser())
        elif Path(what).expanduser().is_dir():
            bundle = read_bundle(Path(what).expanduser())  # raises: "not a kernelscope bundle"
        else:
            request = CaptureRequest(target=what)
    return KernelscopeApp(bundle=bundle, request=request, presentation=presentation, theme=theme)


def request_from_args(args: argparse.Namespace) -> CaptureRequest:
    """The CLI's capture options as a request. A bad args spec is kept, and shown in the UI."""
    import argparse

    from kernelscope.cli import capture_options_from
    from kernelscope.target import TargetError, resolve_target

    target = resolve_target(args.what)
    args_text = args.args_spec if args.args_spec is not None else str(target.sample_options.get("args") or "")
    req = CaptureRequest(target=args.what, args_text=args_text, out=args.out)
    try:
        opts, _ = capture_options_from(args, target)
    except TargetError:
        opts, _ = capture_options_from(argparse.Namespace(**{**vars(args), "args_spec": None}), target)
    return req.with_options(mode=opts.mode, dynamic=opts.dynamic, fullgraph=opts.fullgraph, backward=opts.backward,
                            device=opts.device, passes=opts.passes, timeout=opts.timeout, no_grad=opts.no_grad,
                            inference_mode=opts.inference_mode, eval=opts.eval, preview=opts.preview)


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
