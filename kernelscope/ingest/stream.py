"""``kernelscope open`` of a job-sized TORCH_TRACE: one streaming pass, then each compiled frame on its own.

The pass reads the logs line by line (no line held past ``MAX_LINE_BYTES``) and copies each record, as the
bytes it was written with, into a spool file of its compiled frame (rank, ``frame_id``): every compile and
recompile of one code object, its backward compiled later, its timed phases. What the whole job shares is
kept as it passes: interned file names, the ranks, the Triton kernel names each output code defines. Then
each frame's spool is read back as a small TORCH_TRACE of its own and built into graphs and kernels by
``ingest.build`` (the same code as a capture's), on every core; each writes its graphs' files and detail
files into the bundle and hands back its part of the index. Memory follows the largest frame, not the job.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelscope.bundle.model import Bundle
from kernelscope.ingest.tracelog import _PREFIX, take_envelope

_OPEN_SPOOLS = 48  # spool files kept open at once (a job of thousands of frames reopens the others)
_TRITON_DEF = b"= async_compile.triton("
PARALLEL_FROM = 4  # frames: below this, building in this process is quicker than starting workers


@dataclass
class Spooled:
    """What the streaming pass kept of a job's logs."""

    frames: dict[tuple, Path] = field(default_factory=dict)  # (rank, frame id) -> spool, in order of first record
    strings: dict[int, str] = field(default_factory=dict)
    ranks: set[int] = field(default_factory=set)
    name_counts: dict[str, int] = field(default_factory=dict)
    # Per frame, the place of each of its output codes in the whole log: graphs are listed in that order.
    code_order: dict[tuple, list[int]] = field(default_factory=dict)
    code_files: dict[tuple, str] = field(default_factory=dict)  # per frame, the file of the code Dynamo compiled
    seen: int = 0
    malformed: int = 0
    first_problem: str = ""
    cut_short: list[str] = field(default_factory=list)  # logs that end inside a line (the job killed, or still running)
    chromium_events: int = 0  # Dynamo's timed phases
    not_records: int = 0  # lines that start like a record but are not one (a damaged line): left out
    first_not_record: str = ""


class _Spools:
    """Append-only spool files, a bounded number open at once."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.open: OrderedDict[tuple, Any] = OrderedDict()
        self.paths: dict[tuple, Path] = {}

    def get(self, key: tuple):
        fh = self.open.get(key)
        if fh is not None:
            self.open.move_to_end(key)
            return fh
        path = self.paths.get(key)
        if path is None:
            path = self.paths[key] = self.folder / f"frame-{len(self.paths):05d}.log"
        if len(self.open) >= _OPEN_SPOOLS:
            self.open.popitem(last=False)[1].close()
        fh = self.open[key] = open(path, "ab")
        return fh

    def close(self) -> None:
        for fh in self.open.values():
            fh.close()
        self.open.clear()


def spool_trace(logs: list[tuple[Path, int | None]], folder: Path) -> Spooled:
    """One pass over ``logs`` ((path, rank from its file name)), each record copied into its frame's spool."""
    from kernelscope.ingest.tracelog import MAX_LINE_BYTES
    from kernelscope.safefile import open_regular

    out = Spooled()
    spools = _Spools(folder)
    try:
        for path, file_rank in logs:
            with open_regular(path) as fh:
                _spool_one(fh, file_rank, spools, out, MAX_LINE_BYTES, Path(path).name)
                if _ends_inside_a_line(fh):
                    out.cut_short.append(Path(path).name)
    finally:
        spools.close()
    out.frames = dict(spools.paths)
    return out


def _ends_inside_a_line(fh) -> bool:
    size = fh.seek(0, os.SEEK_END)
    if not size:
        return False
    fh.seek(size - 1)
    return fh.read(1) != b"\n"


