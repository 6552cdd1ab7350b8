"""The bench child: ``python -m kernelscope.bench.child REQUEST.json``; imports torch, measures, writes JSON.

Progress goes to the request's event descriptor (the capture child's format); the user's prints go
to files in the work folder. Exit status: 0 measured, 3 failed with a one-line reason in the result,
4 internal error.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

from kernelscope.capture import compile_cache
from kernelscope.capture.child import (
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_OK,
    Events,
    private_temp,
    redirect_output,
    tie_to_parent,
)


def main(argv: list[str]) -> int:
    request = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    tie_to_parent(request)
    work = Path(request["work"])
    events = Events(request.get("event_fd"))
    private_temp(work)
    # The captures' shared cache (capture/compile_cache.py): Inductor reuses a capture's compiled graph
    # only where its key (graph, inputs, config, torch, device) is the same, so nothing stale is run;
    # without one, private caches in WORK, compiled from scratch.
    root = Path(request["compile_cache"]) if request.get("compile_cache") else work
    for sub in compile_cache.SUBDIRS:
        (root / sub).mkdir(parents=True, exist_ok=True)
    os.environ.update(compile_cache.env(root))
    redirect_output(work)
    result_path = Path(request["result"])
    try:
        from kernelscope.bench import measure  # imports torch

        result = measure.run(request, events)
    except BaseException as exc:  # the last guard: report, never hang the parent
        kind = getattr(exc, "kind", "")
        message = getattr(exc, "message", "") or f"internal error: {exc.__class__.__name__}: {exc}"
        result_path.write_text(json.dumps({"error": message, "kind": kind or "internal",
                                           "traceback": traceback.format_exc()}), encoding="utf-8")
        events.emit("error", message, kind=kind or "internal")
        return EXIT_FAILED if kind else EXIT_INTERNAL
    result_path.write_text(json.dumps(result), encoding="utf-8")
    events.emit("done", "measured")
    return EXIT_OK


if __name__ == "__main__":
    code = main(sys.argv[1:])
    # The result is written: leave without the interpreter's teardown (torch's atexit hooks, Inductor's
    # compile workers stopped one by one, the CUDA context destroyed: seconds after a model's bench),
    # which the result does not need. The parent stops whatever is left of the job (ChildJob).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
