"""The tables a job's stderr holds beside its TORCH_TRACE: max-autotune's AUTOTUNE tables and Dynamo's
recompile messages (``TORCH_LOGS=recompiles``), parsed into the bundle's ``autotune`` and ``recompiles``.
Pure: no torch."""

from __future__ import annotations

import re

from kernelscope.bundle.model import AutotuneChoice, AutotuneResult, Bundle, Recompile


def annotate_from_stderr(bundle: Bundle, stderr_text: str) -> None:
    """The bundle-wide tables of a job's stderr: max-autotune's AUTOTUNE tables, recompile messages."""
    bundle.autotune.extend(parse_autotune(stderr_text))
    if not bundle.recompiles:
        bundle.recompiles.extend(parse_recompiles(stderr_text))



_AUTOTUNE_HEAD = re.compile(r"^AUTOTUNE (\S.*)$")
_AUTOTUNE_ROW = re.compile(r"^\s+(\S+) ([\d.]+|inf) ms ([\d.]+)%\s*(.*)$")


def parse_autotune(text: str) -> list[AutotuneResult]:
    """The AUTOTUNE tables max-autotune prints to stderr."""
    results: list[AutotuneResult] = []
    current: AutotuneResult | None = None
    for line in text.split("\n"):
        m = _AUTOTUNE_HEAD.match(line)
        if m and not line.startswith("AUTOTUNE benchmarking"):
            current = AutotuneResult(op=m.group(1).strip())
            results.append(current)
            continue
        if current is None:
            continue
        if line.startswith("strides:"):
            current.strides = line[len("strides:"):].strip()
        elif line.startswith("dtypes:"):
            current.dtypes = line[len("dtypes:"):].strip()
        elif (m := _AUTOTUNE_ROW.match(line)):
            t = None if m.group(2) == "inf" else float(m.group(2))
            current.choices.append(AutotuneChoice(name=m.group(1), time_ms=t, percent=float(m.group(3)),
                                                  config=m.group(4).strip()))
        elif "AUTOTUNE benchmarking takes" in line:
            current.summary = line.strip()
            current = None
        elif line.strip() and not line.startswith(" "):
            current = None
    return results


_RECOMPILE = re.compile(r"Recompiling function (\S+) in (.+):(\d+)\s*\n\s*triggered by the following guard failure\(s\):\s*\n((?:.*- .*\n?)+)")


def parse_recompiles(text: str) -> list[Recompile]:
    out = []
    plain = "\n".join(re.sub(r"^[VIWEC]\d{4} [\d:.]+ +\d+ [^\]]*\] (\[[^\]]*\] )?\[__recompiles\] ?", "", line)
                      for line in text.split("\n"))
    for m in _RECOMPILE.finditer(plain):
        reasons = [r.strip().lstrip("- ").strip() for r in m.group(4).strip().split("\n") if r.strip()]
        out.append(Recompile(compile_id="", reason="; ".join(reasons), file=m.group(2), line=int(m.group(3))))
    return out