def _spool_one(fh, file_rank: int | None, spools: _Spools, out: Spooled, limit: int, log_name: str) -> None:
    target = None  # the spool the current record's payload lines go to
    counting = False  # the current record is an output code: count the Triton kernels it defines
    names: set[bytes] = set()
    held: list[bytes] | None = None  # a chromium event's lines, filed once its payload says its compile
    held_key: tuple = ()
    for offset, line in _runs(fh, limit):
        if offset is None:  # a run of payload lines (each starts with a tab), copied as one
            if target is not None:
                target.write(line)
                if counting and _TRITON_DEF in line:
                    _triton_names(line, names)
            elif held is not None:
                held.append(line)
            continue
        if counting:
            _count(out, names)
            counting = False
        if held is not None:
            _file_event(held, held_key, spools)
            held = None
        target = None
        text = line.decode("utf-8", errors="replace")
        m = _PREFIX.match(text)
        if not m:
            continue
        try:
            envelope = json.loads(text[m.end():])
        except (ValueError, RecursionError) as exc:  # a damaged line: said, the rest is read
            out.not_records += 1
            if not out.first_not_record:
                out.first_not_record = f"{log_name} line {_line_number(fh, offset)}: {_what_is_wrong(exc)}"
            continue
        kind = take_envelope(out, envelope)
        if not kind:
            continue
        # The file name's rank first: each rank's log is named for it (a copied log keeps its records' rank).
        rank = file_rank if file_rank is not None else envelope.get("rank")
        if rank is not None:
            out.ranks.add(rank)
        key = (rank, envelope.get("frame_id"))
        line = line if line.endswith(b"\n") else line + b"\n"
        if kind == "chromium_event":
            out.chromium_events += 1
            held, held_key = [line], key
            continue
        target = spools.get(key)
        target.write(line)
        if kind == "inductor_output_code":
            counting, names = True, set()
            out.code_order.setdefault(key, []).append(out.seen)
        elif kind == "dynamo_start" and key not in out.code_files:
            stack = envelope["dynamo_start"].get("stack") or []
            if stack:
                name = stack[-1].get("filename")
                out.code_files[key] = out.strings.get(name, "") if isinstance(name, int) else str(name or "")
    if counting:
        _count(out, names)
    if held is not None:
        _file_event(held, held_key, spools)


_CHUNK = 1 << 20  # read at a time: a job's 600,000 payload lines are found and copied in runs, at C speed
_LINE_START = re.compile(rb"\n(?!\t)")  # the end of the line before one that is not payload (no leading tab)


def _triton_names(run: bytes, names: set[bytes]) -> None:
    """The names an output code's payload lines define with ``NAME = async_compile.triton(``: each line's
    first word (after its tab) where the line holds that."""
    i = run.find(_TRITON_DEF)
    while i >= 0:
        start = run.rfind(b"\n", 0, i) + 2  # past the newline and the line's tab
        end = run.find(b"\n", i)
        line_end = len(run) if end < 0 else end
        space = run.find(b" ", start, line_end)
        names.add(run[start:space] if space >= 0 else run[start - 1:line_end + 1])
        if end < 0:
            break
        i = run.find(_TRITON_DEF, end)


def _runs(fh, limit: int):
    """The log as (byte offset, record line) and (None, run of payload lines) in order, read a chunk at a
    time. A line of more than ``limit`` bytes (its newline aside) is skipped, never held whole; a last line
    without a newline is given as it is. A record line is any line that does not start with a tab (an empty
    one too: it ends a payload run)."""
    offset = 0  # where the first byte of ``pending`` is in the file
    pending: list[bytes] = []  # the start of a line that no chunk so far has ended
    held = 0  # bytes in ``pending``
    skipping = False  # inside an over-long line: its bytes are dropped up to its newline
    while True:
        chunk = fh.read(_CHUNK)
        if not chunk:
            if pending and not skipping:
                yield from _split(b"".join(pending), offset, limit)
            return
        if skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                offset += len(chunk)
                continue
            offset, chunk, skipping = offset + nl + 1, chunk[nl + 1:], False
        nl = chunk.rfind(b"\n")
        if nl < 0:
            if not chunk:
                continue
            pending.append(chunk)
            held += len(chunk)
            if held > limit:
                offset, pending, held, skipping = offset + held, [], 0, True
            continue
        block = b"".join(pending) + chunk[:nl + 1] if pending else chunk[:nl + 1]
        yield from _split(block, offset, limit)
        offset += len(block)
        pending, held = ([chunk[nl + 1:]], len(chunk) - nl - 1) if nl + 1 < len(chunk) else ([], 0)


