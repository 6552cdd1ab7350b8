"""The served page in a real browser (Debian's headless chromium), driven as a speaker would, over the
DevTools protocol (a small client on aiohttp, which textual-serve brings). Skipped where no chromium is
installed (`apt-get install chromium`)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from .conftest import GPU_FIXTURES, REPO
from .test_talk import svg_text

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium installed (apt-get install chromium)")
aiohttp = pytest.importorskip("aiohttp", reason="the browser test talks to chromium through aiohttp")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--window-size=1280,720",
         # Nothing but this machine: a page that needed an outside server would not render.
         "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"]
LOCAL = {"127.0.0.1", "localhost", "[::1]", "::1"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_serve(*args: str) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen([sys.executable, "-m", "kernelscope", "serve", "--port", str(port), *args],
                            cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.time() + 30
    while time.time() < deadline:
        line = proc.stderr.readline()
        m = re.search(r"http://\S+token=\S+", line)
        if m:
            return proc, m.group(0)
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError("serve did not print its URL")


class Chromium:
    """Headless chromium with a DevTools endpoint: one page session and the browser session."""

    def __init__(self, downloads: Path) -> None:
        self.profile = tempfile.mkdtemp(prefix="ks-chromium-")
        self.downloads = downloads
        self.proc = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}",
                                      "--remote-debugging-port=0", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.requests: list[str] = []
        self.body_classes = ""
        self.downloads_seen: list[str] = []  # Browser.download* events, for the message when one never came
        self._id = 0

    async def __aenter__(self):
        deadline = time.time() + 30
        browser_ws = None
        while time.time() < deadline and browser_ws is None:
            line = await asyncio.to_thread(self.proc.stderr.readline)
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                browser_ws = m.group(1)
        assert browser_ws, "chromium did not open its DevTools endpoint"
        self.session = aiohttp.ClientSession()
        port = urlparse(browser_ws).port
        pages = []
        while not pages and time.time() < deadline:
            try:
                async with self.session.get(f"http://127.0.0.1:{port}/json/list") as resp:
                    pages = [t for t in await resp.json() if t["type"] == "page"]
            except aiohttp.ClientError:
                await asyncio.sleep(0.2)
        self.browser = await self.session.ws_connect(browser_ws, max_msg_size=0)
        self.page = await self.session.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0)
        self.pending: dict[int, asyncio.Future] = {}
        self.readers = [asyncio.create_task(self._read(ws)) for ws in (self.browser, self.page)]
        await self.send(self.browser, "Browser.setDownloadBehavior", behavior="allow",
                        downloadPath=str(self.downloads), eventsEnabled=True)
        # Every target the page opens (the screenshot's download tab too) is watched for requests.
        await self.send(self.browser, "Target.setDiscoverTargets", discover=True)
        await self.send(self.page, "Network.enable")
        await self.send(self.page, "Page.enable")
        return self

    async def __aexit__(self, *exc):
        for task in self.readers:
            task.cancel()
        await self.session.close()
        self.proc.kill()
        self.proc.wait(10)
        shutil.rmtree(self.profile, ignore_errors=True)

    async def _read(self, ws) -> None:
        async for msg in ws:
            data = json.loads(msg.data)
            if "id" in data and data["id"] in self.pending:
                self.pending.pop(data["id"]).set_result(data)
            elif data.get("method") == "Network.requestWillBeSent":
                self.requests.append(data["params"]["request"]["url"])
            elif data.get("method") in ("Browser.downloadWillBegin", "Browser.downloadProgress"):
                state = data["params"].get("state") or data["params"].get("suggestedFilename")
                if not self.downloads_seen or self.downloads_seen[-1] != state:
                    self.downloads_seen.append(state)
            elif data.get("method") in ("Target.targetCreated", "Target.targetInfoChanged"):
                url = data["params"]["targetInfo"].get("url", "")
                if url.startswith("http"):
                    self.requests.append(url)

    async def send(self, ws, method: str, **params):
        self._id += 1
        fut = asyncio.get_running_loop().create_future()
        self.pending[self._id] = fut
        await ws.send_json({"id": self._id, "method": method, "params": params})
        reply = await asyncio.wait_for(fut, 60)  # generous: CI shares 2 cores with session fixtures
        assert "error" not in reply, f"{method}: {reply['error']}"
        return reply.get("result", {})

    async def js(self, expression: str):
        result = await self.send(self.page, "Runtime.evaluate", expression=expression, awaitPromise=True,
                                 returnByValue=True)
        return result["result"].get("value")

    async def wait_for(self, expression: str, timeout: float = 60) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            if await self.js(expression):
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"timed out waiting for {expression}")

    async def key(self, key: str, code: str, vk: int, text: str = "") -> None:
        """A key press as the keyboard makes it (to whatever has focus: no click first)."""
        down = {"type": "keyDown", "key": key, "code": code, "windowsVirtualKeyCode": vk}
        if text:
            down["text"] = text
        await self.send(self.page, "Input.dispatchKeyEvent", **down)
        await self.send(self.page, "Input.dispatchKeyEvent", type="keyUp", key=key, code=code, windowsVirtualKeyCode=vk)

    async def screenshot_svg(self, timeout: float = 60) -> str:
        """Press S and read the SVG the app delivers to the browser's downloads (S again every 5 s
        while none came: a machine under load may still be drawing the first frame)."""
        before = set(self.downloads.glob("*.svg"))
        deadline = time.time() + timeout
        pressed = 0.0
        while time.time() < deadline:
            if time.time() - pressed > 5:
                await self.key("S", "KeyS", 83, "S")
                pressed = time.time()
            new = [p for p in self.downloads.glob("*.svg") if p not in before]
            if new:
                await asyncio.sleep(0.2)
                return new[0].read_text(encoding="utf-8")
            await asyncio.sleep(0.1)
        raise AssertionError(f"no screenshot arrived in the browser's downloads (download events: {self.downloads_seen}; "
                             f"files: {sorted(p.name for p in self.downloads.iterdir())})")


@pytest.mark.slow  # starts a headless chromium (seconds)
def test_served_page_is_all_local_takes_keys_without_a_click_and_escape_never_ends_it(tmp_path):
    log = tmp_path / "serve.log"
    serve, url = start_serve(str(GPU_FIXTURES / "add_relu"), "--big", "--log", str(log))
    t0 = time.time()

    async def run():
        async with Chromium(tmp_path) as browser:
            await browser.send(browser.page, "Page.navigate", url=url)
            await browser.wait_for("document.body && document.body.classList.contains('-first-byte')")
            # The web font came from this server: the grid is the same online and offline.
            assert await browser.js("document.fonts.check('20px \"Roboto Mono\"')")
            assert await browser.js("document.querySelector('#terminal').dataset.fontSize") == "20"
            await asyncio.sleep(1.0)  # the first frames of the app
            assert "xterm-helper-textarea" in await browser.js("document.activeElement.className")
            # Keys without a click: S delivers presentation mode's screenshot to the browser.
            shown = svg_text(await browser.screenshot_svg())
            for words in ("eager 2 kernels / 5 transfers", "compiled 1 kernel / 3 transfers",
                          "return (a + b).relu()", "triton_poi_fused_add_relu_0", "tl.load"):
                assert "".join(words.split()) in shown, words
            # Escape, again and again: presentation -> explorer -> gallery, and the session stays.
            for _ in range(4):
                await browser.key("Escape", "Escape", 27)
                await asyncio.sleep(0.4)
            await asyncio.sleep(1.0)
            assert not await browser.js("document.body.classList.contains('-closed')")
            # ... and still answers keys: the gallery, where the last escapes landed
            assert "Pickasample" in svg_text(await browser.screenshot_svg())
            outside = [u for u in browser.requests
                       if urlparse(u).scheme in ("http", "https", "ws", "wss") and urlparse(u).hostname not in LOCAL]
            assert browser.requests and not outside, outside

    try:
        asyncio.run(run())
    except AssertionError as e:  # what the server saw (a download that stalled, a reader that stopped)
        text = log.read_text(errors="replace") if log.exists() else ""
        said = [line[:300] for line in text.splitlines() if any(w in line for w in (" WARNING ", " ERROR ", "Error: "))]
        raise AssertionError(f"{e}\nserve.log: {said[-12:]}") from None
    finally:
        serve.terminate()
        serve.wait(10)
    assert time.time() - t0 < 60
