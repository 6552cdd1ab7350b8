"""``kernelscope serve``: the explorer in a browser (textual-serve), for a projector or a laptop.

Binds to loopback only: each browser tab runs ``kernelscope [WHAT]`` as this user, so the port
must not be reachable from other machines (reach it over ``ssh -L`` instead).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", nargs="?", help="a bundle folder or a target to open (default: the gallery)")
    p.add_argument("--port", type=int, default=8000, help="local port (default: 8000)")
    p.add_argument("--host", default="127.0.0.1", help="loopback address to bind (127.0.0.1, localhost or ::1)")
    p.add_argument("--big", action="store_true", help="presentation mode: two big panes, no chrome")
    p.add_argument("--light", action="store_true", help="light theme (projectors often read better)")


def serve_command(args: argparse.Namespace) -> str:
    """The shell command each browser session runs."""
    env = []
    if args.big:
        env.append("KERNELSCOPE_BIG=1")
    if args.light:
        env.append("KERNELSCOPE_THEME=textual-light")
    cmd = [sys.executable, "-m", "kernelscope"] + ([os.path.abspath(args.what) if os.path.exists(args.what)
                                                   else args.what] if args.what else [])
    return " ".join(env + [shlex.quote(c) for c in cmd])


def run(args: argparse.Namespace) -> int:
    if args.host not in LOOPBACK:
        print(f"kernelscope: refusing to serve on {args.host}: only loopback addresses "
              f"({', '.join(LOOPBACK)}); use `ssh -L {args.port}:localhost:{args.port}` to reach it", file=sys.stderr)
        return 2
    try:
        from textual_serve.server import Server
    except ImportError:
        print("kernelscope: `serve` needs textual-serve; install it with `pip install 'kernelscope[serve]'`",
              file=sys.stderr)
        return 2
    print(f"kernelscope: serving on http://{args.host}:{args.port}  (ctrl+c to stop)", file=sys.stderr)
    Server(serve_command(args), host=args.host, port=args.port, title="kernelscope").serve()
    return 0
