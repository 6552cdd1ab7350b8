"""``kernelscope show BUNDLE``: a bundle's summary, --json, or one --artifact (kernelscope/show.py)."""

from __future__ import annotations

import argparse

HELP = "print a bundle: summary, --json, or one --artifact"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from kernelscope import show

    show.add_arguments(p)


def run(args: argparse.Namespace) -> int:
    from kernelscope import show

    return show.run(args)
