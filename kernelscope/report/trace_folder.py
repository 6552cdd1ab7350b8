"""What a TORCH_TRACE folder holds, sorted out before it is opened (report/opener.py): the logs torch wrote,
by rank; files that are not TORCH_TRACE logs (a ``.txt``, an empty or foreign ``.log``); and logs of other
jobs left in the same folder (ranks of one job start together; a log that started hours apart is another
run's; of several logs of one rank, the one that started with the other ranks is kept). Each thing left out
is said in one note; nothing here raises on a strange file. Each log's head is read once, here.
"""

from __future__ import annotations

import datetime
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.units import plural

_RANK_IN_RECORD = re.compile(r"\"rank\": ?(\d+)")
_STAMP = re.compile(r"^[VIWEC](\d{4} \d\d:\d\d:\d\d\.\d+)")
_PREFIX = re.compile(r"^[VIWEC]\d{4} [\d:.]+ +\d+ [^\]]*\] ")
JOB_GAP_S = 3600  # ranks of one job start within this of each other; logs further apart are other runs'
_LOOK = 200  # lines read of each log's head: its first record, its rank, its first time


@dataclass
class LogHead:
    """What the first lines of a log say: whether it is a TORCH_TRACE, its rank, when it started."""

    path: Path
    is_trace: bool = False
    why_not: str = ""
    name_rank: int | None = None
    record_rank: int | None = None
    stamp: str = ""

    @property
    def rank(self) -> int | None:
        """The file name's rank first (torch names each rank's log; a copied log keeps its records'), else the records'."""
        return self.name_rank if self.name_rank is not None else self.record_rank


