"""Reading and writing bundle folders, atomically.

``write_bundle`` writes into a fresh temporary sibling folder and renames it into place, so a
reader never sees half a bundle. ``read_bundle`` validates the manifest and fails with one line
that says what is wrong.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from kernelscope.bundle.model import SCHEMA_NAME, SCHEMA_VERSION, Bundle, BundleError, from_dict, to_dict

MANIFEST = "bundle.json"
TMP_PREFIX = ".kernelscope-tmp-"


def read_bundle(path: str | os.PathLike) -> Bundle:
    root = Path(path)
    if not root.exists():
        raise BundleError(f"{root}: no such bundle folder; capture one with `kernelscope capture TARGET -o {root}`")
    if root.is_file() and root.name == MANIFEST:
        root = root.parent
    manifest = root / MANIFEST
    if not manifest.is_file():
        raise BundleError(f"{root}: not a kernelscope bundle (no {MANIFEST}); capture one with `kernelscope capture`")
    try:
        size = manifest.stat().st_size
        if size > MAX_MANIFEST_BYTES:
            raise BundleError(f"{manifest}: bundle manifest of {size >> 20} MB is larger than kernelscope reads "
                              f"({MAX_MANIFEST_BYTES >> 20} MB); capture again")
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BundleError(f"{manifest}: unreadable bundle manifest ({_one_line(exc)}); capture again") from exc
    except RecursionError as exc:
        raise BundleError(f"{manifest}: bundle manifest nested too deeply to be a kernelscope bundle") from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_NAME:
        raise BundleError(f"{manifest}: not a kernelscope bundle manifest")
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise BundleError(f"{manifest}: bundle format version {version!r} is not a positive whole number; "
                          "the manifest is damaged, capture again")
    if version > SCHEMA_VERSION:
        raise BundleError(
            f"{root}: bundle format version {version} is newer than this kernelscope reads "
            f"({SCHEMA_VERSION}); upgrade kernelscope"
        )
    try:
        bundle = from_dict(data)
    except BundleError as exc:
        raise BundleError(f"{manifest}: {exc}; the manifest is damaged, capture again") from exc
    bundle.root = str(root)
    for relpath in referenced_paths(bundle):
        inside(bundle.root, relpath)
    return bundle


MAX_MANIFEST_BYTES = 256 << 20


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def referenced_paths(bundle: Bundle) -> list[str]:
    """Every bundle-relative path the manifest names (texts, logs, Triton stages, the source copy)."""
    paths: list[str] = []
    if bundle.source.get("path"):
        paths.append(bundle.source["path"])
    paths += [p for p in bundle.files.values() if p]
    for g in bundle.graphs:
        paths += [p for p in g.files.values() if p]
    for k in bundle.kernels:
        if k.source:
            paths.append(k.source)
        for v in k.triton:
            paths += [p for p in v.files.values() if p]
    return paths


def inside(root: str | os.PathLike, relpath: str) -> Path:
    """``root/relpath``, refused with one line when it is absolute, climbs out with ``..``, or is (or
    passes through) a symlink that leads outside the bundle. Every reader of bundle files goes
    through here, so a hostile bundle.json cannot make kernelscope show /etc/passwd."""
    base = Path(root)
    rel = str(relpath)
    if not isinstance(relpath, str) or not rel or "\0" in rel or os.path.isabs(rel) or rel.startswith(("/", "\\")):
        raise BundleError(f"{base}: bundle.json names {rel!r}, which is not a path inside the bundle; refusing to read it")
    if ".." in Path(rel).parts or ".." in rel.replace("\\", "/").split("/"):
        raise BundleError(f"{base}: bundle.json names {rel!r}, which climbs out of the bundle; refusing to read it")
    path = base / rel
    try:
        real_root = base.resolve()
        real = path.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        raise BundleError(f"{base}: cannot resolve {rel!r} in the bundle ({_one_line(exc)})") from exc
    if real != real_root and real_root not in real.parents:
        raise BundleError(f"{base}: {rel!r} in the bundle is a symlink to {real}, outside the bundle; "
                          "refusing to read it")
    return path


def read_text(bundle: Bundle, relpath: str | None, *, required: bool = False) -> str:
    """The text of a file in the bundle ('' when absent, or a BundleError when ``required``); at most
    MAX_TEXT_BYTES of it, with a note of what was cut. A path outside the bundle is a BundleError."""
    if not relpath:
        if required:
            raise BundleError(f"{bundle.root}: the manifest names no file for this")
        return ""
    path = inside(bundle.root, relpath)
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_TEXT_BYTES + 1)
            rest = fh.seek(0, os.SEEK_END) - MAX_TEXT_BYTES if len(data) > MAX_TEXT_BYTES else 0
    except OSError as exc:
        if required:
            raise BundleError(f"{bundle.root}: cannot read {relpath} ({exc.strerror or _one_line(exc)}); "
                              "the bundle is incomplete, capture again") from exc
        return ""
    if rest > 0:
        text = data[:MAX_TEXT_BYTES].decode("utf-8", errors="replace")
        return text + f"\n… ({rest} bytes cut: kernelscope reads the first {MAX_TEXT_BYTES >> 20} MB of a file)\n"
    return data.decode("utf-8", errors="replace")


MAX_TEXT_BYTES = 16 << 20

# Terminal escape sequences (CSI ... final byte, OSC ... BEL/ST, two-byte ESC x), then any other
# control character but tab and newline. Every quantifier runs over a class disjoint from what
# follows it, so these cannot backtrack.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]?|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?|\x9b[0-?]*[ -/]*[@-~]?")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` safe to write to a terminal: escape sequences and control characters removed
    (CRLF line ends become LF), so a file in a bundle cannot move the cursor or retitle the window."""
    text = text.replace("\r\n", "\n")
    return _CONTROLS.sub("", _ESCAPES.sub("", text))


