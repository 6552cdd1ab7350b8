"""MoveGC: moving through a model's kernels does no garbage collection; the user's pauses do.

Each move draws new lines into bounded caches (a Strip, with its segments, styles and seven small caches,
per line): ~2,500 objects a key that live a while and then go. Python's cyclic GC traced each of them
once or twice while young, ~3.5 ms a key on a 12-layer GPT-2 (a tenth of the frame). As each move starts
the explorer freezes what exists (``gc.freeze``: the objects leave the generations the collector
walks); refcounting still frees what the caches drop. What a freeze keeps that only the cyclic GC could
free (Textual's layout maps, ~60 objects a key) is reclaimed once the user has paused: after
``RECLAIM_AFTER`` moves, at the first ``RECLAIM_IDLE`` seconds without one, everything is unfrozen,
collected and frozen again (a full collection, ~0.3 s on that model, in a pause).
"""

from __future__ import annotations

import gc
import time
from contextlib import contextmanager

RECLAIM_AFTER = 200  # moves between two reclaims: ~1 MB of frozen garbage at most
RECLAIM_IDLE = 2.0  # seconds without a move before a reclaim may run
YOUNG = 10_000  # young-generation threshold while frames freeze what they drew (Python's default: 700)


class MoveGC:
    def __init__(self) -> None:
        self.moves = 0
        self.last_move = 0.0
        self.reclaims: list[float] = []  # ms each reclaim took

    @staticmethod
    def active() -> bool:
        return gc.isenabled()

    def moved(self) -> None:
        """The selection moves: what the moves before drew (on screen, in caches) is frozen first."""
        if self.active():
            gc.freeze()
        self.moves += 1
        self.last_move = time.monotonic()

    def idle_tick(self) -> None:
        if self.moves >= RECLAIM_AFTER and time.monotonic() - self.last_move >= RECLAIM_IDLE and self.active():
            self.reclaim()

    def reclaim(self) -> float:
        """Unfreeze, collect everything, freeze again; the milliseconds it took."""
        t = time.perf_counter()
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        self.moves = 0
        ms = (time.perf_counter() - t) * 1000
        self.reclaims.append(ms)
        return ms


@contextmanager
def collector_paused():
    """The cyclic collector off for a burst of allocations that all live on (a job's index read: a Kernel
    per kernel, its lines, its graphs), and back as it was after: a full collection during it frees nothing
    and walks everything read so far (15-35 ms of reading a 7,200-kernel index on the 2-core box, before
    the first frame)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
