"""Build a bundle from a TORCH_TRACE folder written by anyone's job (``kernelscope open``)."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from kernelscope.bundle.io import (
    BundleError,
    check_out,
    commit_staging_dir,
    make_staging_dir,
    save_manifest,
    strip_controls,
)
from kernelscope.bundle.model import Bundle
from kernelscope.bundle.shards import from_index
from kernelscope.ingest.build import triton_cache_entries
from kernelscope.ingest.stderr_tables import annotate_from_stderr
from kernelscope.ingest.stream import FrameJob, build_frames, merge_frames, spool_trace
from kernelscope.ingest.tracelog import rank_in_name, trace_files
from kernelscope.safefile import why as why_not


def bundle_from_trace(trace: str | os.PathLike, out: str | os.PathLike, *, triton_cache: str | os.PathLike | None = None,
                      stderr_log: str | os.PathLike | None = None, replace: bool = False, spec: str | None = None,
                      notes: tuple[str, ...] = (), logs: list[Path] | None = None) -> Bundle:
    """Write a bundle at ``out`` from a TORCH_TRACE folder (or one log file), streaming it (ingest/stream.py);
    ``logs``: the folder's logs to read (default: every ``*.log`` in it)."""
    trace = Path(trace)
    if not trace.exists():
        raise BundleError(f"{trace}: no such TORCH_TRACE folder or file")
    check_out(out, replace=replace)  # before the parse: a refused -o costs nothing
    try:
        logs = list(logs) if logs is not None else trace_files(trace)
    except OSError as exc:
        raise BundleError(f"{exc}") from exc
    if not logs:
        raise BundleError(no_logs_line(trace))
    if triton_cache is not None and not Path(triton_cache).is_dir():
        raise BundleError(f"{triton_cache}: no such Triton cache folder")
    stderr_text = Path(stderr_log).read_text(encoding="utf-8", errors="replace") if stderr_log is not None else ""
    staging = make_staging_dir(out)
    try:
        bundle = _build_streaming(trace, logs, staging, out, triton_cache, stderr_text, spec, notes)
        commit_staging_dir(staging, out, replace=replace)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    bundle.root = str(out)
    return bundle


def _cannot_write(out, exc: OSError) -> BundleError:
    return BundleError(f"cannot write the bundle at {out} ({why_not(exc)}); free some space or choose another -o")


def _build_streaming(trace: Path, logs: list[Path], staging: Path, out, triton_cache, stderr_text: str,
                     spec: str | None, notes: tuple[str, ...]) -> Bundle:
    spool_dir = staging / ".spool"
    spool_dir.mkdir()
    try:
        try:
            spooled = spool_trace([(p, rank_in_name(p)) for p in logs], spool_dir)
        except OSError as exc:  # a FIFO or a device among the logs, an unreadable file, a full disk
            if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):  # writing the spool, beside the bundle
                raise _cannot_write(out, exc) from exc
            raise BundleError(f"{exc}") from exc
        good = spooled.seen - spooled.malformed
        if not good:
            why = (f"; {spooled.malformed} record(s) were malformed ({spooled.first_problem})" if spooled.malformed
                   else "; is it a folder TORCH_TRACE named, or a file torch wrote there?")
            raise BundleError(f"{trace}: found no TORCH_TRACE records{why}")
        cache = triton_cache_entries([Path(triton_cache)]) if triton_cache else []
        rank_prefix = len({rank for rank, _ in spooled.frames}) > 1
        # The job's own file, as a whole-log build takes it: that of the first graph's code Dynamo compiled.
        first = min(spooled.code_order, key=lambda key: spooled.code_order[key][0], default=None)
        user_file = spooled.code_files.get(first, "") if first is not None else ""
        jobs = [FrameJob(spool=str(path), staging=str(staging), strings=spooled.strings, rank=rank,
                         rank_prefix=rank_prefix, name_counts=spooled.name_counts, cache_entries=cache,
                         best_configs=[], stderr_text=stderr_text, user_file=user_file)
                for (rank, _frame), path in spooled.frames.items()]
        try:
            parts = build_frames(jobs)
        except (TypeError, AttributeError, KeyError, IndexError, ValueError) as exc:
            # Records are type-checked as they are read (tracelog.envelope_problem); a payload shaped
            # unlike any torch writes can still surprise the builder: say so in one line.
            raise BundleError(f"{trace}: a TORCH_TRACE record is not shaped as torch writes it "
                              f"({exc.__class__.__name__}: {' '.join(str(exc).split())[:120]}); "
                              "is the log damaged?") from exc
        except OSError as exc:  # a full disk or a read-only folder while writing the files
            raise _cannot_write(out, exc) from exc
    finally:
        shutil.rmtree(spool_dir, ignore_errors=True)
    bundle = Bundle(target={"spec": spec or str(trace), "kind": "torch_trace", "origin": "open",
                            "logs": [str(p) for p in logs]})
    bundle.environment = {"source": "TORCH_TRACE", "ranks": sorted(spooled.ranks)}
    for name in spooled.cut_short:
        bundle.notes.append(f"{name} ends inside a line: the log was cut short (its job killed, or still running); "
                            "what it holds up to there is read")
    if spooled.not_records:
        bundle.notes.append(f"{spooled.not_records} damaged TORCH_TRACE line(s) left out ({spooled.first_not_record}); "
                            "the records around them are read")
    damaged = sum(part.get("damaged_events", 0) for part in parts)
    if damaged:
        bundle.notes.append(f"{damaged} chromium event(s) with a damaged payload (not JSON) left out: the compile "
                            "phase they open or close is not timed")
    if spooled.malformed:
        bundle.notes.append(f"{spooled.malformed} malformed TORCH_TRACE record(s) left out (first: {spooled.first_problem})")
    index = merge_frames(parts, bundle, [spooled.code_order.get(key, []) for key in spooled.frames])
    strip_controls(index)
    bundle = from_index(index, str(staging))
    if stderr_text:
        annotate_from_stderr(bundle, stderr_text)
        from kernelscope.ingest.fusion import fusion_summary

        fusion = fusion_summary(stderr_text, bundle, staging)
        if fusion:
            bundle.extra["fusion"] = fusion
    if not bundle.graphs:
        bundle.notes.append(nothing_compiled(spooled))
    if not triton_cache and bundle.kernels:
        bundle.notes.append("Triton stages absent: no Triton cache folder was given (--triton-cache)")
    bundle.notes.extend(notes)
    save_manifest(bundle, staging)
    return bundle


def no_logs_line(trace: Path) -> str:
    """Why a folder gave no log to read, and what to do: compressed logs are named."""
    packed = sorted(p.name for p in trace.glob("*.log.gz")) if trace.is_dir() else []
    if packed:
        return (f"{trace}: its TORCH_TRACE logs are compressed ({', '.join(packed[:3])}"
                f"{' …' if len(packed) > 3 else ''}); decompress them first: gunzip {trace}/*.log.gz")
    return f"{trace}: no TORCH_TRACE logs (*.log) found; point at the folder TORCH_TRACE named"


def nothing_compiled(spooled) -> str:
    """What a trace holds when no frame in it was compiled (no Dynamo graph, no output code, no failure)."""
    if spooled.chromium_events:
        return (f"the trace holds only Dynamo's timed phases ({spooled.chromium_events} chromium events; `kernelscope "
                "show --compile` lists where the compile time went): no Dynamo graph, guard or output code was logged")
    return "the trace holds no compiled frame: no Dynamo graph, no output code and no failed compile was logged"
