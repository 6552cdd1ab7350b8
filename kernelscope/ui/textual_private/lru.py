"""clear_lru: empty a Textual LRUCache so that refcounting, not the cyclic GC, frees what it held.

Checked against Textual 8.2.8 (``textual.cache.LRUCache``: each entry a list [previous, next, key, value]
in a circular list, ``_cache`` and ``_head``); on only where ``FAST.lru`` (see
``kernelscope.ui.textual_private``), elsewhere the cache's own ``clear()``. A cleared LRUCache stays a
cycle holding every value it kept; the explorer drops a table's screen lines at each move.
"""

from __future__ import annotations

from kernelscope.ui.textual_private import FAST


def clear_lru(cache) -> None:
    """``cache.clear()``, its links emptied first where the fast path is on."""
    if FAST.lru:
        for link in cache._cache.values():
            link.clear()
        cache._head.clear()
    cache.clear()
