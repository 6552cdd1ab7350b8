"""The ``kernelscope`` entry point: ``kernelscope capture|show|samples|...``, and ``kernelscope [TARGET|BUNDLE]``
for the UI.

The subcommands are kernelscope/commands/ (one module each). Imports nothing heavy at import time:
each command imports what it runs when it runs, and none of them imports torch in this process
(the capture child does).
"""

from __future__ import annotations

import argparse
import sys
import traceback

from kernelscope import __version__
from kernelscope.commands import COMMANDS
from kernelscope.errors import UsageError

EXIT_USAGE = 2

__all__ = ["EXIT_USAGE", "UsageError", "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kernelscope",
        description="See what torch.compile did to your function. `kernelscope` alone opens the sample gallery; "
                    "`kernelscope TARGET` captures and opens; `kernelscope BUNDLE` opens a saved capture.",
    )
    parser.add_argument("--version", action="version", version=f"kernelscope {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in COMMANDS.items():
        p = sub.add_parser(name, help=command.HELP)
        command.add_arguments(p)
        p.set_defaults(func=command.run, command=name)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    from kernelscope.environment import environment_problem

    first = next((a for a in argv if not a.startswith("-")), None)
    problem = environment_problem(compiles=first not in COMMANDS or first in ("capture", "bench", "ui", "talk"),
                                  needs_cwd=needs_cwd(argv, first))
    if problem:  # a deleted cwd, a quote in TMPDIR ...: said before anything trips on it
        if sys.stderr is not None:
            print(f"kernelscope: {problem}", file=sys.stderr)
        return EXIT_USAGE
    from kernelscope.environment import flush_stdout

    try:
        rc = _main(argv, debug)
    except SystemExit:  # argparse's --help and usage errors
        flush_stdout()
        raise
    finally:
        from kernelscope.capture.lifeline import end_by_signal

        end_by_signal()  # a SIGTERM/SIGHUP, cleaned up after like Ctrl-C: end by it, as its sender expects
    return rc if flush_stdout() else rc or EXIT_USAGE


# Commands that run a child or a program in the current folder, or write there by default.
CWD_COMMANDS = frozenset({"capture", "run", "bench", "talk"})


def needs_cwd(argv: list[str], first: str | None) -> bool:
    """Whether the command needs the current folder: one of CWD_COMMANDS, the UI on a target or a relative
    bundle, or an argument that reads as a relative path (``show /abs/bundle``, ``samples`` and the
    gallery need none)."""
    import os

    if first in CWD_COMMANDS or (first is not None and first not in COMMANDS and not os.path.isabs(first)):
        return True
    words = [a for a in argv if not a.startswith("-") and a != first]
    return any(not os.path.isabs(a) and (os.sep in a or "." in a) for a in words)


def _main(argv: list[str], debug: bool) -> int:
    first = next((a for a in argv if not a.startswith("-")), None)
    try:
        if first is None and not any(a in ("-h", "--help", "--version") for a in argv) or \
                first is not None and first not in COMMANDS:
            from kernelscope.commands import ui

            return ui.main([a for a in argv if a != "--debug"])
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
        from kernelscope.environment import output_problem
        from kernelscope.textsafe import printable

        if isinstance(exc, (UsageError, TargetError, BundleError)):
            print(f"kernelscope: {printable(str(exc))}", file=sys.stderr)
            return EXIT_USAGE
        problem = output_problem(exc)
        if problem:  # stdout closed or full (/dev/full), a full disk under a report: the cause, not a trace
            print(f"kernelscope: {problem}", file=sys.stderr)
            return EXIT_USAGE
        print(f"kernelscope: internal error: {exc.__class__.__name__}: {printable(str(exc))} "
              "(run with --debug for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
