"""Reading and writing bundle folders, atomically.

``write_bundle`` writes into a fresh temporary sibling folder and renames it into place, so a
reader never sees half a bundle. ``read_bundle`` validates the manifest and fails with one line
that says what is wrong.
"""

from __future__ import annotations

import json
import os
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
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BundleError(f"{manifest}: unreadable bundle manifest ({exc}); capture again") from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_NAME:
        raise BundleError(f"{manifest}: not a kernelscope bundle manifest")
    version = data.get("version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise BundleError(
            f"{root}: bundle format version {version} is newer than this kernelscope reads "
            f"({SCHEMA_VERSION}); upgrade kernelscope"
        )
    bundle = from_dict(data)
    bundle.root = str(root)
    return bundle


def read_text(bundle: Bundle, relpath: str | None) -> str:
    """The text of a file in the bundle ('' when absent)."""
    if not relpath:
        return ""
    path = Path(bundle.root) / relpath
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def bundle_path(bundle: Bundle, relpath: str) -> Path:
    return Path(bundle.root) / relpath


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
    out.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=TMP_PREFIX + out.name + "-", dir=out.parent))


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
        os.replace(staging, out)
