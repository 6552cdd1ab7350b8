"""``kernelscope bench TARGET|BUNDLE``: eager vs compiled per kernel (kernelscope/bench/cli.py)."""

from __future__ import annotations

import argparse

HELP = "rerun a capture on the GPU (or CPU): eager vs compiled, per kernel"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from kernelscope.bench import cli

    cli.add_arguments(p)


def run(args: argparse.Namespace) -> int:
    from kernelscope.bench import cli

    return cli.run(args)
