"""The ``kernelscope`` subcommands: one module each, the top layer (nothing below imports it).

Each module has HELP, ``add_arguments(parser)`` and ``run(args) -> int``, and imports what it runs
inside those functions, so building the parser (``kernelscope --help``) stays light. ``ui`` is the
command without a name: ``kernelscope [TARGET|BUNDLE]``. A new subcommand: a module here and a line below.
"""

from __future__ import annotations

from kernelscope.commands import bench, capture, diff, export, report, run, samples, serve, show, talk
from kernelscope.commands import open as open_

COMMANDS = {
    "capture": capture,
    "show": show,
    "samples": samples,
    "bench": bench,
    "report": report,
    "export": export,
    "diff": diff,
    "open": open_,
    "run": run,
    "serve": serve,
    "talk": talk,
}
