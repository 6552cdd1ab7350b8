"""Format 3's side files: a job's long texts (the graph breaks' whole messages, the compile-time record)
under ``sections/`` of the bundle, out of the index, read when first asked for (GraphBreak.detail,
Bundle.section). The writer moves them out of the index (``split_sides``), the reader leaves a loader
for them (``attach_sides``); a side file never read stays as it is when its bundle is saved in place.
No torch, no textual.
"""

from __future__ import annotations

import threading
from typing import Any

from kernelscope.bundle.model import Bundle, BundleError

MAX_SIDE_BYTES = 256 << 20
# A section's name -> its file (fixed names: the index says which exist, never where).
SIDES = {"compile_time": "sections/compile_time.json", "graph_break_details": "sections/graph_break_details.json"}


def split_sides(bundle: Bundle, index: dict[str, Any]) -> dict[str, Any]:
    """Format 3: the long texts moved out of ``index`` into side files (path -> JSON value); a side file of
    the bundle's own folder never read stays as it is, only named in ``index["sections"]`` (shards.write
    also leaves one whose text would not change)."""
    sides: dict[str, Any] = {}
    named: list[str] = []
    loader = bundle.__dict__.get("_sides")

    def unread(name: str) -> bool:
        return loader is not None and loader.has(name)

    breaks = index.get("graph_breaks") or []
    if breaks:
        named.append("graph_break_details")
        if all("detail" in gb for gb in breaks):
            sides[SIDES["graph_break_details"]] = [gb.pop("detail") for gb in breaks]
    extra = index.get("extra")
    value = extra.pop("compile_time", None) if isinstance(extra, dict) else None
    if value is not None or unread("compile_time"):
        named.append("compile_time")
        if value is not None:
            sides[SIDES["compile_time"]] = value
    if named:
        index["sections"] = named
    return sides


class _SideSections:
    """The loader of a format-3 bundle's side files (Bundle.section, GraphBreak.detail): each read once,
    validated as the manifest's sections are; a damaged one is left out with a note."""

    def __init__(self, bundle: Bundle, names: list[str]) -> None:
        self.bundle, self.unread = bundle, set(names)
        self.lock = threading.Lock()

    def has(self, name: str) -> bool:
        return name in self.unread

    def load(self, name: str) -> None:
        with self.lock:
            if name not in self.unread:
                return
            self.unread.discard(name)
            try:
                value = self._read(SIDES[name])
            except BundleError as exc:
                self.bundle.notes.append(f"{exc}; left out")
                value = None
            if name == "compile_time":
                from kernelscope.bundle.sections import keep_if_sound

                if value is not None and keep_if_sound(self.bundle, name, value, SIDES[name]):
                    self.bundle.extra[name] = value
            elif name == "graph_break_details":
                texts = value if isinstance(value, list) and all(type(t) is str for t in value) else []
                if value is not None and len(texts) != len(self.bundle.graph_breaks):
                    self.bundle.notes.append(f"{SIDES[name]} does not match the bundle's graph breaks; their "
                                             "whole messages are left out")
                    texts = []
                for i, gb in enumerate(self.bundle.graph_breaks):
                    gb.__dict__["detail"] = texts[i] if i < len(texts) else ""
                    gb.__dict__["_detail"] = None

    def load_all(self) -> None:
        for name in list(self.unread):
            self.load(name)

    def __call__(self) -> None:  # a graph break's detail asked for (model._Lazy)
        self.load("graph_break_details")

    def _read(self, rel: str) -> Any:
        from kernelscope.bundle.paths import read_json_file, strip_controls

        data, raw = read_json_file(self.bundle.root, rel, MAX_SIDE_BYTES, "bundle section file")
        strip_controls(data, raw)
        return data


def load_sides(bundle: Bundle) -> None:
    """Every side file of a format-3 bundle read into the bundle (a copy written elsewhere, ``show --json``)."""
    loader = bundle.__dict__.get("_sides")
    if loader is not None:
        loader.load_all()


def attach_sides(b: Bundle, data: dict[str, Any]) -> None:
    """Format 3: a loader left for the side files the index names (their messages and rows read when asked)."""
    names = data.get("sections")
    if names is None:
        return
    if not isinstance(names, list) or not all(isinstance(n, str) and n in SIDES for n in names):
        raise BundleError("bundle.sections should list side files kernelscope writes "
                          f"({', '.join(SIDES)})")
    names = [n for n in names if not (n == "compile_time" and "compile_time" in b.extra)]
    if not names:
        return
    loader = _SideSections(b, names)
    b.__dict__["_sides"] = loader
    if "graph_break_details" in names:
        for gb, entry in zip(b.graph_breaks, data.get("graph_breaks") or []):
            if "detail" not in entry:  # the message is in the side file
                gb.__dict__.pop("detail", None)
                gb.__dict__["_detail"] = loader
