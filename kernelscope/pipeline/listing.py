"""What the pipeline view shows of a stage: the text as captured, made readable, never changed on disk.

Two display transforms, each keeping the stage's line map (the source frames of each line, parsed from
the text as captured): temporary capture paths (``/tmp/kernelscope-work-*/.../<hash>.py``, in every
``loc()``, ``.file`` and ``//## File``) are shown as the bundle's kernel file name; and SASS is shown
compact, without nvdisasm's ``//## File "...", line N`` comments (the line map holds them), with runs
of blank lines collapsed to one and each instruction one space after its address (nvdisasm pads the
address to column 27: in a split pane at 80 columns only the addresses showed).
"""

from __future__ import annotations

import os
import re

from kernelscope.pipeline.linemap import line_map
from kernelscope.pipeline.stages import StageText

# A path into a capture's temporary work folder (kernelscope.capture.runner makes "kernelscope-work-XXXX").
_WORK_PATH = re.compile(r"""[^\s"'()]*kernelscope-work[^/\s"']*(?:/[^\s"'():,]*)?""")
_SASS_FILE_LINE = re.compile(r'^\s*//## File "')
_SASS_INSN = re.compile(r"^\s+(/\*[0-9a-f]{4,}\*/)\s+(?=\S)")  # "        /*0040*/                   S2R ..."


def short_paths(text: str, kernel_file: str, display_name: str) -> str:
    """``text`` with temporary capture paths shown as ``display_name`` (the kernel file) or their file name.

    ``kernel_file`` is the kernel's file as the compiler saw it (its base name is matched, also bare, as in
    LLVM's ``DIFile(filename: ...)``); a folder in the work area shows as "" (as LLVM's ``directory``).
    """
    base = os.path.basename(kernel_file) if kernel_file else ""

    def name(m: re.Match) -> str:
        path = m.group(0)
        tail = os.path.basename(path.rstrip("/"))
        if base and tail == base:
            return display_name
        return tail if tail.endswith(".py") else ""

    if "kernelscope-work" in text:
        text = _WORK_PATH.sub(name, text)
    if base and display_name and base != display_name and base in text:
        text = text.replace(base, display_name)
    return text


def compact_sass(text: str) -> tuple[str, list[int]]:
    """SASS without its ``//## File`` lines, with blank runs collapsed and each instruction one space
    after its address (`` /*0040*/ S2R R9, SR_CTAID.X ;``); and, for each line kept, its 1-based line
    number in ``text``."""
    out: list[str] = []
    origin: list[int] = []
    for n, line in enumerate(text.splitlines(), 1):
        if _SASS_FILE_LINE.match(line):
            continue
        if not line.strip() and (not out or not out[-1].strip()):
            continue  # a blank after a blank (or at the top)
        out.append(_SASS_INSN.sub(r" \1 ", line, count=1))
        origin.append(n)
    return "\n".join(out), origin


def display_stage(stage: StageText, kernel_file: str | None, display_name: str, *, compact: bool = True) -> StageText:
    """The stage as the pipeline view shows it, with the line map of the captured text (renumbered).

    ``compact`` applies to SASS only (the raw listing is ``compact=False``).
    """
    if stage.missing or stage.stage == "source":
        return stage
    frames = line_map(stage, kernel_file).frames
    kernel = kernel_file or line_map(stage, kernel_file).kernel_file
    text = stage.text
    if compact and stage.stage == "sass":
        text, origin = compact_sass(text)
        frames = {new: frames[old] for new, old in enumerate(origin, 1) if old in frames}
    text = short_paths(text, kernel, display_name)
    return StageText(stage=stage.stage, title=stage.title, text=text, path=stage.path, frames=dict(frames))
