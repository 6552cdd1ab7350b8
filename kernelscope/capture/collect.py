"""Turning a capture's work folder (trace, caches, logs) into bundle files. No torch: the parent
uses it too, to keep what a hung compile captured before it was stopped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kernelscope.bundle.model import Bundle
from kernelscope.ingest.build import RawCapture, build_bundle
from kernelscope.ingest.tracelog import parse_trace_folder


def write_bundle_from_work(work: Path, staging: Path, bundle: Bundle, *, user_file: str) -> Bundle:
    """Build the bundle's files from the work folder's trace, caches and logs (also used on timeout)."""
    raw = RawCapture(traces=[t for _, t in parse_trace_folder(work / "trace")], triton_caches=[work / "triton"],
                     user_file=user_file)
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
    if user_file and Path(user_file).is_file():
        rel = f"source/{Path(user_file).name}"
        (staging / "source").mkdir(exist_ok=True)
        (staging / rel).write_bytes(Path(user_file).read_bytes())
        bundle.source = {"path": rel, "file": user_file, "first_line": bundle.target.get("first_line"),
                         "last_line": bundle.target.get("last_line")}
    return bundle
