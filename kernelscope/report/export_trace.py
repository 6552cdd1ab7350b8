"""A bundle as Chrome-trace JSON (``kernelscope export --trace``), for Perfetto and chrome://tracing.

Two kinds of track: per rank, one thread per compile id holding that compile and its phases
(``extra["compile_time"]``); and a device track with one compiled call's launches from a bench
(``extra["bench"]["run"]["per_kernel"]``). Neither record keeps start times: a compile's phases are the
seconds given to each phase (each instant to the innermost one), a launch's time a statistic over the
profiled calls. So events are laid out one after another from those durations, and every event's
``args.timing`` says so; a launch with no time is an instant. ts and dur are µs. Pure: no torch, no textual.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from kernelscope.bundle.bench_record import measured_device
from kernelscope.bundle.model import Bundle, Kernel
from kernelscope.units import base_name

COMPILE_TIMING = ("durations from the trace (each instant of the compile given to its innermost phase); "
                  "start times laid out: phases one after another in the order `show --compile` keeps (pipeline "
                  "order, outer phases' own time last), not at the times they ran")
FRAME_TIMING = ("duration from the trace (the time its phases cover); start time laid out: the compiles of a rank "
                "one after another in the order they began, gaps between them not recorded")
LAUNCH_TIMING = ("measured duration ({statistic}); start time laid out: launches back to back in launch order, "
                 "gaps between them not recorded")
KERNEL_ARGS_LIMIT = 10  # kernels listed in a phase's args, slowest first
_RANK_PREFIX = re.compile(r"^rank(\d+)/")


@dataclass
class TraceExport:
    """The events and what they hold, for the one line the command prints."""

    events: list[dict[str, Any]] = field(default_factory=list)
    frames: int = 0  # compiles laid out
    launches: int = 0  # timed launches laid out
    untimed: int = 0  # launches the bench did not time: instants on the device track, no duration
    untimed_why: str = ""

    @property
    def shown_events(self) -> int:
        """Events on the tracks (the metadata that names the tracks not counted)."""
        return sum(1 for e in self.events if e["ph"] != "M")


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def _meta(kind: str, pid: int, tid: int, value: Any) -> dict[str, Any]:
    key = "name" if kind.endswith("_name") else "sort_index"
    return {"ph": "M", "name": kind, "pid": pid, "tid": tid, "args": {key: value}}


def _rank_of(compile_id: str, default: int) -> tuple[int, str]:
    """(rank, compile id as torch prints it): a multi-rank bundle prefixes ``rankN/``."""
    m = _RANK_PREFIX.match(compile_id)
    return (int(m.group(1)), compile_id[m.end():]) if m else (default, compile_id)


def _kernels_by_compile(data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for k in data.get("kernels") or []:
        if isinstance(k, dict) and k.get("compile_id"):
            out.setdefault(str(k["compile_id"]), []).append(k)
    return out


def _phase_args(phase: str, seconds: float, total: float, kernels: list[dict[str, Any]]) -> dict[str, Any]:
    args: dict[str, Any] = {"seconds": seconds, "share_of_compile": round(seconds / total, 4) if total else None,
                            "timing": COMPILE_TIMING}
    field_ = {"C++/Triton compile": "compile_s", "autotune": "autotune_s"}.get(phase)
    timed = sorted((k for k in kernels if _num(k.get(field_)) is not None), key=lambda k: -k[field_]) if field_ else []
    if timed:
        args["kernels"] = {str(k.get("name")): k[field_] for k in timed[:KERNEL_ARGS_LIMIT]}
        args["kernels_timed"] = len(timed)
        if phase == "C++/Triton compile":
            args["kernels_note"] = "each kernel's own compile time; they compile in parallel workers, so " \
                                   "their sum may exceed this phase"
    return args


SPAN_TIMING = "start and duration as torch recorded them (the trace's chromium_event records), from the job's first"


def _spans(c: dict[str, Any]) -> list[tuple[str, float, float]]:
    spans = c.get("spans")
    if not isinstance(spans, list):
        return []
    return [(str(x[0]), float(x[1]), float(x[2])) for x in spans
            if isinstance(x, list) and len(x) == 3 and _num(x[1]) is not None and _num(x[2]) is not None
            and x[2] >= x[1]]


def compile_events(bundle: Bundle, out: TraceExport) -> None:
    """Per rank (pid), one thread per compile id: the compile, its phases nested inside it. Where the
    bundle kept torch's own timed events (``spans``), they are placed at the times torch recorded, under
    torch's names; an older bundle's phase totals are laid out one after another."""
    data = bundle.section("compile_time") if isinstance(bundle.extra, dict) else None
    if isinstance(data, dict) and any(_spans(c) for c in data.get("compiles") or [] if isinstance(c, dict)):
        _recorded_events(bundle, data, out)
        return
    _laid_out_events(bundle, out)


def _compile_track(out: TraceExport, tids: dict[int, int], c: dict[str, Any], default_rank: int,
                   timing: str) -> tuple[int, int, str, dict[str, Any]]:
    """A compile's track: its rank's process named (once), a thread of its own named for the compile;
    (rank, thread, the compile's title, its args)."""
    rank, torch_cid = _rank_of(str(c["compile_id"]), default_rank)
    if rank not in tids:
        out.events += [_meta("process_name", rank, 0, f"rank {rank}: compiles"),
                       _meta("process_sort_index", rank, 0, rank)]
    tid = tids[rank] = tids.get(rank, 0) + 1
    where = f" ({base_name(str(c['file']))}:{c.get('line')})" if c.get("file") else ""
    title = f"compile {torch_cid} {c.get('function') or '?'}{where}"
    out.events += [_meta("thread_name", rank, tid, title), _meta("thread_sort_index", rank, tid, tid)]
    args = {k: c.get(k) for k in ("compile_id", "function", "file", "line", "graphs", "total_s", "frame_compile_s",
                                  "guards", "shape_guards", "inductor_cache", "fx_cache", "fail")
            if c.get(k) not in (None, "", [])}
    args["timing"] = timing
    return rank, tid, title, args


def _recorded_events(bundle: Bundle, data: dict[str, Any], out: TraceExport) -> None:
    ranks = bundle.environment.get("ranks") if isinstance(bundle.environment, dict) else None
    default_rank = ranks[0] if isinstance(ranks, list) and len(ranks) == 1 and isinstance(ranks[0], int) else 0
    compiles = [c for c in data.get("compiles") or [] if isinstance(c, dict) and _spans(c) and c.get("compile_id")]
    t0 = min(b for c in compiles for _, b, _ in _spans(c))
    tids: dict[int, int] = {}
    for c in compiles:
        rank, tid, title, frame_args = _compile_track(out, tids, c, default_rank, SPAN_TIMING)
        spans = _spans(c)
        begin, end = min(b for _, b, _ in spans), max(e for _, _, e in spans)
        out.events.append({"ph": "X", "name": title, "cat": "compile", "pid": rank, "tid": tid,
                           "ts": round(begin - t0, 3), "dur": round(end - begin, 3), "args": frame_args})
        for name, b, e in spans:
            out.events.append({"ph": "X", "name": name, "cat": "compile phase", "pid": rank, "tid": tid,
                               "ts": round(b - t0, 3), "dur": round(e - b, 3), "args": {"timing": SPAN_TIMING}})
        out.frames += 1


def _laid_out_events(bundle: Bundle, out: TraceExport) -> None:
    data = bundle.section("compile_time") if isinstance(bundle.extra, dict) else None
    if not isinstance(data, dict):
        return
    ranks = bundle.environment.get("ranks") if isinstance(bundle.environment, dict) else None
    default_rank = ranks[0] if isinstance(ranks, list) and len(ranks) == 1 and isinstance(ranks[0], int) else 0
    kernels = _kernels_by_compile(data)
    cursor: dict[int, float] = {}  # rank -> where its next compile starts (µs)
    tids: dict[int, int] = {}
    for c in data.get("compiles") or []:
        total = _num(c.get("total_s")) if isinstance(c, dict) else None
        if total is None or not c.get("compile_id"):
            continue
        cid = str(c["compile_id"])
        rank, tid, title, frame_args = _compile_track(out, tids, c, default_rank, FRAME_TIMING)
        phases = [(str(p), s) for p, s in (c.get("phases") or {}).items() if _num(s) is not None] \
            if isinstance(c.get("phases"), dict) else []
        start = cursor.get(rank, 0.0)
        # The phases add up to the compile's total; rounded per phase they may pass it by a µs or two.
        dur = max(_us(total), round(sum(_us(s) for _, s in phases), 3))
        out.events.append({"ph": "X", "name": title, "cat": "compile", "pid": rank, "tid": tid, "ts": start,
                           "dur": dur, "args": frame_args})
        t = start
        for phase, seconds in phases:
            out.events.append({"ph": "X", "name": phase, "cat": "compile phase", "pid": rank, "tid": tid,
                               "ts": round(t, 3), "dur": _us(seconds),
                               "args": _phase_args(phase, seconds, total, kernels.get(cid, []))})
            t += _us(seconds)
        cursor[rank] = round(start + dur, 3)
        out.frames += 1


def _launch_lines(kernel: Kernel | None, n: int) -> tuple[list[str], list[str]]:
    """Your lines and the library lines of a kernel's n-th launch (the kernel's own where the launch has none)."""
    if kernel is None:
        return [], []
    info = kernel.launch_info[n] if n < len(kernel.launch_info) else None
    user = info.user_lines if info and info.user_lines else kernel.user_lines
    library = info.library_lines if info and info.library_lines else kernel.library_lines
    return [f"{u.file}:{u.line}" for u in user], [f"{u.file}:{u.line}" for u in library]


def _device_name(run: dict[str, Any]) -> str:
    dev = run.get("device") if isinstance(run.get("device"), dict) else {}
    return measured_device(dev) or str(dev.get("device") or "device")


LAUNCH_FIELDS = ("kind", "bytes_read", "bytes_written", "moved", "gbps", "pct_copy", "us_flushed",
                 "pct_copy_flushed", "flops", "tflops", "pct_matmul", "matmul_ceiling", "flag")


def device_events(bundle: Bundle, out: TraceExport, pid: int) -> None:
    """One compiled call's launches, back to back in launch order, on the device track ``pid``; a launch
    the bench did not time is an instant where it came, with no duration made up for it."""
    bench = bundle.extra.get("bench") if isinstance(bundle.extra, dict) else None
    run = bench.get("run") if isinstance(bench, dict) else None
    rows = run.get("per_kernel") if isinstance(run, dict) else None
    if not isinstance(rows, list) or not rows:
        return
    kernels = {k.id: k for k in bundle.kernels}
    timing = LAUNCH_TIMING.format(statistic=run.get("per_launch_statistic") or "per compiled call")
    copy = ((run.get("ceilings") or {}).get("copy") or {}).get("gbps") if isinstance(run.get("ceilings"), dict) else None
    out.untimed_why = str(run.get("per_launch_skipped") or "no device kernel of the profile matched it")
    seen: dict[str, int] = {}
    t = 0.0
    events = []
    for row in rows:
        if not isinstance(row, dict):
            continue
        kid = str(row.get("kernel_id") or "")
        n = seen[kid] = seen.get(kid, -1) + 1
        user, library = _launch_lines(kernels.get(kid), n)
        args: dict[str, Any] = {"kernel_id": kid, "launch": n, "lines": user}
        if library:
            args["library_lines"] = library
        name = str(row.get("name") or kid)
        us = _num(row.get("us"))
        if us is None:
            out.untimed += 1
            events.append({"ph": "i", "s": "t", "name": name, "cat": "launch (not timed)", "pid": pid, "tid": 1,
                           "ts": round(t, 3), "args": {**args, "timing": f"not timed: {out.untimed_why}"}})
            continue
        args.update({k: row[k] for k in LAUNCH_FIELDS if row.get(k) not in (None, "")})
        if row.get("pct_copy") is not None and _num(copy) is not None:
            args["pct_copy_of"] = f"the copy ceiling, {copy} GB/s (bytes read + written per second)"
        args["us"] = row.get("us")
        args["timing"] = timing
        events.append({"ph": "X", "name": name, "cat": "launch", "pid": pid, "tid": 1,
                       "ts": round(t, 3), "dur": round(us, 3), "args": args})
        t += round(us, 3)
        out.launches += 1
    if not out.launches:  # nothing measured: no device track
        return
    out.events += [_meta("process_name", pid, 0, f"device: {_device_name(run)} (bench)"),
                   _meta("process_sort_index", pid, 0, pid),
                   _meta("thread_name", pid, 1, f"one compiled call: {len(events)} launches"), *events]


def trace_export(bundle: Bundle) -> TraceExport:
    """The events of ``bundle``: compile tracks first, then the device track (its pid after the ranks')."""
    out = TraceExport()
    compile_events(bundle, out)
    pids = [e["pid"] for e in out.events]
    device_events(bundle, out, max(pids) + 1 if pids else 0)
    return out


def trace_document(bundle: Bundle, export: TraceExport, *, bundle_path: str, version: str) -> dict[str, Any]:
    """The Chrome-trace JSON object: traceEvents, displayTimeUnit, otherData."""
    other: dict[str, Any] = {"bundle": bundle_path, "kernelscope": version,
                             "target": (bundle.target or {}).get("spec") or "",
                             "timing": "the bundle keeps durations, not start times: events are laid out one after "
                                       "another (see each event's args.timing); the compile and device tracks "
                                       "each start at 0 and are not on one clock",
                             "compiles": export.frames, "launches": export.launches}
    if export.untimed:
        other["untimed_launches"] = export.untimed
        other["untimed_why"] = export.untimed_why
    return {"traceEvents": export.events, "displayTimeUnit": "ms", "otherData": other}
