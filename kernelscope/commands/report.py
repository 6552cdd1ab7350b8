"""``kernelscope report BUNDLE --format md|html|json [-o FILE]`` (kernelscope/report/render.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernelscope.bundle.io import BundleError, refuse_own_file

HELP = "write a Markdown / HTML / JSON report of a bundle"
FORMATS = ("md", "html", "json")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bundle", help="a bundle folder (from `kernelscope capture` or `kernelscope open`)")
    p.add_argument("--format", "-f", choices=FORMATS, default=None,
                   help="md (for a pull request), html (one self-contained page) or json; default: md, "
                        "or from -o's suffix")
    p.add_argument("-o", "--out", metavar="FILE", help="write to FILE instead of standard output")
    p.add_argument("--no-sources", action="store_true", help="html: leave kernel sources out")
    p.add_argument("--all", action="store_true", dest="every_kernel",
                   help="a job-sized bundle: every kernel, each graph's guards and the not-fused pairs (its "
                        "report lists the graphs and the kernels moving the most bytes)")


def _format_for(args: argparse.Namespace) -> str:
    if args.format:
        return args.format
    suffix = Path(args.out).suffix.lower() if args.out else ""
    return {".html": "html", ".htm": "html", ".json": "json"}.get(suffix, "md")


def run(args: argparse.Namespace) -> int:
    from kernelscope.report.render import render

    text = render(args.bundle, _format_for(args), sources=not args.no_sources,
                  every_kernel=getattr(args, "every_kernel", False))
    if not args.out:
        sys.stdout.write(text)
        return 0
    out = Path(args.out)
    root = Path(args.bundle)
    root = root.parent if root.name == "bundle.json" else root
    refuse_own_file(out, root, "the report", " (give -o another file, such as report.md)")
    if out.is_dir():
        raise BundleError(f"{out} is a folder; give -o a file name such as report.md")
    from kernelscope.safefile import write_atomic

    try:  # atomic: a full disk leaves the old report (or none), never half of one
        write_atomic(out, text)
    except OSError as exc:
        raise BundleError(str(exc)) from exc
    print(f"wrote {out}", file=sys.stderr)
    return 0
