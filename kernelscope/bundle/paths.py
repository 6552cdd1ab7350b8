"""Where a bundle's files may be, and what its texts may hold: every path a manifest or a graph's detail
file names stays inside the bundle and is a regular file or a folder (``inside``, ``check_paths``), and no
string read from one carries a terminal escape (``strip_controls``). Shared by the manifest's reader
(bundle/io.py) and the detail files' (bundle/shards.py); io re-exports them. No torch, no textual."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from kernelscope.bundle.model import Bundle, BundleError
from kernelscope.textsafe import CONTROLS as _CONTROLS
from kernelscope.textsafe import printable


def check_paths(bundle: Bundle, relpaths: list[str]) -> None:
    """BundleError unless each of these paths of the bundle stays inside it and is a regular file or a
    folder where it exists (checked when the manifest, or a graph's detail file, is read)."""
    root = Path(bundle.root)
    try:
        real_root = root.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise BundleError(f"{root}: cannot resolve the bundle folder ({_one_line(exc)})") from exc
    plain_dirs: set[tuple[str, ...]] = set()  # folders under the root already seen to be no symlink
    for relpath in relpaths:
        mode = _mode_inside(root, relpath, real_root, plain_dirs)
        if mode is None:
            continue  # absent: the readers say so where it is needed
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise BundleError(f"{root}: {relpath!r} in the bundle is not a regular file (a FIFO, socket or "
                              "device); refusing to read the bundle")


# What a control character (not tab or newline) can look like in JSON text that json.loads took (raw
# control bytes are refused there, outside a string they are whitespace): a \u escape, the short escapes
# \b \f \r, DEL raw, a C1 character raw (UTF-8 0xc2 0x80-0x9f).
_ESCAPED_CONTROL = re.compile(rb"\\(?:[bfr]|u00[01][0-9a-fA-F]|u007[fF]|u00[89][0-9a-fA-F])")
_C1_RAW = re.compile(rb"\xc2[\x80-\x9f]")


def _may_hold_controls(raw: bytes) -> bool:
    # One regex pass for the escapes: ``b"\\b" in raw`` and its like took ~20 ms each on an 8.8 MB index
    # (CPython's two-byte search), a regex led by the backslash 2-7 ms for all of them.
    return (b"\x7f" in raw or _ESCAPED_CONTROL.search(raw) is not None
            or (b"\xc2" in raw and _C1_RAW.search(raw) is not None))


def strip_controls(data: Any, raw: bytes | None = None) -> None:
    """Remove escape sequences and control characters from every string value of a manifest, in place:
    a kernel name or a break reason is printed to terminals, error lines and reports. ``raw``: the JSON
    text ``data`` was parsed from; where it holds nothing that decodes to a control character (the usual
    case), there is nothing to walk."""
    if raw is not None and not _may_hold_controls(raw):
        return
    stack = [data]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            if isinstance(value, str):
                if _CONTROLS.search(value):
                    node[key] = printable(value)
            elif isinstance(value, (dict, list)):
                stack.append(value)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def _mode_inside(root: Path, relpath: str, real_root: Path, plain_dirs: set[tuple[str, ...]]) -> int | None:
    """``inside`` for one of many paths of a bundle, then the file's mode (None: absent). Each component is
    looked at once (lstat) from the root down, folders shared by many files once for all: a path with no
    symlink in it is the root's own (what resolving it would find, without resolving every component
    again for each file, ~65 files on the first frame); one with a symlink is resolved and checked whole."""
    path = _named(root, relpath)
    parts = Path(relpath).parts
    for i in range(len(parts)):
        prefix = parts[:i + 1]
        if prefix in plain_dirs:
            continue
        try:
            info = os.lstat(root.joinpath(*prefix))
        except (OSError, ValueError):
            return None  # absent (or under a file): resolving it would stay inside, reading it fails
        if stat.S_ISLNK(info.st_mode):
            inside(root, relpath, real_root=real_root)  # a symlink on the way: resolved and checked whole
            try:
                return path.stat().st_mode
            except (OSError, ValueError):
                return None
        if i == len(parts) - 1:
            return info.st_mode
        plain_dirs.add(prefix)
    return None


def _named(base: Path, relpath: str) -> Path:
    """``base/relpath``, refused with one line when the name is empty, absolute or climbs out with ``..``."""
    rel = str(relpath)
    if not isinstance(relpath, str) or not rel or "\0" in rel or os.path.isabs(rel) or rel.startswith(("/", "\\")):
        raise BundleError(f"{base}: bundle.json names {rel!r}, which is not a path inside the bundle; refusing to read it")
    if ".." in Path(rel).parts or ".." in rel.replace("\\", "/").split("/"):
        raise BundleError(f"{base}: bundle.json names {rel!r}, which climbs out of the bundle; refusing to read it")
    return base / rel


def inside(root: str | os.PathLike, relpath: str, *, real_root: Path | None = None) -> Path:
    """``root/relpath``, refused with one line when it is absolute, climbs out with ``..``, or is (or
    passes through) a symlink that leads outside the bundle. Every reader of bundle files goes
    through here, so a hostile bundle.json cannot make kernelscope show /etc/passwd. ``real_root``:
    ``root`` resolved, when the caller checks many paths of one bundle at once."""
    base = Path(root)
    path = _named(base, relpath)
    try:
        real_root = base.resolve() if real_root is None else real_root
        real = path.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise BundleError(f"{base}: cannot resolve {str(relpath)!r} in the bundle ({_one_line(exc)})") from exc
    if real != real_root and real_root not in real.parents:
        raise BundleError(f"{base}: {str(relpath)!r} in the bundle is a symlink to {real}, outside the bundle; "
                          "refusing to read it")
    return path


def read_json_file(root: str, rel: str, limit: int, what: str) -> tuple[Any, bytes]:
    """A JSON file of the bundle at ``root`` (``rel`` inside it, a regular file of at most ``limit`` bytes):
    its value and its raw bytes (for strip_controls), or a BundleError of one line naming the file."""
    from kernelscope.safefile import FileProblem, read_regular

    try:
        raw = read_regular(inside(root, rel), limit, what)
        return json.loads(raw.decode("utf-8")), raw
    except FileProblem as exc:
        raise BundleError(f"{root}: {exc}") from exc
    except (OSError, ValueError, RecursionError) as exc:
        raise BundleError(f"{root}: {rel} is not readable JSON ({' '.join(str(exc).split())[:120]})") from exc
