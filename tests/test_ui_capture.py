"""Pilot tests of live capture in the UI: errors as one line, Cancel, the options form, edit and recompile."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
from textual.widgets import Input, TextArea

from kernelscope.ui.app import make_app
from kernelscope.ui.capture_request import CaptureRequest
from kernelscope.ui.screens.capture import CaptureScreen
from kernelscope.ui.screens.editor import EditorScreen
from kernelscope.ui.screens.explorer import ExplorerScreen
from kernelscope.ui.screens.gallery import GalleryScreen
from kernelscope.ui.screens.options import OptionsScreen


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KERNELSCOPE_DEVICE", "cpu")
    return tmp_path / "cache"


def run_app(app, steps, size=(120, 36)):
    async def run():
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await steps(pilot, app)

    asyncio.run(run())


def status(app) -> str:
    return str(app.screen.query_one("#cap-status").render())


async def wait_for(pilot, predicate, timeout: float) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out waiting for the UI"
        await pilot.pause(0.2)


def test_bad_args_spec_is_one_line_then_fixed_in_the_form_and_cancelled(cache):
    app = make_app(request=CaptureRequest(target="add_relu", args_text="f32[abc]", device="cpu"))

    async def steps(pilot, app):
        await wait_for(pilot, lambda: isinstance(app.screen, CaptureScreen) and app.screen.state == "failed", 5)
        text = status(app)
        assert text.startswith("✗ inputs item 1 'f32[abc]': size 'abc' is not a non-negative integer")
        assert "Traceback" not in text and "\n" not in text
        await pilot.press("o")
        await pilot.pause()
        assert isinstance(app.screen, OptionsScreen)
        assert "size 'abc'" in str(app.screen.query_one("#opt-error").render())
        app.screen.query_one("#opt-args", Input).value = ""  # back to the sample's own inputs
        await pilot.press("ctrl+r")
        await pilot.pause()
        capture = app.screen
        assert isinstance(capture, CaptureScreen) and capture.state == "running"
        await pilot.press("escape")  # Cancel right after the child started
        await wait_for(pilot, lambda: capture.state == "cancelled", 20)
        assert "capture cancelled" in status(app)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, GalleryScreen)
        left = list((cache / "captures").glob("*")) if (cache / "captures").exists() else []
        assert left == [], "a cancelled capture left files behind"

    run_app(app, steps)


def test_unknown_target_is_reported_in_the_ui():
    app = make_app("no_such_sample")

    async def steps(pilot, app):
        await wait_for(pilot, lambda: isinstance(app.screen, CaptureScreen) and app.screen.state == "failed", 5)
        assert "no sample named 'no_such_sample'" in status(app)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, GalleryScreen)

    run_app(app, steps)


def test_options_form_rejects_a_bad_spec_without_starting(cache):
    app = make_app()

    async def steps(pilot, app):
        assert isinstance(app.screen, GalleryScreen)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, OptionsScreen)
        await pilot.press(*"q32[4]", "enter")
        await pilot.pause()
        assert isinstance(app.screen, OptionsScreen)
        assert "unknown dtype 'q32'" in str(app.screen.query_one("#opt-error").render())
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, GalleryScreen)
        assert not (cache / "captures").exists() or not list((cache / "captures").iterdir())

    run_app(app, steps)


@pytest.mark.slow
def test_edit_and_recompile_changes_the_kernels_and_never_touches_the_users_file(cpu_add_relu):
    app = make_app(str(cpu_add_relu))
    sample = Path(__file__).resolve().parents[1] / "samples" / "add_relu.py"
    original = sample.read_text()

    async def steps(pilot, app):
        explorer = app.screen
        assert isinstance(explorer, ExplorerScreen)
        await pilot.press("e")
        await pilot.pause()
        editor = app.screen
        assert isinstance(editor, EditorScreen)
        assert editor.scratch != sample and editor.scratch.read_text() == original
        area = editor.query_one(TextArea)
        area.load_text(area.text.replace("return (a + b).relu()", "return torch.sigmoid((a + b).relu() * 2)"))
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, CaptureScreen)
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen), 240)
        new = app.screen
        names = [k.name for k in new.bundle.kernels]
        assert names and all("sigmoid" in n for n in names), names
        assert "before: 1 kernel" in str(new.query_one("#summary").render())
        assert sample.read_text() == original  # the user's file is untouched
        await pilot.press("escape")  # back in the editor, edits kept
        await pilot.pause()
        assert app.screen is editor and "sigmoid" in editor.text
        await pilot.press("ctrl+s")
        await pilot.pause()
        await pilot.press("n")  # declined: still untouched
        await pilot.pause()
        assert sample.read_text() == original

    run_app(app, steps, size=(160, 48))


@pytest.mark.slow  # a real CPU compile
def test_gallery_recents_refresh_after_a_capture_and_say_what_it_was(cache):
    app = make_app()

    async def steps(pilot, app):
        gallery = app.screen
        assert isinstance(gallery, GalleryScreen)
        recent = gallery.query_one("#recent")
        assert "none yet" in str(recent.get_option_at_index(0).prompt)
        samples = gallery.query_one("#samples")
        samples.highlighted = [t.name for t in gallery.samples].index("add_relu")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ExplorerScreen), 300)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, GalleryScreen), 10)
        recent = app.screen.query_one("#recent")
        first = str(recent.get_option_at_index(0).prompt)
        # Name and time first, then inputs, kernels, source hash, flags (issue 23: rows that differ).
        # A line per group of facts (broken between facts, never inside one), the source hash said in words.
        assert re.match(r"add_relu \d\d:\d\d:\d\d · f32\[\d+\], f32\[\d+\]\n1 kernel · cpu · default(?: · in the cache)?"
                        r"\nsource hash [0-9a-f]{4}", first), first

    run_app(app, steps)
