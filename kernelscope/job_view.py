"""The whole job at a glance (``show --job``, the report's job section): every compiled frame as a tree by
the line of the user's code that reached it, each compile with its graphs, kernels, launches, compile
time, cache, guards, recompile reason and graph breaks; the ranks of a distributed job as columns, with
what differs between them flagged (a compile on some ranks only, a different FX graph for the same
compile, different guard counts or collective ops, a cache hit on one rank and a miss on another, a
compile time far from the other ranks').

Read from the index, the compile-time summary and each graph's FX text (one file a graph): no graph's
detail file. Pure: no torch, no textual.
"""

from __future__ import annotations

import hashlib
import re
import statistics
from dataclasses import dataclass, field
from typing import Any

from kernelscope.bundle.model import Bundle, Graph, Kernel
from kernelscope.bundle.no_code import failure_text
from kernelscope.units import base_name, plural

_RANK = re.compile(r"^rank(\d+)/(.*)$")
# Collective ops as Inductor's FX graphs name them (functional collectives, c10d, their wait).
_COLLECTIVE = re.compile(r"\b(?:_c10d_functional|c10d_functional|c10d)\.(all_reduce|all_gather\w*|reduce_scatter\w*|"
                         r"all_to_all\w*|broadcast\w*)")
SLOW = 2.0  # a compile this many times the other ranks' median (and a second more) is flagged


def split_rank(compile_id: str) -> tuple[int | None, str]:
    """``rank1/0/0`` -> (1, ``0/0``); a compile id without a rank -> (None, it)."""
    m = _RANK.match(compile_id)
    return (int(m.group(1)), m.group(2)) if m else (None, compile_id)


@dataclass
class RankCompile:
    """One compile as one rank ran it."""

    graphs: list[Graph] = field(default_factory=list)
    kernels: int = 0
    launches: int = 0
    seconds: float | None = None
    cache: str = ""
    guards: int | None = None
    fx_digest: dict[str, str] = field(default_factory=dict)  # graph kind -> digest of its post-grad FX text
    collectives: dict[str, int] = field(default_factory=dict)  # op -> count, over its graphs
    device_us: float | None = None  # after a bench: its launches' device time in one compiled call
    restarts: list[str] = field(default_factory=list)  # why Dynamo restarted its analysis (compilation_metrics)


@dataclass
class JobCompile:
    """A compile id (``0/0``, ``0/1`` for a recompile of frame 0) across the ranks that ran it."""

    compile_id: str
    function: str
    where: str
    site: str
    by_rank: dict[int | None, RankCompile] = field(default_factory=dict)
    recompile: str = ""  # why it compiled again (the guard that failed)
    breaks: list[str] = field(default_factory=list)
    differs: list[str] = field(default_factory=list)


def job_compiles(b: Bundle, read_text=None) -> tuple[list[int | None], list[JobCompile]]:
    """The job's ranks and its compiles in the order they began, each with what differs between ranks.
    ``read_text(bundle, relpath)`` reads a graph's FX text (bundle.io.read_text; None: FX not compared)."""
    kernels_of: dict[str, list[Kernel]] = {}
    for k in b.kernels:
        kernels_of.setdefault(k.graph, []).append(k)
    timed = {c.get("compile_id"): c for c in (b.section("compile_time") or {}).get("compiles", [])
             if isinstance(c, dict)} if isinstance(b.extra, dict) else {}
    device = device_us_by_kernel(b)
    compiles: dict[str, JobCompile] = {}
    ranks: set[int | None] = set()
    for g in b.graphs:
        rank, cid = split_rank(g.compile_id)
        ranks.add(rank)
        base = cid.split("_", 1)[0]  # a restarted attempt (0/0_1) is the same compile
        jc = compiles.get(base)
        if jc is None:
            jc = compiles[base] = JobCompile(compile_id=base, function=g.code_name,
                                             where=f"{base_name(g.code_file)}:{g.code_line}" if g.code_file else "",
                                             site=g.compiled_from() if g.called_elsewhere() else "")
        rc = jc.by_rank.setdefault(rank, RankCompile())
        rc.graphs.append(g)
        ks = kernels_of.get(g.id, [])
        rc.kernels += len(ks)
        rc.launches += sum(k.launches for k in ks)
        launch_us = [device[k.id] for k in ks if k.id in device]
        if launch_us:
            rc.device_us = (rc.device_us or 0.0) + sum(launch_us)
        info = timed.get(g.compile_id.split("_", 1)[0]) or timed.get(base if rank is None else f"rank{rank}/{base}")
        if info is not None:
            rc.seconds = info.get("total_s")
            rc.cache = _cache_text(info.get("fx_cache") or "", info.get("inductor_cache") or "")
            rc.guards = info.get("guards")
            rc.restarts = [str(x) for x in info.get("restarts") or []]
        if read_text is not None and g.files.get("fx-post-grad"):
            text = read_text(b, g.files["fx-post-grad"])
            rc.fx_digest[g.kind] = hashlib.sha1(_without_paths(text).encode()).hexdigest()[:12]
            for op in _COLLECTIVE.findall(text):
                rc.collectives[op] = rc.collectives.get(op, 0) + 1
    for r in b.recompiles:
        rank, cid = split_rank(r.compile_id)
        jc = compiles.get(cid.split("_", 1)[0])
        if jc is not None:
            jc.recompile = r.reason + (f" (expected {r.guard['expected']}, actual {r.guard['actual']})"
                                       if r.guard.get("expected") is not None else "")
    for gb in b.graph_breaks:
        _, cid = split_rank(gb.compile_id)
        jc = compiles.get(cid.split("_", 1)[0])
        if jc is not None:
            jc.breaks.append(f"{base_name(gb.file)}:{gb.line}: {gb.reason}")
    listed = {r for r in (b.environment.get("ranks") or []) if isinstance(r, int)} if isinstance(b.environment, dict) else set()
    if None not in ranks and len(ranks | listed) > 1:  # a rank whose log holds no compile still has its column
        ranks |= listed
    order = sorted(ranks, key=lambda r: -1 if r is None else r)
    for jc in compiles.values():
        jc.differs = _differences(jc, order)
    return order, list(compiles.values())


