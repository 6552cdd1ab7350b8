"""Served in a browser, the app's stdout is a stream of framed packets to textual-serve. A frame written while a
screenshot's download chunk is on its way must not land inside the chunk: textual-serve's reader would
stop and the page freeze (the download cancelled, no key answered again). And where textual-serve is gone
without a "quit" (killed), the app ends instead of living on unseen."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
import textual.constants
from textual.drivers.web_driver import WebDriver

from kernelscope.ui.app import KernelscopeApp
from kernelscope.ui.web_driver import ServedWebDriver

from .conftest import REPO

FRAMES, CHUNKS = 300, 100
FRAME = "x" * 20000
CHUNK = "é" * 40000  # 80 kB of UTF-8, more than a pipe takes in one atomic write

# The app's thread writes frames while the driver's input thread writes delivery chunks, as when S is
# pressed in a browser and the notification is drawn during the download.
WRITER = f"""
import asyncio, sys, threading
from textual.drivers.web_driver import WebDriver
from kernelscope.ui.web_driver import ServedWebDriver
cls = ServedWebDriver if sys.argv[1] == "ours" else WebDriver
async def make():
    return cls(object(), size=(80, 24))
driver = asyncio.run(make())
go = threading.Event()
def frames():
    go.wait()
    for _ in range({FRAMES}):
        driver.write("x" * {len(FRAME)})
def chunks():
    go.wait()
    for _ in range({CHUNKS}):
        driver.write_binary_encoded(("deliver_chunk", "key", "\\u00e9" * {len(CHUNK)}))
threads = [threading.Thread(target=f) for f in (frames, chunks)]
for t in threads:
    t.start()
go.set()
for t in threads:
    t.join()
"""


def whole_packets(which: str) -> bool:
    """Whether every packet the driver wrote arrived whole (as textual-serve frames and decodes them)."""
    out = subprocess.run([sys.executable, "-c", WRITER, which], input=b"", capture_output=True, cwd=str(REPO),
                         timeout=120).stdout
    frame = FRAME.encode()
    chunk = b"ts13:deliver_chunks3:keys%d:%se" % (len(CHUNK.encode()), CHUNK.encode())
    seen = {b"D": 0, b"P": 0}
    at = 0
    while at < len(out):
        kind, size = out[at:at + 1], int.from_bytes(out[at + 1:at + 5], "big")
        body = out[at + 5:at + 5 + size]
        at += 5 + size
        if (kind, body) not in ((b"D", frame), (b"P", chunk)):
            return False
        seen[kind] += 1
    return seen == {b"D": FRAMES, b"P": CHUNKS}


def test_frames_and_download_chunks_from_two_threads_reach_the_pipe_whole():
    assert whole_packets("ours")
    # The same writes through Textual's own WebDriver do interleave (the reason for ours): without it this
    # test would not show anything.
    assert not all(whole_packets("stock") for _ in range(3))


def test_the_served_app_runs_the_whole_packet_driver_and_a_terminal_keeps_its_own(monkeypatch):
    monkeypatch.setattr(textual.constants, "DRIVER", "textual.drivers.web_driver:WebDriver")
    assert KernelscopeApp().driver_class is ServedWebDriver
    assert issubclass(ServedWebDriver, WebDriver)
    monkeypatch.setattr(textual.constants, "DRIVER", None)
    assert KernelscopeApp().driver_class.__module__.startswith("textual.drivers.")
    assert KernelscopeApp().driver_class is not ServedWebDriver


def test_the_served_app_ends_when_textual_serve_is_gone_without_a_quit():
    """textual-serve killed (or crashed): the app's stdin ends with no "quit" packet. The app must not live on
    unseen (with its capture children and their memory)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "KERNELSCOPE_SERVE": "1", "COLUMNS": "80", "ROWS": "24",
           "TEXTUAL_DRIVER": "textual.drivers.web_driver:WebDriver", "TEXTUAL_COLOR_SYSTEM": "truecolor"}
    app = subprocess.Popen([sys.executable, "-m", "kernelscope"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, cwd=str(REPO), env=env)
    seen = bytearray()
    drawn = threading.Event()

    def read() -> None:  # as textual-serve does, so the app never blocks on a full pipe
        while chunk := app.stdout.read1(65536):
            seen.extend(chunk)
            if b"Pick" in seen:  # the gallery's first frame
                drawn.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert drawn.wait(60), "the served gallery drew no frame"
        app.stdin.close()  # the server is gone
        try:
            app.wait(30)
        except subprocess.TimeoutExpired:
            pytest.fail("the served app lived on 30 s after its server was gone")
    finally:
        if app.poll() is None:
            app.kill()
            app.wait()
