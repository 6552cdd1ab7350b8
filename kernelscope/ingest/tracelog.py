"""Reading TORCH_TRACE structured logs (the files tlparse reads), without torch.

Each record is a glog-prefixed line holding a JSON envelope; when the envelope has
``has_payload``, the payload follows as tab-indented lines. Interned strings (``{"str": [path, i]}``)
give the file names that stack frames refer to by index.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_PREFIX = re.compile(r"^[VIWEC]\d{4} [\d:.]+ +\d+ [^\]]*\] ")
_ENVELOPE_META = {"frame_id", "frame_compile_id", "attempt", "has_payload", "compiled_autograd_id", "rank"}


@dataclass
class TraceRecord:
    kind: str  # "dynamo_output_graph", "artifact:inductor_post_grad_graph", ...
    data: dict[str, Any]
    frame_id: int | None
    frame_compile_id: int | None
    attempt: int
    payload: str = ""
    rank: int | None = None

    @property
    def compile_id(self) -> str:
        if self.frame_id is None:
            return ""
        cid = f"{self.frame_id}/{self.frame_compile_id}"
        return cid + (f"_{self.attempt}" if self.attempt else "")

    @property
    def body(self) -> Any:
        return self.data.get(self.kind.split(":", 1)[0])


@dataclass
class TraceLog:
    records: list[TraceRecord] = field(default_factory=list)
    strings: dict[int, str] = field(default_factory=dict)
    rank: int | None = None  # from the file name (dedicated_log_torch_trace_rank_1_*.log) when records lack it
    seen: int = 0  # glog-prefixed lines with a JSON envelope
    malformed: int = 0  # of those, envelopes left out because their fields have the wrong types
    first_problem: str = ""
    # Dynamo's timed phases (``chromium_event`` payloads: name, ph "B"/"E", ts in µs, args.compile_id),
    # kept apart from records: a big job writes thousands of them (ingest/compile_time.py reads them).
    chromium_events: list[dict[str, Any]] = field(default_factory=list)
    damaged_events: int = 0  # chromium events whose payload is not JSON (a damaged log): left out

    def of(self, kind: str) -> list[TraceRecord]:
        return [r for r in self.records if r.kind == kind]

    def filed_rank(self) -> int | None:
        """The rank this log is read as: its file name's (torch names each rank's log; a copied or renamed log
        keeps its records' rank, report/trace_folder.py says so), else its first record's."""
        if self.rank is not None:
            return self.rank
        return next((r.rank for r in self.records if r.rank is not None), None)


def _kind_of(envelope: dict[str, Any]) -> str:
    for key in envelope:
        if key not in _ENVELOPE_META:
            if key == "artifact":
                return "artifact:" + str(envelope[key].get("name", ""))
            return key
    return ""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _frame_ok(frame: Any) -> bool:
    return (isinstance(frame, dict) and isinstance(frame.get("name", ""), str)
            and (_is_int(frame.get("filename")) or isinstance(frame.get("filename", ""), str))
            and (frame.get("line") is None or _is_int(frame.get("line"))))


def envelope_problem(envelope: Any) -> str:
    """Why a record's JSON envelope is not one torch writes ('' when it is): checked once here, so
    what builds the bundle can rely on the types (a damaged or hand-made log cannot crash it)."""
    if not isinstance(envelope, dict):
        return "the envelope is not a JSON object"
    for key in ("frame_id", "frame_compile_id", "attempt", "rank"):
        if envelope.get(key) is not None and not _is_int(envelope[key]):
            return f"{key} is not a whole number"
    if "artifact" in envelope and not (isinstance(envelope["artifact"], dict)
                                       and isinstance(envelope["artifact"].get("name", ""), str)):
        return "artifact is not an object with a name"
    if "str" in envelope:
        value = envelope["str"]
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and _is_int(value[1])):
            return "str is not [text, index]"
    start = envelope.get("dynamo_start")
    if "dynamo_start" in envelope:
        if not isinstance(start, dict) or not isinstance(start.get("stack", []), list) \
                or not all(_frame_ok(f) for f in start.get("stack", [])):
            return "dynamo_start is not an object with a stack of frames"
    metrics = envelope.get("compilation_metrics")
    if "compilation_metrics" in envelope:
        if not isinstance(metrics, dict):
            return "compilation_metrics is not an object"
        if metrics.get("co_filename") is not None and not isinstance(metrics["co_filename"], str):
            return "compilation_metrics.co_filename is not a string"
        if metrics.get("co_firstlineno") is not None and not _is_int(metrics["co_firstlineno"]):
            return "compilation_metrics.co_firstlineno is not a whole number"
    return ""


def iter_records(lines: Iterator[str]) -> Iterator[tuple[dict[str, Any], list[str]]]:
    envelope: dict[str, Any] | None = None
    payload: list[str] = []
    for raw in lines:
        line = raw.rstrip("\n")
        if line.startswith("\t"):
            if envelope is not None:
                payload.append(line[1:])
            continue
        m = _PREFIX.match(line)
        if not m:
            continue
        if envelope is not None:
            yield envelope, payload
        try:
            envelope = json.loads(line[m.end():])
        except (ValueError, RecursionError):  # not JSON, or nested past what any real record is
            envelope = None
        payload = []
    if envelope is not None:
        yield envelope, payload


DAMAGED: dict[str, Any] = {}  # a chromium event whose payload is not JSON


def _chromium_event(payload: str) -> dict[str, Any] | None:
    """A chromium_event payload with the fields a phase needs (name, ph, a numeric ts), else None."""
    try:
        event = json.loads(payload)
    except (ValueError, RecursionError):
        return DAMAGED
    if not (isinstance(event, dict) and isinstance(event.get("name"), str) and event.get("ph") in ("B", "E", "X")
            and isinstance(event.get("ts"), (int, float)) and not isinstance(event.get("ts"), bool)):
        return None
    if not isinstance(event.get("args"), dict):
        event["args"] = {}
    return event


_RANK_IN_NAME = re.compile(r"rank_(\d+)")

# No real record line comes near this (a whole output code is in its tab-prefixed payload lines); a longer
# line is skipped as it streams past instead of being held whole (one 1 GiB line cost 4 GB of memory).
MAX_LINE_BYTES = 96 << 20


def bounded_lines(fh, limit: int = MAX_LINE_BYTES) -> Iterator[str]:
    """The lines of the binary file ``fh`` as text, each line longer than ``limit`` bytes skipped
    (read through in chunks, never held whole)."""
    while True:
        line = fh.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while True:  # the rest of an over-long line
                chunk = fh.readline(1 << 20)
                if not chunk or chunk.endswith(b"\n"):
                    break
            continue
        yield line.decode("utf-8", errors="replace")


def rank_in_name(path: str | os.PathLike) -> int | None:
    """The rank a log's file name gives (``dedicated_log_torch_trace_rank_3_*.log``), else None."""
    m = _RANK_IN_NAME.search(Path(path).name)
    return int(m.group(1)) if m else None


