"""``kernelscope show BUNDLE``: a bundle's summary, --json, or one --artifact (kernelscope/show.py)."""

from __future__ import annotations

import argparse

HELP = "print a bundle: summary, --json, or one --artifact"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from kernelscope import show

    show.add_arguments(p)


def run(args: argparse.Namespace) -> int:
    from kernelscope import show

    if getattr(args, "fusion", False) or getattr(args, "lines", False) or getattr(args, "compile", False):
        return why_text(args)
    return show.run(args)


def why_text(args: argparse.Namespace) -> int:
    """``show --fusion / --lines / --compile``: why kernels stayed apart, device time per line, where
    the compile went (kernelscope/report/why.py, lines.py)."""
    import sys

    from kernelscope.bundle.io import printable, read_bundle
    from kernelscope.report import lines, why

    b = read_bundle(args.bundle)
    known = len(b.notes)
    parts = []
    if args.fusion:
        parts.append("\n".join(why.fusion_lines(b)) + "\n")
    if args.lines:
        parts.append(lines.lines_text(b))
    if args.compile:
        parts.append("\n".join(why.compile_lines(b)) + "\n")
    # What reading a file for these views found (a damaged side file, a detail file refused): said here too.
    parts += [f"note: {n}\n" for n in b.notes[known:]]
    sys.stdout.write(printable("\n".join(parts)))
    return 0
