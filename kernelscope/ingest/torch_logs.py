"""Reading what ``TORCH_LOGS=...`` printed to stderr: glog-prefixed lines tagged with an artifact."""

from __future__ import annotations

import re

_LINE = re.compile(r"^[VIWEC]\d{4} [\d:.]+ +\d+ (?P<where>[^\]]*)\] (?:\[(?P<cid>[^\]]*)\] )?\[__(?P<art>\w+)\] ?(?P<msg>.*)$")


def artifact_messages(text: str, artifact: str) -> list[str]:
    """The messages logged for one artifact (e.g. "output_code"), each rejoined across its lines."""
    messages: list[str] = []
    current: list[str] | None = None
    key = None
    for line in text.split("\n"):
        m = _LINE.match(line)
        if m and m.group("art") == artifact:
            # One message's lines share their prefix (same timestamp and call site).
            prefix = line[: m.start("msg")]
            if prefix != key:
                if current is not None:
                    messages.append("\n".join(current))
                current, key = [], prefix
            current.append(m.group("msg"))
        else:
            if current is not None:
                messages.append("\n".join(current))
            current, key = None, None
    if current is not None:
        messages.append("\n".join(current))
    return messages


def output_codes(text: str) -> list[str]:
    """Each graph's output code exactly as TORCH_LOGS=output_code printed it (without its header line)."""
    header = "Output code: \n"
    return [m[len(header):] for m in artifact_messages(text, "output_code") if m.startswith(header)]
