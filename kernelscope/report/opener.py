"""A TORCH_TRACE folder from anyone's job as a bundle, one rank at a time (``kernelscope open``: commands/open.py).

Several ranks write one log each (``dedicated_log_torch_trace_rank_N_*.log``); a bundle holds one
rank, the lowest unless ``--rank`` says otherwise. Bundles go to a per-user cache unless ``-o`` names
a folder, so opening never writes next to (or over) the user's files.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from kernelscope.bundle.io import BundleError

_RANK_IN_NAME = re.compile(r"rank_(\d+)")
_RANK_IN_RECORD = re.compile(r"\"rank\": ?(\d+)")


def cache_root() -> Path:
    from kernelscope.environment import cache_dir

    return cache_dir() / "opened"


def default_out(trace: Path, rank: int | None) -> Path:
    """A stable folder per (trace, rank) in the user's cache: reopening refreshes it."""
    trace = trace.absolute()
    name = trace.stem if trace.is_file() else trace.name
    if name in ("trace", "traces", "torch_trace", ""):
        name = f"{trace.parent.name}-{name or 'trace'}"
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "trace"
    digest = hashlib.sha1(f"{trace}|{rank}".encode()).hexdigest()[:8]
    return cache_root() / (f"{name}-rank{rank}-{digest}" if rank is not None else f"{name}-{digest}")


def rank_of(log: Path) -> int | None:
    """The rank that wrote a trace log: from its file name, else from its first records."""
    m = _RANK_IN_NAME.search(log.name)
    if m:
        return int(m.group(1))
    from kernelscope.ingest.tracelog import bounded_lines
    from kernelscope.safefile import open_regular

    try:
        with open_regular(log) as fh:  # lines capped: one huge line is never held whole
            for _, line in zip(range(200), bounded_lines(fh)):
                if not line.startswith("\t") and (m := _RANK_IN_RECORD.search(line)):
                    return int(m.group(1))
    except OSError:
        return None
    return None


def logs_by_rank(trace: Path) -> dict[int | None, list[Path]]:
    from kernelscope.ingest.tracelog import trace_files

    ranks: dict[int | None, list[Path]] = {}
    for log in trace_files(trace):
        ranks.setdefault(rank_of(log), []).append(log)
    return ranks


def open_trace(trace: Path, out: Path | None, *, triton_cache: str | None = None, stderr_log: str | None = None,
               rank: int | None = None, replace: bool = False):
    """Write the bundle for one rank of a TORCH_TRACE folder; returns (bundle, out, ranks found)."""
    from kernelscope.ingest.open_trace import bundle_from_trace

    if not trace.exists():
        raise BundleError(f"{trace}: no such TORCH_TRACE folder or file")
    if stderr_log is not None and not Path(stderr_log).is_file():
        raise BundleError(f"{stderr_log}: no such stderr log file")
    ranks = logs_by_rank(trace)
    if not ranks:
        raise BundleError(f"{trace}: no TORCH_TRACE logs (*.log) found; point at the folder TORCH_TRACE named")
    known = sorted(r for r in ranks if r is not None)
    if rank is not None and rank not in ranks:
        raise BundleError(f"{trace}: no log of rank {rank}; ranks found: {', '.join(map(str, known)) or 'none'}")
    if rank is None and len(ranks) > 1:
        rank = known[0] if known else None
    chosen = ranks[rank] if len(ranks) > 1 or rank is not None else [p for logs in ranks.values() for p in logs]
    if out is None:
        out = default_out(trace, rank if len(ranks) > 1 or rank is not None else None)
        replace = True  # our own cache folder: reopening refreshes it (never a non-bundle folder)
    with tempfile.TemporaryDirectory(prefix="kernelscope-open-") as tmp:
        source: Path = trace
        if len(chosen) == 1:
            source = chosen[0]
        elif len(ranks) > 1:  # this rank's logs only: link them into a folder of their own
            for i, log in enumerate(chosen):
                os.symlink(log.absolute(), Path(tmp) / f"{i:03d}-{log.name}")
            source = Path(tmp)
        notes = ()
        if len(ranks) > 1:
            others = [str(r) for r in known if r != rank]
            notes = (f"rank {rank} of ranks {', '.join(map(str, known))}; "
                     f"`kernelscope open --rank N` opens rank {' or '.join(others) or 'N'}",)
        bundle = bundle_from_trace(source, out, triton_cache=triton_cache, stderr_log=stderr_log, replace=replace,
                                   spec=str(trace), notes=notes)
    return bundle, out, known
