"""Scanning a Triton cache folder for compiled kernels and their stage files."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelscope.bundle.artifacts import ARTIFACTS

_LOC_FILE = re.compile(r'^#loc\d* = loc\("([^"]+)":\d+:\d+\)', re.M)


@dataclass
class CacheEntry:
    key: str  # the cache folder's name
    name: str  # kernel name
    folder: Path
    metadata: dict[str, Any]
    files: dict[str, Path] = field(default_factory=dict)  # stage -> file
    kernel_path: str = ""  # the Python file Triton compiled (first loc() of the MLIR source)


def scan_cache(folder: str | os.PathLike) -> list[CacheEntry]:
    entries: list[CacheEntry] = []
    root = Path(folder)
    if not root.is_dir():
        return entries
    for meta_path in sorted(root.glob("*/*.json")):
        if meta_path.name.startswith("__grp__"):
            continue
        try:
            metadata = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(metadata, dict) or "name" not in metadata:
            continue
        name = str(metadata["name"])
        if meta_path.stem != name:
            continue
        entry = CacheEntry(key=meta_path.parent.name, name=name, folder=meta_path.parent, metadata=metadata)
        for art in ARTIFACTS:
            f = meta_path.parent / f"{name}.{art.suffix}"
            if art.cached and art.suffix and f.is_file():
                entry.files[art.name] = f
        for stage in ("source", "ttir"):
            if stage in entry.files:
                with open(entry.files[stage], encoding="utf-8", errors="replace") as fh:
                    m = _LOC_FILE.search(fh.read(4096))
                if m:
                    entry.kernel_path = m.group(1)
                    break
        entries.append(entry)
    return entries


def dedupe_variants(entries: list[CacheEntry]) -> list[CacheEntry]:
    """One entry per distinct compiled config: Inductor compiles some kernels twice (a worker and
    the parent) into identical cache entries; keep the first of each (num_warps, num_stages, ptx)."""
    seen: dict[tuple, CacheEntry] = {}
    for e in entries:
        ptx = e.files.get("ptx")
        ptx_size = ptx.stat().st_size if ptx else 0
        key = (e.name, e.kernel_path, e.metadata.get("num_warps"), e.metadata.get("num_stages"), ptx_size,
               json.dumps(e.metadata.get("target"), sort_keys=True))
        seen.setdefault(key, e)
    return list(seen.values())
