"""`kernelscope serve` against hostile clients: no token, a wrong token, a foreign Origin or Host,
a busy or impossible port. The real server runs in a subprocess on a free loopback port."""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys
import time

import aiohttp
import pytest

from .conftest import REPO, kernelscope_cmd


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """(port, token) of a running `kernelscope serve`; stopped after the module."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kernelscope", "serve", "--port", str(port)], cwd=str(REPO),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 40
        line = ""
        while time.time() < deadline and "token=" not in line:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                raise AssertionError("serve exited before printing its URL")
        match = re.search(rf"http://127\.0\.0\.1:{port}/\?token=([\w-]+)", line)
        assert match, f"no token URL in {line!r}"
        yield port, match.group(1)
    finally:
        proc.terminate()
        proc.wait(10)


async def _get(url: str, **headers: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session:
        async with session.get(url, headers=headers, timeout=aiohttp.ClientTimeout(total=10)) as resp:
            return resp.status, await resp.text()


async def _ws_status(url: str, **headers: str) -> int:
    """101 when the WebSocket upgrade was accepted, else the HTTP status that refused it."""
    async with aiohttp.ClientSession() as session:
        try:
            ws = await session.ws_connect(url, headers=headers, timeout=aiohttp.ClientWSTimeout(ws_close=5))
        except aiohttp.WSServerHandshakeError as exc:
            return exc.status
        await ws.close()
        return 101


def test_the_page_needs_the_token(server):
    port, token = server
    status, text = asyncio.run(_get(f"http://127.0.0.1:{port}/"))
    assert status == 403 and "token" in text
    assert asyncio.run(_get(f"http://127.0.0.1:{port}/?token=wrong{token}"))[0] == 403
    status, page = asyncio.run(_get(f"http://127.0.0.1:{port}/?token={token}"))
    assert status == 200 and "kernelscope" in page and f"ws://127.0.0.1:{port}/ws" in page


def test_the_page_refuses_a_rebound_host(server):
    port, token = server
    status, _ = asyncio.run(_get(f"http://127.0.0.1:{port}/?token={token}", Host=f"evil.example:{port}"))
    assert status == 403


def test_a_socket_without_the_token_or_from_a_foreign_origin_is_refused(server):
    port, token = server
    ws = f"ws://127.0.0.1:{port}/ws"
    assert asyncio.run(_ws_status(ws)) == 403
    assert asyncio.run(_ws_status(f"{ws}?token=not-it")) == 403
    assert asyncio.run(_ws_status(f"{ws}?token={token}", Origin="http://evil.example")) == 403
    assert asyncio.run(_ws_status(f"{ws}?token={token}", Origin=f"http://localhost:{port + 1}")) == 403
    # The page's own origin with the token is let in (the app starts; closing the socket stops it).
    assert asyncio.run(_ws_status(f"{ws}?token={token}", Origin=f"http://127.0.0.1:{port}")) == 101


def test_a_busy_or_impossible_port_is_one_line_and_exit_2():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = kernelscope_cmd("serve", "--port", str(port), timeout=60)
    assert proc.returncode == 2 and f"port {port}" in proc.stderr and "not free" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    for bad in ("0", "70000"):
        proc = kernelscope_cmd("serve", "--port", bad, timeout=60)
        assert proc.returncode == 2 and "out of range" in proc.stderr and "Traceback" not in proc.stderr
