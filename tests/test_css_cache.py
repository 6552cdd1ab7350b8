"""The parsed CSS kept from one start to the next (kernelscope.ui.textual_private.css_cache): a second start
parses no CSS and draws the same screen, and a cache file that is not what kernelscope wrote is ignored."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from kernelscope.ui.textual_private import FAST, css_cache

from .conftest import GPU_FIXTURES

ROOT = Path(__file__).resolve().parent.parent

# A start of the explorer on a small bundle, in a fresh process: how many CSS sources Textual's parser
# read, and every cell of the first settled screen (text and style).
START = """
import json, sys
import textual.css.stylesheet as stylesheet
from kernelscope.ui.app import KernelscopeApp, make_app
parsed = []
real_parse = stylesheet.parse
def counting_parse(*args, **kwargs):
    parsed.append(1)
    return real_parse(*args, **kwargs)
stylesheet.parse = counting_parse
class Start(KernelscopeApp):
    def _first_frame(self):
        super()._first_frame()
        self.set_timer(0.3, self.done)
    def done(self):
        compositor = self.screen._compositor
        cells = [[[text, str(style or "")] for strip in chop.values() for text, style, _ in (strip or ())]
                 for chop in compositor._render_chops(compositor.size.region, lambda y: True)]
        print(json.dumps({"parsed": len(parsed), "cells": cells, "kept": self.stylesheet.__class__.__name__}))
        self.exit()
app = make_app(sys.argv[1])
app.__class__ = Start
app.run(headless=True, size=(120, 36))
"""


def start(cache: Path) -> dict:
    env = {**os.environ, "KERNELSCOPE_CACHE": str(cache), "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, "-c", START, str(GPU_FIXTURES / "add_relu")], capture_output=True,
                          text=True, env=env, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not FAST.css_cache, reason=f"fast path off: {FAST.describe()}")
def test_a_second_start_parses_no_css_and_draws_the_same_screen(tmp_path):
    first = start(tmp_path)
    assert first["kept"] == "KeptStylesheet"
    assert first["parsed"] >= 20  # the app's, each widget's DEFAULT_CSS, Textual's own (some twice)
    files = list(tmp_path.glob("textual-css-*.pickle"))
    assert len(files) == 1 and files[0].stat().st_mode & 0o077 == 0  # the user's own
    second = start(tmp_path)
    assert second["parsed"] == 0
    assert second["cells"] == first["cells"]


def test_a_cache_file_that_would_run_code_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELSCOPE_CACHE", str(tmp_path))
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    path = css_cache.cache_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps({"variables": (), "entries": {("a", ("b", "c"), False, 0, ""): [Payload()]}}))
    assert css_cache._read(path) is None and not marker.exists()

    class Gadget:  # getattr reaching past the parsed rules (type.__subclasses__ and on): refused
        def __reduce__(self):
            return (getattr, (int, "__class__"))

    path.write_bytes(pickle.dumps({"variables": (), "entries": {}, "x": Gadget()}))
    assert css_cache._read(path) is None
    path.write_bytes(b"\x80\x05not a pickle at all")
    assert css_cache._read(path) is None
    path.write_bytes(pickle.dumps({"variables": (), "entries": {"not a key": []}}))
    assert css_cache._read(path) is None
    path.write_bytes(b"\0" * (css_cache.MAX_BYTES + 1))
    assert css_cache._read(path) is None
    path.unlink()
    os.mkfifo(path)  # a FIFO in its place: refused at once, the start does not wait for a writer
    assert css_cache._read(path) is None


@pytest.mark.skipif(not FAST.css_cache, reason=f"fast path off: {FAST.describe()}")
def test_a_start_with_a_damaged_cache_file_parses_as_usual_and_mends_it(tmp_path):
    path = tmp_path / css_cache.cache_file().name
    path.write_bytes(b"garbage")
    first = start(tmp_path)
    assert first["parsed"] >= 20 and first["cells"]
    assert css_cache._read(path) is not None  # written again, whole
