"""Command line: ``kernelscope capture|show|samples|...``, and ``kernelscope [TARGET|BUNDLE]`` for the UI.

Imports nothing heavy at import time: each subcommand's module is imported when it runs, and
none of them imports torch in this process (the capture child does).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from kernelscope import __version__
from kernelscope.capture.spec import add_capture_arguments
from kernelscope.errors import UsageError
from kernelscope.units import plural

EXIT_USAGE = 2

# Subcommands that live in other modules: name -> (module, help). Each module has
# add_arguments(parser) and run(args) -> int. A module that is absent leaves its command out.
EXTERNAL_COMMANDS: dict[str, tuple[str, str]] = {
    "bench": ("kernelscope.bench.cli", "rerun a capture on the GPU (or CPU): eager vs compiled, per kernel"),
    "report": ("kernelscope.report.cli", "write a Markdown / HTML / JSON report of a bundle"),
    "diff": ("kernelscope.report.diff_cli", "compare two bundles kernel by kernel"),
    "open": ("kernelscope.report.open_cli", "turn a TORCH_TRACE folder (anyone's job) into a bundle and open it"),
    "serve": ("kernelscope.ui.serve", "run the UI in a browser (textual-serve) on a local port"),
    "talk": ("kernelscope.ui.talk", "step through a prepared talk (captures at panes) with one key"),
}


def cmd_capture(args: argparse.Namespace) -> int:
    from kernelscope.capture.runner import Capture, CaptureError, default_out
    from kernelscope.capture.spec import spec_from_args
    from kernelscope.target import resolve_target

    target = resolve_target(args.target)
    spec = spec_from_args(args, target)
    out = Path(args.out) if args.out else default_out(target)
    quiet = args.quiet

    def progress(event: dict) -> None:
        if quiet:
            return
        phase = event.get("phase", "")
        if phase == "error":
            return
        counts = ""
        if "kernels" in event:
            counts = f" [{plural(event.get('graphs', 0), 'graph')}, {plural(event.get('kernels', 0), 'kernel')}]"
        print(f"  {phase:<9} {event.get('message', '')}{counts}", file=sys.stderr, flush=True)

    capture = Capture(spec, out, replace=args.force, on_event=progress)
    try:
        result = capture.run()
    except CaptureError as exc:
        raise UsageError(str(exc)) from exc
    except KeyboardInterrupt:
        capture.cancel()
        print("kernelscope: capture cancelled; nothing was written", file=sys.stderr)
        return 130
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
        return EXIT_USAGE
    print(f"kernelscope: {result.message}", file=sys.stderr)
    return EXIT_USAGE


def cmd_show(args: argparse.Namespace) -> int:
    from kernelscope import show

    return show.run(args)


def cmd_samples(args: argparse.Namespace) -> int:
    from kernelscope.target import list_samples

    for t in list_samples():
        print(f"{t.name:<18} {t.description}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kernelscope",
        description="See what torch.compile did to your function. `kernelscope` alone opens the sample gallery; "
                    "`kernelscope TARGET` captures and opens; `kernelscope BUNDLE` opens a saved capture.",
    )
    parser.add_argument("--version", action="version", version=f"kernelscope {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("capture", help="compile TARGET in a child process and write a bundle")
    p.add_argument("target", help="a sample name (see `kernelscope samples`) or path/to/file.py::function")
    p.add_argument("-o", "--out", help="bundle folder to write (default: ./kernelscope-captures/NAME-TIME)")
    p.add_argument("--force", action="store_true", help="replace an existing bundle at -o")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    add_capture_arguments(p)
    p.set_defaults(func=cmd_capture)

    p = sub.add_parser("show", help="print a bundle: summary, --json, or one --artifact")
    from kernelscope.show import add_arguments as add_show

    add_show(p)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("samples", help="list the built-in samples")
    p.set_defaults(func=cmd_samples)

    for name, (module, help_text) in EXTERNAL_COMMANDS.items():
        try:
            spec = importlib.util.find_spec(module)
        except (ModuleNotFoundError, ValueError):
            spec = None
        if spec is None:
            continue
        p = sub.add_parser(name, help=help_text)
        p.set_defaults(func=_external(module), command=name)
        mod = importlib.import_module(module)
        mod.add_arguments(p)
    return parser


def _external(module: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        return importlib.import_module(module).run(args)

    return run


def _ui_main(argv: list[str], debug: bool) -> int:
    """``kernelscope``, ``kernelscope TARGET [options]`` or ``kernelscope BUNDLE``: the explorer."""
    parser = argparse.ArgumentParser(prog="kernelscope", add_help=False)
    parser.add_argument("what", nargs="?")
    parser.add_argument("-o", "--out")
    parser.add_argument("--big", action="store_true", help="presentation mode: fewer, larger panes")
    add_capture_arguments(parser)
    args, rest = parser.parse_known_args(argv)
    if rest:
        raise UsageError(f"unknown arguments: {' '.join(rest)}; see `kernelscope --help`")
    try:
        from kernelscope.ui.app import main as ui_main
    except ImportError as exc:
        raise UsageError(f"the UI is not available ({exc}); install kernelscope with its dependencies") from exc
    return ui_main(args)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    known = {"capture", "show", "samples", *EXTERNAL_COMMANDS}
    first = next((a for a in argv if not a.startswith("-")), None)
    try:
        if first is None and not any(a in ("-h", "--help", "--version") for a in argv) or \
                first is not None and first not in known:
            return _ui_main([a for a in argv if a != "--debug"], debug)
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 0
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        from kernelscope.bundle.io import BundleError
        from kernelscope.target import TargetError

        if debug:
            traceback.print_exc()
        if isinstance(exc, (UsageError, TargetError, BundleError)):
            print(f"kernelscope: {exc}", file=sys.stderr)
            return EXIT_USAGE
        print(f"kernelscope: internal error: {exc.__class__.__name__}: {exc} (run with --debug for the traceback)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
