"""What a TORCH_TRACE folder holds, sorted out before it is opened (report/opener.py): the logs torch wrote,
by rank; files that are not TORCH_TRACE logs (a ``.txt``, an empty or foreign ``.log``); and logs of other
jobs left in the same folder (ranks of one job start together; a log that started hours apart is another
run's). Each thing left out is said in one note; nothing here raises on a strange file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from kernelscope.units import plural

_RANK_IN_NAME = re.compile(r"rank_(\d+)")
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


def read_head(log: Path) -> LogHead:
    from kernelscope.ingest.tracelog import bounded_lines
    from kernelscope.safefile import open_regular

    head = LogHead(path=log)
    m = _RANK_IN_NAME.search(log.name)
    head.name_rank = int(m.group(1)) if m else None
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


def sort_folder(trace: Path, logs: list[Path], rank: int | None = None) -> SortedFolder:
    """``logs`` (the folder's ``*.log``) by rank, with what is left out said: files that are not logs, logs that
    are not TORCH_TRACEs, logs of other jobs (the job of the most ranks is kept, or the one ``rank`` is in)."""
    out = SortedFolder()
    if trace.is_dir():
        others = sorted(p.name for p in trace.rglob("*") if p.is_file() and p.suffix != ".log")
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
    jobs = _jobs(heads)
    if len(jobs) > 1:
        keep = next((j for j in jobs if rank is not None and any(h.rank == rank for h in j)), None) \
            or max(jobs, key=lambda j: (len({h.rank for h in j}), _seconds(j[0].stamp)))
        left = [h for j in jobs if j is not keep for h in j]
        out.notes.append(
            f"this folder holds logs of {len(jobs)} runs started apart (a job's ranks start together): opened "
            f"{_ranks_text(keep)} (started {_when(keep[0].stamp)}); left out "
            + ", ".join(f"{h.path.name} (started {_when(h.stamp)})" for h in left)
            + "; `kernelscope open FILE` opens one alone")
        heads = keep
    for h in heads:
        out.ranks.setdefault(h.rank, []).append(h.path)
        if h.name_rank is not None and h.record_rank is not None and h.name_rank != h.record_rank:
            out.notes.append(f"{h.path.name}: its records say rank {h.record_rank}, its name rank {h.name_rank}: read "
                             f"as rank {h.name_rank} (a copied or renamed log?)")
    return out


def _jobs(heads: list[LogHead]) -> list[list[LogHead]]:
    """Logs grouped by when they started: a gap of more than JOB_GAP_S between starts begins another run."""
    timed = sorted((h for h in heads if h.stamp), key=lambda h: _seconds(h.stamp))
    jobs: list[list[LogHead]] = []
    for h in timed:
        if jobs and _seconds(h.stamp) - _seconds(jobs[-1][-1].stamp) <= JOB_GAP_S:
            jobs[-1].append(h)
        else:
            jobs.append([h])
    untimed = [h for h in heads if not h.stamp]
    if untimed:  # no time to tell by: read with the first run
        if not jobs:
            jobs.append([])
        jobs[0].extend(untimed)
    return jobs


def _ranks_text(logs: list[LogHead]) -> str:
    ranks = sorted({h.rank for h in logs if h.rank is not None})
    return f"{'rank' if len(ranks) == 1 else 'ranks'} {', '.join(map(str, ranks))}" if ranks else plural(len(logs), "log")


def _seconds(stamp: str) -> float:
    """glog's ``MMDD HH:MM:SS.ffffff`` in seconds (the year is not written: months count as 31 days)."""
    try:
        day, clock = stamp.split(" ")
        h, m, sec = clock.split(":")
        return ((int(day[:2]) * 31 + int(day[2:])) * 86400 + int(h) * 3600 + int(m) * 60 + float(sec))
    except ValueError:
        return 0.0


def _when(stamp: str) -> str:
    return f"{stamp[:2]}-{stamp[2:4]} {stamp[5:13]}" if len(stamp) >= 13 else "at an unknown time"
