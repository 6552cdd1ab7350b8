"""Textual's internals (kernelscope.ui.textual_private): each fast path on only on the Textual it was checked
against, Textual's stock widgets everywhere else, and the screen the same either way.

The whole-screen comparison moves through GPT-2's kernels with the fast paths on (this process) and off
(a child with KERNELSCOPE_TEXTUAL_FAST=0) and compares every cell of every screen: text, colours, styles
and the offsets mouse selection reads. A Textual upgrade that a fast path no longer matches fails here
(and in tests/test_ui_render_paths.py, path by path) instead of drawing wrong.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

from kernelscope.ui import textual_private
from kernelscope.ui.textual_private import CHECKED_VERSIONS, FAST, FAST_ENV, PATHS, detect, textual_version

from .conftest import GPU_FIXTURES

GPT2 = GPU_FIXTURES / "gpt2"
ROOT = Path(__file__).resolve().parent.parent
KEYS = ["down"] * 6 + ["up", "3", "down", "4", "down", "tab", "tab", "5", "down", "6", "1", "down"]


def test_an_unchecked_textual_gets_every_stock_path():
    paths = detect("7.5.0", environ={})
    assert paths.on == frozenset()
    assert set(paths.why_off) == set(PATHS)
    assert "checked against Textual 8.2.8" in paths.why_off["styles"]
    assert "styles off (checked against Textual 8.2.8 only)" in paths.describe()


@pytest.mark.parametrize("value", ["0", "off", "false"])
def test_the_environment_turns_every_fast_path_off(value):
    paths = detect(CHECKED_VERSIONS[0], environ={FAST_ENV: value})
    assert paths.on == frozenset() and not paths.compositor
    assert paths.why_off["compositor"] == f"{FAST_ENV}={value}"


def test_a_changed_signature_turns_that_path_off_and_names_it(monkeypatch):
    """A checked version whose StylesCache.render_line lost an argument (as 7.5.0's has no native_ansi):
    the line-style path is off and says why; the check of another path does not depend on it."""
    from textual._styles_cache import StylesCache

    def render_line(self, styles, y, size, content_size, padding, base_background, background,
                    render_content_line, border_title, border_subtitle, opacity, ansi_theme):
        raise AssertionError("not called")

    monkeypatch.setattr(StylesCache, "render_line", render_line)
    paths = detect(CHECKED_VERSIONS[0], environ={})
    assert "styles" not in paths.on
    assert "StylesCache.render_line" in paths.why_off["styles"] and "native_ansi" in paths.why_off["styles"]
    if textual_version() in CHECKED_VERSIONS:
        assert paths.on == frozenset(PATHS) - {"styles"}


@pytest.mark.skipif(textual_version() not in CHECKED_VERSIONS or FAST_ENV in os.environ,
                    reason="not the checked Textual, or the fast paths forced off")
def test_on_the_checked_textual_every_fast_path_is_on():
    assert FAST.all_on, FAST.describe()


def test_the_stock_widgets_where_the_fast_paths_are_off():
    """With KERNELSCOPE_TEXTUAL_FAST=0 the explorer's widgets are Textual's own: no subclass of a Textual
    internal is made, and the mixins add nothing."""
    code = """
from textual.widgets import DataTable
from textual.widget import Widget
from kernelscope.ui.textual_private import FAST
from kernelscope.ui.widgets.key_footer import KeyFooter
from kernelscope.ui.widgets.kernel_table import KernelTable
from kernelscope.ui.widgets.code_view import CodeView
from kernelscope.ui.textual_private.styles import styles_cache
own = lambda cls: [c.__name__ for c in cls.__mro__ if c.__module__.startswith("kernelscope")]
print(FAST.on == frozenset(), KeyFooter.__bases__ == (Widget,), own(KernelTable), own(CodeView), styles_cache(True))
"""
    env = {**os.environ, FAST_ENV: "0", "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[0] == ("True True ['KernelTable', 'KnownKernels', '_StockScrollbars', '_StockTableRows'] "
                                          "['CodeView', '_StockScrollbars'] None")


def _explorer_paths(app) -> dict[str, str]:
    """Which class draws what, in a running explorer."""
    screen = app.screen
    fx = screen.query_one("#fx")
    return {"compositor": type(screen._compositor).__name__, "fx scrollbar": type(fx.vertical_scrollbar).__name__,
            "fx styles": type(fx._styles_cache).__name__}


def _record(keys: list[str]) -> dict:
    """Every screen while pressing ``keys`` in the GPT-2 explorer at 160x48 (once lexing ahead is done):
    each line as runs of [text, style, meta] (meta: the offsets a click reads), and the classes used."""
    from kernelscope.ui.app import make_app
    from kernelscope.ui.screens import list_runs
    from kernelscope.ui.screens.explorer import ExplorerScreen

    def lines(screen) -> list[list[list[str]]]:
        compositor = screen._compositor
        out = []
        for chop in compositor._render_chops(compositor.size.region, lambda y: True):
            runs: list[list[str]] = []
            for strip in chop.values():
                for text, style, _ in strip or ():
                    cells = [str(style or ""), repr(style.meta) if style and style._meta else ""]
                    if runs and runs[-1][1:] == cells:
                        runs[-1][0] += text
                    else:
                        runs.append([text, *cells])
            out.append(runs)
        return out

    async def run() -> dict:
        app = make_app(str(GPT2))
        screens = []
        async with app.run_test(size=(160, 48)) as pilot:
            while not isinstance(app.screen, ExplorerScreen):
                await pilot.pause(0)
            await pilot.pause(2.0)  # idle: highlighting ready, the kernel sources lexed ahead
            screens.append(lines(app.screen))
            for key in keys:
                await pilot.press(key)
                await pilot.pause(0.05)
                screens.append(lines(app.screen))
            return {"paths": _explorer_paths(app), "screens": screens}

    # Every key shows in every pane at once: a run of keys (within FOLLOW_QUIET) leaves the panes behind
    # until it stops, and the two UIs' pace differs, so their screens would differ by when, not by what.
    quiet, list_runs.FOLLOW_QUIET = list_runs.FOLLOW_QUIET, 0.0
    try:
        return asyncio.run(run())
    finally:
        list_runs.FOLLOW_QUIET = quiet


@pytest.mark.skipif(not FAST.all_on, reason=f"fast paths off: {FAST.describe()}")
@pytest.mark.slow  # a second UI in a child, every screen compared (seconds)
def test_the_screen_is_the_same_with_the_fast_paths_off(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path / "cache"))
    fast = _record(KEYS)
    code = f"import json; from tests.test_textual_private import _record; print(json.dumps(_record({KEYS!r})))"
    env = {**os.environ, FAST_ENV: "0", "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])), "KERNELSCOPE_CACHE": str(tmp_path / "cache2")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300,
                          cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    stock = json.loads(proc.stdout.strip().splitlines()[-1])
    assert fast["paths"] == {"compositor": "SparseCompositor", "fx scrollbar": "CachedScrollBar",
                             "fx styles": "LineStyles"}
    assert stock["paths"] == {"compositor": "Compositor", "fx scrollbar": "ScrollBar", "fx styles": "StylesCache"}
    assert len(fast["screens"]) == len(stock["screens"]) == len(KEYS) + 1
    for step, (ours, theirs) in enumerate(zip(fast["screens"], stock["screens"])):
        assert len(ours) == len(theirs) == 48
        for y, (a, b) in enumerate(zip(ours, theirs)):
            assert a == [list(run) for run in b], (step, KEYS[step - 1] if step else "open", y)
    texts = {"".join(run[0] for run in line) for screen in fast["screens"] for line in screen}
    assert any("▶" in line for line in texts)  # the selected kernel's mark, among what was compared
    assert len({json.dumps(s) for s in fast["screens"]}) > len(KEYS) // 2  # the screens did change


def test_a_cleared_textual_cache_frees_what_it_held_at_once():
    """clear_lru empties Textual's LRUCache; with its fast path on, what it held goes without a collection."""
    from textual.cache import LRUCache

    from kernelscope.ui.textual_private.lru import clear_lru

    class Value:
        pass

    cache: LRUCache = LRUCache(8)
    values = [Value() for _ in range(5)]
    refs = [weakref.ref(v) for v in values]
    for n, v in enumerate(values):
        cache[n] = v
    del values, v
    gc.disable()
    try:
        clear_lru(cache)
        assert len(cache) == 0
        if FAST.lru:
            assert all(r() is None for r in refs)
    finally:
        gc.enable()
    cache["again"] = 1
    assert cache.get("again") == 1


def test_the_version_range_holds_the_checked_and_the_installed_textual():
    """pyproject's range is true: the Textual the fast paths were checked on and the one the tests run on
    (this one) are inside it."""
    import re

    from packaging.requirements import Requirement

    text = (ROOT / "pyproject.toml").read_text()
    spec = Requirement(re.search(r'"(textual[<>=!~][^"]*)"', text).group(1)).specifier
    assert spec.contains(textual_version()), (str(spec), textual_version())
    assert all(spec.contains(v) for v in CHECKED_VERSIONS), str(spec)
    assert not spec.contains("7.5.0") and not spec.contains("9.0.0")


def test_detection_names_every_path_the_package_documents():
    assert set(textual_private._CHECKS) == set(PATHS)
    for path in PATHS:
        assert f"    {path} " in textual_private.__doc__
        assert (Path(textual_private.__file__).parent / f"{path}.py").is_file()


def test_textual_version_is_read_from_its_dist_info_and_matches_importlib_metadata():
    from importlib.metadata import version

    assert textual_version() == version("textual")
