"""``kernelscope bench TARGET|BUNDLE``: eager vs compiled per kernel (kernelscope/bench/cli.py)."""

from __future__ import annotations

import argparse

HELP = "rerun a capture on the GPU (or CPU): eager vs compiled, per kernel"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from kernelscope.bench import cli

    cli.add_arguments(p)
    p.add_argument("--ncu", action="store_true", help="profile a few Triton kernels with Nsight Compute (GPU): "
                   "Speed of Light, occupancy, stalls, samples per line (instead of timing; bench/ncu.py)")
    p.add_argument("--ncu-kernels", metavar="NAME,NAME", default="",
                   help="with --ncu: the kernels to profile (default: the 3 slowest of the last bench, else the first 3)")


def run(args: argparse.Namespace) -> int:
    from kernelscope.bench import cli

    if getattr(args, "ncu", False) or getattr(args, "ncu_kernels", ""):
        return run_ncu(args)
    return cli.run(args)


def run_ncu(args: argparse.Namespace) -> int:
    """``bench --ncu``: counters from ncu, printed and stored in the bundle's ``extra["bench"]["ncu"]``."""
    import json
    import sys

    from kernelscope.bench import cli, ncu
    from kernelscope.bench.record import store
    from kernelscope.bundle.io import BundleError
    from kernelscope.errors import UsageError

    names = [x.strip() for x in args.ncu_kernels.split(",") if x.strip()] or None
    bundle_path = cli._bundle_for(args)
    say = (lambda m: None) if args.quiet else (lambda m: print(f"  {m}", file=sys.stderr, flush=True))
    try:
        record = ncu.profile(bundle_path, names, on_progress=say)
    except ncu.NcuError as exc:
        raise UsageError(str(exc)) from exc
    print(json.dumps(record, indent=1) if args.json else ncu.ncu_text(record))
    if not args.no_save:
        try:
            store(bundle_path, {"ncu": record})
            print(f"\nsaved in {bundle_path} (bench ncu)", file=sys.stderr)
        except BundleError as exc:
            print(f"\nnot saved: {exc}", file=sys.stderr)
    return 0
