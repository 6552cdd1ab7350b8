"""A job-sized TORCH_TRACE made from a real one: the tests of ``kernelscope open`` at scale and
benchmarks/trace_scale.py build theirs the same way (never committed: built from the small fixture)."""

from __future__ import annotations

import gzip
import json
import os
import re
from pathlib import Path

_PREFIX = re.compile(r"^([VIWEC]\d{4} [\d:.]+ +\d+ [^\]]*\] )(.*)$")
_CID = re.compile(r'("compile_id": ")(\d+)(/\d+)')
_TS = re.compile(r'^(\t"ts": )([\d.]+)(,?)$')


def scale_trace(source: str | os.PathLike, dest: str | os.PathLike, times: int) -> Path:
    """Write ``dest``: the TORCH_TRACE log ``source`` (plain or .gz) repeated ``times`` times, the way a long
    job accumulates compiled frames: copy ``c``'s frame ids (and its chromium events' compile ids) shifted by
    ``c * (largest frame id + 1)``, its timestamps by ``c`` times the log's span, the interned file names
    written once."""
    opener = gzip.open if str(source).endswith(".gz") else open
    with opener(source, "rt", encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    frames = [int(m) for m in re.findall(r'"frame_id": (\d+)', "\n".join(line for line in lines if not line.startswith("\t")))]
    shift = (max(frames) + 1) if frames else 1
    stamps = [float(m.group(2)) for line in lines if (m := _TS.match(line))]
    span = (max(stamps) - min(stamps) + 1e6) if stamps else 0.0
    dest = Path(dest)
    with open(dest, "w", encoding="utf-8") as out:
        for c in range(times):
            keep_payload = True
            for line in lines:
                if line.startswith("\t"):
                    if keep_payload:
                        if c:
                            line = _CID.sub(lambda m, off=c * shift: f"{m.group(1)}{int(m.group(2)) + off}{m.group(3)}", line)
                            t = _TS.match(line)
                            if t:
                                line = f"{t.group(1)}{float(t.group(2)) + c * span}{t.group(3)}"
                        out.write(line + "\n")
                    continue
                m = _PREFIX.match(line)
                if not m:
                    continue
                try:
                    envelope = json.loads(m.group(2))
                except ValueError:
                    out.write(line + "\n")
                    continue
                if c and "str" in envelope:  # interned once, as one process writes them
                    keep_payload = False
                    continue
                keep_payload = True
                if c and isinstance(envelope.get("frame_id"), int):
                    envelope["frame_id"] += c * shift
                    line = m.group(1) + json.dumps(envelope)
                out.write(line + "\n")
    return dest