def _split(block: bytes, offset: int, limit: int):
    """One block of lines as _runs gives them (``offset``: where it starts in the file)."""
    pos = 0
    if block[:1] not in (b"\t", b""):
        pos = yield from _record(block, 0, offset, limit)
    for m in _LINE_START.finditer(block):
        start = m.end()
        if start >= len(block):
            break
        if start < pos:
            continue  # an empty line right after a record line's own newline: found by both
        if start > pos:
            yield from _payload(block[pos:start], limit)
        pos = yield from _record(block, start, offset, limit)
    if pos < len(block):
        yield from _payload(block[pos:], limit)


def _record(block: bytes, start: int, offset: int, limit: int):
    """The record line at ``start`` (left out when over ``limit``); returns where the next line starts."""
    nl = block.find(b"\n", start)
    end = len(block) if nl < 0 else nl + 1
    if (end if nl < 0 else nl) - start <= limit:
        yield offset + start, block[start:end]
    return end


def _payload(run: bytes, limit: int):
    if len(run) <= limit:
        yield None, run
    else:  # one of its lines may be over the limit: those are left out
        lines = run.split(b"\n")
        kept = b"".join(line + b"\n" for line in lines[:-1] if len(line) <= limit)
        kept += lines[-1] if len(lines[-1]) <= limit else b""
        if kept:
            yield None, kept


def _line_number(fh, offset: int) -> int:
    """The 1-based line of the log at byte ``offset`` (counted when a damaged line is first named)."""
    newlines, at = 0, 0
    while at < offset:
        data = os.pread(fh.fileno(), min(_CHUNK, offset - at), at)
        if not data:
            break
        newlines += data.count(b"\n")
        at += len(data)
    return newlines + 1


def _what_is_wrong(exc: Exception) -> str:
    return f"not JSON: {exc.msg}" if isinstance(exc, json.JSONDecodeError) else "nested too deep"


_EVENT_FRAME = re.compile(rb'"compile_id":\s*"\D*(\d+)/')


def _file_event(lines: list[bytes], key: tuple, spools: _Spools) -> None:
    """A chromium event goes to the frame its ``args.compile_id`` names (a backward compiled during a later
    step is timed under its own compile, whatever frame the record was written in), else the record's."""
    for payload_line in lines[1:]:
        m = _EVENT_FRAME.search(payload_line)
        if m:
            key = (key[0], int(m.group(1)))
            break
    spools.get(key).writelines(lines)


def _count(out: Spooled, names: set[bytes]) -> None:
    for raw in names:
        name = raw.decode("utf-8", errors="replace")
        out.name_counts[name] = out.name_counts.get(name, 0) + 1


@dataclass
class FrameJob:
    """One compiled frame to build, and what it needs of the whole job (pickled to a worker)."""

    spool: str
    staging: str
    strings: dict[int, str]
    rank: int | None
    rank_prefix: bool
    name_counts: dict[str, int]
    cache_entries: list[Any]
    best_configs: list[dict[str, Any]]
    stderr_text: str
    user_file: str = ""


def build_frame(job: FrameJob) -> dict[str, Any]:
    """A frame's graphs and kernels, their files and detail files written into the staging folder; returns
    its part of the index and what it found for the bundle's own lists."""
    from kernelscope.bundle.shards import dumps_lines, index_and_details
    from kernelscope.ingest.build import RawCapture, build_bundle
    from kernelscope.ingest.tracelog import parse_spool_text

    log = parse_spool_text(Path(job.spool).read_text(encoding="utf-8", errors="replace"))
    log.strings = job.strings
    log.rank = job.rank  # the rank the frame was filed under: build_bundle gives it to every record
    raw = RawCapture(traces=[log], stderr_text=job.stderr_text, cache_entries=job.cache_entries,
                     name_counts=job.name_counts, best_configs=job.best_configs, rank_prefix=job.rank_prefix,
                     user_file=job.user_file, one_frame=True)
    part = Bundle()
    staging = Path(job.staging)
    build_bundle(staging, raw, part)
    index, details = index_and_details(part, skip_unread=False)
    for rel, detail in details.items():
        path = staging / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(dumps_lines(detail), encoding="utf-8")
    part = {key: index[key] for key in ("graphs", "kernels", "lines", "graph_breaks", "recompiles", "notes", "extra")}
    return {**part, "damaged_events": log.damaged_events}


