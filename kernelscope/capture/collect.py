"""Turning a capture's work folder (trace, caches, logs) into bundle files. No torch: the parent
uses it too, to keep what a hung compile captured before it was stopped."""

from __future__ import annotations

import json
import os
import re
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
    raw.stderr_text, note = read_stderr_capped(work / "stderr.txt")
    if note:
        bundle.notes.append(note)
    for path in (work / "inductor").rglob("*.best_config"):
        try:
            best = json.loads(path.read_text(encoding="utf-8"))
            best["_dir"] = path.parent.name  # Inductor keeps it beside the kernel file it tunes
            raw.best_configs.append(best)
        except (OSError, ValueError):
            continue
    return finish_bundle(work, staging, bundle, raw, user_file)


MAX_LOG_BYTES = 8 << 20  # a log kept in the bundle: its first and last 4 MB, and a note of what was cut

# What of the program's stderr is read into memory for the parsers (TORCH_LOGS lines, AUTOTUNE tables), read
# line by line: a line at most MAX_STDERR_LINE, torch's lines up to MAX_TORCH_LOG_BYTES, the program's own
# up to MAX_OTHER_STDERR_BYTES (they only matter as context). 3 GB of the program's logging, or one line of
# 1 GB, is then a few hundred MB at most, never the whole file.
MAX_STDERR_LINE = 1 << 20
MAX_TORCH_LOG_BYTES = 256 << 20
MAX_OTHER_STDERR_BYTES = 16 << 20
TORCH_LOG_LINE = re.compile(rb"(\[rank\d+\]:)?[VIWEDC]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+:\d+\] ")
_AUTOTUNE_BODY = (b"strides:", b"dtypes:", b" ", b"\t")
# A newline before a line the parsers read (a literal first: the regex engine skips to each newline fast).
_PARSED_LINE = re.compile(rb"\n(?=(?:\[rank\d+\]:)?[VIWEDC]\d{4} |AUTOTUNE |strides:|dtypes:|[ \t])")


def read_stderr_capped(path: Path) -> tuple[str, str]:
    """(the text the parsers read of a stderr log, a note of what was left out or '') without holding more
    than the caps above, however large the file or its lines."""
    try:
        fh = open(path, "rb")
    except OSError:
        return "", ""
    kept: list[bytes] = []
    budgets = {"torch": MAX_TORCH_LOG_BYTES, "other": MAX_OTHER_STDERR_BYTES}
    dropped = cut = 0
    in_autotune = False

    def keep(line: bytes, long: bool) -> None:
        nonlocal dropped, cut, in_autotune
        if long:
            cut += 1
        if line.startswith(b"AUTOTUNE "):
            in_autotune = True
            kind = "torch"
        elif in_autotune and line.startswith(_AUTOTUNE_BODY):
            kind = "torch"
        else:
            in_autotune = False
            kind = "torch" if TORCH_LOG_LINE.match(line) else "other"
        if len(line) + 1 > budgets[kind]:
            dropped += 1
            return
        budgets[kind] -= len(line) + 1
        kept.append(line)

    with fh:
        partial = bytearray()
        long = False  # the line being read passed MAX_STDERR_LINE: the rest of it is skipped
        while True:
            chunk = fh.read(1 << 20)
            if not chunk:
                break
            start = 0
            while start < len(chunk):
                if not partial and not long and budgets["other"] < MAX_STDERR_LINE:
                    # The program's own budget is spent: only lines the parsers read are looked at,
                    # found by one regex over the chunk's whole lines (per line in Python: 80 s for 3 GB).
                    last = chunk.rfind(b"\n", start)
                    if last > start:
                        body = b"\n" + chunk[start:last]
                        found = 0
                        for m in _PARSED_LINE.finditer(body):
                            eol = body.find(b"\n", m.end())
                            line = body[m.end():eol if eol >= 0 else len(body)]
                            keep(line[:MAX_STDERR_LINE], len(line) > MAX_STDERR_LINE)
                            found += 1
                        dropped += body.count(b"\n") - found
                        start = last + 1
                        continue
                end = chunk.find(b"\n", start)
                piece = chunk[start:] if end < 0 else chunk[start:end]
                if not long:
                    room = MAX_STDERR_LINE - len(partial)
                    partial += piece[:room]
                    long = len(piece) > room
                if end < 0:
                    break
                keep(bytes(partial), long)
                partial, long = bytearray(), False
                start = end + 1
        if partial or long:
            keep(bytes(partial), long)
    notes = []
    if cut:
        notes.append(f"{cut} stderr line(s) longer than {MAX_STDERR_LINE >> 20} MB were read cut")
    if dropped:
        notes.append(f"{dropped} stderr line(s) past the {MAX_OTHER_STDERR_BYTES >> 20} MB of the program's own "
                     f"output (or {MAX_TORCH_LOG_BYTES >> 20} MB of torch's logs) were not read")
    note = ("; ".join(notes) + " (logs/stderr.txt keeps its first and last 4 MB)") if notes else ""
    return b"\n".join(kept).decode("utf-8", "replace"), note


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
