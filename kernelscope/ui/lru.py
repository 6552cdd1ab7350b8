"""Kept: a least-recently-used cache that leaves no reference cycle behind.

Textual's LRUCache (checked on 8.2.8) links its entries in a circular list of Python lists: a cache
that is cleared or dropped stays a cycle holding every value it kept, garbage only the cyclic GC can
free. The explorer drops such caches as it moves (a document's drawn lines, a table's screen lines),
each holding hundreds of Strips with a dozen objects apiece, and the collections that walked them cost
~3 ms a key on a 12-layer GPT-2. This one is an OrderedDict: what it drops is freed at once. (Emptying
Textual's own caches, a private matter: kernelscope.ui.textual_private.lru.)
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Kept(Generic[K, V]):
    """get / [] / set / in / len / clear / discard, evicting the least recently used past ``maxsize``."""

    __slots__ = ("_data", "maxsize")

    def __init__(self, maxsize: int) -> None:
        self._data: OrderedDict[K, V] = OrderedDict()
        self.maxsize = maxsize

    def get(self, key: K, default: V | None = None) -> V | None:
        data = self._data
        try:
            value = data[key]
        except KeyError:
            return default
        data.move_to_end(key)
        return value

    def __getitem__(self, key: K) -> V:
        value = self._data[key]
        self._data.move_to_end(key)
        return value

    def __setitem__(self, key: K, value: V) -> None:
        data = self._data
        data[key] = value
        data.move_to_end(key)
        if len(data) > self.maxsize:
            data.popitem(last=False)

    set = __setitem__

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __bool__(self) -> bool:
        return bool(self._data)

    def keys(self):
        return self._data.keys()

    def discard(self, key: K) -> None:
        self._data.pop(key, None)

    def clear(self) -> None:
        self._data.clear()

