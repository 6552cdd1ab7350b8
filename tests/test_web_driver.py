"""Served in a browser, the app's stdout is a stream of framed packets to textual-serve. A frame written while a
screenshot's download chunk is on its way must not land inside the chunk: textual-serve's reader would
stop and the page freeze (the download cancelled, no key answered again)."""

from __future__ import annotations

import subprocess
import sys

import textual.constants
from textual.drivers.web_driver import WebDriver

from kernelscope.ui.app import KernelscopeApp
from kernelscope.ui.web_driver import WholePacketWebDriver

from .conftest import REPO

FRAMES, CHUNKS = 300, 100
FRAME = "x" * 20000
CHUNK = "é" * 40000  # 80 kB of UTF-8, more than a pipe takes in one atomic write

# The app's thread writes frames while the driver's input thread writes delivery chunks, as when S is
# pressed in a browser and the notification is drawn during the download.
WRITER = f"""
import asyncio, sys, threading
from textual.drivers.web_driver import WebDriver
from kernelscope.ui.web_driver import WholePacketWebDriver
cls = WholePacketWebDriver if sys.argv[1] == "ours" else WebDriver
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
    assert KernelscopeApp().driver_class is WholePacketWebDriver
    assert issubclass(WholePacketWebDriver, WebDriver)
    monkeypatch.setattr(textual.constants, "DRIVER", None)
    assert KernelscopeApp().driver_class.__module__.startswith("textual.drivers.")
    assert KernelscopeApp().driver_class is not WholePacketWebDriver
