"""Turning a capture's work folder (trace, caches, logs) into bundle files. No torch: the parent
uses it too, to keep what a hung compile captured before it was stopped."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from kernelscope.bundle.model import Bundle
from kernelscope.ingest.build import RawCapture, build_bundle
from kernelscope.ingest.tracelog import parse_trace_folder


def write_bundle_from_work(work: Path, staging: Path, bundle: Bundle, *, user_file: str,
                           traces: list | None = None) -> Bundle:
    """Build the bundle's files from the work folder's trace, caches and logs (also used on timeout).
    ``traces``: the parsed trace logs to use (one rank's, for ``kernelscope run``); default: all of them."""
    if traces is None:
        traces = [t for _, t in parse_trace_folder(work / "trace")]
    raw = RawCapture(traces=traces, triton_caches=[work / "triton"], user_file=user_file)
    stderr = work / "stderr.txt"
    raw.stderr_text = stderr.read_text(encoding="utf-8", errors="replace") if stderr.is_file() else ""
    for path in (work / "inductor").rglob("*.best_config"):
        try:
            best = json.loads(path.read_text(encoding="utf-8"))
            best["_dir"] = path.parent.name  # Inductor keeps it beside the kernel file it tunes
            raw.best_configs.append(best)
        except (OSError, ValueError):
            continue
    return finish_bundle(work, staging, bundle, raw, user_file)


MAX_LOG_BYTES = 8 << 20  # a log kept in the bundle: its first and last 4 MB, and a note of what was cut


def copy_capped(src: Path, dst: Path, limit: int = MAX_LOG_BYTES) -> int:
    """Copy ``src`` to ``dst``; past ``limit`` bytes keep its head and tail halves with a line saying
    how many bytes were cut between them. Returns the number of bytes cut."""
    size = src.stat().st_size
    if size <= limit:
        shutil.copyfile(src, dst)
        return 0
    half = limit // 2
    cut = size - 2 * half
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        fout.write(fin.read(half))
        fout.write(f"\n… kernelscope: {cut} bytes cut here ({size} in all; the bundle keeps the first and last "
                   f"{half >> 20} MB of a log)\n".encode())
        fin.seek(size - half)
        fout.write(fin.read(half))
    return cut


def finish_bundle(work: Path, staging: Path, bundle: Bundle, raw: RawCapture, user_file: str) -> Bundle:
    build_bundle(staging, raw, bundle)
    logs = staging / "logs"
    logs.mkdir(exist_ok=True)
    for name in ("stdout.txt", "stderr.txt"):
        src = work / name
        if src.is_file():
            copy_capped(src, logs / name)
            bundle.files[name.split(".")[0]] = f"logs/{name}"
    copy_sources(staging, bundle, user_file)
    return bundle


MAX_SOURCE_BYTES = 2 << 20  # one source file copied into a bundle at most (a note says what was left out)
MAX_SOURCES_BYTES = 32 << 20  # all of them


def copy_sources(staging: Path, bundle: Bundle, user_file: str) -> None:
    """Copy the target file and every file a kept stack frame names into ``source/``, as they are
    now (capture time), at paths relative to a common root: your files at ``source/REL``, library
    files at ``source/lib/PACKAGE/...``. Nothing is written outside the bundle."""
    files: dict[str, bool] = {}  # path at capture time -> is a library file
    if user_file:
        files[user_file] = False
    for k in bundle.kernels:
        for f in k.frames + k.user_lines + k.library_lines:
            files.setdefault(f.file, f.library)
    present = {f: lib for f, lib in files.items() if Path(f).is_file()}
    mine = [f for f, lib in present.items() if not lib]
    root = _common_dir(mine)
    entries, total = [], 0
    for file, library in sorted(present.items(), key=lambda x: (x[1], x[0] != user_file, x[0])):
        name = _library_name(file) if library else _relative(file, root)
        rel = "source/" + ("lib/" if library else "") + name
        size = Path(file).stat().st_size
        if size > MAX_SOURCE_BYTES or total + size > MAX_SOURCES_BYTES:
            bundle.notes.append(f"source {name} not copied: {size / (1 << 20):.1f} MB is over the bundle's "
                                f"{(MAX_SOURCE_BYTES if size > MAX_SOURCE_BYTES else MAX_SOURCES_BYTES) >> 20} MB cap")
            continue
        dest = (staging / rel).resolve()
        if not dest.is_relative_to(staging.resolve()):  # a name with '..' never leaves the bundle
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(Path(file).read_bytes())
        total += size
        entries.append({"file": file, "path": rel, "name": name, "library": library})
    target = next((e for e in entries if e["file"] == user_file), None)
    if target is not None:
        bundle.source = {"path": target["path"], "file": user_file, "first_line": bundle.target.get("first_line"),
                         "last_line": bundle.target.get("last_line")}
    if entries:
        bundle.source["files"] = entries


def _common_dir(files: list[str]) -> str:
    if not files:
        return ""
    try:
        return os.path.commonpath([os.path.dirname(os.path.abspath(f)) for f in files])
    except ValueError:  # different drives
        return ""


def _relative(file: str, root: str) -> str:
    rel = os.path.relpath(os.path.abspath(file), root) if root else Path(file).name
    return rel.replace(os.sep, "/") if not rel.startswith("..") else Path(file).name


def _library_name(file: str) -> str:
    """transformers/models/gpt2/modeling_gpt2.py: the path below site-packages."""
    parts = file.replace(os.sep, "/").split("/")
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in ("site-packages", "dist-packages"):
            return "/".join(parts[i + 1:])
    return parts[-1]
