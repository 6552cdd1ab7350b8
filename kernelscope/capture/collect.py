"""Turning a capture's work folder (trace, caches, logs) into bundle files. No torch: the parent
uses it too, to keep what a hung compile captured before it was stopped."""

from __future__ import annotations

import json
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


def finish_bundle(work: Path, staging: Path, bundle: Bundle, raw: RawCapture, user_file: str) -> Bundle:
    build_bundle(staging, raw, bundle)
    logs = staging / "logs"
    logs.mkdir(exist_ok=True)
    for name in ("stdout.txt", "stderr.txt"):
        src = work / name
        if src.is_file():
            (logs / name).write_bytes(src.read_bytes())
            bundle.files[name.split(".")[0]] = f"logs/{name}"
    if user_file and Path(user_file).is_file():
        rel = f"source/{Path(user_file).name}"
        (staging / "source").mkdir(exist_ok=True)
        (staging / rel).write_bytes(Path(user_file).read_bytes())
        bundle.source = {"path": rel, "file": user_file, "first_line": bundle.target.get("first_line"),
                         "last_line": bundle.target.get("last_line")}
    return bundle