def parse_trace_file(path: str | os.PathLike) -> TraceLog:
    log = TraceLog()
    log.rank = rank_in_name(path)
    from kernelscope.safefile import open_regular

    with open_regular(path) as fh:  # a FIFO among the logs would block the reader forever
        _collect(log, ((envelope, "\n".join(payload)) for envelope, payload in iter_records(bounded_lines(fh))))
    return log


# A record starts on a line that is not a payload line (payload lines start with a tab).
_RECORD_START = re.compile(r"\n(?!\t)")


def parse_spool_text(text: str) -> TraceLog:
    """A TraceLog from the text of a spool file that ``ingest/stream.py`` wrote: record lines and their
    payload lines only, every line already bounded, the whole of one compiled frame. Split by records at
    C speed instead of line by line: the same records ``parse_trace_file`` reads from such a file."""
    log = TraceLog()
    _collect(log, _spool_records(text))
    return log


def _spool_records(text: str) -> Iterator[tuple[dict[str, Any], str]]:
    for chunk in _RECORD_START.split(text):
        head, _, rest = chunk.partition("\n")
        m = _PREFIX.match(head)
        if not m:
            continue
        try:
            envelope = json.loads(head[m.end():])
        except (ValueError, RecursionError):
            continue
        payload = rest.rstrip("\n")
        yield envelope, payload[1:].replace("\n\t", "\n") if payload.startswith("\t") else ""


def take_envelope(into: Any, envelope: dict[str, Any]) -> str | None:
    """Count a record into ``into`` (a TraceLog, or ingest/stream's Spooled: ``seen``, ``malformed``,
    ``first_problem``, ``strings``) and return its kind; None when nothing more is to be done with it
    (malformed, or an interned string, kept here)."""
    into.seen += 1
    problem = envelope_problem(envelope)
    if problem:
        into.malformed += 1
        into.first_problem = into.first_problem or problem
        return None
    kind = _kind_of(envelope)
    if kind == "str":
        value = envelope["str"]
        into.strings[value[1]] = value[0]
        return None
    return kind


def _collect(log: TraceLog, records: Iterator[tuple[dict[str, Any], str]]) -> None:
    """Each (envelope, payload text) into ``log``: strings interned, chromium events, typed records."""
    for envelope, payload in records:
        kind = take_envelope(log, envelope)
        if kind is None:
            continue
        if kind == "chromium_event":
            event = _chromium_event(payload)
            if event is DAMAGED:
                log.damaged_events += 1
            elif event is not None:
                log.chromium_events.append(event)
            continue
        if kind == "":
            continue
        log.records.append(
            TraceRecord(
                kind=kind,
                data=envelope,
                frame_id=envelope.get("frame_id"),
                frame_compile_id=envelope.get("frame_compile_id"),
                attempt=envelope.get("attempt", 0) or 0,
                payload=payload,
                rank=envelope.get("rank"),
            )
        )


def trace_files(folder: str | os.PathLike) -> list[Path]:
    """The trace logs in a TORCH_TRACE folder (one per process / rank), oldest first."""
    root = Path(folder)
    if root.is_file():
        return [root]
    files = [p for p in root.rglob("*.log") if p.is_file()]
    return sorted(files, key=lambda p: (p.stat().st_mtime, p.name))


def parse_trace_folder(folder: str | os.PathLike) -> list[tuple[Path, TraceLog]]:
    return [(p, parse_trace_file(p)) for p in trace_files(folder)]
