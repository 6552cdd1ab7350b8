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
        assert footer.render().plain[last.start:last.end].strip() == last.key_display  # not cut at the edge
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
