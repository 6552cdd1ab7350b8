"""A TORCH_TRACE folder from anyone's job as a bundle (``kernelscope open``: commands/open.py).

Several ranks write one log each (``dedicated_log_torch_trace_rank_N_*.log``); the bundle holds every
rank (compile ids ``rankN/...``), or the one ``--rank`` names. Bundles go to a per-user cache unless ``-o`` names
a folder, so opening never writes next to (or over) the user's files.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from kernelscope.bundle.io import BundleError


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


def open_trace(trace: Path, out: Path | None, *, triton_cache: str | None = None, stderr_log: str | None = None,
               rank: int | None = None, replace: bool = False):
    """Write the bundle for one rank of a TORCH_TRACE folder; returns (bundle, out, ranks found)."""
    from kernelscope.ingest.open_trace import bundle_from_trace

    if not trace.exists():
        raise BundleError(f"{trace}: no such TORCH_TRACE folder or file")
    if stderr_log is not None and not Path(stderr_log).is_file():
        raise BundleError(f"{stderr_log}: no such stderr log file")
    from kernelscope.report.trace_folder import sort_folder

    try:
        folder = sort_folder(trace, rank)  # a rank's logs of another job or run are left out there, and said
    except OSError as exc:
        raise BundleError(f"{trace}: cannot read the folder ({exc.strerror or exc})") from exc
    ranks = folder.ranks
    if folder.not_traces:
        shown = ", ".join(folder.not_traces[:5]) + (f" and {len(folder.not_traces) - 5} more" if len(folder.not_traces) > 5 else "")
        raise BundleError(f"{trace}: found no TORCH_TRACE records ({shown}); point at the folder TORCH_TRACE named")
    if not ranks:
        from kernelscope.ingest.open_trace import no_logs_line

        raise BundleError(no_logs_line(Path(trace)))
    known = sorted(r for r in ranks if r is not None)
    if rank is not None and rank not in ranks:
        raise BundleError(f"{trace}: no log of rank {rank}; ranks found: {', '.join(map(str, known)) or 'none'}")
    # Every rank in one job bundle (compile ids rankN/..., `show --job` puts them side by side), or one.
    chosen = ranks[rank] if rank is not None else [p for logs in ranks.values() for p in logs]
    if out is None:
        out = default_out(trace, rank)
        replace = True  # our own cache folder: reopening refreshes it (never a non-bundle folder)
    notes = ()
    if len(ranks) > 1 and rank is not None:
        others = [str(r) for r in known if r != rank]
        notes = (f"rank {rank} of ranks {', '.join(map(str, known))}; `kernelscope open` without --rank opens "
                 f"every rank side by side (`show --job`), `--rank N` rank {' or '.join(others) or 'N'}",)
    elif len(ranks) > 1:
        notes = (f"ranks {', '.join(map(str, known))} side by side (compile ids rankN/...; `kernelscope show "
                 "--job` compares them); `kernelscope open --rank N` opens one",)
    # The logs chosen only (a stray file, another job's log or another rank's is never read).
    bundle = bundle_from_trace(trace, out, triton_cache=triton_cache, stderr_log=stderr_log, replace=replace,
                               spec=str(trace), notes=(*folder.notes, *notes), logs=chosen)
    if rank is None and len(known) > 1:
        compiled = {g.compile_id.split("/", 1)[0] for g in bundle.graphs}
        idle = [r for r in known if f"rank{r}" not in compiled]
        if idle:  # said, and kept as a rank of the job: `show --job` gives it a column of its own
            from kernelscope.bundle.io import save_manifest

            bundle.environment["ranks"] = known
            bundle.notes += [f"rank {r}'s log holds no compile: it compiled nothing (or its log ends before its "
                             "first)" for r in idle]
            save_manifest(bundle, out)
    return bundle, out, known
