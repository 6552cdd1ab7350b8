"""Which bundles this machine wrote: a record outside the bundle, keyed by the content of its code.

A bench of a bundle alone runs the bundle's own output code and FX graphs. Whatever a manifest says of
itself (``origin: run``, a host name) anyone can write, so it proves nothing. When ``kernelscope run``
or ``kernelscope.record`` writes a bundle, ``remember`` keeps a record in this user's cache folder
(``written/``) named by a digest of every graph file the manifest names (path and SHA-256 of its
bytes); ``made_here`` computes the same digest from the bundle as it is now and looks the record up.
A bundle from elsewhere, or one whose code changed by a byte since, has no record: its code runs only
with ``--run-bundle-code`` or the UI's confirmation. The digest leaves the manifest's other sections
out, so a bench record stored in the bundle afterwards does not make it a stranger.

No torch, no textual.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from kernelscope.bundle.model import Bundle

FOLDER = "written"
MAX_FILE_BYTES = 1 << 30  # a graph file larger than this is not hashed: such a bundle is never "made here"


def _folder() -> Path:
    from kernelscope.environment import cache_dir

    return cache_dir() / FOLDER


def code_files(bundle: Bundle) -> list[str]:
    """The bundle-relative paths of every file its graphs name (output code, FX graphs), sorted."""
    return sorted({p for g in bundle.graphs for p in (g.files or {}).values() if isinstance(p, str) and p})


def code_digest(bundle: Bundle, root: str | os.PathLike | None = None) -> str | None:
    """SHA-256 over the (path, content hash) of every graph file; None when there is none or one
    cannot be read as a regular file inside the bundle."""
    from kernelscope.bundle.io import BundleError, inside
    from kernelscope.safefile import FileProblem, open_regular

    base = Path(root if root is not None else bundle.root)
    files = code_files(bundle)
    if not files:
        return None
    whole = hashlib.sha256()
    for rel in files:
        try:
            path = inside(str(base), rel)
            with open_regular(path) as fh:
                if os.fstat(fh.fileno()).st_size > MAX_FILE_BYTES:
                    return None
                one = hashlib.sha256()
                for chunk in iter(lambda fh=fh: fh.read(1 << 20), b""):
                    one.update(chunk)
        except (BundleError, FileProblem, OSError, ValueError):
            return None
        whole.update(rel.encode("utf-8", "surrogateescape") + b"\0" + one.hexdigest().encode() + b"\n")
    return whole.hexdigest()


def remember(bundle: Bundle, root: str | os.PathLike | None = None) -> bool:
    """Keep the record that this machine wrote ``bundle`` (at ``root``, default its own). False when
    nothing could be kept (no graph file, no cache folder): the bundle is then treated as anyone's."""
    from kernelscope.safefile import write_private

    digest = code_digest(bundle, root)
    if digest is None:
        return False
    folder = _folder()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_private(folder / digest, json.dumps({"bundle": str(Path(root or bundle.root).absolute()),
                                                   "origin": str(bundle.target.get("origin") or ""),
                                                   "written": round(time.time(), 3)}).encode())
    except OSError:
        return False
    return True


def made_here(bundle: Bundle) -> bool:
    """Whether this user's cache holds the record ``remember`` kept for this bundle's code as it is now."""
    from kernelscope.safefile import read_private

    digest = code_digest(bundle)
    return digest is not None and read_private(_folder() / digest, 1 << 16) is not None
