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


# -- serve --log -------------------------------------------------------------------------------------------

def _serve_log(*args: str) -> subprocess.CompletedProcess:
    return kernelscope_cmd("serve", "--port", str(_free_port()), "--log", *args, timeout=60)


def test_log_through_a_symlink_a_fifo_or_a_device_is_refused_at_once(tmp_path):
    import os

    bashrc = tmp_path / "bashrc"
    bashrc.write_text("keep me\n")
    link = tmp_path / "link.log"
    link.symlink_to(bashrc)
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    for path, words in ((link, "is a symlink"), (fifo, "FIFO"), ("/dev/full", "a device")):
        proc = _serve_log(str(path))
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and words in lines[0], proc.stderr
    assert bashrc.read_text() == "keep me\n"


def test_an_existing_log_is_made_0600(tmp_path):
    import os
    import stat

    from kernelscope.safefile import open_private_log

    log = tmp_path / "serve.log"
    log.write_text("old\n")
    log.chmod(0o644)
    os.close(open_private_log(log))
    assert stat.S_IMODE(log.stat().st_mode) == 0o600 and log.read_text() == "old\n"


def test_the_token_is_redacted_from_library_error_reports_and_a_failing_log_is_one_line(tmp_path, capsys):
    import logging
    import os

    from kernelscope.ui.serve import _log_handler

    token = "tok-SECRET-123"
    log = tmp_path / "serve.log"
    handler = _log_handler(os.open(log, os.O_WRONLY | os.O_CREAT, 0o600), token)
    lg = logging.getLogger("kernelscope-test-serve-log")
    lg.addHandler(handler)
    try:
        try:
            raise ValueError(f"Bad status line: b'GET /?token={token} HT\\x01TP/1.1' and {token}")
        except ValueError:
            lg.error("Error handling request", exc_info=True)
        handler.flush()
        text = log.read_text()
        assert "Traceback" in text and "Bad status line" in text and token not in text
        full = _log_handler(os.open("/dev/full", os.O_WRONLY), token)
        lg.addHandler(full)
        lg.error("first")
        lg.error("second")
        err = capsys.readouterr().err
        assert err.count("cannot write the --log file (no space left on the device)") == 1
        assert "Traceback" not in err
    finally:
        lg.handlers.clear()


def test_a_bad_request_line_holding_the_token_never_reaches_the_log(tmp_path):
    log = tmp_path / "serve.log"
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kernelscope", "serve", "--port", str(port), "--log", str(log)],
                            cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        token = re.search(r"\?token=([\w-]+)", line).group(1)
        for raw in (f"GET /?token={token} HT\x01TP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n",
                    f"GET /?token={token} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nBad Header: {token}\r\n\r\n"):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(raw.encode())
                assert s.recv(100).startswith(b"HTTP/1.0 400")
        time.sleep(0.5)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    text = log.read_text()
    assert "Bad status line" in text and "Invalid header token" in text
    assert token not in text and token not in err
