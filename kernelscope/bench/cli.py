"""``kernelscope bench TARGET|BUNDLE``: eager vs compiled per call, a size sweep, or one kernel changed.

A TARGET is captured first (into -o, or ./kernelscope-captures/NAME-TIME); a BUNDLE reruns its
recorded function with its recorded options and inputs. Results are stored in the bundle (not with
--no-save, nor in a bundle that is read-only: then it says so and prints them only).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

CONFIG_KEYS = ("num_warps", "num_stages")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from kernelscope.capture.spec import add_capture_arguments

    p.add_argument("what", metavar="TARGET|BUNDLE",
                   help="a bundle folder, a sample name or path/to/file.py::function (captured first)")
    p.add_argument("-o", "--out", help="with a TARGET: where to write its capture")
    p.add_argument("--counts", action="store_true", help="print the kernels and transfers computed from the "
                   "graphs, measure nothing (works anywhere, no torch)")
    p.add_argument("--sweep", action="store_true", help="time eager and compiled over input sizes (dim 0 scaled)")
    p.add_argument("--sizes", metavar="N,N,...", help="with --sweep: the dim-0 sizes (default: the recorded size "
                   "divided by 4^k down to about 1/16384)")
    p.add_argument("--kernel", metavar="NAME", help="rerun one Triton kernel of the bundle alone (GPU)")
    p.add_argument("--set", dest="changes", metavar="K=V,...", default="",
                   help="with --kernel: the changed config, e.g. XBLOCK=512,num_warps=8,num_stages=2")
    p.add_argument("--reps", type=int, default=None, help="timed calls per side, at least (default 100)")
    p.add_argument("--warmup", type=int, default=None, help="untimed calls first (default 10)")
    p.add_argument("--budget", type=float, default=None, metavar="S",
                   help="keep timing up to this many seconds per side (default 0.5)")
    p.add_argument("--profile-calls", type=int, default=None, help="calls under torch.profiler (default 10)")
    p.add_argument("--remeasure", action="store_true", help="measure the device's copy/matmul ceilings again")
    p.add_argument("--no-save", action="store_true", help="print the results only; leave the bundle unchanged "
                   "(by default they are stored in its bundle.json, unless it is read-only)")
    p.add_argument("--json", action="store_true", help="print the record as JSON")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.add_argument("--run-bundled-source", action="store_true",
                   help="when the captured file is not on this machine, run the bundle's own copy of it "
                        "(code whoever sent the bundle wrote: read it first)")
    p.add_argument("--run-bundle-code", action="store_true",
                   help="a bundle with no function (opened from a trace, run, record): run its own output code and "
                        "FX graphs on synthetic inputs (code whoever made the bundle wrote: read it first)")
    add_capture_arguments(p)


def _changes(text: str) -> dict[str, int]:
    from kernelscope.errors import UsageError

    out: dict[str, int] = {}
    for part in [x.strip() for x in text.split(",") if x.strip()]:
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not value.strip().isdigit() or not key:
            raise UsageError(f"--set {part!r}: write KEY=INTEGER, e.g. XBLOCK=512 or num_warps=8")
        if key not in CONFIG_KEYS and not key.isupper():
            raise UsageError(f"--set {key}: a block size (XBLOCK, YBLOCK, R0_BLOCK ...) or num_warps / num_stages")
        out[key] = int(value)
    return out


def _sizes(text: str | None) -> list[int] | None:
    from kernelscope.errors import UsageError

    if not text:
        return None
    try:
        sizes = [int(eval_size(x)) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise UsageError(f"--sizes {text!r}: give positive integers like 1024,65536 or 2**10,2**20") from exc
    if not sizes or any(s <= 0 for s in sizes):
        raise UsageError(f"--sizes {text!r}: give positive integers like 1024,65536 or 2**10,2**20")
    return sizes


def _grad_mode(args: argparse.Namespace) -> str | None:
    """--no-grad / --inference-mode given on the command line, else None (the bundle's recorded mode)."""
    if getattr(args, "inference_mode", None):
        return "inference_mode"
    if getattr(args, "no_grad", None):
        return "no_grad"
    return None


def eval_size(text: str) -> int:
    text = text.strip()
    if "**" in text:
        base, _, exp = text.partition("**")
        return int(base) ** int(exp)
    return int(text)


def _bundle_for(args: argparse.Namespace) -> Path:
    """The bundle to bench: the folder given, or a fresh capture of the target."""
    from kernelscope.capture.runner import Capture, CaptureError, default_out
    from kernelscope.capture.spec import spec_from_args
    from kernelscope.errors import UsageError
    from kernelscope.target import resolve_target

    path = Path(args.what)
    if (path / "bundle.json").is_file() or path.name == "bundle.json":
        return path if path.is_dir() else path.parent
    if "::" not in args.what and (args.what.endswith("/") or "/" in args.what) and not path.exists():
        raise UsageError(f"{path}: no such bundle folder; give a bundle, a sample name or path/to/file.py::function")
    if path.is_dir():
        raise UsageError(f"{path}: not a kernelscope bundle (no bundle.json); give a bundle or a target")
    target = resolve_target(args.what)
    spec = spec_from_args(args, target)
    out = Path(args.out) if args.out else default_out(target)
    if not args.quiet:
        print(f"  capture   {target.spec} -> {out}", file=sys.stderr, flush=True)
    try:
        result = Capture(spec, out).run()
    except CaptureError as exc:
        raise UsageError(str(exc)) from exc
    if result.status != "ok":
        raise UsageError(f"capture failed: {result.message}")
    return out


def run(args: argparse.Namespace) -> int:
    from kernelscope.bench import tables
    from kernelscope.bench.bundle_plan import computed_counts
    from kernelscope.bench.runner import Bench, BenchError, BenchSettings
    from kernelscope.bundle.io import read_bundle
    from kernelscope.errors import UsageError

    changes = _changes(args.changes)
    if changes and not args.kernel:
        raise UsageError("--set changes a kernel's config; name the kernel with --kernel NAME")
    if args.kernel and args.sweep:
        raise UsageError("--kernel and --sweep are separate runs; give one of them")
    for name in ("reps", "warmup", "profile_calls"):
        value = getattr(args, name)
        if value is not None and value < (0 if name == "warmup" else 1):
            raise UsageError(f"--{name.replace('_', '-')} must be a positive number")
    if args.budget is not None and args.budget < 0:
        raise UsageError("--budget must be zero or more seconds")
    if args.counts:
        bundle = read_bundle(args.what)
        counts = computed_counts(bundle)
        print(json.dumps(counts, indent=1) if args.json else "\n".join(tables.counts_lines(counts)))
        return 0
    bundle_path = _bundle_for(args)
    settings = BenchSettings(device=args.device, sweep=args.sweep, sizes=_sizes(args.sizes), kernel=args.kernel,
                             changes=changes, remeasure=args.remeasure, timeout=args.timeout,
                             save=not args.no_save, grad_mode=_grad_mode(args),
                             eval=True if getattr(args, "eval_mode", None) else None,
                             run_bundled_source=bool(getattr(args, "run_bundled_source", False)))
    settings.run_bundle_code = bool(args.run_bundle_code)
    for name, attr in (("reps", "reps"), ("warmup", "warmup"), ("budget", "budget_s"),
                       ("profile_calls", "profile_calls")):
        if getattr(args, name) is not None:
            setattr(settings, attr, getattr(args, name))
    if args.sweep and args.reps is not None:
        settings.sweep_reps = args.reps
    if args.sweep and args.budget is not None:
        settings.sweep_budget_s = args.budget

    started = time.monotonic()

    def progress(event: dict) -> None:  # each phase with the seconds since the bench started
        if not args.quiet and event.get("phase") not in ("error", "done"):
            print(f"  {event.get('phase', ''):<9} {time.monotonic() - started:5.1f} s  {event.get('message', '')}",
                  file=sys.stderr, flush=True)

    bench = Bench(bundle_path, settings, on_event=progress)
    try:
        result = bench.run()
    except BenchError as exc:
        raise UsageError(str(exc)) from exc
    except KeyboardInterrupt:
        bench.cancel()
        print("kernelscope: bench cancelled; nothing was stored", file=sys.stderr)
        return 130
    if result.status != "ok":
        print(f"kernelscope: {result.message}", file=sys.stderr)
        return 2
    where = (f"saved in {result.saved_to} (bench, {result.seconds:.1f} s)" if result.saved_to
             else f"{result.not_saved} (bench, {result.seconds:.1f} s)")
    if args.json:
        print(json.dumps(result.record, indent=1))
    else:
        print(tables.bench_text(result.record).lstrip("\n"))
    print(f"\n{where}", file=sys.stderr)
    return 0
