"""Profiler device events matched to the bundle's launches, every launch timed (pure, no torch).

The child records each profiled device kernel as ``[name, µs, group]`` in start order; ``group``
names the top-level op that launched it (the profiler's correlation id, walked up to the outermost
ATen op or to Inductor's record function for a Triton / C++ kernel), or is None when unknown.
An extern call (``extern_kernels.mm``, attention) can run several device kernels (cuBLAS split-K +
reduce, a memset of its workspace): they share a group, so they are one launch's time.

The calls are matched as one sequence: the bundle's launches repeated once per profiled call, so a
call that launched something extra (a memset, a CUDA-graph copy) costs nothing but that extra, which
is kept as *not a launch of the bundle* and named. Times per launch are means over the calls, so the
per-launch times and the unattributed rest add up to the profiler's device total per call.

Under CUDA graphs (reduce-overhead) a replay's kernels all link to one cudaGraphLaunch: they are matched
by order and name, and the copies of the inputs into the graph's static buffers that precede each replay
are split off as *CUDA-graph input copies* (split_graph_replay), counted apart in the sum check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MEMSET_WORDS = ("memset", "memcpy", "fill_kernel", "zero_")


@dataclass
class Unit:
    """Device kernels that one op launched, in start order (their indices in the event list)."""

    named: bool  # a Triton / C++ kernel of the bundle, matched by name
    name: str
    group: Any
    events: list[int] = field(default_factory=list)


def is_memset(name: str) -> bool:
    low = name.lower()
    return any(w in low for w in MEMSET_WORDS)


def event_rows(sequence: list) -> list[tuple[str, float, Any]]:
    """``[name, us]``, ``[name, us, group]`` or ``[name, us, group, info]`` rows as (name, us, group)."""
    return [(r[0], float(r[1]), r[2] if len(r) > 2 else None) for r in sequence]


GRAPH_LAUNCH = "cudaGraphLaunch"
COPY_OPS = ("aten::_foreach_copy_", "aten::copy_")
COPY_WORDS = ("multi_tensor_apply", "copy")


def split_graph_replay(sequence: list, named: set[str]) -> tuple[list[tuple[str, float, Any]], list[tuple[str, float]]]:
    """The compiled call's device kernels under CUDA graphs: (the kernels the bundle's launches ran,
    the input copies). Rows are ``[name, us, group, info]`` with ``info["via"]`` the host call that
    launched the kernel and ``info["op"]`` the op it ran under.

    A replay's kernels all link to one host call (cudaGraphLaunch), so their group says nothing about
    which launch ran them: they lose it and are matched by order and name (a replay runs the graph's
    kernels in the output code's call() order). Before each replay Inductor copies the inputs that do
    not live at the graph's static addresses into its buffers (``torch._foreach_copy_``: a
    multi_tensor_apply_kernel per chunk), launched on their own, outside the graph: a kernel not in
    the replay, not one of the bundle's, run by a copy op (or, with no op recorded, named as a copy)
    is such a copy. Without any replay the rows pass unchanged and nothing is a copy."""
    rows = [(r[0], float(r[1]), r[2] if len(r) > 2 else None, (r[3] if len(r) > 3 else None) or {})
            for r in sequence]
    if not any(info.get("via") == GRAPH_LAUNCH for *_, info in rows):
        return [(n, us, g) for n, us, g, _ in rows], []
    kept: list[tuple[str, float, Any]] = []
    copies: list[tuple[str, float]] = []
    for name, us, group, info in rows:
        if info.get("via") == GRAPH_LAUNCH:
            kept.append((name, us, None))
        elif name not in named and (info.get("op") in COPY_OPS or
                                    (not info.get("op") and any(w in name.lower() for w in COPY_WORDS))):
            copies.append((name, us))
        else:
            kept.append((name, us, group))
    return kept, copies


def copy_summary(copies: list[tuple[str, float]], calls: int, copied: dict[str, Any] | None) -> dict[str, Any]:
    """Per call: copy kernels, their device time, and what they copied (``copied``: the non-static
    inputs, {"tensors", "bytes"}, as the bench child counted them)."""
    calls = max(1, calls)
    names: dict[str, int] = {}
    for name, _ in copies:
        names[name] = names.get(name, 0) + 1
    copied = copied or {}
    return {"kernels_per_call": round(len(copies) / calls, 3), "us": round(sum(us for _, us in copies) / calls, 3),
            "names": [{"name": n, "per_call": round(k / calls, 3)} for n, k in names.items()],
            "tensors": copied.get("tensors"), "bytes": copied.get("bytes")}


def units(events: list[tuple[str, float, Any]], named: set[str]) -> list[Unit]:
    """A named kernel is a unit of its own; other device kernels join the unit before them when the
    same op launched them (same group)."""
    out: list[Unit] = []
    for i, (name, _, group) in enumerate(events):
        if name in named:
            out.append(Unit(True, name, group, [i]))
            continue
        last = out[-1] if out else None
        if last is not None and not last.named and group is not None and last.group == group:
            last.events.append(i)
        else:
            out.append(Unit(False, name, group, [i]))
    return out


def match(launch_names: list[str], named: set[str], events: list[tuple[str, float, Any]],
          calls: int, median: bool = False) -> dict[str, Any]:
    """For each launch of one call: its device time per call (µs, mean over ``calls``; None when no
    kernel matched it in any call) and the device kernels that ran it; plus what no launch claimed.

    A named launch takes the next unit of its name; a run of extern launches takes the units up to
    the next named launch, one each (memset-only units left over first go unclaimed), the last of
    the run taking the rest when there are more units than launches.
    """
    calls = max(1, calls)
    n = len(launch_names)
    seq = [name for _ in range(calls) for name in launch_names]
    us = [ev[1] for ev in events]
    us_units = units(events, named)
    claimed: list[list[int]] = [[] for _ in seq]  # unit indices per launch of the repeated sequence
    unclaimed: list[int] = []
    u = j = 0
    while j < len(seq):
        if seq[j] in named:
            k = _next_named(us_units, seq[j], u)
            if k is None:
                j += 1
                continue
            unclaimed.extend(range(u, k))
            claimed[j] = [k]
            u, j = k + 1, j + 1
            continue
        e = j
        while e < len(seq) and seq[e] not in named:
            e += 1
        stop = _next_named(us_units, seq[e], u) if e < len(seq) else None
        stop = len(us_units) if stop is None else stop
        run = [x for x in range(u, stop) if not us_units[x].named]
        unclaimed.extend(x for x in range(u, stop) if us_units[x].named)
        m = e - j
        while len(run) > m:
            memsets = [x for x in run if all(is_memset(events[i][0]) for i in us_units[x].events)]
            if not memsets:
                break
            run.remove(memsets[0])
            unclaimed.append(memsets[0])
        for x in range(m):
            claimed[j + x] = run[x:x + 1] if x < m - 1 else run[m - 1:] if m - 1 < len(run) else []
        u, j = stop, e
    unclaimed.extend(range(u, len(us_units)))
    total = sum(us) / calls
    per_launch: list[dict[str, Any]] = []
    for i in range(n):
        times, kernels = [], []
        for c in range(calls):
            idx = [ev for x in claimed[c * n + i] for ev in us_units[x].events]
            if idx:
                times.append(sum(us[ev] for ev in idx))
                if not kernels:
                    kernels = [events[ev][0] for ev in idx]
        t = (sorted(times)[len(times) // 2] if median else sum(times) / calls) if times else None
        per_launch.append({"us": t, "calls": len(times), "kernels": kernels})
    rest: dict[str, list[float]] = {}
    for x in sorted(unclaimed):
        for ev in us_units[x].events:
            rest.setdefault(events[ev][0], []).append(us[ev])
    other = [{"name": name, "per_call": round(len(xs) / calls, 3), "us": sum(xs) / calls,
              "memset": is_memset(name)} for name, xs in rest.items()]
    other.sort(key=lambda r: -r["us"])
    if median:  # the total the medians add up to: what one typical call ran, plus what no launch claimed
        total = sum(r["us"] for r in per_launch if r["us"] is not None) + sum(r["us"] for r in other)
    return {"per_launch": per_launch, "unclaimed": other, "total_us": total}


def _next_named(us_units: list[Unit], name: str, start: int) -> int | None:
    return next((x for x in range(start, len(us_units)) if us_units[x].named and us_units[x].name == name), None)


def sum_check(per_launch_us: list[float | None], total_us: float, tolerance_pct: float = 1.0,
              copies_us: float = 0.0, memsets_us: float = 0.0) -> dict[str, Any]:
    """Do the per-launch times (plus the CUDA-graph input copies, ``copies_us``, and the memsets and copies
    the device ran that no launch of the output code names, ``memsets_us``: the caching allocator's, an
    attention kernel's workspace zeroed) add up to the profiler's device total per call (within
    ``tolerance_pct``)? A kernel no launch claims stays outside the sum: it is what the check is for."""
    timed = [x for x in per_launch_us if x is not None]
    s = sum(timed)
    diff = 100.0 * (s + copies_us + memsets_us - total_us) / total_us if total_us else 0.0
    out = {"launches_us": round(s, 3), "total_us": round(total_us, 3), "diff_pct": round(diff, 2),
           "ok": abs(diff) <= tolerance_pct, "untimed": len(per_launch_us) - len(timed),
           "launches": len(per_launch_us)}
    if copies_us:
        out["copies_us"] = round(copies_us, 3)
    if memsets_us:
        out["memsets_us"] = round(memsets_us, 3)
    return out


def where_time_goes(rows: list[dict[str, Any]], total_us: float, unclaimed: list[dict[str, Any]] | None = None,
                    copies: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Per definition (kernel name): time per call over its launches, share of the call's device
    time, launches, bytes and FLOPs moved, achieved GB/s and TFLOP/s; slowest first. ``rows`` are
    the per-launch rows (``name``, ``us``, ``moved``, ``moved_bound``, ``flops``)."""
    table: dict[str, dict[str, Any]] = {}
    for r in rows:
        d = table.setdefault(r["name"], {"name": r["name"], "kind": r.get("kind", ""), "us": 0.0, "launches": 0,
                                         "timed": 0, "bytes": 0, "bytes_bound": False, "flops": 0})
        d["launches"] += 1
        if r.get("us") is not None:
            d["us"] += r["us"]
            d["timed"] += 1
            if d["bytes"] is not None:
                d["bytes"] = None if r.get("moved") is None else d["bytes"] + r["moved"]
            d["bytes_bound"] = d["bytes_bound"] or bool(r.get("moved_bound"))
            if d["flops"] is not None:
                d["flops"] = d["flops"] + r["flops"] if r.get("flops") else None
    for r in unclaimed or []:
        table["(not a launch) " + r["name"]] = {"name": r["name"], "kind": "memset" if r.get("memset") else "unmatched",
                                                "us": r["us"], "launches": r["per_call"], "timed": r["per_call"],
                                                "bytes": None, "bytes_bound": False, "flops": None,
                                                "unclaimed": True}
    if copies and copies.get("kernels_per_call"):
        label = ", ".join(n["name"] for n in copies["names"])
        moved = 2 * copies["bytes"] if copies.get("bytes") else None  # read + written, as the copy ceiling
        table["(CUDA-graph input copies) " + label] = {
            "name": label, "kind": "input copy", "us": copies["us"], "launches": copies["kernels_per_call"],
            "timed": copies["kernels_per_call"], "bytes": moved, "bytes_bound": False, "flops": None,
            "input_copies": True}
    out = []
    for d in table.values():
        us = d["us"] if d["timed"] else None
        d["us"] = round(us, 3) if us is not None else None
        d["share_pct"] = round(100.0 * us / total_us, 1) if us is not None and total_us else None
        d["gbps"] = float(f"{d['bytes'] / (us * 1e-6) / 1e9:.4g}") if us and d["bytes"] else None
        d["tflops"] = float(f"{d['flops'] / (us * 1e-6) / 1e12:.3g}") if us and d["flops"] else None
        out.append(d)
    out.sort(key=lambda d: -(d["us"] or 0))
    return out


def named_times(launch_names: list[str], named: set[str], events: list[tuple[str, float]],
                calls: int) -> list[float | None]:
    """Per launch of one call: the mean µs of its named (Triton / C++) kernel over ``calls`` calls,
    the k-th launch of a name matched with the k-th event of that name in each call; None for
    extern launches, and for a name whose events do not come ``calls`` times its launches."""
    calls = max(1, calls)
    per_call: dict[str, int] = {}
    for name in launch_names:
        if name in named:
            per_call[name] = per_call.get(name, 0) + 1
    seen: dict[str, list[float]] = {}
    for name, us in events:
        if name in per_call:
            seen.setdefault(name, []).append(us)
    out: list[float | None] = []
    occurrence: dict[str, int] = {}
    for name in launch_names:
        if name not in per_call or len(seen.get(name, [])) != per_call[name] * calls:
            out.append(None)
            continue
        k = occurrence.get(name, 0)
        occurrence[name] = k + 1
        xs = seen[name][k::per_call[name]]
        out.append(sum(xs) / len(xs))
    return out
