"""``kernelscope serve``: the UI in a browser on a loopback port (kernelscope/ui/serve.py)."""

from __future__ import annotations

import argparse

HELP = "run the UI in a browser (textual-serve) on a local port"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from kernelscope.ui import serve

    serve.add_arguments(p)


def run(args: argparse.Namespace) -> int:
    from kernelscope.ui import serve

    return serve.run(args)
