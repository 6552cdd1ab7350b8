"""``kernelscope``, ``kernelscope TARGET [options]``, ``kernelscope BUNDLE``: the explorer (kernelscope/ui/).

The command without a name: cli.py runs it for anything that is not a subcommand.
"""

from __future__ import annotations

import argparse

from kernelscope.errors import UsageError


def main(argv: list[str]) -> int:
    """``kernelscope``, ``kernelscope TARGET [options]`` or ``kernelscope BUNDLE``: the explorer."""
    from kernelscope.capture.spec import add_capture_arguments

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