@dataclass
class SortedFolder:
    """The logs to open, by rank, and a note for each thing left out."""

    ranks: dict[int | None, list[Path]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    not_traces: list[str] = field(default_factory=list)  # "another.log: empty", when no log is a TORCH_TRACE


def rank_of(log: Path) -> int | None:
    """The rank that wrote a trace log: from its file name, else from its first records."""
    return read_head(log).rank


def read_head(log: Path) -> LogHead:
    from kernelscope.ingest.tracelog import bounded_lines, rank_in_name
    from kernelscope.safefile import open_regular

    head = LogHead(path=log, name_rank=rank_in_name(log))
    try:
        with open_regular(log) as fh:  # lines capped: one huge line is never held whole
            for _, line in zip(range(_LOOK), bounded_lines(fh)):
                if line.startswith("\t") or not (p := _PREFIX.match(line)):
                    continue
                if not head.is_trace:
                    try:
                        head.is_trace = isinstance(json.loads(line[p.end():]), dict)
                    except (ValueError, RecursionError):
                        continue
                    head.stamp = (s.group(1) if (s := _STAMP.match(line)) else "")
                if head.record_rank is None and (r := _RANK_IN_RECORD.search(line)):
                    head.record_rank = int(r.group(1))
                if head.is_trace and head.record_rank is not None:
                    break
            empty = fh.tell() == 0
    except OSError as exc:
        head.why_not = f"unreadable ({exc.strerror or exc})"
        return head
    if not head.is_trace:
        head.why_not = "empty" if empty else f"no TORCH_TRACE record in its first {_LOOK} lines"
    return head


def sort_folder(trace: Path, rank: int | None = None) -> SortedFolder:
    """The logs of ``trace`` (a folder's ``*.log``, or the one file) by rank, with what is left out said: files
    that are not logs, logs that are not TORCH_TRACEs, logs of other jobs (the job of the most ranks is kept, or
    the one ``rank`` is in), a rank's logs besides the one that started with the other ranks."""
    out = SortedFolder()
    logs, others = _walk(trace)
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        out.notes.append(f"not read: {shown} ({'not a .log file' if len(others) == 1 else 'not .log files'}; "
                         "`kernelscope open FILE` reads one file whatever its name)")
    heads = [read_head(p) for p in logs]
    foreign = [h for h in heads if not h.is_trace]
    if foreign and len(foreign) < len(heads):
        out.notes.append("not read: " + ", ".join(f"{h.path.name} ({h.why_not}: not a TORCH_TRACE log)"
                                                  for h in foreign))
    if foreign and len(foreign) == len(heads):  # none is one: the opener says so in its error
        out.not_traces = [f"{h.path.name}: {h.why_not}" for h in foreign]
        return out
    heads = [h for h in heads if h.is_trace]
    at = _start_seconds(heads)
    jobs = _jobs(heads, at)
    if len(jobs) > 1:
        keep = next((j for j in jobs if rank is not None and any(h.rank == rank for h in j)), None) \
            or max(jobs, key=lambda j: (len({h.rank for h in j}), at.get(id(j[0]), 0.0)))
        left = [h for j in jobs if j is not keep for h in j]
        out.notes.append(
            f"this folder holds logs of {len(jobs)} runs started apart (a job's ranks start together): opened "
            f"{_ranks_text(keep)} (started {_when(keep[0].stamp)}); left out "
            + ", ".join(f"{h.path.name} (started {_when(h.stamp)})" for h in left)
            + "; `kernelscope open FILE` opens one alone")
        heads = keep
    by_rank: dict[int | None, list[LogHead]] = {}
    for h in heads:
        by_rank.setdefault(h.rank, []).append(h)
        if h.name_rank is not None and h.record_rank is not None and h.name_rank != h.record_rank:
            out.notes.append(f"{h.path.name}: its records say rank {h.record_rank}, its name rank {h.name_rank}: read "
                             f"as rank {h.name_rank} (a copied or renamed log?)")
    if len([r for r in by_rank if r is not None]) > 1 or rank is not None:
        out.notes += _one_log_per_rank(by_rank, at)
    out.ranks = {r: [h.path for h in logs] for r, logs in by_rank.items()}
    return out


def _walk(trace: Path) -> tuple[list[Path], list[str]]:
    """(the ``*.log`` files, oldest first; the names of the other files) of a folder, in one walk; a file alone
    is its own log."""
    if trace.is_file():
        return [trace], []
    files = [p for p in trace.rglob("*") if p.is_file()]
    logs = sorted((p for p in files if p.name.endswith(".log")), key=lambda p: (p.stat().st_mtime, p.name))
    return logs, sorted(p.name for p in files if not p.name.endswith(".log"))


def _one_log_per_rank(by_rank: dict[int | None, list[LogHead]], at: dict[int, float]) -> list[str]:
    """A job writes one log per rank: where a rank has several, keep the one that started nearest the other
    ranks' logs (the rest belong to another job, or an earlier run) and say which were left out. Where every
    rank has several, the lowest rank's latest run is the one kept for all (the job run again)."""
    notes = []
    starts = sorted(at[id(h[0])] for r, h in by_rank.items() if r is not None and len(h) == 1 and id(h[0]) in at)
    middle = starts[len(starts) // 2] if starts else None
    if middle is None:
        first = by_rank[min(r for r in by_rank if r is not None)]
        middle = max((at[id(h)] for h in first if id(h) in at), default=None)
    for r, heads in by_rank.items():
        if r is None or len(heads) < 2:
            continue
        keep = min(heads, key=lambda h: (abs(at[id(h)] - middle) if middle is not None and id(h) in at else 0.0,
                                         h.path.name))
        by_rank[r] = [keep]
        left = [h.path.name for h in heads if h is not keep]
        notes.append(f"rank {r} has {len(heads)} logs: kept {keep.path.name} (it started with the other ranks), left "
                     f"out {', '.join(left)} (another job's, or an earlier run's; `kernelscope open FILE` opens one "
                     "alone)")
    return notes


def _jobs(heads: list[LogHead], at: dict[int, float]) -> list[list[LogHead]]:
    """Logs grouped by when they started: a gap of more than JOB_GAP_S between starts begins another run."""
    timed = sorted((h for h in heads if id(h) in at), key=lambda h: at[id(h)])
    jobs: list[list[LogHead]] = []
    for h in timed:
        if jobs and at[id(h)] - at[id(jobs[-1][-1])] <= JOB_GAP_S:
            jobs[-1].append(h)
        else:
            jobs.append([h])
    untimed = [h for h in heads if id(h) not in at]
    if untimed:  # no time to tell by: read with the first run
        if not jobs:
            jobs.append([])
        jobs[0].extend(untimed)
    return jobs


def _ranks_text(logs: list[LogHead]) -> str:
    ranks = sorted({h.rank for h in logs if h.rank is not None})
    return f"{'rank' if len(ranks) == 1 else 'ranks'} {', '.join(map(str, ranks))}" if ranks else plural(len(logs), "log")


_YEAR_S = 365 * 86400


def _seconds(stamp: str) -> float | None:
    """glog's ``MMDD HH:MM:SS.ffffff`` in seconds since the year began; None where it is not such a stamp.
    glog writes no year: read in a common year (three in four are), so 0228 and 0301 are a day apart and
    a leap day is read as 0301."""
    try:
        day, clock = stamp.split(" ")
        h, m, sec = clock.split(":")
        month, mday = (3, 1) if day == "0229" else (int(day[:2]), int(day[2:]))
        begun = datetime.date(2023, month, mday) - datetime.date(2023, 1, 1)
        return begun.days * 86400 + int(h) * 3600 + int(m) * 60 + float(sec)
    except ValueError:
        return None


def _start_seconds(heads: list[LogHead]) -> dict[int, float]:
    """Each timed log's start in seconds, by id: where the starts span a new year (December's and January's
    logs together, more than half a year apart), January's are read as the next year's."""
    at = {id(h): s for h in heads if h.stamp and (s := _seconds(h.stamp)) is not None}
    if at and max(at.values()) - min(at.values()) > _YEAR_S / 2:
        latest = max(at.values())
        at = {k: s + _YEAR_S if s < latest - _YEAR_S / 2 else s for k, s in at.items()}
    return at


def _when(stamp: str) -> str:
    return f"{stamp[:2]}-{stamp[2:4]} {stamp[5:13]}" if len(stamp) >= 13 else "at an unknown time"
