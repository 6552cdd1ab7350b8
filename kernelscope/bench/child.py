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
    for sub in ("triton", "inductor"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    # Private caches: the bench compiles what this torch compiles today, not a stale cached kernel.
    os.environ["TRITON_CACHE_DIR"] = str(work / "triton")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(work / "inductor")
    os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"
    os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
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
    raise SystemExit(main(sys.argv[1:]))
