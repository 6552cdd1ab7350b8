"""Served in a browser: Textual's WebDriver, with each packet written whole and an end when the server is gone.

textual-serve reads the app's stdout as framed packets (a type byte, a 4-byte length, the payload). Textual's
WebDriver writes frames from the app's thread and a delivered file's chunks (a screenshot's download) from
its input thread, each with one ``os.write`` of the whole packet. On a pipe a write longer than PIPE_BUF
(4 KiB) is not atomic: a frame written while a 64 KiB chunk is on its way lands inside it. textual-serve's
decoder then fails, its reader stops, and the page freezes: the download is cancelled after 4 s and no key
is answered again (seen about one screenshot in ten on a 2-core machine). Here the three public write
methods take one lock, so packets reach the pipe one after the other.

textual-serve ends a session by sending "quit". Where it is gone without one (killed, crashed), the app's
stdin ends and WebDriver's input thread returns, but nothing tells the app: it lived on, unseen, with its
capture or bench children and their GPU memory. Here the end of stdin ends the app.

Checked against Textual 8.2.8 with textual-serve 1.1.3.
"""

from __future__ import annotations

import threading

from textual import messages
from textual.drivers.web_driver import WebDriver


class ServedWebDriver(WebDriver):
    """A WebDriver whose packets never interleave on the pipe to textual-serve, and which ends the app when
    textual-serve is gone."""

    def __init__(self, *args, **kwargs) -> None:
        self._packet_lock = threading.Lock()  # before the base class, which may write
        super().__init__(*args, **kwargs)

    def write(self, data: str) -> None:
        with self._packet_lock:
            super().write(data)

    def write_meta(self, data: dict[str, object]) -> None:
        with self._packet_lock:
            super().write_meta(data)

    def write_binary_encoded(self, data: tuple[str | bytes, ...]) -> None:
        with self._packet_lock:
            super().write_binary_encoded(data)

    def run_input_thread(self) -> None:
        super().run_input_thread()
        if not self.exit_event.is_set():  # stdin ended, not the app: textual-serve is gone
            try:
                self.send_message(messages.ExitApp())
            except RuntimeError:  # the app's loop closed meanwhile: it is ending anyway
                pass


def served_driver(driver_class: type) -> type:
    """The driver class to run: ours in place of Textual's WebDriver (a subclass of it is left alone:
    somebody chose it)."""
    return ServedWebDriver if driver_class is WebDriver else driver_class