MAX_LINE_CHARS = 4000  # a line shown in a view or a report is cut here
MAX_SHOWN_CHARS = 2 << 20  # a text shown in a view or embedded in a report is cut here


def clip_text(text: str, max_line: int = MAX_LINE_CHARS, max_chars: int = MAX_SHOWN_CHARS) -> str:
    """``text`` for showing: each line longer than ``max_line`` cut with a note of how much, and the
    whole cut after ``max_chars`` with a note. Linear in the length of ``text``; unchanged when small."""
    if len(text) <= max_line:
        return text
    cut_total = 0
    if len(text) > max_chars:
        cut_total = len(text) - max_chars
        text = text[:max_chars]
    if any(len(line) > max_line for line in text.split("\n")):
        text = "\n".join(line if len(line) <= max_line else f"{line[:max_line]}… ({len(line) - max_line} chars cut)"
                         for line in text.split("\n"))
    if cut_total:
        text += f"\n… ({cut_total} more chars cut: too long to show)\n"
    return text


def bundle_path(bundle: Bundle, relpath: str) -> Path:
    """``bundle.root/relpath``, refused when it leads outside the bundle (see ``inside``)."""
    return inside(bundle.root, relpath)


def manifest_text(bundle: Bundle) -> str:
    return json.dumps(to_dict(bundle), indent=1, sort_keys=False) + "\n"


def save_manifest(bundle: Bundle, folder: str | os.PathLike) -> None:
    """Write bundle.json into ``folder`` (which already holds the bundle's files)."""
    target = Path(folder) / MANIFEST
    tmp = target.with_suffix(".json.tmp")
    tmp.write_text(manifest_text(bundle), encoding="utf-8")
    os.replace(tmp, target)


def fresh_path(folder: str | os.PathLike, name: str, suffix: str = "") -> Path:
    """A not yet existing ``folder/NAME-YYYYmmdd-HHMMSS[-n]SUFFIX``: new captures never overwrite old ones."""
    import time

    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = Path(folder) / f"{name}-{stamp}{suffix}"
    n = 1
    while out.exists():
        n += 1
        out = Path(folder) / f"{name}-{stamp}-{n}{suffix}"
    return out


def make_staging_dir(out: str | os.PathLike) -> Path:
    """A fresh hidden folder next to ``out`` (same file system, so the final rename is atomic)."""
    out = Path(out).absolute()
    if out.is_file():
        raise BundleError(f"{out} is a file; -o names the folder to write the bundle into")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=TMP_PREFIX + out.name + "-", dir=out.parent))
    except OSError as exc:
        raise BundleError(f"cannot write a bundle at {out} ({exc.strerror or _one_line(exc)}); "
                          "choose another -o") from exc


def commit_staging_dir(staging: str | os.PathLike, out: str | os.PathLike, *, replace: bool = False) -> None:
    """Move a finished staging folder to ``out``. An existing ``out`` is only replaced when asked,
    and only when it is itself a bundle (a user's other folder is never deleted)."""
    staging, out = Path(staging), Path(out)
    if out.exists():
        if not replace:
            raise BundleError(f"{out} already exists; choose another -o or pass --force to replace it")
        if not (out / MANIFEST).is_file():
            raise BundleError(f"{out} exists and is not a kernelscope bundle; refusing to replace it")
        old = out.with_name(f"{TMP_PREFIX}old-{out.name}-{os.getpid()}")
        os.replace(out, old)
        try:
            os.replace(staging, out)
        except OSError:
            os.replace(old, out)
            raise
        shutil.rmtree(old, ignore_errors=True)
    else:
        try:
            os.replace(staging, out)
        except OSError as exc:
            raise BundleError(f"cannot write the bundle to {out} ({exc.strerror or _one_line(exc)}); "
                              "choose another -o") from exc
