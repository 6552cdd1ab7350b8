"""``kernelscope capture TARGET``: compile it in a child process and write a bundle (kernelscope/capture/)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernelscope.errors import UsageError
from kernelscope.units import plural

HELP = "compile TARGET in a child process and write a bundle"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from kernelscope.capture.spec import add_capture_arguments

    p.add_argument("target", help="a sample name (see `kernelscope samples`) or path/to/file.py::function")
    p.add_argument("-o", "--out", help="bundle folder to write (default: ./kernelscope-captures/NAME-TIME)")
    p.add_argument("--force", action="store_true", help="replace an existing bundle at -o")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    add_capture_arguments(p)


def run(args: argparse.Namespace) -> int:
    from kernelscope.capture.runner import Capture, CaptureError, default_out
    from kernelscope.capture.spec import spec_from_args
    from kernelscope.target import resolve_target

    target = resolve_target(args.target)
    spec = spec_from_args(args, target)
    out = Path(args.out) if args.out else default_out(target)
    quiet = args.quiet
    from kernelscope.commands.ticker import Ticker

    ticker = Ticker(sys.stderr)

    def progress(event: dict) -> None:
        if quiet:
            return
        phase = event.get("phase", "")
        if phase == "error":
            return
        counts = ""
        if "kernels" in event:
            counts = f" [{plural(event.get('graphs', 0), 'graph')}, {plural(event.get('kernels', 0), 'kernel')}]"
        ticker.event(f"  {phase:<9} {event.get('message', '')}{counts}", phase)

    capture = Capture(spec, out, replace=args.force, on_event=progress)
    try:
        result = capture.run()
    except CaptureError as exc:
        raise UsageError(str(exc)) from exc
    except KeyboardInterrupt:
        ticker.stop()
        capture.cancel()
        print("kernelscope: capture cancelled; nothing was written", file=sys.stderr)
        return 130
    finally:
        ticker.stop()
    if result.out is not None:
        from kernelscope.ui.paths import remember_capture

        remember_capture(out)  # the gallery's recent captures list -o folders too
    if result.status == "ok":
        b = result.bundle
        n_tr = sum(1 for k in b.kernels if k.lang == "triton")
        print(f"captured {target.spec}: {plural(len(b.graphs), 'graph')}, {plural(len(b.kernels), 'kernel')} "
              f"({n_tr} Triton) in {result.seconds:.1f} s -> {out}")
        return 0
    if result.status == "failed":
        print(f"kernelscope: {result.message}", file=sys.stderr)
        if result.out is not None:
            print(f"kernelscope: what was captured before the failure is in {out} (marked failed)", file=sys.stderr)
        return 2
    print(f"kernelscope: {result.message}", file=sys.stderr)
    return 2
