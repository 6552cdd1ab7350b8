"""Mapping lines between a Triton stage and the kernel's source file, both ways.

Every stage records where its lines came from, each in its own dialect: MLIR ``loc(...)`` (with
``#locN`` aliases, named, ``callsite`` and ``fused`` locations), LLVM ``!dbg`` -> ``!DILocation``
(with ``inlinedAt``), PTX ``.loc`` with its ``.file`` table (and the ``@[ file:line:col ]`` note of
inlined code), and nvdisasm's ``//## File "...", line N`` comments. Each stage line gets the set of
source frames it came from; a line of a helper inlined into the kernel also carries its call site,
so it maps to the kernel line that called the helper. Line numbers are 1-based throughout.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass

from kernelscope.bundle.artifacts import BY_NAME, LINES_LLVM_DBG, LINES_MLIR_LOC, LINES_PTX_LOC, LINES_SASS_LINE
from kernelscope.pipeline.stages import StageText

Frame = tuple[str, int]  # (file, line); columns are dropped, a user steps by line


@dataclass
class LineMap:
    """Source frames of each line of one stage, and the kernel file they are matched against."""

    stage: str
    frames: dict[int, frozenset[Frame]]  # stage line -> frames
    kernel_file: str  # basename of the kernel's source file ("" when the stage has no line info)

    def _in_kernel(self, frame: Frame) -> bool:
        return bool(self.kernel_file) and os.path.basename(frame[0]) == self.kernel_file

    def source_lines_for(self, stage_line: int) -> set[int]:
        return {ln for f in self.frames.get(stage_line, ()) if self._in_kernel(f) for ln in (f[1],) if ln > 0}

    def lines_for_source_line(self, src_line: int) -> set[int]:
        return {sl for sl, fs in self.frames.items() if any(self._in_kernel(f) and f[1] == src_line for f in fs)}


# ---------------------------------------------------------------------------------------------- MLIR

_ALIAS_DEF = re.compile(r"^(#loc\d*)\s*=\s*loc\((.*)\)\s*$")
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|#loc\d*|[A-Za-z_][\w.]*|\d+|[()\[\]<>:,]|\S')


def _balanced_end(text: str, open_at: int) -> int:
    """Index just past the parenthesis that closes the one at ``open_at`` (string-aware)."""
    depth = 0
    i = open_at
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _loc_exprs(line: str) -> list[str]:
    """The inner texts of every ``loc(...)`` on a line."""
    out = []
    start = 0
    while True:
        i = line.find("loc(", start)
        if i < 0:
            return out
        if i > 0 and (line[i - 1].isalnum() or line[i - 1] in "_#."):
            start = i + 4
            continue
        end = _balanced_end(line, i + 3)
        out.append(line[i + 4 : end - 1])
        start = end


class _MlirLocs:
    def __init__(self, aliases: dict[str, str]):
        self.aliases = aliases
        self.memo: dict[str, tuple[Frame, ...]] = {}

    def resolve(self, expr: str) -> tuple[Frame, ...]:
        tokens = _TOKEN.findall(expr)
        frames, _ = self._parse(tokens, 0, set())
        return tuple(frames)

    def _alias(self, name: str, seen: set[str]) -> tuple[Frame, ...]:
        if name in self.memo:
            return self.memo[name]
        if name in seen or name not in self.aliases:
            return ()
        tokens = _TOKEN.findall(self.aliases[name])
        frames, _ = self._parse(tokens, 0, seen | {name})
        self.memo[name] = tuple(frames)
        return self.memo[name]

    def _parse(self, toks: list[str], i: int, seen: set[str]) -> tuple[list[Frame], int]:
        if i >= len(toks):
            return [], i
        tok = toks[i]
        if tok.startswith("#loc"):
            return list(self._alias(tok, seen)), i + 1
        if tok == "unknown":
            return [], i + 1
        if tok == "callsite" and i + 1 < len(toks) and toks[i + 1] == "(":
            callee, j = self._parse(toks, i + 2, seen)
            if j < len(toks) and toks[j] == "at":
                caller, j = self._parse(toks, j + 1, seen)
            else:
                caller = []
            return callee + caller, self._skip_to_close(toks, j)
        if tok == "fused":
            j = i + 1
            if j < len(toks) and toks[j] == "<":  # fused<metadata>[...]
                depth = 0
                while j < len(toks):
                    depth += toks[j] == "<"
                    depth -= toks[j] == ">"
                    j += 1
                    if depth == 0:
                        break
            frames: list[Frame] = []
            if j < len(toks) and toks[j] == "[":
                j += 1
                while j < len(toks) and toks[j] != "]":
                    if toks[j] == ",":
                        j += 1
                        continue
                    sub, j = self._parse(toks, j, seen)
                    frames += sub
                j += 1
            return frames, j
        if tok.startswith('"'):
            name = tok[1:-1]
            j = i + 1
            if j < len(toks) and toks[j] == ":" and j + 1 < len(toks) and toks[j + 1].isdigit():
                line = int(toks[j + 1])
                j += 2
                # ":col", and MLIR's range form "to line:col" / "to :col"
                while j < len(toks) and toks[j] in (":", "to") or (j < len(toks) and toks[j].isdigit()):
                    j += 1
                return [(name, line)], j
            if j < len(toks) and toks[j] == "(":  # a named location wraps a child
                sub, j = self._parse(toks, j + 1, seen)
                return sub, self._skip_to_close(toks, j)
            return [], j
        return [], i + 1

    @staticmethod
    def _skip_to_close(toks: list[str], j: int) -> int:
        depth = 0
        while j < len(toks):
            if toks[j] == "(":
                depth += 1
            elif toks[j] == ")":
                if depth == 0:
                    return j + 1
                depth -= 1
            j += 1
        return j


def mlir_frames(text: str) -> dict[int, frozenset[Frame]]:
    lines = text.splitlines()
    aliases = {}
    for line in lines:
        if line.startswith("#loc"):
            m = _ALIAS_DEF.match(line)
            if m:
                aliases[m.group(1)] = m.group(2)
    locs = _MlirLocs(aliases)
    out: dict[int, frozenset[Frame]] = {}
    for n, line in enumerate(lines, 1):
        if line.startswith("#") or "loc(" not in line:
            continue
        exprs = _loc_exprs(line)
        if not exprs:
            continue
        # The op's own location is the last loc(...) on the line; earlier ones belong to arguments.
        frames = locs.resolve(exprs[-1])
        if frames:
            out[n] = frozenset(frames)
    return out


# ---------------------------------------------------------------------------------------------- LLVM

_LLVM_META = re.compile(r"^!(\d+) = (?:distinct )?!(\w+)\((.*)\)\s*$")
_LLVM_FIELD = re.compile(r'(\w+): ("(?:[^"\\]|\\.)*"|[^,]+)')
_LLVM_DBG = re.compile(r"!dbg !(\d+)")


def llvm_frames(text: str) -> dict[int, frozenset[Frame]]:
    lines = text.splitlines()
    meta: dict[str, tuple[str, dict[str, str]]] = {}
    for line in lines:
        if line.startswith("!"):
            m = _LLVM_META.match(line)
            if m:
                meta[m.group(1)] = (m.group(2), {k: v.strip() for k, v in _LLVM_FIELD.findall(m.group(3))})

    def ref(value: str | None) -> str | None:
        return value[1:] if value and value.startswith("!") else None

    def file_of(scope: str | None, depth: int = 0) -> str:
        if scope is None or scope not in meta or depth > 50:
            return ""
        kind, fields = meta[scope]
        if kind == "DIFile":
            name = fields.get("filename", '""').strip('"')
            folder = fields.get("directory", '""').strip('"')
            return os.path.join(folder, name) if folder else name
        if "file" in fields:
            return file_of(ref(fields["file"]), depth + 1)
        return file_of(ref(fields.get("scope")), depth + 1)

    memo: dict[str, tuple[Frame, ...]] = {}

    def frames_of(loc: str | None, depth: int = 0) -> tuple[Frame, ...]:
        if loc is None or loc not in meta or depth > 50:
            return ()
        if loc in memo:
            return memo[loc]
        kind, fields = meta[loc]
        if kind != "DILocation":
            return ()
        frame = (file_of(ref(fields.get("scope"))), int(fields.get("line", "0") or 0))
        memo[loc] = (frame, *frames_of(ref(fields.get("inlinedAt")), depth + 1))
        return memo[loc]

    out: dict[int, frozenset[Frame]] = {}
    for n, line in enumerate(lines, 1):
        if line.startswith("!") or "!dbg" not in line:
            continue
        m = _LLVM_DBG.search(line)
        if m:
            frames = frames_of(m.group(1))
            if frames:
                out[n] = frozenset(frames)
    return out


# ---------------------------------------------------------------------------------------------- PTX

_PTX_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_PTX_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(.*)$")
_PTX_INLINED_AT = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")
_PTX_INLINE_NOTE = re.compile(r"@\[\s*([^:\]\s]+):(\d+):\d+")


def ptx_frames(text: str) -> dict[int, frozenset[Frame]]:
    lines = text.splitlines()
    files = {}
    for line in lines:
        m = _PTX_FILE.match(line)
        if m:
            files[m.group(1)] = m.group(2)
    out: dict[int, frozenset[Frame]] = {}
    current: frozenset[Frame] | None = None
    in_asm = False
    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        if stripped in ("// begin inline asm", "// end inline asm"):
            in_asm = stripped == "// begin inline asm"
            continue
        m = _PTX_LOC.match(line)
        # Newer LLVM puts a .loc before every line of an inline asm block, counting the asm's own lines
        # up from the op's line; the op's location is the one in force where the block begins.
        if m and in_asm:
            continue
        if m:
            frames = [(files.get(m.group(1), m.group(1)), int(m.group(2)))]
            rest = m.group(4)
            for fm in _PTX_INLINED_AT.finditer(rest):
                frames.append((files.get(fm.group(1), fm.group(1)), int(fm.group(2))))
            for note in _PTX_INLINE_NOTE.finditer(rest):
                frames.append((note.group(1), int(note.group(2))))
            current = frozenset(frames)
            continue
        if stripped.startswith((".file", ".section")) or stripped == "}":
            current = None
            continue
        if current is None or not stripped or stripped.startswith(("//", "$L", ".")) or stripped.endswith(":"):
            continue
        out[n] = current
    return out


# ---------------------------------------------------------------------------------------------- SASS

_SASS_FILE = re.compile(r'^\s*//## File "([^"]*)", line (\d+)(.*)$')
_SASS_INLINED = re.compile(r'inlined at "([^"]*)", line (\d+)')
_SASS_INSN = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/")


def sass_frames(text: str) -> dict[int, frozenset[Frame]]:
    out: dict[int, frozenset[Frame]] = {}
    current: frozenset[Frame] | None = None
    for n, line in enumerate(text.splitlines(), 1):
        m = _SASS_FILE.match(line)
        if m:
            frames = [(m.group(1), int(m.group(2)))]
            frames += [(f, int(ln)) for f, ln in _SASS_INLINED.findall(m.group(3))]
            current = frozenset(frames)
            continue
        if line.startswith(("//-----", "\t.section")) or ".text." in line and line.rstrip().endswith(":"):
            current = None
        if current is not None and _SASS_INSN.match(line):
            out[n] = current
    return out


# ---------------------------------------------------------------------------------------------- API

# How each kind of line map of the artifact registry (kernelscope/bundle/artifacts.py) is read.
_FRAMES_BY_LINES = {
    LINES_MLIR_LOC: mlir_frames,
    LINES_LLVM_DBG: llvm_frames,
    LINES_PTX_LOC: ptx_frames,
    LINES_SASS_LINE: sass_frames,
}
_CACHE_KEY = "_linemap"


def _guess_kernel_file(frames: dict[int, frozenset[Frame]]) -> str:
    """The file most lines come from: the kernel itself (helpers and the language's files are fewer)."""
    counts = Counter(os.path.basename(f) for fs in frames.values() for f, _ in fs)
    return counts.most_common(1)[0][0] if counts else ""


def line_map(stage: StageText, kernel_file: str | None = None) -> LineMap:
    """The line map of a stage (computed once per StageText and kernel file)."""
    key = (_CACHE_KEY, kernel_file or "")
    cache = stage.__dict__.setdefault("_maps_cache", {})
    if key in cache:
        return cache[key]
    if stage.stage == "source" or stage.missing:
        frames: dict[int, frozenset[Frame]] = {}
        name = os.path.basename(kernel_file) if kernel_file else ""
    else:
        art = BY_NAME.get(stage.stage)
        parse = _FRAMES_BY_LINES.get(art.lines) if art else None
        if stage.frames is not None:
            frames = stage.frames
        else:
            frames = parse(stage.text) if parse else {}
        name = os.path.basename(kernel_file) if kernel_file else _guess_kernel_file(frames)
    result = LineMap(stage.stage, frames, name)
    cache[key] = result
    return result


def lines_for_source_line(stage: StageText, src_line: int, kernel_file: str | None = None) -> set[int]:
    """Lines of ``stage`` that came from line ``src_line`` of the kernel source."""
    if stage.stage == "source":
        return {src_line} if 1 <= src_line <= len(stage.lines) else set()
    return line_map(stage, kernel_file).lines_for_source_line(src_line)


def source_lines_for(stage: StageText, stage_line: int, kernel_file: str | None = None) -> set[int]:
    """Lines of the kernel source that ``stage_line`` of ``stage`` came from."""
    if stage.stage == "source":
        return {stage_line} if 1 <= stage_line <= len(stage.lines) else set()
    return line_map(stage, kernel_file).source_lines_for(stage_line)


def map_between(a: StageText, a_line: int, b: StageText, kernel_file: str | None = None) -> set[int]:
    """Lines of stage ``b`` that share a source line with ``a_line`` of stage ``a`` (via the source)."""
    out: set[int] = set()
    for src in source_lines_for(a, a_line, kernel_file):
        out |= lines_for_source_line(b, src, kernel_file)
    return out
