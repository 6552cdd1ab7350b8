"""Pilot tests: the one-widget footer (keys that fit whole, a click presses the key, keys follow the focus)
and a megabytes-long output code read after the explorer's first frame (issue 21, fast open)."""

from __future__ import annotations

import asyncio
import shutil

import pytest

from kernelscope.ui.app import KernelscopeApp, make_app
from kernelscope.ui.panes.output import AFTER_FIRST_FRAME_BYTES
from kernelscope.ui.screens.explorer import ExplorerScreen
from kernelscope.ui.screens.keys import KeysScreen
from kernelscope.ui.textual_private import FAST

from .conftest import GPU_FIXTURES

NARROW, WIDE = (80, 24), (160, 48)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))


def explorer(path, steps, size=NARROW, app_class=None):
    async def run():
        app = make_app(str(path))
        if app_class is not None:
            app.__class__ = app_class
        async with app.run_test(size=size) as pilot:
            while not isinstance(app.screen, ExplorerScreen) or app.first_frame_ms is None:
                await pilot.pause(0)
            await pilot.pause()
            await steps(pilot, app)

    asyncio.run(run())


def test_a_click_on_a_footer_key_presses_it():
    async def steps(pilot, app):
        footer = app.screen.query_one("KeyFooter")
        item = next(k for k in footer.items if k.key_display == "?")
        await pilot.click(footer, offset=(item.start + 1, 0))
        await pilot.pause()
        assert isinstance(app.screen, KeysScreen)

    explorer(GPU_FIXTURES / "add_relu", steps)


def test_the_footer_shows_the_focused_panes_keys_and_whole_keys_only():
    async def steps(pilot, app):
        footer = app.screen.query_one("KeyFooter")
        assert footer.labels()[:3] == ["⏎ Kernel", "y Copy", "/ Find"]
        assert footer.render().cell_len <= NARROW[0]
        last = footer.items[-1]
        # not cut at the edge: the key alone (a group's) or the key and its whole label
        assert footer.render().plain[last.start:last.end].strip() in (last.key_display,
                                                                      f"{last.key_display} {last.description}")
        await pilot.press("3")  # the FX graph: its own keys come first
        await pilot.pause()
        assert footer.labels()[0] == "⏎ Follow"
        await pilot.resize_terminal(*WIDE)
        await pilot.pause()
        await pilot.pause()
        assert footer.shown_keys()[-1] == "^p" and len(footer.items) > 10

    explorer(GPU_FIXTURES / "add_relu", steps)


class FirstFrame(KernelscopeApp):
    """Records what the output pane shows when the first frame is drawn."""

    seen: dict = {}

    def _first_frame(self) -> None:
        view = self.screen.query_one("#output")
        FirstFrame.seen = {"placeholder": view.placeholder if view.is_placeholder else None, "lines": len(view.doc)}
        super()._first_frame()


def test_a_megabytes_long_output_code_is_read_after_the_first_frame(tmp_path):
    bundle = tmp_path / "big"
    shutil.copytree(GPU_FIXTURES / "add_relu", bundle)
    code = bundle / "graphs" / "0-0-inference" / "output_code.py"
    text = code.read_text()
    code.write_text(text + "# padding\n" * (AFTER_FIRST_FRAME_BYTES // 10 + 1))

    async def steps(pilot, app):
        assert FirstFrame.seen["placeholder"].startswith("Reading the output code (1.")
        for _ in range(5):
            await pilot.pause()
        view = app.screen.query_one("#output")
        kernel = app.screen.kernel
        assert not view.is_placeholder and len(view.doc) > 100_000
        assert view.cursor == kernel.call_line - 1  # at the launch, as when read at once
        assert app.filled_ms is not None and app.filled_ms >= app.first_frame_ms

    explorer(bundle, steps, WIDE, FirstFrame)


def test_a_small_output_code_is_in_the_first_frame():
    async def steps(pilot, app):
        assert FirstFrame.seen["placeholder"] is None and FirstFrame.seen["lines"] > 20

    explorer(GPU_FIXTURES / "add_relu", steps, WIDE, FirstFrame)


def screen_text(screen) -> list[str]:
    """The screen's cells as text lines, as its compositor has them now (what the last paint sent)."""
    compositor = screen._compositor
    return ["".join(text for strip in chop.values() for text, _, _ in (strip or ()))
            for chop in compositor._render_chops(compositor.size.region, lambda y: True)]


class Painted(KernelscopeApp):
    """Records the text of every frame painted of the explorer."""

    frames: list = []

    def _display(self, screen, renderable) -> None:
        super()._display(screen, renderable)
        if renderable is not None and isinstance(screen, ExplorerScreen):
            Painted.frames.append(screen_text(screen))


@pytest.mark.skipif(not FAST.first_paint, reason=f"fast path off: {FAST.describe()}")
@pytest.mark.parametrize("size", [WIDE, NARROW])
def test_the_first_frame_painted_is_the_settled_one(size):
    """The explorer's widgets fit themselves to their size (the kernel list's names, the cursor line in
    view): the first frame painted already shows that, not full-width names a later frame replaces."""
    Painted.frames = []

    async def steps(pilot, app):
        for _ in range(3):
            await pilot.pause(0.05)
        first, settled = Painted.frames[0], screen_text(app.screen)
        table = app.screen.query_one("#kernels")
        assert table._name_width is not None  # GPT-2's names are cut to fit, in the first frame too
        assert any("moved" in line and "line" in line for line in first)
        assert first == settled

    explorer(GPU_FIXTURES / "gpt2", steps, size, Painted)


@pytest.mark.skipif(not FAST.first_paint, reason=f"fast path off: {FAST.describe()}")
def test_the_settled_frame_does_not_wait_for_the_frame_clock(monkeypatch):
    """The explorer's settled frame is painted once its widgets have handled their Resize, not at the next
    tick of Textual's update timer: with that timer ticking every 30 s, the first frame still comes at once
    (and it is the settled one)."""
    import textual.screen

    monkeypatch.setattr(textual.screen, "UPDATE_PERIOD", 30.0)
    Painted.frames = []

    async def run():
        app = make_app(str(GPU_FIXTURES / "gpt2"))
        app.__class__ = Painted
        async with app.run_test(size=WIDE):
            loop = asyncio.get_running_loop()
            start = loop.time()
            while app.first_frame_ms is None and loop.time() - start < 10:
                await asyncio.sleep(0.01)
            assert app.first_frame_ms is not None, "the first frame waited for the update timer"
            assert loop.time() - start < 10
            assert Painted.frames and any("moved" in line and "line" in line for line in Painted.frames[0])
            app.exit()  # at once: before the collector, paused until the first frame, is back on

    asyncio.run(run())
    import gc

    assert gc.isenabled()  # the app that ended gave it back
