"""``kernelscope open DIR``: turn a TORCH_TRACE folder from anyone's job into a bundle, then explore it
(kernelscope/report/opener.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kernelscope.units import plural

HELP = "turn a TORCH_TRACE folder (anyone's job) into a bundle and open it"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", metavar="DIR", help="the folder TORCH_TRACE named (or one of its .log files)")
    p.add_argument("--triton-cache", metavar="DIR", help="the job's TRITON_CACHE_DIR, for Triton stages")
    p.add_argument("--stderr-log", metavar="FILE", help="the job's stderr (TORCH_LOGS, AUTOTUNE tables), optional")
    p.add_argument("--rank", type=int, metavar="N", help="open this rank's log only (default: every rank, side by side: `show --job`)")
    p.add_argument("-o", "--out", metavar="BUNDLE", help="bundle folder to write (default: a folder in "
                                                          "$KERNELSCOPE_CACHE/opened, default ~/.cache/kernelscope/opened)")
    p.add_argument("--force", action="store_true", help="replace an existing bundle at -o")
    p.add_argument("--no-ui", action="store_true", help="print the summary instead of opening the explorer")


def run(args: argparse.Namespace) -> int:
    from kernelscope.report.opener import open_trace

    trace = Path(args.trace)
    out = Path(args.out) if args.out else None
    bundle, out, ranks = open_trace(trace, out, triton_cache=args.triton_cache, stderr_log=args.stderr_log,
                                    rank=args.rank, replace=args.force)
    compile_ids = sorted({g.compile_id for g in bundle.graphs})
    opened = bundle.environment.get("ranks") or []
    rank_text = (f" (rank {opened[0]} of {len(ranks)})" if len(opened) == 1 else f" ({plural(len(opened), 'rank')})") \
        if len(ranks) > 1 else ""
    codeless = [g for g in bundle.graphs if g.no_code]
    failed = sum(1 for g in codeless if g.failure)
    without = (f" ({len(codeless)} with no generated code" + (f", {failed} failed" if failed else "") + ")") if codeless else ""
    print(f"opened {trace}{rank_text}: {plural(len(compile_ids), 'compile id')}, {plural(len(bundle.graphs), 'graph')}"
          f"{without}, {plural(len(bundle.kernels), 'kernel')} -> {out}", file=sys.stderr)
    if args.no_ui:
        from kernelscope.show import summary_text

        sys.stdout.write(summary_text(bundle))
        return 0
    try:
        from kernelscope.ui.app import main as ui_main
    except ImportError:
        from kernelscope.show import summary_text

        sys.stdout.write(summary_text(bundle))
        print("kernelscope: the explorer is not available in this install; printed the summary instead",
              file=sys.stderr)
        return 0
    ui_args = argparse.Namespace(what=str(out), out=None, args_spec=None, mode=None, dynamic=None, fullgraph=None,
                                 backward=None, device=None, passes=False, timeout=None)
    return int(ui_main(ui_args) or 0)
