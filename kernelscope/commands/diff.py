"""``kernelscope diff A B [--format text|md|json]``: compare two bundles kernel by kernel (kernelscope/report/diff*.py)."""

from __future__ import annotations

import argparse
import json
import sys

from kernelscope.bundle.io import read_bundle

HELP = "compare two bundles kernel by kernel"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", help="the first bundle (before)")
    p.add_argument("b", help="the second bundle (after)")
    p.add_argument("--format", "-f", choices=("text", "md", "json"), default="text",
                   help="text (default), md (for a pull request) or json")
    p.add_argument("--stages", action="store_true",
                   help="print the unified diffs of Triton stages (TTIR, TTGIR, LLIR, PTX) too, not just counts")
    p.add_argument("--changed", action="store_true", help="leave kernels that did not change out")
    p.add_argument("--ui", action="store_true", help="explore the comparison in the terminal UI (DiffView)")


def run(args: argparse.Namespace) -> int:
    from kernelscope.report.diff import SAME, diff_bundles
    from kernelscope.report.diff_render import diff_data, render_markdown, render_text

    a, b = read_bundle(args.a), read_bundle(args.b)
    if args.ui:
        from kernelscope.ui.widgets.diff_view import DiffApp

        DiffApp(a, b).run()
        return 0
    d = diff_bundles(a, b)
    if args.changed:
        d.entries = [e for e in d.entries if e.status != SAME]
    if args.format == "json":
        sys.stdout.write(json.dumps(diff_data(d), indent=1) + "\n")
    elif args.format == "md":
        sys.stdout.write(render_markdown(d, stages=args.stages))
    else:
        sys.stdout.write(render_text(d, stages=args.stages))
    return 0