def _cache_text(fx: str, inductor: str) -> str:
    """The compile's cache result: Dynamo's metrics (FX graph cache) and Inductor's own phase event."""
    if fx and inductor and fx != inductor:
        return f"FX graph cache {fx}, Inductor {inductor}"
    return f"cache {fx or inductor}" if fx or inductor else ""


def short_time(us: float) -> str:
    """A device time in a column of four digits: ``12.3 µs``, ``1.84 ms``."""
    return f"{us:.1f} µs" if us < 1000 else f"{us / 1000:.2f} ms"


MAX_LAUNCH_US = 1e9  # a launch timed at over 1,000 s is no measurement (a damaged or forged record)


def bench_run(b: Any) -> dict[str, Any] | None:
    """The bundle's bench run record when it lists per-launch times (``per_kernel``, a list), else None."""
    bench = b.extra.get("bench") if isinstance(b.extra, dict) else None
    run = bench.get("run") if isinstance(bench, dict) else None
    return run if isinstance(run, dict) and isinstance(run.get("per_kernel"), list) else None


def device_us_by_kernel(b: Bundle, read: bool = True) -> dict[str, float]:
    """After a bench: each of the bundle's kernels' device time in one compiled call (its launches' µs
    added up), by kernel id; {} before a bench. A time that is not a number in [0, MAX_LAUNCH_US] (NaN,
    1e300, -5, true) is no time, and a row naming no kernel of the bundle (a bench of an earlier capture)
    is left out. ``read=False``: a job's kernels are not read for it (format 5, a first frame): a row is
    kept where its id names a graph of the bundle (a kernel's id is its graph's, ``/``, its name), and
    which of those name no kernel is known once the graph's kernels are read."""
    run = bench_run(b)
    if run is None or not run["per_kernel"]:
        return {}
    if read:
        keep = {k.id for k in b.kernels}.__contains__
    else:
        graphs = {g.id for g in b.graphs}
        keep = lambda kid: kid.rpartition("/")[0] in graphs  # noqa: E731
    out: dict[str, float] = {}
    for row in run["per_kernel"]:
        kid, us = (row.get("kernel_id"), row.get("us")) if isinstance(row, dict) else (None, None)
        if isinstance(kid, str) and type(us) in (int, float) and 0 <= us <= MAX_LAUNCH_US and keep(kid):
            out[kid] = out.get(kid, 0.0) + float(us)
    return out


def _without_paths(text: str) -> str:
    """An FX text with its ``# File: path:line`` comments' paths cut to the file name: ranks may run the
    same script from different folders."""
    return re.sub(r"# File: \S*/([^/\s]+)", r"# File: \1", text)


def _differences(jc: JobCompile, ranks: list[int | None]) -> list[str]:
    if len(ranks) < 2:
        return []
    out = []
    ran = [r for r in ranks if r in jc.by_rank]
    if len(ran) < len(ranks):
        out.append(f"only on rank{'s' if len(ran) > 1 else ''} {', '.join(map(str, ran))}")
    kinds = {g.kind for rc in jc.by_rank.values() for g in rc.graphs}
    for kind in sorted(kinds):
        having = [r for r in ran if any(g.kind == kind for g in jc.by_rank[r].graphs)]
        if len(having) < len(ran):
            out.append(f"{kind} graph only on rank{'s' if len(having) > 1 else ''} {', '.join(map(str, having))}")
            continue
        digests = {r: jc.by_rank[r].fx_digest.get(kind) for r in having}
        if None not in digests.values() and len(set(digests.values())) > 1:
            groups: dict[Any, list[int | None]] = {}
            for r, d in digests.items():
                groups.setdefault(d, []).append(r)
            out.append(f"{kind} FX graph differs: " + " vs ".join("ranks " + ", ".join(map(str, rs)) for rs in groups.values()))
    guards = {r: jc.by_rank[r].guards for r in ran}
    if len({v for v in guards.values() if v is not None}) > 1:
        out.append("guards differ: " + ", ".join(f"rank {r} {v}" for r, v in guards.items()))
    colls = {r: tuple(sorted(jc.by_rank[r].collectives.items())) for r in ran}
    if len(set(colls.values())) > 1:
        out.append("collectives differ: " + "; ".join(f"rank {r} " + (", ".join(f"{n} {op}" for op, n in c) or "none")
                                                      for r, c in colls.items()))
    caches = {r: jc.by_rank[r].cache for r in ran if jc.by_rank[r].cache}
    if len(set(caches.values())) > 1:
        out.append("cache differs: " + ", ".join(f"rank {r} {c}" for r, c in caches.items()))
    secs = {r: jc.by_rank[r].seconds for r in ran if jc.by_rank[r].seconds is not None}
    if len(secs) >= 2:
        for r, s in secs.items():
            others = [v for q, v in secs.items() if q != r]
            median = statistics.median(others)
            if s > SLOW * median and s - median > 1.0:
                out.append(f"rank {r} compiled in {s:.1f} s, the others in {median:.1f} s")
    return out


