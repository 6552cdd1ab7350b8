"""One sanitiser for every string that reaches a terminal: CLI lines, progress, errors, the UI, talk, serve.

Text from outside (a bundle, a talk script, a trace, the user's exception, an event line on the capture's
pipe) may carry terminal escape sequences: CSI (cursor moves, colours), OSC (window titles, OSC 52 clipboard
writes, OSC 8 links), C1 controls. ``printable`` removes them where the data enters; ``one_line`` also folds
line breaks, for messages that must stay one line. Pure: no imports beyond ``re``.
"""

from __future__ import annotations

import re

# Terminal escape sequences (CSI ... final byte, OSC ... BEL/ST, DCS/PM/APC ... ST, two-byte ESC x, the
# 8-bit CSI/OSC), then any other control character but tab and newline. Every quantifier runs over a class
# disjoint from what follows it, so these cannot backtrack.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]?|\x1b[\]PX^_][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?|\x1b[ -~]?"
                      r"|\x9b[0-?]*[ -/]*[@-~]?|[\x9d\x90\x98\x9e\x9f][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?")
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

_PLAIN_ASCII = bytes(range(0x20, 0x7f)) + b"\t\n"  # what printable() keeps of ASCII as it is


def printable(text: str) -> str:
    """``text`` safe to write to a terminal: escape sequences and control characters removed
    (CRLF line ends become LF), so a file in a bundle cannot move the cursor or retitle the window."""
    text = str(text)
    # Most texts are plain ASCII with nothing to remove: checked in C in ~3 ms for 6 MB, where a regex
    # pass takes far longer (a fresh `kernelscope BUNDLE` of a 100k-line output code waited on it).
    if text.isascii() and not text.encode("ascii").translate(None, _PLAIN_ASCII):
        return text
    text = text.replace("\r\n", "\n")
    if not CONTROLS.search(text):
        return text
    return CONTROLS.sub("", _ESCAPES.sub("", text))


def one_line(text: object, limit: int = 0) -> str:
    """``text`` as one printable line: escapes removed, whitespace runs (newlines too) folded to one
    space; cut at ``limit`` characters when given."""
    line = " ".join(printable(str(text).replace("\n", " ").replace("\r", " ").replace("\t", " ")).split())
    return line[:limit] if limit and len(line) > limit else line
