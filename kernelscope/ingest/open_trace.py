"""Build a bundle from a TORCH_TRACE folder written by anyone's job (``kernelscope open``)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from kernelscope.bundle.io import BundleError, check_out, commit_staging_dir, make_staging_dir, save_manifest
from kernelscope.bundle.model import Bundle
from kernelscope.ingest.build import RawCapture, build_bundle
from kernelscope.ingest.tracelog import parse_trace_folder


def bundle_from_trace(trace: str | os.PathLike, out: str | os.PathLike, *, triton_cache: str | os.PathLike | None = None,
                      stderr_log: str | os.PathLike | None = None, replace: bool = False) -> Bundle:
    """Write a bundle at ``out`` from a TORCH_TRACE folder (or one log file)."""
    trace = Path(trace)
    if not trace.exists():
        raise BundleError(f"{trace}: no such TORCH_TRACE folder or file")
    check_out(out, replace=replace)  # before the parse: a refused -o costs nothing
    try:
        logs = parse_trace_folder(trace)
    except OSError as exc:  # a FIFO or a device among the logs, an unreadable file
        raise BundleError(f"{exc}") from exc
    if not logs:
        raise BundleError(f"{trace}: no TORCH_TRACE logs (*.log) found; point at the folder TORCH_TRACE named")
    good = sum(t.seen - t.malformed for _, t in logs)
    if not good:
        bad = next((t for _, t in logs if t.malformed), None)
        why = (f"; {bad.malformed} record(s) were malformed ({bad.first_problem})" if bad else
               "; is it a folder TORCH_TRACE named, or a file torch wrote there?")
        raise BundleError(f"{trace}: found no TORCH_TRACE records{why}")
    if triton_cache is not None and not Path(triton_cache).is_dir():
        raise BundleError(f"{triton_cache}: no such Triton cache folder")
    raw = RawCapture(traces=[t for _, t in logs], triton_caches=[Path(triton_cache)] if triton_cache else [])
    if stderr_log is not None:
        raw.stderr_text = Path(stderr_log).read_text(encoding="utf-8", errors="replace")
    bundle = Bundle(target={"spec": str(trace), "kind": "torch_trace", "origin": "open",
                            "logs": [str(p) for p, _ in logs]})
    bundle.environment = {"source": "TORCH_TRACE", "ranks": sorted({r.rank for t in raw.traces for r in t.records
                                                                     if r.rank is not None})}
    malformed = sum(t.malformed for _, t in logs)
    if malformed:
        first = next(t.first_problem for _, t in logs if t.malformed)
        bundle.notes.append(f"{malformed} malformed TORCH_TRACE record(s) left out (first: {first})")
    staging = make_staging_dir(out)
    try:
        try:
            build_bundle(staging, raw, bundle)
        except (TypeError, AttributeError, KeyError, IndexError, ValueError) as exc:
            # Records are type-checked as they are read (tracelog.envelope_problem); a payload shaped
            # unlike any torch writes can still surprise the builder: say so in one line.
            raise BundleError(f"{trace}: a TORCH_TRACE record is not shaped as torch writes it "
                              f"({exc.__class__.__name__}: {' '.join(str(exc).split())[:120]}); "
                              "is the log damaged?") from exc
        except OSError as exc:  # a full disk or a read-only folder while writing the files
            from kernelscope.safefile import why as why_not

            raise BundleError(f"cannot write the bundle at {out} ({why_not(exc)}); free some space or "
                              "choose another -o") from exc
        if not bundle.graphs:
            bundle.notes.append("the trace holds no Inductor output code (was the backend inductor?)")
        if not triton_cache:
            bundle.notes.append("Triton stages absent: no Triton cache folder was given (--triton-cache)")
        save_manifest(bundle, staging)
        commit_staging_dir(staging, out, replace=replace)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    bundle.root = str(out)
    return bundle
