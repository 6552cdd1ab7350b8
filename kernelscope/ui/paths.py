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


REMEMBERED = "captured-elsewhere.txt"  # bundle folders `kernelscope capture -o DIR` wrote, one a line


def remember_capture(folder: Path, keep: int = 50) -> None:
    """Note a CLI capture's folder so the gallery lists it with the UI's own; a cache that cannot be
    written loses only this note."""
    note = cache_dir() / REMEMBERED
    try:
        known = [line for line in note.read_text(encoding="utf-8").splitlines() if line] if note.is_file() else []
        here = str(Path(folder).resolve())
        known = [line for line in known if line != here][-(keep - 1):] + [here]
        note.parent.mkdir(parents=True, exist_ok=True)
        note.write_text("\n".join(known) + "\n", encoding="utf-8")
    except OSError:
        pass


def recent_captures(limit: int = 20) -> list[Path]:
    """Bundles the UI captured and those the CLI wrote with -o, newest first."""
    folder = cache_dir() / "captures"
    found = [p for p in folder.iterdir() if (p / "bundle.json").is_file()] if folder.is_dir() else []
    note = cache_dir() / REMEMBERED
    try:
        elsewhere = note.read_text(encoding="utf-8").splitlines() if note.is_file() else []
    except (OSError, UnicodeDecodeError):
        elsewhere = []
    seen = {p.resolve() for p in found}
    for line in elsewhere:
        p = Path(line)
        if line and p.is_absolute() and (p / "bundle.json").is_file() and p.resolve() not in seen:
            found.append(p)
            seen.add(p.resolve())

    def mtime(p: Path) -> float:
        try:
            return (p / "bundle.json").stat().st_mtime
        except OSError:
            return 0.0

    found.sort(key=mtime, reverse=True)
    return found[:limit]


def capture_summary(folder: Path) -> str:
    """One line for a recent capture, what tells two captures of one function apart first:
    ``add_relu 14:02:31 · f32[64], f32[64] · 1 kernel · source hash 3fa2 · cpu · default · in the cache``,
    read from its bundle.json as plain JSON (the gallery's first frame needs no bundle code); the folder
    name when the manifest cannot be read."""
    return " · ".join(capture_summary_parts(folder))


def capture_summary_parts(folder: Path) -> list[str]:
    """capture_summary's parts, each whole: the gallery breaks its lines between them."""
    import hashlib
    import json
    import time

    from kernelscope.units import plural

    try:
        data = json.loads((folder / "bundle.json").read_text(encoding="utf-8"))
        mtime = (folder / "bundle.json").stat().st_mtime
    except (OSError, ValueError):
        return [folder.name]
    if not isinstance(data, dict):
        return [folder.name]
    from kernelscope.bundle.origin import CAPTURE, origin_of, short_name

    target, options = data.get("target") or {}, data.get("options") or {}
    if not isinstance(target, dict):
        target = {}
    name = short_name(target) if target else folder.name
    origin = origin_of(target)
    flags = [] if origin == CAPTURE else [origin]  # run, record, open: what it came from
    environment = data.get("environment") if isinstance(data.get("environment"), dict) else {}
    preview = environment.get("preview") if isinstance(environment.get("preview"), dict) else {}
    # A preview was generated for a GPU it never ran on: its device says cuda, what it is says PREVIEW.
    flags += [f"PREVIEW {preview['arch']}" if preview.get("arch") else
              options.get("device") or environment.get("device") or "?", options.get("mode") or "default"]
    flags += [k for k in ("dynamic", "fullgraph", "backward") if options.get(k)]
    now = time.time()
    when = time.strftime("%H:%M:%S" if time.localtime(mtime)[:3] == time.localtime(now)[:3] else "%Y-%m-%d %H:%M",
                         time.localtime(mtime))
    calls = [c for c in target.get("calls") or [] if isinstance(c, list)] or (
        [target["inputs"]] if isinstance(target.get("inputs"), list) else [])
    inputs = "; ".join(", ".join(map(str, c)) for c in calls) if calls else ""
    # The source as captured, hashed: an edit and recompile of the same function reads differently.
    source = (data.get("source") or {}).get("path") if isinstance(data.get("source"), dict) else None
    digest = ""
    if isinstance(source, str) and source and ".." not in Path(source).parts and not Path(source).is_absolute():
        try:
            digest = "source hash " + hashlib.sha1((folder / source).read_bytes()).hexdigest()[:4]
        except OSError:
            digest = ""
    status = ["✗ failed"] if data.get("status", "ok") != "ok" else []
    return [f"{name} {when}", *([inputs] if inputs else []), *status, plural(kernel_count(data), "kernel"),
            *flags, where_kept(folder), *([digest] if digest else [])]


def kernel_count(data: dict) -> int:
    """How many kernels a bundle.json's dict says it has (format 5 counts them; earlier ones list them)."""
    count = data.get("kernel_count")
    if type(count) is int and count >= 0:
        return count
    kernels = data.get("kernels")
    return len(kernels) if isinstance(kernels, list) else 0


def where_kept(folder: Path) -> str:
    """``in the cache`` for the UI's own captures, else the folder (``~/`` for the home folder)."""
    if folder.parent == cache_dir() / "captures":
        return "in the cache"
    try:
        return "~/" + str(folder.relative_to(Path.home()))
    except ValueError:
        return str(folder)


def summary_lines(parts: list[str], width: int, most: int = 5) -> list[str]:
    """``parts`` joined with `` · `` in lines of at most ``width`` cells, broken between parts (a long
    list of inputs between its shapes, a long folder in its middle), never inside a shape or a number;
    at most ``most`` lines, the last ending in … when the rest did not fit."""
    import re

    from kernelscope.units import shorten_middle

    words: list[tuple[str, str]] = []  # (glue before it, text)
    for part in parts:
        pieces = re.split(r"(?<=\],) |(?<=;) ", part) if len(part) > width else [part]
        for j, piece in enumerate(pieces):
            words.append((" " if j else " · ", piece if len(piece) <= width else
                          path_tail(piece, width) if "/" in piece and " " not in piece else shorten_middle(piece, width)))
    lines: list[str] = []
    for glue, word in words:
        if lines and len(lines[-1]) + len(glue) + len(word) <= width:
            lines[-1] += glue + word
        else:
            lines.append(word)
    if len(lines) > most:  # the last line kept ends in …, a whole fact dropped to make room for it
        lines = lines[:most]
        while len(lines[-1]) + 2 > width and " · " in lines[-1]:
            lines[-1] = lines[-1].rsplit(" · ", 1)[0]
        lines[-1] = lines[-1][: width - 2] + " …"
    return lines


def path_tail(path: str, width: int) -> str:
    """``path`` in ``width`` cells as ``…/`` and its last whole folders (the ones that tell captures apart)."""
    parts = path.rstrip("/").split("/")
    tail = parts[-1]
    for part in reversed(parts[:-1]):
        if len(part) + 1 + len(tail) + 2 > width:
            break
        tail = f"{part}/{tail}"
    return f"…/{tail}" if len(tail) + 2 <= width else "…" + tail[-(width - 1):]
