"""The CLI capture's progress lines, with a ticker while a long phase runs (a 30-60 s compile says it
is alive, as the UI's spinner does).

On a terminal the phase's line is redrawn every 0.1 s with a spinner and the seconds it has run; to a
file or pipe a "still compiling" line every 15 s instead, so a log stays short.
"""

from __future__ import annotations

import threading
import time
from typing import TextIO

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICKING_PHASES = ("compile", "backward", "passes")


class Ticker:
    def __init__(self, stream: TextIO, *, every: float | None = None) -> None:
        self.stream = stream
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.every = every if every is not None else (0.1 if self.tty else 15.0)
        self._line = ""
        self._phase = ""
        self._started = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def event(self, line: str, phase: str) -> None:
        """A new progress line: the ticking one (if any) ends, this one ticks when its phase is long."""
        self.stop()
        with self._lock:
            self.stream.write(line + "\n")
            self.stream.flush()
        if phase in TICKING_PHASES:
            self._line, self._phase, self._started = line, phase, time.monotonic()
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None
        if self.tty:
            with self._lock:
                self.stream.write("\r\033[K")  # the ticker's line goes; the event lines stay
                self.stream.flush()

    def _run(self) -> None:
        n = 0
        while not self._stop.wait(self.every):
            n += 1
            elapsed = time.monotonic() - self._started
            with self._lock:
                if self.tty:
                    self.stream.write(f"\r\033[K  {SPINNER[n % len(SPINNER)]} {self._phase} running: {elapsed:.0f} s")
                else:
                    self.stream.write(f"  …         {self._phase} still running: {elapsed:.0f} s\n")
                self.stream.flush()
