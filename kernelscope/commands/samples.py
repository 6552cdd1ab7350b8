"""``kernelscope samples``: the built-in samples, one a line."""

from __future__ import annotations

import argparse

HELP = "list the built-in samples"


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    from kernelscope.target import list_samples

    for t in list_samples():
        print(f"{t.name:<18} {t.description}")
    return 0
