"""A finished ``kernelscope run`` made into its bundle: the trace logs split by the rank that wrote them, one
bundle holding every rank (compile ids ``rankN/...``; ``--rank N`` keeps one), saying why the program stopped
(``target["stopped"]``, its first note) and, where it compiled nothing or failed, why (RunResult's
message). The trace becomes a bundle on the same path as ``kernelscope open`` (capture.collect).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kernelscope.bundle import provenance
from kernelscope.bundle.io import commit_staging_dir, fresh_path, is_bundle_folder, make_staging_dir, save_manifest
from kernelscope.bundle.model import Bundle
from kernelscope.capture.collect import write_bundle_from_work
from kernelscope.capture.lifeline import signal_name
from kernelscope.capture.program_command import NO_HOOK_GRACE_S, RunError, last_line, no_torch_line
from kernelscope.ingest.tracelog import TraceLog, parse_trace_folder
from kernelscope.textsafe import one_line
from kernelscope.units import plural

NO_GRAPH = "no graph compiled"
# The last line of a program whose Python has no torch at all (not a broken torch: torch._C and the like).
NO_TORCH = re.compile(r"\bModuleNotFoundError: No module named 'torch'$")


@dataclass
class RunResult:
    status: str  # "ok" or "failed" (the program failed, or compiled nothing)
    stopped: str  # why the program stopped: graphs, timeout, interrupted, cancelled, exited
    message: str  # one line: what happened
    outs: list[Path] = field(default_factory=list)  # the bundle (one: every rank of a job is in it)
    bundles: list[Bundle] = field(default_factory=list)
    rc: int | None = None  # the program's exit status when it ended by itself
    seconds: float = 0.0


class RunAsked(Protocol):
    """What a run was asked, and the events its program sent (capture.program.ProgramRun)."""

    command: list[str]
    cwd: str
    out: Path
    graphs: int | None
    timeout: float | None
    rank: int | None
    mode: str
    replace: bool
    events: list[dict[str, Any]]


def collect_bundles(run: RunAsked, work: Path, script: str | None, rc: int | None, seconds: float,
                    stop_reason: str) -> RunResult:
    """The bundles of a run whose program has ended (``stop_reason``: why it was stopped, '' when it exited)."""
    stopped = stop_reason or "exited"
    graphs_seen = max((e.get("graphs", 0) for e in run.events if e.get("phase") in ("compile", "stopped")),
                      default=0)
    why = {
        "graphs": f"stopped after {plural(graphs_seen, 'graph')} compiled and their first calls returned "
                  f"(--graphs {run.graphs})",
        "graphs-trace": f"stopped {NO_HOOK_GRACE_S:g} s after the trace held {plural(run.graphs or 0, 'graph')} "
                        f"(--graphs {run.graphs}; the program is not Python, its calls were not watched)",
        "timeout": f"stopped after {run.timeout:g} s (--timeout)" if run.timeout else "stopped (--timeout)",
        "interrupted": "stopped by Ctrl-C",
        "cancelled": "stopped: cancelled",
        "signal:SIGTERM": "stopped: kernelscope received SIGTERM",
        "signal:SIGHUP": "stopped: kernelscope received SIGHUP (its terminal closed)",
    }.get(stopped, f"stopped: kernelscope received {stopped[7:]}" if stopped.startswith("signal:") else "")
    failed = ""
    if stopped == "exited":
        why = f"the program exited with status {rc}" if rc is not None and rc >= 0 else \
            f"the program was killed by {signal_name(-(rc or 0))}"
        if rc:
            last = last_line(work / "stderr.txt")
            failed = why + (f": {last}" if last else "") + " (the traceback is in the bundle's logs/stderr.txt)"
    by_rank = traces_by_rank(work / "trace")
    if failed and not graphs_seen and not by_rank and NO_TORCH.search(last_line(work / "stderr.txt")):
        # Nothing to explore, and a bundle of it would only make the retry need --force.
        raise RunError(no_torch_line(run.command, run.cwd))
    if run.rank is not None and by_rank and run.rank not in by_rank:
        known = ", ".join(str(r) for r in sorted(k for k in by_rank if k is not None)) or "none"
        raise RunError(f"no trace of rank {run.rank}; ranks found: {known}")
    if run.rank is not None:
        by_rank = {run.rank: by_rank[run.rank]}
    env = next((e.get("environment") for e in run.events if e.get("phase") == "environment"), None) or {}
    ranks = sorted(r for r in by_rank if r is not None)
    if len(by_rank) > 1:  # every rank in one job bundle (compile ids rankN/...: `show --job` compares them)
        targets = [(None, run.out, [t for r in ranks for t in by_rank[r]])]
    else:
        only = next(iter(by_rank), None)
        targets = [(only, run.out, by_rank.get(only, []))]
    result = RunResult("ok", stopped, why, rc=rc, seconds=seconds)
    moved: list[str] = []
    for rank, out, traces in targets:
        bundle = write_bundle(run, work, out, script, traces, rank, ranks, env, stopped, why, failed, rc, seconds)
        if Path(bundle.root) != out:  # the program made OUT itself: the bundle went beside it
            moved.append(f"{out} appeared while the program ran (the program made it?), so the bundle went "
                         f"to {bundle.root}")
        result.outs.append(Path(bundle.root))
        result.bundles.append(bundle)
    if any(b.status != "ok" for b in result.bundles):
        result.status = "failed"
        result.message = result.bundles[0].error
    result.message = "; ".join([result.message, *moved])
    return result


def write_bundle(run: RunAsked, work: Path, out: Path, script: str | None, traces: list[TraceLog], rank: int | None,
                 ranks: list[int], env: dict, stopped: str, why: str, failed: str, rc: int | None,
                 seconds: float) -> Bundle:
    """One rank's bundle (the whole run's without ranks), written to ``out`` or, when the program made ``out``
    while it ran, beside it."""
    target = {"spec": shlex.join(run.command), "kind": "command", "origin": "run", "command": run.command,
              "cwd": run.cwd, "file": script or "", "name": "",
              "stopped": {"reason": stopped, "message": why, "exit_status": rc, "seconds": round(seconds, 2),
                          "graphs_asked": run.graphs, "timeout": run.timeout}}
    if rank is not None:
        target["rank"] = rank
    bundle = Bundle(target=target, options={"mode": run.mode, "device": env.get("device")},
                    environment={**env, "source": "kernelscope run", "ranks": ranks})
    bundle.timings = {"run": round(seconds, 3)}
    staging = make_staging_dir(out)
    try:
        write_bundle_from_work(work, staging, bundle, user_file=script or "", traces=traces)
        elsewhere = trace_elsewhere(run.events, work)
        if not bundle.graphs and elsewhere:
            bundle.status, bundle.error_kind = "failed", "no_graph"
            bundle.error = f"{NO_GRAPH} in kernelscope's trace: {elsewhere}"
        elif not bundle.graphs:
            bundle.status, bundle.error_kind = "failed", "no_graph"
            hint = (" before the program compiled its first graph" if stopped in ("cancelled", "interrupted")
                    or stopped.startswith("signal:")
                    else "; does the program call torch.compile, and does it reach the compiled code?")
            bundle.error = f"{NO_GRAPH}: {why}{hint}"
            if failed:
                bundle.error = f"{NO_GRAPH}: {failed}"
        elif failed:
            bundle.status, bundle.error, bundle.error_kind = "failed", failed, "program"
        bundle.notes.insert(0, why[:1].upper() + why[1:])
        if len(ranks) > 1 and rank is None:
            bundle.notes.append(f"ranks {', '.join(map(str, ranks))} side by side (compile ids rankN/...; "
                                "`kernelscope show --job` compares them); `kernelscope run --rank N` keeps one")
        if env.get("device") != "cuda":
            bundle.notes.append("Triton stages absent unless the program compiled for a CUDA device")
        if (out.exists() or out.is_symlink()) and not (run.replace and is_bundle_folder(out)):
            # Free at the start (checked): the program made it while it ran. Its run is kept beside it.
            taken, out = out, fresh_path(out.parent, out.name)
            bundle.notes.insert(0, f"{taken} appeared while the program ran (the program made it?): "
                                   f"this bundle went to {out}")
        save_manifest(bundle, staging)
        commit_staging_dir(staging, out, replace=run.replace)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    bundle.root = str(out)
    provenance.remember(bundle)  # this machine wrote its code: a bench of it needs no --run-bundle-code
    return bundle


def trace_elsewhere(events: list[dict[str, Any]], work: Path) -> str:
    """Why the program's graphs are not in this run's trace though the hook saw them compile ('' when
    it saw none): the program set TORCH_TRACE (or torch's trace logging) itself."""
    seen = max((e.get("graphs", 0) for e in events if e.get("phase") == "compile" and "pid" in e),
               default=0)
    if not seen:
        return ""
    env = next((e for e in events if e.get("phase") == "environment"), {})
    ours = str(work / "trace")
    where = next((d for d in [env.get("torch_trace"), *(env.get("trace_dirs") or [])]
                  if isinstance(d, str) and d and os.path.abspath(d) != ours), "")
    said = f" (to {one_line(where, 200)})" if where else ""
    return (f"the program compiled {plural(seen, 'graph')}, but its trace went elsewhere{said}: it sets "
            "TORCH_TRACE or torch's trace logging itself; leave that to kernelscope run")


def traces_by_rank(folder: Path) -> dict[int | None, list[TraceLog]]:
    """The trace logs by the rank that wrote them (None: a job without ranks)."""
    ranks: dict[int | None, list[TraceLog]] = {}
    for _path, log in parse_trace_folder(folder):
        ranks.setdefault(log.filed_rank(), []).append(log)
    if len(ranks) > 1 and None in ranks:  # the launcher's own log (no rank) holds no graphs of a rank
        ranks.pop(None)
    return ranks
