"""`kernelscope serve`: the UI in a browser, on loopback only."""

import re
import socket
import subprocess
import sys
import time
import urllib.request

from .conftest import REPO, kernelscope_cmd


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_answers_an_http_request_with_the_apps_page():
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kernelscope", "serve", "--port", str(port)], cwd=str(REPO),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        page = ""
        deadline = time.time() + 60
        url = ""
        while time.time() < deadline and "token=" not in url:  # the URL to open, with its token
            url = proc.stderr.readline()
            if not url and proc.poll() is not None:
                raise AssertionError("serve exited before printing its URL")
        url = re.search(r"http://\S+", url).group(0)
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=5) as resp:
                    assert resp.status == 200
                    page = resp.read().decode("utf-8", "replace")
                    break
            except OSError:
                if proc.poll() is not None:
                    raise AssertionError(f"serve exited: {proc.stderr.read()}") from None
                time.sleep(0.5)
        assert "<title>kernelscope</title>" in page or "kernelscope" in page
        assert "textual" in page.lower()  # the textual-serve client that runs the app in the page
    finally:
        proc.terminate()
        proc.wait(10)


def test_serve_refuses_a_non_loopback_address():
    proc = kernelscope_cmd("serve", "--host", "0.0.0.0", "--port", "8123", timeout=60)
    assert proc.returncode == 2 and "only loopback" in proc.stderr and "Traceback" not in proc.stderr
