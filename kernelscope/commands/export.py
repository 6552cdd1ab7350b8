"""``kernelscope export BUNDLE --trace FILE.json [--force]``: a Chrome trace of the compile phases and a
bench's launches, for ui.perfetto.dev or chrome://tracing (kernelscope/report/export_trace.py)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from kernelscope.bundle.io import BundleError, refuse_own_file

HELP = "write a Chrome trace (Perfetto, chrome://tracing) of a bundle's compile phases and bench launches"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundle", help="a bundle folder (from `kernelscope capture`, `open` or `run`)")
    p.add_argument("--trace", metavar="FILE", required=True,
                   help="the Chrome-trace JSON file to write (such as trace.json)")
    p.add_argument("--force", action="store_true", help="replace FILE if it exists")


def _check_out(out: Path, bundle_root: Path, force: bool) -> None:
    if os.path.lexists(out):  # lexists: a dangling link is refused too, never followed
        if out.is_dir():
            raise BundleError(f"{out} is a folder; give --trace a file name such as trace.json")
        refuse_own_file(out, bundle_root, "the trace")
        if not force:
            raise BundleError(f"{out} exists; pass --force to replace it")
    if not out.parent.is_dir():
        raise BundleError(f"{out.parent}: no such folder for --trace")


def run(args: argparse.Namespace) -> int:
    import json

    from kernelscope import __version__
    from kernelscope.bundle.io import read_bundle
    from kernelscope.report.export_trace import trace_document, trace_export
    from kernelscope.safefile import write_atomic
    from kernelscope.units import plural

    bundle = read_bundle(args.bundle)
    out = Path(args.trace)
    _check_out(out, Path(bundle.root), args.force)
    export = trace_export(bundle)
    if not export.frames and not export.launches:
        bench = (f"no launch times in its bench ({plural(export.untimed, 'launch')}: {export.untimed_why})"
                 if export.untimed else "no bench record (`kernelscope bench` adds one)")
        raise BundleError(f"{args.bundle}: nothing to export: no compile times (chromium_event phases) and {bench}")
    doc = trace_document(bundle, export, bundle_path=str(args.bundle), version=__version__)
    try:  # atomic: a full disk leaves the old file (or none), never half a trace
        write_atomic(out, json.dumps(doc, separators=(",", ":")) + "\n")
    except OSError as exc:
        raise BundleError(str(exc)) from exc
    frames = f"compile phases of {plural(export.frames, 'frame')}" if export.frames else "no compile times"
    launches = (f"{plural(export.launches, 'launch', 'launches')} of one compiled call" if export.launches
                else "no timed launch" if export.untimed else "no bench")
    if export.untimed and export.launches:
        launches += f", {export.untimed} not timed, marked without a duration"
    print(f"wrote {plural(export.shown_events, 'event')} ({frames}, {launches}) to {out}; "
          "open it in ui.perfetto.dev or chrome://tracing", file=sys.stderr)
    return 0
