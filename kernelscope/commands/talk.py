"""``kernelscope talk [SCRIPT]``: step through a prepared talk (kernelscope/ui/talk.py)."""

from __future__ import annotations

import argparse

HELP = "step through a prepared talk (captures at panes) with one key"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from kernelscope.ui import talk

    talk.add_arguments(p)


def run(args: argparse.Namespace) -> int:
    from kernelscope.ui import talk

    return talk.run(args)
