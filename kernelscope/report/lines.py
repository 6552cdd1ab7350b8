"""GPU (device) time per line of your code, from a bench result. Pure: no torch, no textual.

``kernelscope bench`` times every launch of the compiled call (``extra["bench"]["run"]["per_kernel"]``,
one row per launch in launch order); the bundle maps each launch to the lines of your code (and of
the libraries) its FX nodes came from. A line's time is counted two ways, labelled:

* **exclusive**: launches whose kernel came from this line alone;
* **shared**: launches of a kernel fused from several lines: each of its lines counts the whole
  kernel (so shared times overlap and do not add up across lines; the kernel is counted once in the sum).

The accounting that adds up: exclusive (all lines) + shared kernels (each once) + launches with no
line + device time that is not a launch of the bundle = the bench's device total per call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernelscope.bundle.bench_record import measured_device
from kernelscope.job_view import bench_run
from kernelscope.units import base_name, shorten_middle

SCOPES = (("user", "your lines"), ("library", "library lines"))


@dataclass
class LineTime:
    file: str
    line: int
    code: str = ""
    exclusive_us: float = 0.0
    shared_us: float = 0.0
    kernels: list[dict[str, Any]] = field(default_factory=list)  # {name, kernel_id, us, shared, launch}

    @property
    def total_us(self) -> float:
        return self.exclusive_us + self.shared_us


@dataclass
class LineTable:
    scope: str  # "user" or "library"
    lines: list[LineTime] = field(default_factory=list)  # hottest first
    exclusive_us: float = 0.0
    shared_once_us: float = 0.0  # the shared kernels, each counted once
    no_line_us: float = 0.0
    rest_us: float = 0.0  # device time not of a timed launch (memsets, unmatched, untimed)
    total_us: float = 0.0


class Stopped(Exception):
    """``line_tables`` was asked to stop (its worker cancelled: the screen closed, the app quit)."""


_WORKING = threading.Lock()  # one working-out at a time: a second asker waits for the first's tables


def line_tables(bundle: Any, stop: Callable[[], bool] | None = None) -> tuple[list[LineTable], dict[str, Any]] | None:
    """The per-line tables (your lines, library lines) and what they were computed from, or None
    when the bundle was never benched (or they could not be worked out: ``give_up``). Worked out once per
    bench record (a job's reads every graph's detail file: seconds; the UI asks from two panes, in a thread).
    ``stop``: asked between launches; when it says so, Stopped is raised and nothing is kept."""
    run = bench_run(bundle)
    if run is None:
        return None
    with _WORKING:
        if not line_tables_ready(bundle):
            bundle.__dict__["_line_tables"] = (run, len(run["per_kernel"]), _line_tables(bundle, run, stop))
    return bundle.__dict__["_line_tables"][2]


def give_up(bundle: Any) -> None:
    """No per-line tables for this bench record (working them out failed): line_tables answers None."""
    run = bench_run(bundle)
    if run is not None:
        bundle.__dict__["_line_tables"] = (run, len(run["per_kernel"]), None)


def line_tables_ready(bundle: Any) -> bool:
    """Whether ``line_tables`` answers at once (never benched, or worked out for this bench record)."""
    run = bench_run(bundle)
    kept = bundle.__dict__.get("_line_tables")
    return run is None or (kept is not None and kept[0] is run and kept[1] == len(run["per_kernel"]))


def _line_tables(bundle: Any, run: dict[str, Any], stop: Callable[[], bool] | None = None
                 ) -> tuple[list[LineTable], dict[str, Any]]:
    kernels = {k.id: k for k in bundle.kernels}
    seen: dict[str, int] = {}
    launches = []  # (kernel_id, name, us, launch number, {scope: [lines]})
    for i, row in enumerate(run["per_kernel"]):
        if stop is not None and not i % 64 and stop():
            raise Stopped()
        kid = str(row.get("kernel_id") or "")
        n = seen.get(kid, 0)
        seen[kid] = n + 1
        k = kernels.get(kid)
        us = row.get("us")
        per_scope: dict[str, list[Any]] = {"user": [], "library": []}
        if k is not None:
            info = k.launch_info[n] if n < len(k.launch_info) else None
            per_scope["user"] = list(info.user_lines if info and info.user_lines else k.user_lines)
            per_scope["library"] = list(info.library_lines if info and info.library_lines else k.library_lines)
        launches.append((kid, str(row.get("name") or kid), us if isinstance(us, (int, float)) else None, n, per_scope))
    timed_sum = sum(us for _, _, us, _, _ in launches if us is not None)
    total = (run.get("sum_check") or {}).get("total_us")
    total = float(total) if isinstance(total, (int, float)) and total else timed_sum
    tables = []
    for scope, _ in SCOPES:
        t = LineTable(scope=scope, total_us=total, rest_us=total - timed_sum)
        by_line: dict[tuple[str, int], LineTime] = {}
        for kid, name, us, n, per_scope in launches:
            if us is None:
                continue
            keys = []
            for u in per_scope[scope]:
                key = (u.file, u.line)
                if key not in keys:
                    keys.append(key)
                    by_line.setdefault(key, LineTime(file=u.file, line=u.line, code=u.code))
            if not keys:
                t.no_line_us += us
                continue
            shared = len(keys) > 1
            if shared:
                t.shared_once_us += us
            else:
                t.exclusive_us += us
            for key in keys:
                lt = by_line[key]
                if shared:
                    lt.shared_us += us
                else:
                    lt.exclusive_us += us
                lt.kernels.append({"name": name, "kernel_id": kid, "us": us, "shared": shared, "launch": n})
        t.lines = sorted(by_line.values(), key=lambda x: (-x.total_us, x.file, x.line))
        tables.append(t)
    where = {"source": run.get("kernel_source") or "", "device": measured_device(run.get("device")), "total_us": total}
    return tables, where


def fmt_us(x: float) -> str:
    return f"{x / 1000:.2f} ms" if x >= 10000 else f"{x:.1f} µs"


def _pct(x: float, total: float) -> str:
    return f"{100 * x / total:5.1f}%" if total else "     -"  # 100.0% as wide as 5.0%: the columns stay


def lines_text(bundle: Any, limit: int = 30) -> str:
    """``show --lines``: the sorted tables, the accounting that adds up, each line's kernels."""
    got = line_tables(bundle)
    if got is None:
        return ("GPU time per line: this bundle has no bench result; run `kernelscope bench BUNDLE` first "
                "(it times every launch), then `show BUNDLE --lines`\n")
    tables, where = got
    total = where["total_us"]
    if not any(t.lines or t.no_line_us for t in tables):
        return ("Device time per line: the bench timed none of this bundle's launches (per-launch times were not "
                "matched: a GPU bundle benched on the CPU runs other kernels); bench it on the device it was "
                "captured on, then `show BUNDLE --lines`\n")
    out = [f"Device time per line: {fmt_us(total)} per compiled call ({where['source'] or 'bench'}"
           + (f", {where['device']}" if where["device"] else "") + ")",
           "  exclusive: kernels from this line alone; shared: kernels fused from several lines "
           "(each of its lines counts the whole kernel)"]
    for t, (_, title) in zip(tables, SCOPES):
        if not t.lines:
            continue
        out.append("")
        out.append(f"{title:<44} {'exclusive':>17} {'shared':>17}  kernels")
        for lt in t.lines[:limit]:
            label = line_label(f"{base_name(lt.file)}:{lt.line}", lt.code.strip(), 42)
            names = sorted({k['name'] for k in lt.kernels})
            kern = ", ".join(names[:2]) + (f" +{len(names) - 2}" if len(names) > 2 else "")
            out.append(f"  {label:<42} {fmt_us(lt.exclusive_us):>10} {_pct(lt.exclusive_us, total)}"
                       f" {fmt_us(lt.shared_us):>10} {_pct(lt.shared_us, total)}  {kern}")
        if len(t.lines) > limit:
            out.append(f"  … {len(t.lines) - limit} more lines")
        out.append(f"  adds up: exclusive {fmt_us(t.exclusive_us)} + shared kernels (each once) {fmt_us(t.shared_once_us)}"
                   f" + no line {fmt_us(t.no_line_us)} + not a launch {fmt_us(t.rest_us)} = {fmt_us(t.total_us)}"
                   " (the bench's device total)")
    hot = next((t.lines[0] for t in tables if t.lines), None)
    if hot is not None:
        out.append("")
        out.append(f"hottest line {base_name(hot.file)}:{hot.line}: its launches")
        for k in sorted(hot.kernels, key=lambda k: -k["us"])[:10]:
            out.append(f"  {shorten_middle(k['name'], 48):<48} {fmt_us(k['us']):>10}  "
                       f"{'shared' if k['shared'] else 'exclusive'}")
    return "\n".join(out) + "\n"


def line_label(where: str, code: str, width: int) -> str:
    """``file.py:12  code`` in ``width`` cells: a long snippet ends at a word with …, so the columns after
    it stay aligned (it was cut at 44 cells inside a 42-cell column, mid-token)."""
    label = f"{where}  {code}"
    if len(label) <= width:
        return label
    head = label[: width - 1]
    cut = max(head.rfind(" "), *(head.rfind(c) + 1 for c in ".(,["))  # after a word, an attribute or a call
    return (head[:cut] if cut > len(where) + 2 else head).rstrip() + "…"


def heat_by_line(bundle: Any) -> dict[tuple[str, int], float]:
    """(file, line) -> share (0..1) of the call's device time, exclusive + shared, across your and
    library lines: the source pane's gutter heat. Empty without a bench."""
    got = line_tables(bundle)
    if got is None:
        return {}
    tables, where = got
    total = where["total_us"] or 0.0
    out: dict[tuple[str, int], float] = {}
    for t in tables:
        for lt in t.lines:
            out[(lt.file, lt.line)] = max(out.get((lt.file, lt.line), 0.0), lt.total_us / total if total else 0.0)
    return out
