"""Inductor's and Triton's caches, kept from a capture for the benches that follow it.

A capture compiles against a fresh, private cache folder (so Inductor really compiles, logs the
output code and keeps provenance: a cache hit would do none of that), with Inductor's FX graph and
AOTAutograd caches on, so it writes its entries there. When the capture succeeds those entries are
merged into one shared folder (``folder()``). The bench's child compiles the same function, with the
same options, against that shared folder: Inductor finds the capture's graph by its key (the FX
graph, the inputs' metadata, Inductor's config, torch's version, the device) and loads its code and
kernels instead of compiling them again, so the bench measures the very code the capture shows, in
seconds. Anything that changes the key (an edited function, another --mode, another torch) misses
and compiles as before; the bench says which happened.

No torch here: the capture's parent (the UI or the CLI) calls ``keep``; the children set ``env``.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from kernelscope.environment import cache_dir

# Past this size the shared folder is emptied before the next capture adds to it (a cache: losing it
# costs the next bench one compile).
LIMIT_BYTES = 4 << 30
SUBDIRS = ("inductor", "triton")


def folder() -> Path:
    return cache_dir() / "compile-cache"


def env(root: Path) -> dict[str, str]:
    """The environment a compiling child sets to write (capture: a fresh ``root``) or reuse (bench:
    ``folder()``) Inductor's cache entries. INDUCTOR_PROVENANCE is in Inductor's config, hence in the
    cache key: the capture needs it, so the bench sets it too or it would never hit."""
    return {"TRITON_CACHE_DIR": str(root / "triton"), "TORCHINDUCTOR_CACHE_DIR": str(root / "inductor"),
            "TORCHINDUCTOR_FX_GRAPH_CACHE": "1", "TORCHINDUCTOR_AUTOGRAD_CACHE": "1", "INDUCTOR_PROVENANCE": "1"}


def share_precompiled_headers(tmp: Path, shared: Path | None = None) -> None:
    """Link a child's private temp folder's ``torchinductor_<user>/precompiled_headers`` to the shared
    cache's. Inductor (torch 2.13, checked; codecache._HEADER_DIR = default_cache_dir() + that name)
    builds a precompiled header of its C++ prelude there before it loads a C++ kernel, even one from
    its cache, and a fresh temp folder meant g++ on every capture and bench (5-20 s of a CPU bench's
    "compile + first call" on a cache hit). The header is keyed by its preprocessed text, the compiler
    and its flags and built under Inductor's lock, so one copy per machine is safe; it is no code a
    user reads. Where torch lays out its temp folder otherwise, the link is unused: nothing changes."""
    try:
        import getpass

        user = getpass.getuser()
    except Exception:  # as torch does without a user name
        user = f"uid_{os.getuid()}" if hasattr(os, "getuid") else "unknown_user"
    # KERNELSCOPE_PRECOMPILED_HEADERS names one folder for it whatever the cache: the tests give most
    # commands a cache folder of their own, and each built the same header (tests/conftest.py sets it).
    override = None if shared else os.environ.get("KERNELSCOPE_PRECOMPILED_HEADERS")
    target = Path(override) if override else (shared or folder()) / "precompiled_headers"
    link = tmp / ("torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user)) / "precompiled_headers"
    try:
        target.mkdir(parents=True, exist_ok=True)
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists() and not link.is_symlink():
            link.symlink_to(target, target_is_directory=True)
    except OSError:
        pass  # a read-only cache: the header is built in the private folder, as before


def keep(work: Path, dest: Path | None = None) -> int:
    """Merge a finished capture's ``work/inductor`` and ``work/triton`` into the shared folder: files
    it lacks are copied (atomically, by rename), files it has are left. Returns the files copied. A
    full disk or a read-only cache only costs the next bench a compile: never an error."""
    dest = dest or folder()
    copied = 0
    try:
        if dest.is_dir() and _size(dest) > LIMIT_BYTES:
            shutil.rmtree(dest, ignore_errors=True)
        for sub in SUBDIRS:
            if (work / sub).is_dir():
                copied += _merge(work / sub, dest / sub)
    except OSError:
        pass
    return copied


def _merge(src: Path, dest: Path) -> int:
    copied = 0
    for root, dirs, files in os.walk(src, followlinks=False):
        dirs[:] = [d for d in dirs if d != "locks" and not os.path.islink(os.path.join(root, d))]
        rel = Path(root).relative_to(src)
        for name in files:
            source = Path(root) / name
            target = dest / rel / name
            if name.endswith(".lock") or source.is_symlink() or not source.is_file() or target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{name}.{os.getpid()}.tmp")
            shutil.copy2(source, tmp)
            os.replace(tmp, target)
            copied += 1
    return copied


def _size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path, followlinks=False):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total
