"""Where the UI writes: a per-user cache for live captures, edit scratch copies and screenshots.

``KERNELSCOPE_CACHE`` overrides the folder (tests use it); otherwise ``$XDG_CACHE_HOME/kernelscope``
or ``~/.cache/kernelscope``. Nothing here ever writes next to the user's own files.
"""

from __future__ import annotations

from pathlib import Path


def cache_dir() -> Path:
    from kernelscope.environment import cache_dir as shared_cache_dir  # one setting for every command

    return shared_cache_dir()


def new_capture_dir(name: str) -> Path:
    """A fresh, not yet existing bundle folder for a live capture of ``name``."""
    from kernelscope.bundle.io import fresh_path  # not at import: the gallery's first frame needs no bundle code

    folder = cache_dir() / "captures"
    folder.mkdir(parents=True, exist_ok=True)
    return fresh_path(folder, name)


def new_scratch_dir(name: str) -> Path:
    """A fresh folder holding the editable copy of a user's file."""
    from kernelscope.bundle.io import fresh_path

    folder = cache_dir() / "scratch"
    folder.mkdir(parents=True, exist_ok=True)
    out = fresh_path(folder, name)
    out.mkdir()
    return out


def screenshots_dir() -> Path:
    folder = cache_dir() / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def recent_captures(limit: int = 20) -> list[Path]:
    """Bundles the UI captured, newest first."""
    folder = cache_dir() / "captures"
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if (p / "bundle.json").is_file()]
    found.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    return found[:limit]


def capture_summary(folder: Path) -> str:
    """One line for a recent capture: ``add_relu · cpu · default · 1 kernel · 14:02 today``, read from its
    bundle.json as plain JSON (the gallery's first frame needs no bundle code); the folder name when the
    manifest cannot be read."""
    import json
    import time

    from kernelscope.units import plural

    try:
        data = json.loads((folder / "bundle.json").read_text(encoding="utf-8"))
        mtime = (folder / "bundle.json").stat().st_mtime
    except (OSError, ValueError):
        return folder.name
    from kernelscope.bundle.origin import CAPTURE, origin_of, short_name

    target, options = data.get("target") or {}, data.get("options") or {}
    if not isinstance(target, dict):
        target = {}
    name = short_name(target) if target else folder.name
    origin = origin_of(target)
    flags = [] if origin == CAPTURE else [origin]  # run, record, open: what it came from
    flags += [options.get("device") or (data.get("environment") or {}).get("device") or "?",
              options.get("mode") or "default"]
    flags += [k for k in ("dynamic", "fullgraph", "backward") if options.get(k)]
    now = time.time()
    when = time.strftime("%H:%M today" if time.localtime(mtime)[:3] == time.localtime(now)[:3] else "%Y-%m-%d %H:%M",
                         time.localtime(mtime))
    status = "" if data.get("status", "ok") == "ok" else " · ✗ failed"
    return " · ".join([name, *flags, plural(len(data.get("kernels") or []), "kernel"), when]) + status