def build_frames(jobs: list[FrameJob], workers: int | None = None) -> list[dict[str, Any]]:
    """Every frame built, in the jobs' order: on every core when there are enough of them."""
    if workers is None:
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    cores = workers
    if len(jobs) < PARALLEL_FROM or cores < 2:
        return [build_frame(j) for j in jobs]
    import multiprocessing

    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with ProcessPoolExecutor(max_workers=min(cores, len(jobs)), mp_context=multiprocessing.get_context(method)) as pool:
        return list(pool.map(build_frame, jobs, chunksize=max(1, len(jobs) // (cores * 8))))


def merge_frames(parts: list[dict[str, Any]], bundle: Bundle, order: list[list[int]] | None = None) -> dict[str, Any]:
    """The frames' parts of the index as one index (``bundle``'s own fields first), each frame's line
    ids renumbered into one lines table; ``order``: per part, where each of its graphs' output codes
    stood in the log (graphs and their kernels are listed in that order, as a capture lists them)."""
    from kernelscope.bundle.model import SCHEMA_VERSION
    from kernelscope.bundle.shards import to_dict_shallow

    lines: list[dict[str, Any]] = []
    line_ids: dict[tuple, int] = {}
    graphs, kernels = [], []
    for part in parts:
        remap = []
        for row in part["lines"]:
            key = (row["file"], row["line"], row["code"], row["function"], row["library"])
            if key not in line_ids:
                line_ids[key] = len(lines)
                lines.append(row)
            remap.append(line_ids[key])
        graphs.extend(part["graphs"])
        for k in part["kernels"]:
            k["user_lines"] = [remap[i] for i in k["user_lines"]]
            kernels.append(k)
        bundle.notes.extend(part["notes"])
        for key, value in part["extra"].items():
            if key == "compile_time":
                merge_compile_time(bundle.extra, value)
            elif key == "fusion" and "fusion" in bundle.extra:  # the pairs are in the graphs' detail files
                whole = bundle.extra["fusion"]
                for count in ("fusions_logged", "refusals_logged", "pair_count"):
                    whole[count] = whole.get(count, 0) + value.get(count, 0)
            elif isinstance(value, dict):
                bundle.extra.setdefault(key, {}).update(value)
            else:
                bundle.extra[key] = value
    if order is not None:
        place = {}
        for part, seq in zip(parts, order):
            for g, n in zip(part["graphs"], seq):
                place[g["id"]] = n
        graphs.sort(key=lambda g: place.get(g["id"], 1 << 62))
        rank = {g["id"]: i for i, g in enumerate(graphs)}
        kernels.sort(key=lambda k: rank[k["graph"]])  # stable: launch order within a graph
    index = to_dict_shallow(bundle)
    index["version"] = SCHEMA_VERSION
    index["graph_breaks"] = [b for part in parts for b in part["graph_breaks"]] + index.get("graph_breaks", [])
    index["recompiles"] = [r for part in parts for r in part["recompiles"]] + index.get("recompiles", [])
    index["graphs"], index["kernels"], index["lines"] = graphs, kernels, lines
    return index


def merge_compile_time(extra: dict[str, Any], frame: dict[str, Any]) -> None:
    """One frame's compile-time summary (ingest/compile_time.py) added to the job's."""
    whole = extra.get("compile_time")
    if not whole:
        extra["compile_time"] = frame
        return
    whole["compiles"] = whole.get("compiles", []) + frame.get("compiles", [])
    whole["kernels"] = sorted(whole.get("kernels", []) + frame.get("kernels", []), key=lambda r: -(r.get("total_s") or 0))
    from kernelscope.ingest.compile_time import PHASE_ORDER

    phases = dict(whole.get("phases", {}))
    for phase, s in frame.get("phases", {}).items():
        phases[phase] = round(phases.get(phase, 0.0) + s, 6)
    whole["phases"] = {p: phases[p] for p in sorted(phases, key=lambda p: PHASE_ORDER.index(p) if p in PHASE_ORDER else 99)}
    whole["total_s"] = round((whole.get("total_s") or 0.0) + (frame.get("total_s") or 0.0), 6)


def clear_spools(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