def job_text(b: Bundle, read_text=None) -> list[str]:
    """``show --job``: the tree of the job's compiles by the line that reached them, ranks as columns."""
    ranks, compiles = job_compiles(b, read_text)
    multi = len(ranks) > 1
    frames = {jc.compile_id.split("/")[0] for jc in compiles}
    head = (f"job: {plural(len(ranks), 'rank')} ({', '.join(map(str, ranks))}), " if multi else "job: ")
    out = [head + f"{plural(len(frames), 'compiled frame')}, {plural(len(compiles), 'compile')}, "
           f"{plural(len(b.graphs), 'graph')}, {plural(len(b.kernels), 'kernel')}"
           + ("; what differs between ranks is marked ⚠" if multi else "")]
    width = 26
    by_site: dict[str, list[JobCompile]] = {}
    for jc in compiles:
        by_site.setdefault(jc.site or "(no caller of yours on the stack the trace recorded)", []).append(jc)
    for site, group in by_site.items():
        out += ["", site]
        for jc in group:
            label = f"  compile {jc.compile_id}  {jc.function or '?'}" + (f" at {jc.where}" if jc.where else "")
            out.append(label + (f"  ⚠ {jc.differs[0]}" if jc.differs else ""))
            if multi:
                out.append((f"    {'':<{width}}" + "".join(f"{'rank ' + str(r):<28}" for r in ranks)).rstrip())
            rows = [("graphs", lambda rc: ", ".join(g.kind for g in rc.graphs)),
                    ("kernels, launches", lambda rc: f"{rc.kernels}, {rc.launches}"),
                    # what the trace or capture did not record says so (a bare "?" read as unknown why)
                    ("compile time, cache", lambda rc: (f"{rc.seconds:.2f} s" if rc.seconds is not None
                                                        else "no compile record") + (f" ({rc.cache})" if rc.cache else "")),
                    ("guards", lambda rc: "no compile record" if rc.guards is None else str(rc.guards))]
            if any(rc.device_us is not None for rc in jc.by_rank.values()):
                rows.append(("device time (bench)", lambda rc: "not timed" if rc.device_us is None
                             else short_time(rc.device_us)))
            if any(rc.collectives for rc in jc.by_rank.values()):
                rows.append(("collectives", lambda rc: ", ".join(f"{n} {op}" for op, n in sorted(rc.collectives.items()))
                             or "none"))
            for name, cell in rows:
                cells = [cell(jc.by_rank[r]) if r in jc.by_rank else "—" for r in ranks]
                out.append(f"    {name:<{width}}" + "".join(f"{c:<28}" for c in cells).rstrip())
            codeless = next((g for rc in jc.by_rank.values() for g in rc.graphs if g.no_code), None)
            if codeless is not None:  # another backend's frame, a failed compile: why, and the exception whole
                out.append(f"    {'no kernels':<{width}}{codeless.no_code}")
                out += [f"    {'':<{width}}{line}" for line in failure_text(codeless.failure).splitlines()
                        if codeless.failure]
            if jc.recompile:
                out.append(f"    {'recompiled because':<{width}}{jc.recompile}")
            for gb in jc.breaks[:3]:
                out.append(f"    {'graph break':<{width}}{gb}")
            # A restart at a graph break is the break (said above); any other is said once.
            restarts = dict.fromkeys(x for rc in jc.by_rank.values() for x in rc.restarts
                                     if x and not any(gb.endswith(": " + x) or x in gb for gb in jc.breaks))
            for x in list(restarts)[:3]:
                out.append(f"    {'restarted because':<{width}}{x}")
            for d in jc.differs[1:]:
                out.append(f"    ⚠ {d}")
    flagged = [(jc, d) for jc in compiles for d in jc.differs]
    if multi:
        out += ["", f"differs between ranks ({len(flagged)}):" if flagged else "the ranks compiled the same: "
                "every compile on every rank, the same FX graphs, guards, collectives and cache results"]
        out += [f"  ⚠ compile {jc.compile_id} ({jc.function or '?'}{' at ' + jc.where if jc.where else ''}): {d}"
                for jc, d in flagged]
    return out
